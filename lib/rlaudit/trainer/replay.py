"""Trainer audit, the replay ratio: gradient steps per environment step, as the off-policy runs took them.

Fedus et al. (2020) and D'Oro et al. (2023) show the replay ratio (updates per env step) moving results as
much as any architecture change; it is spread over ``learning_starts``, ``train_freq``, ``gradient_steps`` and
the batch size, any of which code can override. So it is read from the runs: the recorder's
``gradient_steps`` table (``recorder.update(step, gradient_steps, batch_size)``, once per training phase).

An actor-critic also reports how many of those gradient steps updated its actor (``actor_updates=``): TD3
updates the actor every ``policy_delay``-th critic step (0.5 actor updates per gradient step by default), SAC
and DDPG at every one. A side that does not report it leaves that quantity out of the comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.evidence import fmt
from rlaudit.findings import Severity, Status
from rlaudit.flatdiff import values_equal
from rlaudit.notebook import Section
from rlaudit.trainer.runs import RunData, TrainingRuns, short_training_runs, side_medians

TOLERANCE = 0.1
"""Two quantities agree within this relative difference."""

QUANTITIES = (
    ("replay_ratio", "replay ratio (gradient steps per env step)"),
    ("samples_per_step", "sampled transitions per env step"),
    ("learning_starts", "learning starts (env step of the first gradient step)"),
    ("train_freq", "train_freq (env steps between training phases)"),
    ("gradient_steps", "gradient steps per training phase"),
    ("batch_size", "batch size"),
    ("actor_updates_per_step", "actor updates per gradient step"),
)
OPTIONAL = ("actor_updates_per_step",)
"""Quantities compared only where both sides report them (a critic-only learner has no actor to update)."""


def replay_geometry(run: RunData) -> dict[str, float] | None:
    """What one run's training phases did; None when it recorded none."""
    table = run.table("gradient_steps")
    if table.empty:
        return None
    steps = table["step"].to_numpy(dtype=float)
    grads = table["gradient_steps"].to_numpy(dtype=float)
    freq = float(np.median(np.diff(steps))) if len(steps) > 1 else math.nan
    span = steps[-1] - steps[0] + (freq if math.isfinite(freq) else 0.0)
    batch = (
        table["batch_size"].to_numpy(dtype=float) if "batch_size" in table else np.full(len(table), np.nan)
    )
    ratio = float(grads.sum() / span) if span > 0 else math.nan
    batch_size = float(np.nanmedian(batch)) if np.isfinite(batch).any() else math.nan
    actor = (
        table["actor_updates"].to_numpy(dtype=float)
        if "actor_updates" in table
        else np.full(len(table), np.nan)
    )
    reported = np.isfinite(actor)
    actor_per_step = (
        float(actor[reported].sum() / grads[reported].sum())
        if reported.any() and grads[reported].sum() > 0
        else math.nan
    )
    return {
        "replay_ratio": ratio,
        "samples_per_step": ratio * batch_size,
        "learning_starts": float(steps[0]),
        "train_freq": freq,
        "gradient_steps": float(np.median(grads)),
        "batch_size": batch_size,
        "actor_updates_per_step": actor_per_step,
    }


def learns_off_policy(runs: Sequence[RunData]) -> bool:
    """True when every one of ``runs`` recorded gradient steps against env steps (``recorder.update``): an
    off-policy learner, whose batches come from a replay buffer, not from a rollout."""
    return bool(runs) and all(not run.table("gradient_steps").empty for run in runs)


@check(
    "trainer/replay-ratio",
    title="Do both learners replay as much per environment step?",
    needs=short_training_runs,
    reads=("memory",),
)
def replay_ratio(c: Check, runs: TrainingRuns) -> Section:
    """Both sides take as many gradient steps per environment step, from the same start, on batches of the same size.

    From the recorder's ``gradient_steps`` table of the short runs: replay ratio, ``learning_starts``,
    ``train_freq``, gradient steps per phase, batch size and, where both sides report it, actor updates per
    gradient step (TD3's ``policy_delay``).
    """
    per, lacking = side_medians(runs, replay_geometry, (key for key, _ in QUANTITIES))
    if lacking:
        c.missing(
            "gradient steps against env steps (the recorder's `gradient_steps` table)",
            "Call recorder.update(step, gradient_steps=..., batch_size=...) after each training phase of an "
            "off-policy trainer; an on-policy learner's geometry is in trainer/geometry.",
            lacking,
        )
    b, k = per["baseline"], per["candidate"]
    table = pd.DataFrame(
        [{"quantity": label, "baseline": b[key], "candidate": k[key]} for key, label in QUANTITIES]
    )
    # an optional quantity one side does not report is left out rather than read as a change
    compared = [
        (key, label)
        for key, label in QUANTITIES
        if key not in OPTIONAL or not (math.isnan(b[key]) or math.isnan(k[key]))
    ]
    changed = [(key, label) for key, label in compared if not values_equal(b[key], k[key], rtol=TOLERANCE)]
    details: dict[str, Any] = {"table": table.to_dict("records")}
    if changed:
        named = "; ".join(f"{label.split(' (')[0]} {fmt(b[key])} → {fmt(k[key])}" for key, label in changed)
        ratio_changed = any(
            key in ("replay_ratio", "samples_per_step", "actor_updates_per_step") for key, _ in changed
        )
        finding = c.finding(
            Status.CONFIRMED,
            Severity.HIGH if ratio_changed else Severity.MEDIUM,
            values=per,
            effect=k["replay_ratio"] / b["replay_ratio"] if b["replay_ratio"] else None,
            effect_label="replay ratio, candidate / baseline",
            summary=f"the candidate replays differently: {named}",
            remediation="Take gradient_steps gradient steps every train_freq env steps from learning_starts on, "
            "as configured; check that no constant in the training loop overrides them."
            + (
                " Update the actor as often as the baseline against the critic (TD3's policy_delay: one actor "
                "step every policy_delay critic steps; SAC: every step)."
                if any(key == "actor_updates_per_step" for key, _ in changed)
                else ""
            ),
            details=details,
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            measured={
                s: {
                    label: per[s][key]
                    for key, label in compared
                    if not (math.isnan(b[key]) and math.isnan(k[key]))
                }
                for s in SIDES
            },
            summary=f"same replay: {fmt(b['replay_ratio'])} vs {fmt(k['replay_ratio'])} gradient steps per env "
            f"step (batch {fmt(b['batch_size'])} vs {fmt(k['batch_size'])}, from env step "
            f"{fmt(b['learning_starts'])} vs {fmt(k['learning_starts'])})"
            + (
                f"; {fmt(b['actor_updates_per_step'])} vs {fmt(k['actor_updates_per_step'])} actor updates per "
                "gradient step"
                if "actor_updates_per_step" in dict(compared) and not math.isnan(b["actor_updates_per_step"])
                else ""
            ),
            details=details,
        )
    return c.section(finding, tables={"replay": table})
