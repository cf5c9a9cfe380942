"""Curriculum audit (notebook 06): same scores in, same tasks out? And what does each episode cost?

Case 004 is the model: a learning-progress curriculum that invalidated its cache and scanned every task slot
on every episode, O(max_tasks) per episode, so steps per second collapsed as the pool grew, while the sampled
distribution stayed exactly the same. Here both curricula get identical synthetic scores (their choices
are compared), their per-call cost is fitted against the pool size on a log-log scale (slope 0: constant,
1: linear), followed over many episodes, and set against an environment step.

The checks live by concern: :mod:`rlaudit.curriculum.sampling` (same scores in, same tasks out),
:mod:`rlaudit.curriculum.cost` (per-call cost against the pool size and over time),
:mod:`rlaudit.curriculum.overhead` (the share of an environment step); this module lists them in notebook order.
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.curriculum.cost import cost_trend, scaling
from rlaudit.curriculum.overhead import overhead
from rlaudit.curriculum.sampling import sampling
from rlaudit.engine.workbench import Workbench
from rlaudit.notebook import Section

__all__ = ["CHECKS", "audit_all", "cost_trend", "overhead", "sampling", "scaling"]

CHECKS = (sampling, scaling, cost_trend, overhead)
"""Every curriculum check, in notebook order."""


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every curriculum check, in notebook order."""
    return run_checks(wb, CHECKS, seed=seed)
