"""What SB3 computes inline, as functions the audits can call: GAE by SB3's own rollout buffer, and the loss
of ``PPO.train`` / ``A2C.train`` re-derived term by term from the policy's ``evaluate_actions``.
"""

from __future__ import annotations

from typing import Any

from rlaudit.adapters.sb3.runtime import schedule_value
from rlaudit.adapters.sb3.setup import ON_POLICY, require_algorithm


def compute_advantages(config: dict[str, Any], rewards: Any, values: Any, dones: Any, next_value: Any) -> Any:
    """GAE computed by SB3's own ``RolloutBuffer.compute_returns_and_advantage``.

    ``dones[t]`` is 1 where the episode ended at step t (the contract's convention); SB3's buffer wants
    episode starts, which are the dones shifted by one step. Shapes (T, N); ``next_value`` (N,).
    """
    import numpy as np
    import torch
    from gymnasium import spaces
    from stable_baselines3.common.buffers import RolloutBuffer

    as_torch = isinstance(rewards, torch.Tensor)
    r = np.asarray(rewards.detach().cpu() if as_torch else rewards, dtype=np.float32)
    v = np.asarray(values.detach().cpu() if hasattr(values, "detach") else values, dtype=np.float32)
    d = np.asarray(dones.detach().cpu() if hasattr(dones, "detach") else dones, dtype=np.float32)
    nv = np.asarray(
        next_value.detach().cpu() if hasattr(next_value, "detach") else next_value, dtype=np.float32
    )
    steps, n_envs = r.shape
    buffer = RolloutBuffer(
        steps,
        spaces.Box(-np.inf, np.inf, (1,), np.float32),
        spaces.Discrete(2),
        device="cpu",
        gae_lambda=float(config["gae_lambda"]),
        gamma=float(config["gamma"]),
        n_envs=n_envs,
    )
    buffer.rewards[:] = r
    buffer.values[:] = v
    buffer.episode_starts[:] = 0.0
    buffer.episode_starts[1:] = d[:-1]
    buffer.compute_returns_and_advantage(last_values=torch.as_tensor(nv), dones=d[-1])
    adv, ret = buffer.advantages.copy(), buffer.returns.copy()
    if as_torch:
        return torch.as_tensor(adv), torch.as_tensor(ret)
    return adv, ret


