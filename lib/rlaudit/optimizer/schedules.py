"""The learning-rate, entropy and clip schedules as they ran, beside what each config declares.

Case 000 read the config diff and concluded that the schedules were missing; case 001 found the schedule had
been disabled in code all along. So the learning rate is the one the optimizer held at every step (the
recorder's ``updates`` table), and the entropy and clip coefficients the ones the trainer logged; a schedule
declared in the config but flat at runtime is confirmed with both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check
from rlaudit.evidence import fmt, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES, find_keys, stack_tables
from rlaudit.trainer.runs import RunData, TrainingRuns, short_training_runs

FLAT_TOL = 0.01  # a schedule whose values stay within 1% of their largest is flat
CURVE_TOL = 0.05  # runtime curves that differ by more than 5% of the larger one differ

# Config keys that declare a schedule for each coefficient (matched on the last dotted segment).
SCHEDULE_KEYS: dict[str, tuple[str, ...]] = {
    "learning rate": (
        "anneal_lr",
        "*lr_schedule*",
        "*learning_rate_schedule*",
        "*lr_decay*",
        "*lr_anneal*",
        "*lr_final*",
        "*scheduler*",
        "*lr_warmup*",
    ),
    "entropy coefficient": (
        "*ent*schedule*",
        "*ent*anneal*",
        "*ent*decay*",
        "*ent_coef_final*",
        "*entropy*final*",
    ),
    "clip coefficient": (
        "*clip*schedule*",
        "*clip*anneal*",
        "*clip*decay*",
        "*clip_coef_final*",
        "*clip_range_final*",
    ),
}
# Names under which trainers log the coefficients (recorder scalars, matched on the last "/" segment).
LOGGED_NAMES: dict[str, tuple[str, ...]] = {
    "entropy coefficient": ("ent_coef", "entropy_coef", "ent_coeff", "entropy_coefficient", "ent"),
    "clip coefficient": ("clip_coef", "clip_range", "clip_param", "clip_epsilon", "clip"),
}
SLUGS = {"learning rate": "lr", "entropy coefficient": "ent", "clip coefficient": "clip"}


def _is_declared(value: Any) -> bool | None:
    """Does a schedule key's value switch a schedule on? None when it says nothing (a final value)."""
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, str):
        return value.strip().lower() not in ("", "constant", "none", "null", "off", "false", "fixed")
    return None


def declared_schedule(config: Mapping[str, Any], which: str) -> tuple[bool | None, dict[str, Any]]:
    """Whether the config asks for a schedule of ``which`` (see :data:`SCHEDULE_KEYS`), and the keys read.

    Returns:
        ``(declared, keys)``: True when a switch or schedule kind turns one on, False when the keys say
        constant, None when the config has no such key.
    """
    keys = find_keys(config, SCHEDULE_KEYS[which])
    verdicts = [v for v in (_is_declared(val) for val in keys.values()) if v is not None]
    if not verdicts:
        return None, keys
    return any(verdicts), keys


def schedule_progress(steps: Sequence[float]) -> np.ndarray:
    """Fraction of the run done when the value at each record was set: ``(step - first) / last``.

    Records carry the environment step at which the rollout feeding them ended; a trainer sets its schedules
    from the steps done *before* that rollout, which is ``step - first`` (the first record's step is one
    rollout), over the run's length (the last record's step). Two trainers with different rollout sizes then
    land their values at the same fractions, so a coarse staircase and a fine one of the same schedule agree.
    """
    arr = np.asarray(steps, dtype=float)
    if arr.size == 0:
        return arr
    top = float(np.max(arr))
    return np.zeros_like(arr) if top <= 0 else (arr - float(np.min(arr))) / top


def lr_curves(data: Mapping[str, Sequence[RunData]]) -> pd.DataFrame:
    """Learning rate of param group 0 at every optimizer step: ``side, seed, update, progress, value``."""
    updates = stack_tables(data, "updates")
    if updates.empty or not {"lr", "group", "step"} <= set(updates):
        return pd.DataFrame(columns=["side", "seed", "update", "progress", "value", "name"])
    g0 = updates[updates["group"] == 0]
    out = [
        _curve(side, seed, part.sort_values("update"), "lr", update=part.sort_values("update")["update"])
        for (side, seed), part in g0.groupby(["side", "seed"], sort=False)
    ]
    frame = pd.concat(out, ignore_index=True)
    frame["name"] = "learning rate"
    return frame


def _curve(side: str, seed: Any, rows: pd.DataFrame, column: str, **extra: Any) -> pd.DataFrame:
    """One run's runtime values of a coefficient against the progress of the run (rows sorted by time)."""
    return pd.DataFrame(
        {
            "side": side,
            "seed": seed,
            **{k: np.asarray(v) for k, v in extra.items()},
            "progress": schedule_progress(rows["step"].to_numpy()),
            "value": rows[column].to_numpy(dtype=float),
        }
    )


