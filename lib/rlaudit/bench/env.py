"""Benchmarks of the arena and its curriculum: env steps per second, curriculum cost per episode.

``bench_env()`` returns one dict per figure (``rlaudit bench env`` prints them as JSON lines). Every timing
is repeated; ``value`` is the median and ``min``/``max`` give the spread. Timings are wall-clock (``cpu_*``
fields: process CPU time, steadier on a shared machine). numpy runs these operations on one thread; run
with ``OMP_NUM_THREADS=1`` so that nothing else spreads out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rlaudit.demo.arena import ArenaConfig, ArenaImpl, ArenaVecEnv, make_arena
from rlaudit.demo.curriculum import CurriculumConfig, LearningProgressCurriculum
from rlaudit.demo.expert import evaluate_policy

POOL_SIZES: tuple[int, ...] = (16, 64, 256, 1024, 4096)
NUM_ENVS: tuple[int, ...] = (64, 256, 1024)


def _spread(name: str, unit: str, wall: list[float], cpu: list[float], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "value": float(np.median(wall)),
        "unit": unit,
        "min": float(np.min(wall)),
        "max": float(np.max(wall)),
        "cpu_value": float(np.median(cpu)),
        "repeats": len(wall),
        **extra,
    }


def _env_sps(
    name: str, make: Callable[[], ArenaVecEnv], steps: int, repeats: int, seed: int = 0
) -> dict[str, Any]:
    """Random-action steps per second (all environments together) of a fresh environment."""
    env = make()
    n = env.num_envs
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, 5, size=(64, n))  # drawn up front: the policy's cost is not the env's
    env.reset(seed=seed)
    # Warm up past the first (desynchronized) episodes so that resets run at their steady rate.
    for i in range(env.config.max_steps):
        env.step(actions[i % 64])
    env.pop_episodes()
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(steps):
            env.step(actions[i % 64])
        t1, c1 = time.perf_counter(), time.process_time()
        wall.append(steps * n / (t1 - t0))
        cpu.append(steps * n / max(c1 - c0, 1e-9))
        env.pop_episodes()
    return _spread(name, "steps/s", wall, cpu, num_envs=n, steps_per_repeat=steps * n)


def _curriculum_cost(pool: int, impl: ArenaImpl, episodes: int, repeats: int) -> dict[str, Any]:
    """Microseconds per episode (one ``sample`` + one ``update``) with every slot of the pool active."""
    path = "full_scan" if impl.curriculum_full_scan else "reference"
    cur = LearningProgressCurriculum(pool, max_tasks=pool, seed=0, impl=impl)
    rng = np.random.default_rng(1)
    for task in range(pool):  # every task seen twice, with progress, so sampling goes through the tree
        cur.update(task, float(rng.random()))
        cur.update(task, float(rng.random() * 2))
    scores = (rng.random(episodes) * 3).tolist()
    wall, cpu, work = [], [], []
    for _ in range(repeats):
        before = cur.work
        t0, c0 = time.perf_counter(), time.process_time()
        for score in scores:
            cur.update(cur.sample(), score)
        t1, c1 = time.perf_counter(), time.process_time()
        wall.append((t1 - t0) / episodes * 1e6)
        cpu.append((c1 - c0) / episodes * 1e6)
        work.append((cur.work - before) / episodes)
    return _spread(
        f"curriculum.episode_us.{path}.pool{pool}",
        "us/episode",
        wall,
        cpu,
        max_tasks=pool,
        episodes_per_repeat=episodes,
        work_per_episode=float(np.median(work)),
    )


def bench_env(quick: bool = False) -> list[dict[str, Any]]:
    """Measure the arena and its curriculum; returns one dict per figure (prints nothing).

    Figures: ``env.sps.random.n{64,256,1024}`` (default config, no curriculum), variants at 1024 envs (the
    learning-progress curriculum of the default ``curriculum`` section, ``frame_stack=4``, the
    ``rebuild_on_reset`` code path, also at 64 envs), ``curriculum.episode_us.{reference,full_scan}.pool{n}``
    for pools of 16 to 4096 slots with ``curriculum.full_scan_ratio.pool{n}`` beside them, and the reference
    policies' ``heart.get`` per episode on the default task.

    Args:
        quick: Fewer repeats and shorter runs, for a fast look.
    """
    repeats = 3 if quick else 7
    steps = 40 if quick else 200
    figures: list[dict[str, Any]] = []
    default = ArenaConfig()
    for n in NUM_ENVS:
        figures.append(_env_sps(f"env.sps.random.n{n}", lambda n=n: ArenaVecEnv(n, default), steps, repeats))
    lp_config = {"env": default.to_dict(), "curriculum": CurriculumConfig().to_dict()}
    variants: list[tuple[str, Callable[[], ArenaVecEnv]]] = [
        ("env.sps.random.learning_progress.n1024", lambda: make_arena(lp_config, 1024, seed=0)),
        ("env.sps.random.frame_stack4.n1024", lambda: ArenaVecEnv(1024, ArenaConfig(frame_stack=4))),
        (
            "env.sps.random.rebuild_on_reset.n1024",
            lambda: ArenaVecEnv(1024, default, impl=ArenaImpl(rebuild_on_reset=True)),
        ),
        (
            "env.sps.random.rebuild_on_reset.n64",
            lambda: ArenaVecEnv(64, default, impl=ArenaImpl(rebuild_on_reset=True)),
        ),
    ]
    for name, make in variants:
        figures.append(_env_sps(name, make, steps, repeats))

    for pool in POOL_SIZES:
        ref = _curriculum_cost(pool, ArenaImpl(), 500 if quick else 2000, repeats)
        scan_episodes = max(5, min(500, (20_000 if quick else 200_000) // pool))
        scan = _curriculum_cost(pool, ArenaImpl(curriculum_full_scan=True), scan_episodes, repeats)
        figures += [ref, scan]
        figures.append(
            {
                "name": f"curriculum.full_scan_ratio.pool{pool}",
                "value": scan["value"] / ref["value"],
                "unit": "x",
                "reference_us": ref["value"],
                "full_scan_us": scan["value"],
                "reference_work": ref["work_per_episode"],
                "full_scan_work": scan["work_per_episode"],
            }
        )

    episodes = 2 if quick else 8
    for policy in ("random", "expert"):
        result = evaluate_policy(policy, default, 128, 128 * default.max_steps * episodes, seed=0)
        figures.append(
            {
                "name": f"policy.heart_get.{policy}",
                "value": result["heart.get"],
                "unit": "hearts/episode",
                "sem": result["heart.get_sem"],
                "episodes": result["episodes"],
                "return": result["return"],
            }
        )
    return figures
