"""The tests of :mod:`rlaudit.env.episodes`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from rlaudit.env import audit, episodes
from support.probing import probe_context

# ---------------------------------------------------------------------------------------------------------
# Rollout helpers
# ---------------------------------------------------------------------------------------------------------


def test_stat_mismatch_counts_lost_episode_returns() -> None:
    eps = pd.DataFrame(
        {
            "env": [0, 1, 2, 3],
            "end": [5, 6, 7, 8],
            "return": [0.1, 0.9, 0.0, 2.0],
            "length": [5, 6, 7, 8],
            "reported.r": [0.1, 0.0, 0.0, 0.0],
            "reported.l": [5, 6, 7, 8],
        }
    )
    out = episodes.stat_mismatch(eps)
    assert out["reported"] == 4 and out["return_mismatch"] == 0.5 and out["length_mismatch"] == 0.0
    assert out["example"] == {"env": 1, "end_step": 6, "reported_return": 0.0, "return_paid": 0.9}


def _booked(reported: list[float], paid: list[float], **extra: list[float]) -> pd.DataFrame:
    n = len(paid)
    return pd.DataFrame(
        {
            "env": range(n),
            "end": range(n),
            "return": paid,
            "length": [10] * n,
            "reported.r": reported,
            **extra,
        }
    )


def test_stats_reading_tells_a_reward_scale_from_lost_statistics() -> None:
    # a scaling wrapper outside the env's bookkeeping: the learner gets a tenth of what the env books
    scaled = episodes.stats_reading(_booked([1.0, 2.0, 0.5, 3.0], [0.1, 0.2, 0.05, 0.3]))
    assert scaled["kind"] == episodes.TRANSFORMED and scaled["scale"] == pytest.approx(0.1)
    assert episodes.transform_text(scaled) == "×0.1"
    # case 001: the accumulators recreated on reset report nothing for most episodes
    lost = episodes.stats_reading(_booked([0.0, 0.0, 0.5, 0.0], [0.9, 0.4, 0.5, 1.3]))
    assert lost["kind"] == episodes.LOST and lost["zeroed"] == 1.0
    # the env books episodes of other lengths than the learner sees: another reading again
    ends = episodes.stats_reading(_booked([1.0, 2.0], [0.5, 2.0], **{"reported.l": [4.0, 10.0]}))
    assert ends["kind"] == episodes.BOUNDARIES
    assert episodes.stats_reading(_booked([1.0, 2.0], [1.0, 2.0]))["kind"] == "match"


def test_episode_stats_reads_a_reward_scale_as_a_rewards_change_not_lost_statistics() -> None:
    from types import SimpleNamespace

    from rlaudit.checks import Check

    booked = [1.0, 2.0, 0.5, 3.0, 1.5]
    tables = {"baseline": _booked(booked, booked), "candidate": _booked(booked, [0.1 * r for r in booked])}
    pair = {side: SimpleNamespace(table=lambda name, t=t: t) for side, t in tables.items()}
    c = Check(audit.episode_stats.spec, SimpleNamespace(profile=None, metric=None))
    (finding,) = audit.episode_stats.__wrapped__(c, pair).findings
    assert finding.status.value == "SUSPECT" and finding.severity.value == "MEDIUM"
    assert "×0.1" in finding.evidence.summary and "not lost statistics" in finding.evidence.summary
    assert finding.evidence.details["knock_on"] and finding.reads == ["rewards"]


def test_compare_samples_needs_a_practical_and_credible_shift() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(10, 1, 300)
    assert not episodes.compare_samples(rng.normal(10, 1, 300), base, seed=0)["differs"]
    assert not episodes.compare_samples(base + 0.05, base, seed=0)["differs"]  # real but not practical
    shifted = episodes.compare_samples(base - 3, base, seed=0)
    assert shifted["differs"] and shifted["ci"][1] < 0


def reference_rollout(tmp_path: Any, seed: int, policy: str) -> pd.DataFrame:
    """The shared rollout probe, in this process, on builtin:reference."""
    from rlaudit.demo.subject import load
    from rlaudit.engine.io import read_table
    from rlaudit.env import probes

    out = tmp_path / f"{seed}-{policy}"
    ctx = probe_context(load("reference"), out, ("config", "make_env"), spec="builtin:reference")
    probes.rollout(ctx, seed=seed, steps=300, policy=policy)
    return read_table(out / "episodes")


def test_distribution_rule_is_quiet_between_two_seeds_of_one_env(tmp_path: Any) -> None:
    # A real null: the same environment under different seeds differs only by sampling noise.
    for policy in ("random", "wsls"):
        a, b = reference_rollout(tmp_path, 11, policy), reference_rollout(tmp_path, 12, policy)
        for col in ("length", "return"):
            cmp = episodes.compare_samples(a[col].to_numpy(), b[col].to_numpy(), seed=0)
            assert not cmp["differs"], (policy, col, cmp)
        assert episodes.stat_mismatch(a)["return_mismatch"] == 0.0  # the reference reports what it pays
