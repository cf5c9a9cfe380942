"""Optimizer audit (notebook 07): what the optimizer was told (config, ``make_optimizer``) against what it
did (the recorder).

Cases 000 and 001 are the model: the first pass read the config diff and concluded the schedules were
missing; the second found the schedule had been disabled in code all along, so the diff had misled everyone.
The checks live by concern: :mod:`rlaudit.optimizer.setup` (the optimizer as built: class, hyperparameters,
library defaults, coverage), :mod:`rlaudit.optimizer.schedules` (learning rate, entropy and clip coefficients
at runtime) and :mod:`rlaudit.optimizer.updates` (gradient clipping and per-layer update ratios at runtime).
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.notebook import Section
from rlaudit.optimizer.schedules import schedules
from rlaudit.optimizer.setup import coverage, hyperparameters
from rlaudit.optimizer.updates import gradient_clipping, update_ratios

__all__ = [
    "CHECKS",
    "audit_all",
    "coverage",
    "gradient_clipping",
    "hyperparameters",
    "schedules",
    "update_ratios",
]


CHECKS = (hyperparameters, coverage, schedules, gradient_clipping, update_ratios)
"""Every optimizer check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every optimizer check, in notebook order."""
    return run_checks(wb, CHECKS)
