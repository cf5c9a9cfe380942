"""Loss audit (notebook 09): advantages against a reference GAE, loss terms and gradient flow on a shared
batch, and the five probe environments (:mod:`rlaudit.loss.envs`)."""

from __future__ import annotations


def audit_all(wb):
    from rlaudit.loss.audit import audit_all as _audit_all

    return _audit_all(wb)
