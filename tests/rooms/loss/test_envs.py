"""The tests of :mod:`rlaudit.loss.envs`."""

from __future__ import annotations

import numpy as np
import pytest

from rlaudit.loss import envs

# ---------------------------------------------------------------------------------------------------------------
# Probe environments
# ---------------------------------------------------------------------------------------------------------------


def _step(env: envs.ProbeVecEnv, actions: list[int]):
    return env.step(np.array(actions, dtype=np.int64))


def test_constant_probe_pays_one_and_resets_every_step() -> None:
    env = envs.make_probe_env("constant", 3, seed=0)
    obs, _ = env.reset()
    assert obs.shape == (3, 1) and env.single_action_space.n == 1
    obs, r, term, trunc, info = _step(env, [0, 0, 0])
    np.testing.assert_array_equal(r, [1, 1, 1])
    assert term.all() and not trunc.any()
    np.testing.assert_array_equal(info["episode"]["r"], [1, 1, 1])
    assert info["_final_obs"].all() and info["final_obs"].shape == (3, 1)
    assert len(env.pop_episodes()["r"]) == 3


def test_discount_probe_is_two_steps_with_final_obs_one() -> None:
    env = envs.make_probe_env("discount", 2, seed=0)
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[:, 0], [0, 0])
    obs, r, term, _, info = _step(env, [0, 0])
    np.testing.assert_array_equal(obs[:, 0], [1, 1])
    np.testing.assert_array_equal(r, [1, 1])
    assert not term.any() and info == {}
    obs, _r, term, _, info = _step(env, [0, 0])
    assert term.all()
    np.testing.assert_array_equal(info["final_obs"][:, 0], [1, 1])  # the last observation of the episode
    np.testing.assert_array_equal(obs[:, 0], [0, 0])  # SAME_STEP autoreset: already the next episode's first
    np.testing.assert_array_equal(info["episode"]["r"], [2, 2])
    np.testing.assert_array_equal(info["episode"]["l"], [2, 2])


def test_policy_probes_reward_the_right_action() -> None:
    env = envs.make_probe_env("action", 2, seed=0)
    env.reset()
    _, r, *_ = _step(env, [1, 0])
    np.testing.assert_array_equal(r, [1, -1])
    env = envs.make_probe_env("observation_action", 64, seed=1)
    obs, _ = env.reset()
    match = (obs[:, 0] > 0).astype(np.int64)
    _, r, *_ = env.step(match)
    assert (r == 1).all()
    _, r, *_ = env.step(1 - (env._obs > 0).astype(np.int64))
    assert (r == -1).all()
    env = envs.make_probe_env("observation", 64, seed=1)
    obs, _ = env.reset()
    _, r, *_ = env.step(np.zeros(64, dtype=np.int64))
    np.testing.assert_array_equal(r, obs[:, 0])


def test_probe_env_rejects_bad_actions() -> None:
    env = envs.make_probe_env("action", 2, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset()
    with pytest.raises(ValueError, match="in \\[0, 2\\)"):
        env.step(np.array([0, 2]))


def test_judge_passes_learned_values_and_fails_wrong_ones() -> None:
    assert envs.judge("constant", np.array([0.97]), np.ones((1, 1)), 0.99)["passed"]
    assert not envs.judge("constant", np.array([0.7]), np.ones((1, 1)), 0.99)["passed"]
    ok = envs.judge("discount", np.array([1.99, 1.0]), np.ones((2, 1)), 0.99)
    assert ok["passed"]
    blown = envs.judge("discount", np.array([6.0, 1.0]), np.ones((2, 1)), 0.99)
    assert not blown["passed"] and "expected" in blown["reason"]
    probs = np.array([[0.02, 0.98]])
    assert envs.judge("action", np.array([0.9]), probs, 0.99)["passed"]
    assert not envs.judge("action", np.array([0.9]), np.array([[0.5, 0.5]]), 0.99)["passed"]
