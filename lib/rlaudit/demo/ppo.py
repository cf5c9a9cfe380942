"""A compact PPO for the built-in subjects, readable top to bottom beside CleanRL's ``ppo.py``.

The math is importable (:func:`compute_gae`, :func:`ppo_loss`, :func:`explained_variance`, :func:`schedule`)
so tests and audits call it directly; :func:`train` is one loop: roll out ``num_steps`` steps in ``num_envs``
environments, compute GAE, run ``update_epochs`` epochs of minibatch updates, log, checkpoint.

The implementation details of Huang et al. 2022, "The 37 Implementation Details of Proximal Policy
Optimization" (https://iclr-blog-track.github.io/2022/03/25/ppo-implementation-details/), each a config field
with the usual default: vectorized rollout, GAE, per-minibatch advantage normalization, clipped surrogate,
value clipping, entropy bonus, global gradient clipping, Adam with eps 1e-5, orthogonal init, learning-rate
annealing (plus optional entropy and clip schedules), running observation normalization.

Truncation with SAME_STEP autoreset: the observation returned on the step an episode ends is already the next
episode's first observation, and the real last one is in ``info["final_obs"]``. A truncated episode did not
end in the MDP, so its last reward is bootstrapped with ``gamma * V(final_obs)``
(:func:`bootstrap_truncation`); then, like a termination, the step is marked done so GAE does not bootstrap
through the reset. A termination is never bootstrapped. (The policy does not change during a rollout, so the
final observations are kept and valued in one batch before GAE rather than one forward pass per step.)

Faults: :class:`PPOImpl` holds code paths that reproduce real regressions (its defaults are the correct
behaviour). They are not in the config: a real regression is a code change, not a setting.

Why one file of about 1,000 lines: like CleanRL's ``ppo.py``, this is meant to be read top to bottom in one
sitting, the math, the loop and the fault code paths beside the lines they change; split across modules, a
reader could no longer hold it next to CleanRL's file.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from rlaudit.demo import checkpoint as ckpt
from rlaudit.demo.agent import Agent
from rlaudit.demo.config import DemoConfig, OptimizerConfig, TrainerConfig
from rlaudit.devices import is_cuda, module_device, resolve_device, to_device

PPOConfig = TrainerConfig
"""The PPO settings (the ``trainer`` section); ARCHITECTURE.md's name for :class:`~rlaudit.demo.config.TrainerConfig`."""


@dataclass(frozen=True)
class PPOImpl:
    """Code paths of the trainer that reproduce real regressions; the defaults are the correct behaviour.

    Attributes:
        ignore_lr_schedule: The config asks for learning-rate annealing but the code that applies it is
            disabled; the runtime learning rate stays flat (cases 000/001).
        gae_bootstrap_current_value: GAE bootstraps from ``V(s_t)`` instead of ``V(s_{t+1})`` (case 003's
            lambda-returns bug).
        value_loss_floor: When set, the value loss is ``torch.max(floor, value_loss)``: below the floor the
            critic gets zero gradient (case 003's free-bits bug). ``VALUE_LOSS_FLOOR`` is a floor that bites on
            the arena (the value loss of the reference stays below it for most of training).
        skip_orthogonal_init: PyTorch's default initialization instead of the PPO scheme.
        num_envs_from_memory_heuristic: ``num_envs`` comes from an accelerator-memory heuristic
            (``int(memory_gb / 6)`` clamped to [8, 256], with an assumed 85 GB profile) instead of the config:
            14 environments (case 002).
        debug_batch_cut: A "debug mode", switched on by a platform check that is true whenever the trainer
            does not run on CUDA, cuts the rollout length (and so the batch) by ``DEBUG_BATCH_CUT`` (case 000).
        drop_tensorboard_scalars: The TensorBoard writer filters scalars by a namespace allow-list left over
            from an old metric naming: event files are created but hold zero scalars (case 002).
        return_window_bug: ``charts/episodic_return`` is a running mean over every episode since the start
            instead of the last ``return_window`` episodes (lags the truth while the agent improves).
        seed_torch: False calls ``torch.seed()`` (a non-deterministic seed; the name reads like
            ``manual_seed``) instead of ``torch.manual_seed(seed)``: init and sampling differ between runs
            with the same seed.
        checkpoint_key_prefix_mismatch: Loading maps checkpoint keys with a rename table written backwards,
            then ``load_state_dict(strict=False)``: the critic keeps its fresh init, and nothing is reported
            (case 002's 58 of 82 tensors).
        checkpoint_sort_lexicographic: Checkpoints are sorted by name as strings: ``model_9`` is picked over
            ``model_10`` as the latest.
        restore_obs_normalizer: False leaves the observation normalizer at its initial statistics when loading
            a checkpoint or resuming (case 002's normalization mismatch).
        minibatch_no_shuffle: The minibatch order is an index range where the per-epoch permutation was: every
            minibatch is a block of consecutive time steps (correlated samples), the same blocks in every epoch.
        value_loss_huber: The value loss is ``F.smooth_l1_loss`` (Huber, β = 1), taken for ½·MSE in a refactor:
            equal below an error of 1, linear above it (Stable-Baselines3's DQN regresses its TD target with
            ``F.smooth_l1_loss``; a value loss copied from there is no longer PPO's).
        ignore_clip_vloss: The value loss is never clipped around the rollout's values although the config asks
            for it (the switch is read from a key the rewritten config no longer has; case 000 lost its value-clip
            schedule in the same way).
        normalize_returns: The value targets are normalized per minibatch like the advantages, ``(R - mean) /
            std`` (the advantage-normalization line applied to the returns too), while GAE keeps reading the
            critic's outputs as raw returns (case 003's return normalization, done on the wrong tensor).
    """

    ignore_lr_schedule: bool = False
    gae_bootstrap_current_value: bool = False
    value_loss_floor: float | None = None
    skip_orthogonal_init: bool = False
    num_envs_from_memory_heuristic: bool = False
    debug_batch_cut: bool = False
    drop_tensorboard_scalars: bool = False
    return_window_bug: bool = False
    seed_torch: bool = True
    checkpoint_key_prefix_mismatch: bool = False
    checkpoint_sort_lexicographic: bool = False
    restore_obs_normalizer: bool = True
    minibatch_no_shuffle: bool = False
    value_loss_huber: bool = False
    ignore_clip_vloss: bool = False
    normalize_returns: bool = False

    def replace(self, **changes: Any) -> PPOImpl:
        return dataclasses.replace(self, **changes)


