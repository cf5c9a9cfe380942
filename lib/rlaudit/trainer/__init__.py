"""Trainer audit (notebook 02) and the shared training runs every learning audit reads.

Training runs are probes (:func:`rlaudit.trainer.probes.train_run`) cached by subject fingerprint and
parameters, so notebooks that ask for the same runs share them instead of retraining: always ask through
:func:`rlaudit.trainer.runs.runs` with the profile's sizes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench
    from rlaudit.notebook import Section


def audit_all(wb: Workbench) -> list[Section]:  # lazy: see rlaudit.trainer.audit.audit_all
    from rlaudit.trainer.audit import audit_all as _audit_all

    return _audit_all(wb)
