"""Trainer audit (notebook 02): does the candidate train on the same batches, as fast, and as well?

The checks live by concern: :mod:`rlaudit.trainer.geometry` (the batch geometry as run, beside the config),
:mod:`rlaudit.trainer.minibatches` (which samples form each minibatch), :mod:`rlaudit.trainer.speed` (CPU time
per step, calibrated, and the phases the subject timed) and :mod:`rlaudit.trainer.learning` (the primary
metric over seeds, and stability); :mod:`rlaudit.trainer.outcomes` first says how every run ended. All read
the shared training runs (:func:`rlaudit.trainer.runs.runs`).
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.notebook import Section
from rlaudit.trainer.geometry import geometry
from rlaudit.trainer.learning import learning, stability
from rlaudit.trainer.minibatches import minibatches
from rlaudit.trainer.outcomes import outcomes
from rlaudit.trainer.speed import speed

__all__ = ["CHECKS", "audit_all", "geometry", "learning", "minibatches", "outcomes", "speed", "stability"]


CHECKS = (outcomes, geometry, minibatches, speed, learning, stability)
"""Every trainer check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every trainer check, in notebook order."""
    return run_checks(wb, CHECKS)
