"""The whole investigation on a pair whose candidate is the reference plus two catalog faults: every audit,
then attribution (as `rlaudit report` runs them), must rank the two faults' subsystems at the top.

Two pairs run in `make test`: one whose faults cost learning and throughput and leave a knock-on trail in
another subsystem (the curriculum's full scan runs inside env.reset(), so the env audit sees slower resets),
and one whose faults change neither metric (only audit evidence can rank them). A seeded sample of further
pairs runs with ``-m expensive``.
"""

from __future__ import annotations

import itertools
import random

import pytest

from rlaudit import audits
from rlaudit.attribution.pair import attribute
from rlaudit.attribution.ranking import rank_causes
from rlaudit.demo.faults import CATALOG
from rlaudit.findings import SUBSYSTEMS

FAST_PAIRS = [
    ("loss.gae_bootstrap", "curriculum.full_scan"),
    ("seeding.torch_unseeded", "config.override_ignored"),
]
SAMPLED_PAIRS = random.Random(2026).sample(
    [p for p in itertools.combinations(sorted(CATALOG), 2) if p not in FAST_PAIRS], 24
)


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


@pytest.mark.expensive
@pytest.mark.parametrize("pair", SAMPLED_PAIRS, ids=lambda p: "+".join(p))
def test_two_sampled_faults_rank_on_top(make_wb, pair):
    _check(make_wb, pair)
