"""Curriculum probes: drive ``make_curriculum(config)`` with synthetic scores and time its calls.

The scores are a deterministic function of (seed, task, how often the task was played): the same in every
process and for every curriculum, so two curricula that received the same scores can be compared on what
they chose. Timings use this process's CPU clock (other processes on a busy machine do not stretch it).

Runs inside the subject's process; imports only numpy and light rlaudit modules.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np

from rlaudit.env.rollout import Clock, calibration_workload, find_key, stable_unit, with_value
from rlaudit.probe import ProbeContext, probe

POOL_KEYS: tuple[str, ...] = (
    "max_tasks",
    "num_active_tasks",
    "task_pool_size",
    "pool_size",
    "max_num_tasks",
    "num_tasks",
)
"""Config keys (last dotted segment) that size a curriculum's task pool; the first one found is varied."""


def synthetic_score(seed: int, task_key: str, played: int) -> float:
    """A learning curve per task: a logistic rise whose onset depends on the task, plus fixed noise.

    Args:
        seed: Seeds the task difficulties and the noise.
        task_key: ``str(task)``.
        played: How many times the task was played before (0 for its first score).

    Returns:
        A score in [0, 1], the same in every process.
    """
    onset = 40.0 * stable_unit(seed, task_key, "onset")
    rise = 1.0 / (1.0 + math.exp(-(played - onset) / 5.0))
    noise = 0.2 * (stable_unit(seed, task_key, played) - 0.5)
    return min(1.0, max(0.0, rise + noise))


def make_seeded(ctx: ProbeContext, config: dict[str, Any], seed: int) -> tuple[Any, str]:
    """Build the subject's curriculum as reproducibly as its signature allows.

    Returns:
        ``(curriculum, how)``: ``how`` is ``"argument"`` when ``make_curriculum`` takes a ``seed``, else
        ``"global"`` (Python's and NumPy's global generators were seeded first; a curriculum that draws from
        its own unseeded generator stays irreproducible, and the audit says so).
    """
    fn = ctx.subject.make_curriculum
    params = inspect.signature(fn).parameters
    if "seed" in params:
        return fn(config, seed=seed), "argument"
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 - the best a seedless make_curriculum allows
    return fn(config), "global"


class _Driver:
    """Plays episodes on a curriculum: ``sample()`` a task, score it, ``update(task, score)``."""

    def __init__(self, curriculum: Any, seed: int) -> None:
        self.cur = curriculum
        self.seed = seed
        self.played: dict[str, int] = {}

    def episode(self) -> str:
        task = self.cur.sample()
        key = str(task)
        k = self.played.get(key, 0)
        self.cur.update(task, synthetic_score(self.seed, key, k))
        self.played[key] = k + 1
        return key


@probe(requires=("config", "make_curriculum"), version=1)
def sampling(
    ctx: ProbeContext, *, seed: int = 0, phases: int = 5, samples_per_phase: int = 2000, episodes: int = 600
) -> dict:
    """Same scores in, same tasks out? Two drives of the subject's curriculum.

    Open loop (a valid chi-square): the tasks seen in an initial draw are all updated, in a fixed order, with
    the synthetic scores of phase 1, 2, ... ; after each phase ``samples_per_phase`` draws record the
    sampling distribution. The updates do not depend on the draws, so two curricula that map the same scores
    to the same distribution give the same expected counts.

    Closed loop (as in training): ``episodes`` times ``sample()``, score, ``update``; two instances built the
    same way show whether the choices are reproducible at all.

    Writes:
        ``open_loop.json`` (per phase, counts per task key), ``closed_loop.json`` (the first instance's task
        sequence, and where the second instance's sequence first differs).
    """
    cur, how = make_seeded(ctx, ctx.config, seed)
    if cur is None:
        return {"has_curriculum": False, "seeded": how}
    counts: list[dict[str, int]] = []
    known: dict[str, Any] = {}

    def draw() -> dict[str, int]:
        c: dict[str, int] = {}
        for _ in range(samples_per_phase):
            task = cur.sample()
            key = str(task)
            known.setdefault(key, task)
            c[key] = c.get(key, 0) + 1
        return c

    counts.append(draw())
    for phase in range(1, phases + 1):
        for key in sorted(known):
            cur.update(known[key], synthetic_score(seed, key, phase - 1))
        counts.append(draw())
        ctx.progress(phase, phases + 2)
    ctx.write_json("open_loop", {"phases": counts})

    sequences = []
    for _ in range(2):
        inst, _how = make_seeded(ctx, ctx.config, seed)
        driver = _Driver(inst, seed)
        sequences.append([driver.episode() for _ in range(episodes)])
    ctx.progress(phases + 2, phases + 2)
    diverge = next((i for i, (a, b) in enumerate(zip(*sequences, strict=True)) if a != b), None)
    ctx.write_json("closed_loop", {"sequence": sequences[0], "self_divergence": diverge})
    return {
        "has_curriculum": True,
        "seeded": how,
        "type": type(cur).__name__,
        "tasks_seen": len(known),
        "reproducible": diverge is None,
        "self_divergence": diverge,
    }


