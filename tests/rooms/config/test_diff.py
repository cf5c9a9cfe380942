"""The tests of :mod:`rlaudit.config.diff`."""

from __future__ import annotations

import pytest

from rlaudit.config import audit as config_audit


def test_diff_classifies_changes_and_implicit_defaults():
    a = {"optimizer": {"lr": 1e-3, "eps": 1e-5}, "env": {"rewards": {"battery": 0.8}}, "old": 1}
    b = {"optimizer": {"lr": 2e-3, "eps": None}, "env": {"rewards": {"battery": 0.8}}, "new": 2}
    diff = config_audit.diff_configs(a, b, rules={"rewards": ["env.rewards.*"], "optimizer": ["optimizer.*"]})
    change = dict(zip(diff.table["key"], diff.table["change"], strict=True))
    assert change == {
        "optimizer.lr": "changed",
        "optimizer.eps": "implicit",
        "env.rewards.battery": "same",
        "old": "removed",
        "new": "added",
    }
    rel = diff.table.set_index("key").loc["optimizer.lr", "relative"]
    assert rel == pytest.approx(1.0)
    assert diff.keys_by_subsystem()["optimizer"] == ["optimizer.eps", "optimizer.lr"]
    assert diff.keys_by_subsystem()["config"] == ["new", "old"]


def test_diff_keeps_values_as_the_config_has_them():
    diff = config_audit.diff_configs({"a": 64, "b": 1.5}, {"a": 128, "b": None}, rules=None)
    rows = diff.table.set_index("key")
    assert rows.loc["a", "baseline"] == 64 and isinstance(rows.loc["a", "baseline"], int)
    assert rows.loc["b", "candidate"] is None and rows.loc["b", "change"] == "implicit"
