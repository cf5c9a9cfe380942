"""Memory audit, the replay buffer: its capacity against what the run fills, its bytes, and how it is sampled.

Case 000 listed "experience replay buffer sizes or sampling changed" among its hypotheses. A buffer's size is
a config key; how it is sampled is code: an index bug that draws from the newest transitions only leaves the
config as it was and turns a uniform replay into a short queue. The sampled transitions' ages give it away:
uniform sampling from a buffer holding ``size`` transitions gives a median age of about ``size / 2`` env
steps. Read from the recorder's ``replay`` table (``recorder.replay(step, size, capacity, nbytes, ages=)``).
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
from rlaudit.memory.common import mib
from rlaudit.notebook import Section
from rlaudit.trainer.runs import RunData, TrainingRuns, short_training_runs, side_medians

AGE_TOL = 0.1
"""Two median ages, as shares of the buffer's content, agree within this absolute difference."""
SIZE_TOL = 0.1
"""Two sizes (capacity, bytes per transition, fill) agree within this relative difference."""
UNIFORM_MEDIAN_AGE = 0.5


def buffer_stats(run: RunData) -> dict[str, float] | None:
    """One run's buffer: capacity, fill, bytes, and the ages of sampled transitions over what it held."""
    table = run.table("replay")
    if table.empty:
        return None
    last = table.iloc[-1]
    out = {
        "capacity": float(last["capacity"]),
        "filled": float(last["size"]),
        "fill": float(last["size"]) / float(last["capacity"]) if last["capacity"] else math.nan,
        "nbytes": float(last.get("nbytes", math.nan)),
        "prioritized": float(table["prioritized"].dropna().iloc[-1])
        if "prioritized" in table and table["prioritized"].notna().any()
        else math.nan,
    }
    out["bytes_per_transition"] = out["nbytes"] / out["capacity"] if out["capacity"] else math.nan
    sampled = (
        table[(table.get("age_n", 0) > 0) & (table["size"] > 0)] if "age_p50" in table else table.iloc[:0]
    )
    if len(sampled):
        out["median_age_share"] = float(np.median(sampled["age_p50"] / sampled["size"]))
        out["p90_age_share"] = float(np.median(sampled["age_p90"] / sampled["size"]))
        out["median_age"] = float(np.median(sampled["age_p50"]))
    else:
        out["median_age_share"] = out["p90_age_share"] = out["median_age"] = math.nan
    return out


ROWS = (
    ("capacity", "capacity (transitions)"),
    ("filled", "held at the end (transitions)"),
    ("fill", "fill at the end (share of capacity)"),
    ("bytes_per_transition", "bytes per transition"),
    ("nbytes", "total bytes"),
    ("prioritized", "prioritized sampling (1 yes, 0 no)"),
    ("median_age", "median age of sampled transitions (env steps)"),
    ("median_age_share", "median age / transitions held (uniform: 0.5)"),
    ("p90_age_share", "90th percentile age / transitions held"),
)


@check(
    "memory/replay-buffer",
    title="Are the replay buffers as big, as full, and sampled the same way?",
    needs=short_training_runs,
    reads=("trainer",),
)
def replay_buffer(c: Check, runs: TrainingRuns) -> Section:
    """Both replay buffers hold as much, take as many bytes per transition, and are sampled the same way.

    From the recorder's ``replay`` table of the short runs: capacity against what each run filled, bytes,
    uniform or prioritized sampling, and the age distribution of sampled transitions.
    """
    per, lacking = side_medians(runs, buffer_stats, (key for key, _ in ROWS))
    if lacking:
        c.missing(
            "replay buffer (the recorder's `replay` table)",
            "Call recorder.replay(step, size, capacity, nbytes=..., ages=...) after sampling a batch, with the "
            "ages (env steps since insertion) of its transitions; an on-policy learner's rollout buffers are in "
            "memory/buffers.",
            lacking,
        )
    b, k = per["baseline"], per["candidate"]
    table = pd.DataFrame(
        [{"quantity": label, "baseline": b[key], "candidate": k[key]} for key, label in ROWS]
    )
    details: dict[str, Any] = {"table": table.to_dict("records")}
    sampling = []
    if not values_equal(b["median_age_share"], k["median_age_share"], rtol=0.0, atol=AGE_TOL):
        sampling.append(
            f"median age of sampled transitions {b['median_age_share']:.0%} → {k['median_age_share']:.0%} of the "
            f"transitions held ({fmt(b['median_age'])} → {fmt(k['median_age'])} env steps; uniform sampling "
            f"gives {UNIFORM_MEDIAN_AGE:.0%})"
        )
    if not values_equal(b["prioritized"], k["prioritized"], rtol=0.0):
        sampling.append(f"prioritized {fmt(b['prioritized'])} → {fmt(k['prioritized'])}")
    sizes = [
        f"{label.split(' (')[0]} {fmt(b[key])} → {fmt(k[key])}"
        for key, label in ROWS[:4]
        if not values_equal(b[key], k[key], rtol=SIZE_TOL)
    ]
    unmeasured = {key for key, _ in ROWS if math.isnan(b[key]) and math.isnan(k[key])}  # said by neither
    if sampling:
        finding = c.finding(
            Status.CONFIRMED,
            Severity.HIGH,
            values=per,
            summary="the candidate samples its replay buffer differently: " + "; ".join(sampling + sizes),
            remediation="Draw batches uniformly over every transition the buffer holds (or with the baseline's "
            "priorities); check the ring buffer's index arithmetic.",
            details=details,
        )
    elif sizes:
        finding = c.finding(
            Status.SUSPECT,
            Severity.MEDIUM,
            values=per,
            summary=f"the replay buffers differ: {'; '.join(sizes)} (total {mib(b['nbytes'])} → "
            f"{mib(k['nbytes'])})",
            remediation="Check that the change of buffer_size, or of what a transition stores, is intended.",
            details=details,
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            measured={
                s: {
                    label: per[s][key] for key, label in ROWS if key != "median_age" and key not in unmeasured
                }
                for s in SIDES
            },
            summary=f"same replay buffers: {fmt(b['capacity'])} transitions ({mib(b['nbytes'])}), filled "
            f"{b['fill']:.0%} vs {k['fill']:.0%}, sampled with median age {b['median_age_share']:.0%} vs "
            f"{k['median_age_share']:.0%} of what they hold",
            details=details,
        )
    return c.section(finding, tables={"replay buffer": table})
