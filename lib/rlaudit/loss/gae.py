"""The workbench's own generalized advantage estimation, and the common ways to get it wrong.

Every subject's ``compute_advantages`` (or a sequence learner's ``compute_lambda_returns``, read as
``returns - values``) is run on the same random inputs and compared against :func:`reference_gae` and each of
:data:`VARIANTS`; the variant it matches names the mistake (case 003's lambda returns that mix in ``V(s_t)``
instead of ``V(s_{t+1})`` are ``bootstrap_current_return``; the same slip in GAE's TD error is
``bootstrap_current``).

Conventions (the subject contract's): ``rewards``, ``values``, ``dones`` are ``(T, N)``; ``dones[t]`` is 1 when
the episode *ended* at step ``t`` (after acting in ``s_t``), by termination or truncation; ``next_value`` is
``V(s_T)``, shape ``(N,)``. A truncated step (a time limit, not an end of the MDP) is bootstrapped from the
value of the observation the episode was cut at, ``final_values[t]``::

    r'_t    = r_t + gamma * final_values_t * truncated_t
    delta_t = r'_t + gamma * V(s_{t+1}) * (1 - done_t) - V(s_t)
    A_t     = delta_t + gamma * lambda * (1 - done_t) * A_{t+1}
    returns = A + V

The returns are the lambda returns a sequence learner (Dreamer) computes with continuation flags
``c_t = 1 - done_t`` and ``G_T = V(s_T)``::

    G_t = r'_t + gamma * c_t * ((1 - lambda) * V(s_{t+1}) + lambda * G_{t+1})

(Schulman et al. 2016, https://arxiv.org/abs/1506.02438; the truncation bootstrap follows Pardo et al. 2018,
"Time Limits in Reinforcement Learning", https://arxiv.org/abs/1712.00378.)

Numpy, the standard library and rlaudit.flatdiff (itself standard library only): this module is imported inside
subjects' processes by the loss probes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlaudit.flatdiff import flatten

GAMMA_KEYS = ("gamma", "discount", "discount_factor")
LAMBDA_KEYS = ("gae_lambda", "lambda", "lam", "gae_lam", "lmbda", "td_lambda", "return_lambda", "lambda_")


def find_discount(config: Mapping[str, Any]) -> dict[str, Any]:
    """The discount factor and GAE lambda a config declares, found by key name.

    Returns:
        ``{"gamma": float | None, "gamma_key": str | None, "gae_lambda": float | None, "lambda_key": ...}``;
        a leaf named like ``gamma`` (``discount``) or ``gae_lambda`` (``lambda``, ``lam``) holding a number in
        [0, 1]; the shortest dotted key wins when several match.
    """
    flat = flatten(config)
    out: dict[str, Any] = {"gamma": None, "gamma_key": None, "gae_lambda": None, "lambda_key": None}
    for field_name, key_name, names in (
        ("gamma", "gamma_key", GAMMA_KEYS),
        ("gae_lambda", "lambda_key", LAMBDA_KEYS),
    ):
        hits = [
            k
            for k, v in flat.items()
            if k.rsplit(".", 1)[-1].lower() in names
            and isinstance(v, int | float)
            and not isinstance(v, bool)
            and 0.0 <= float(v) <= 1.0
        ]
        if hits:
            best = min(hits, key=lambda k: (k.count("."), names.index(k.rsplit(".", 1)[-1].lower()), k))
            out[field_name] = float(flat[best])
            out[key_name] = best
    return out


def reference_gae(
    rewards: np.ndarray,
    values: np.ndarray,
    dones: np.ndarray,
    next_value: np.ndarray,
    gamma: float,
    gae_lambda: float,
    truncated: np.ndarray | None = None,
    final_values: np.ndarray | None = None,
    *,
    bootstrap: str = "next",
    mask: str = "same",
    truncation: str = "bootstrap",
) -> tuple[np.ndarray, np.ndarray]:
    """GAE in float64 (see the module docstring); the switches reproduce the common mistakes (:data:`VARIANTS`).

    Args:
        rewards: (T, N).
        values: (T, N) ``V(s_t)``.
        dones: (T, N) 1 where the episode ended at step t (terminated or truncated).
        next_value: (N,) ``V(s_T)``.
        gamma: Discount factor.
        gae_lambda: GAE lambda.
        truncated: (T, N) bool, the episode was cut by a time limit at step t (a subset of ``dones``); None
            when the rewards already carry the truncation bootstrap (or there are no truncations).
        final_values: (T, N) ``V`` of the observation a truncated episode was cut at (read where truncated).
        bootstrap: ``next`` (``V(s_{t+1})``, the reference), ``current`` (``V(s_t)`` in the TD error) or
            ``current_return`` (lambda returns whose ``(1 - lambda)`` term reads ``V(s_t)``, case 003's code).
        mask: Which done flag stops the bootstrap at step t: ``same`` (``dones[t]``, the reference), ``late``
            (``dones[t-1]``), ``early`` (``dones[t+1]``), or ``none`` (never stops).
        truncation: ``bootstrap`` (the reference), ``terminate`` (no ``final_values`` bootstrap), or
            ``continue`` (not done at all: bootstraps through the reset into the next episode).

    Returns:
        ``(advantages, returns)``, both (T, N) float64.
    """
    r = np.asarray(rewards, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    d = np.asarray(dones, dtype=np.float64)
    nv = np.asarray(next_value, dtype=np.float64).reshape(r.shape[1:])
    if r.ndim != 2 or v.shape != r.shape or d.shape != r.shape:
        raise ValueError(f"rewards, values and dones must all be (T, N); got {r.shape}, {v.shape}, {d.shape}")
    num_steps = r.shape[0]
    if truncated is not None:
        tr = np.asarray(truncated, dtype=bool)
        fv = np.zeros_like(r) if final_values is None else np.asarray(final_values, dtype=np.float64)
        if truncation == "bootstrap":
            r = r + gamma * np.where(tr, fv, 0.0)
        elif truncation == "continue":
            d = np.where(tr, 0.0, d)
    if mask == "late":
        d = np.concatenate([np.zeros_like(d[:1]), d[:-1]], axis=0)
    elif mask == "early":
        d = np.concatenate([d[1:], np.zeros_like(d[:1])], axis=0)
    elif mask == "none":
        d = np.zeros_like(d)
    next_values = v.copy() if bootstrap == "current" else np.concatenate([v[1:], nv[np.newaxis]], axis=0)
    cont = 1.0 - d
    if bootstrap == "current_return":
        returns = np.zeros_like(r)
        ret = nv
        for t in reversed(range(num_steps)):
            ret = r[t] + gamma * cont[t] * ((1.0 - gae_lambda) * v[t] + gae_lambda * ret)
            returns[t] = ret
        return returns - v, returns
    advantages = np.zeros_like(r)
    last = np.zeros_like(nv)
    for t in reversed(range(num_steps)):
        delta = r[t] + gamma * next_values[t] * cont[t] - v[t]
        last = delta + gamma * gae_lambda * cont[t] * last
        advantages[t] = last
    return advantages, advantages + v


@dataclass(frozen=True)
class Variant:
    """One way of computing advantages: the correct one or a known mistake.

    Attributes:
        name: Short id (``bootstrap_current``).
        description: What the code does, in one sentence.
        needs_truncation: Only distinguishable when the subject receives truncation flags.
        fn: ``fn(rewards, values, dones, next_value, gamma, lam, truncated, final_values) -> (adv, ret)``.
    """

    name: str
    description: str
    needs_truncation: bool
    fn: Callable[..., tuple[np.ndarray, np.ndarray]]


def _variant(name: str, description: str, needs_truncation: bool = False, **switches: Any) -> Variant:
    def fn(r, v, d, nv, gamma, lam, truncated=None, final_values=None):
        if switches.get("lam") is not None:
            lam = switches["lam"]
        kw = {k: val for k, val in switches.items() if k != "lam"}
        return reference_gae(r, v, d, nv, gamma, lam, truncated, final_values, **kw)

    return Variant(name, description, needs_truncation, fn)


VARIANTS: tuple[Variant, ...] = (
    _variant("correct", "GAE bootstrapping from V(s_t+1), stopped at episode ends, truncations bootstrapped"),
    _variant(
        "bootstrap_current",
        "bootstraps the TD error from V(s_t) instead of V(s_t+1) (case 003's bug, written as GAE)",
        bootstrap="current",
    ),
    _variant(
        "bootstrap_current_return",
        "lambda returns mixing in V(s_t) instead of V(s_t+1): G_t = r_t + gamma c_t ((1 - lambda) V(s_t) + "
        "lambda G_t+1) (case 003's lambda-returns bug)",
        bootstrap="current_return",
    ),
    _variant(
        "done_late", "the done mask is shifted one step late (uses the done flag of step t-1)", mask="late"
    ),
    _variant(
        "done_early", "the done mask is shifted one step early (uses the done flag of step t+1)", mask="early"
    ),
    _variant(
        "no_done_mask", "ignores episode ends: bootstraps across resets into the next episode", mask="none"
    ),
    _variant(
        "truncation_as_termination",
        "treats a time-limit truncation as a termination (no bootstrap from the cut-off state)",
        needs_truncation=True,
        truncation="terminate",
    ),
    _variant(
        "truncation_ignored",
        "treats a truncation as no episode end at all (bootstraps into the next episode's first state)",
        needs_truncation=True,
        truncation="continue",
    ),
    _variant("lambda_zero", "ignores lambda: one-step TD advantages (lambda = 0)", lam=0.0),
    _variant("lambda_one", "ignores lambda: Monte Carlo advantages (lambda = 1)", lam=1.0),
)
VARIANT_NAMES = tuple(v.name for v in VARIANTS)


def make_gae_inputs(
    seed: int,
    num_steps: int = 64,
    num_envs: int = 8,
    p_end: float = 0.06,
    p_truncate: float = 0.4,
) -> dict[str, np.ndarray]:
    """Random GAE inputs with episode ends and truncations, reproducible from ``seed``.

    Rewards are sparse (a quarter of the steps) and values spread, so that every variant of
    :data:`VARIANTS` gives visibly different advantages.

    Args:
        seed: Seed of the generator.
        num_steps: T.
        num_envs: N.
        p_end: Probability that an episode ends at a step.
        p_truncate: Fraction of the episode ends that are truncations.

    Returns:
        ``rewards``, ``values``, ``dones`` (float32 0/1), ``truncated`` (bool), ``final_values`` (T, N, zero
        where not truncated), ``next_value`` (N,), all float32 except ``truncated``.
    """
    rng = np.random.default_rng(seed)
    shape = (num_steps, num_envs)
    rewards = (rng.random(shape) < 0.25) * rng.normal(1.0, 0.5, shape)
    values = rng.normal(0.5, 1.0, shape)
    ends = rng.random(shape) < p_end
    ends[rng.integers(0, num_steps // 2), rng.integers(0, num_envs)] = True  # at least one end
    truncated = ends & (rng.random(shape) < p_truncate)
    if not truncated.any():
        where = np.argwhere(ends)[0]
        truncated[tuple(where)] = True
    final_values = np.where(truncated, rng.normal(0.5, 1.0, shape), 0.0)
    next_value = rng.normal(0.5, 1.0, num_envs)
    return {
        "rewards": rewards.astype(np.float32),
        "values": values.astype(np.float32),
        "dones": ends.astype(np.float32),
        "truncated": truncated,
        "final_values": final_values.astype(np.float32),
        "next_value": next_value.astype(np.float32),
    }


def fold_truncation(
    rewards: np.ndarray, truncated: np.ndarray, final_values: np.ndarray, gamma: float
) -> np.ndarray:
    """``rewards + gamma * final_values`` where truncated: the caller-side truncation bootstrap (float32)."""
    return (np.asarray(rewards, dtype=np.float64) + gamma * np.where(truncated, final_values, 0.0)).astype(
        np.float32
    )


def max_error(a: np.ndarray, b: np.ndarray) -> float:
    """Largest absolute difference of two arrays of the same shape (inf when the shapes differ)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    return float(np.nanmax(np.abs(a - b))) if np.isfinite(a).all() else float("inf")


def match_variants(
    advantages: np.ndarray,
    returns: np.ndarray,
    inputs: Mapping[str, np.ndarray],
    gamma: float,
    gae_lambda: float,
    *,
    with_truncation: bool,
    rtol: float = 1e-4,
) -> list[dict[str, Any]]:
    """Compare a subject's advantages and returns with every variant on the inputs it was given.

    Args:
        advantages, returns: The subject's output, (T, N).
        inputs: What the subject received: ``rewards``, ``values``, ``dones``, ``next_value``, and, when
            ``with_truncation``, ``truncated`` and ``final_values``.
        gamma, gae_lambda: The subject's own discount and lambda.
        with_truncation: The subject was given truncation flags (else truncation variants are not
            distinguishable and are reported as not testable).
        rtol: Match tolerance relative to the largest reference advantage (float32 arithmetic passes).

    Returns:
        One dict per variant: ``variant``, ``description``, ``adv_error``, ``ret_error`` (max abs), ``match``
        (bool), ``testable`` (bool).
    """
    rows = []
    for variant in VARIANTS:
        testable = with_truncation or not variant.needs_truncation
        if not testable:
            rows.append(
                {
                    "variant": variant.name,
                    "description": variant.description,
                    "adv_error": None,
                    "ret_error": None,
                    "match": False,
                    "testable": False,
                }
            )
            continue
        ref_adv, ref_ret = variant.fn(
            inputs["rewards"],
            inputs["values"],
            inputs["dones"],
            inputs["next_value"],
            gamma,
            gae_lambda,
            inputs.get("truncated") if with_truncation else None,
            inputs.get("final_values") if with_truncation else None,
        )
        scale = max(1.0, float(np.max(np.abs(ref_adv))), float(np.max(np.abs(ref_ret))))
        adv_err = max_error(advantages, ref_adv)
        ret_err = max_error(returns, ref_ret)
        rows.append(
            {
                "variant": variant.name,
                "description": variant.description,
                "adv_error": adv_err,
                "ret_error": ret_err,
                "match": bool(adv_err <= rtol * scale and ret_err <= rtol * scale),
                "testable": True,
            }
        )
    return rows


def make_impulse_inputs(num_steps: int = 16) -> dict[str, np.ndarray]:
    """Crafted GAE inputs whose answer reads off an estimator's discount and lambda.

    Two environments, no episode ends, no truncations:

    - env 0: one reward of 1 at the last step, all values 0 and ``next_value`` 0. Any GAE-like estimator gives
      ``A[T-1-k] = (gamma * lambda) ** k``: the decay per step is ``gamma * lambda``;
    - env 1: no reward, all values 0, ``next_value`` 1. The bootstrap gives ``A[T-1] = gamma`` and
      ``A[T-1-k] = gamma * (gamma * lambda) ** k``.

    Returns:
        ``rewards``, ``values``, ``dones``, ``final_values`` (T, 2) float32, ``truncated`` (T, 2) bool,
        ``next_value`` (2,) float32: the keys :func:`make_gae_inputs` has, so the same probe runs on both.
    """
    shape = (num_steps, 2)
    rewards = np.zeros(shape, dtype=np.float32)
    rewards[-1, 0] = 1.0
    zeros = np.zeros(shape, dtype=np.float32)
    return {
        "rewards": rewards,
        "values": zeros.copy(),
        "dones": zeros.copy(),
        "truncated": np.zeros(shape, dtype=bool),
        "final_values": zeros.copy(),
        "next_value": np.array([0.0, 1.0], dtype=np.float32),
    }


def implied_discount(advantages: np.ndarray, rtol: float = 1e-3) -> dict[str, Any]:
    """The discount and lambda an estimator's answer on :func:`make_impulse_inputs` implies.

    Args:
        advantages: (T, 2) the estimator's advantages on the impulse inputs.
        rtol: Relative tolerance of the geometric-decay check.

    Returns:
        ``decay`` (``gamma * lambda``: ``A[T-2, 0] / A[T-1, 0]``), ``gamma`` (``A[T-1, 1]``, the weight of the
        bootstrap value), ``gae_lambda`` (``decay / gamma``, None when gamma is 0), ``geometric`` (True when
        both columns decay by the same factor at every step, as any GAE does), ``reward_weight``
        (``A[T-1, 0]``, 1 for an estimator that counts the reward once). Values are None when not defined.
    """
    a = np.asarray(advantages, dtype=np.float64)
    out: dict[str, Any] = {
        "decay": None,
        "gamma": None,
        "gae_lambda": None,
        "geometric": False,
        "reward_weight": None,
    }
    if a.ndim != 2 or a.shape[1] < 2 or a.shape[0] < 3 or not np.isfinite(a).all():
        return out
    weight, gamma = float(a[-1, 0]), float(a[-1, 1])
    out["reward_weight"], out["gamma"] = weight, gamma
    if weight == 0.0:
        return out
    decay = float(a[-2, 0] / weight)
    out["decay"] = decay
    steps = np.arange(a.shape[0])[::-1]
    expected = np.stack([weight * decay**steps, gamma * decay**steps], axis=1)
    out["geometric"] = bool(np.allclose(a, expected, rtol=rtol, atol=rtol * max(1.0, abs(weight))))
    if gamma > 0:
        out["gae_lambda"] = decay / gamma
    return out
