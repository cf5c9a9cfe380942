"""The tests of :mod:`rlaudit.config.defaults`."""

from __future__ import annotations

from rlaudit.config import audit as config_audit


def test_library_default_names_the_fallback():
    assert "1e-08" in config_audit.library_default("optimizer.eps")
    assert "constant" in config_audit.library_default("trainer.lr_schedule")
