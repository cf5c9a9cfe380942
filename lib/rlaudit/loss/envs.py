"""Probe environments: five tiny vector envs, each with a known value function and optimal policy.

Andy Jones' debugging ladder ("Debugging RL, Without the Agonizing Pain",
https://andyljones.com/posts/rl-debugging.html): an agent that cannot learn these in a few thousand steps has a
bug, and *which* rung fails isolates it.

=====================  =========================================  ==========================================
probe                  what it is                                 a failure isolates
=====================  =========================================  ==========================================
``constant``           obs 0, 1 action, 1 step, reward +1         the value loss / optimizer (V(0) -> 1)
``observation``        obs +-1, 1 action, 1 step, reward = obs    backprop through the value net (V(+-1) -> +-1)
``discount``           obs 0 then 1, 1 action, 2 steps, reward    discounting and bootstrapping (V(0) -> 1 +
                       +1 at each step                            gamma, V(1) -> 1)
``action``             obs 0, 2 actions, 1 step, reward +1 for    the policy loss (pi(1) -> 1)
                       action 1, -1 for action 0
``observation_action`` obs +-1, 2 actions, 1 step, reward +1 when  batching: observations, actions and
                       the action matches the sign of obs         advantages kept aligned (pi(match) -> 1)
=====================  =========================================  ==========================================

Each is a ``gymnasium.vector.VectorEnv`` with Box observations of shape (1,), Discrete actions and same-step
autoreset, under Gymnasium 1.x and 0.29 alike. Andy Jones' discount probe pays only at the end; ours pays +1
at both steps, so that a return bootstrapped from the wrong state (``V(s_t)`` for ``V(s_{t+1})``, case 003)
makes ``V(0)`` grow towards ``1 / (1 - gamma)`` instead of drifting slowly near its target, which a short run
would miss. On the step an episode ends, the returned observation is the next episode's first one, and the
info carries the last observation and the episode's ``r`` (return) and ``l`` (length) in the installed
Gymnasium's layout (:func:`rlaudit.gymcompat.same_step_info`): under 1.x ``info["final_obs"]`` (masked by
``info["_final_obs"]``), ``info["episode"]`` (masked by ``info["_episode"]``, as the arena reports them) and
the same statistics in ``info["final_info"]["episode"]``; under 0.29 ``info["final_observation"]`` and
``info["final_info"][i]["episode"]``, as a ``SyncVectorEnv`` of ``RecordEpisodeStatistics`` environments
writes them. Finished episodes are also kept for :meth:`ProbeVecEnv.pop_episodes`.

Imports numpy and gymnasium only (it runs inside subjects' processes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from rlaudit import gymcompat


@dataclass(frozen=True)
class ProbeSpec:
    """What a probe environment is and what learning it means.

    Attributes:
        name: Probe id.
        index: Its rung on the ladder (1 to 5).
        n_actions: Discrete actions.
        length: Steps per episode.
        isolates: What a failure on this probe (with the rungs below it passing) points at.
        description: The environment in one sentence.
    """

    name: str
    index: int
    n_actions: int
    length: int
    isolates: str
    description: str


PROBES: dict[str, ProbeSpec] = {
    p.name: p
    for p in (
        ProbeSpec(
            "constant",
            1,
            1,
            1,
            "value loss / optimizer",
            "observation 0, one action, one step, reward +1: V(0) must reach 1",
        ),
        ProbeSpec(
            "observation",
            2,
            1,
            1,
            "backprop through the value network",
            "observation -1 or +1, one action, one step, reward = observation: V(+-1) must reach +-1",
        ),
        ProbeSpec(
            "discount",
            3,
            1,
            2,
            "discounting / bootstrapping (returns, GAE, done masks)",
            "observation 0 then 1, one action, two steps, reward +1 at each: V(1) -> 1, V(0) -> 1 + gamma",
        ),
        ProbeSpec(
            "action",
            4,
            2,
            1,
            "the policy loss (advantage sign, log-probabilities)",
            "observation 0, two actions, one step, reward +1 for action 1 and -1 for action 0",
        ),
        ProbeSpec(
            "observation_action",
            5,
            2,
            1,
            "batching (observations, actions and advantages out of step)",
            "observation -1 or +1, two actions, one step, reward +1 when the action matches the sign",
        ),
    )
}
PROBE_NAMES: tuple[str, ...] = tuple(PROBES)


class ProbeVecEnv(VectorEnv):
    """``num_envs`` copies of one probe environment (see the module docstring).

    Args:
        probe: One of :data:`PROBE_NAMES`.
        num_envs: Number of environments.
        seed: Seed for the first ``reset()`` given none (the +-1 observations are drawn from it).

    Shapes: observations ``(num_envs, 1)`` float32, actions ``(num_envs,)`` ints, rewards ``(num_envs,)``
    float32, terminations/truncations ``(num_envs,)`` bool (episodes terminate; nothing is truncated).
    """

    def __init__(self, probe: str, num_envs: int, seed: int | None = None) -> None:
        if probe not in PROBES:
            raise ValueError(f"unknown probe environment {probe!r}; expected one of {', '.join(PROBE_NAMES)}")
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs!r}")
        # per instance: the autoreset mode's type depends on the Gymnasium installed (an enum only in 1.x)
        self.metadata = {"autoreset_mode": gymcompat.same_step_mode(), "render_modes": []}
        self.is_vector_env = True  # what Gymnasium 0.29's wrappers look for
        self.closed = False
        self.spec_ = PROBES[probe]
        self.probe = probe
        self.num_envs = int(num_envs)
        self._seed = seed
        self._rng: np.random.Generator | None = None
        self.single_observation_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(self.spec_.n_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._obs = np.zeros(self.num_envs, dtype=np.float32)
        self._t = np.zeros(self.num_envs, dtype=np.int64)
        self._ret = np.zeros(self.num_envs, dtype=np.float64)
        self._vector_steps = 0
        self._log: list[tuple[np.ndarray, ...]] = []
        self._needs_reset = True

    # --- the rules ---------------------------------------------------------------------------------------

    def _first_obs(self, count: int) -> np.ndarray:
        if self.probe in ("observation", "observation_action"):
            assert self._rng is not None
            return np.where(self._rng.random(count) < 0.5, -1.0, 1.0).astype(np.float32)
        return np.zeros(count, dtype=np.float32)  # constant, discount (first step), action

    def _reward(self, actions: np.ndarray) -> np.ndarray:
        obs = self._obs
        if self.probe == "constant":
            return np.ones(self.num_envs, dtype=np.float32)
        if self.probe == "observation":
            return obs.astype(np.float32)
        if self.probe == "discount":
            return np.ones(self.num_envs, dtype=np.float32)  # +1 on both steps: V(0) = 1 + gamma, V(1) = 1
        if self.probe == "action":
            return np.where(actions == 1, 1.0, -1.0).astype(np.float32)
        match = (actions == 1) == (obs > 0)
        return np.where(match, 1.0, -1.0).astype(np.float32)

    # --- the VectorEnv API -------------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new episode everywhere; returns ``(obs (num_envs, 1), {})``."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        elif self._rng is None:
            self._rng = np.random.default_rng(self._seed)
        self._np_random = self._rng
        self._obs = self._first_obs(self.num_envs)
        self._t[:] = 0
        self._ret[:] = 0.0
        self._needs_reset = False
        return self._obs.reshape(-1, 1).copy(), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One step everywhere (SAME_STEP autoreset); see the module docstring for ``info``."""
        if self._needs_reset:
            raise RuntimeError("ProbeVecEnv.step() called before reset(); call reset() first")
        a = np.asarray(actions).reshape(-1)
        if a.shape != (self.num_envs,) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an integer array of shape ({self.num_envs},), got dtype {a.dtype} shape "
                f"{np.asarray(actions).shape}"
            )
        if a.min() < 0 or a.max() >= self.spec_.n_actions:
            raise ValueError(f"actions must be in [0, {self.spec_.n_actions}), got [{a.min()}, {a.max()}]")
        self._vector_steps += 1
        reward = self._reward(a)
        self._ret += reward
        self._t += 1
        terminated = self._t >= self.spec_.length
        truncated = np.zeros(self.num_envs, dtype=bool)
        if self.probe == "discount":
            # the second observation of the two-step episode is 1
            self._obs = np.where(terminated, self._obs, 1.0).astype(np.float32)
        obs = self._obs.reshape(-1, 1).copy()
        info: dict[str, Any] = {}
        if terminated.any():
            ids = np.flatnonzero(terminated)
            r = np.zeros(self.num_envs, dtype=np.float64)
            length = np.zeros(self.num_envs, dtype=np.int32)
            r[ids] = self._ret[ids]
            length[ids] = self._t[ids]
            info = gymcompat.same_step_info(obs, terminated, {"r": r, "l": length})
            self._log.append(
                (
                    np.full(len(ids), self._vector_steps, dtype=np.int64),
                    ids.astype(np.int64),
                    r[ids],
                    length[ids],
                )
            )
            self._obs[ids] = self._first_obs(len(ids))
            self._t[ids] = 0
            self._ret[ids] = 0.0
            obs[ids, 0] = self._obs[ids]
        return obs, reward, terminated, truncated, info

    def pop_episodes(self) -> dict[str, np.ndarray]:
        """Episodes finished since the last call: ``vector_step``, ``env``, ``r``, ``l`` arrays (E,)."""
        keys = ("vector_step", "env", "r", "l")
        if not self._log:
            return {
                "vector_step": np.zeros(0, dtype=np.int64),
                "env": np.zeros(0, dtype=np.int64),
                "r": np.zeros(0, dtype=np.float64),
                "l": np.zeros(0, dtype=np.int32),
            }
        chunks, self._log = self._log, []
        return {k: np.concatenate([c[i] for c in chunks]) for i, k in enumerate(keys)}

    def close(self, **kwargs: Any) -> None:
        self._log = []
        self.closed = True


