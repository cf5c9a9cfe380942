"""Init audit (notebook 08): initialization schemes and gains layer by layer, and the policy at step 0."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nothing heavy at import: the audit module imports pandas and the workbench
    from rlaudit.engine.workbench import Workbench
    from rlaudit.notebook import Section


def audit_all(wb: Workbench) -> list[Section]:
    """Every init check, in notebook order (lazy re-export of ``rlaudit.init.audit.audit_all``)."""
    from rlaudit.init.audit import audit_all as _audit_all

    return _audit_all(wb)
