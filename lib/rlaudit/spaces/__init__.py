"""Spaces audit (notebook 10): spaces side by side, observation statistics, what the network receives in
training vs evaluation, and what preprocessing costs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nothing heavy at import: the audit module imports pandas and the workbench
    from rlaudit.engine.workbench import Workbench
    from rlaudit.notebook import Section


def audit_all(wb: Workbench, trust: bool = False) -> list[Section]:
    """Every spaces check, in notebook order (lazy re-export of ``rlaudit.spaces.audit.audit_all``)."""
    from rlaudit.spaces.audit import audit_all as _audit_all

    return _audit_all(wb, trust=trust)
