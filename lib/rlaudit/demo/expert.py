"""Reference policies for the arena: uniform random and a scripted path-finding expert, and their evaluation.

Their ``heart.get`` per episode brackets what learning can reach on a task: random is the floor a fresh
policy starts from, the expert a near-ceiling. The expert reads the environment's internal state (the maps
and inventories); it is a yardstick, not something an audit uses to find faults.

The expert's rule: with ``altar_cost`` batteries in hand, go to an altar; otherwise, when the ore in hand
covers the missing batteries (or the ore pouch is full), go to a generator; otherwise go to a mine. "Go to" is
one step along a shortest path (breadth-first distances over empty cells, recomputed only when a map
changes); moving into the target object uses it.
"""

from __future__ import annotations

import dataclasses
import math
import time
import weakref
from typing import Any

import numpy as np

from rlaudit.demo.arena import ALTAR, EMPTY, GENERATOR, MINE, ArenaConfig, ArenaVecEnv
from rlaudit.demo.curriculum import CurriculumConfig, make_curriculum

POLICIES: tuple[str, ...] = ("random", "expert")

_UNREACHABLE = np.iinfo(np.int32).max // 2
# Per environment object: (map ids the distances were computed for, distances (num_envs, 3, G)).
_DISTANCES: weakref.WeakKeyDictionary[ArenaVecEnv, tuple[np.ndarray, np.ndarray]] = (
    weakref.WeakKeyDictionary()
)


def random_actions(env: ArenaVecEnv, rng: np.random.Generator) -> np.ndarray:
    """``(num_envs,)`` actions drawn uniformly from the 5 actions."""
    return rng.integers(0, env.single_action_space.n, size=env.num_envs)


def _distances_to(grids: np.ndarray, width: int) -> np.ndarray:
    """Steps from every cell to *use* an object of each kind (mine, generator, altar).

    Args:
        grids: ``(R, G)`` uint8 cell codes of padded maps (row-major, ``width`` columns, wall border).
        width: Columns of a padded map.

    Returns:
        ``(R, 3, G)`` int32: 0 on the objects themselves, ``1 + min(neighbors)`` on empty cells, and
        ``_UNREACHABLE`` where no path exists (walls, other objects, enclosed cells).
    """
    kinds = np.array([MINE, GENERATOR, ALTAR], dtype=np.uint8)[None, :, None]
    dist = np.where(grids[:, None, :] == kinds, 0, _UNREACHABLE).astype(np.int32)
    passable = np.broadcast_to((grids == EMPTY)[:, None, :], dist.shape)
    for _ in range(grids.shape[1]):
        # Bellman relaxation over the 4-neighborhood; the wall border keeps the flat shifts inside a map.
        best = np.full_like(dist, _UNREACHABLE)
        for shift in (1, width):
            np.minimum(best[..., shift:], dist[..., :-shift], out=best[..., shift:])
            np.minimum(best[..., :-shift], dist[..., shift:], out=best[..., :-shift])
        relaxed = np.where(passable, np.minimum(dist, best + 1), dist)
        if np.array_equal(relaxed, dist):
            break
        dist = relaxed
    return dist


