"""The tests of :mod:`rlaudit.optimizer.targets`: how a target network followed the online one, read from the
recorder's ``targets`` table, and the target-network check on hand-built runs of both sides."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rlaudit.findings import Status
from rlaudit.optimizer.targets import describe, target_network, target_updates
from support.runs import bench, evidence, fake_run

GRADIENT_STEPS = 2000


def _targets(tmp: Path, *, every: int = 100, tau: float = 1.0, source: str = "measured", seed: int = 0):
    """A run of ``GRADIENT_STEPS`` gradient steps, 4 env steps apart, whose target was updated every ``every``
    of them by coefficient ``tau`` (``every=0``: never), as the recorder measured it or the trainer reported."""
    grads = np.arange(every, GRADIENT_STEPS + 1, every) if every else np.array([], int)
    table = {
        "step": 4 * grads,
        "gradient_step": grads,
        "tau": np.full(len(grads), tau),
        "source": [source] * len(grads),
    }
    summary = {
        "steps": 4 * GRADIENT_STEPS,
        "seconds": 1.0,
        "gradient_steps": GRADIENT_STEPS,
        "target_tensors": 4 if source == "measured" else 0,  # tensors the recorder watched
    }
    return fake_run(tmp, seed=seed, summary=summary, tables={"targets": table} if every else None)


def test_updates_by_hand_and_in_words(tmp_path: Path) -> None:
    t = target_updates(_targets(tmp_path, every=100))
    assert t is not None and t["source"] == "measured"
    assert (t["updates"], t["interval_grad"], t["interval_env"], t["tau"], t["first_grad"]) == (
        20,
        100,
        400,
        1,
        100,
    )
    assert describe(t) == "hard copy every 100 gradient steps (400 env steps)"
    polyak = target_updates(_targets(tmp_path, every=1, tau=0.005))
    assert polyak is not None and describe(polyak).startswith("Polyak τ 0.005 every 1 gradient steps")


def test_a_watched_target_that_never_moves_is_never_updated_and_an_unwatched_run_says_nothing(
    tmp_path: Path,
) -> None:
    never = target_updates(_targets(tmp_path, every=0))
    assert never is not None and never["updates"] == 0 and math.isinf(never["interval_grad"])
    assert describe(never) == "never, in 2000 gradient steps"
    assert target_updates(fake_run(tmp_path)) is None  # neither watched nor reported


def test_two_seeds_of_one_schedule_clear_naming_the_source(tmp_path: Path) -> None:
    runs = evidence([_targets(tmp_path, seed=0)], [_targets(tmp_path, seed=1, source="reported")])
    (finding,) = target_network(bench(), given=runs).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert "(measured / reported)" in finding.evidence.summary


@pytest.mark.parametrize(
    ("every", "tau", "named"),
    [
        (0, 1.0, "updates changed: hard copy every 100 gradient steps (400 env steps) → never, in 2000"),
        (
            25,
            1.0,
            "interval changed: hard copy every 100 gradient steps (400 env steps) → hard copy every 25",
        ),
        (100, 0.5, "τ changed"),
    ],
)
def test_a_changed_target_schedule_is_confirmed_naming_what_changed(
    tmp_path: Path, every: int, tau: float, named: str
) -> None:
    runs = evidence([_targets(tmp_path)], [_targets(tmp_path, every=every, tau=tau)])
    (finding,) = target_network(bench(), given=runs).findings
    assert finding.status is Status.CONFIRMED, finding.headline
    assert named in finding.evidence.summary, finding.evidence.summary


def test_a_side_without_a_target_network_is_skipped_naming_how_to_expose_one(tmp_path: Path) -> None:
    (finding,) = target_network(bench(), given=evidence([_targets(tmp_path)], [fake_run(tmp_path)])).findings
    assert finding.status is Status.SKIPPED, finding.headline
    assert "target_networks(config, policy)" in finding.remediation
