"""Agents audit (notebook 01): the network each setup builds, aligned by structure, traced on observations."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nothing heavy at import: the audit module imports pandas and the workbench
    from rlaudit.engine.workbench import Workbench
    from rlaudit.notebook import Section


def audit_all(wb: Workbench) -> list[Section]:
    """Every agents check, in notebook order (lazy re-export of ``rlaudit.agents.audit.audit_all``)."""
    from rlaudit.agents.audit import audit_all as _audit_all

    return _audit_all(wb)