def expert_actions(env: ArenaVecEnv) -> np.ndarray:
    """``(num_envs,)`` actions of the scripted expert for the environments' current states.

    Reads the environment's internals (maps, agent cells, inventories); distances are cached per map.
    """
    n, width, grid_cells = env.num_envs, env._W, env._G
    cached = _DISTANCES.get(env)
    if cached is None or cached[1].shape != (n, 3, grid_cells):
        cached = (np.full(n, -1, dtype=np.int64), np.zeros((n, 3, grid_cells), dtype=np.int32))
    map_ids, dist = cached
    stale = np.flatnonzero(map_ids != env.map_ids)
    if len(stale):
        dist[stale] = _distances_to(env._grid[stale], width)
        map_ids = map_ids.copy()
        map_ids[stale] = env.map_ids[stale]
        _DISTANCES[env] = (map_ids, dist)

    inv = env.inventory()
    ore, battery, cost = inv["ore"], inv["battery"], inv["altar_cost"]
    to_altar = battery >= cost
    to_generator = ~to_altar & ((ore >= cost - battery) | (ore >= env.config.ore_cap))
    goal = np.where(to_altar, 2, np.where(to_generator, 1, 0))

    here = env._row - env._base_g  # (n,) cell in the padded map
    neighbors = here[:, None] + env._dg[None, 1:]  # (n, 4): up, down, left, right
    d = dist[np.arange(n)[:, None], goal[:, None], neighbors]
    best = d.argmin(axis=1)
    reachable = d[np.arange(n), best] < _UNREACHABLE
    return np.where(reachable, best + 1, 0).astype(np.int64)


def evaluate_policy(
    policy_name: str,
    config: ArenaConfig | dict[str, Any],
    num_envs: int,
    steps: int,
    seed: int,
    *,
    curriculum: CurriculumConfig | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run a reference policy and summarize its full-length episodes.

    ``desync_episodes`` is switched off so that every episode runs its full ``max_steps`` (a shortened first
    episode would understate what the policy reaches).

    Args:
        policy_name: ``random`` or ``expert``.
        config: The ``env`` section.
        num_envs: Environments stepped together.
        steps: Environment steps in total (all environments together); rounded up to whole vector steps.
        seed: Seeds the environment, the curriculum and the random policy.
        curriculum: Optional ``curriculum`` section; without it every episode plays ``config``'s map.

    Returns:
        ``policy``, ``episodes``, per-episode means ``heart.get``, ``ore.get``, ``battery.get``, ``return``,
        ``length``, the standard error ``heart.get_sem``, ``env_steps``, ``seconds`` and ``sps``.

    Raises:
        ValueError: An unknown policy, or too few steps to finish one episode per environment.
    """
    if policy_name not in POLICIES:
        raise ValueError(f"unknown policy {policy_name!r}; choose one of {POLICIES}")
    cfg = config if isinstance(config, ArenaConfig) else ArenaConfig.from_dict(dict(config))
    cfg = dataclasses.replace(cfg, desync_episodes=False)
    env_seed, curriculum_seed, policy_seed = np.random.SeedSequence(seed).spawn(3)
    cur = None
    if curriculum is not None:
        cur = make_curriculum(curriculum, seed=np.random.default_rng(curriculum_seed))
    env = ArenaVecEnv(num_envs, cfg, seed=int(env_seed.generate_state(1)[0]), curriculum=cur)
    rng = np.random.default_rng(policy_seed)
    vector_steps = math.ceil(steps / num_envs)
    env.reset()
    start = time.perf_counter()
    for _ in range(vector_steps):
        actions = expert_actions(env) if policy_name == "expert" else random_actions(env, rng)
        env.step(actions)
    seconds = time.perf_counter() - start
    episodes = env.pop_episodes()
    count = len(episodes["r"])
    if count == 0:
        raise ValueError(
            f"no episode finished in {vector_steps} vector steps (max_steps={cfg.max_steps}); "
            f"pass steps >= num_envs * max_steps = {num_envs * cfg.max_steps}"
        )
    hearts = episodes["heart.get"].astype(np.float64)
    return {
        "policy": policy_name,
        "episodes": count,
        "heart.get": float(hearts.mean()),
        "heart.get_sem": float(hearts.std(ddof=1) / math.sqrt(count)) if count > 1 else float("nan"),
        "ore.get": float(episodes["ore.get"].mean()),
        "battery.get": float(episodes["battery.get"].mean()),
        "return": float(episodes["r"].mean()),
        "length": float(episodes["l"].mean()),
        "env_steps": vector_steps * num_envs,
        "seconds": seconds,
        "sps": vector_steps * num_envs / seconds if seconds > 0 else float("nan"),
    }