VALUE_LOSS_FLOOR = 1.0
"""The value-loss floor the fault catalog uses (case 003's free-bits value). The reference's value loss
(0.5 * MSE) stays between about 0.1 and 0.9 on the arena, so under this floor the critic gets no gradient
until its error grows past the floor, and then only until it falls back under it."""

DEBUG_BATCH_CUT = 8
"""Factor by which the ``debug_batch_cut`` fault shortens the rollout (and so the batch)."""

ASSUMED_ACCELERATOR_MEMORY_GB = 85.0
"""The memory figure of the hardware profile the ``num_envs_from_memory_heuristic`` fault falls back to."""

# Namespaces the TensorBoard writer passes through; the drop_tensorboard_scalars fault keeps the allow-list
# of an older naming scheme, which matches none of today's names.
TB_NAMESPACES = ("charts/", "losses/", "env/", "perf/")
_LEGACY_TB_NAMESPACES = ("train/", "eval/", "rollout/")

ENV_STATS = ("heart.get", "ore.get", "battery.get")


# -- observation normalization ---------------------------------------------------------------------------------


class RunningMeanStd:
    """Running mean and variance of observations (Chan et al.'s parallel update), as in SB3's VecNormalize.

    Args:
        shape: Shape of one observation.
        epsilon: Initial pseudo-count, so the first update does not divide by zero.
    """

    def __init__(self, shape: tuple[int, ...], epsilon: float = 1e-4) -> None:
        self.mean = np.zeros(shape, dtype=np.float64)
        self.var = np.ones(shape, dtype=np.float64)
        self.count = float(epsilon)

    def update(self, x: np.ndarray) -> None:
        """Fold a batch ``x`` of shape (B, *shape) into the statistics."""
        batch_mean = x.mean(axis=0)
        batch_var = x.var(axis=0)
        batch_count = x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + batch_count
        self.mean = self.mean + delta * (batch_count / total)
        m2 = self.var * self.count + batch_var * batch_count + delta**2 * (self.count * batch_count / total)
        self.var = m2 / total
        self.count = total

    def normalize(self, x: np.ndarray, clip: float) -> np.ndarray:
        """``clip((x - mean) / sqrt(var + 1e-8), -clip, clip)`` as float32, same shape as ``x``."""
        out = (x - self.mean) / np.sqrt(self.var + 1e-8)
        return np.clip(out, -clip, clip).astype(np.float32, copy=False)

    def state_dict(self) -> dict[str, Any]:
        return {
            "mean": torch.from_numpy(self.mean.copy()),
            "var": torch.from_numpy(self.var.copy()),
            "count": self.count,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.mean = np.asarray(state["mean"], dtype=np.float64).copy()
        self.var = np.asarray(state["var"], dtype=np.float64).copy()
        self.count = float(state["count"])

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> RunningMeanStd:
        rms = cls(tuple(np.asarray(state["mean"]).shape))
        rms.load_state_dict(state)
        return rms


# -- the math ---------------------------------------------------------------------------------------------------


def compute_gae(
    rewards: torch.Tensor | np.ndarray,
    values: torch.Tensor | np.ndarray,
    dones: torch.Tensor | np.ndarray,
    next_value: torch.Tensor | np.ndarray,
    next_done: torch.Tensor | np.ndarray,
    gamma: float,
    gae_lambda: float,
    *,
    bootstrap_current_value: bool = False,
) -> tuple[torch.Tensor, torch.Tensor] | tuple[np.ndarray, np.ndarray]:
    """Generalized advantage estimation (Schulman et al. 2016, https://arxiv.org/abs/1506.02438).

    Uses CleanRL's done convention: ``dones[t]`` is 1 when ``obs[t]`` is the first observation of a new
    episode (the previous step ended one), so step ``t`` bootstraps from ``V(s_{t+1})`` unless
    ``dones[t + 1]`` (or ``next_done`` for the last step) is set::

        delta_t = r_t + gamma * V(s_{t+1}) * (1 - done_{t+1}) - V(s_t)
        A_t     = delta_t + gamma * lambda * (1 - done_{t+1}) * A_{t+1}
        returns = A + V

    Args:
        rewards: (T, N) rewards of each step (truncations already bootstrapped, see
            :func:`bootstrap_truncation`).
        values: (T, N) critic values ``V(s_t)`` of the rollout's observations.
        dones: (T, N) episode-start flags of the rollout's observations (0/1).
        next_value: (N,) ``V`` of the observation after the last step.
        next_done: (N,) episode-start flags of that observation.
        gamma: Discount factor.
        gae_lambda: GAE lambda.
        bootstrap_current_value: The ``gae_bootstrap_current_value`` fault: use ``V(s_t)`` where
            ``V(s_{t+1})`` belongs (and ``V(s_{T-1})`` instead of ``next_value``).

    Returns:
        ``(advantages, returns)``, both (T, N), numpy when ``rewards`` is numpy, else torch.
    """
    as_numpy = isinstance(rewards, np.ndarray)
    r, v, d = (torch.as_tensor(a) for a in (rewards, values, dones))
    nv, nd = torch.as_tensor(next_value), torch.as_tensor(next_done)
    dtype = torch.promote_types(r.dtype, v.dtype)
    r, v, nv = r.to(dtype), v.to(dtype), nv.to(dtype)
    d, nd = d.to(dtype), nd.to(dtype)
    num_steps = r.shape[0]
    advantages = torch.zeros_like(r)
    lastgaelam = torch.zeros_like(nv)
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nextnonterminal = 1.0 - nd
            nextvalues = nv
        else:
            nextnonterminal = 1.0 - d[t + 1]
            nextvalues = v[t + 1]
        if bootstrap_current_value:
            nextvalues = v[t]
        delta = r[t] + gamma * nextvalues * nextnonterminal - v[t]
        lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
        advantages[t] = lastgaelam
    returns = advantages + v
    if as_numpy:
        return advantages.numpy(), returns.numpy()
    return advantages, returns


def bootstrap_truncation(
    rewards: np.ndarray, truncated: np.ndarray, final_values: np.ndarray, gamma: float
) -> np.ndarray:
    """Add ``gamma * V(final_obs)`` to the reward of truncated steps (a new array, any shape).

    A time limit is not part of the MDP: the return of a truncated episode continues past the cut, so the
    step's target bootstraps from the value of the observation the episode was cut at. Terminations are not
    bootstrapped. After this, a truncated step is treated as done, like a termination.

    Args:
        rewards: (T, N) or (N,) rewards.
        truncated: Same shape, bool: an episode was cut by a time limit (and not terminated) at that step.
        final_values: Same shape, ``V(final_obs)``; only entries where ``truncated`` are used.
        gamma: Discount factor.
    """
    return np.where(truncated, rewards + gamma * final_values, rewards).astype(rewards.dtype, copy=False)


def ppo_loss(
    new_logprob: torch.Tensor,
    old_logprob: torch.Tensor,
    advantages: torch.Tensor,
    new_value: torch.Tensor,
    old_value: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
    clip_coef: float,
    vf_coef: float,
    ent_coef: float,
    clip_vloss: bool,
    norm_adv: bool,
    *,
    value_loss_floor: float | None = None,
    value_loss_huber: bool = False,
    normalize_returns: bool = False,
) -> dict[str, torch.Tensor]:
    """The PPO-clip loss on one minibatch (all inputs (B,)).

    ``value_loss_huber`` and ``normalize_returns`` are the fault catalog's regressed value losses (see
    :class:`PPOImpl`).

    Returns:
        ``loss`` (what to minimize), ``policy_loss``, ``value_loss`` (0.5 * MSE, clipped when
        ``clip_vloss``), ``entropy`` (mean), and the diagnostics ``approx_kl`` (the low-variance estimator
        ``(r - 1) - log r``, http://joschu.net/blog/kl-approx.html), ``old_approx_kl`` and ``clipfrac``
        (fraction of samples whose ratio left ``[1 - clip, 1 + clip]``); diagnostics are detached.
    """
    logratio = new_logprob - old_logprob
    ratio = logratio.exp()
    with torch.no_grad():
        old_approx_kl = (-logratio).mean()
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > clip_coef).float().mean()

    if norm_adv:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

    # clipped surrogate: the pessimistic (max of the negated) of the unclipped and clipped objectives
    pg_loss1 = -advantages * ratio
    pg_loss2 = -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()

    if normalize_returns:
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)

    if value_loss_huber:
        # smooth_l1 is 0.5 x² below |x| = 1, so it reads as ½·MSE on small errors; above it, |x| - 0.5
        huber = torch.nn.functional.smooth_l1_loss
        v_loss = huber(new_value, returns, reduction="none")
        if clip_vloss:
            v_clipped = old_value + torch.clamp(new_value - old_value, -clip_coef, clip_coef)
            v_loss = torch.max(v_loss, huber(v_clipped, returns, reduction="none"))
        v_loss = v_loss.mean()
    elif clip_vloss:
        v_loss_unclipped = (new_value - returns) ** 2
        v_clipped = old_value + torch.clamp(new_value - old_value, -clip_coef, clip_coef)
        v_loss_clipped = (v_clipped - returns) ** 2
        v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
    else:
        v_loss = 0.5 * ((new_value - returns) ** 2).mean()
    if value_loss_floor is not None:
        # "free bits" style floor: below it the max picks the constant and the critic's gradient is zero
        v_loss = torch.max(torch.tensor(value_loss_floor, dtype=v_loss.dtype, device=v_loss.device), v_loss)

    entropy_loss = entropy.mean()
    loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
    return {
        "loss": loss,
        "policy_loss": pg_loss,
        "value_loss": v_loss,
        "entropy": entropy_loss,
        "approx_kl": approx_kl,
        "old_approx_kl": old_approx_kl,
        "clipfrac": clipfrac,
    }


