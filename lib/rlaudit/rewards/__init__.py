"""Rewards audit (notebook 11): reward settings side by side, what each component pays at runtime under fixed
policies, reward range before and after wrappers, and relative magnitudes (shaping vs penalty)."""

from __future__ import annotations


def audit_all(wb, **kwargs):
    from rlaudit.rewards.audit import audit_all as _audit_all

    return _audit_all(wb, **kwargs)
