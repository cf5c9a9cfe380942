"""The tests of :mod:`rlaudit.memory.growth`."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium import spaces

from rlaudit.engine.io import read_table
from rlaudit.memory import audit, probes
from support.probing import probe_context


class LeakyEnv(gym.Env):
    """Episodes of 4 steps; with ``leak`` every reset files a string under a new key that is never removed."""

    def __init__(self, leak: bool) -> None:
        self.observation_space = spaces.Box(0, 1, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.leak = leak
        self.history: dict[str, str] = {}
        self.t = 0
        self.resets = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        self.resets += 1
        if self.leak:
            self.history[f"episode-{self.resets}"] = "x" * 200
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.zeros(2, dtype=np.float32), 0.0, False, self.t >= 4, {}


class LeakySubject:
    def __init__(self, leak: bool) -> None:
        self.leak = leak

    def config(self) -> dict:
        return {"trainer": {"num_envs": 1, "num_steps": 16}}

    def make_env(self, config: dict, seed: int) -> LeakyEnv:
        return LeakyEnv(self.leak)


def test_growth_per_episode_is_a_least_squares_slope() -> None:
    points = pd.DataFrame({"snapshot": [0, 1, 2, 3], "episodes": [0, 100, 200, 300]})
    values = pd.DataFrame(
        {
            "snapshot": [0, 1, 2, 3, 0, 1, 2, 3],
            "item": ["a"] * 4 + ["b"] * 4,
            "size": [10, 110, 210, 310, 50, 50, 50, 50],
        }
    )
    g = audit.growth_per_episode(values, points, "item", "size").set_index("item")
    assert g.loc["a", "per_1000_episodes"] == pytest.approx(1000.0)
    assert g.loc["b", "per_1000_episodes"] == pytest.approx(0.0)
    assert bool(g.loc["a", "monotone"])


def test_a_table_filled_once_is_not_growth() -> None:
    # Snapshot 0 is taken right after reset; a table built on the first update then stays the same size.
    points = pd.DataFrame({"snapshot": range(6), "episodes": [0, 50, 100, 150, 200, 250]})
    values = pd.DataFrame({"snapshot": range(6), "item": "tree", "size": [0, 4096, 4096, 4100, 4096, 4104]})
    g = audit.growth_per_episode(values, points, "item", "size").iloc[0]
    assert abs(g["per_1000_episodes"]) < 100  # the fill (4 KiB at the first update) is not a slope
    base = pd.DataFrame(columns=g.index)
    assert audit.compare_growth(base, pd.DataFrame([g]), audit.BYTES_PER_1000_EPISODES).empty


def test_compare_growth_needs_more_than_the_baseline_grows() -> None:
    base = pd.DataFrame(
        {
            "item": ["log", "labels"],
            "first": [0, 16],
            "last": [300, 16],
            "per_1000_episodes": [900.0, 0.0],
            "monotone": [True, True],
            "linear": [True, True],
        }
    )
    cand = pd.DataFrame(
        {
            "item": ["log", "labels"],
            "first": [0, 16],
            "last": [310, 320],
            "per_1000_episodes": [950.0, 1000.0],
            "monotone": [True, True],
            "linear": [True, True],
        }
    )
    out = audit.compare_growth(base, cand, threshold=100.0)
    assert out["item"].tolist() == ["labels"]  # "log" grows as fast in the baseline


def test_growth_sites_probe_finds_a_per_episode_dictionary(tmp_path: Path) -> None:
    tables = {}
    for leak in (False, True):
        subject = LeakySubject(leak)
        out = tmp_path / str(leak)
        ctx = probe_context(subject, out, {"config", "make_env"})
        probes.growth_sites(ctx, seed=0, steps=160, snapshots=3)
        points = read_table(out / "points")
        tables[leak] = audit.growth_per_episode(read_table(out / "containers"), points, "path", "size")
    flagged = audit.compare_growth(tables[False], tables[True], audit.ENTRIES_PER_1000_EPISODES)
    assert "env.history" in flagged["item"].tolist()
    assert audit.compare_growth(tables[False], tables[False], audit.ENTRIES_PER_1000_EPISODES).empty
