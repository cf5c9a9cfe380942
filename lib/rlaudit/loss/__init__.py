"""Loss audit (notebook 09): advantages against a reference GAE (with the discount and lambda each side uses),
loss terms and their coefficients on a shared batch, gradient flow, and the five probe environments
(:mod:`rlaudit.loss.envs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nothing heavy at import: the audit modules import pandas and the workbench
    from rlaudit.engine.workbench import Workbench
    from rlaudit.notebook import Section


def audit_all(wb: Workbench) -> list[Section]:
    """Every loss check, in notebook order (lazy re-export of ``rlaudit.loss.audit.audit_all``)."""
    from rlaudit.loss.audit import audit_all as _audit_all

    return _audit_all(wb)
