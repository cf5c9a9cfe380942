"""Tests for rlaudit.demo.arena: the vector-env contract, reward accounting, desync, faults, policies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from rlaudit.demo.arena import ArenaConfig, ArenaImpl, ArenaVecEnv, make_arena
from rlaudit.demo.curriculum import LearningProgressCurriculum
from rlaudit.demo.expert import evaluate_policy, expert_actions

NOOP, UP, DOWN, LEFT, RIGHT = range(5)
# Offsets into one frame with view_radius=1 and the compass on.
WIN, ORE, BATTERY, COST, HAS_ORE, CAN_HEART, TIME, COMPASS = (
    slice(0, 36),
    36,
    37,
    38,
    39,
    40,
    41,
    slice(42, 48),
)


def tiny(**overrides: Any) -> ArenaConfig:
    """A 3x3 map with one object of each kind, no desync: room for hand-drawn maps."""
    values: dict[str, Any] = dict(
        size=3, mines=1, generators=1, altars=1, walls=0, max_steps=20, desync_episodes=False, view_radius=1
    )
    values.update(overrides)
    return ArenaConfig(**values)


def rollout(env: ArenaVecEnv, steps: int, seed: int) -> list[tuple]:
    """Random actions from a fixed generator; returns every step's (obs, reward, term, trunc, info)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        out.append(env.step(rng.integers(0, 5, env.num_envs)))
    return out


# --- the vector-env contract ------------------------------------------------------------------------------


def test_spaces_dtypes_and_autoreset_mode() -> None:
    env = ArenaVecEnv(6, ArenaConfig(view_radius=1), seed=0)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert env.single_observation_space.shape == (48,) and env.obs_dim == 48
    assert env.single_observation_space.dtype == np.float32
    assert env.single_action_space == spaces.Discrete(5)
    assert env.observation_space.shape == (6, 48)
    assert env.action_space.shape == (6,)
    obs, info = env.reset()
    assert obs.dtype == np.float32 and obs.shape == (6, 48) and obs.flags.c_contiguous and info == {}
    for obs, reward, term, trunc, _ in rollout(env, 150, seed=1):
        assert obs.dtype == np.float32 and reward.dtype == np.float32
        assert term.dtype == bool and trunc.dtype == bool and reward.shape == term.shape == (6,)
        assert env.observation_space.contains(obs)


def test_observation_size_follows_view_radius_compass_and_frame_stack() -> None:
    assert ArenaVecEnv(1, ArenaConfig(view_radius=2)).obs_dim == 100 + 12
    assert ArenaVecEnv(1, ArenaConfig(view_radius=0, compass=False)).obs_dim == 4 + 6
    assert ArenaVecEnv(1, ArenaConfig(view_radius=1, frame_stack=4)).obs_dim == 4 * 48


def test_same_seed_same_actions_give_identical_runs() -> None:
    config = {"env": {"view_radius": 1, "max_steps": 24}, "curriculum": {"max_tasks": 32}}
    runs = []
    for _ in range(2):
        env = make_arena(config, 16, seed=3)
        obs, _ = env.reset()
        runs.append((obs, rollout(env, 120, seed=4), env.pop_episodes()))
    (obs_a, steps_a, eps_a), (obs_b, steps_b, eps_b) = runs
    np.testing.assert_array_equal(obs_a, obs_b)
    for a, b in zip(steps_a, steps_b, strict=True):
        for x, y in zip(a[:4], b[:4], strict=True):
            np.testing.assert_array_equal(x, y)
        assert a[4].keys() == b[4].keys()
    for key in eps_a:
        np.testing.assert_array_equal(eps_a[key], eps_b[key])
    assert len(eps_a["r"]) > 16


def test_different_seeds_differ_and_reset_seed_restarts_the_stream() -> None:
    env = ArenaVecEnv(8, ArenaConfig(), seed=0)
    first, _ = env.reset()
    other, _ = ArenaVecEnv(8, ArenaConfig(), seed=1).reset()
    assert not np.array_equal(first, other)
    rollout(env, 30, seed=0)
    again, _ = env.reset(seed=0)
    np.testing.assert_array_equal(first, again)


