"""Reward probes: the reward stream before and after the environment's wrappers.

The per-episode components and the reward values paid come from the shared fixed-policy rollouts
(:func:`rlaudit.env.probes.rollout`); the settings from the config probe (:mod:`rlaudit.config.probes`).
Runs inside the subject's process; imports only numpy, gymnasium and light rlaudit modules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlaudit.env.rollout import VecView, innermost, sample_actions, wrapper_chain
from rlaudit.probe import ProbeContext, probe


def _reward_stats(rewards: np.ndarray) -> dict[str, Any]:
    r = np.asarray(rewards, dtype=float).reshape(-1)
    if r.size == 0:
        return {"n": 0}
    return {
        "n": int(r.size),
        "min": float(r.min()),
        "max": float(r.max()),
        "mean": float(r.mean()),
        "std": float(r.std()),
        "abs_max": float(np.abs(r).max()),
        "nonzero": float(np.mean(r != 0)),
        "q01": float(np.quantile(r, 0.01)),
        "q99": float(np.quantile(r, 0.99)),
    }


def _play(env: Any, seed: int, actions: np.ndarray) -> np.ndarray:
    view = VecView(env)
    view.reset(seed=seed)
    out = np.zeros((len(actions), view.num_envs))
    for t, a in enumerate(actions):
        res = view.step(a)
        out[t] = np.where(res.reset_step, np.nan, res.reward)
    return out


@probe(requires=("config", "make_env"), version=1)
def reward_wrappers(ctx: ProbeContext, *, seed: int = 0, steps: int = 96) -> dict:
    """Rewards of one seeded random action sequence as the outer environment returns them, and as the
    innermost (unwrapped) environment returns them in a second, identically seeded instance.

    Returns:
        ``wrappers`` (outermost first), ``wrapped`` (any wrapper at all), ``after`` and ``before`` reward
        statistics (``before`` equals ``after`` when there is no wrapper), and ``same_stream`` (the two
        streams are identical).
    """
    outer = ctx.subject.make_env(ctx.config, seed)
    try:
        chain = wrapper_chain(outer)
        view = VecView(outer)
        actions = sample_actions(
            view.single_action_space, view.num_envs, np.random.default_rng(seed), size=steps
        )
        after = _play(outer, seed, actions)
    finally:
        getattr(outer, "close", lambda: None)()
    if len(chain) > 1:
        second = ctx.subject.make_env(ctx.config, seed)
        try:
            before = _play(innermost(second), seed, actions)
        finally:
            getattr(second, "close", lambda: None)()
    else:
        before = after
    finite_a, finite_b = after[np.isfinite(after)], before[np.isfinite(before)]
    same = bool(after.shape == before.shape and np.allclose(np.nan_to_num(after), np.nan_to_num(before)))
    return {
        "wrappers": chain,
        "wrapped": len(chain) > 1,
        "after": _reward_stats(finite_a),
        "before": _reward_stats(finite_b),
        "same_stream": same,
        "steps": steps,
    }
