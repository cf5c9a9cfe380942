"""The whole investigation on a pair whose candidate is the reference plus two catalog faults: every audit,
then attribution (as `rlaudit report` runs them), must rank the two faults' subsystems at the top.

One pair runs in `make test`: faults that change neither metric (only audit evidence can rank them). With
``-m expensive``: a pair whose faults cost learning and throughput and leave a knock-on trail in another
subsystem (the curriculum's full scan runs inside env.reset(), so the env audit sees slower resets), and a
seeded sample of 24 further pairs.
"""

from __future__ import annotations

import itertools
import random

import pytest

from rlaudit import rooms as audits
from rlaudit.attribution.pair import attribute
from rlaudit.attribution.ranking import rank_causes
from rlaudit.demo.faults import CATALOG
from rlaudit.findings import SUBSYSTEMS

FAST_PAIRS = [("seeding.torch_unseeded", "config.override_ignored")]
"""In `make test`: faults that change neither metric, so only audit evidence can rank them."""
MEASURED_PAIR = ("loss.gae_bootstrap", "curriculum.full_scan")
"""Both gaps measurable, so attribution trains arms (the built-in regressed pair's golden findings and the
simulated searches cover that path in `make test`)."""
SAMPLED_PAIRS = [
    MEASURED_PAIR,
    *random.Random(2026).sample(
        [p for p in itertools.combinations(sorted(CATALOG), 2) if p not in (*FAST_PAIRS, MEASURED_PAIR)], 24
    ),
]


def _investigate(make_wb, pair: tuple[str, str]) -> tuple[list[str], str]:
    wb = make_wb("builtin:reference+" + ",".join(pair))
    findings = audits.run_audits(wb, list(SUBSYSTEMS))
    result = attribute(wb, findings)
    causes = rank_causes(findings, result)
    table = "\n".join(
        f"  {c.subsystem:<14} {c.rank_score:7.3f}  {c.verdict:<22} {', '.join(f.id for f in c.findings[:3])}"
        for c in causes
    )
    return [c.subsystem for c in causes], table


def _check(make_wb, pair: tuple[str, str]) -> None:
    ranked, table = _investigate(make_wb, pair)
    wanted = {CATALOG[f].subsystem for f in pair}
    assert set(ranked[: len(wanted)]) == wanted, f"{pair}: expected {sorted(wanted)} on top, ranked:\n{table}"


@pytest.mark.parametrize("pair", FAST_PAIRS, ids=lambda p: "+".join(p))
def test_two_faults_rank_on_top(make_wb, pair):
    _check(make_wb, pair)


ECHO_TIES = {
    ("curriculum.full_scan", "memory.label_dict_growth"): (
        "memory/growth-sites reads the curriculum (growth sites include its objects) and env/reset-cost reads it "
        "too (the scan runs inside reset), so with the curriculum flagged both count as possible echoes, and the "
        "echoes rank by weight alone: env 0.50, memory 0.47. Telling them apart needs to know which kind of "
        "effect (time, memory) an upstream change can carry."
    ),
}
"""Sampled pairs where an echo outranks the second fault, with why (known, in the README's figures)."""


@pytest.mark.expensive
@pytest.mark.parametrize(
    "pair",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=ECHO_TIES[p])) if p in ECHO_TIES else p
        for p in SAMPLED_PAIRS
    ],
    ids=lambda p: "+".join(p),
)
def test_two_sampled_faults_rank_on_top(make_wb, pair):
    _check(make_wb, pair)