def make_probe_env(probe: str, num_envs: int, seed: int) -> ProbeVecEnv:
    """``env_fn``-shaped constructor: ``make_probe_env(probe, num_envs, seed)``."""
    return ProbeVecEnv(probe, num_envs, seed=seed)


def eval_observations(probe: str) -> np.ndarray:
    """The observations the pass criteria read, (k, 1) float32 (every state the probe can be in)."""
    if probe in ("observation", "observation_action"):
        return np.array([[-1.0], [1.0]], dtype=np.float32)
    if probe == "discount":
        return np.array([[0.0], [1.0]], dtype=np.float32)
    return np.array([[0.0]], dtype=np.float32)


def expected(probe: str, gamma: float, probs: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """What a learned agent should output on :func:`eval_observations`.

    Args:
        probe: The probe.
        gamma: The subject's discount factor (the discount probe's first value is 1 + gamma).
        probs: (k, n_actions) the learned policy's action probabilities; the value target of the policy
            probes is the expected reward of that policy (``2 p(good) - 1``).

    Returns:
        ``{"value": (k,), "good_action": (k,) int or absent}``.
    """
    if probe == "constant":
        return {"value": np.array([1.0])}
    if probe == "observation":
        return {"value": np.array([-1.0, 1.0])}
    if probe == "discount":
        return {"value": np.array([1.0 + gamma, 1.0])}
    good = np.array([1]) if probe == "action" else np.array([0, 1])
    if probs is None:
        return {"value": np.ones(len(good)), "good_action": good}
    p_good = np.asarray(probs)[np.arange(len(good)), good]
    return {"value": 2.0 * p_good - 1.0, "good_action": good}


def judge(
    probe: str,
    values: np.ndarray,
    probs: np.ndarray,
    gamma: float,
    *,
    value_tol: float = 0.1,
    policy_value_tol: float = 0.3,
    policy_min: float = 0.9,
) -> dict[str, Any]:
    """Pass or fail one probe from the learned values and policy on :func:`eval_observations`.

    Args:
        values: (k,) learned ``V`` on the evaluation observations.
        probs: (k, n_actions) learned action probabilities there.
        gamma: The subject's discount.
        value_tol: Largest allowed ``|V - target|`` on the value probes (1 to 3).
        policy_value_tol: The same on the policy probes (4, 5), looser: their value target moves with the
            policy as it learns, and the critic trails it by an update or two.
        policy_min: Smallest allowed probability of the rewarded action (policy probes).

    Returns:
        ``{"passed": bool, "value_error": float, "p_good": float | None, "reason": str}``.
    """
    want = expected(probe, gamma, probs)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    value_error = float(np.max(np.abs(values - want["value"])))
    reasons = []
    p_good = None
    if "good_action" in want:
        good = want["good_action"]
        p_good = float(np.min(np.asarray(probs)[np.arange(len(good)), good]))
        if p_good < policy_min:
            reasons.append(f"p(rewarded action) {p_good:.2f} < {policy_min}")
    tol = policy_value_tol if "good_action" in want else value_tol
    if value_error > tol:
        targets = ", ".join(f"{t:.2f}" for t in want["value"])
        got = ", ".join(f"{v:.2f}" for v in values)
        reasons.append(f"V = [{got}], expected [{targets}] (error {value_error:.2f} > {tol})")
    return {
        "passed": not reasons,
        "value_error": value_error,
        "p_good": p_good,
        "reason": "; ".join(reasons) or "learned",
    }
