"""What the curriculum costs an environment step (curriculum/overhead).

The curriculum's per-episode cost (``sample()`` + ``update()``, from the trend probe's blocks) times the
episodes that end per vector step under the shared random-policy rollout, over the median vector step: the
share of a step the curriculum adds, each timing in units of the calibration workload timed beside it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, Check, check
from rlaudit.curriculum.common import no_curriculum
from rlaudit.curriculum.cost import trend_pair
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.env.analysis import rollout_pair
from rlaudit.evidence import Verdict, fmt, inconclusive, interval, judge_ratio, pct
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.timing import calibrated

OVERHEAD_FACTOR = 1.15
"""Per-episode curriculum costs (in calibration units) within this factor of each other are the same."""
ADDED_SHARE = 0.02
"""A curriculum that adds less than 2% of an environment step costs practically nothing more."""


def overhead_row(
    side: str, blocks: pd.DataFrame, episodes: pd.DataFrame, steps: pd.DataFrame, rollout_calib: list[float]
) -> dict[str, Any]:
    """One side's curriculum cost per episode and per vector step (µs), and its share of a vector step.

    The share sets two probes' timings against each other (the curriculum's blocks and the rollout's steps,
    measured at different moments), so each is taken in units of the calibration workload timed beside it.

    Args:
        blocks: The trend probe's blocks (``sample_seconds``, ``update_seconds``, ``calib_seconds``).
        episodes, steps: The random-policy rollout's tables.
        rollout_calib: The calibration workload's seconds timed after the rollout (empty: shares in seconds).
    """
    per_ep = (blocks["sample_seconds"] + blocks["update_seconds"]).to_numpy(dtype=float)
    eps_per_step = len(episodes) / max(1, len(steps))
    step_cost = float(steps["seconds"].median())
    calib = [x for x in rollout_calib if x > 0]
    if calib and "calib_seconds" in blocks:
        units = float(np.median(calibrated(blocks, per_ep, seconds=False))) * eps_per_step
        share = units / (step_cost / float(np.median(calib))) if step_cost > 0 else math.nan
    else:
        share = float(np.median(per_ep)) * eps_per_step / step_cost if step_cost > 0 else math.nan
    return {
        "side": side,
        "episodes per vector step": eps_per_step,
        "curriculum µs per episode": 1e6 * float(np.median(per_ep)),
        "curriculum µs per vector step": 1e6 * float(np.median(per_ep)) * eps_per_step,
        "env step µs (median)": 1e6 * step_cost,
        "share of a step": share,
    }


def overhead_verdict(ratio: stats.Interval, share_b: float, share_c: float) -> tuple[Status, Severity, str]:
    """Status, severity and the kind of verdict (``confirmed``, ``costlier``, ``cheaper``, ``same``, ``open``)
    from the per-episode cost ratio and the two shares of a step.

    A changed cost counts when the ratio's interval excludes 1 beyond ``OVERHEAD_FACTOR`` and the candidate's
    curriculum adds more than ``ADDED_SHARE`` of a step; the severity follows the share it adds. The two are the
    same when the ratio lies within the factor, or the added share's interval within ``ADDED_SHARE``.
    """
    added = share_c - share_b
    scale = [ratio.low / ratio.point, ratio.high / ratio.point] if ratio.point > 0 else [math.nan, math.nan]
    added_low, added_high = share_c * scale[0] - share_b, share_c * scale[1] - share_b
    verdict = judge_ratio(*ratio, OVERHEAD_FACTOR)
    if ratio.low > 1.5 and share_c > 0.5:
        return Status.CONFIRMED, Severity.HIGH, "confirmed"
    if verdict.different and ratio.point > 1 and added > ADDED_SHARE:
        return Status.SUSPECT, Severity.HIGH if added >= 0.10 else Severity.MEDIUM, "costlier"
    if verdict.different and ratio.point < 1 and added < -ADDED_SHARE:
        return Status.NOTED, Severity.LOW, "cheaper"
    if verdict.equivalent or (-ADDED_SHARE <= added_low and added_high <= ADDED_SHARE):
        return Status.CLEARED, Severity.INFO, "same"
    return Status.NOTED, Severity.INFO, "open"


def overhead_needs(wb: Workbench, seed: int = 0) -> list[Pair]:
    """The curriculum's cost over time and the shared random-policy rollout."""
    return [trend_pair(wb, seed=seed), rollout_pair(wb, seed)]


