"""The tests of :mod:`rlaudit.optimizer.exploration`: the schedule read from the recorder's ``exploration``
table at the same fractions of each run, and the exploration check on hand-built runs of both sides."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlaudit.findings import Status
from rlaudit.optimizer.exploration import FRACTIONS, exploration, schedule
from support.runs import bench, evidence, fake_run

STEPS = 10_000


def _epsilon(tmp: Path, *, end: float = 0.05, decay: float = 0.5, seed: int = 0, alpha: bool = False):
    """A run whose ε falls linearly from 1 to ``end`` over the first ``decay`` of its ``STEPS`` steps."""
    return _run(tmp, end=end, decay=decay, seed=seed, alpha=0.2 if alpha else None)


def _run(
    tmp: Path,
    *,
    end: float = 0.05,
    decay: float = 0.5,
    seed: int = 0,
    alpha: float | None = None,
    target_entropy: float | None = None,
):
    """A run with that ε schedule, and α (falling from 1 to ``alpha``) and a target entropy where given."""
    steps = np.arange(0, STEPS + 1, 100)
    eps = np.maximum(end, 1.0 - (1.0 - end) * steps / (decay * STEPS))
    columns = {"step": steps, "epsilon": eps}
    if alpha is not None:
        columns["alpha"] = np.geomspace(1.0, alpha, len(steps))
    if target_entropy is not None:
        columns["target_entropy"] = np.full(len(steps), target_entropy)
    return fake_run(tmp, seed=seed, summary={"steps": STEPS, "seconds": 1.0}, tables={"exploration": columns})


def test_the_schedule_is_read_at_fractions_of_the_run(tmp_path: Path) -> None:
    read = schedule(_epsilon(tmp_path, end=0.1, decay=0.5))
    assert list(read) == ["epsilon"]
    expected = [max(0.1, 1.0 - 0.9 * f / 0.5) for f in FRACTIONS]
    assert read["epsilon"] == pytest.approx(expected, abs=0.02)  # the value in force, recorded every 1%
    assert schedule(fake_run(tmp_path)) == {}  # no exploration table: nothing read


def test_two_seeds_of_one_schedule_clear_naming_its_ends(tmp_path: Path) -> None:
    runs = evidence([_epsilon(tmp_path, seed=0)], [_epsilon(tmp_path, seed=1)])
    (finding,) = exploration(bench(), given=runs).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert "same exploration schedule: ε 1 → 0.05" in finding.evidence.summary


def test_an_epsilon_that_never_decays_is_confirmed_naming_where_it_differs_most(tmp_path: Path) -> None:
    runs = evidence([_epsilon(tmp_path)], [_epsilon(tmp_path, end=1.0)])
    (finding,) = exploration(bench(), given=runs).findings
    assert finding.status is Status.CONFIRMED, finding.headline
    assert "(end of run 0.05 → 1)" in finding.evidence.summary
    assert finding.remediation.startswith("Compute ε from the run's progress"), finding.remediation


def test_a_series_recorded_on_one_side_only_is_named(tmp_path: Path) -> None:
    runs = evidence([_epsilon(tmp_path)], [_epsilon(tmp_path, alpha=True)])
    (finding,) = exploration(bench(), given=runs).findings
    assert finding.status is Status.CONFIRMED, finding.headline
    assert "α recorded by the candidate only" in finding.evidence.summary


def test_a_side_without_the_table_is_skipped_naming_the_call_that_writes_it(tmp_path: Path) -> None:
    (finding,) = exploration(bench(), given=evidence([_epsilon(tmp_path)], [fake_run(tmp_path)])).findings
    assert finding.status is Status.SKIPPED, finding.headline
    assert "recorder.exploration(step, epsilon=" in finding.remediation


def test_an_automatically_tuned_alpha_that_ran_differently_is_suspect_not_a_changed_schedule(
    tmp_path: Path,
) -> None:
    """Same target entropy, different α paths: α followed learning, which another change moved."""
    runs = evidence(
        [_run(tmp_path, alpha=0.05, target_entropy=-1.0)], [_run(tmp_path, alpha=0.5, target_entropy=-1.0)]
    )
    (finding,) = exploration(bench(), given=runs).findings
    assert finding.status is Status.SUSPECT, finding.headline
    assert "towards the same target entropy (-1)" in finding.evidence.summary
    assert "(end of run 0.05 → 0.5)" in finding.evidence.summary


def test_a_changed_target_entropy_is_a_changed_schedule(tmp_path: Path) -> None:
    runs = evidence(
        [_run(tmp_path, alpha=0.05, target_entropy=-1.0)], [_run(tmp_path, alpha=5.0, target_entropy=1.0)]
    )
    (finding,) = exploration(bench(), given=runs).findings
    assert finding.status is Status.CONFIRMED, finding.headline
    assert "target entropy at 0% of the run -1 → 1" in finding.evidence.summary
    # the one step is about the target, not about an ε schedule or the α it drove
    assert finding.remediation.startswith("Set the target entropy back to the baseline's"), (
        finding.remediation
    )
    assert "ε" not in finding.remediation and "coefficient" not in finding.remediation


def test_a_fixed_alpha_that_changed_is_a_changed_schedule(tmp_path: Path) -> None:
    runs = evidence([_run(tmp_path, alpha=0.05)], [_run(tmp_path, alpha=0.5)])
    (finding,) = exploration(bench(), given=runs).findings
    assert finding.status is Status.CONFIRMED, finding.headline
    assert finding.remediation == "Set the entropy coefficient α (or its schedule) back to the baseline's."


def _noisy(tmp: Path, sigma: float, seed: int = 0):
    """A TD3-like run: no ε or α, only the σ of the noise on its actions."""
    steps = np.arange(0, STEPS + 1, 100)
    columns = {
        "step": steps,
        "epsilon": np.full(len(steps), np.nan),
        "action_noise": np.full(len(steps), sigma),
    }
    return fake_run(tmp, seed=seed, summary={"steps": STEPS, "seconds": 1.0}, tables={"exploration": columns})


def test_a_changed_action_noise_is_a_changed_schedule_and_the_same_one_clears(tmp_path: Path) -> None:
    (same,) = exploration(
        bench(), given=evidence([_noisy(tmp_path, 0.1)], [_noisy(tmp_path, 0.1, 1)])
    ).findings
    assert same.status is Status.CLEARED and "action noise σ 0.1 → 0.1" in same.evidence.summary
    (off,) = exploration(bench(), given=evidence([_noisy(tmp_path, 0.1)], [_noisy(tmp_path, 0.0)])).findings
    assert off.status is Status.CONFIRMED, off.headline
    assert "action noise σ at 0% of the run 0.1 → 0" in off.evidence.summary
    assert off.remediation.startswith("Give the candidate the baseline's exploration noise on actions")
