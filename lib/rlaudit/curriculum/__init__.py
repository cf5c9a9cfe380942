"""Curriculum audit (notebook 06): same scores in, same tasks out; per-call cost against the task-pool size
and over time; what the curriculum costs an environment step."""

from __future__ import annotations


def audit_all(wb, **kwargs):
    from rlaudit.curriculum.audit import audit_all as _audit_all

    return _audit_all(wb, **kwargs)
