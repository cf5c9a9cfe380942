"""Config audit (notebook 14): resolved values side by side, implicit defaults, overrides that land."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench
    from rlaudit.notebook import Section


def audit_all(wb: Workbench) -> list[Section]:  # lazy: see rlaudit.config.audit.audit_all
    from rlaudit.config.audit import audit_all as _audit_all

    return _audit_all(wb)