def logged_name(names: Sequence[str], which: str) -> str | None:
    """The recorder scalar that logs ``which`` (e.g. ``charts/ent_coef``), matched on its last segment."""
    by_leaf = {str(n).rsplit("/", 1)[-1].lower(): n for n in names}
    for leaf in LOGGED_NAMES[which]:
        if leaf in by_leaf:
            return by_leaf[leaf]
    return None


def logged_curves(
    data: Mapping[str, Sequence[RunData]], which: str
) -> tuple[pd.DataFrame, dict[str, str | None]]:
    """A coefficient as logged through ``recorder.log``: ``side, seed, step, progress, value, name``."""
    scalars = stack_tables(data, "scalars")
    names: dict[str, str | None] = {}
    out = []
    for side in SIDES:
        part = scalars[scalars["side"] == side] if not scalars.empty else scalars
        name = logged_name(part["name"].unique().tolist(), which) if not part.empty else None
        names[side] = name
        if name is None:
            continue
        for seed, rows in part[part["name"] == name].groupby("seed"):
            rows = rows.sort_values("step")
            out.append(_curve(side, seed, rows, "value", step=rows["step"]))
    frame = (
        pd.concat(out, ignore_index=True)
        if out
        else pd.DataFrame(columns=["side", "seed", "step", "progress", "value"])
    )
    frame["name"] = which
    return frame, names


