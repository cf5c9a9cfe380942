"""The tests of :mod:`rlaudit.optimizer.schedules`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rlaudit.findings import Status
from rlaudit.optimizer import schedules as osch
from support.runs import checker

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