def test_episode_stats_equal_the_rewards_returned_and_the_log_loses_nothing() -> None:
    env = ArenaVecEnv(8, ArenaConfig(max_steps=40), seed=5)
    env.reset()
    running = np.zeros(8)
    length = np.zeros(8, dtype=int)
    reported: list[tuple[int, float, int, int]] = []
    rng = np.random.default_rng(6)
    for _ in range(400):
        # a policy that mostly heads right and down collects more than a random one
        actions = np.where(rng.random(8) < 0.5, rng.integers(0, 5, 8), rng.choice([DOWN, RIGHT], 8))
        _, reward, term, trunc, info = env.step(actions)
        running += reward
        length += 1
        done = term | trunc
        if not done.any():
            assert info == {}
            continue
        np.testing.assert_array_equal(info["_episode"], done)
        np.testing.assert_array_equal(info["_final_obs"], done)
        ep = info["episode"]
        for i in np.flatnonzero(done):
            assert ep["r"][i] == pytest.approx(running[i], abs=1e-5)
            assert ep["l"][i] == length[i]
            reported.append((i, ep["r"][i], ep["l"][i], ep["heart.get"][i]))
        assert np.all(ep["r"][~done] == 0) and np.all(ep["l"][~done] == 0)
        running[done] = 0.0
        length[done] = 0
    log = env.pop_episodes()
    assert len(reported) == len(log["r"]) > 60
    np.testing.assert_array_equal(log["env"], [r[0] for r in reported])
    np.testing.assert_allclose(log["r"], [r[1] for r in reported])
    np.testing.assert_array_equal(log["l"], [r[2] for r in reported])
    np.testing.assert_array_equal(log["heart.get"], [r[3] for r in reported])
    assert log["r"].max() > 0
    assert len(env.pop_episodes()["r"]) == 0  # drained


def test_an_undrained_log_is_bounded_and_counts_what_it_dropped() -> None:
    env = ArenaVecEnv(4, ArenaConfig(max_steps=5, desync_episodes=False), seed=0, max_logged_episodes=10)
    env.reset()
    rollout(env, 50, seed=0)  # 40 episodes, 4 per finishing step
    log = env.pop_episodes()
    assert len(log["r"]) + env.episodes_dropped == 40
    assert 10 - 4 < len(log["r"]) <= 10 and env.episodes_dropped > 0  # whole steps of 4 are dropped


def test_same_step_autoreset_returns_the_new_first_obs_and_the_final_obs_in_info() -> None:
    env = ArenaVecEnv(2, tiny(max_steps=3), seed=0)
    env.reset()
    env.set_map(0, ["m@g", "...", ".a."])
    for _ in range(3):
        obs, reward, _, trunc, info = env.step(np.array([LEFT, NOOP]))
        assert reward[0] == pytest.approx(0.1)
    assert trunc.all()
    final = info["final_obs"][0]
    assert final[ORE] == 1.0 and final[HAS_ORE] == 1.0 and final[TIME] == 0.0  # 3 ore: a full pouch
    assert obs[0][ORE] == 0.0 and obs[0][TIME] == 1.0  # the next episode's first observation
    assert info["episode"]["ore.get"][0] == 3 and info["episode"]["l"][0] == 3


# --- reward accounting on hand-drawn maps -----------------------------------------------------------------


def test_resource_chain_rewards_and_counts_step_by_step() -> None:
    env = ArenaVecEnv(1, tiny(max_steps=6), seed=0)
    env.reset()
    obs = env.set_map(0, ["m@g", "...", ".a."])
    window = obs[WIN].reshape(3, 3, 4)  # rows of the 3x3 window, 4 channels: wall, mine, generator, altar
    np.testing.assert_array_equal(window[0], [[1, 0, 0, 0]] * 3)  # the border wall above
    np.testing.assert_array_equal(window[1, 0], [0, 1, 0, 0])  # mine to the left
    np.testing.assert_array_equal(window[1, 2], [0, 0, 1, 0])  # generator to the right
    np.testing.assert_array_equal(window[2, 1], [0, 0, 0, 0])  # empty below
    expected = [
        (LEFT, 0.1, (1, 0)),  # mine: +1 ore
        (RIGHT, 0.8, (0, 1)),  # generator: ore -> battery
        (RIGHT, 0.0, (0, 1)),  # generator without ore: nothing
        (DOWN, 0.0, (0, 1)),  # a move
        (DOWN, 1.0, (0, 0)),  # altar: 1 battery -> 1 heart
        (DOWN, 0.0, (0, 0)),  # altar without batteries: nothing
    ]
    total = 0.0
    for action, reward, (ore, battery) in expected:
        obs, r, _, trunc, info = env.step(np.array([action]))
        total += reward
        assert r[0] == pytest.approx(reward)
        if not trunc[0]:
            assert env.inventory()["ore"][0] == ore and env.inventory()["battery"][0] == battery
            assert obs[0][ORE] == pytest.approx(ore / 3) and obs[0][BATTERY] == pytest.approx(battery / 3)
    ep = info["episode"]
    assert ep["r"][0] == pytest.approx(total) == pytest.approx(1.9)
    assert (ep["ore.get"][0], ep["battery.get"][0], ep["heart.get"][0], ep["l"][0]) == (1, 1, 1, 6)


