"""The tests of :mod:`rlaudit.optimizer.schedules`."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from rlaudit.findings import Status
from rlaudit.optimizer import schedules as osch
from rlaudit.profiles import get_profile
from rlaudit.trainer.runs import RunData
from support.runs import checker, fake_run

SCHEDULES = "optimizer/schedules"


def test_declared_schedule_reads_switches_and_kinds() -> None:
    cfg = {
        "trainer": {
            "anneal_lr": True,
            "lr_schedule": "linear",
            "ent_schedule": "constant",
            "ent_coef_final": 0.0,
        }
    }
    assert osch.declared_schedule(cfg, "learning rate")[0] is True
    assert osch.declared_schedule(cfg, "entropy coefficient")[0] is False
    assert osch.declared_schedule(cfg, "clip coefficient")[0] is None  # the config says nothing
    off = {"trainer": {"anneal_lr": False, "lr_schedule": "cosine"}}
    assert osch.declared_schedule(off, "learning rate")[0] is True  # a kind is a request, whatever the switch
    assert osch.declared_schedule({"scheduler": None}, "learning rate")[0] is False


def _curve(side: str, values: list[float], seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {"side": side, "seed": seed, "progress": np.linspace(0, 1, len(values)), "value": values}
    )


def test_flat_runtime_schedule_declared_in_config_is_confirmed() -> None:
    curves = pd.concat(
        [_curve("baseline", [1.0, 0.75, 0.5, 0.25]), _curve("candidate", [1.0, 1.0, 1.0, 1.0])]
    )
    summary = osch.curve_summary(curves)
    assert summary["candidate"]["flat"] and not summary["baseline"]["flat"]
    declared = {"baseline": (True, {"anneal_lr": True}), "candidate": (True, {"anneal_lr": True})}
    finding = osch.judge_schedule(checker(SCHEDULES), "learning rate", summary, declared)
    assert finding.status is Status.CONFIRMED
    assert "flat" in finding.evidence.summary and "0.25" in finding.evidence.summary


def test_identical_schedules_are_cleared_and_both_flat_is_noted() -> None:
    same = pd.concat([_curve("baseline", [1.0, 0.5]), _curve("candidate", [1.0, 0.5])])
    declared = {s: (True, {}) for s in ("baseline", "candidate")}
    assert (
        osch.judge_schedule(checker(SCHEDULES), "learning rate", osch.curve_summary(same), declared).status
        is Status.CLEARED
    )
    flat = pd.concat([_curve("baseline", [1.0, 1.0]), _curve("candidate", [1.0, 1.0])])
    assert (
        osch.judge_schedule(checker(SCHEDULES), "learning rate", osch.curve_summary(flat), declared).status
        is Status.NOTED
    )


def test_undeclared_difference_is_suspect() -> None:
    curves = pd.concat([_curve("baseline", [0.2, 0.2]), _curve("candidate", [0.2, 0.1])])
    declared = {s: (None, {}) for s in ("baseline", "candidate")}
    assert (
        osch.judge_schedule(
            checker(SCHEDULES), "clip coefficient", osch.curve_summary(curves), declared
        ).status
        is Status.SUSPECT
    )


def test_schedules_quiet_across_seeds(make_wb) -> None:
    """Baseline and candidate runs of the same subject with different seeds: runtime schedules still agree."""
    from rlaudit.trainer.runs import run_data, runs

    wb = make_wb("builtin:reference")
    a = run_data(runs(wb, seeds=[0, 1], steps=wb.profile.short_train_steps))["baseline"]
    b = run_data(runs(wb, seeds=[2, 3], steps=wb.profile.short_train_steps))["baseline"]
    curves = osch.lr_curves({"baseline": a, "candidate": b})
    declared = {s: osch.declared_schedule(a[0].config, "learning rate") for s in ("baseline", "candidate")}
    summary = osch.curve_summary(curves)
    assert (
        osch.judge_schedule(checker(SCHEDULES), "learning rate", summary, declared).status is Status.CLEARED
    )


def test_same_schedule_at_different_rollout_sizes_agrees() -> None:
    """A linear decay sampled by 2 big updates and by 16 small ones is the same schedule (no false alarm
    when only the batch geometry differs)."""
    coarse_steps = np.repeat([4096, 8192], 16)
    coarse_lr = np.repeat([2.5e-3 * (1 - k / 2) for k in range(2)], 16)
    fine_steps = np.repeat(512 * np.arange(1, 17), 16)
    fine_lr = np.repeat([2.5e-3 * (1 - k / 16) for k in range(16)], 16)
    curves = pd.concat(
        [
            pd.DataFrame(
                {
                    "side": "baseline",
                    "seed": 0,
                    "progress": osch.schedule_progress(coarse_steps),
                    "value": coarse_lr,
                }
            ),
            pd.DataFrame(
                {
                    "side": "candidate",
                    "seed": 0,
                    "progress": osch.schedule_progress(fine_steps),
                    "value": fine_lr,
                }
            ),
        ]
    )
    summary = osch.curve_summary(curves)
    assert osch.curve_gap(summary["baseline"], summary["candidate"]) < 1e-9
    declared = {s: (True, {}) for s in ("baseline", "candidate")}
    assert (
        osch.judge_schedule(checker(SCHEDULES), "learning rate", summary, declared).status is Status.CLEARED
    )


def _sac_like(tmp: Path, seed: int, alpha_end: float, target_entropy: float) -> RunData:
    """A SAC run as the SB3 adapter records it: α logged by SB3 as ``train/ent_coef`` and recorded again with
    its target entropy in ``exploration``; gradient steps against env steps (an off-policy learner)."""
    steps = np.arange(1_000, 10_001, 1_000)
    alpha = np.geomspace(1.0, alpha_end, len(steps))
    return fake_run(
        tmp,
        seed=seed,
        summary={"steps": 10_000, "seconds": 10.0},
        tables={
            "scalars": {"step": steps, "name": ["train/ent_coef"] * len(steps), "value": alpha},
            "exploration": {
                "step": steps,
                "epsilon": np.full(len(steps), np.nan),
                "alpha": alpha,
                "target_entropy": np.full(len(steps), target_entropy),
            },
            "gradient_steps": {
                "step": steps,
                "gradient_steps": np.ones(len(steps)),
                "batch_size": np.full(len(steps), 256),
            },
        },
    )


def test_a_learned_temperature_is_one_finding_in_exploration_not_a_second_in_the_schedules(
    tmp_path: Path,
) -> None:
    """SAC's α ran away (1 → 35) because its target entropy changed: the schedules check must not judge the
    logged ``train/ent_coef`` as an entropy schedule beside the exploration check's finding on its cause."""
    from rlaudit.optimizer.exploration import exploration
    from rlaudit.trainer.runs import TrainingRuns

    given = TrainingRuns(
        data={
            "baseline": [_sac_like(tmp_path, 0, 0.1, -1.0)],
            "candidate": [_sac_like(tmp_path, 0, 35.0, 0.68)],
        }
    )
    wb = SimpleNamespace(profile=get_profile("smoke"), metric=None, short_train_steps=10_000)
    found = {f.id: f for f in osch.schedules(wb, given=given).findings}
    for coefficient in ("optimizer/ent-schedule", "optimizer/clip-schedule"):
        assert found[coefficient].status is Status.SKIPPED, found[coefficient].headline
        assert "optimizer/exploration reads" in found[coefficient].evidence.summary
    (cause,) = exploration(wb, given=given).findings
    assert cause.status is Status.CONFIRMED and "target entropy" in cause.evidence.summary, cause.headline
    assert "with it, the automatically tuned α" in cause.evidence.summary  # α's path, told once, here
