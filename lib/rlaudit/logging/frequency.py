"""How often each side logs and at what cost: log points per 10,000 steps, bytes written, and the wall
time outside the trainer's timed phases, an upper bound on what logging costs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check
from rlaudit.evidence import Verdict, fmt
from rlaudit.findings import Severity, Status
from rlaudit.logging.logged import Logged, logged
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES
from rlaudit.trainer.runs import RunData


def frequency_table(
    data: Mapping[str, Sequence[RunData]], logs: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """One row per run: log points and scalars per 10k steps, log-file size, and the untimed wall time."""
    rows = []
    for side in SIDES:
        for run in data[side]:
            steps = float(run.summary.get("steps") or 0) or 1.0
            recorder = run.table("scalars")
            points = recorder["step"].nunique() if not recorder.empty else 0
            scal = logs[side]["scalars"]
            mine = scal[scal["seed"] == run.seed] if not scal.empty else scal
            inv = logs[side]["inventory"]
            inv = inv[inv["seed"] == run.seed] if not inv.empty else inv
            phases = run.table("phases")
            timed = (
                float(phases.loc[~phases["name"].astype(str).str.contains("/"), "seconds"].sum())
                if not phases.empty
                else 0.0
            )
            total = float(run.summary.get("seconds") or 0)
            rows.append(
                {
                    "side": side,
                    "seed": run.seed,
                    "log points per 10k steps": points / steps * 1e4,
                    "scalars per log point": len(recorder) / max(1, points) if points else 0,
                    "log-file scalars": len(mine),
                    "log-file bytes per 10k steps": (float(inv["bytes"].sum()) if len(inv) else 0.0)
                    / steps
                    * 1e4,
                    "untimed seconds per 10k steps": max(0.0, total - timed) / steps * 1e4,
                }
            )
    return pd.DataFrame(rows)


@check("logging/frequency", title="Logging frequency and overhead", needs=logged, reads=("trainer",))
def frequency(c: Check, evidence: Logged) -> Section:
    """Both setups log about as often, at a similar cost.

    Log points per 10,000 steps, bytes written, and the wall time outside the trainer's timed phases.
    """
    table = frequency_table(evidence.data, evidence.logs)
    means = table.groupby("side").mean(numeric_only=True)
    fb, fc = (float(means.loc[s, "log points per 10k steps"]) for s in SIDES)
    silent = [s for s, f in zip(SIDES, (fb, fc), strict=True) if f == 0]
    if len(silent) == 2:
        c.missing(
            "scalars logged through recorder.log",
            "Log the training scalars (losses, episodic return, learning rate) in train(): "
            "recorder.log(step, **scalars), once per update.",
            silent,
        )
    ob, oc = (float(means.loc[s, "untimed seconds per 10k steps"]) for s in SIDES)
    ratio = fc / fb if fb else float("inf")
    costs = f"untimed wall time (logging, checkpoints, setup) {fmt(oc)} vs {fmt(ob)} s per 10k steps"
    if silent:
        decided = Verdict(
            Status.NOTED,
            Severity.LOW,
            f"the {silent[0]} logs nothing through recorder.log ({fmt(fc)} vs {fmt(fb)} log points per 10k "
            f"steps); {costs}",
            f"Log the {silent[0]}'s training scalars with recorder.log(step, **scalars).",
        )
    elif ratio > 2 or ratio < 0.5:
        decided = Verdict(
            Status.NOTED,
            Severity.LOW,
            f"the candidate logs {'more' if ratio > 1 else 'less'} often: {fmt(fc)} vs {fmt(fb)} log points per "
            f"10k steps; {costs}",
            "Log scalars every few updates and images/videos rarely (case 003 logged scalars every 25 steps)."
            if ratio > 1
            else "Log at least once per update so curves have enough points to compare.",
        )
    else:
        decided = Verdict(
            Status.CLEARED,
            Severity.INFO,
            f"{fmt(fb)} vs {fmt(fc)} log points per 10k steps (within a factor of 2); {costs}",
            "",
        )
    return c.section(
        c.conclude(
            decided,
            baseline=fb,
            candidate=fc,
            effect=ratio if np.isfinite(ratio) else None,
            effect_label="log-frequency ratio candidate / baseline",
        ),
        tables={"logging per run": table},
        notes="Log points are counted, not timed: the verdict does not move with machine load. The cost of "
        "logging is bounded by the wall time outside the trainer's timed phases (rollout, update): it also holds "
        "setup and checkpointing, so it is an upper bound, and it is wall time.",
    )
