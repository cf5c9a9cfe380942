"""The rewards room: settings diff, component regression, values paid, magnitudes, detection matrix."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from rlaudit.demo.faults import CATALOG
from rlaudit.rewards import audit, components
from support.invariants import SUBJECTS_WITHOUT_AN_ENVIRONMENT, audited_without_an_environment
from support.load import aa_spec

REWARD_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "rewards")


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


def _episodes(weights: dict[str, float], penalty: float, n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    counts = {k: rng.integers(0, 5, n) for k in weights}
    length = rng.integers(20, 100, n)
    ret = sum(weights[k] * counts[k] for k in weights) + penalty * length
    frame = pd.DataFrame({"return": ret, "length": length, "terminated": False})
    for k, v in counts.items():
        frame[f"reported.{k}"] = v.astype(float)
    frame["reported.r"] = ret
    frame["reported.task"] = rng.integers(0, 16, n).astype(float)  # an identifier, not an event count
    return frame


def test_component_weights_recover_rewards_per_event_and_the_time_penalty() -> None:
    eps = _episodes({"ore.get": 0.1, "battery.get": 0.8, "heart.get": 1.0}, penalty=-0.01)
    assert components.count_columns(eps) == ["reported.ore.get", "reported.battery.get", "reported.heart.get"]
    w = components.component_weights(eps, seed=0).set_index("component")
    assert w.loc["battery.get", "weight"] == pytest.approx(0.8)
    assert w.loc[components.PER_STEP, "weight"] == pytest.approx(-0.01)
    assert w.loc["ore.get", "per_episode"] == pytest.approx(0.1 * eps["reported.ore.get"].mean())


def test_compare_components_vanished_rescaled_unmeasurable() -> None:
    base = components.component_weights(_episodes({"ore.get": 0.1, "battery.get": 0.8}, 0.0), seed=0)
    gone = components.component_weights(_episodes({"ore.get": 0.1, "battery.get": 0.0}, 0.0, seed=1), seed=0)
    verdict = components.compare_components(base, gone).set_index("component")["verdict"]
    assert verdict["battery.get"] == "vanished" and verdict["ore.get"] == "same"
    scaled = components.component_weights(
        _episodes({"ore.get": 0.3, "battery.get": 0.8}, 0.0, seed=2), seed=0
    )
    assert (
        components.compare_components(base, scaled).set_index("component")["verdict"]["ore.get"] == "rescaled"
    )
    silent = _episodes({"ore.get": 0.1, "battery.get": 0.8}, 0.0, seed=3)
    silent[["reported.ore.get", "reported.battery.get"]] = 0.0  # counts lost, rewards still paid
    lost = components.compare_components(base, components.component_weights(silent, seed=0)).set_index(
        "component"
    )
    assert lost.loc["battery.get", "verdict"] == "unmeasurable"


def test_lost_values_need_a_frequent_baseline_value() -> None:
    values = pd.DataFrame(
        [
            {"side": "baseline", "value": 0.8, "count": 50, "frequency": 0.05},
            {"side": "baseline", "value": 0.1, "count": 100, "frequency": 0.1},
            {"side": "baseline", "value": 5.0, "count": 3, "frequency": 0.003},
            {"side": "candidate", "value": 0.1, "count": 100, "frequency": 0.1},
        ]
    )
    assert [x["value"] for x in audit.lost_values(values)] == [0.8]


def test_magnitudes_flag_case_002_shaping_drowned_by_the_time_penalty() -> None:
    # Navigation shaping of 0.0001 per pixel, ~5 pixels a step, against a 0.01 time penalty (case 002).
    rng = np.random.default_rng(0)
    n = 200
    length = rng.integers(50, 200, n)
    pixels = (length * rng.uniform(4, 6, n)).round()
    wins = rng.integers(0, 2, n)
    eps = pd.DataFrame(
        {
            "return": 0.0001 * pixels + 1.0 * wins - 0.01 * length,
            "length": length,
            "terminated": wins.astype(bool),
            "last_reward": np.where(wins, 0.99, -0.01),
            "reported.pixels": pixels,
            "reported.wins": wins.astype(float),
        }
    )
    mags = components.magnitudes(components.component_weights(eps, seed=0), eps).set_index("term")
    assert bool(mags.loc["pixels", "drowned"]) and not bool(mags.loc["wins", "drowned"])
    assert mags.loc["per-step term (time penalty)", "per step"] == pytest.approx(-0.01)


@pytest.mark.parametrize("fault", REWARD_FAULTS)
def test_reward_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "rewards")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)
    assert any(f.status.value == "CONFIRMED" for f in found), "the runtime measurement should confirm it"


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    wb = bench(aa_spec())
    for seed in (0, 1):
        sections = audit.audit_all(wb, seed=seed)
        assert not flagged(sections), f"seed {seed}: " + describe(flagged(sections))


def test_compare_components_states_each_components_scale() -> None:
    base = components.component_weights(_episodes({"ore.get": 0.1, "battery.get": 0.8}, 0.0), seed=0)
    gone = components.component_weights(_episodes({"ore.get": 0.1, "battery.get": 0.0}, 0.0, seed=1), seed=0)
    table = components.compare_components(base, gone).set_index("component")
    assert components.scale_text(table.loc["battery.get"]) == "×0"
    assert components.scale_text(table.loc["ore.get"]) == "×1" and table.loc["ore.get", "equivalent"]
    assert not table.loc["battery.get", "equivalent"]
    halved = components.component_weights(
        _episodes({"ore.get": 0.05, "battery.get": 0.4}, 0.0, seed=2), seed=0
    )
    both = components.compare_components(base, halved).set_index("component")
    assert components.uniform_scale(both.reset_index()) == pytest.approx(0.5)
    assert components.uniform_scale(table.reset_index()) is None


def test_settings_changes_carry_their_implied_scale() -> None:
    from types import SimpleNamespace

    row = SimpleNamespace(baseline=0.8, candidate=0.0, ratio=0.0)
    assert audit.change_text(row) == "0.8 -> 0 (×0)"
    assert (
        audit.change_text(SimpleNamespace(baseline=0.8, candidate=None, ratio=float("nan")))
        == "0.8 -> absent"
    )


@pytest.mark.parametrize("subject", SUBJECTS_WITHOUT_AN_ENVIRONMENT)
def test_a_subject_without_an_environment_gets_a_finding_per_check_naming_what_is_missing(
    make_wb: Any, subject: str
) -> None:
    audited_without_an_environment(audit.audit_all, make_wb, subject)
