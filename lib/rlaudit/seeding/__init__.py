"""Seeding audit (notebook 13): same seed in fresh processes gives the same run, different seeds differ, no
hidden dependence on global generators, and the run-to-run variance with a power table."""

from __future__ import annotations


def audit_all(wb, **kwargs):
    from rlaudit.seeding.audit import audit_all as _audit_all

    return _audit_all(wb, **kwargs)
