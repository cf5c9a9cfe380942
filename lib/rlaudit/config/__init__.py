"""Config audit (notebook 14): resolved values side by side, implicit defaults, overrides that land."""

from __future__ import annotations


def audit_all(wb):  # noqa: ANN001, ANN201 - thin lazy re-export; see rlaudit.config.audit.audit_all
    from rlaudit.config.audit import audit_all as _audit_all

    return _audit_all(wb)
