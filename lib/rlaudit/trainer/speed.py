"""Training speed in CPU time per environment step, calibrated, and where each trainer spends its time.

Wall-clock steps per second move with whatever else the machine is doing: on a loaded two-core machine they
gave spurious speed flags. Each run's speed here is the recorder's steady-state CPU time per step of the
training process (after the first update, net of the recorder's own writes), in units of a calibration
workload the probe timed right before and after ``train``; so a side trained while the machine was slower is
not charged for it, and the two sides compare even when one was served from the cache. The recorder's phases
(the subject's own names: ``rollout``, ``update``, ``collect``, ...) show where the time goes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rlaudit import checks, stats, timing
from rlaudit.checks import Check, check
from rlaudit.evidence import fmt, pct, ratio, spread
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES, seeds_to_settle, settle_text
from rlaudit.trainer.outcomes import basis, runs_detail
from rlaudit.trainer.runs import RunData, TrainingRuns, training_runs

SEED = 0  # bootstrap seed: every interval reproduces
MIN_RUNS = 3  # with two runs a side a percentile interval is just the extremes: no verdict either way
OTHER = "other"


CALIBRATIONS = ("torch", "numpy")
"""Calibration workloads in order of preference: the torch one slows down with training on a loaded machine
(both touch more memory than fits in the caches others share), the small numpy one barely does."""


def calibration_kind(data: Mapping[str, Sequence[RunData]]) -> str | None:
    """The first calibration of :data:`CALIBRATIONS` that every run of both sides has (None: none has)."""
    every = [r for s in SIDES for r in data[s]]
    return next((k for k in CALIBRATIONS if every and all(r.calibration(k) for r in every)), None)


def run_speed(run: RunData, kind: str | None) -> float | None:
    """Environment steps per calibration unit of ``kind`` (per CPU-second when ``kind`` is None); None when
    the recorder saw no steps."""
    cost = run.cpu_per_step
    if not cost:
        return None
    return ((run.calibration(kind) if kind else None) or 1.0) / cost


def phase_times(run: RunData) -> dict[str, float]:
    """Wall seconds per 1,000 environment steps in each phase the subject timed, by its own names.

    Nested phases keep their path (``rollout/env``); ``other`` is the rest of ``train()``'s wall time outside
    the top-level phases (setup, logging, checkpoints, bookkeeping). Empty without a phases table.
    """
    phases = run.table("phases")
    steps = float(run.summary.get("steps") or 0)
    total = float(run.summary.get("seconds") or 0)
    if phases.empty or steps <= 0 or not {"name", "seconds"} <= set(phases):
        return {}
    per_k = 1000.0 / steps
    names = phases["name"].astype(str)
    out = {name: float(seconds) * per_k for name, seconds in zip(names, phases["seconds"], strict=True)}
    top = float(phases.loc[~names.str.contains("/"), "seconds"].sum())
    out[OTHER] = max(0.0, total - top) * per_k
    return out


def phase_table(data: Mapping[str, Sequence[RunData]]) -> pd.DataFrame:
    """Per side and phase: seconds per 1,000 steps (mean over runs) and the share of ``train()``'s wall time.

    Columns: ``phase``, ``top`` (a top-level phase or ``other``), then ``<side> s/1k steps`` and
    ``<side> share`` per side; phases in the order the baseline timed them, the candidate's new ones after.
    """
    per_side: dict[str, pd.Series] = {}
    for side in SIDES:
        rows = [phase_times(r) for r in data[side]]
        rows = [r for r in rows if r]
        per_side[side] = pd.DataFrame(rows).mean() if rows else pd.Series(dtype=float)
    names = list(dict.fromkeys([*per_side["baseline"].index, *per_side["candidate"].index]))
    names = [n for n in names if n != OTHER] + ([OTHER] if OTHER in names else [])
    out = pd.DataFrame({"phase": names, "top": [("/" not in n) for n in names]})
    for side in SIDES:
        values = per_side[side].reindex(names)
        total = float(values[out["top"].to_numpy()].sum())
        out[f"{side} s/1k steps"] = values.to_numpy(dtype=float)
        out[f"{side} share"] = values.to_numpy(dtype=float) / total if total > 0 else np.nan
    return out


def _where(table: pd.DataFrame) -> str:
    """The top-level phase whose share of the time grew most in the candidate, in words."""
    top = table[table["top"]].fillna(0.0)
    if top.empty:
        return ""
    grew = top["candidate share"] - top["baseline share"]
    i = int(np.argmax(grew.to_numpy()))
    if grew.iloc[i] < 0.05:
        return "; no phase's share of the time grew by 5 points or more"
    row = top.iloc[i]
    return (
        f"; the candidate spends {pct(row['candidate share'])} of its time in `{row['phase']}` vs "
        f"{pct(row['baseline share'])}"
    )


@check(
    "trainer/speed",
    title="Speed and where the time goes",
    needs=training_runs,
    role=checks.SYMPTOM,
    reads=("agents", "curriculum", "env", "memory", "spaces"),
)
def speed(c: Check, runs: TrainingRuns) -> Section:
    """Both trainers take the same CPU time per environment step.

    Calibrated CPU time per step over the seeds' runs (a bootstrap ratio interval) and the phase table.
    """
    from rlaudit.trainer import plots

    data = runs.data
    kind = calibration_kind(data)
    speeds = {s: np.array([v for v in (run_speed(r, kind) for r in data[s]) if v]) for s in SIDES}
    lacking = [s for s in SIDES if not len(speeds[s])]
    if lacking:
        c.missing(
            "CPU time per environment step (the recorder saw no environment steps)",
            "Pass the environment step to the recorder in train(): recorder.episode(step=...) or "
            "recorder.log(step, ...), so that it knows how far training got.",
            lacking,
        )
    interval = stats.bootstrap_ratio_ci(speeds["candidate"], speeds["baseline"], seed=SEED)
    n = min(len(speeds[s]) for s in SIDES)
    logs = np.concatenate([np.log(speeds[s]) - np.log(np.mean(speeds[s])) for s in SIDES])
    needed = seeds_to_settle(
        spread(logs) if len(logs) > 2 else math.nan,
        math.log(timing.PRACTICAL_RATIO),
        math.log(interval.point),
    )
    verdict = timing.judge_speed(interval, needed=needed)
    unit = f"steps per {kind} calibration unit" if kind else "steps per CPU-second"
    table = phase_table(data)
    used = {s: [r.seed for r in data[s] if run_speed(r, kind)] for s in SIDES}
    text = (
        f"CPU time per step: speed ratio {ratio(*interval)} over {len(speeds['candidate'])} and "
        f"{len(speeds['baseline'])} runs ({fmt(np.mean(speeds['candidate']))} vs "
        f"{fmt(np.mean(speeds['baseline']))} {unit}; {basis(runs.outcomes(), used)}){_where(table)}"
    )
    evidence = dict(
        baseline=float(np.mean(speeds["baseline"])),
        candidate=float(np.mean(speeds["candidate"])),
        effect=interval.point,
        effect_label="speed ratio candidate / baseline (CPU time per step, calibrated)",
        ci=(interval.low, interval.high),
        details={
            "speeds": {s: speeds[s].tolist() for s in SIDES},
            "unit": unit,
            "runs": runs_detail(runs.outcomes(), used),
        },
        figures=["time per 1,000 steps by phase"],
    )
    if n < MIN_RUNS or verdict.inconclusive:
        beyond = abs(math.log(interval.point)) > math.log(timing.PRACTICAL_RATIO)
        settle = settle_text(needed, n, MIN_RUNS, "runs")
        finding = c.finding(
            Status.NOTED,
            Severity.LOW if beyond else Severity.INFO,
            summary=f"inconclusive ({settle}): {text}",
            remediation="Rerun with more seeds (profile standard), or time the environment on its own (05_env).",
            **evidence,
        )
    elif verdict.equivalent:
        finding = c.finding(
            Status.CLEARED,
            summary=f"same speed within ×{fmt(timing.PRACTICAL_RATIO)} (the whole interval): {text}",
            **evidence,
        )
    elif interval.point < 1:
        finding = c.finding(
            Status.CONFIRMED if interval.high < timing.CONFIRMED_RATIO else Status.SUSPECT,
            Severity.HIGH,
            summary=f"the candidate is slower: {text}",
            remediation="Profile the phase that grew (the stacked bars) in the candidate; 05_env and 06_curriculum "
            "time the environment side on their own.",
            **evidence,
        )
    else:
        finding = c.finding(
            Status.NOTED, Severity.INFO, summary=f"the candidate is faster: {text}", **evidence
        )
    shown = table[table["top"]]
    return c.section(
        finding,
        tables={"speed by run": _runs_table(data, kind), "time by phase": table},
        figures={"time per 1,000 steps by phase": plots.phase_figure(shown, _runs_table(data, kind))},
        notes=[
            "Speed is each run's CPU time per environment step after its first update (the recorder's `sps_cpu`), "
            "in units of a calibration workload timed right before and after `train()` (a few Adam steps of a "
            "small MLP; a small numpy workload for a subject without torch), so machine load and clock changes "
            f"largely cancel. A verdict needs {MIN_RUNS}+ runs a side; CLEARED needs the whole 95% interval "
            f"of the ratio inside ×{fmt(1 / timing.PRACTICAL_RATIO)} to ×{fmt(timing.PRACTICAL_RATIO)}, a flag "
            "an interval that excludes 1 and a ratio beyond that margin.",
            "Phases are wall seconds per 1,000 steps under the names the subject timed them with "
            "(`recorder.phase(...)`); `other` is the rest of train() (setup, logging, checkpoints). Shares of "
            "the wall time compare across sides; absolute wall seconds move with machine load.",
        ],
    )


def _runs_table(data: Mapping[str, Sequence[RunData]], kind: str | None) -> pd.DataFrame:
    rows = []
    for side in SIDES:
        for run in data[side]:
            cost = run.cpu_per_step
            rows.append(
                {
                    "side": side,
                    "seed": run.seed,
                    "steps": run.summary.get("steps"),
                    "CPU ms per 1k steps": cost * 1e6 if cost else None,
                    **{f"{k} calibration ms": (run.calibration(k) or np.nan) * 1e3 for k in CALIBRATIONS},
                    "speed (calibrated)": run_speed(run, kind),
                    "wall-clock steps/s": run.sps,
                }
            )
    return pd.DataFrame(rows)
