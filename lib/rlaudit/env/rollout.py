"""Driving any Gymnasium environment the same way in every subject's process (runs inside probes).

The environment audits (env, rewards, memory, seeding) all need the same few things: step a single or
vectorized environment with a pre-generated, seeded action sequence or a fixed seeded policy; account for
episodes whatever the autoreset mode; read the per-episode statistics the environment reports; and time
steps in a way that survives a busy machine. This module does them once.

Shapes: a vectorized view always has a leading ``num_envs`` axis (``N``); a single ``gymnasium.Env`` is seen
as ``N = 1`` with the probe resetting it when an episode ends (as ``SAME_STEP`` autoreset would).

Imports only numpy and gymnasium (lazily) and the standard library: it runs in subjects' own interpreters.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

AUTORESET_MODES = ("same_step", "next_step", "disabled", "single")
"""How episodes restart: the three Gymnasium vector modes, and ``single`` (a non-vector env the probe resets)."""

# Config keys that size the vector env or the curriculum's task pool, by their last dotted segment. The
# first key found wins; subjects name these differently, and a probe that finds none measures the default.
NUM_ENVS_KEYS: tuple[str, ...] = ("num_envs", "n_envs", "num_workers_envs", "num_environments")
NUM_STEPS_KEYS: tuple[str, ...] = ("num_steps", "n_steps", "rollout_length", "bptt_horizon", "horizon")


# ---------------------------------------------------------------------------------------------------------
# Config helpers
# ---------------------------------------------------------------------------------------------------------


def find_key(config: Mapping[str, Any], names: Sequence[str]) -> str | None:
    """The dotted path of the first leaf (depth-first, in dict order) whose last segment is one of ``names``.

    Names earlier in ``names`` win over later ones; a leaf must hold an int (not a bool).

    Returns:
        e.g. ``"trainer.num_envs"``, or None when no leaf matches.
    """
    found: dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, Mapping):
            return
        for key, value in node.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, Mapping):
                walk(value, path)
            elif str(key) in names and isinstance(value, int) and not isinstance(value, bool):
                found.setdefault(str(key), path)

    walk(config, "")
    for name in names:
        if name in found:
            return found[name]
    return None


def get_path(config: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path (``KeyError`` naming the missing part)."""
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"config has no key {path!r} (missing {part!r})")
        node = node[part]
    return node