def explained_variance(y_pred: np.ndarray | torch.Tensor, y_true: np.ndarray | torch.Tensor) -> float:
    """``1 - Var(y_true - y_pred) / Var(y_true)``: 1 is a perfect critic, 0 no better than a constant.

    NaN when ``y_true`` is constant.
    """
    y_pred = np.asarray(y_pred, dtype=np.float64).reshape(-1)
    y_true = np.asarray(y_true, dtype=np.float64).reshape(-1)
    var_y = np.var(y_true)
    return float("nan") if var_y == 0 else float(1.0 - np.var(y_true - y_pred) / var_y)


def schedule(kind: str, start: float, end: float, progress: float) -> float:
    """Value of a schedule from ``start`` (progress 0) to ``end`` (progress 1).

    Args:
        kind: ``constant`` (always ``start``), ``linear``, or ``cosine`` (half cosine, flat at both ends).
        progress: Fraction of training done, in [0, 1].
    """
    progress = min(max(progress, 0.0), 1.0)
    if kind == "constant":
        return start
    if kind == "linear":
        return start + (end - start) * progress
    if kind == "cosine":
        return end + (start - end) * 0.5 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"unknown schedule kind {kind!r}; expected constant, linear or cosine")


# -- subject capabilities --------------------------------------------------------------------------------------


def demo_config(config: Mapping[str, Any] | DemoConfig) -> DemoConfig:
    """``config`` as a :class:`DemoConfig` (a plain mapping is parsed)."""
    return config if isinstance(config, DemoConfig) else DemoConfig.from_dict(dict(config))


