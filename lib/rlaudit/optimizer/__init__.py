"""Optimizer audit (notebook 07): declared vs effective hyperparameters, coverage, runtime schedules,
gradient clipping and per-layer update ratios."""

from __future__ import annotations


def audit_all(wb):
    from rlaudit.optimizer.audit import audit_all as _audit_all

    return _audit_all(wb)
