"""The tests of :mod:`rlaudit.trainer.replay`: the replay geometry read from the recorder's ``gradient_steps``
table, and the replay-ratio check on hand-built runs of both sides."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlaudit.findings import Severity, Status
from rlaudit.trainer.replay import learns_off_policy, replay_geometry, replay_ratio
from support.runs import bench, evidence, fake_run


def _phases(
    tmp: Path,
    *,
    start: int = 1000,
    freq: int = 4,
    grads: int = 1,
    batch: int = 32,
    seed: int = 0,
    policy_delay: int | None = None,
):
    """A run whose trainer took ``grads`` gradient steps on batches of ``batch`` every ``freq`` env steps, and
    with ``policy_delay`` an actor step every ``policy_delay``-th gradient step (TD3)."""
    steps = np.arange(start, start + 200 * freq, freq)
    table = {
        "step": steps,
        "gradient_steps": np.full(len(steps), grads),
        "batch_size": np.full(len(steps), batch),
    }
    if policy_delay is not None:
        done = np.cumsum(table["gradient_steps"])  # gradient steps taken after each phase
        table["actor_updates"] = np.diff(done // policy_delay, prepend=0)
    return fake_run(tmp, seed=seed, tables={"gradient_steps": table})


def test_the_geometry_of_one_run_by_hand(tmp_path: Path) -> None:
    g = replay_geometry(_phases(tmp_path, start=1000, freq=4, grads=2, batch=32))
    assert g is not None
    assert g["replay_ratio"] == pytest.approx(0.5)  # 2 gradient steps every 4 env steps
    assert g["samples_per_step"] == pytest.approx(16.0)  # ... of 32 transitions each
    assert (g["learning_starts"], g["train_freq"], g["gradient_steps"], g["batch_size"]) == (1000, 4, 2, 32)
    on_policy = fake_run(tmp_path)
    assert replay_geometry(on_policy) is None
    assert not learns_off_policy([on_policy]) and not learns_off_policy([])
    assert learns_off_policy([_phases(tmp_path)])


def test_two_seeds_of_one_geometry_clear_naming_both_sides(tmp_path: Path) -> None:
    runs = evidence([_phases(tmp_path, seed=0)], [_phases(tmp_path, seed=1)])
    (finding,) = replay_ratio(bench(), given=runs).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert "same replay: 0.25 vs 0.25 gradient steps per env step" in finding.evidence.summary


def test_more_gradient_steps_per_phase_are_confirmed_naming_the_quantity(tmp_path: Path) -> None:
    runs = evidence([_phases(tmp_path, grads=1)], [_phases(tmp_path, grads=4)])
    (finding,) = replay_ratio(bench(), given=runs).findings
    assert finding.status is Status.CONFIRMED and finding.severity is Severity.HIGH, finding.headline
    assert "gradient steps per training phase 1 → 4" in finding.evidence.summary
    assert finding.evidence.effect == pytest.approx(4.0)


def test_a_later_start_alone_is_confirmed_at_medium_severity(tmp_path: Path) -> None:
    runs = evidence([_phases(tmp_path, start=1000)], [_phases(tmp_path, start=5000)])
    (finding,) = replay_ratio(bench(), given=runs).findings
    assert finding.status is Status.CONFIRMED and finding.severity is Severity.MEDIUM, finding.headline
    assert "learning starts 1000 → 5000" in finding.evidence.summary


def test_a_side_without_the_table_is_skipped_naming_the_call_that_writes_it(tmp_path: Path) -> None:
    runs = evidence([_phases(tmp_path)], [fake_run(tmp_path)])
    (finding,) = replay_ratio(bench(), given=runs).findings
    assert finding.status is Status.SKIPPED, finding.headline
    assert "recorder.update(step, gradient_steps=" in finding.remediation


def test_actor_updates_per_gradient_step_by_hand(tmp_path: Path) -> None:
    assert replay_geometry(_phases(tmp_path, policy_delay=2))["actor_updates_per_step"] == pytest.approx(0.5)
    assert replay_geometry(_phases(tmp_path, grads=3, policy_delay=3))["actor_updates_per_step"] == 1 / 3
    assert replay_geometry(_phases(tmp_path, policy_delay=1))["actor_updates_per_step"] == 1.0
    assert np.isnan(replay_geometry(_phases(tmp_path))["actor_updates_per_step"])  # not reported


def test_delayed_actor_updates_are_confirmed_naming_the_quantity(tmp_path: Path) -> None:
    runs = evidence([_phases(tmp_path, policy_delay=1)], [_phases(tmp_path, policy_delay=2)])
    (finding,) = replay_ratio(bench(), given=runs).findings
    assert finding.status is Status.CONFIRMED and finding.severity is Severity.HIGH, finding.headline
    assert "actor updates per gradient step 1 → 0.5" in finding.evidence.summary
    assert "replay ratio" not in finding.evidence.summary
    assert "policy_delay" in finding.remediation


def test_the_same_actor_delay_clears_and_an_unreported_one_does_not_block(tmp_path: Path) -> None:
    runs = evidence([_phases(tmp_path, policy_delay=2)], [_phases(tmp_path, policy_delay=2, seed=1)])
    (finding,) = replay_ratio(bench(), given=runs).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert "0.5 vs 0.5 actor updates per gradient step" in finding.evidence.summary
    runs = evidence([_phases(tmp_path, policy_delay=2)], [_phases(tmp_path, seed=1)])
    (finding,) = replay_ratio(bench(), given=runs).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert "actor updates" not in finding.evidence.summary