def _space_dims(observation_space: Any, action_space: Any) -> tuple[int, int]:
    shape = getattr(observation_space, "shape", None)
    if not shape:
        raise TypeError(
            f"the demo agent needs a Box observation space with a shape, got {observation_space!r}; "
            "flatten the observations (gymnasium.wrappers.FlattenObservation)"
        )
    n = getattr(action_space, "n", None)
    if n is None:
        raise TypeError(f"the demo agent needs a Discrete action space, got {action_space!r}")
    return int(np.prod(shape)), int(n)


def _build_agent(cfg: DemoConfig, obs_dim: int, n_actions: int, impl: PPOImpl) -> Agent:
    a = cfg.agent
    return Agent(
        obs_dim,
        n_actions,
        hidden_size=a.hidden_size,
        num_layers=a.num_layers,
        activation=a.activation,
        ortho_init=a.ortho_init and not impl.skip_orthogonal_init,
    )


def make_policy(
    config: Mapping[str, Any] | DemoConfig,
    observation_space: Any,
    action_space: Any,
    *,
    impl: PPOImpl | None = None,
) -> Agent:
    """The subject's network for the given (single-environment) spaces, freshly initialized, on the config's
    ``trainer.device``.

    Uses torch's global RNG; seed it (``torch.manual_seed``) for a reproducible init.
    """
    obs_dim, n_actions = _space_dims(observation_space, action_space)
    cfg = demo_config(config)
    return _build_agent(cfg, obs_dim, n_actions, impl or PPOImpl()).to(resolve_device(cfg.trainer.device))


def make_optimizer(config: Mapping[str, Any] | DemoConfig, policy: nn.Module) -> torch.optim.Optimizer:
    """Adam over all of ``policy``'s parameters, built from the config's ``optimizer`` section.

    The section's keys are passed to ``torch.optim.Adam`` as they are, like ``Adam(**cfg.optimizer)``: a key
    that is missing from a given section, or null, falls back to PyTorch's default (eps 1e-8, lr 1e-3), not
    to the demo's. A config without an ``optimizer`` section gets the demo's defaults.
    """
    if isinstance(config, DemoConfig):
        section = config.optimizer.to_dict()
    elif "optimizer" in config:
        section = dict(config["optimizer"])
    else:
        section = OptimizerConfig().to_dict()

    OptimizerConfig.from_dict(section)  # rejects unknown keys and other optimizers with a clear error
    kwargs = {k: section[k] for k in ("lr", "eps", "weight_decay") if section.get(k) is not None}
    if section.get("betas") is not None:
        kwargs["betas"] = (float(section["betas"][0]), float(section["betas"][1]))
    # the fused kernel does the same arithmetic in one call instead of a Python loop over parameters (about
    # 4x faster per step for this network on CPU); it needs floating-point parameters on one device type
    params = list(policy.parameters())
    fused = all(p.is_floating_point() for p in params) and len({p.device.type for p in params}) == 1
    return torch.optim.Adam(params, fused=fused, **kwargs)


def compute_advantages(
    config: Mapping[str, Any] | DemoConfig,
    rewards: np.ndarray | torch.Tensor,
    values: np.ndarray | torch.Tensor,
    dones: np.ndarray | torch.Tensor,
    next_value: np.ndarray | torch.Tensor,
    *,
    impl: PPOImpl | None = None,
) -> tuple[np.ndarray, np.ndarray] | tuple[torch.Tensor, torch.Tensor]:
    """GAE with the config's gamma and lambda, in the subject contract's done convention.

    Args:
        rewards: (T, N).
        values: (T, N) ``V(s_t)``.
        dones: (T, N), 1 where the episode *ended* at step t (after acting in ``s_t``); no bootstrap there.
        next_value: (N,) ``V(s_T)``, the observation after the last step.

    Returns:
        ``(advantages, returns)``, (T, N), numpy for numpy input.
    """
    cfg = demo_config(config)
    impl = impl or PPOImpl()
    as_numpy = isinstance(rewards, np.ndarray)
    ended = torch.as_tensor(dones)
    # ended[t] is CleanRL's dones[t + 1] (the next observation starts an episode); dones[0] is never read.
    starts = torch.zeros_like(ended)
    starts[1:] = ended[:-1]
    adv, ret = compute_gae(
        torch.as_tensor(rewards),
        torch.as_tensor(values),
        starts,
        torch.as_tensor(next_value),
        ended[-1],
        cfg.trainer.gamma,
        cfg.trainer.gae_lambda,
        bootstrap_current_value=impl.gae_bootstrap_current_value,
    )
    if as_numpy:
        return adv.numpy(), ret.numpy()
    return adv, ret


def compute_loss(
    config: Mapping[str, Any] | DemoConfig,
    policy: Agent,
    batch: Mapping[str, torch.Tensor],
    *,
    impl: PPOImpl | None = None,
    progress: float = 0.0,
) -> dict[str, torch.Tensor]:
    """The trainer's loss on one batch, with the config's coefficients (schedules at ``progress``).

    Args:
        batch: ``obs`` (B, D) float (already normalized), ``actions`` (B,) int, ``logprobs`` (B,) behaviour
            log-probabilities, ``advantages`` (B,), ``returns`` (B,), ``values`` (B,) behaviour values.

    Returns:
        :func:`ppo_loss`'s dict (``loss``, ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``, ...).
    """
    cfg = demo_config(config)
    impl = impl or PPOImpl()
    tc = cfg.trainer
    device = module_device(policy)  # the batch may come as numpy or CPU tensors
    _, newlogprob, entropy, newvalue = policy.get_action_and_value(
        to_device(batch["obs"], device, torch.float32), to_device(batch["actions"], device, torch.long)
    )
    return ppo_loss(
        newlogprob,
        to_device(batch["logprobs"], device, torch.float32),
        to_device(batch["advantages"], device, torch.float32),
        newvalue,
        to_device(batch["values"], device, torch.float32),
        to_device(batch["returns"], device, torch.float32),
        entropy,
        clip_coef=schedule(tc.clip_schedule, tc.clip_coef, tc.clip_coef_final, progress),
        vf_coef=tc.vf_coef,
        ent_coef=schedule(tc.ent_schedule, tc.ent_coef, tc.ent_coef_final, progress),
        clip_vloss=tc.clip_vloss and not impl.ignore_clip_vloss,
        norm_adv=tc.norm_adv,
        value_loss_floor=impl.value_loss_floor,
        value_loss_huber=impl.value_loss_huber,
        normalize_returns=impl.normalize_returns,
    )


