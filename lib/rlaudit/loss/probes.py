"""Loss probes: advantages on shared inputs, loss terms and gradients on a shared batch and on real rollouts,
and training on the probe environments. They run inside the subject's process.

Policies are driven through CleanRL's interface, which the built-in subjects use:
``policy.get_action_and_value(obs, action=None) -> (action, logprob, entropy, value)`` and
``policy.get_value(obs)``. A subject whose policy lacks it still gets the advantage, loss and gradient checks
on the shared batch; the rollout and probe-environment checks then report what is missing.

Imports numpy, gymnasium (through the probe environments) and light rlaudit modules; torch lazily.
"""

from __future__ import annotations

import functools
import inspect
import math
from pathlib import Path
from typing import Any

import numpy as np

from rlaudit import gymcompat
from rlaudit.devices import module_device, to_device
from rlaudit.loss import inputs as staged
from rlaudit.loss.gae import find_discount, fold_truncation
from rlaudit.probe import ProbeContext, probe

TRUNCATED_KWARGS = ("truncated", "truncations", "truncation")
FINAL_VALUE_KWARGS = ("final_values", "final_value", "truncation_values", "bootstrap_values")
OBS_CLIP_KEYS = ("obs_clip", "clip_obs", "observation_clip")


# -------------------------------------------------------------------------------------------------------------
# Helpers shared by the probes (also used by rlaudit.optimizer.probes)
# -------------------------------------------------------------------------------------------------------------


def env_spaces(subject: Any, config: dict[str, Any], seed: int) -> tuple[Any, Any]:
    """The single-environment observation and action spaces of the subject's ``make_env`` (env closed)."""
    env = subject.make_env(config, seed)
    try:
        obs_space = getattr(env, "single_observation_space", None) or env.observation_space
        act_space = getattr(env, "single_action_space", None) or env.action_space
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()
    return obs_space, act_space


def space_info(obs_space: Any, act_space: Any) -> dict[str, Any]:
    return {
        "obs_array": array_space(obs_space),
        "obs_shape": [int(s) for s in getattr(obs_space, "shape", ()) or ()],
        "n_actions": int(act_space.n) if hasattr(act_space, "n") else None,
        "obs_space": repr(obs_space),
        "action_space": repr(act_space),
    }


def to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _accepts(fn: Any, name: str) -> bool:
    params = inspect.signature(fn).parameters
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _first_accepted(fn: Any, names: tuple[str, ...]) -> str | None:
    params = inspect.signature(fn).parameters
    for name in names:
        if name in params:
            return name
    return None


def state_arrays(policy: Any) -> dict[str, np.ndarray]:
    """``state_dict()`` as float/int numpy arrays (what a shared-weights file holds)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in policy.state_dict().items()}


def load_shared_weights(policy: Any, arrays: dict[str, np.ndarray]) -> str | None:
    """Load shared weights when names and shapes match exactly; else say why not (and load nothing)."""

    own = policy.state_dict()
    if set(own) != set(arrays):
        extra, missing = sorted(set(arrays) - set(own)), sorted(set(own) - set(arrays))
        return f"parameter names differ (not in this network: {extra[:4]}; not shared: {missing[:4]})"
    bad = [k for k in own if tuple(own[k].shape) != tuple(arrays[k].shape)]
    if bad:
        return f"parameter shapes differ: {', '.join(f'{k} {tuple(own[k].shape)} vs {arrays[k].shape}' for k in bad[:4])}"
    policy.load_state_dict({k: to_device(arrays[k], own[k].device, own[k].dtype) for k in own}, strict=True)
    return None


def obs_normalizer(config: dict[str, Any], extras: dict[str, Any] | None) -> Any:
    """A function normalizing raw observations as the checkpoint's running statistics say (identity if none)."""
    rms = (extras or {}).get("obs_rms")
    if not isinstance(rms, dict) or "mean" not in rms or "var" not in rms:
        return lambda x: np.asarray(x, dtype=np.float32)
    from rlaudit.flatdiff import flatten

    clip = next(
        (
            float(v)
            for k, v in flatten(config).items()
            if k.rsplit(".", 1)[-1] in OBS_CLIP_KEYS and isinstance(v, int | float)
        ),
        10.0,
    )
    mean = np.asarray(to_numpy(rms["mean"]), dtype=np.float64)
    std = np.sqrt(np.asarray(to_numpy(rms["var"]), dtype=np.float64) + 1e-8)
    return lambda x: np.clip((np.asarray(x, dtype=np.float64) - mean) / std, -clip, clip).astype(np.float32)


def has_policy_api(policy: Any) -> bool:
    return callable(getattr(policy, "get_action_and_value", None))


def action_probs(policy: Any, obs: np.ndarray, n_actions: int) -> np.ndarray:
    """(B, n_actions) action probabilities from ``get_action_and_value(obs, action)`` log-probabilities."""
    import torch

    x = to_device(obs, module_device(policy), torch.float32)
    cols = []
    with torch.no_grad():
        for a in range(n_actions):
            _, logprob, _, _ = policy.get_action_and_value(
                x, torch.full((x.shape[0],), a, dtype=torch.long, device=x.device)
            )
            cols.append(to_numpy(logprob).reshape(-1))
    return np.exp(np.stack(cols, axis=1))


def policy_values(policy: Any, obs: np.ndarray) -> np.ndarray:
    import torch

    x = to_device(obs, module_device(policy), torch.float32)
    with torch.no_grad():
        if callable(getattr(policy, "get_value", None)):
            return to_numpy(policy.get_value(x)).reshape(-1).astype(np.float64)
        _, _, _, value = policy.get_action_and_value(x)
    return to_numpy(value).reshape(-1).astype(np.float64)


