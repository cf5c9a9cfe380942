"""Optimizer audit, the target network: how it follows the online network, measured at runtime.

A target network is no frozen parameter: it is copied from the online network every N gradient steps (DQN) or
moved towards it by a Polyak coefficient τ after each (SAC, TD3). Its interval is a config key that code can
override, and a copy lost in a refactor leaves the target at its initial weights while the config still says
``target_update_interval: 1000``. So the interval is read from the runs: the recorder's ``targets`` table, the
updates it measured itself on the parameters the subject names (``target_networks``) or, failing that, the
updates the trainer reported (``recorder.target_update``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.evidence import fmt
from rlaudit.findings import Severity, Status
from rlaudit.flatdiff import values_equal
from rlaudit.notebook import Section
from rlaudit.trainer.runs import RunData, TrainingRuns, short_training_runs

INTERVAL_TOL = 0.1
"""Two update intervals agree within this relative difference."""
TAU_TOL = 0.05
"""Two Polyak coefficients agree within this relative difference."""


def gradient_steps_of(run: RunData) -> int:
    """Gradient steps of a run: those the trainer reported (``recorder.update``), else its optimizer steps."""
    reported = run.summary.get("gradient_steps")
    if reported:
        return int(reported)
    updates = run.table("updates")
    if updates.empty or "group" not in updates:
        return 0
    return int((updates["group"] == 0).sum())


def target_updates(run: RunData) -> dict[str, Any] | None:
    """How one run's target network followed the online one; None when nothing says.

    Returns:
        ``source`` (``measured``/``reported``), ``updates``, ``gradient_steps``, ``interval_grad`` and
        ``interval_env`` (median gradient and env steps between two updates; inf when never updated), ``tau``
        (median coefficient), ``first_grad`` (gradient step of the first update).
    """
    table = run.table("targets")
    watched = int(run.summary.get("target_tensors") or 0) > 0
    rows = pd.DataFrame()
    source = ""
    if not table.empty and "source" in table:
        for kind in ("measured", "reported"):
            part = table[table["source"] == kind]
            if not part.empty or (kind == "measured" and watched):
                rows, source = part, kind
                break
    elif watched:
        source = "measured"
    if not source:
        return None
    grads = gradient_steps_of(run)
    if rows.empty:
        return {
            "source": source, "updates": 0, "gradient_steps": grads, "interval_grad": math.inf,
            "interval_env": math.inf, "tau": math.nan, "first_grad": math.nan,
        }  # fmt: skip
    g = rows["gradient_step"].to_numpy(dtype=float)
    e = rows["step"].to_numpy(dtype=float)
    return {
        "source": source,
        "updates": len(rows),
        "gradient_steps": grads,
        "interval_grad": float(np.median(np.diff(g))) if len(g) > 1 else float(grads or g[0]),
        "interval_env": float(np.median(np.diff(e))) if len(e) > 1 else float(e[0]),
        "tau": float(np.median(rows["tau"].to_numpy(dtype=float))),
        "first_grad": float(g[0]),
    }


def _side(values: list[dict[str, Any]]) -> dict[str, Any]:
    """Seeds of one side as one row: medians of the numbers, the first source."""
    out: dict[str, Any] = {"source": values[0]["source"], "runs": len(values)}
    for key in ("updates", "gradient_steps", "interval_grad", "interval_env", "tau", "first_grad"):
        out[key] = float(np.median([v[key] for v in values]))
    return out


def describe(t: dict[str, Any]) -> str:
    """``"hard copy every 100 gradient steps (400 env steps)"``, ``"never, in 2,800 gradient steps"``."""
    if t["updates"] == 0:
        return f"never, in {fmt(t['gradient_steps'])} gradient steps"
    kind = "hard copy" if t["tau"] >= 1 - TAU_TOL else f"Polyak τ {fmt(t['tau'])}"
    return f"{kind} every {fmt(t['interval_grad'])} gradient steps ({fmt(t['interval_env'])} env steps)"


@check(
    "optimizer/target-network",
    title="Does the target network follow the online one the same way?",
    needs=short_training_runs,
    reads=("trainer",),
)
def target_network(c: Check, runs: TrainingRuns) -> Section:
    """The target network is updated as often, and by the same coefficient, on both sides.

    From the recorder's ``targets`` table of the short runs: hard copies every N gradient steps or Polyak
    averages with coefficient τ, in gradient steps and in env steps.
    """
    per: dict[str, dict[str, Any]] = {}
    lacking = []
    for side in SIDES:
        found = [t for t in (target_updates(r) for r in runs[side]) if t is not None]
        if found:
            per[side] = _side(found)
        else:
            lacking.append(side)
    if lacking:
        c.missing(
            "target-network updates (the recorder's `targets` table)",
            "Expose target_networks(config, policy) -> {target prefix: online prefix} so the recorder measures "
            "them, or call recorder.target_update(step, gradient_step, tau) in train(); an on-policy learner "
            "has no target network.",
            lacking,
        )
    b, k = per["baseline"], per["candidate"]
    rows = [
        ("updates (median per run)", "updates"),
        ("gradient steps (median per run)", "gradient_steps"),
        ("interval, gradient steps", "interval_grad"),
        ("interval, env steps", "interval_env"),
        ("τ (1 = hard copy)", "tau"),
        ("first update, gradient step", "first_grad"),
    ]
    table = pd.DataFrame(
        [{"quantity": label, "baseline": b[key], "candidate": k[key]} for label, key in rows]
    )
    measured = {
        s: {
            "interval (gradient steps)": per[s]["interval_grad"],
            "τ": per[s]["tau"],
            "source": per[s]["source"],
        }
        for s in SIDES
    }
    changed = []
    if (b["updates"] == 0) != (k["updates"] == 0):
        changed.append("updates")
    else:
        if not values_equal(b["interval_grad"], k["interval_grad"], rtol=INTERVAL_TOL):
            changed.append("interval")
        if not values_equal(b["tau"], k["tau"], rtol=TAU_TOL):
            changed.append("τ")
    details = {"table": table.to_dict("records")}
    values = {s: {"interval_grad": per[s]["interval_grad"], "interval_env": per[s]["interval_env"],
                  "tau": per[s]["tau"], "updates": per[s]["updates"]} for s in SIDES}  # fmt: skip
    if changed:
        finding = c.finding(
            Status.CONFIRMED,
            Severity.HIGH,
            values=values,
            effect=k["interval_grad"] / b["interval_grad"] if b["updates"] and k["updates"] else None,
            effect_label="target update interval, candidate / baseline (gradient steps)",
            summary=f"the target network's {' and '.join(changed)} changed: {describe(b)} → {describe(k)}",
            remediation="Copy the online network into the target every target_update_interval gradient steps "
            "(or average with the configured tau) as the baseline does; check that the update is reached.",
            details=details,
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            measured=measured,
            summary=f"same target updates on both sides: {describe(b)} vs {describe(k)} "
            f"({b['source']} / {k['source']})",
            details=details,
        )
    return c.section(finding, tables={"target network": table})
