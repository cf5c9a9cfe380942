"""Timings compared fairly: both sides in CPU time, normalized by a calibration workload, judged as ratios.

A probe times its work with this process's CPU time (:class:`rlaudit.env.rollout.Clock`) and runs a fixed
calibration workload (:func:`rlaudit.env.rollout.calibration_workload`) right beside each timed block. In
calibration units a side measured while the machine was slower (another process on the other core, a lower
clock) is not charged for it, and a baseline served from the cache can be compared with a candidate measured
now. A speed difference counts only when its interval excludes 1 *and* it exceeds :data:`PRACTICAL_RATIO`;
a ratio is cleared only when its whole interval lies inside ``[1/PRACTICAL_RATIO, PRACTICAL_RATIO]``
(:func:`rlaudit.evidence.judge_ratio`).

Audit side (numpy; :mod:`rlaudit.stats` for intervals).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlaudit import stats
from rlaudit.evidence import Judgement, judge_ratio

# A timing difference counts only when its interval excludes "no difference" AND it exceeds this factor
# (a ratio must be below 1/1.15 or above 1.15): two identical setups on a busy shared machine routinely
# differ by a few percent, never by this much once measurements are repeated and normalized.
PRACTICAL_RATIO = 1.15

# A larger, confirmed slowdown: the whole interval lies below this ratio.
CONFIRMED_RATIO = 0.75


def calibrated(blocks: Any, values: np.ndarray, *, seconds: bool) -> np.ndarray:
    """Per-block costs in calibration units when the blocks carry ``calib_seconds`` (a fixed workload timed
    right after each block), so a machine that is slower for a while is not charged for it. With
    ``seconds`` they are scaled back by this side's median calibration (for a trend within one side); without,
    they stay in calibration units (for a ratio between two sides measured at different moments). A block
    whose calibration timed zero counts at the median."""
    values = np.asarray(values, dtype=float)
    if "calib_seconds" not in blocks:
        return values
    calib = blocks["calib_seconds"].to_numpy(dtype=float)
    positive = calib[calib > 0]
    if not positive.size:
        return values
    median = float(np.median(positive))
    return values / np.where(calib > 0, calib, median) * (median if seconds else 1.0)


def ratio_of_ratios(
    a_num: Sequence[float],
    a_den: Sequence[float],
    b_num: Sequence[float],
    b_den: Sequence[float],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int,
) -> stats.Interval:
    """Interval of ``(median(a_num) / median(a_den)) / (median(b_num) / median(b_den))``.

    Each side's ratio is measured inside one process (e.g. a step that resets over a step that does not),
    so a machine that is busier for one side than the other cancels out; the four samples are resampled
    independently.
    """
    groups = [np.asarray(g, dtype=float) for g in (a_num, a_den, b_num, b_den)]
    if any(len(g) == 0 for g in groups):
        raise ValueError("every group needs at least one measurement")
    rng = stats.as_generator(seed)
    meds = [np.median(g[rng.integers(0, len(g), size=(n_boot, len(g)))], axis=1) for g in groups]
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = (meds[0] / meds[1]) / (meds[2] / meds[3])
        point = (np.median(groups[0]) / np.median(groups[1])) / (np.median(groups[2]) / np.median(groups[3]))
    boot = boot[np.isfinite(boot)]
    alpha = 1.0 - level
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2]) if boot.size else (math.nan, math.nan)
    return stats.Interval(float(point), float(low), float(high))


def slower(interval: stats.Interval, practical: float = PRACTICAL_RATIO) -> bool:
    """True when a candidate/baseline speed ratio is credibly below 1 by more than the practical margin."""
    return interval.high < 1.0 and interval.point < 1.0 / practical


def faster(interval: stats.Interval, practical: float = PRACTICAL_RATIO) -> bool:
    """True when a candidate/baseline speed ratio is credibly above 1 by more than the practical margin."""
    return interval.low > 1.0 and interval.point > practical


def confirmed(
    first: stats.Interval, again: stats.Interval, practical: float = PRACTICAL_RATIO
) -> stats.Interval | None:
    """The interval a speed verdict rests on when a difference was measured twice, or None if the two disagree.

    A timing that crosses the practical margin is measured again, in a new batch, before it is believed: on a
    shared machine a burst of load on one worker can skew one batch, but rarely two in the same direction.
    When both batches find the candidate slower (or both faster), the verdict rests on the one nearer to "no
    difference"; when they disagree, None (the comparison is inconclusive, and says so).
    """
    for direction in (slower, faster):
        if direction(first, practical) and direction(again, practical):
            return min((first, again), key=lambda ci: abs(math.log(ci.point)) if ci.point > 0 else math.inf)
    return None


def costlier(interval: stats.Interval, practical: float = 1.5) -> bool:
    """True when a candidate/baseline cost ratio is credibly above ``practical`` (its lower bound too)."""
    return interval.low > practical


def judge_speed(
    interval: stats.Interval, factor: float = PRACTICAL_RATIO, *, needed: int | None = None
) -> Judgement:
    """A candidate/baseline speed (or cost) ratio judged against ``[1/factor, factor]`` (see the module)."""
    return judge_ratio(interval.point, interval.low, interval.high, factor, needed=needed)