def list_checkpoints(run_dir: str | Path, *, impl: PPOImpl | None = None) -> list[str]:
    """The run's checkpoint paths, latest first (the trainer's own pick order)."""
    impl = impl or PPOImpl()
    return ckpt.list_checkpoints(run_dir, lexicographic=impl.checkpoint_sort_lexicographic)


def load_policy_weights(policy: nn.Module, state: Mapping[str, torch.Tensor], *, impl: PPOImpl) -> None:
    """Load a checkpoint's policy ``state`` into ``policy``, mapping old key names to current ones."""
    if impl.checkpoint_key_prefix_mismatch:
        # the rename table applied backwards (new -> old): critic.* becomes value_net.*, which the network
        # does not have; strict=False then drops those tensors without a word
        backwards = {new: old for old, new in ckpt.KEY_RENAMES.items() if new == "critic."}
        policy.load_state_dict(ckpt.remap_keys(dict(state), backwards), strict=False)
        return
    policy.load_state_dict(ckpt.remap_keys(dict(state), ckpt.KEY_RENAMES), strict=True)


def load_checkpoint(
    config: Mapping[str, Any] | DemoConfig, path: str | Path, *, impl: PPOImpl | None = None
) -> tuple[Agent, dict[str, Any]]:
    """Rebuild the policy from a checkpoint (the architecture comes from ``config``).

    Returns:
        ``(policy, extras)``; extras: ``obs_rms`` (``{"mean", "var", "count"}`` numpy/float),
        ``optimizer_state`` (also as ``optimizer``), ``global_step`` (also as ``step``), ``update``, ``config``
        (the dict the run was trained with), ``path``.
    """
    impl = impl or PPOImpl()
    cfg = demo_config(config)
    data = ckpt.read_checkpoint(path)
    spaces = data["spaces"]
    policy = _build_agent(cfg, int(spaces["obs_dim"]), int(spaces["n_actions"]), impl)
    policy.to(resolve_device(cfg.trainer.device))
    load_policy_weights(policy, data["policy"], impl=impl)
    rms = RunningMeanStd((int(spaces["obs_dim"]),))
    if impl.restore_obs_normalizer:
        rms.load_state_dict(data["obs_rms"])
    extras = {
        "obs_rms": {"mean": rms.mean.copy(), "var": rms.var.copy(), "count": rms.count},
        "optimizer_state": data["optimizer"],
        "optimizer": data["optimizer"],
        "global_step": int(data["global_step"]),
        "step": int(data["global_step"]),
        "update": int(data["update"]),
        "config": json.loads(data["config"]),
        "path": str(path),
    }
    return policy, extras


# -- run-time resolution of the rollout shape (where the batch-size faults live) --------------------------------


def resolve_num_envs(cfg: DemoConfig, impl: PPOImpl) -> int:
    """Environments to run: the config's ``num_envs``, unless the memory-heuristic fault is on."""
    if impl.num_envs_from_memory_heuristic:
        # "6 GB per environment" sizing of a hardware profile; without an accelerator to query the profile
        # assumes its reference card's memory, so the config's num_envs is ignored.
        return max(8, min(256, int(ASSUMED_ACCELERATOR_MEMORY_GB / 6)))
    return cfg.trainer.num_envs


def _debug_mode(cfg: DemoConfig) -> bool:
    # Meant to detect a developer laptop; "not on CUDA" is true on every CPU training box as well.
    return not is_cuda(resolve_device(cfg.trainer.device))


