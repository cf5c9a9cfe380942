"""Probe-side: describe a subject's spaces and collect observations from a seeded random-policy rollout.

Runs inside the subject's process; imports numpy (and gymnasium's spaces through the subject's env) only.

Random actions come from ``np.random.default_rng(action_seed)`` drawn in a fixed way per space type, so two
subjects with equal action spaces play the *same* action sequence: with equal environments their
observations are then identical, and any difference in the statistics is a difference in the environment
or its preprocessing, not sampling noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


def _bounds_summary(values: Any) -> Any:
    """A bounds array as something short: the scalar when all entries are equal, else min/max/unique."""
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size == 0:
        return None
    finite = arr[np.isfinite(arr)]
    if np.all(arr == arr[0]):
        return float(arr[0]) if math.isfinite(arr[0]) else str(arr[0])
    uniq = np.unique(arr)
    if len(uniq) <= 4:
        return {"values": [float(u) if math.isfinite(u) else str(u) for u in uniq]}
    return {
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
    }


def describe_space(space: Any) -> dict[str, Any]:
    """A JSON description of a Gymnasium space: class, shape, dtype, bounds, n (recursively for Dict/Tuple)."""
    cls = type(space).__name__
    out: dict[str, Any] = {"class": cls}
    shape = getattr(space, "shape", None)
    out["shape"] = list(shape) if shape is not None else None
    dtype = getattr(space, "dtype", None)
    out["dtype"] = str(np.dtype(dtype)) if dtype is not None else None
    if hasattr(space, "low") and hasattr(space, "high"):
        out["low"] = _bounds_summary(space.low)
        out["high"] = _bounds_summary(space.high)
    if hasattr(space, "n") and not hasattr(space, "nvec"):
        out["n"] = int(space.n)
        start = getattr(space, "start", 0)
        out["start"] = int(start)
    if hasattr(space, "nvec"):
        out["nvec"] = np.asarray(space.nvec).astype(int).tolist()
    sub = getattr(space, "spaces", None)
    if isinstance(sub, dict):
        out["spaces"] = {k: describe_space(v) for k, v in sub.items()}
    elif isinstance(sub, list | tuple):
        out["spaces"] = [describe_space(v) for v in sub]
    out["size"] = int(np.prod(shape)) if shape else None
    return out


def random_actions(space: Any, num: int, rng: np.random.Generator) -> np.ndarray:
    """``num`` random actions from ``space`` drawn with ``rng`` (the same draws for equal spaces)."""
    if hasattr(space, "nvec"):
        nvec = np.asarray(space.nvec)
        return (rng.random((num, *nvec.shape)) * nvec).astype(np.int64)
    if hasattr(space, "n"):
        start = int(getattr(space, "start", 0))
        return rng.integers(0, int(space.n), size=num).astype(np.int64) + start
    if hasattr(space, "low") and hasattr(space, "high"):
        low = np.nan_to_num(np.asarray(space.low, dtype=np.float64), neginf=-1.0, posinf=1.0)
        high = np.nan_to_num(np.asarray(space.high, dtype=np.float64), neginf=-1.0, posinf=1.0)
        return (low + rng.random((num, *low.shape)) * (high - low)).astype(space.dtype)
    raise TypeError(
        f"cannot draw random actions from {type(space).__name__}; rlaudit's rollouts support Discrete, "
        "MultiDiscrete and Box action spaces"
    )


def random_rollout(env: Any, *, steps: int, seed: int, action_seed: int) -> dict[str, Any]:
    """Play ``steps`` environment steps (all environments together) with uniformly random actions.

    Args:
        env: A ``gymnasium.vector.VectorEnv`` or a single ``gymnasium.Env`` (reset manually on episode end).
        steps: Environment steps in total; a vector env of N environments plays ``ceil(steps / N)`` steps.
        seed: Passed to ``env.reset(seed=seed)``.
        action_seed: Seeds the action generator.

    Returns:
        ``obs`` (M, *obs_shape) as returned by the env (dtype kept), where M counts the reset observations
        plus one per environment step (for a Dict or Tuple space, a dict or tuple of such arrays, one per
        subspace: an observation tree), ``actions``, ``num_envs``, ``vector_steps``, ``episodes`` (ended).
    """
    from rlaudit.agents.nets import single_spaces

    _, act_space = single_spaces(env)
    rng = np.random.default_rng(action_seed)
    is_vector = hasattr(env, "num_envs") and hasattr(env, "single_observation_space")
    num_envs = int(env.num_envs) if is_vector else 1
    vector_steps = max(1, math.ceil(int(steps) / num_envs))
    obs, _ = env.reset(seed=int(seed))
    frames = [_env_rows(obs, num_envs, is_vector)]
    actions = []
    ended = 0
    for _ in range(vector_steps):
        act = random_actions(act_space, num_envs, rng)
        step_act = act if is_vector else act[0]
        obs, _reward, terminated, truncated, _info = env.step(step_act)
        done = np.logical_or(np.asarray(terminated), np.asarray(truncated)).reshape(-1)
        ended += int(done.sum())
        if not is_vector and bool(done[0]):
            obs, _ = env.reset()
        frames.append(_env_rows(obs, num_envs, is_vector))
        actions.append(act)
    arr = _concatenate(frames)
    return {
        "obs": arr,
        "actions": np.concatenate(actions, axis=0) if actions else np.zeros(0),
        "num_envs": num_envs,
        "vector_steps": vector_steps,
        "episodes": ended,
    }


def policy_batch(obs: Any, size: int) -> Any:
    """``size`` rows spread evenly over the rollout (not just its first steps), as float32 with the
    observation's shape kept, (size, *obs_shape): the fixed observation batch fed to networks.

    An observation tree (a Dict or Tuple space) keeps its structure, each array cut to the same rows: a
    policy built for a Dict space is fed a dict of batched arrays, as a vector env of it would return."""
    rows = obs_rows(obs)
    if rows <= size:
        idx = np.arange(rows)
    else:
        idx = np.linspace(0, rows - 1, size).round().astype(int)
    return map_leaves(lambda a: np.asarray(a)[idx].astype(np.float32), obs)


# ---------------------------------------------------------------------------------------------------------
# Observation trees: a Dict or Tuple space's observations as a dict or tuple of batched arrays
# ---------------------------------------------------------------------------------------------------------


def map_leaves(fn: Callable[[Any], Any], obs: Any) -> Any:
    """``fn`` applied to every array of an observation tree (to ``obs`` itself when it is one array)."""
    if isinstance(obs, Mapping):
        return {key: map_leaves(fn, value) for key, value in obs.items()}
    if isinstance(obs, tuple):
        return tuple(map_leaves(fn, value) for value in obs)
    return fn(obs)


def leaves(obs: Any) -> list[Any]:
    """The arrays of an observation tree in key order (``[obs]`` for one array)."""
    found: list[Any] = []
    map_leaves(found.append, obs)
    return found


def obs_rows(obs: Any) -> int:
    """How many observations a batched observation (tree) holds: the first axis of its arrays."""
    return len(leaves(obs)[0])


def flat_rows(obs: Any) -> np.ndarray:
    """Batched observations as (M, D) rows, one column per feature: an array reshaped (dtype kept), or an
    observation tree's arrays side by side in key order as float64 (a Discrete entry is its integer)."""
    arrays = leaves(obs)
    if len(arrays) == 1 and not isinstance(obs, Mapping | tuple):
        arr = np.asarray(obs)
        return arr.reshape(len(arr), -1)
    return np.concatenate([np.asarray(a, dtype=np.float64).reshape(len(a), -1) for a in arrays], axis=1)