def _time_calls(cur: Any, driver: _Driver, calls: int, clock: Clock) -> tuple[float, float]:
    """CPU seconds per ``sample()`` and per ``update()`` over a batch of ``calls`` each."""
    start = clock.now()
    tasks = [cur.sample() for _ in range(calls)]
    t_sample = clock.now() - start
    scores = []
    for task in tasks:
        key = str(task)
        k = driver.played.get(key, 0)
        scores.append(synthetic_score(driver.seed, key, k))
        driver.played[key] = k + 1
    update: Callable[[Any, float], None] = cur.update
    start = clock.now()
    for task, score in zip(tasks, scores, strict=True):
        update(task, score)
    t_update = clock.now() - start
    return t_sample / calls, t_update / calls


@probe(requires=("config", "make_curriculum"), version=2)
def scaling(
    ctx: ProbeContext,
    *,
    seed: int = 0,
    sizes: list[int] | None = None,
    repeats: int = 5,
    calls: int = 48,
    batch: str = "",
) -> dict:
    """Cost per ``sample()`` and per ``update()`` over task-pool sizes, interleaved across sizes.

    The pool size is set through the first config key named like :data:`POOL_KEYS` (a copy of the config is
    passed to ``make_curriculum``). Each curriculum first plays ``2 * calls`` warm-up episodes. ``batch`` names
    the pair the timing is for (only part of the cache key: both sides are timed in one batch).

    Writes:
        ``timings`` table: ``size``, ``repeat``, ``sample_seconds``, ``update_seconds`` (CPU seconds per call),
        ``calib_seconds`` (a fixed workload timed right after each block, for ratios between sides);
        ``facts.json``: the key, sizes that could not be built (with the error).
    """
    key = find_key(ctx.config, POOL_KEYS)
    clock = Clock("cpu")
    if key is None:
        return {"pool_key": None, "has_curriculum": True}
    built: dict[int, tuple[Any, _Driver]] = {}
    failed: dict[str, str] = {}
    for size in sizes or []:
        try:
            cur, _ = make_seeded(ctx, with_value(ctx.config, key, int(size)), seed)
        except Exception as exc:  # e.g. a pool smaller than the task family: skip that size, say why
            failed[str(size)] = f"{type(exc).__name__}: {exc}"
            continue
        if cur is None:
            return {"pool_key": key, "has_curriculum": False}
        driver = _Driver(cur, seed)
        for _ in range(2 * calls):
            driver.episode()
        built[int(size)] = (cur, driver)
    rows: dict[str, list[Any]] = {
        "size": [],
        "repeat": [],
        "sample_seconds": [],
        "update_seconds": [],
        "calib_seconds": [],
    }
    total, done = repeats * len(built), 0
    for r in range(repeats):
        for size, (cur, driver) in built.items():
            ts, tu = _time_calls(cur, driver, calls, clock)
            rows["size"].append(size)
            rows["repeat"].append(r)
            rows["sample_seconds"].append(ts)
            rows["update_seconds"].append(tu)
            rows["calib_seconds"].append(float(np.mean([calibration_workload(clock) for _ in range(3)])))
            done += 1
            ctx.progress(done, total)
    ctx.write_table("timings", {k: np.asarray(v) for k, v in rows.items()})
    ctx.write_json("facts", {"pool_key": key, "failed": failed, "clock": clock.kind})
    return {"pool_key": key, "has_curriculum": True, "sizes": sorted(built), "failed": failed}


@probe(requires=("config", "make_curriculum"), version=2)
def trend(ctx: ProbeContext, *, seed: int = 0, blocks: int = 12, calls: int = 48, batch: str = "") -> dict:
    """Cost per call across many episodes at the configured pool size: does it grow as training goes on?

    ``batch`` names the pair the timing is for (only part of the cache key: both sides are timed in one batch).

    Writes:
        ``blocks`` table: ``block``, ``episodes`` (played before the block ends), ``sample_seconds``,
        ``update_seconds`` (CPU seconds per call), ``calib_seconds`` (a fixed workload timed after the block).
    """
    cur, how = make_seeded(ctx, ctx.config, seed)
    if cur is None:
        return {"has_curriculum": False}
    clock = Clock("cpu")
    driver = _Driver(cur, seed)
    rows: dict[str, list[Any]] = {
        "block": [],
        "episodes": [],
        "sample_seconds": [],
        "update_seconds": [],
        "calib_seconds": [],
    }
    for b in range(blocks):
        ts, tu = _time_calls(cur, driver, calls, clock)
        rows["calib_seconds"].append(float(np.mean([calibration_workload(clock) for _ in range(3)])))
        rows["block"].append(b)
        rows["episodes"].append((b + 1) * calls)
        rows["sample_seconds"].append(ts)
        rows["update_seconds"].append(tu)
        ctx.progress(b + 1, blocks)
    ctx.write_table("blocks", {k: np.asarray(v) for k, v in rows.items()})
    return {"has_curriculum": True, "seeded": how, "clock": clock.kind}