def test_compass_and_window_on_a_hand_drawn_map() -> None:
    env = ArenaVecEnv(1, tiny(), seed=0)
    env.reset()
    obs = env.set_map(0, ["m.g", ".@.", "a.."])
    # object minus agent, divided by S - 1 = 2: mine (-1, -1), generator (-1, +1), altar (+1, -1)
    np.testing.assert_allclose(obs[COMPASS], [-0.5, -0.5, 0.5, -0.5, 0.5, -0.5])
    assert obs[COST] == pytest.approx(1 / 3) and obs[TIME] == 1.0 and obs[CAN_HEART] == 0.0
    obs, *_ = env.step(np.array([UP]))
    np.testing.assert_allclose(obs[0][COMPASS], [0.0, 0.0, 1.0, -0.5, 0.5, -0.5])
    np.testing.assert_array_equal(obs[0][WIN].reshape(3, 3, 4)[0], [[1, 0, 0, 0]] * 3)  # the border wall


def test_ore_cap_altar_cost_time_penalty_and_missing_reward_key() -> None:
    env = ArenaVecEnv(1, tiny(ore_cap=2, altar_cost=2, time_penalty=0.01, rewards={"ore": 0.5}), seed=0)
    env.reset()
    env.set_map(0, ["m@g", "...", ".a."])
    rewards = [env.step(np.array([LEFT]))[1][0] for _ in range(3)]
    np.testing.assert_allclose(rewards, [0.49, 0.49, -0.01])  # the third ore does not fit in the pouch
    assert env.step(np.array([RIGHT]))[1][0] == pytest.approx(-0.01)  # battery reward missing: 0
    env.set_map(0, ["m.g", "...", "@a."], battery=1)
    assert env.step(np.array([RIGHT]))[1][0] == pytest.approx(-0.01)  # 1 battery < altar cost 2
    env.set_map(0, ["m.g", "...", "@a."], battery=2)
    assert env.step(np.array([RIGHT]))[1][0] == pytest.approx(-0.01)  # heart reward missing too
    assert env.inventory()["battery"][0] == 0 and env._ep_counts[0] >> 40 == 1


def test_mine_cooldown_and_heart_cap() -> None:
    env = ArenaVecEnv(1, tiny(mine_cooldown=2, heart_cap=1), seed=0)
    env.reset()
    env.set_map(0, ["m@g", "...", ".a."])
    rewards = [env.step(np.array([LEFT]))[1][0] for _ in range(5)]
    np.testing.assert_allclose(rewards, [0.1, 0.0, 0.0, 0.1, 0.0])  # rests for 2 steps after each use
    env.set_map(0, ["m.g", "...", "@a."], battery=3)
    rewards = [env.step(np.array([RIGHT]))[1][0] for _ in range(2)]
    np.testing.assert_allclose(rewards, [1.0, 0.0])  # one heart per episode at heart_cap=1


def test_actions_are_validated() -> None:
    env = ArenaVecEnv(3, ArenaConfig(), seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(3, dtype=int))
    env.reset()
    with pytest.raises(ValueError, match=r"in \[0, 5\)"):
        env.step(np.array([0, 5, 1]))
    with pytest.raises(ValueError, match=r"in \[0, 5\)"):
        env.step(np.array([0, -1, 1]))
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="integer"):
        env.step(np.zeros(3))


# --- desync -----------------------------------------------------------------------------------------------


def first_and_later_lengths(env: ArenaVecEnv, steps: int) -> tuple[np.ndarray, np.ndarray]:
    env.reset()
    rollout(env, steps, seed=0)
    log = env.pop_episodes()
    order = np.argsort(log["vector_step"], kind="stable")
    env_ids, lengths = log["env"][order], log["l"][order]
    is_first = np.zeros(len(env_ids), dtype=bool)
    is_first[np.unique(env_ids, return_index=True)[1]] = True
    return lengths[is_first], lengths[~is_first]


