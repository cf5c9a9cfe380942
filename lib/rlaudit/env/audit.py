"""Environment audit (notebook 05): do the two environments behave the same, reset the same, and run as fast?

Case 001 is the model: an environment rebuilt on every reset (slower, and the finished episode's statistics
lost), and ``desync_episodes`` rewritten to truncate every episode instead of spreading the first resets.
Nothing in a config shows either; only stepping both environments does. Every check steps them with the same
seed and the same pre-generated actions or fixed seeded policies, in the subjects' own processes. The checks
live by concern: :mod:`rlaudit.env.equivalence`, :mod:`rlaudit.env.resets`, :mod:`rlaudit.env.episodes`,
:mod:`rlaudit.env.throughput`, :mod:`rlaudit.env.checker`; this module lists them in notebook order.
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.env.checker import check_env
from rlaudit.env.episodes import distributions, episode_stats
from rlaudit.env.equivalence import equivalence
from rlaudit.env.resets import reset_cost, reset_spread_check, termination
from rlaudit.env.throughput import throughput
from rlaudit.notebook import Section

__all__ = [
    "CHECKS",
    "audit_all",
    "check_env",
    "distributions",
    "episode_stats",
    "equivalence",
    "reset_cost",
    "reset_spread_check",
    "termination",
    "throughput",
]

CHECKS = (
    equivalence,
    reset_cost,
    episode_stats,
    reset_spread_check,
    termination,
    distributions,
    throughput,
    check_env,
)
"""Every environment check, in notebook order."""


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every environment check, in notebook order."""
    return run_checks(wb, CHECKS, seed=seed)
