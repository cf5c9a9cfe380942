"""Audit-side helpers shared by the environment-facing rooms (env, rewards, curriculum, memory, seeding).

Pure functions over arrays and tables: profile sizes, unpaired bootstrap intervals, timing ratios measured
side by side, and the decision rules that turn an interval into a verdict. Runs in the notebook's process
(numpy, pandas, scipy through :mod:`rlaudit.stats`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlaudit import stats
from rlaudit.profiles import Profile

# A timing difference counts only when its interval excludes "no difference" AND it exceeds this factor
# (a ratio must be below 1/1.15 or above 1.15): two identical setups on a busy shared machine routinely
# differ by a few percent, never by this much once measurements are repeated and normalized.
PRACTICAL_RATIO = 1.15
# A larger, confirmed slowdown: the whole interval lies below this ratio.
CONFIRMED_RATIO = 0.75


@dataclass(frozen=True)
class Sizes:
    """How big each environment-side probe is at a profile.

    Attributes:
        rollout_steps: Vector steps of fixed-policy rollouts (shared by env, rewards, curriculum).
        equivalence_steps: Vector steps of the two-version equivalence run.
        throughput_envs: ``num_envs`` values timed (0 = the subject's own configuration).
        timing_repeats: Timed blocks per measurement (at least 5 for a usable interval).
        block_seconds: Target duration of one throughput block (CPU seconds).
        pool_sizes: Curriculum task-pool sizes for the cost-scaling fit.
        scaling_calls: ``sample()``/``update()`` pairs timed per pool size and repeat.
        trend_blocks: Blocks of the cost-over-time test.
        trend_calls: Episodes per trend block.
        curriculum_episodes: Episodes of the synthetic curriculum drive.
        memory_steps: Vector steps of the resident-memory rollout (an RSS slope needs a long span).
        memory_site_steps: Vector steps of the allocation-site rollout. tracemalloc slows every allocation
            several fold and the sites' per-episode growth is an exact count, not a noisy slope, so it needs
            fewer episodes than the RSS rollout (at the standard profile ~1,600 episodes, well above the
            smoke profile's ~1,000 that the fault-detection tests use).
        memory_snapshots: Snapshots (RSS samples, tracemalloc, container sizes) over a memory rollout.
        seeding_train_steps: Environment steps of each seeding training call (the subject's minimum update).
        seeding_env_steps: Vector steps of each seeding environment rollout.
    """

    rollout_steps: int
    equivalence_steps: int
    throughput_envs: tuple[int, ...]
    timing_repeats: int
    block_seconds: float
    pool_sizes: tuple[int, ...]
    scaling_calls: int
    trend_blocks: int
    trend_calls: int
    curriculum_episodes: int
    memory_steps: int
    memory_site_steps: int
    memory_snapshots: int
    seeding_train_steps: int
    seeding_env_steps: int


def sizes(profile: Profile) -> Sizes:
    """The probe sizes of a profile (smoke: seconds per notebook; standard: minutes for the report)."""
    if profile.name == "smoke":
        return Sizes(
            rollout_steps=400,
            equivalence_steps=96,
            throughput_envs=(4, 16, 0),
            timing_repeats=max(5, profile.timing_repeats),
            block_seconds=0.04,
            pool_sizes=(16, 64, 256, 1024, 4096),
            scaling_calls=48,
            trend_blocks=12,
            trend_calls=96,
            curriculum_episodes=600,
            memory_steps=400,
            memory_site_steps=400,
            memory_snapshots=6,
            seeding_train_steps=1,
            seeding_env_steps=32,
        )
    if profile.name == "thorough":
        return Sizes(
            rollout_steps=max(2000, profile.rollout_steps // 20),
            equivalence_steps=1024,
            throughput_envs=(1, 4, 16, 64, 256, 0),
            timing_repeats=max(10, profile.timing_repeats),
            block_seconds=0.2,
            pool_sizes=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
            scaling_calls=256,
            trend_blocks=40,
            trend_calls=256,
            curriculum_episodes=20000,
            memory_steps=8000,
            memory_site_steps=8000,
            memory_snapshots=12,
            seeding_train_steps=16384,
            seeding_env_steps=256,
        )
    return Sizes(
        rollout_steps=max(1000, profile.rollout_steps // 20),
        equivalence_steps=512,
        throughput_envs=(1, 4, 16, 64, 0),
        timing_repeats=max(5, profile.timing_repeats),
        block_seconds=0.1,
        pool_sizes=(16, 64, 256, 1024, 4096),
        scaling_calls=128,
        trend_blocks=24,
        trend_calls=128,
        # The closed-loop drive: a curriculum that does not replay its choices diverges within the first few
        # episodes, and every episode of the candidate's (possibly slow) curriculum costs real time.
        curriculum_episodes=2000,
        memory_steps=1000,
        memory_site_steps=600,
        memory_snapshots=8,
        seeding_train_steps=8192,
        seeding_env_steps=128,
    )


def run_pair(wb: Any, probe_fn: Callable[..., Any], desc: str, **params: Any) -> Any:
    """``wb.run(probe_fn, **params)`` with a progress bar (tqdm, in Jupyter or a terminal) for long probes.

    Returns:
        The :class:`rlaudit.workbench.Pair` (same cache entries as ``wb.run``).
    """
    from rlaudit.workbench import Pair

    baseline, candidate = wb.run_each(probe_fn, [("baseline", params), ("candidate", params)], desc=desc)
    return Pair(baseline=baseline, candidate=candidate)


def rollout_params(profile: Profile, seed: int, policy: str = "random") -> dict[str, Any]:
    """Parameters of :func:`rlaudit.env.probes.rollout` at a profile: every room asks with these, so the
    env, rewards and curriculum notebooks share one cached rollout per (seed, policy)."""
    return {"seed": int(seed), "steps": sizes(profile).rollout_steps, "policy": policy}


# ---------------------------------------------------------------------------------------------------------
# Intervals
# ---------------------------------------------------------------------------------------------------------


def bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    stat: Callable[[np.ndarray], float] = np.mean,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int,
) -> stats.Interval:
    """Interval of ``stat(a) - stat(b)`` for two independent samples (each resampled on its own).

    Args:
        a: Sample A, shape (n,) (e.g. the candidate's episode lengths).
        b: Sample B, shape (m,).
        stat: Statistic of a 1-D array.
        seed: Seed of the resampling (intervals reproduce to the last digit).

    Returns:
        ``Interval(stat(a) - stat(b), low, high)`` (percentile bootstrap).
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) == 0 or len(y) == 0:
        raise ValueError(f"both samples need values, got {len(x)} and {len(y)}")
    rng = stats.as_generator(seed)
    point = float(stat(x) - stat(y))
    ia = rng.integers(0, len(x), size=(n_boot, len(x)))
    ib = rng.integers(0, len(y), size=(n_boot, len(y)))
    if stat is np.mean:
        boot = x[ia].mean(axis=1) - y[ib].mean(axis=1)
    elif stat is np.median:
        boot = np.median(x[ia], axis=1) - np.median(y[ib], axis=1)
    else:
        boot = np.array([stat(x[i]) - stat(y[j]) for i, j in zip(ia, ib, strict=True)])
    alpha = 1.0 - level
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return stats.Interval(point, float(low), float(high))


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


def costlier(interval: stats.Interval, practical: float = 1.5) -> bool:
    """True when a candidate/baseline cost ratio is credibly above ``practical`` (its lower bound too)."""
    return interval.low > practical


def fmt(value: Any, digits: int = 3) -> str:
    """A compact number for sentences: ``0.000123`` -> ``0.000123``, ``12345.6`` -> ``1.23e+04``."""
    if value is None:
        return "n/a"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "n/a"
    return f"{v:.{digits}g}"


def pct(value: float) -> str:
    """``0.123`` -> ``12%``."""
    return "n/a" if value is None or not math.isfinite(value) else f"{100 * value:.0f}%"