def test_desync_spreads_first_episodes_and_keeps_later_ones_full() -> None:
    first, later = first_and_later_lengths(ArenaVecEnv(256, ArenaConfig(max_steps=32), seed=0), 100)
    assert len(first) == 256 and len(np.unique(first)) >= 25 and first.min() <= 3
    assert len(later) > 256 and np.all(later == 32)
    first, later = first_and_later_lengths(
        ArenaVecEnv(256, ArenaConfig(max_steps=32, desync_episodes=False), seed=0), 100
    )
    assert np.all(first == 32) and np.all(later == 32)


def test_desync_truncates_shortens_every_episode() -> None:
    impl = ArenaImpl(desync_truncates=True)
    _, later = first_and_later_lengths(ArenaVecEnv(256, ArenaConfig(max_steps=32), seed=0, impl=impl), 100)
    assert np.mean(later) < 20 and np.mean(later == 32) < 0.1


# --- the other code paths ---------------------------------------------------------------------------------


def test_rebuild_on_reset_rebuilds_everything_at_every_reset_and_changes_nothing_else() -> None:
    reported, returned, builds, reset_steps = {}, {}, {}, {}
    for name, impl in (("ref", ArenaImpl()), ("rebuild", ArenaImpl(rebuild_on_reset=True))):
        env = ArenaVecEnv(16, ArenaConfig(max_steps=30), seed=2, impl=impl)
        env.reset()
        running, sums = np.zeros(16), []
        reset_steps[name] = 0
        for _, reward, _, trunc, _ in rollout(env, 90, seed=3):
            running += reward
            if trunc.any():
                reset_steps[name] += 1
                sums += running[trunc].tolist()
                running[trunc] = 0.0
        reported[name], returned[name], builds[name] = env.pop_episodes(), np.array(sums), env.static_builds
    ref, bad = reported["ref"], reported["rebuild"]
    np.testing.assert_array_equal(ref["l"], bad["l"])  # the same episodes end at the same steps
    np.testing.assert_allclose(ref["r"], returned["ref"], atol=1e-5)
    # wasted work only: the statistics stay correct (the rebuild discards the maps drawn ahead, so later maps
    # come from a different part of the random stream)
    np.testing.assert_allclose(bad["r"], returned["rebuild"], atol=1e-5)
    assert bad["r"].sum() > 1.0
    assert (
        builds["ref"] == 1 and builds["rebuild"] == 1 + reset_steps["rebuild"]
    )  # rebuilt at every reset step


def test_frame_stack_keeps_the_last_frames_oldest_first() -> None:
    single = ArenaVecEnv(8, ArenaConfig(max_steps=10), seed=7)
    stacked = ArenaVecEnv(8, ArenaConfig(max_steps=10, frame_stack=3), seed=7)
    d = single.obs_dim
    a, _ = single.reset()
    b, _ = stacked.reset()
    np.testing.assert_array_equal(b, np.tile(a, (1, 3)))  # a reset fills every slot with the first frame
    rng = np.random.default_rng(0)
    previous = a
    for _ in range(40):
        actions = rng.integers(0, 5, 8)
        a, _, _, trunc, _ = single.step(actions)
        b, *_ = stacked.step(actions)
        np.testing.assert_array_equal(b[:, 2 * d :], a)
        kept = ~trunc
        np.testing.assert_array_equal(b[kept, d : 2 * d], previous[kept])
        np.testing.assert_array_equal(b[trunc], np.tile(a[trunc], (1, 3)))
        previous = a


def test_curriculum_chooses_the_maps_and_hears_every_episode() -> None:
    env = make_arena({"env": {"max_steps": 16}, "curriculum": {"max_tasks": 64, "sizes": [5, 7]}}, 32, seed=1)
    assert isinstance(env.curriculum, LearningProgressCurriculum)
    env.reset()
    rollout(env, 60, seed=1)
    log = env.pop_episodes()
    assert env.curriculum.episodes == len(log["r"]) > 60
    assert set(np.unique(log["task"])) <= set(range(16)) and len(np.unique(log["task"])) > 8
    sizes = env.tasks.params[env.task_of_env(), 0]
    grids = env.grids()
    for i in np.flatnonzero(sizes == 5):  # a 5x5 map sits centered in the 7x7 frame, walled around
        assert np.all(grids[i, 0] == 1) and np.all(grids[i, :, 6] == 1) and np.any(grids[i, 1:6, 1:6] != 1)


