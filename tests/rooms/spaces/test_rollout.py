"""The tests of :mod:`rlaudit.spaces.rollout`."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from rlaudit.spaces.rollout import describe_space, random_actions, random_rollout


def test_describe_space_and_random_actions_are_deterministic() -> None:
    box = spaces.Box(low=np.array([-1.0, 0.0], dtype=np.float32), high=np.array([1.0, 1.0], dtype=np.float32))
    desc = describe_space(box)
    assert desc["class"] == "Box" and desc["shape"] == [2] and desc["dtype"] == "float32"
    assert desc["low"] == {"values": [-1.0, 0.0]} and desc["high"] == 1.0 and desc["size"] == 2
    assert describe_space(spaces.Discrete(5))["n"] == 5
    a = random_actions(spaces.Discrete(5), 8, np.random.default_rng(3))
    b = random_actions(spaces.Discrete(5), 8, np.random.default_rng(3))
    assert a.tolist() == b.tolist() and a.min() >= 0 and a.max() < 5


class Line:
    """A plain (non-vector) env: the rollout resets it at episode ends itself."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(2, self.t / 10, np.float32), 0.0, self.t >= 3, False, {}


def test_random_rollout_of_a_plain_env_resets_at_episode_end() -> None:
    out = random_rollout(Line(), steps=7, seed=0, action_seed=1)
    assert out["num_envs"] == 1 and out["vector_steps"] == 7 and out["episodes"] == 2
    assert out["obs"].shape == (8, 2)
    assert out["obs"][:, 0].tolist() == pytest.approx([0.0, 0.1, 0.2, 0.0, 0.1, 0.2, 0.0, 0.1])


# ---------------------------------------------------------------------------------------------------------------
# A Dict observation space from a plain gymnasium.Env (the shape fixture): observations stay a tree
# ---------------------------------------------------------------------------------------------------------------


def test_a_dict_observation_rollout_keeps_its_keys_and_rows() -> None:
    """Before, ``np.asarray`` of dict observations made an object array, and the fixed batch fed to the
    networks raised ``TypeError: float() argument must be ... not 'dict'`` (checkpointing, agents, init and
    spaces probes all build it)."""
    import dict_obs_subject as subject  # tests/fixtures is on sys.path

    from rlaudit.spaces.rollout import describe_row, flat_rows, obs_rows, policy_batch

    env = subject.make_env(subject.config(), 0)
    rollout = random_rollout(env, steps=40, seed=0, action_seed=1)
    obs = rollout["obs"]
    assert (
        set(obs) == {"position", "goal"} and obs["position"].shape == (41, 1) and obs["goal"].shape == (41,)
    )
    assert obs_rows(obs) == 41 and flat_rows(obs).shape == (41, 2)
    assert set(np.unique(obs["goal"])) <= {0, 1}
    batch = policy_batch(obs, 8)
    assert batch["position"].shape == (8, 1) and batch["goal"].dtype == np.float32
    np.testing.assert_array_equal(batch["position"][[0, -1]], obs["position"][[0, -1]])
    row = describe_row(obs)
    assert row["shape"] == [2] and row["nbytes"] == 4 + 8 and "goal" in row["dtype"]


def test_an_array_observation_rollout_is_unchanged() -> None:
    from rlaudit.spaces.rollout import describe_row, flat_rows, policy_batch

    obs = np.arange(24, dtype=np.uint8).reshape(6, 2, 2)
    assert flat_rows(obs).dtype == np.uint8 and flat_rows(obs).shape == (6, 4)
    np.testing.assert_array_equal(policy_batch(obs, 3), obs[[0, 2, 5]].astype(np.float32))
    assert describe_row(obs) == {"dtype": "uint8", "shape": [2, 2], "nbytes": 4}
