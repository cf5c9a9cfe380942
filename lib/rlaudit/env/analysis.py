"""Audit-side sizes and shared rollouts of the environment-facing rooms (env, rewards, curriculum, memory,
seeding).

How big each probe is at a profile (:func:`sizes`), and the fixed-policy rollouts every room asks for with the
same parameters (:func:`rollout_params`, :func:`rollout_pair`), so the notebooks share one cached rollout per
(seed, policy); the timing token that makes both sides of a pair be timed together (:func:`timing_batch`); how
many repeats would settle an inconclusive ratio (:func:`repeats_to_settle`). Runs in the notebook's process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from rlaudit.checks import run_probe
from rlaudit.profiles import Profile

POLICIES = ("random", "wsls")
"""The fixed seeded policies of the shared rollouts (see :class:`rlaudit.env.rollout.Policy`)."""


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
        trend_calls: Episodes per trend block (blocks of a few milliseconds at least: shorter ones time too
            noisily for a growth within 25% to be shown or excluded).
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


class BySize(NamedTuple):
    """One size at each profile."""

    smoke: Any
    standard: Any
    thorough: Any


# One row per size, its value at each profile side by side.
_SIZES: dict[str, BySize] = {
    "rollout_steps": BySize(
        1000, 1000, 2000
    ),  # at least: a twentieth of the profile's rollout_steps when more
    "equivalence_steps": BySize(96, 512, 1024),
    "throughput_envs": BySize((4, 16, 0), (1, 4, 16, 64, 0), (1, 4, 16, 64, 256, 0)),
    "timing_repeats": BySize(8, 8, 10),  # at least: the profile's timing_repeats when more
    "block_seconds": BySize(0.04, 0.1, 0.2),
    "pool_sizes": BySize(
        smoke=(16, 64, 256, 1024, 4096),
        standard=(16, 64, 256, 1024, 4096),
        thorough=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
    ),
    "scaling_calls": BySize(48, 128, 256),
    "trend_blocks": BySize(40, 48, 80),
    "trend_calls": BySize(320, 512, 1024),
    # The closed-loop drive: a curriculum that does not replay its choices diverges within the first few
    # episodes, and every episode of the candidate's (possibly slow) curriculum costs real time.
    "curriculum_episodes": BySize(600, 2000, 20000),
    "memory_steps": BySize(400, 1000, 8000),
    "memory_site_steps": BySize(400, 600, 8000),
    "memory_snapshots": BySize(6, 8, 12),
    "seeding_train_steps": BySize(1, 8192, 16384),
    "seeding_env_steps": BySize(32, 128, 256),
}


def sizes(profile: Profile) -> Sizes:
    """The probe sizes of a profile (smoke: seconds per notebook; standard: minutes for the report; a profile of
    another name gets the standard sizes)."""
    column = profile.name if profile.name in BySize._fields else "standard"
    chosen = {size: getattr(values, column) for size, values in _SIZES.items()}
    chosen["rollout_steps"] = max(chosen["rollout_steps"], profile.rollout_steps // 20)
    chosen["timing_repeats"] = max(chosen["timing_repeats"], profile.timing_repeats)
    return Sizes(**chosen)


def rollout_params(profile: Profile, seed: int, policy: str = "random") -> dict[str, Any]:
    """Parameters of :func:`rlaudit.env.probes.rollout` at a profile: every room asks with these, so the
    env, rewards and curriculum notebooks share one cached rollout per (seed, policy)."""
    return {"seed": int(seed), "steps": sizes(profile).rollout_steps, "policy": policy}


def rollout_pair(wb: Any, seed: int = 0, policy: str = "random") -> Any:
    """The shared :func:`rlaudit.env.probes.rollout` on both sides (a :class:`rlaudit.engine.workbench.Pair`)."""
    from rlaudit.env import probes

    return run_probe(
        wb, probes.rollout, f"env rollout ({policy})", **rollout_params(wb.profile, seed, policy)
    )


def rollout_pairs(wb: Any, seed: int = 0) -> list[Any]:
    """The shared rollouts under every fixed policy of :data:`POLICIES`, in that order."""
    return [rollout_pair(wb, seed, policy) for policy in POLICIES]


def repeats_to_settle(n: int, point: float, low: float, high: float, factor: float) -> int | None:
    """Repeats (blocks, steps, episodes) that would settle an inconclusive ratio against ``[1/factor, factor]``.

    An interval's half-width shrinks as ``1/sqrt(n)``; the ratio settles once the half-width (on the log scale)
    fits between the estimate and the nearer margin: ``n * (half / room)**2``.

    Args:
        n: Repeats behind the interval.
        point, low, high: The ratio and its interval (positive).
        factor: The practical margin (> 1).

    Returns:
        Repeats per side (at least ``n + 1``), or None when the estimate itself lies on or beyond the margin
        (more repeats would show a difference, not equivalence) or the interval is not usable.
    """
    if not all(math.isfinite(v) and v > 0 for v in (point, low, high)) or n < 1:
        return None
    half = (math.log(high) - math.log(low)) / 2
    room = math.log(factor) - abs(math.log(point))
    if room <= 0:
        return None
    return max(n + 1, math.ceil(n * (half / room) ** 2))


def timing_batch(wb: Any) -> str:
    """A token naming the pair under investigation, passed to timing probes as a parameter.

    It is part of the probes' cache key, so a baseline's timing is measured again beside each candidate (both
    sides in one batch, their workers running at the same time) instead of a cached baseline measured on
    another, differently loaded moment being set against a fresh candidate.
    """
    import hashlib

    found = getattr(wb, "fingerprints", None) or {}
    text = "|".join(str(found.get(side, "")) for side in ("baseline", "candidate"))
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest() if text.strip("|") else ""
