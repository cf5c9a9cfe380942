"""rlaudit.gymcompat: Gymnasium 0.29 and 1.x vector layouts read one way.

The 1.x layouts come from real environments of the installed Gymnasium (1.x); the 0.29 layouts are built by
hand exactly as Gymnasium 0.29.1's ``SyncVectorEnv`` and ``RecordEpisodeStatistics`` write them (a real 0.29
environment runs in ``tests/adapters/test_gym029.py``, in a virtual environment pinned to 0.29.1).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rlaudit import gymcompat
from rlaudit.env.rollout import EpisodeTracker, Policy, VecView, autoreset_mode, reported_episode_stats
from rlaudit.loss import envs as probe_envs

pytestmark = pytest.mark.skipif(gymcompat.legacy_vector_api(), reason="these tests build Gymnasium 1.x envs")


def _cartpole(record: bool) -> Any:
    def make() -> gym.Env:
        env = gym.make("CartPole-v1")
        return gym.wrappers.RecordEpisodeStatistics(env) if record else env

    return make


def _sync(mode: str, *, per_env_stats: bool, num_envs: int = 3) -> Any:
    return gym.vector.SyncVectorEnv(
        [_cartpole(per_env_stats) for _ in range(num_envs)], autoreset_mode=gym.vector.AutoresetMode(mode)
    )


def _run_until_an_episode_ends(env: Any, seed: int = 0) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Step with seeded random actions until an episode ends; returns (info, done, summed returns)."""
    num_envs = env.num_envs
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    returns = np.zeros(num_envs)
    for _ in range(500):
        _, reward, term, trunc, info = env.step(rng.integers(0, 2, size=num_envs))
        returns += reward
        done = np.logical_or(term, trunc)
        if done.any():
            return info, done, returns
    raise AssertionError("no CartPole episode ended in 500 random steps")


# -- episode statistics ------------------------------------------------------------------------------------


def test_same_step_sub_env_statistics_arrive_in_final_info() -> None:
    # The layout that was reported as "neither environment reports per-episode statistics".
    env = _sync("SameStep", per_env_stats=True)
    info, done, returns = _run_until_an_episode_ends(env)
    assert "episode" not in info and "episode" in info["final_info"]
    stats = reported_episode_stats(info, env.num_envs, done)
    for i in range(env.num_envs):
        if done[i]:
            assert stats[i]["r"] == pytest.approx(returns[i])
            assert stats[i]["l"] == pytest.approx(returns[i])  # CartPole pays +1 per step
        else:
            assert stats[i] == {}


@pytest.mark.parametrize(
    ("mode", "per_env", "vector"),
    [
        ("NextStep", True, False),
        ("SameStep", False, True),
        ("NextStep", False, True),
        ("SameStep", True, True),
    ],
)
def test_top_level_statistics_in_every_other_real_layout(mode: str, per_env: bool, vector: bool) -> None:
    env = _sync(mode, per_env_stats=per_env)
    if vector:
        env = gym.wrappers.vector.RecordEpisodeStatistics(env)
    info, done, returns = _run_until_an_episode_ends(env)
    stats = reported_episode_stats(info, env.num_envs, done)
    assert [bool(s) for s in stats] == done.tolist()
    for i in np.flatnonzero(done):
        assert stats[i]["r"] == pytest.approx(returns[i])


def test_single_env_scalars_are_read_where_done() -> None:
    env = gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1"))
    env.reset(seed=1)
    total, info, done = 0.0, {}, False
    while not done:
        _, reward, term, trunc, info = env.step(0)
        total += float(reward)
        done = term or trunc
    stats = reported_episode_stats(info, 1, np.array([True]))
    assert stats == [{"r": total, "l": total, "t": pytest.approx(stats[0]["t"])}]


def test_legacy_final_info_object_array() -> None:
    # Gymnasium 0.29.1: a SyncVectorEnv of RecordEpisodeStatistics envs, env 1 of 3 ended after 9 steps.
    final_info = np.array(
        [
            None,
            {
                "episode": {
                    "r": np.array([9.0], np.float32),
                    "l": np.array([9], np.int32),
                    "t": np.array([0.01]),
                }
            },
            None,
        ],
        dtype=object,
    )
    info = {
        "final_observation": np.array([None, np.zeros(4), None], dtype=object),
        "_final_observation": np.array([False, True, False]),
        "final_info": final_info,
        "_final_info": np.array([False, True, False]),
    }
    stats = gymcompat.episode_stats(info, 3, np.array([False, True, False]))
    assert stats == [{}, {"r": 9.0, "l": 9.0, "t": 0.01}, {}]
    mask, final = gymcompat.final_observations(info, 3)
    assert mask.tolist() == [False, True, False] and final[0] is None and final[1].shape == (4,)


def test_legacy_vector_wrapper_layout() -> None:
    # Gymnasium 0.29.1's RecordEpisodeStatistics around a vector env: top level, masked.
    info = {
        "episode": {"r": np.array([0.0, -812.5]), "l": np.array([0, 200]), "t": np.array([0.0, 0.3])},
        "_episode": np.array([False, True]),
        "final_info": np.array([None, {}], dtype=object),
        "_final_info": np.array([False, True]),
    }
    assert gymcompat.episode_stats(info, 2, np.array([False, True])) == [
        {},
        {"r": -812.5, "l": 200.0, "t": 0.3},
    ]


