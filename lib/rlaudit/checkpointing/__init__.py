"""Checkpointing audit (notebook 04): contents, loading fidelity, round trip, cross-version loading, selection
of the latest checkpoint, and resume continuity."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nothing heavy at import: the audit module imports pandas and the workbench
    from rlaudit.engine.workbench import Workbench
    from rlaudit.notebook import Section


def audit_all(wb: Workbench, trust: bool = False) -> list[Section]:
    """Every checkpointing check, in notebook order (lazy re-export of ``rlaudit.checkpointing.audit.audit_all``)."""
    from rlaudit.checkpointing.audit import audit_all as _audit_all

    return _audit_all(wb, trust=trust)