def resolve_num_steps(cfg: DemoConfig, impl: PPOImpl) -> int:
    """Rollout length: the config's ``num_steps``, cut in the (fault) debug mode."""
    num_steps = cfg.trainer.num_steps
    if impl.debug_batch_cut and _debug_mode(cfg):
        num_steps = max(2, num_steps // DEBUG_BATCH_CUT)
    return num_steps


# -- environment plumbing --------------------------------------------------------------------------------------


def _make_envs(cfg: DemoConfig, num_envs: int, seed: int, arena_impl: Any, env_fn: Callable[..., Any] | None):
    if env_fn is not None:
        return env_fn(num_envs, seed)
    from rlaudit.demo.arena import make_arena

    return make_arena(cfg.to_dict(), num_envs, seed, impl=arena_impl)


def _final_observations(info: Mapping[str, Any], mask: np.ndarray, template: np.ndarray) -> np.ndarray:
    """The last observations of episodes that ended this step, (mask.sum(), *obs_shape).

    Gymnasium's SyncVectorEnv stores ``final_obs`` as an object array (None where no episode ended); the
    arena stores a dense array. Both come with the mask ``_final_obs``.
    """
    final = info.get("final_obs")
    if final is None:
        raise KeyError(
            "the environment truncated an episode but gave no info['final_obs']; the trainer needs a vector "
            "env with autoreset_mode=SAME_STEP to bootstrap truncated episodes correctly"
        )
    if isinstance(final, np.ndarray) and final.dtype != object:
        return final[mask].reshape(-1, *template.shape[1:])
    return np.stack([np.asarray(final[i], dtype=template.dtype) for i in np.flatnonzero(mask)])


_RENAME = {"r": "return", "l": "length"}
_LOSS_STATS = ("policy_loss", "value_loss", "entropy", "approx_kl", "old_approx_kl", "clipfrac")


class _EpisodeStats:
    """Finished episodes: from ``env.pop_episodes()`` when the env has it, else from the trainer's own sums.

    Keeps the last ``window`` values of each statistic for logging, and the all-time running mean of the
    return (what the ``return_window_bug`` logs instead of the window).
    """

    def __init__(self, envs: Any, num_envs: int, window: int) -> None:
        self._pop = getattr(envs, "pop_episodes", None)
        self._ret = np.zeros(num_envs, dtype=np.float64)
        self._len = np.zeros(num_envs, dtype=np.int64)
        self.window: dict[str, deque[float]] = {}
        self._maxlen = window
        self.total_return = 0.0
        self.total_count = 0

    def step(self, reward: np.ndarray, done: np.ndarray) -> dict[str, np.ndarray] | None:
        """Account one vector step; return the episodes that finished (columns ``return``, ``length``, ...)."""
        if self._pop is None:
            self._ret += reward
            self._len += 1
        if not done.any():
            return None
        if self._pop is not None:
            raw = self._pop()
            # gymnasium's short names spelled out; the arena's own step counter is not a statistic
            episodes = {_RENAME.get(k, k): np.asarray(v) for k, v in raw.items() if k != "vector_step"}
        else:
            episodes = {
                "return": self._ret[done].copy(),
                "length": self._len[done].copy(),
                "env": np.flatnonzero(done),
            }
            self._ret[done] = 0.0
            self._len[done] = 0
        if "return" not in episodes or len(episodes["return"]) == 0:
            return None
        for key, values in episodes.items():
            if key in ("env", "task") or values.dtype.kind not in "biuf":
                continue
            dq = self.window.get(key)
            if dq is None:
                dq = self.window[key] = deque(maxlen=self._maxlen)
            dq.extend(values.astype(np.float64).tolist())
        self.total_return += float(np.sum(episodes["return"]))
        self.total_count += len(episodes["return"])
        return episodes

    def mean(self, key: str) -> float | None:
        dq = self.window.get(key)
        return float(np.mean(dq)) if dq else None

    def state_dict(self) -> dict[str, Any]:
        return {
            "window": {k: list(v) for k, v in self.window.items()},
            "total_return": self.total_return,
            "total_count": self.total_count,
            "ret": torch.from_numpy(self._ret.copy()),
            "len": torch.from_numpy(self._len.copy()),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.window = {k: deque(v, maxlen=self._maxlen) for k, v in state["window"].items()}
        self.total_return = float(state["total_return"])
        self.total_count = int(state["total_count"])
        self._ret = np.asarray(state["ret"], dtype=np.float64).copy()
        self._len = np.asarray(state["len"], dtype=np.int64).copy()


def _write_scalars(writer: Any, step: int, scalars: Mapping[str, float], impl: PPOImpl) -> None:
    if writer is None:
        return
    namespaces = _LEGACY_TB_NAMESPACES if impl.drop_tensorboard_scalars else TB_NAMESPACES
    for name, value in scalars.items():
        if name.startswith(namespaces):
            writer.add_scalar(name, value, step)


# -- training ---------------------------------------------------------------------------------------------------


def _agent_input(raw_obs: np.ndarray, obs_rms: RunningMeanStd, tc: TrainerConfig) -> np.ndarray:
    """What the agent sees of raw observations ``(num_envs, obs_dim)``: with ``normalize_obs``, normalized by
    the running statistics after they are updated with these observations; otherwise the observations."""
    if not tc.normalize_obs:
        return raw_obs
    obs_rms.update(raw_obs)
    return obs_rms.normalize(raw_obs, tc.obs_clip)


def train(
    config: Mapping[str, Any] | DemoConfig,
    steps: int,
    seed: int,
    recorder: Any = None,
    *,
    impl: PPOImpl | None = None,
    arena_impl: Any = None,
    resume_from: str | Path | None = None,
    env_fn: Callable[[int, int], Any] | None = None,
) -> dict[str, Any]:
    """Train PPO for ``steps`` environment steps (rounded down to whole updates, at least one).

    Args:
        config: The nested config (``DemoConfig().to_dict()`` or a partial dict of overrides).
        steps: Total environment steps, all environments together (the run's length also when resuming).
        seed: Seeds torch (init, action sampling), the minibatch shuffling generator and the environments.
        recorder: A :class:`rlaudit.recorder.Recorder` (or ``NullRecorder``); None records nothing.
        impl: Fault code paths (:class:`PPOImpl`); None is the correct trainer.
        arena_impl: Passed to ``make_arena`` as ``impl`` (the environment's fault code paths).
        resume_from: A checkpoint of this run to continue from (same ``config``, ``steps`` and ``seed``).
        env_fn: ``env_fn(num_envs, seed) -> VectorEnv`` replacing the arena (Box obs, Discrete actions,
            SAME_STEP autoreset).

    On CUDA (``trainer.device``) the network, the update and GAE run on the GPU and the rollout storage stays
    in host memory; torch's deterministic algorithms are switched on (warn-only) for the run, with
    ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` unless it is set, so that a seed gives the same run again on the same
    card.

    Returns:
        A summary: steps, updates, seconds, sps, num_envs, num_steps, batch_size, minibatch_size, the last
        logged scalars, the final windowed episode statistics, run_dir, checkpoints.
    """
    from rlaudit.recorder import NullRecorder

    cfg = demo_config(config)
    impl = impl or PPOImpl()
    tc, lc = cfg.trainer, cfg.logging
    rec = recorder if recorder is not None else NullRecorder(lc.run_dir or None)
    run_dir = Path(rec.run_dir) if rec.run_dir is not None else (Path(lc.run_dir) if lc.run_dir else None)

    num_envs = resolve_num_envs(cfg, impl)
    num_steps = resolve_num_steps(cfg, impl)
    batch_size = num_envs * num_steps
    num_minibatches = min(tc.num_minibatches, batch_size // 2)
    minibatch_size = batch_size // num_minibatches
    num_updates = max(1, int(steps) // batch_size)
    device = resolve_device(tc.device)

    prev_threads = torch.get_num_threads()
    prev_deterministic = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    torch.set_num_threads(tc.torch_threads)
    if is_cuda(device):
        # cuBLAS reads its workspace setting when it first runs; with it, matmuls repeat bit for bit
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
    writer = None
    envs = None
    try:
        # seeding: torch drives init and action sampling, `rng` the minibatch order, `seed` the environments
        if impl.seed_torch:
            torch.manual_seed(seed)
        else:
            torch.seed()
        rng = np.random.default_rng(seed)

        envs = _make_envs(cfg, num_envs, seed, arena_impl, env_fn)
        obs_dim, n_actions = _space_dims(envs.single_observation_space, envs.single_action_space)
        agent = _build_agent(cfg, obs_dim, n_actions, impl).to(device)
        optimizer = make_optimizer(config, agent)
        base_lr = float(optimizer.param_groups[0]["lr"])  # what the schedule scales (before any resume)
        obs_rms = RunningMeanStd((obs_dim,))
        episodes = _EpisodeStats(envs, num_envs, lc.return_window)

        start_update, global_step = 0, 0
        if resume_from is not None:
            data = ckpt.read_checkpoint(resume_from)
            load_policy_weights(agent, data["policy"], impl=impl)
            optimizer.load_state_dict(data["optimizer"])
            if impl.restore_obs_normalizer:
                obs_rms.load_state_dict(data["obs_rms"])
            start_update, global_step = int(data["update"]), int(data["global_step"])
            state = data["trainer_state"]
            torch.set_rng_state(state["torch_rng"])
            if is_cuda(device) and "cuda_rng" in state:
                torch.cuda.set_rng_state(state["cuda_rng"], device)
            rng.bit_generator.state = state["numpy_rng"]
            episodes.load_state_dict(state["episodes"])
            ckpt.restore_state(envs, state["env"])
            next_obs = state["next_obs"].numpy().copy()
            next_done = state["next_done"].numpy().copy()
        else:
            raw_obs, _ = envs.reset(seed=seed)
            raw_obs = np.asarray(raw_obs, dtype=np.float32).reshape(num_envs, obs_dim)
            next_obs = _agent_input(raw_obs, obs_rms, tc)
            next_done = np.zeros(num_envs, dtype=np.float32)

        rec.watch(agent, optimizer)
        if run_dir is not None and lc.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(str(run_dir / "tb"))

        # rollout storage, preallocated; torch views share the numpy memory (no copies at update time)
        obs = np.zeros((num_steps, num_envs, obs_dim), dtype=np.float32)
        actions = np.zeros((num_steps, num_envs), dtype=np.int64)
        logprobs = np.zeros((num_steps, num_envs), dtype=np.float32)
        rewards = np.zeros((num_steps, num_envs), dtype=np.float32)
        dones = np.zeros((num_steps, num_envs), dtype=np.float32)
        values = np.zeros((num_steps, num_envs), dtype=np.float32)
        final_obs = np.zeros((num_steps, num_envs, obs_dim), dtype=np.float32)  # valid where truncs
        truncs = np.zeros((num_steps, num_envs), dtype=bool)

        saved: list[str] = []
        scalars: dict[str, float] = {}
        start_step = global_step
        start_time = time.perf_counter()
        for update in range(start_update + 1, num_updates + 1):
            progress = (update - 1) / num_updates
            if tc.anneal_lr and not impl.ignore_lr_schedule:
                lr_now = base_lr * schedule(tc.lr_schedule, 1.0, tc.lr_final_fraction, progress)
                for group in optimizer.param_groups:
                    group["lr"] = lr_now
            ent_coef = schedule(tc.ent_schedule, tc.ent_coef, tc.ent_coef_final, progress)
            clip_coef = schedule(tc.clip_schedule, tc.clip_coef, tc.clip_coef_final, progress)

            # the policy is fixed during a rollout: no autograd anywhere in it
            with rec.phase("rollout"), torch.inference_mode():
                truncs[:] = False
                for step in range(num_steps):
                    global_step += num_envs
                    obs[step] = next_obs
                    dones[step] = next_done

                    with rec.phase("inference"):
                        action, logprob, _, value = agent.get_action_and_value(
                            torch.from_numpy(next_obs).to(device)
                        )
                    actions[step] = action.cpu().numpy()
                    logprobs[step] = logprob.cpu().numpy()
                    values[step] = value.cpu().numpy()

                    with rec.phase("env"):
                        raw_obs, reward, terminated, truncated, info = envs.step(actions[step])
                    raw_obs = np.asarray(raw_obs, dtype=np.float32).reshape(num_envs, obs_dim)
                    next_obs = _agent_input(raw_obs, obs_rms, tc)
                    rewards[step] = reward
                    done = np.logical_or(terminated, truncated)
                    next_done = done.astype(np.float32)
                    # keep the last observation of episodes cut by the time limit (not terminated): their
                    # reward is bootstrapped with its value before GAE, in one batch for the whole rollout
                    cut = np.logical_and(truncated, np.logical_not(terminated))
                    if cut.any():
                        truncs[step] = cut
                        final = (
                            _final_observations(info, cut, raw_obs).astype(np.float32).reshape(-1, obs_dim)
                        )
                        final_obs[step, cut] = (
                            obs_rms.normalize(final, tc.obs_clip) if tc.normalize_obs else final
                        )

                    finished = episodes.step(rewards[step], done)
                    if finished is not None:
                        _record_episodes(rec, global_step, finished)
            rec.sample_memory(global_step)

            with rec.phase("update"):
                b_obs = torch.from_numpy(obs).to(device).reshape(-1, obs_dim)
                b_actions = torch.from_numpy(actions).to(device).reshape(-1)
                b_logprobs = torch.from_numpy(logprobs).to(device).reshape(-1)
                b_values = torch.from_numpy(values).to(device).reshape(-1)
                with torch.no_grad():
                    next_value = agent.get_value(torch.from_numpy(next_obs).to(device))
                    # bootstrap value if truncated (not if terminated): V(final_obs) of the episode that was cut
                    final_values = np.zeros((num_steps, num_envs), dtype=np.float32)
                    if truncs.any():
                        final_values[truncs] = (
                            agent.get_value(torch.from_numpy(final_obs[truncs]).to(device)).cpu().numpy()
                        )
                    bootstrapped = bootstrap_truncation(rewards, truncs, final_values, tc.gamma)
                advantages, returns = compute_gae(
                    torch.from_numpy(bootstrapped).to(device),
                    torch.from_numpy(values).to(device),
                    torch.from_numpy(dones).to(device),
                    next_value,
                    torch.from_numpy(next_done).to(device),
                    tc.gamma,
                    tc.gae_lambda,
                    bootstrap_current_value=impl.gae_bootstrap_current_value,
                )
                b_advantages = advantages.reshape(-1)
                b_returns = returns.reshape(-1)

                stats: dict[str, list[torch.Tensor]] = {k: [] for k in _LOSS_STATS}
                for epoch in range(tc.update_epochs):
                    # one gather per epoch into shuffled copies; minibatches are then contiguous slices
                    if impl.minibatch_no_shuffle:
                        b_inds = torch.arange(batch_size, device=device)
                    else:
                        b_inds = torch.from_numpy(rng.permutation(batch_size)).to(device)
                    e_obs, e_actions, e_logprobs, e_advantages, e_returns, e_values = (
                        torch.index_select(t, 0, b_inds)  # 4x faster than t[b_inds] on CPU
                        for t in (b_obs, b_actions, b_logprobs, b_advantages, b_returns, b_values)
                    )
                    for start in range(0, batch_size - minibatch_size + 1, minibatch_size):
                        mb = slice(start, start + minibatch_size)
                        rec.minibatch(epoch, b_inds[mb])
                        _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                            e_obs[mb], e_actions[mb]
                        )
                        out = ppo_loss(
                            newlogprob,
                            e_logprobs[mb],
                            e_advantages[mb],
                            newvalue,
                            e_values[mb],
                            e_returns[mb],
                            entropy,
                            clip_coef=clip_coef,
                            vf_coef=tc.vf_coef,
                            ent_coef=ent_coef,
                            clip_vloss=tc.clip_vloss and not impl.ignore_clip_vloss,
                            norm_adv=tc.norm_adv,
                            value_loss_floor=impl.value_loss_floor,
                            value_loss_huber=impl.value_loss_huber,
                            normalize_returns=impl.normalize_returns,
                        )
                        optimizer.zero_grad(set_to_none=True)
                        out["loss"].backward()
                        nn.utils.clip_grad_norm_(agent.parameters(), tc.max_grad_norm)
                        optimizer.step()
                        for key, history in stats.items():
                            history.append(out[key].detach())
                    if tc.target_kl is not None and float(out["approx_kl"]) > tc.target_kl:
                        break

            if update % lc.log_interval == 0 or update == num_updates:
                # mean over the update's minibatches
                scalars = {f"losses/{k}": float(torch.stack(v).mean()) for k, v in stats.items()}
                scalars["losses/explained_variance"] = explained_variance(
                    b_values.cpu().numpy(), b_returns.cpu().numpy()
                )
                scalars["charts/learning_rate"] = float(optimizer.param_groups[0]["lr"])
                scalars["charts/ent_coef"] = ent_coef
                scalars["charts/clip_coef"] = clip_coef
                if impl.return_window_bug:
                    # running mean over every episode since the start, not the last return_window episodes
                    ret = episodes.total_return / episodes.total_count if episodes.total_count else None
                else:
                    ret = episodes.mean("return")
                if ret is not None:
                    scalars["charts/episodic_return"] = ret
                length = episodes.mean("length")
                if length is not None:
                    scalars["charts/episodic_length"] = length
                for key in ENV_STATS:
                    value = episodes.mean(key)
                    if value is not None:
                        scalars[f"env/{key}"] = value
                elapsed = time.perf_counter() - start_time
                scalars["perf/sps"] = (global_step - start_step) / elapsed if elapsed > 0 else 0.0
                rec.log(global_step, **scalars)
                _write_scalars(writer, global_step, scalars, impl)

            if run_dir is not None and (update % tc.checkpoint_interval == 0 or update == num_updates):
                path = ckpt.save_checkpoint(
                    ckpt.checkpoint_path(run_dir, update),
                    {
                        "policy": {k: v.cpu() for k, v in agent.state_dict().items()},
                        "optimizer": optimizer.state_dict(),
                        "obs_rms": obs_rms.state_dict(),
                        "global_step": global_step,
                        "update": update,
                        "config": cfg.to_json(),
                        "spaces": {"obs_dim": obs_dim, "n_actions": n_actions},
                        "trainer_state": {
                            "torch_rng": torch.get_rng_state(),
                            **({"cuda_rng": torch.cuda.get_rng_state(device)} if is_cuda(device) else {}),
                            "numpy_rng": rng.bit_generator.state,
                            "episodes": episodes.state_dict(),
                            "env": ckpt.capture_state(envs),
                            "next_obs": torch.from_numpy(next_obs.copy()),
                            "next_done": torch.from_numpy(next_done.copy()),
                            "seed": int(seed),
                            "steps": int(steps),
                        },
                    },
                )
                saved.append(str(path))

        elapsed = time.perf_counter() - start_time
        return {
            "steps": global_step,
            "updates": num_updates,
            "seconds": elapsed,
            "sps": (global_step - start_step) / elapsed if elapsed > 0 else 0.0,
            "num_envs": num_envs,
            "num_steps": num_steps,
            "batch_size": batch_size,
            "minibatch_size": minibatch_size,
            "scalars": scalars,
            "episodes": episodes.total_count,
            "episode_means": {k: episodes.mean(k) for k in episodes.window},
            "run_dir": str(run_dir) if run_dir is not None else None,
            "checkpoints": saved,
        }
    finally:
        if writer is not None:
            writer.close()
        if envs is not None:
            envs.close()
        torch.set_num_threads(prev_threads)
        torch.use_deterministic_algorithms(prev_deterministic[0], warn_only=prev_deterministic[1])


def _record_episodes(rec: Any, step: int, finished: Mapping[str, np.ndarray]) -> None:
    """One ``recorder.episode`` call per finished episode, with every statistic the env reported."""
    n = len(finished["return"])
    columns = {k: v.tolist() for k, v in finished.items()}
    env_ids = columns.pop("env", None)
    for i in range(n):
        stats = {k: v[i] for k, v in columns.items()}
        rec.episode(step=step, env=int(env_ids[i]) if env_ids is not None else -1, **stats)