def test_masks_win_over_done_and_top_level_wins_over_final_info() -> None:
    info = {
        "episode": {"r": np.array([1.0, 2.0])},
        "_episode": np.array([True, False]),
        "final_info": {
            "episode": {"r": np.array([5.0, 6.0]), "l": np.array([3, 4])},
            "_episode": np.array([True, True]),
        },
        "_final_info": np.array([True, True]),
    }
    stats = gymcompat.episode_stats(info, 2, np.array([True, True]))
    assert stats == [{"r": 1.0, "l": 3.0}, {"r": 6.0, "l": 4.0}]


def test_final_infos_unbatch_the_1x_dict() -> None:
    env = _sync("SameStep", per_env_stats=True)
    info, done, _ = _run_until_an_episode_ends(env)
    finals = gymcompat.final_infos(info, env.num_envs)
    for i in range(env.num_envs):
        if done[i]:
            assert set(finals[i]) == {"episode"} and set(finals[i]["episode"]) == {"r", "l", "t"}
        else:
            assert finals[i] is None


# -- autoreset modes ---------------------------------------------------------------------------------------


def test_autoreset_mode_defaults_follow_the_installed_version(monkeypatch: pytest.MonkeyPatch) -> None:
    class Bare:
        def __init__(self) -> None:
            self.num_envs = 2
            self.single_action_space = gym.spaces.Discrete(2)
            self.metadata: dict[str, Any] = {}

    assert autoreset_mode(Bare()) == "next_step"
    monkeypatch.setattr(gymcompat, "gymnasium_version", lambda: (0, 29))
    assert autoreset_mode(Bare()) == "same_step"
    assert gymcompat.autoreset_mode_of(_sync("NextStep", per_env_stats=False)) == "next_step"


def test_same_step_sub_env_stats_are_tracked_by_the_rollout_view() -> None:
    view = VecView(_sync("SameStep", per_env_stats=True, num_envs=2))
    tracker = EpisodeTracker(view.num_envs)
    policy = Policy("random", view.single_action_space, view.num_envs, seed=0)
    view.reset(seed=0)
    for t in range(120):
        tracker.update(t, view.step(policy.act(None)))
    cols = tracker.log.columns()
    assert len(cols["return"]) >= 2
    np.testing.assert_allclose(cols["reported.r"], cols["return"])
    assert cols["final_obs"].all()


# -- writing the layouts (probe environments) ----------------------------------------------------------------


def _legacy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gymcompat, "gymnasium_version", lambda: (0, 29))
    monkeypatch.setattr(gymcompat, "same_step_mode", lambda: "SameStep")


def test_same_step_info_round_trips_in_both_layouts(monkeypatch: pytest.MonkeyPatch) -> None:
    obs = np.array([[0.5], [1.0], [2.0]], dtype=np.float32)
    ended = np.array([False, True, True])
    episode = {"r": np.array([0.0, 3.0, 4.0]), "l": np.array([0, 2, 2])}
    for legacy in (False, True):
        if legacy:
            _legacy(monkeypatch)
        info = gymcompat.same_step_info(obs, ended, episode)
        if legacy:
            assert {"final_observation", "final_info"} <= set(info) and "episode" not in info
        stats = gymcompat.episode_stats(info, 3, ended)
        assert stats == [{}, {"r": 3.0, "l": 2.0}, {"r": 4.0, "l": 2.0}]
        mask, final = gymcompat.final_observations(info, 3)
        assert mask.tolist() == ended.tolist()
        assert float(np.asarray(final[2]).reshape(-1)[0]) == 2.0


def test_probe_env_speaks_the_legacy_layout_a_029_trainer_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    _legacy(monkeypatch)
    env = probe_envs.make_probe_env("discount", 2, seed=0)
    assert env.metadata["autoreset_mode"] == "SameStep" and env.is_vector_env
    env.reset(seed=0)
    env.step(np.zeros(2, dtype=np.int64))
    _, _, term, _, info = env.step(np.zeros(2, dtype=np.int64))
    assert term.all()
    # what a CleanRL-style trainer on 0.29 does with it
    returns = [float(item["episode"]["r"][0]) for item in info["final_info"] if item and "episode" in item]
    assert returns == [2.0, 2.0]
    assert [float(o[0]) for o in info["final_observation"]] == [1.0, 1.0]


def test_probe_env_under_1x_declares_the_enum_and_batches_final_info() -> None:
    env = probe_envs.make_probe_env("constant", 2, seed=0)
    # 1.x wrappers (vector.RecordEpisodeStatistics) raise TypeError unless this is the enum
    assert env.metadata["autoreset_mode"] is gym.vector.AutoresetMode.SAME_STEP
    env.reset(seed=0)
    info = env.step(np.zeros(2, dtype=np.int64))[4]
    assert gymcompat.episode_stats(info, 2, np.ones(2, bool)) == [{"r": 1.0, "l": 1.0}] * 2
    assert gymcompat.final_infos(info, 2) == [{"episode": {"r": 1.0, "l": 1}}] * 2