def gradient_rows(policy: Any, term: str) -> list[dict[str, Any]]:
    """Per-parameter gradient statistics after a ``backward()``: one row per trainable parameter."""
    rows = []
    for name, p in policy.named_parameters():
        if not p.requires_grad:
            continue
        g = p.grad
        rows.append(
            {
                "term": term,
                "parameter": name,
                "numel": int(p.numel()),
                "grad_norm": float(g.detach().norm()) if g is not None else 0.0,
                "grad_max_abs": float(g.detach().abs().max()) if g is not None and g.numel() else 0.0,
                "grad_is_none": g is None,
            }
        )
    return rows


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    return {k: [r.get(k) for r in rows] for k in keys}


def scalar_terms(out: dict[str, Any]) -> dict[str, float]:
    """The scalar entries of a ``compute_loss`` result as floats (tensors of more than one element skipped).

    Raises:
        KeyError: The result has no ``loss`` entry (the subject contract needs one).
    """
    if "loss" not in out:
        raise KeyError(f"compute_loss returned {sorted(out)}; the subject contract needs a 'loss' entry")
    terms: dict[str, float] = {}
    for key, value in out.items():
        scalar = value.detach() if hasattr(value, "detach") else value
        if hasattr(scalar, "numel") and scalar.numel() != 1:
            continue
        try:
            terms[key] = float(scalar)
        except (TypeError, ValueError):
            continue
    return terms


