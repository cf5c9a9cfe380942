"""The tests of :mod:`rlaudit.memory.replay`: a replay buffer read from the recorder's ``replay`` table
(capacity, fill, bytes, ages of sampled transitions), and the replay-buffer check on hand-built runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rlaudit.findings import Severity, Status
from rlaudit.memory.replay import buffer_stats, replay_buffer
from support.runs import bench, evidence, fake_run


def _replay(tmp: Path, *, capacity: int = 1000, age_share: float = 0.5, seed: int = 0, nbytes_each: int = 40):
    """A run whose buffer of ``capacity`` filled up over 40 samplings, whose sampled transitions were
    ``age_share`` of what it held old at the median (uniform sampling: one half)."""
    size = np.minimum(np.arange(1, 41) * 50, capacity)
    table = {
        "step": np.arange(1, 41) * 50,
        "size": size,
        "capacity": np.full(40, capacity),
        "nbytes": np.full(40, capacity * nbytes_each),
        "age_n": np.full(40, 32),
        "age_p50": age_share * size,
        "age_p90": 0.9 * size,
    }
    return fake_run(tmp, seed=seed, tables={"replay": table})


def test_the_buffer_of_one_run_by_hand(tmp_path: Path) -> None:
    stats = buffer_stats(_replay(tmp_path, capacity=1000, age_share=0.5))
    assert stats is not None
    assert (stats["capacity"], stats["filled"], stats["fill"]) == (1000, 1000, 1.0)
    assert stats["bytes_per_transition"] == pytest.approx(40.0)
    assert stats["median_age_share"] == pytest.approx(0.5) and stats["p90_age_share"] == pytest.approx(0.9)
    assert math.isnan(stats["prioritized"])  # not recorded
    assert buffer_stats(fake_run(tmp_path)) is None


def test_two_seeds_of_one_buffer_clear_naming_size_and_sampling(tmp_path: Path) -> None:
    runs = evidence([_replay(tmp_path, seed=0)], [_replay(tmp_path, seed=1)])
    (finding,) = replay_buffer(bench(), given=runs).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert "same replay buffers: 1000 transitions" in finding.evidence.summary
    assert "sampled with median age 50% vs 50%" in finding.evidence.summary


def test_sampling_only_recent_transitions_is_confirmed(tmp_path: Path) -> None:
    runs = evidence([_replay(tmp_path)], [_replay(tmp_path, age_share=0.05)])
    (finding,) = replay_buffer(bench(), given=runs).findings
    assert finding.status is Status.CONFIRMED and finding.severity is Severity.HIGH, finding.headline
    assert "median age of sampled transitions 50% → 5% of the transitions held" in finding.evidence.summary


def test_a_smaller_buffer_sampled_alike_is_suspect_naming_the_capacity(tmp_path: Path) -> None:
    runs = evidence([_replay(tmp_path, capacity=2000)], [_replay(tmp_path, capacity=500)])
    (finding,) = replay_buffer(bench(), given=runs).findings
    assert finding.status is Status.SUSPECT and finding.severity is Severity.MEDIUM, finding.headline
    assert "capacity 2000 → 500" in finding.evidence.summary


def test_a_side_without_the_table_is_skipped_naming_the_call_that_writes_it(tmp_path: Path) -> None:
    (finding,) = replay_buffer(bench(), given=evidence([_replay(tmp_path)], [fake_run(tmp_path)])).findings
    assert finding.status is Status.SKIPPED, finding.headline
    assert "recorder.replay(step, size, capacity" in finding.remediation