def curve_summary(curves: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per side: the mean over seeds at each progress point, its first and last values, whether it is flat.

    Returns:
        ``{side: {"x", "y" (the mean curve's points), "first", "last", "min", "max", "flat", "change"}}``.
    """
    out: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        part = curves[curves["side"] == side]
        if part.empty:
            continue
        mean = (
            part.assign(x=part["progress"].astype(float).round(9)).groupby("x")["value"].mean().sort_index()
        )
        x, y = mean.index.to_numpy(dtype=float), mean.to_numpy(dtype=float)
        top = float(np.max(np.abs(y))) or 1.0
        out[side] = {
            "x": x,
            "y": y,
            "first": float(y[0]),
            "last": float(y[-1]),
            "min": float(np.min(y)),
            "max": float(np.max(y)),
            "flat": bool((np.max(y) - np.min(y)) <= FLAT_TOL * top),
            "change": float(y[-1] / y[0] - 1.0) if y[0] else float("nan"),
        }
    return out


def curve_gap(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """Largest gap between two mean curves over the progress both cover, relative to their scale.

    Each curve is interpolated linearly between its points (a schedule is a function of progress, and two
    trainers sample it at different points); a curve with a single point is a constant.
    """
    hi = min(float(a["x"][-1]), float(b["x"][-1]))
    grid = np.linspace(0.0, hi, 201) if hi > 0 else np.zeros(1)
    ya, yb = np.interp(grid, a["x"], a["y"]), np.interp(grid, b["x"], b["y"])
    scale = max(float(np.max(np.abs(a["y"]))), float(np.max(np.abs(b["y"]))), 1e-12)
    return float(np.max(np.abs(ya - yb))) / scale


def judge_schedule(
    c: Check,
    which: str,
    summary: Mapping[str, Mapping[str, Any]],
    declared: Mapping[str, tuple[bool | None, dict[str, Any]]],
) -> Finding:
    """The verdict on one coefficient's schedule from its runtime curves and the configs' declarations."""

    def shape(side: str) -> str:
        s = summary[side]
        return (
            "flat at " + fmt(s["first"])
            if s["flat"]
            else f"{fmt(s['first'])} → {fmt(s['last'])} ({pct(s['change'], signed=True)})"
        )

    def keys(side: str) -> str:
        return ", ".join(f"{k}={v}" for k, v in declared[side][1].items()) or "no schedule keys"

    rel_gap = curve_gap(summary["baseline"], summary["candidate"])
    common: dict[str, Any] = dict(
        id=f"optimizer/{SLUGS[which]}-schedule",
        hypothesis=f"The {which} follows the same schedule at runtime on both sides",
        baseline=shape("baseline"),
        candidate=shape("candidate"),
        effect=rel_gap,
        effect_label="largest gap between the runtime curves, relative to their scale",
        details={"max_relative_gap": rel_gap, "declared": {s: declared[s][1] for s in SIDES}},
    )
    declared_flat = [s for s in SIDES if declared[s][0] and summary[s]["flat"]]
    if "candidate" in declared_flat and "baseline" not in declared_flat:
        return c.finding(
            Status.CONFIRMED,
            Severity.HIGH,
            summary=f"the candidate's config declares a {which} schedule ({keys('candidate')}) but at runtime "
            f"the {which} is {shape('candidate')}; the baseline's goes {shape('baseline')}",
            remediation=f"Find where the candidate's trainer applies the {which} schedule and re-enable it (the "
            "config already asks for it; the code path that reads it is off).",
            figures=["effective schedules"],
            **common,
        )
    if rel_gap > CURVE_TOL:
        text = f"the {which} differs at runtime: baseline {shape('baseline')}, candidate {shape('candidate')}"
        if declared_flat:
            text += f" (declared but flat on: {', '.join(declared_flat)})"
        return c.finding(
            Status.SUSPECT,
            Severity.HIGH if which == "learning rate" else Severity.MEDIUM,
            summary=f"{text}; config: baseline {keys('baseline')}, candidate {keys('candidate')}",
            remediation=f"Give the candidate the baseline's {which} schedule (config and the code that applies it).",
            figures=["effective schedules"],
            **common,
        )
    if declared_flat:
        return c.finding(
            Status.NOTED,
            Severity.LOW,
            summary=f"both sides declare a {which} schedule but run it flat ({shape('baseline')}): the config "
            "misleads, on both sides alike",
            remediation="Remove the dead schedule keys or re-enable the schedule on both sides.",
            **common,
        )
    return c.finding(
        Status.CLEARED,
        summary=f"same {which} at runtime: {shape('baseline')} on both sides (largest gap {rel_gap:.1%})",
        **common,
    )


def _unrecorded(c: Check, which: str, lacking: Sequence[str], off_policy: bool = False) -> Finding:
    """SKIPPED for one coefficient a side does not record at runtime, saying how to record it (or, for PPO's
    clip and entropy coefficients on off-policy learners, that they do not apply)."""
    if off_policy and which != "learning rate":
        what = f"{which}: not applicable to a value learner (optimizer/exploration reads its ε, and α with its target entropy)"
        how = "Nothing to do: an off-policy learner has no PPO clip or entropy coefficient."
    elif which == "learning rate":
        what = "learning rate at runtime (no optimizer steps recorded)"
        how = "Call recorder.watch(policy, optimizer) in train(): the recorder then reads the learning rate the "
        how += "optimizer holds at every step."
    else:
        what = f"{which} at runtime (no logged scalar named {' / '.join(LOGGED_NAMES[which][:3])})"
        how = f"Log it each update in train(): recorder.log(step, **{{'charts/{LOGGED_NAMES[which][0]}': value}})."
    return c.finding(
        Status.SKIPPED,
        id=f"optimizer/{SLUGS[which]}-schedule",
        hypothesis=f"The {which} follows the same schedule at runtime on both sides",
        summary=f"{' and '.join(lacking)}: no {what}",
        details={"missing": what, "sides": list(lacking)},
        remediation=how,
    )


@check("optimizer/schedules", title="Effective schedules at runtime", needs=short_training_runs)
def schedules(c: Check, runs: TrainingRuns) -> Section:
    """The learning-rate, entropy and clip schedules run the same at runtime.

    Runtime schedules from short recorded runs: the learning rate the optimizer held at every step (the
    recorder's ``updates`` table), and the entropy and clip coefficients as the trainer logged them.
    """
    from rlaudit.optimizer import plots
    from rlaudit.trainer.replay import learns_off_policy

    data = runs.data
    configs = {s: data[s][0].config for s in SIDES}
    off_policy = {s: learns_off_policy(data[s]) for s in SIDES}
    curves = []
    findings = []
    for which in ("learning rate", "entropy coefficient", "clip coefficient"):
        if which != "learning rate" and all(off_policy.values()):
            # PPO's coefficients do not apply; SAC's α, logged under the same name (train/ent_coef), is
            # learned against a target entropy, and optimizer/exploration judges both: one fact, one finding
            findings.append(_unrecorded(c, which, list(SIDES), off_policy=True))
            continue
        frame = lr_curves(data) if which == "learning rate" else logged_curves(data, which)[0]
        curves.append(frame)
        summary = curve_summary(frame)
        lacking = [s for s in SIDES if s not in summary]
        if lacking:
            findings.append(_unrecorded(c, which, lacking, all(off_policy[s] for s in lacking)))
            continue
        declared = {s: declared_schedule(configs[s], which) for s in SIDES}
        findings.append(judge_schedule(c, which, summary, declared))
    shown = [f for f in curves if not f.empty]
    every = (
        pd.concat(shown, ignore_index=True)
        if shown
        else pd.DataFrame(columns=["name", "side", "seed", "progress", "value"])
    )
    return c.section(
        findings,
        tables={"schedule endpoints": _endpoints(every)},
        figures={"effective schedules": plots.schedules_figure(every)},
        notes=[
            "Progress is the fraction of the run done (first to last optimizer step for the learning rate, first "
            "to last log for the coefficients). A schedule declared in the config but flat at runtime is what "
            "case 001 found after case 000 had trusted the config diff.",
            f"Short runs: {', '.join(f'{s} seeds {[r.seed for r in data[s]]}' for s in SIDES)}, "
            f"{c.wb.short_train_steps:,} steps each.",
        ],
    )


def _endpoints(curves: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (name, side), part in curves.groupby(["name", "side"], sort=False):
        s = curve_summary(part.assign(side=side)).get(side)
        if s:
            rows.append(
                {
                    "coefficient": name,
                    "side": side,
                    "at the start (mean over runs)": s["first"],
                    "at the end (mean over runs)": s["last"],
                    "min over training": s["min"],
                    "max over training": s["max"],
                    "flat": s["flat"],
                    "change, end vs start (% of start)": s["change"],
                }
            )
    return pd.DataFrame(rows)
