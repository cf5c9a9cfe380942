"""Environment audit (notebook 05): two-version equivalence, reset semantics, episode distributions under
fixed policies, throughput across num_envs, and Gymnasium's checker."""

from __future__ import annotations


def audit_all(wb, **kwargs):
    from rlaudit.env.audit import audit_all as _audit_all

    return _audit_all(wb, **kwargs)