OVERHEAD = {"needs": overhead_needs, "reads": ("env", "memory")}
"""The evidence of the overhead check: the curriculum's per-episode cost (which a growing structure raises, as
12_memory shows) against the shared rollout's environment step (which the env's changes alter)."""


@check("curriculum/overhead", title="What does the curriculum cost an environment step?", **OVERHEAD)
def overhead(c: Check, evidence: list[Pair], *, seed: int = 0) -> Section:
    """The curriculum costs the environment the same share of a step.

    Curriculum cost per environment step: (sample + update) x episodes per vector step, vs the step.
    """
    cur, env = evidence
    if (none := no_curriculum(c, cur)) is not None:
        return none
    blocks = {s: cur[s].table("blocks") for s in SIDES}
    rows = [
        overhead_row(
            s,
            blocks[s],
            env[s].table("episodes"),
            env[s].table("steps"),
            env[s].json("facts").get("calib_seconds", []),
        )
        for s in SIDES
    ]
    table = pd.DataFrame(rows)
    # the side-by-side ratio in calibration units, so a side measured while the machine ran slower is not
    # charged for it; the table keeps microseconds
    per_episode = {
        s: calibrated(
            blocks[s], (blocks[s]["sample_seconds"] + blocks[s]["update_seconds"]).to_numpy(), seconds=False
        )
        for s in SIDES
    }
    ratio = stats.bootstrap_ratio_ci(
        per_episode["candidate"], per_episode["baseline"], stat=np.median, seed=seed
    )
    b, cand = rows
    status, severity, kind = overhead_verdict(ratio, b["share of a step"], cand["share of a step"])
    shares = f"{pct(cand['share of a step'])} of an environment step (baseline {pct(b['share of a step'])})"
    cost = f"{fmt(ratio.point)}x {interval(ratio.low, ratio.high)}"
    if kind in ("confirmed", "costlier"):
        decided = Verdict(
            status,
            severity,
            f"wrapping the environment in the candidate's curriculum costs {shares}: each episode's "
            f"sample()+update() got {cost} more expensive",
            "Make the curriculum's per-episode path cheap (see the scaling check) or call it less often.",
        )
    elif kind == "cheaper":
        decided = Verdict(
            status,
            severity,
            f"the candidate's curriculum is cheaper: {shares}, per-episode cost {cost}",
            "Nothing to do for a regression.",
        )
    elif kind == "same":
        decided = Verdict(
            status,
            severity,
            f"the curriculum costs {pct(b['share of a step'])} vs {pct(cand['share of a step'])} of an environment "
            f"step (per-episode cost ratio {cost}): the same within ×{fmt(OVERHEAD_FACTOR)} or "
            f"{pct(ADDED_SHARE)} of a step",
            "Nothing to do.",
        )
    else:  # "open": NOTED, as every inconclusive comparison
        decided = inconclusive(
            f"the curriculum costs {shares}, per-episode cost ratio {cost}, neither shown the same within "
            f"×{fmt(OVERHEAD_FACTOR)} nor surely costlier by {pct(ADDED_SHARE)} of a step",
            "more and longer timed blocks",
        )
    return c.section(
        c.conclude(
            decided,
            values={
                r[
                    "side"
                ]: f"{pct(r['share of a step'])} of a step ({fmt(r['curriculum µs per vector step'])} µs)"
                for r in rows
            },
            interval=ratio,
            effect_label="curriculum cost per episode, candidate / baseline",
            details={"table": table.to_dict("records")},
        ),
        tables={"curriculum overhead": table},
        notes="Estimated from measured parts: CPU time per sample()+update() at the configured pool size, times the "
        "episodes that end per vector step under the random policy, over the median CPU time of a vector step; "
        "each in units of a calibration workload timed beside it, so probes timed at different moments compare.",
    )