def describe_row(obs: Any) -> dict[str, Any]:
    """The first observation of a batch as the environment returns it: ``dtype`` (per key for a tree),
    ``shape`` (the features of :func:`flat_rows` for a tree) and ``nbytes``."""
    first = map_leaves(lambda a: np.asarray(a)[0], obs)
    parts = leaves(first)
    if len(parts) == 1 and not isinstance(obs, Mapping | tuple):
        one = np.asarray(first)
        return {"dtype": str(one.dtype), "shape": list(one.shape), "nbytes": int(one.nbytes)}
    dtypes = map_leaves(lambda a: str(np.asarray(a).dtype), first)
    return {
        "dtype": str(dtypes),
        "shape": [int(sum(np.asarray(a).size for a in parts))],
        "nbytes": int(sum(np.asarray(a).nbytes for a in parts)),
    }


def _env_rows(obs: Any, num_envs: int, is_vector: bool) -> Any:
    """One step's observations as (num_envs, ...) rows, per array of an observation tree."""
    return map_leaves(
        lambda a: np.asarray(a).reshape(num_envs, *np.asarray(a).shape[(1 if is_vector else 0) :]), obs
    )


def _concatenate(frames: list[Any]) -> Any:
    """Row batches (arrays or observation trees of one structure) joined along the first axis."""
    first = frames[0]
    if isinstance(first, Mapping):
        return {key: _concatenate([f[key] for f in frames]) for key in first}
    if isinstance(first, tuple):
        return tuple(_concatenate([f[i] for f in frames]) for i in range(len(first)))
    return np.concatenate(frames, axis=0)


def feature_moments(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Per-feature ``mean``, ``var`` (ddof=1), ``min``, ``max`` and the count ``n`` of (M, *shape) data."""
    flat = np.asarray(obs, dtype=np.float64).reshape(len(obs), -1)
    n = len(flat)
    return {
        "mean": flat.mean(axis=0),
        "var": flat.var(axis=0, ddof=1) if n > 1 else np.zeros(flat.shape[1]),
        "min": flat.min(axis=0),
        "max": flat.max(axis=0),
        "n": np.asarray(n),
    }


def close_env(env: Any) -> None:
    close = getattr(env, "close", None)
    if callable(close):
        close()