def loss_and_gradients(
    subject: Any, config: dict[str, Any], policy: Any, batch: dict[str, Any]
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """The subject's loss terms on ``batch`` and per-parameter gradient norms of the total and of each term.

    Returns:
        ``(terms, rows)``: terms are the scalar entries of ``compute_loss``'s dict; rows carry ``term``
        (``loss`` for the total, else the term's name), ``parameter``, ``grad_norm``, ... (see
        :func:`gradient_rows`).
    """

    def compute() -> dict[str, Any]:
        policy.zero_grad(set_to_none=True)
        return subject.compute_loss(config, policy, batch)

    out = compute()
    terms = scalar_terms(out)
    out["loss"].backward()
    rows = gradient_rows(policy, "loss")
    for term in ("policy_loss", "value_loss", "entropy"):
        out = compute()
        value = out.get(term)
        if value is None or not getattr(value, "requires_grad", False):
            continue
        value.backward()
        rows.extend(gradient_rows(policy, term))
    policy.zero_grad(set_to_none=True)
    return terms, rows


def batch_tensors(
    arrays: dict[str, np.ndarray], device: Any = "cpu", action_space: Any = None
) -> dict[str, Any]:
    """A staged batch as tensors on ``device`` (the policy's: :func:`rlaudit.devices.module_device`): actions as
    :func:`action_tensor` gives them for ``action_space``, the rest as float32."""
    out: dict[str, Any] = {}
    for key, value in arrays.items():
        if key == "actions":
            out[key] = action_tensor(value, action_space, device)
        else:
            out[key] = to_device(np.asarray(value, dtype=np.float32), device)
    return out


def action_tensor(actions: Any, space: Any, device: Any = "cpu") -> Any:
    """Actions as a policy takes them: int64 for a discrete space (or an unknown one), float32 of shape
    (B, *space.shape) for a continuous one.

    A staged batch holds one action per row, (B,), whatever the space; passed as (B,) to a Gaussian over a
    (B, 1) mean, ``log_prob`` broadcasts to (B, B) and its sum over the last axis adds up every row's action (an
    SB3 PPO with gSDE got log-probabilities of -1,216 where its own were -2.4, and a policy loss of NaN). A (B,)
    array for a continuous space is taken as the same value on every action dimension.
    """
    import torch

    shape = tuple(getattr(space, "shape", None) or ())
    dtype = getattr(space, "dtype", None)
    if space is None or dtype is None or np.issubdtype(np.dtype(dtype), np.integer):
        return to_device(actions, device, torch.long)
    a = np.asarray(actions, dtype=np.float32)
    if a.ndim == 1 and shape:  # one value per row: the same on every action dimension
        a = np.broadcast_to(a.reshape(-1, *(1,) * len(shape)), (len(a), *shape))
    return to_device(np.ascontiguousarray(a), device, torch.float32)


# -------------------------------------------------------------------------------------------------------------
# Advantages
# -------------------------------------------------------------------------------------------------------------


@probe(requires=("config", "compute_advantages"), version=1)
def advantages(ctx: ProbeContext, *, inputs: str) -> dict:
    """Run the subject's ``compute_advantages`` on staged inputs (see :func:`rlaudit.loss.gae.make_gae_inputs`).

    Truncations reach the subject in one of three ways, recorded as ``mode``:

    - ``kwargs``: its ``compute_advantages`` takes truncation flags and final values (``truncated=`` and
      ``final_values=``, or a close name), so its own truncation handling is tested;
    - ``folded``: it takes only ``dones``; the truncation bootstrap ``gamma * V(final_obs)`` is added to the
      rewards with the config's gamma, as the caller of such a function does;
    - ``terminations``: no gamma in the config either; truncations are passed as plain episode ends.

    Writes ``advantages.npz``: ``advantages``, ``returns`` (T, N) and the arrays the subject was given.
    """
    arrays = staged.load(inputs)
    discount = find_discount(ctx.config)
    fn = ctx.subject.compute_advantages
    rewards = arrays["rewards"]
    kwargs: dict[str, Any] = {}
    trunc_name = _first_accepted(fn, TRUNCATED_KWARGS)
    final_name = _first_accepted(fn, FINAL_VALUE_KWARGS)
    if trunc_name and final_name:
        mode = "kwargs"
        kwargs = {trunc_name: arrays["truncated"], final_name: arrays["final_values"]}
    else:
        rewards, mode = _without_truncation_flags(arrays, discount)
    adv, ret = fn(ctx.config, rewards, arrays["values"], arrays["dones"], arrays["next_value"], **kwargs)
    adv_np, ret_np = to_numpy(adv).astype(np.float64), to_numpy(ret).astype(np.float64)
    passed = {
        "rewards": rewards,
        "values": arrays["values"],
        "dones": arrays["dones"],
        "next_value": arrays["next_value"],
    }
    if mode == "kwargs":
        passed.update(truncated=arrays["truncated"], final_values=arrays["final_values"])
    ctx.write_npz("advantages", advantages=adv_np, returns=ret_np, **passed)
    return _estimator_result(mode, discount, adv_np, adv)


def _without_truncation_flags(arrays: dict[str, Any], discount: dict[str, Any]) -> tuple[np.ndarray, str]:
    """The rewards for an estimator that takes no truncation flags, and how truncations reach it: ``folded``
    (the bootstrap ``gamma * V(final_obs)`` added to the rewards with the config's gamma) or ``terminations``
    (no gamma in the config: truncations are plain episode ends)."""
    if discount["gamma"] is None:
        return arrays["rewards"], "terminations"
    folded = fold_truncation(
        arrays["rewards"], arrays["truncated"], arrays["final_values"], discount["gamma"]
    )
    return folded, "folded"


def _estimator_result(mode: str, discount: dict[str, Any], answer: np.ndarray, returned: Any) -> dict:
    """What the advantage probes return: how truncations were passed, the discount found, the answer's shape
    and the type the subject returned."""
    return {
        "mode": mode,
        "gamma": discount["gamma"],
        "gamma_key": discount["gamma_key"],
        "gae_lambda": discount["gae_lambda"],
        "lambda_key": discount["lambda_key"],
        "shape": list(answer.shape),
        "returned_type": type(returned).__module__ + "." + type(returned).__name__,
    }


@probe(requires=("config", "compute_lambda_returns"), version=1)
def lambda_returns(ctx: ProbeContext, *, inputs: str) -> dict:
    """A sequence learner's ``compute_lambda_returns`` on the staged GAE inputs, written as :func:`advantages`
    writes a ``compute_advantages`` answer, so the same estimator matching reads it.

    The staged inputs are put in the sequence convention: ``continues = 1 - dones`` (0 after a step that ended
    the episode, by termination or truncation), ``bootstrap = next_value`` (``V`` of the state after the last
    step). The convention has no truncation flags, so truncations reach the subject as in :func:`advantages`'
    ``folded`` mode: ``gamma * V(final_obs)`` added to the rewards with the config's gamma (``terminations``
    when the config names no gamma: truncations are plain episode ends). Advantages are read as
    ``returns - values``.

    Writes ``advantages.npz``: ``advantages``, ``returns`` (T, N) and the arrays in GAE's convention
    (``rewards`` as passed, ``values``, ``dones``, ``next_value``).

    Raises:
        ValueError: The returns are not (T, N), the shape of ``rewards``.
    """
    arrays = staged.load(inputs)
    discount = find_discount(ctx.config)
    rewards, mode = _without_truncation_flags(arrays, discount)
    continues = (1.0 - np.asarray(arrays["dones"], dtype=np.float32)).astype(np.float32)
    ret = ctx.subject.compute_lambda_returns(
        ctx.config, rewards, arrays["values"], continues, arrays["next_value"]
    )
    ret_np = to_numpy(ret).astype(np.float64)
    if ret_np.shape != rewards.shape:
        raise ValueError(
            f"compute_lambda_returns returned shape {tuple(ret_np.shape)} for rewards of shape {rewards.shape}; "
            "expected (T, B), one return per step: with a sequence of T steps whose last only bootstraps, call "
            "your lambda-return function with the values of the T steps and V of the state after them as "
            "`bootstrap`"
        )
    values = np.asarray(arrays["values"], dtype=np.float64)
    ctx.write_npz(
        "advantages",
        advantages=ret_np - values,
        returns=ret_np,
        rewards=rewards,
        values=arrays["values"],
        dones=arrays["dones"],
        next_value=arrays["next_value"],
    )
    return {**_estimator_result(mode, discount, ret_np, ret), "capability": "compute_lambda_returns"}


# -------------------------------------------------------------------------------------------------------------
# The shared network and batch
# -------------------------------------------------------------------------------------------------------------


@probe(requires=("config", "make_env", "make_policy"), version=2)
def policy_snapshot(ctx: ProbeContext, *, seed: int = 0) -> dict:
    """The subject's freshly initialized network (``torch.manual_seed(seed)``): weights and parameter table.

    Writes ``weights.npz`` (the ``state_dict`` as arrays) and ``parameters`` (name, shape, numel,
    requires_grad).
    """
    import torch

    obs_space, act_space = env_spaces(ctx.subject, ctx.config, seed)
    torch.manual_seed(seed)
    policy = ctx.subject.make_policy(ctx.config, obs_space, act_space)
    ctx.write_npz("weights", state_arrays(policy))
    rows = [
        {
            "parameter": n,
            "shape": "x".join(map(str, p.shape)),
            "numel": int(p.numel()),
            "requires_grad": bool(p.requires_grad),
        }
        for n, p in policy.named_parameters()
    ]
    ctx.write_table("parameters", _columns(rows) if rows else {"parameter": []})
    return {
        **space_info(obs_space, act_space),
        "n_params": sum(r["numel"] for r in rows),
        "policy_api": has_policy_api(policy),
        "policy_class": type(policy).__qualname__,
    }


@probe(requires=("config", "make_env", "make_policy"), version=2)
def policy_outputs(ctx: ProbeContext, *, obs: str, weights: str | None = None, seed: int = 0) -> dict:
    """Values and log-probabilities of the (shared-weight) network on staged observations and actions.

    Used on the baseline to build a batch whose value targets sit near the value predictions and whose
    behaviour log-probabilities are the network's own (importance ratio 1), as late in training.

    Writes ``outputs.npz``: ``values`` (B,), ``logprobs`` (B,) (empty when the policy lacks the interface).
    """
    import torch

    arrays = staged.load(obs)
    obs_space, act_space = env_spaces(ctx.subject, ctx.config, seed)
    torch.manual_seed(seed)
    policy = ctx.subject.make_policy(ctx.config, obs_space, act_space)
    not_loaded = load_shared_weights(policy, staged.load(weights)) if weights else None
    if not has_policy_api(policy):
        ctx.write_npz("outputs", values=np.zeros(0), logprobs=np.zeros(0))
        return {"policy_api": False, "weights_not_loaded": not_loaded}
    x = to_device(arrays["obs"], module_device(policy), torch.float32)
    with torch.no_grad():
        _, logprob, _, value = policy.get_action_and_value(
            x, action_tensor(arrays["actions"], act_space, x.device)
        )
    ctx.write_npz("outputs", values=to_numpy(value).reshape(-1), logprobs=to_numpy(logprob).reshape(-1))
    return {"policy_api": True, "weights_not_loaded": not_loaded}


@probe(requires=("config", "make_env", "make_policy", "compute_loss"), version=2)
def loss_terms(ctx: ProbeContext, *, batch: str, weights: str | None = None, seed: int = 0) -> dict:
    """The subject's loss terms and per-parameter gradients on a staged batch, with shared weights if possible.

    Args:
        batch: Staged ``obs`` (B, *obs_shape), ``actions`` (B,), ``logprobs``, ``advantages``, ``returns``,
            ``values`` (B,).
        weights: Staged ``state_dict`` arrays to load (names and shapes must match; otherwise the network
            keeps its own seeded init and the result says why).
        seed: ``torch.manual_seed`` before ``make_policy``.

    Writes ``terms.json`` and ``gradients`` (term, parameter, numel, grad_norm, grad_max_abs, grad_is_none).
    """
    import torch

    obs_space, act_space = env_spaces(ctx.subject, ctx.config, seed)
    torch.manual_seed(seed)
    policy = ctx.subject.make_policy(ctx.config, obs_space, act_space)
    not_loaded = load_shared_weights(policy, staged.load(weights)) if weights else "no shared weights given"
    terms, rows = loss_and_gradients(
        ctx.subject, ctx.config, policy, batch_tensors(staged.load(batch), module_device(policy), act_space)
    )
    ctx.write_json("terms", terms)
    ctx.write_table("gradients", _columns(rows))
    return {"terms": terms, "shared_weights": not_loaded is None, "weights_not_loaded": not_loaded}


@probe(requires=("config", "make_env", "make_policy", "compute_loss"), version=2)
def term_sweep(ctx: ProbeContext, *, batches: str, weights: str | None = None, seed: int = 0) -> dict:
    """The subject's loss terms on several staged batches, one network (with shared weights if possible).

    The audit solves the coefficient of each term from them (the total against the terms over the batches).

    Args:
        batches: Staged arrays named ``b<k>_<name>`` for batches k = 0, 1, ...; names as in
            :func:`loss_terms`' batch (``obs``, ``actions``, ``logprobs``, ``advantages``, ``returns``,
            ``values``).
        weights: Staged ``state_dict`` arrays to load (names and shapes must match; otherwise the network keeps
            its own seeded init and the result says why).
        seed: ``torch.manual_seed`` before ``make_policy``.

    Writes ``terms.json``: one ``{term: value}`` dict per batch, in batch order.
    """
    import torch

    obs_space, act_space = env_spaces(ctx.subject, ctx.config, seed)
    torch.manual_seed(seed)
    policy = ctx.subject.make_policy(ctx.config, obs_space, act_space)
    not_loaded = load_shared_weights(policy, staged.load(weights)) if weights else "no shared weights given"
    groups: dict[int, dict[str, np.ndarray]] = {}
    for key, value in staged.load(batches).items():
        index, _, name = key[1:].partition("_")
        groups.setdefault(int(index), {})[name] = value
    rows = []
    for index in sorted(groups):
        batch = batch_tensors(groups[index], module_device(policy), act_space)
        rows.append(scalar_terms(ctx.subject.compute_loss(ctx.config, policy, batch)))
        policy.zero_grad(set_to_none=True)
    ctx.write_json("terms", rows)
    return {"batches": len(rows), "shared_weights": not_loaded is None, "weights_not_loaded": not_loaded}


# -------------------------------------------------------------------------------------------------------------
# A batch from real rollouts
# -------------------------------------------------------------------------------------------------------------


def as_vector_env(env: Any) -> Any:
    """``env`` itself when it is a vector env, else a one-environment ``SyncVectorEnv`` around it.

    A plain ``gymnasium.Env`` from ``make_env`` is allowed by the subject contract; wrapped like this, with
    same-step autoreset, its episode ends hand over the final observation as a vector env's do (see
    :func:`rlaudit.gymcompat.final_observations`), so the rollout below reads both alike.
    """
    from rlaudit.env.rollout import is_vector_env

    if is_vector_env(env):
        return env
    import gymnasium as gym

    if gymcompat.legacy_vector_api():  # 0.29 resets in the same step; it takes no autoreset_mode
        return gym.vector.SyncVectorEnv([lambda: env])
    return gym.vector.SyncVectorEnv([lambda: env], autoreset_mode=gymcompat.same_step_mode())


def array_space(space: Any) -> bool:
    """True for an observation space whose observations are one array (Box, Discrete, MultiDiscrete, ...),
    False for a Dict or Tuple space (observations are mappings or tuples of arrays)."""
    return getattr(space, "shape", None) is not None


@probe(requires=("config", "make_env", "make_policy", "compute_advantages", "compute_loss"), version=4)
def rollout_loss(
    ctx: ProbeContext, *, seed: int = 0, steps: int = 2048, checkpoint: str | None = None
) -> dict:
    """Roll out the subject's own env and policy, then its loss terms and gradients on that batch.

    Args:
        seed: Seed of the environment and of ``torch.manual_seed``.
        steps: Environment steps to collect (all environments together; at least one step per env).
        checkpoint: A checkpoint of a shared training run, relative to the cache root (a trained policy's
            rollouts have value targets near its predictions, as late in training); None uses a fresh policy.

    A plain ``gymnasium.Env`` is rolled out as a vector env of one (:func:`as_vector_env`).

    Writes ``terms.json``, ``gradients`` and ``batch_stats.json`` (value-target error, advantage spread);
    nothing for a Dict or Tuple observation space (the result's ``unsupported`` says so).
    """
    import torch

    torch.manual_seed(seed)
    env = as_vector_env(ctx.subject.make_env(ctx.config, seed))
    try:
        obs_space = getattr(env, "single_observation_space", None) or env.observation_space
        act_space = getattr(env, "single_action_space", None) or env.action_space
        if not array_space(obs_space):
            # the batch below is a float array of observations, which a Dict or Tuple space does not give
            return {"policy_api": True, "unsupported": f"a {type(obs_space).__name__} observation space"}
        extras: dict[str, Any] | None = None
        if checkpoint is not None and ctx.has("load_checkpoint"):
            policy, extras = ctx.subject.load_checkpoint(ctx.config, str(staged.resolve(checkpoint)))
        else:
            policy = ctx.subject.make_policy(ctx.config, obs_space, act_space)
        if not has_policy_api(policy):
            return {"policy_api": False}
        normalize = obs_normalizer(ctx.config, extras)
        gamma = find_discount(ctx.config)["gamma"]
        num_envs = int(env.num_envs)
        horizon = max(2, int(steps) // num_envs)
        raw, _ = env.reset(seed=seed)
        obs_list, act_list, logp_list, val_list, rew_list, done_list = [], [], [], [], [], []
        for _ in range(horizon):
            x = normalize(np.asarray(raw, dtype=np.float32).reshape(num_envs, -1))
            with torch.no_grad():
                action, logprob, _, value = policy.get_action_and_value(to_device(x, module_device(policy)))
            a = to_numpy(action)
            raw, reward, terminated, truncated, info = env.step(a)
            reward = np.asarray(reward, dtype=np.float32)
            cut = np.logical_and(truncated, np.logical_not(terminated))
            given, finals = gymcompat.final_observations(info, num_envs)
            cut = cut & given  # a truncated step without its final observation cannot be bootstrapped
            if cut.any() and gamma is not None:
                rows = np.stack(
                    [np.asarray(finals[i], dtype=np.float32).reshape(-1) for i in np.flatnonzero(cut)]
                )
                v_final = policy_values(policy, normalize(rows))
                reward = reward.copy()
                reward[cut] += gamma * v_final.astype(np.float32)
            obs_list.append(x)
            act_list.append(a)
            logp_list.append(to_numpy(logprob).reshape(-1))
            val_list.append(to_numpy(value).reshape(-1))
            rew_list.append(reward)
            done_list.append(np.logical_or(terminated, truncated).astype(np.float32))
        next_value = policy_values(policy, normalize(np.asarray(raw, dtype=np.float32).reshape(num_envs, -1)))
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()
    values = np.stack(val_list).astype(np.float32)
    adv, ret = ctx.subject.compute_advantages(
        ctx.config, np.stack(rew_list), values, np.stack(done_list), next_value.astype(np.float32)
    )
    adv_np, ret_np = to_numpy(adv).reshape(-1), to_numpy(ret).reshape(-1)
    batch = {
        "obs": np.concatenate(obs_list, axis=0),
        "actions": np.concatenate(act_list, axis=0),
        "logprobs": np.concatenate(logp_list),
        "advantages": adv_np,
        "returns": ret_np,
        "values": values.reshape(-1),
    }
    terms, grad_rows = loss_and_gradients(
        ctx.subject, ctx.config, policy, batch_tensors(batch, module_device(policy), act_space)
    )
    stats = {
        "samples": len(adv_np),
        "value_target_rmse": float(np.sqrt(np.mean((ret_np - values.reshape(-1)) ** 2))),
        "advantage_std": float(np.std(adv_np)),
        "return_mean": float(np.mean(ret_np)),
        "checkpoint": checkpoint,
    }
    ctx.write_json("terms", terms)
    ctx.write_json("batch_stats", stats)
    ctx.write_table("gradients", _columns(grad_rows))
    return {"policy_api": True, "terms": terms, **stats}


# -------------------------------------------------------------------------------------------------------------
# Probe environments
# -------------------------------------------------------------------------------------------------------------


@probe(requires=("config", "train", "checkpoints", "load_checkpoint"), version=1)
def probe_env_run(ctx: ProbeContext, *, probe: str, steps: int, seed: int = 0) -> dict:
    """Train the subject on one probe environment (``train(..., env_fn=...)``) and judge what it learned.

    The final checkpoint (the subject's own pick, ``checkpoints(config, run_dir)[0]``) is loaded with
    ``load_checkpoint`` and its value and action probabilities read on every probe state
    (:func:`rlaudit.loss.envs.eval_observations`), normalized with the checkpoint's ``obs_rms`` if it has
    one; :func:`rlaudit.loss.envs.judge` decides.

    Returns:
        ``supported`` (False when ``train`` takes no ``env_fn``), ``passed``, ``value_error``, ``p_good``,
        ``reason``, ``values``, ``probs``, ``gamma``, ``episodes``.
    """
    from rlaudit.loss.envs import eval_observations, judge, make_probe_env
    from rlaudit.recorder import Recorder

    if not _accepts(ctx.subject.train, "env_fn"):
        return {"supported": False, "reason": "train() takes no env_fn= (the environment cannot be replaced)"}
    run_dir = ctx.path("run")
    run_dir.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(run_dir)
    try:
        ctx.subject.train(
            ctx.config, int(steps), int(seed), recorder, env_fn=functools.partial(make_probe_env, probe)
        )
    finally:
        recorder.close()
    fn = ctx.subject.checkpoints
    paths = list(fn(ctx.config, run_dir=str(run_dir)) if _accepts(fn, "run_dir") else fn(ctx.config))
    if not paths:
        return {"supported": True, "passed": False, "reason": "train() wrote no checkpoint to evaluate"}
    policy, extras = ctx.subject.load_checkpoint(ctx.config, paths[0])
    if not has_policy_api(policy):
        return {"supported": False, "reason": "the policy has no get_action_and_value(obs, action)"}
    obs = obs_normalizer(ctx.config, extras)(eval_observations(probe))
    from rlaudit.loss.envs import PROBES

    values = policy_values(policy, obs)
    probs = action_probs(policy, obs, PROBES[probe].n_actions)
    gamma = find_discount(ctx.config)["gamma"]
    verdict = judge(probe, values, probs, gamma if gamma is not None else 0.99)
    episodes = 0
    summary = Path(run_dir / "summary.json")
    if summary.exists():
        import json

        episodes = int(json.loads(summary.read_text()).get("episodes", 0))
    return {
        "supported": True,
        **verdict,
        "values": [float(v) for v in values],
        "probs": [[float(p) for p in row] for row in probs],
        "gamma": gamma,
        "episodes": episodes,
        "value_error": float(verdict["value_error"]) if math.isfinite(verdict["value_error"]) else None,
    }


# -------------------------------------------------------------------------------------------------------------
# TD targets of off-policy learners (loss/td-targets)
# -------------------------------------------------------------------------------------------------------------

TD_CASES = (
    "base",
    "rewards_0",
    "rewards_1",
    "terminated",
    "truncated",
    "next_obs",
    "obs",
    "target",
    "online",
)
"""The controlled batches of :func:`td_targets`: the base batch, then one change each (see the probe)."""


def sample_space(space: Any, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` samples of a Box or Discrete space from ``rng`` (uniform within finite bounds, else normal)."""
    if hasattr(space, "n") and not getattr(space, "shape", None):
        return rng.integers(0, int(space.n), n)
    shape = (n, *space.shape)
    low = np.broadcast_to(np.asarray(space.low, dtype=np.float64), space.shape)
    high = np.broadcast_to(np.asarray(space.high, dtype=np.float64), space.shape)
    finite = np.isfinite(low) & np.isfinite(high)
    out = rng.normal(size=shape)
    uniform = low + (high - low) * rng.random(shape)
    out = np.where(finite, uniform, out)
    return out.astype(getattr(space, "dtype", np.float32) or np.float32)


def _prefixed(named: dict[str, Any], prefixes: Any) -> list[Any]:
    return [p for n, p in named.items() if any(n == x or n.startswith(x + ".") for x in prefixes)]


def _perturb(params: list[Any], rng: np.random.Generator, scale: float) -> None:
    import torch

    with torch.no_grad():
        for p in params:
            noise = torch.as_tensor(rng.normal(size=tuple(p.shape)), dtype=p.dtype, device=p.device)
            p.add_(noise * scale * (float(p.detach().float().std()) if p.numel() > 1 else 1.0) + noise * 1e-2)


@probe(requires=("config", "make_env", "make_policy", "compute_td_targets"), version=2)
def td_targets(ctx: ProbeContext, *, seed: int = 0, batch_size: int = 64) -> dict:
    """Drive the subject's ``compute_td_targets`` with controlled batches and record what moves its targets.

    A freshly built policy (``torch.manual_seed(seed)``) whose target networks are first moved away from the
    online ones (as they are between two copies), then one base batch (rewards 0/1, no episode end) and one
    change each: every reward 0, every reward 1, every transition terminated, every transition truncated, other
    next observations, other observations, the target networks' parameters perturbed, the online networks'
    parameters perturbed. Writes the ``td_cases`` table (case, row, target) and, when the subject reports them,
    the ``td_bootstrap`` table (its next-state values of the base batch) and the ``td_terms`` table: per case
    and row each target critic's next-state value (``next_q_0`` ...; ``next_q``, shape (B, n_critics)) and the
    next action's log-probability (``next_log_prob``, NaN where not reported); the reported entropy
    coefficient (``ent_coef``) goes into the result.
    """
    import torch

    obs_space, act_space = env_spaces(ctx.subject, ctx.config, seed)
    torch.manual_seed(seed)
    policy = ctx.subject.make_policy(ctx.config, obs_space, act_space)
    rng = np.random.default_rng(seed)
    mapping = (
        dict(ctx.subject.target_networks(ctx.config, policy) or {}) if ctx.has("target_networks") else {}
    )
    named = dict(policy.named_parameters())
    target_params = _prefixed(named, mapping)
    online_params = _prefixed(named, mapping.values()) if mapping else list(named.values())
    _perturb(target_params, rng, 0.5)  # a target network some updates behind the online one

    n = int(batch_size)
    base = {
        "obs": sample_space(obs_space, rng, n),
        "actions": sample_space(act_space, rng, n),
        "rewards": rng.integers(0, 2, n).astype(np.float32),
        "next_obs": sample_space(obs_space, rng, n),
        "terminated": np.zeros(n, dtype=bool),
        "truncated": np.zeros(n, dtype=bool),
        "seed": int(seed),
    }
    others = {"obs": sample_space(obs_space, rng, n), "next_obs": sample_space(obs_space, rng, n)}
    device = next(iter(named.values())).device if named else None

    reported: dict[str, Any] = {}
    terms: dict[str, dict[str, np.ndarray]] = {}

    def column(out: dict[str, Any], key: str, width: int | None) -> np.ndarray | None:
        if out.get(key) is None:
            return None
        value = to_numpy(out[key]).astype(np.float64)
        if value.size != n * (width or 1) and width is not None:
            raise ValueError(
                f"compute_td_targets returned {key!r} of shape {value.shape}; expected ({n},"
                f"{' n_critics' if key == 'next_q' else ''}) for a batch of {n}"
            )
        return value.reshape(n, -1)

    def run(batch: dict[str, Any], case: str | None = None) -> dict[str, np.ndarray]:
        out = ctx.subject.compute_td_targets(ctx.config, policy, dict(batch))
        if not isinstance(out, dict) or "targets" not in out:
            raise TypeError(
                f"compute_td_targets must return a dict with 'targets' (an array of shape ({n},)), got "
                f"{type(out).__name__}"
            )
        next_q = out.get("next_q")
        critics = to_numpy(next_q).size // n if next_q is not None else None
        q = column(out, "next_q", critics)
        log_prob = column(out, "next_log_prob", 1)
        if case is not None and (q is not None or log_prob is not None):
            terms[case] = {
                **{f"next_q_{i}": q[:, i] for i in range(q.shape[1] if q is not None else 0)},
                "next_log_prob": log_prob[:, 0] if log_prob is not None else np.full(n, np.nan),
            }
        if out.get("ent_coef") is not None:
            reported["ent_coef"] = float(to_numpy(out["ent_coef"]).reshape(-1)[0])
        return {k: column(out, k, 1).mean(axis=1) for k in ("targets", "bootstrap") if out.get(k) is not None}

    def perturbed(params: list[Any], case: str) -> np.ndarray:
        saved = [p.detach().clone() for p in params]
        _perturb(params, np.random.default_rng(seed + 1), 0.5)
        try:
            return run(base, case)["targets"]
        finally:
            with torch.no_grad():
                for p, s in zip(params, saved, strict=True):
                    p.copy_(s)

    first = run(base, "base")
    cases = {
        "base": first["targets"],
        "rewards_0": run({**base, "rewards": np.zeros(n, np.float32)}, "rewards_0")["targets"],
        "rewards_1": run({**base, "rewards": np.ones(n, np.float32)}, "rewards_1")["targets"],
        "terminated": run({**base, "terminated": np.ones(n, dtype=bool)})["targets"],
        "truncated": run({**base, "truncated": np.ones(n, dtype=bool)})["targets"],
        "next_obs": run({**base, "next_obs": others["next_obs"]}, "next_obs")["targets"],
        "obs": run({**base, "obs": others["obs"]}, "obs")["targets"],
        "target": perturbed(target_params, "target") if target_params else np.full(n, np.nan),
        "online": perturbed(online_params, "online"),
    }
    ctx.write_table(
        "td_cases",
        {
            "case": [c for c in TD_CASES for _ in range(n)],
            "row": [i for _ in TD_CASES for i in range(n)],
            "target": np.concatenate([cases[c] for c in TD_CASES]).tolist(),
            "reward": np.tile(base["rewards"].astype(np.float64), len(TD_CASES)).tolist(),
        },
    )
    bootstrap = first.get("bootstrap")
    if bootstrap is not None:
        ctx.write_table("td_bootstrap", {"row": list(range(n)), "bootstrap": bootstrap.tolist()})
    widths = {len(t) for t in terms.values()}
    if len(widths) > 1:
        raise ValueError(
            f"compute_td_targets returned next_q with a varying number of critics ({sorted(widths)})"
        )
    if terms:
        named = [c for c in TD_CASES if c in terms]
        ctx.write_table(
            "td_terms",
            {
                "case": [c for c in named for _ in range(n)],
                "row": [i for _ in named for i in range(n)],
                **{k: np.concatenate([terms[c][k] for c in named]).tolist() for k in terms[named[0]]},
            },
        )
    any_terms = next(iter(terms.values()), {})
    return {
        "critics_reported": sum(k.startswith("next_q_") for k in any_terms),
        "log_prob_reported": bool(any_terms) and bool(np.isfinite(any_terms["next_log_prob"]).all()),
        "ent_coef": reported.get("ent_coef"),
        "batch_size": n,
        "target_networks": mapping,
        "target_tensors": len(target_params),
        "bootstrap_reported": bootstrap is not None,
        "device": str(device) if device is not None else None,
        **space_info(obs_space, act_space),
    }


# -------------------------------------------------------------------------------------------------------------
# The loss applied to the TD error (loss/td-loss-form)
# -------------------------------------------------------------------------------------------------------------

TD_LOSS_SHIFTS = (0.0, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0, 1000.0)
"""The shifts of every target (each with both signs) at which :func:`td_loss` evaluates the loss."""
TD_LOSS_SEARCH = 60
"""Golden-section steps of the search for the shift where the loss is least (the batch's own TD error)."""


def _golden_min(fn: Any, lo: float, hi: float, steps: int) -> float:
    """The argmin of a convex ``fn`` on ``[lo, hi]`` by golden-section search."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = fn(c), fn(d)
    for _ in range(steps):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = fn(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = fn(d)
    return (a + b) / 2.0


@probe(requires=("config", "make_env", "make_policy", "compute_td_targets", "compute_td_loss"), version=1)
def td_loss(ctx: ProbeContext, *, seed: int = 0, batch_size: int = 64) -> dict:
    """The subject's critic loss as a function of the TD error: ``compute_td_loss`` with every target shifted.

    A freshly built policy (``torch.manual_seed(seed)``) and one transition drawn as :func:`td_targets` draws
    its batch, repeated ``batch_size`` times: every row then has the same TD error, so the loss at a shift is
    the per-row loss at that error times the reduction's scale (a spread of errors would blur Huber's turn).
    The subject's own targets for it (``compute_td_targets``) are shifted by a common amount; the shift where
    the loss is least (the batch's TD error, found by golden-section search) is the centre, and the loss is
    then recorded at the centre plus and minus each of :data:`TD_LOSS_SHIFTS`. The probe never reads Q.

    Writes the ``td_loss`` table (``shift`` relative to the centre, ``loss``) and returns the centre, the
    batch size and the loss at the centre.

    Raises:
        TypeError: ``compute_td_loss`` returned something that is not one finite number.
        ValueError: The loss does not depend on the targets, or is least beyond a shift of 1000.
    """
    import torch

    obs_space, act_space = env_spaces(ctx.subject, ctx.config, seed)
    torch.manual_seed(seed)
    policy = ctx.subject.make_policy(ctx.config, obs_space, act_space)
    rng = np.random.default_rng(seed)
    n = int(batch_size)
    one = {
        "obs": sample_space(obs_space, rng, 1),
        "actions": sample_space(act_space, rng, 1),
        "rewards": rng.integers(0, 2, 1).astype(np.float32),
        "next_obs": sample_space(obs_space, rng, 1),
    }
    batch = {k: np.repeat(v, n, axis=0) for k, v in one.items()}
    batch.update(terminated=np.zeros(n, dtype=bool), truncated=np.zeros(n, dtype=bool), seed=int(seed))
    out = ctx.subject.compute_td_targets(ctx.config, policy, dict(batch))
    if not isinstance(out, dict) or "targets" not in out:
        raise TypeError(
            f"compute_td_targets must return a dict with 'targets' (shape ({n},)), got {type(out)}"
        )
    targets = to_numpy(out["targets"]).astype(np.float64).reshape(n, -1).mean(axis=1)

    def loss(shift: float) -> float:
        torch.manual_seed(seed)  # a loss that draws (dropout, noise) draws the same at every shift
        value = ctx.subject.compute_td_loss(
            ctx.config, policy, dict(batch), (targets + shift).astype(np.float32)
        )
        value = value.detach() if hasattr(value, "detach") else value
        try:
            number = float(to_numpy(value).reshape(()))
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"compute_td_loss must return the loss as one number (a float or a 0-d tensor), got "
                f"{type(value).__name__}"
            ) from exc
        if not math.isfinite(number):
            raise TypeError(f"compute_td_loss returned {number} at a target shift of {shift}")
        return number

    coarse = sorted({s * sign for s in TD_LOSS_SHIFTS for sign in (1.0, -1.0)})
    values = [loss(s) for s in coarse]
    if max(values) - min(values) <= 1e-12 * max(1.0, abs(max(values))):
        raise ValueError(
            "compute_td_loss gives the same loss whatever the targets: it must compute the critic loss "
            "against the targets it is given"
        )
    k = int(np.argmin(values))
    if k in (0, len(coarse) - 1):
        raise ValueError(
            f"the loss is least at a target shift of {coarse[k]:g} (the edge of the search): the TD error of "
            "a fresh network's batch should be far smaller"
        )
    centre = _golden_min(loss, coarse[k - 1], coarse[k + 1], TD_LOSS_SEARCH)
    shifts = sorted({s * sign for s in TD_LOSS_SHIFTS for sign in (1.0, -1.0)})
    ctx.write_table("td_loss", {"shift": shifts, "loss": [loss(centre + s) for s in shifts]})
    return {
        "batch_size": n,
        "centre": float(centre),
        "loss_at_centre": loss(centre),
        "device": str(module_device(policy)),
        **space_info(obs_space, act_space),
    }