def with_value(config: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``config`` with the dotted ``path`` set to ``value``."""
    import copy

    out = copy.deepcopy(dict(config))
    node = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value
    return out


# ---------------------------------------------------------------------------------------------------------
# Arrays, digests
# ---------------------------------------------------------------------------------------------------------


def flat_obs(obs: Any, num_envs: int) -> np.ndarray:
    """Observations as one float array ``(num_envs, D)``: arrays are reshaped, dicts and tuples concatenated
    (dict items in sorted key order)."""
    if isinstance(obs, Mapping):
        parts = [flat_obs(obs[k], num_envs) for k in sorted(obs)]
        return np.concatenate(parts, axis=1) if parts else np.zeros((num_envs, 0))
    if isinstance(obs, tuple):
        parts = [flat_obs(o, num_envs) for o in obs]
        return np.concatenate(parts, axis=1) if parts else np.zeros((num_envs, 0))
    arr = np.asarray(obs)
    if arr.dtype == object:
        raise TypeError(f"observations of dtype object cannot be compared; got {type(obs).__name__}")
    return arr.reshape(num_envs, -1)


def digest(*arrays: Any) -> str:
    """A short hex digest of arrays' shapes, dtypes and bytes (bitwise identity, not closeness)."""
    h = hashlib.blake2b(digest_size=10)
    for a in arrays:
        arr = np.ascontiguousarray(np.asarray(a))
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def stable_unit(*parts: Any) -> float:
    """A number in [0, 1) from a hash of ``parts`` (the same in every process: not Python's salted hash)."""
    h = hashlib.blake2b(":".join(str(p) for p in parts).encode(), digest_size=8)
    return int.from_bytes(h.digest(), "little") / 2.0**64


# ---------------------------------------------------------------------------------------------------------
# Actions and fixed policies
# ---------------------------------------------------------------------------------------------------------


def describe_space(space: Any) -> dict[str, Any]:
    """A JSON-able description of a Gymnasium space (kind, shape, dtype, n, bounds summary)."""
    out: dict[str, Any] = {"kind": type(space).__name__, "repr": repr(space)[:200]}
    shape = getattr(space, "shape", None)
    out["shape"] = list(shape) if shape is not None else None
    dtype = getattr(space, "dtype", None)
    out["dtype"] = str(dtype) if dtype is not None else None
    if hasattr(space, "n"):
        out["n"] = int(np.asarray(space.n).sum()) if np.ndim(space.n) else int(space.n)
    if hasattr(space, "nvec"):
        out["nvec"] = np.asarray(space.nvec).tolist()
    if hasattr(space, "low") and hasattr(space, "high"):
        low, high = np.asarray(space.low, dtype=float), np.asarray(space.high, dtype=float)
        out["low_min"], out["high_max"] = float(low.min()), float(high.max())
    return out


def sample_actions(
    space: Any, num_envs: int, rng: np.random.Generator, size: int | None = None
) -> np.ndarray:
    """Uniform random actions from a single-env action space, drawn from ``rng`` only (never the space's own
    generator, so the draws depend on the seed alone).

    Returns:
        ``(num_envs, *action_shape)`` or, with ``size``, ``(size, num_envs, *action_shape)``.
    """
    from gymnasium import spaces

    lead = (num_envs,) if size is None else (size, num_envs)
    if isinstance(space, spaces.Discrete):
        return (int(space.start) + rng.integers(0, int(space.n), size=lead)).astype(np.int64)
    if isinstance(space, spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec)
        start = np.asarray(getattr(space, "start", np.zeros_like(nvec)))
        return (start + np.floor(rng.random(lead + nvec.shape) * nvec)).astype(np.int64)
    if isinstance(space, spaces.MultiBinary):
        return rng.integers(0, 2, size=lead + tuple(np.atleast_1d(space.n))).astype(np.int8)
    if isinstance(space, spaces.Box):
        low = np.where(np.isfinite(space.low), space.low, -1.0)
        high = np.where(np.isfinite(space.high), space.high, 1.0)
        values = low + (high - low) * rng.random(lead + tuple(space.shape))
        return values.astype(space.dtype)
    raise TypeError(
        f"cannot generate actions for a {type(space).__name__} action space; the environment audits support "
        "Discrete, MultiDiscrete, MultiBinary and Box actions"
    )


class Policy:
    """A fixed, seeded policy over ``num_envs`` environments.

    ``random``: uniform actions. ``wsls`` (win-stay, lose-shift): repeat an environment's last action when it
    earned a positive reward, else draw a new one; a simple heuristic that exploits any repeatable reward
    source (a mine, a lever) without knowing the environment.

    Args:
        kind: ``"random"`` or ``"wsls"``.
        space: The single-environment action space.
        num_envs: Environments acted for.
        seed: Seed of the policy's own generator.
    """

    KINDS = ("random", "wsls")

    def __init__(self, kind: str, space: Any, num_envs: int, seed: int) -> None:
        if kind not in self.KINDS:
            raise ValueError(f"policy must be one of {self.KINDS}, got {kind!r}")
        self.kind = kind
        self.space = space
        self.num_envs = num_envs
        self.rng = np.random.default_rng(np.random.SeedSequence([int(seed), 7919]))
        self._last: np.ndarray | None = None

    def act(self, last_reward: np.ndarray | None) -> np.ndarray:
        """Actions ``(num_envs, ...)`` given each environment's last reward ``(num_envs,)`` (None at start)."""
        fresh = sample_actions(self.space, self.num_envs, self.rng)
        if self.kind == "wsls" and self._last is not None and last_reward is not None:
            stay = np.asarray(last_reward) > 0
            mask = stay.reshape((self.num_envs,) + (1,) * (fresh.ndim - 1))
            fresh = np.where(mask, self._last, fresh)
        self._last = fresh
        return fresh


# ---------------------------------------------------------------------------------------------------------
# A uniform vector view of single and vector environments
# ---------------------------------------------------------------------------------------------------------


def is_vector_env(env: Any) -> bool:
    """True for a Gymnasium vector env (and wrappers of one) under 1.x or 0.29, or anything with ``num_envs``
    and a ``single_action_space``."""
    try:
        from gymnasium.vector import VectorEnv, VectorWrapper

        if isinstance(env, VectorEnv | VectorWrapper):
            return True
    except ImportError:  # Gymnasium 0.29 has no VectorWrapper; its vector envs say so themselves
        if getattr(env, "is_vector_env", False) is True:
            return True
    return hasattr(env, "num_envs") and hasattr(env, "single_action_space")


def autoreset_mode(env: Any) -> str:
    """One of :data:`AUTORESET_MODES`; a vector env that does not say is taken as its Gymnasium's default
    (``next_step`` under 1.x, ``same_step`` under 0.29: :func:`rlaudit.gymcompat.autoreset_mode_of`)."""
    if not is_vector_env(env):
        return "single"
    from rlaudit.gymcompat import autoreset_mode_of

    return autoreset_mode_of(env)


def wrapper_chain(env: Any) -> list[str]:
    """Class names from the outermost wrapper to the innermost environment."""
    names = []
    node = env
    seen: set[int] = set()
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        names.append(type(node).__name__)
        node = getattr(node, "env", None)
    return names


def innermost(env: Any) -> Any:
    """The environment under every wrapper (follows ``.env``)."""
    node = env
    seen: set[int] = set()
    while getattr(node, "env", None) is not None and id(node) not in seen:
        seen.add(id(node))
        node = node.env
    return node


@dataclass
class StepResult:
    """One step of every environment.

    Attributes:
        obs: What the step returned, ``(N, ...)`` (for ``same_step``/``single``: the next episode's first
            observation where one ended).
        reward: ``(N,)`` float64.
        terminated: ``(N,)`` bool.
        truncated: ``(N,)`` bool.
        info: The info dict the environment returned.
        final_obs_given: ``(N,)`` bool where the environment handed over the final observation of an episode
            that ended (``info["final_obs"]`` in ``same_step``; the returned obs itself in ``next_step``);
            None when no episode ended.
        reset_step: ``(N,)`` bool: this step only reset the environment (``next_step`` mode after an end); its
            reward and action belong to no episode.
    """

    obs: Any
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    info: dict[str, Any]
    final_obs_given: np.ndarray | None
    reset_step: np.ndarray


class VecView:
    """Any Gymnasium environment seen as a vector of ``N`` environments.

    Args:
        env: A ``gymnasium.Env`` or ``gymnasium.vector.VectorEnv`` as the subject's ``make_env`` returned it.
    """

    def __init__(self, env: Any) -> None:
        self.env = env
        self.is_vector = is_vector_env(env)
        self.mode = autoreset_mode(env)
        if self.is_vector:
            self.num_envs = int(env.num_envs)
            self.single_observation_space = env.single_observation_space
            self.single_action_space = env.single_action_space
        else:
            self.num_envs = 1
            self.single_observation_space = env.observation_space
            self.single_action_space = env.action_space
        self._pending_reset = np.zeros(self.num_envs, dtype=bool)

    def reset(self, seed: int | None = None) -> Any:
        """Reset every environment; returns the observations ``(N, ...)``."""
        self._pending_reset[:] = False
        obs, _ = self.env.reset(seed=seed)
        return obs if self.is_vector else _batch1(obs)

    def step(self, actions: np.ndarray) -> StepResult:
        """Step with ``actions`` ``(N, ...)``."""
        n = self.num_envs
        if not self.is_vector:
            obs, reward, term, trunc, info = self.env.step(actions[0])
            term_a, trunc_a = np.array([bool(term)]), np.array([bool(trunc)])
            final = None
            if term or trunc:
                final = np.array([True])
                info = dict(info)
                info["final_obs"] = _batch1(obs)
                obs, _ = self.env.reset()
            return StepResult(
                _batch1(obs), np.array([float(reward)]), term_a, trunc_a, dict(info), final, np.zeros(1, bool)
            )
        reset_step = self._pending_reset.copy()
        obs, reward, term, trunc, info = self.env.step(actions)
        term = np.asarray(term, dtype=bool).reshape(n)
        trunc = np.asarray(trunc, dtype=bool).reshape(n)
        reward = np.asarray(reward, dtype=np.float64).reshape(n)
        info = dict(info) if isinstance(info, Mapping) else {}
        done = term | trunc
        final = None
        if self.mode == "next_step":
            # The step after an end only resets; the step that ended returned the final observation itself.
            term = term & ~reset_step
            trunc = trunc & ~reset_step
            done = term | trunc
            self._pending_reset = done.copy()
            if done.any():
                final = done.copy()
        elif self.mode == "same_step":
            if done.any():
                from rlaudit.gymcompat import final_observations

                final = final_observations(info, n)[0] & done
        else:  # disabled: the caller resets ended environments explicitly
            if done.any():
                final = done.copy()
                new_obs, _ = self.env.reset(options={"reset_mask": done})
                obs = _merge_obs(obs, new_obs, done)
        return StepResult(obs, reward, term, trunc, info, final, reset_step)


def _batch1(obs: Any) -> Any:
    if isinstance(obs, Mapping):
        return {k: _batch1(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_batch1(o) for o in obs)
    return np.asarray(obs)[None]


def _merge_obs(old: Any, new: Any, mask: np.ndarray) -> Any:
    if isinstance(old, Mapping):
        return {k: _merge_obs(old[k], new[k], mask) for k in old}
    if isinstance(old, tuple):
        return tuple(_merge_obs(o, n, mask) for o, n in zip(old, new, strict=True))
    out = np.array(old, copy=True)
    out[mask] = np.asarray(new)[mask]
    return out


# ---------------------------------------------------------------------------------------------------------
# Episode accounting
# ---------------------------------------------------------------------------------------------------------


def reported_episode_stats(
    info: Mapping[str, Any], num_envs: int, done: np.ndarray
) -> list[dict[str, float]]:
    """Per environment, the numeric episode statistics the environment reported in ``info`` this step.

    Every layout of Gymnasium 0.29 and 1.x (see :func:`rlaudit.gymcompat.episode_stats`): a top-level
    ``info["episode"]`` (masked by ``info["_episode"]``, or scalars for a single env), 0.29's
    ``info["final_info"][i]["episode"]``, and 1.x SAME_STEP's ``info["final_info"]["episode"]``.

    Returns:
        ``num_envs`` dicts (empty where nothing was reported), e.g. ``{"r": 3.1, "l": 96, "heart.get": 2}``.
    """
    from rlaudit.gymcompat import episode_stats

    return episode_stats(info, num_envs, done)


@dataclass
class EpisodeLog:
    """Finished episodes as parallel column lists (see :meth:`columns`)."""

    env: list[int] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    length: list[int] = field(default_factory=list)
    ret: list[float] = field(default_factory=list)
    terminated: list[bool] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)
    first: list[bool] = field(default_factory=list)
    final_obs: list[bool] = field(default_factory=list)
    reported: list[dict[str, float]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.env)

    def columns(self) -> dict[str, np.ndarray]:
        """``env, start, end`` (vector-step indices; an episode spans steps ``start..end``), ``length``,
        ``return`` (sum of the rewards the env returned), ``terminated``, ``truncated``, ``first`` (the env's
        first episode after the initial reset), ``final_obs`` (final observation handed over), and one
        ``reported.<key>`` column per statistic the environment reported (NaN where it did not)."""
        cols: dict[str, np.ndarray] = {
            "env": np.asarray(self.env, dtype=np.int64),
            "start": np.asarray(self.start, dtype=np.int64),
            "end": np.asarray(self.end, dtype=np.int64),
            "length": np.asarray(self.length, dtype=np.int64),
            "return": np.asarray(self.ret, dtype=np.float64),
            "terminated": np.asarray(self.terminated, dtype=bool),
            "truncated": np.asarray(self.truncated, dtype=bool),
            "first": np.asarray(self.first, dtype=bool),
            "final_obs": np.asarray(self.final_obs, dtype=bool),
        }
        keys = sorted({k for r in self.reported for k in r})
        for key in keys:
            cols[f"reported.{key}"] = np.asarray(
                [r.get(key, math.nan) for r in self.reported], dtype=np.float64
            )
        return cols


class EpisodeTracker:
    """Accumulates each environment's return and length from what ``step`` returned, and logs episodes.

    Args:
        num_envs: Environments tracked.
    """

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs
        self.ret = np.zeros(num_envs)
        self.length = np.zeros(num_envs, dtype=np.int64)
        self.start = np.zeros(num_envs, dtype=np.int64)
        self.seen = np.zeros(num_envs, dtype=np.int64)  # finished episodes per env
        self.log = EpisodeLog()

    def update(self, t: int, res: StepResult) -> np.ndarray:
        """Fold vector step ``t`` in; returns the ``(N,)`` mask of environments whose episode ended."""
        live = ~res.reset_step
        self.ret += np.where(live, res.reward, 0.0)
        self.length += live
        # an environment's next episode starts at the step after its reset step (next_step mode)
        self.start = np.where(res.reset_step, t + 1, self.start)
        done = res.terminated | res.truncated
        if done.any():
            reported = reported_episode_stats(res.info, self.num_envs, done)
            log = self.log
            for i in np.flatnonzero(done):
                log.env.append(int(i))
                log.start.append(int(self.start[i]))
                log.end.append(int(t))
                log.length.append(int(self.length[i]))
                log.ret.append(float(self.ret[i]))
                log.terminated.append(bool(res.terminated[i]))
                log.truncated.append(bool(res.truncated[i]))
                log.first.append(bool(self.seen[i] == 0))
                log.final_obs.append(
                    bool(res.final_obs_given[i]) if res.final_obs_given is not None else False
                )
                log.reported.append(reported[i])
            self.seen += done
            self.ret[done] = 0.0
            self.length[done] = 0
            self.start[done] = t + 1
        return done


# ---------------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------------


def uses_subprocesses(env: Any) -> bool:
    """True when the environment steps in other processes (``AsyncVectorEnv`` and the like), whose CPU time
    this process's clock does not see."""
    node: Any = env
    seen: set[int] = set()
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if type(node).__name__.lower().startswith("async") or hasattr(node, "processes"):
            return True
        node = getattr(node, "env", None)
    return False


class Clock:
    """The clock a probe times with: this process's CPU time, or wall time for environments that step in
    subprocesses.

    CPU time (``time.process_time``) is what makes timings comparable on a busy shared machine: other
    processes competing for the cores stretch wall time, not the CPU time this process spends.

    Args:
        kind: ``"cpu"`` or ``"wall"``.
    """

    def __init__(self, kind: str = "cpu") -> None:
        if kind not in ("cpu", "wall"):
            raise ValueError(f"clock kind must be 'cpu' or 'wall', got {kind!r}")
        self.kind = kind
        self.now = time.process_time if kind == "cpu" else time.perf_counter

    @classmethod
    def for_env(cls, env: Any) -> Clock:
        return cls("wall" if uses_subprocesses(env) else "cpu")


_CALIB_DATA: dict[str, np.ndarray] = {}


def calibration_workload(clock: Clock | None = None) -> float:
    """Run a fixed mix of small numpy operations and Python bytecode; returns its duration in seconds.

    Timed right beside a measurement, it turns "seconds" into "calibration units", which cancels what slows
    both alike (CPU frequency, a busy machine for wall-clock timings); about 1 ms on an idle core.
    """
    now = (clock or Clock("cpu")).now
    data = _CALIB_DATA.get("x")
    if data is None:
        data = _CALIB_DATA["x"] = np.random.default_rng(12345).random(4096)
    start = now()
    acc = 0.0
    for i in range(24):
        part = data[(i * 97) % 2048 : (i * 97) % 2048 + 2048]
        acc += float(np.sort(part)[1024]) + float(np.take(part, np.arange(0, 2048, 7)).sum())
    total = 0
    for i in range(4000):
        total += i & 7
    if acc < 0 or total < 0:  # keeps the work from being optimized away (it never is in CPython)
        raise AssertionError
    return now() - start
