"""Optimizer audit, exploration: the ε (ε-greedy), α (entropy temperature) and action-noise schedules as they ran.

An exploration schedule lives in the config as a start, an end and a fraction of the run; the code computes
it from a progress that a refactor can freeze, rescale or reset. So the schedule is read from the recorder's
``exploration`` table (``recorder.exploration(step, epsilon=, alpha=, target_entropy=, action_noise=)``) at the
same fractions of each run, side by side, and SAC's target entropy with it. TD3 and DDPG explore through the
noise they add to the actor's actions, so its σ is read the same way.

An α tuned automatically (both sides record a target entropy) is not a schedule: it follows what the policy
learns, so two setups that learn differently run different α paths towards the same target. Such a difference
is SUSPECT, as an effect to explain; a changed ε, target entropy, fixed α or action-noise σ is a changed
schedule, CONFIRMED.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.evidence import fmt
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.trainer.runs import RunData, TrainingRuns, short_training_runs

FRACTIONS = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)
"""Where in each run (share of its env steps) the schedules are compared."""
TOLERANCE = 0.05
"""Two schedule values agree within this absolute difference (ε) or relative difference (α)."""
SERIES = ("epsilon", "alpha", "target_entropy", "action_noise")
NAMES = {"epsilon": "ε", "alpha": "α", "target_entropy": "target entropy", "action_noise": "action noise σ"}
REMEDIES = {
    "epsilon": "Compute ε from the run's progress as the baseline does; check that the start, end and decay "
    "fraction reach the schedule in code.",
    "alpha": "Set the entropy coefficient α (or its schedule) back to the baseline's.",
    "target_entropy": "Set the target entropy back to the baseline's. For continuous actions SAC's automatic "
    "setting is −dim(A) (SB3's `target_entropy: auto`); a discrete-action SAC's 0.98·log|A| is above what a "
    "squashed Gaussian can reach, so α keeps rising.",
    "action_noise": "Give the candidate the baseline's exploration noise on actions (its kind and σ: rl-zoo's "
    "`noise_type` and `noise_std`, SB3's `action_noise`); TD3 and DDPG explore through nothing else.",
}
"""The one step to take, per series that changed."""


def schedule(run: RunData) -> dict[str, list[float]]:
    """Each series the run recorded, at :data:`FRACTIONS` of its steps (the value in force at each)."""
    table = run.table("exploration")
    if table.empty:
        return {}
    end = float(run.summary.get("steps") or table["step"].max() or 1)
    out = {}
    for name in SERIES:
        if name not in table:
            continue
        part = table[["step", name]].dropna()
        if part.empty:
            continue
        steps = part["step"].to_numpy(dtype=float) / end
        values = part[name].to_numpy(dtype=float)
        out[name] = [float(values[max(0, np.searchsorted(steps, f, side="right") - 1)]) for f in FRACTIONS]
    return out


def _median(lists: list[list[float]]) -> list[float]:
    return [float(np.median(col)) for col in zip(*lists, strict=True)]


@check(
    "optimizer/exploration",
    title="Do the exploration schedules run the same?",
    needs=short_training_runs,
    reads=("trainer",),
)
def exploration(c: Check, runs: TrainingRuns) -> Section:
    """ε and α follow the same schedule, α the same target entropy, and TD3's or DDPG's action noise the same
    σ, on both sides.

    From the recorder's ``exploration`` table of the short runs, read at the same fractions of each run.
    """
    per: dict[str, dict[str, list[float]]] = {}
    for side in SIDES:
        found = [s for s in (schedule(r) for r in runs[side]) if s]
        per[side] = {
            name: _median([s[name] for s in found if name in s])
            for name in SERIES
            if any(name in s for s in found)
        }
    lacking = [s for s in SIDES if not per[s]]
    if lacking:
        c.missing(
            "exploration schedule (the recorder's `exploration` table)",
            "Call recorder.exploration(step, epsilon=..., alpha=..., target_entropy=..., action_noise=...) in "
            "train() where the "
            "trainer computes them; an on-policy learner exploring through its policy's entropy has none.",
            lacking,
        )
    rows = []
    changed: list[str] = []
    changed_series: list[str] = []
    learned: list[str] = []  # an automatically tuned α that ran differently towards the same target entropy
    names = [n for n in SERIES if n in per["baseline"] or n in per["candidate"]]
    tuned = all("target_entropy" in per[s] for s in SIDES)
    for name in names:
        b, k = per["baseline"].get(name), per["candidate"].get(name)
        for i, f in enumerate(FRACTIONS):
            rows.append(
                {
                    "series": NAMES[name],
                    "fraction of run": f,
                    "baseline": b[i] if b else math.nan,
                    "candidate": k[i] if k else math.nan,
                }
            )
        if b is None or k is None:
            changed.append(f"{NAMES[name]} recorded by the {'candidate' if b is None else 'baseline'} only")
            changed_series.append(name)
            continue
        diffs = [
            (f, x, y)
            for f, x, y in zip(FRACTIONS, b, k, strict=True)
            if abs(x - y) > (TOLERANCE if name == "epsilon" else TOLERANCE * max(abs(x), abs(y), 1e-12))
        ]
        if diffs:
            f, x, y = max(diffs, key=lambda d: abs(d[1] - d[2]))
            text = f"{NAMES[name]} at {f:.0%} of the run {fmt(x)} → {fmt(y)} (end of run {fmt(b[-1])} → {fmt(k[-1])})"
            if name == "alpha" and tuned:
                learned.append(text)
            else:
                changed.append(text)
                changed_series.append(name)
    table = pd.DataFrame(rows)
    measured = {
        s: {
            f"{NAMES[n]} at {f:.0%}": (per[s][n][i] if n in per[s] else None)
            for n in names
            for i, f in enumerate(FRACTIONS)
        }
        for s in SIDES
    }
    details: dict[str, Any] = {"table": table.to_dict("records")}
    values = {s: {NAMES[n]: v for n, v in per[s].items()} for s in SIDES}  # as each side ran them
    if changed:
        finding = c.finding(
            Status.CONFIRMED,
            Severity.HIGH,
            values=values,
            summary="the exploration schedule changed: "
            + "; ".join(changed)
            + ("; with it, the automatically tuned α: " + "; ".join(learned) if learned else ""),
            remediation=" ".join(REMEDIES[n] for n in changed_series),
            details=details,
        )
    elif learned:
        target = per["baseline"]["target_entropy"][-1]
        finding = c.finding(
            Status.SUSPECT,
            Severity.MEDIUM,
            values=values,
            summary=f"the automatically tuned α ran differently towards the same target entropy ({fmt(target)}): "
            + "; ".join(learned)
            + ". α follows what the policy learns, so this is an effect of another change unless α's own loss "
            "or learning rate changed",
            remediation="Look for the change that moved the policy's entropy (the actor, its learning rate, the "
            "critic's targets); compare α's loss and optimizer in code if nothing else differs.",
            details=details,
        )
    else:
        b = per["baseline"]
        finding = c.finding(
            Status.CLEARED,
            measured=measured,
            summary="same exploration schedule: "
            + "; ".join(f"{NAMES[n]} {fmt(b[n][0])} → {fmt(b[n][-1])}" for n in names),
            details=details,
        )
    return c.section(finding, tables={"exploration schedule": table})
