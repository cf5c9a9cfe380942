"""The tests of :mod:`rlaudit.rewards.settings`."""

from __future__ import annotations

from rlaudit.rewards import audit


def test_setting_kinds_from_names() -> None:
    assert audit.setting_kind("env.time_penalty") == "time penalty"
    assert audit.setting_kind("trainer.clip_reward") == "clipping"
    assert audit.setting_kind("trainer.normalize_reward") == "normalization"
    assert audit.setting_kind("env.reward_scale") == "scale"
    assert audit.setting_kind("env.rewards.battery") == "component"


def test_reward_settings_flag_a_vanished_component_and_a_rescale() -> None:
    a = {"env": {"rewards": {"ore": 0.1, "battery": 0.8, "heart": 1.0}, "time_penalty": 0.0}, "lr": 3e-4}
    b = {"env": {"rewards": {"ore": 0.2, "heart": 1.0}, "time_penalty": 0.0}, "lr": 3e-4}
    table = audit.reward_settings(a, b, None).set_index("key")
    assert "lr" not in table.index
    assert table.loc["env.rewards.battery", "change"] == "vanished"
    assert (
        table.loc["env.rewards.ore", "change"] == "changed" and table.loc["env.rewards.ore", "ratio"] == 2.0
    )
    assert table.loc["env.rewards.heart", "change"] == "same"
    b["env"]["rewards"]["battery"] = 0.0
    assert (
        audit.reward_settings(a, b, None).set_index("key").loc["env.rewards.battery", "change"] == "vanished"
    )


def test_settings_changes_carry_their_implied_scale() -> None:
    from types import SimpleNamespace

    row = SimpleNamespace(baseline=0.8, candidate=0.0, ratio=0.0)
    assert audit.change_text(row) == "0.8 -> 0 (×0)"
    assert (
        audit.change_text(SimpleNamespace(baseline=0.8, candidate=None, ratio=float("nan")))
        == "0.8 -> absent"
    )