def compute_loss(
    config: dict[str, Any], policy: Any, batch: dict[str, Any], *, progress: float = 0.0
) -> dict[str, Any]:
    """The loss SB3's ``PPO.train`` / ``A2C.train`` minimizes on one minibatch, re-derived from its pieces.

    SB3 has no loss function to call: the loss is written inline in each algorithm's ``train()``. This
    method recomputes it with the policy's own ``evaluate_actions(obs, actions)`` and the setup's resolved
    hyperparameters, following the formulas of SB3's ``train()`` (stable-baselines3 2.x) term by term:

    - advantages normalized per minibatch when ``normalize_advantage`` (PPO: only for more than one
      sample), ``(A - mean) / (std + 1e-8)`` with the unbiased std;
    - PPO: ``policy_loss = -mean(min(A * r, A * clamp(r, 1 - clip, 1 + clip)))`` with
      ``r = exp(logp - logp_old)`` and ``clip = clip_range(progress_remaining)``; the value prediction
      clipped to ``old_value +- clip_range_vf(progress_remaining)`` when ``clip_range_vf`` is set;
    - A2C: ``policy_loss = -mean(A * logp)``;
    - ``value_loss = mse(returns, value)`` (no factor 1/2, unlike CleanRL);
    - ``entropy_loss = -mean(entropy)`` (``-mean(-logp)`` where the distribution has no closed form);
    - ``loss = policy_loss + ent_coef * entropy_loss + vf_coef * value_loss``.

    The policy is put in training mode for the forward pass, as ``train()`` does, and put back.

    Args:
        config: The resolved setup (:meth:`SB3Subject.config`).
        policy: An SB3 actor-critic policy (``make_policy``, ``load_checkpoint``).
        batch: ``obs`` (B, *obs_shape), ``actions`` (B,) for Discrete (else (B, action_dim)),
            ``logprobs`` (B,) behaviour log-probabilities, ``advantages`` (B,), ``returns`` (B,),
            ``values`` (B,) behaviour values (what ``clip_range_vf`` clips around).
        progress: Fraction of the run done, 0 at the start and 1 at the end; schedules (``lin_0.2``) are
            evaluated at SB3's ``progress_remaining = 1 - progress``.

    Returns:
        Scalar tensors: ``loss``, ``policy_loss``, ``value_loss``, ``entropy`` (the mean entropy, positive),
        ``entropy_loss`` (SB3's sign: ``-entropy``); PPO adds the detached diagnostics ``approx_kl``
        (``mean((r - 1) - log r)``, as SB3 logs it) and ``clipfrac`` (fraction with ``|r - 1| > clip``).
        These are what SB3 logs as ``train/loss``, ``train/policy_gradient_loss`` (A2C:
        ``train/policy_loss``), ``train/value_loss``, ``train/entropy_loss``, ``train/approx_kl`` and
        ``train/clip_fraction`` for a single minibatch.

    Raises:
        TypeError: The setup's algorithm is not an on-policy actor-critic (PPO or A2C).
    """
    import torch
    import torch.nn.functional as F
    from gymnasium import spaces

    algo = require_algorithm(config, ON_POLICY, "compute_loss", "on-policy")
    device = getattr(policy, "device", torch.device("cpu"))

    def column(name: str) -> Any:
        return torch.as_tensor(batch[name], dtype=torch.float32, device=device).flatten()

    raw_obs = batch["obs"]
    if isinstance(raw_obs, dict):
        obs: Any = {k: torch.as_tensor(v, device=device) for k, v in raw_obs.items()}
    else:
        obs = torch.as_tensor(raw_obs, device=device)
    actions = torch.as_tensor(batch["actions"], device=device)
    if isinstance(policy.action_space, spaces.Discrete):
        actions = actions.long().flatten()  # as train() converts the buffer's float actions
    else:
        # the rollout buffer stores every other action space as float32 (B, action_dim)
        actions = actions.to(torch.float32).reshape(actions.shape[0], -1)
    old_logprob, advantages = column("logprobs"), column("advantages")
    returns, old_values = column("returns"), column("values")

    was_training = bool(policy.training)
    policy.set_training_mode(True)
    try:
        values, log_prob, entropy = policy.evaluate_actions(obs, actions)
    finally:
        policy.set_training_mode(was_training)
    values = values.flatten()

    # PPO skips the normalization of a one-sample minibatch (SB3 issue #325); A2C always normalizes.
    if config["normalize_advantage"] and (algo == "a2c" or len(advantages) > 1):
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

    out: dict[str, Any] = {}
    progress_remaining = 1.0 - float(progress)
    if algo == "ppo":
        clip_range = schedule_value(config["clip_range"], progress_remaining)
        ratio = torch.exp(log_prob - old_logprob)
        surrogate = advantages * ratio
        clipped = advantages * torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
        policy_loss = -torch.min(surrogate, clipped).mean()
        if config.get("clip_range_vf") is None:
            values_pred = values
        else:
            clip_vf = schedule_value(config["clip_range_vf"], progress_remaining)
            values_pred = old_values + torch.clamp(values - old_values, -clip_vf, clip_vf)
        with torch.no_grad():
            log_ratio = log_prob - old_logprob
            out["approx_kl"] = torch.mean((torch.exp(log_ratio) - 1) - log_ratio)
            out["clipfrac"] = torch.mean((torch.abs(ratio - 1) > clip_range).float())
    else:
        policy_loss = -(advantages * log_prob).mean()
        values_pred = values
    value_loss = F.mse_loss(returns, values_pred)
    entropy_loss = torch.mean(log_prob) if entropy is None else -torch.mean(entropy)
    loss = policy_loss + float(config["ent_coef"]) * entropy_loss + float(config["vf_coef"]) * value_loss
    return {
        "loss": loss,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": -entropy_loss,
        "entropy_loss": entropy_loss,
        **out,
    }
