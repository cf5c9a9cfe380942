"""The tests of :mod:`rlaudit.rewards.components`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rlaudit.rewards import components


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
