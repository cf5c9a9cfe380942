"""Memory audit (notebook 12): resident-memory growth over a long rollout and the shared training runs, where
memory grows (allocation sites, object types, containers), and the buffers a config implies."""

from __future__ import annotations


def audit_all(wb, **kwargs):
    from rlaudit.memory.audit import audit_all as _audit_all

    return _audit_all(wb, **kwargs)