def test_make_arena_sections() -> None:
    assert make_arena({"env": {"size": 6}}, 2, seed=0).curriculum is None
    assert make_arena({"env": {}, "curriculum": {"kind": "none"}}, 2, seed=0).curriculum is None
    with pytest.raises(ValueError, match="bare env section"):
        make_arena({"size": 6}, 2, seed=0)


def test_arena_config_round_trip_and_unknown_keys() -> None:
    cfg = ArenaConfig(size=6, rewards={"ore": 0.2, "heart": 2.0}, frame_stack=2)
    assert ArenaConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['max_step'\].*known keys: \[.*'max_steps'"):
        ArenaConfig.from_dict({"max_step": 8})
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['batery'\] in env.rewards"):
        ArenaConfig(rewards={"batery": 0.8})
    with pytest.raises(ValueError, match=r"env\.size must be an integer"):
        ArenaConfig(size=True)
    with pytest.raises(ValueError, match="battery_cap=1"):
        ArenaVecEnv(1, ArenaConfig(altar_cost=2, battery_cap=1))


# --- reference policies -----------------------------------------------------------------------------------


def test_expert_beats_random_by_a_wide_margin_on_the_default_task() -> None:
    config = ArenaConfig()
    random = evaluate_policy("random", config, num_envs=64, steps=64 * config.max_steps * 2, seed=0)
    expert = evaluate_policy("expert", config, num_envs=64, steps=64 * config.max_steps * 2, seed=0)
    assert random["episodes"] == expert["episodes"] == 128
    assert 0.0 < random["heart.get"] < 0.5
    assert expert["heart.get"] > 5.0 and expert["heart.get"] > 20 * random["heart.get"]


def test_expert_walks_the_chain_on_a_hand_drawn_map() -> None:
    env = ArenaVecEnv(1, tiny(size=4, max_steps=30), seed=0)
    env.reset()
    env.set_map(0, ["m...", "....", "..@.", "g..a"])
    hearts = 0
    for _ in range(29):
        _, reward, *_ = env.step(expert_actions(env))
        hearts += int(reward[0] == pytest.approx(1.0))
    assert hearts >= 2


@pytest.mark.parametrize("radius", [0, 1, 2, 3])
def test_window_matches_a_brute_force_read_of_the_map(radius: int) -> None:
    env = ArenaVecEnv(16, ArenaConfig(view_radius=radius, walls=3, max_steps=12), seed=radius)
    obs, _ = env.reset()
    rng = np.random.default_rng(radius)
    span = 2 * radius + 1
    for _ in range(30):
        grids, cells = env.grids(), env.agent_cells()  # (16, 7, 7) interiors, (16, 2) agent (row, col)
        padded = np.pad(grids, ((0, 0), (radius, radius), (radius, radius)), constant_values=1)  # walls
        for i in range(16):
            y, x = cells[i]
            window = padded[i, y : y + span, x : x + span]
            expected = (window[..., None] == np.arange(1, 5)).astype(np.float32).reshape(-1)
            np.testing.assert_array_equal(obs[i, : 4 * span * span], expected)
        obs, *_ = env.step(rng.integers(0, 5, 16))


def test_prepared_maps_hold_each_tasks_objects() -> None:
    # Autoresets take maps prepared in batches per task: every map must still match its episode's task.
    env = make_arena({"env": {"max_steps": 6}, "curriculum": {"kind": "random", "walls": [0, 3]}}, 24, seed=4)
    env.reset()
    for _ in range(40):
        env.step(np.zeros(24, dtype=np.int64))
        params = env.tasks.params[env.task_of_env()]  # size, mines, generators, altars, walls, altar_cost
        grids = env.grids()
        for kind, column in ((2, 1), (3, 2), (4, 3)):
            np.testing.assert_array_equal((grids == kind).sum(axis=(1, 2)), params[:, column])
        inside_walls = [
            (g[(7 - s) // 2 : (7 + s) // 2, (7 - s) // 2 : (7 + s) // 2] == 1).sum()
            for g, s in zip(grids, params[:, 0], strict=True)
        ]
        np.testing.assert_array_equal(inside_walls, params[:, 4])
        np.testing.assert_array_equal(env.inventory()["altar_cost"], params[:, 5])
    assert env.map_ids.max() >= 24 * 6  # several generations of maps went through
