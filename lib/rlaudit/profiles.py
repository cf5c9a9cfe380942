"""Profiles size every experiment: ``smoke`` (CI, seconds per notebook), ``standard`` (the default report,
minutes on two cores), ``thorough`` (more seeds and steps, for real investigations).

Notebooks take ``profile`` as a papermill parameter; ``RLAUDIT_PROFILE``, when set, wins, so that
``make test`` runs every notebook at ``smoke`` without editing them.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    """How big each experiment is.

    Attributes:
        name: ``smoke``, ``standard`` or ``thorough``.
        seeds: Training runs per subject for learning-curve comparisons.
        train_steps: Environment steps per training run (all envs together).
        short_train_steps: Steps for runs that only need runtime traces (schedules, geometry, logging).
        rollout_steps: Environment steps for fixed-policy rollouts (env, rewards, spaces, memory).
        timing_repeats: Repeats of each timing measurement (intervals need at least 3).
        probe_timeout: CPU-seconds a single probe call may use before it is killed and reported as ERROR
            (:mod:`rlaudit.engine.limits`: CPU time of the worker's process tree, scaled by the machine's
            calibration, so a busy machine does not reach it sooner; ``--cpu-limit`` overrides it).
        attribution_budget: Training runs the summary may spend on attribution experiments.
        jobs: Default parallel jobs (worker processes) for training runs.
    """

    name: str
    seeds: int
    train_steps: int
    short_train_steps: int
    rollout_steps: int
    timing_repeats: int
    probe_timeout: float
    attribution_budget: int
    jobs: int = 2

    def replace(self, **changes: object) -> Profile:
        return dataclasses.replace(self, **changes)


# One row per size, one column per profile (smoke, standard, thorough), so the three read side by side.
_SIZES: dict[str, tuple[int | float, int | float, int | float]] = {
    "seeds": (2, 5, 10),
    "train_steps": (30_000, 300_000, 3_000_000),
    "short_train_steps": (8_192, 65_536, 262_144),
    "rollout_steps": (2_000, 20_000, 100_000),
    "timing_repeats": (3, 5, 10),
    "probe_timeout": (300.0, 900.0, 3600.0),
    "attribution_budget": (12, 60, 200),
}

PROFILES: dict[str, Profile] = {
    name: Profile(name=name, **{size: column[i] for size, column in _SIZES.items()})  # type: ignore[arg-type]
    for i, name in enumerate(("smoke", "standard", "thorough"))
}


def get_profile(name: str | None = None) -> Profile:
    """Resolve a profile by name; ``RLAUDIT_PROFILE`` overrides ``name`` when set.

    Raises:
        ValueError: Unknown name, listing the known ones.
    """
    chosen = os.environ.get("RLAUDIT_PROFILE") or name or "standard"
    try:
        return PROFILES[chosen]
    except KeyError:
        raise ValueError(
            f"unknown profile {chosen!r}; expected one of {', '.join(PROFILES)} "
            "(set by the notebook's `profile` parameter or RLAUDIT_PROFILE)"
        ) from None
