"""The tests of :mod:`rlaudit.env.rollout`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from rlaudit.env import episodes
from rlaudit.env.rollout import (
    EpisodeTracker,
    Policy,
    VecView,
    digest,
    find_key,
    flat_obs,
    reported_episode_stats,
    sample_actions,
    with_value,
)
from support.probing import probe_context

# ---------------------------------------------------------------------------------------------------------
# Rollout helpers
# ---------------------------------------------------------------------------------------------------------


class Countdown(gym.Env):
    """A single env: observation is the steps left; reward 1 per step; terminates after ``length`` steps."""

    def __init__(self, length: int = 3) -> None:
        self.length = length
        self.observation_space = spaces.Box(0, 10, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.left = length

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.left = self.length
        return np.array([self.left], dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.left -= 1
        done = self.left == 0
        info = {"episode": {"r": float(self.length), "l": self.length}} if done else {}
        return np.array([self.left], dtype=np.float32), 1.0, done, False, info


def test_find_key_prefers_earlier_names_and_skips_bools() -> None:
    config = {"env": {"num_envs": True}, "trainer": {"n_envs": 8, "num_envs": 64}}
    assert find_key(config, ("num_envs", "n_envs")) == "trainer.num_envs"
    assert find_key(config, ("missing",)) is None
    changed = with_value(config, "trainer.num_envs", 4)
    assert changed["trainer"]["num_envs"] == 4 and config["trainer"]["num_envs"] == 64


def test_flat_obs_concatenates_dicts_in_key_order() -> None:
    obs = {"b": np.ones((2, 2)), "a": np.zeros((2, 1))}
    out = flat_obs(obs, 2)
    assert out.shape == (2, 3)
    assert out[0].tolist() == [0.0, 1.0, 1.0]


def test_sample_actions_depend_on_the_seed_only() -> None:
    space = spaces.Discrete(5, start=1)
    a = sample_actions(space, 4, np.random.default_rng(3), size=6)
    b = sample_actions(space, 4, np.random.default_rng(3), size=6)
    assert a.shape == (6, 4) and (a == b).all() and a.min() >= 1 and a.max() <= 5
    box = sample_actions(spaces.Box(-2, 2, shape=(3,)), 2, np.random.default_rng(0))
    assert box.shape == (2, 3) and np.abs(box).max() <= 2
    assert digest(a) == digest(b) != digest(a + 1)


def test_wsls_policy_repeats_only_rewarded_actions() -> None:
    pol = Policy("wsls", spaces.Discrete(1000), 2, seed=0)
    first = pol.act(None)
    second = pol.act(np.array([1.0, 0.0]))
    assert second[0] == first[0]  # won: stay
    assert second[1] != first[1]  # lost: shift (a fresh draw out of 1000)


def test_single_env_episodes_are_tracked_and_reported() -> None:
    view = VecView(Countdown(3))
    assert view.num_envs == 1 and view.mode == "single"
    view.reset(seed=0)
    tracker = EpisodeTracker(1)
    for t in range(7):
        tracker.update(t, view.step(np.array([0])))
    cols = tracker.log.columns()
    assert cols["length"].tolist() == [3, 3]
    assert cols["return"].tolist() == [3.0, 3.0]
    assert cols["reported.r"].tolist() == [3.0, 3.0]
    assert cols["first"].tolist() == [True, False]
    assert cols["terminated"].all() and cols["final_obs"].all()


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_vector_autoreset_modes_give_the_same_episodes(mode: str) -> None:
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    am = AutoresetMode.NEXT_STEP if mode == "next_step" else AutoresetMode.SAME_STEP
    env = SyncVectorEnv([lambda: Countdown(2), lambda: Countdown(3)], autoreset_mode=am)
    view = VecView(env)
    assert view.mode == mode
    view.reset(seed=0)
    tracker = EpisodeTracker(2)
    for t in range(12):
        tracker.update(t, view.step(np.zeros(2, dtype=np.int64)))
    cols = tracker.log.columns()
    by_env = {e: cols["length"][cols["env"] == e].tolist() for e in (0, 1)}
    assert set(by_env[0]) == {2} and set(by_env[1]) == {3}
    assert np.all(cols["return"] == cols["length"])  # reward 1 per live step: reset steps are not counted


def test_reported_stats_read_the_masked_vector_layout() -> None:
    info = {
        "episode": {"r": np.array([1.5, 9.0]), "l": np.array([4, 9])},
        "_episode": np.array([True, False]),
    }
    out = reported_episode_stats(info, 2, np.array([True, False]))
    assert out == [{"r": 1.5, "l": 4.0}, {}]


def test_the_rollout_of_a_reward_scaling_wrapper_reads_as_transformed(tmp_path: Any) -> None:
    # The env books its own returns in info["episode"]; a wrapper outside scales what the learner receives.
    from types import SimpleNamespace

    from gymnasium.wrappers import TransformReward

    from rlaudit.engine.io import read_table
    from rlaudit.env import probes

    subject = SimpleNamespace(
        config=lambda: {}, make_env=lambda config, seed: TransformReward(Countdown(3), lambda r: 0.1 * r)
    )
    ctx = probe_context(subject, tmp_path / "scaled", ("config", "make_env"), config={})
    probes.rollout(ctx, seed=0, steps=30, policy="random")
    reading = episodes.stats_reading(read_table(tmp_path / "scaled" / "episodes"))
    assert reading["kind"] == episodes.TRANSFORMED and reading["scale"] == pytest.approx(0.1)
