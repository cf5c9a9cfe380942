"""SB3's off-policy learners (DQN, SAC, TD3, DDPG) seen through the off-policy subject contract.

SB3 writes its TD targets inline in each algorithm's ``train()`` and updates its target networks from
``train()`` (SAC, TD3) or from the collection loop (DQN). This module gives the audits:

- :func:`target_networks`: which modules of the policy are target networks, and of which online module;
- :func:`compute_td_targets`: the critic's regression targets for a batch, term by term as ``train()`` computes
  them, from the policy's target networks as they are now;
- :func:`compute_td_loss`: the critic loss ``train()`` minimises against given targets (Huber for DQN, squared
  errors over the critics for SAC and TD3);
- :class:`OffPolicyInstruments`: what an SB3 run did, fed to the recorder while ``model.learn`` runs: gradient
  steps per ``train()`` call, batch size and, for SAC, TD3 and DDPG, the actor's updates among them (counted
  on the actor optimizer, ``recorder.update``), every Polyak or hard update of a target network
  (``recorder.target_update``, seen by wrapping SB3's ``polyak_update`` in the algorithm's module), epsilon,
  the entropy coefficient, the target entropy and the σ of the noise on actions (TD3 and DDPG explore through
  it alone; ``recorder.exploration``), and the replay buffer's fill, size
  in bytes and the ages of the transitions it sampled (``recorder.replay``, seen by wrapping the buffer's
  ``_get_samples``).

The recorder methods are optional: a recorder without them (an older one, or a plain test double that lacks
them) is simply not fed that table.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from rlaudit.adapters.sb3.setup import require_algorithm

OFF_POLICY = frozenset({"dqn", "sac", "td3", "ddpg"})

TARGET_NETWORKS: dict[str, dict[str, str]] = {
    "dqn": {"q_net_target": "q_net"},
    "sac": {"critic_target": "critic"},
    "td3": {"critic_target": "critic", "actor_target": "actor"},
    "ddpg": {"critic_target": "critic", "actor_target": "actor"},
}
"""Per algorithm, the target module's parameter-name prefix -> its online counterpart's, in SB3's policies."""

RECORD_POINTS = 1000
"""At most about this many rows of the exploration and replay tables per run: a SAC run trains at every
environment step, and one row per step would cost more than the rest of the recorder."""


def target_networks(config: dict[str, Any], policy: Any) -> dict[str, str]:
    """The policy's target networks: ``{target prefix: online prefix}`` in ``policy.named_parameters()``.

    Only prefixes whose modules the policy really has are returned (a policy class that shares its target
    with the online network would have none). Empty for on-policy algorithms.
    """
    names = [name for name, _ in policy.named_parameters()]
    out = {}
    for target, online in TARGET_NETWORKS.get(config["algo"], {}).items():
        has = [n for n in names if n.startswith(target + ".")]
        if has and any(n.startswith(online + ".") for n in names):
            out[target] = online
    return out


def _entropy_coefficient(config: dict[str, Any], policy: Any) -> float:
    """SAC's current entropy coefficient: what training last used (kept on the policy by the adapter, or read
    from a model zip), else the setup's starting value (``auto`` starts at 1, ``auto_0.1`` at 0.1)."""
    current = getattr(policy, "rlaudit_ent_coef", None)
    if current is not None:
        return float(current)
    value = config.get("ent_coef", "auto")
    if isinstance(value, str) and value.startswith("auto"):
        return float(value.split("_", 1)[1]) if "_" in value else 1.0
    return float(value)


def n_step(config: dict[str, Any]) -> int:
    """Steps of the return SB3's replay buffer sums: ``n_steps`` (SB3 >= 2.7 builds its NStepReplayBuffer
    when no buffer class is given), or the ``n_steps`` of an explicit ``NStepReplayBuffer``; else 1."""
    buffer_class = str(config.get("replay_buffer_class") or "")
    if buffer_class.endswith("NStepReplayBuffer"):
        return int((config.get("replay_buffer_kwargs") or {}).get("n_steps", 3))
    if not buffer_class:
        return max(1, int(config.get("n_steps") or 1))
    return 1


def _discount(config: dict[str, Any], batch: dict[str, Any], n: int) -> Any:
    """``gamma ** n_step``, or the batch's ``discounts`` when given (SB3's n-step buffer shortens the power
    where an episode ended inside the n steps)."""
    if batch.get("discounts") is not None:
        return np.asarray(batch["discounts"], dtype=np.float32).reshape(n, 1)
    return float(config["gamma"]) ** n_step(config)


def _dones(config: dict[str, Any], batch: dict[str, Any]) -> np.ndarray:
    """The done mask SB3's replay buffer gives: terminations only (a time-limit truncation bootstraps),
    unless ``replay_buffer_kwargs.handle_timeout_termination`` is false, which makes truncations terminal
    (the n-step buffer always bootstraps a truncation)."""
    terminated = np.asarray(batch["terminated"], dtype=bool).reshape(-1)
    truncated = np.asarray(batch.get("truncated", np.zeros_like(terminated)), dtype=bool).reshape(-1)
    handle = n_step(config) > 1 or (config.get("replay_buffer_kwargs") or {}).get(
        "handle_timeout_termination", True
    )
    done = terminated if handle else terminated | truncated
    return done.astype(np.float32)


def compute_td_targets(config: dict[str, Any], policy: Any, batch: dict[str, Any]) -> dict[str, Any]:
    """The targets SB3's ``train()`` regresses its critic on, for one batch, with the policy's target networks
    as they are now (stable-baselines3 2.x, term by term):

    - DQN: ``r + (1 - done) * gamma * max_a Q_target(s', a)`` (no double-Q: the max is over the target net);
    - SAC: ``a' ~ pi(s')`` (a fresh sample, seeded by ``batch["seed"]``),
      ``r + (1 - done) * gamma * (min_i Q_target_i(s', a') - alpha * log pi(a'|s'))`` with the current entropy
      coefficient ``alpha``;
    - TD3 (and DDPG): ``a' = clip(pi_target(s') + clip(eps, -c, c), -1, 1)`` with
      ``eps ~ N(0, target_policy_noise)`` (seeded), ``r + (1 - done) * gamma * min_i Q_target_i(s', a')``.

    ``done`` is the termination flag; a truncation bootstraps (SB3's ``handle_timeout_termination``). The
    random draws come from torch's global generator seeded with ``batch["seed"]`` (0 when absent) inside a
    forked RNG state, so the caller's random state is untouched and the same seed gives the same targets.

    Args:
        config: The resolved setup.
        policy: An SB3 DQN, SAC, TD3 or DDPG policy (``make_policy``, ``load_checkpoint``).
        batch: ``obs``, ``actions``, ``rewards`` (B,), ``next_obs``, ``terminated`` (B,), ``truncated`` (B,);
            optional ``seed`` and ``discounts`` (B,). With n-step returns (``n_steps`` > 1) a row is what SB3's
            n-step buffer returns: the discounted reward sum, the observation n steps later, and the discount
            ``gamma ** n`` unless ``discounts`` say otherwise.

    Returns:
        ``targets`` (B,); ``bootstrap`` (B,), the next-state value before discount and mask; for twin critics
        ``next_q`` (B, n_critics), each target critic's value; for SAC ``next_log_prob`` (B,) and ``ent_coef``.

    Raises:
        TypeError: The setup's algorithm is not an off-policy learner.
    """
    import torch

    algo = require_algorithm(config, OFF_POLICY, "compute_td_targets", "off-policy")
    device = getattr(policy, "device", torch.device("cpu"))
    rewards_np = np.asarray(batch["rewards"], dtype=np.float32).reshape(-1)
    n = len(rewards_np)
    rewards = torch.as_tensor(rewards_np, device=device).reshape(n, 1)
    dones = torch.as_tensor(_dones(config, batch), device=device).reshape(n, 1)
    discount = _discount(config, batch, n)
    if isinstance(discount, np.ndarray):
        discount = torch.as_tensor(discount, device=device)
    next_obs = torch.as_tensor(np.asarray(batch["next_obs"]), device=device)
    seed = int(batch.get("seed", 0) or 0)
    out: dict[str, Any] = {}

    was_training = bool(policy.training)
    policy.set_training_mode(True)  # as train() does (it matters only with batch norm or dropout)
    devices = [device] if device.type == "cuda" else []
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            if algo == "dqn":
                bootstrap, _ = policy.q_net_target(next_obs).max(dim=1)
                bootstrap = bootstrap.reshape(-1, 1)
            elif algo == "sac":
                next_actions, next_log_prob = policy.actor.action_log_prob(next_obs)
                next_q = torch.cat(policy.critic_target(next_obs, next_actions), dim=1)
                ent_coef = _entropy_coefficient(config, policy)
                bootstrap = torch.min(next_q, dim=1, keepdim=True)[0] - ent_coef * next_log_prob.reshape(
                    -1, 1
                )
                out["next_q"] = next_q
                out["next_log_prob"] = next_log_prob.reshape(-1)
                out["ent_coef"] = np.float64(ent_coef)
            else:  # td3, ddpg
                actions = torch.as_tensor(np.asarray(batch["actions"]), dtype=torch.float32, device=device)
                actions = actions.reshape(n, -1)
                noise = actions.clone().normal_(0, float(config["target_policy_noise"]))
                noise = noise.clamp(-float(config["target_noise_clip"]), float(config["target_noise_clip"]))
                next_actions = (policy.actor_target(next_obs) + noise).clamp(-1, 1)
                next_q = torch.cat(policy.critic_target(next_obs, next_actions), dim=1)
                bootstrap = torch.min(next_q, dim=1, keepdim=True)[0]
                out["next_q"] = next_q
            targets = rewards + (1 - dones) * discount * bootstrap
    finally:
        policy.set_training_mode(was_training)
    out["targets"] = targets.reshape(-1)
    out["bootstrap"] = bootstrap.reshape(-1)
    return {
        k: (v.detach().cpu().numpy().astype(np.float64) if isinstance(v, torch.Tensor) else v)
        for k, v in out.items()
    }


def compute_td_loss(config: dict[str, Any], policy: Any, batch: dict[str, Any], targets: Any) -> float:
    """The critic loss SB3's ``train()`` minimises on one batch against the given targets (stable-baselines3 2.x):

    - DQN: ``F.smooth_l1_loss(Q(s, a), targets)`` (Huber, threshold 1, averaged over the batch);
    - SAC: ``0.5 * sum_i F.mse_loss(Q_i(s, a), targets)`` over its critics;
    - TD3 (and DDPG): ``sum_i F.mse_loss(Q_i(s, a), targets)`` over its critics.

    Args:
        config: The resolved setup.
        policy: An SB3 DQN, SAC, TD3 or DDPG policy.
        batch: ``obs`` and ``actions`` with leading dim B (numpy, as for :func:`compute_td_targets`).
        targets: (B,) the targets to regress on.

    Raises:
        TypeError: The setup's algorithm is not an off-policy learner.
    """
    import torch
    from torch.nn import functional as F

    algo = require_algorithm(config, OFF_POLICY, "compute_td_loss", "off-policy")
    device = getattr(policy, "device", torch.device("cpu"))
    obs = torch.as_tensor(np.asarray(batch["obs"]), device=device)
    n = obs.shape[0]
    goal = torch.as_tensor(np.asarray(targets, dtype=np.float32), device=device).reshape(n, 1)
    was_training = bool(policy.training)
    policy.set_training_mode(True)  # as train() does
    try:
        with torch.no_grad():
            if algo == "dqn":
                actions = torch.as_tensor(np.asarray(batch["actions"]), device=device).long().reshape(n, 1)
                current = torch.gather(policy.q_net(obs), dim=1, index=actions)
                loss = F.smooth_l1_loss(current, goal)
            else:
                actions = torch.as_tensor(np.asarray(batch["actions"]), dtype=torch.float32, device=device)
                currents = policy.critic(obs, actions.reshape(n, -1))
                loss = sum(F.mse_loss(current, goal) for current in currents)
                if algo == "sac":
                    loss = 0.5 * loss
    finally:
        policy.set_training_mode(was_training)
    return float(loss)


# ---------------------------------------------------------------------------------------------------------
# Feeding the recorder during model.learn


def _buffer_nbytes(buffer: Any) -> int:
    """Bytes the replay buffer allocated for its transitions (numpy arrays, dict observations included)."""
    total = 0
    for name in ("observations", "next_observations", "actions", "rewards", "dones", "timeouts"):
        value = getattr(buffer, name, None)
        if isinstance(value, dict):
            total += sum(int(v.nbytes) for v in value.values())
        elif isinstance(value, np.ndarray):
            total += int(value.nbytes)
    return total


class OffPolicyInstruments:
    """Feeds the recorder from an SB3 off-policy model while ``model.learn`` runs.

    :meth:`install` wraps, for this model only, ``model.train`` (gradient steps and batch size per call, timed
    as phase ``train`` inside the callback's ``update`` phase), SAC's and TD3's optimizers' steps (counted, so
    a gradient step is what actually ran, and an actor update is a step of the actor's optimizer: TD3's
    ``policy_delay`` as it ran), the replay buffer's ``_get_samples`` (ages of the sampled rows)
    and, in the algorithm's module, ``polyak_update`` (every target-network update, with its ``tau``);
    :meth:`uninstall` puts them all back. Use as a context manager around ``model.learn``.

    Args:
        model: An SB3 DQN, SAC, TD3 or DDPG model.
        recorder: The run's recorder; methods it lacks are not called.
        config: The resolved setup.
        total_steps: Length of the run in environment steps, to space the exploration and replay rows
            (:data:`RECORD_POINTS`).
    """

    def __init__(self, model: Any, recorder: Any, config: dict[str, Any], total_steps: int) -> None:
        self.model = model
        self.recorder = recorder
        self.config = config
        self.every = max(1, int(total_steps) // RECORD_POINTS)
        self.gradient_steps = 0
        self.actor_updates = 0
        self._last_record = -math.inf
        self._collect_ages = False
        self._ages: list[np.ndarray] = []
        self._last_target: tuple[int, int] | None = None
        self._restore: list[tuple[Any, str, Any, bool]] = []
        self._hooks: list[Any] = []
        policy = model.policy
        prefixes = tuple(p + "." for p in target_networks(config, policy))
        self._target_ids = {id(p) for n, p in policy.named_parameters() if n.startswith(prefixes)}

    # -- install / uninstall -------------------------------------------------------------------------

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        had = name in vars(owner) if hasattr(owner, "__dict__") else False
        self._restore.append((owner, name, getattr(owner, name), had))
        setattr(owner, name, value)

    def install(self) -> OffPolicyInstruments:
        model = self.model
        self._patch(model, "train", self._wrap_train(model.train))
        excluded = model._excluded_save_params
        # model.save() pickles the instance's attributes: keep the wrapper out of the model zip
        self._patch(model, "_excluded_save_params", lambda: [*excluded(), "train", "_excluded_save_params"])
        module = sys.modules[type(model).train.__module__]
        dqn_module = sys.modules[type(model)._on_step.__module__]
        for mod in {module, dqn_module}:
            if hasattr(mod, "polyak_update"):
                self._patch(mod, "polyak_update", self._wrap_polyak(mod.polyak_update))
        main = model.policy.optimizer if self.config["algo"] == "dqn" else model.critic.optimizer
        self._hooks.append(main.register_step_post_hook(self._count_step))
        actor = getattr(getattr(model, "actor", None), "optimizer", None)
        if self.config["algo"] != "dqn" and actor is not None:
            self._hooks.append(actor.register_step_post_hook(self._count_actor_step))
        return self

    def _install_buffer(self) -> None:
        """The replay buffer exists only once ``learn`` set the model up; wrapped at the first ``train``."""
        buffer = getattr(self.model, "replay_buffer", None)
        if buffer is None or "_get_samples" in vars(buffer):
            return
        self._patch(buffer, "_get_samples", self._wrap_samples(buffer, buffer._get_samples))

    def uninstall(self) -> None:
        for handle in self._hooks:
            handle.remove()
        self._hooks.clear()
        for owner, name, value, had in reversed(self._restore):
            if had or not hasattr(owner, "__dict__"):
                setattr(owner, name, value)
            else:
                try:
                    delattr(owner, name)  # an instance attribute shadowing the class's method
                except AttributeError:
                    setattr(owner, name, value)
        self._restore.clear()

    def __enter__(self) -> OffPolicyInstruments:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.uninstall()

    # -- wrappers ------------------------------------------------------------------------------------

    def _count_step(self, *args: Any) -> None:
        self.gradient_steps += 1

    def _count_actor_step(self, *args: Any) -> None:
        self.actor_updates += 1

    def _call(self, name: str, *args: Any, **kwargs: Any) -> None:
        method = getattr(self.recorder, name, None)
        if callable(method):
            method(*args, **kwargs)

    def _wrap_train(self, train: Any) -> Any:
        def wrapped(gradient_steps: int, batch_size: int = 100) -> None:
            self._install_buffer()
            step = int(self.model.num_timesteps)
            record = step - self._last_record >= self.every
            self._collect_ages = record
            self._ages = []
            before, actor_before = self.gradient_steps, self.actor_updates
            with self.recorder.phase("train"):
                train(gradient_steps=gradient_steps, batch_size=batch_size)
            self._collect_ages = False
            actor = (
                {} if self.config["algo"] == "dqn" else {"actor_updates": self.actor_updates - actor_before}
            )
            self._call(
                "update",
                step,
                gradient_steps=self.gradient_steps - before,
                batch_size=int(batch_size),
                **actor,
            )
            if self.config["algo"] == "sac":
                # what compute_td_targets uses as the current temperature, and what a saved model carries
                self.model.policy.rlaudit_ent_coef = self._alpha()
            if record:
                self._last_record = step
                self._record(step)

        return wrapped

    def _wrap_polyak(self, polyak: Any) -> Any:
        def wrapped(params: Any, target_params: Any, tau: float) -> None:
            params, target_params = list(params), list(target_params)
            polyak(params, target_params, tau)
            if target_params and id(target_params[0]) in self._target_ids:
                key = (int(self.model.num_timesteps), self.gradient_steps)
                if key != self._last_target:  # TD3 updates its critic and actor targets in two calls
                    self._last_target = key
                    self._call("target_update", key[0], gradient_step=key[1], tau=float(tau))

        return wrapped

    def _wrap_samples(self, buffer: Any, get_samples: Any) -> Any:
        def wrapped(batch_inds: Any, *args: Any, **kwargs: Any) -> Any:
            if self._collect_ages:
                # rows written before the newest (pos - 1), in environment steps (n_envs per row)
                rows = (int(buffer.pos) - 1 - np.asarray(batch_inds, dtype=np.int64)) % int(
                    buffer.buffer_size
                )
                self._ages.append(rows * int(buffer.n_envs))
            return get_samples(batch_inds, *args, **kwargs)

        return wrapped

    # -- rows ----------------------------------------------------------------------------------------

    def _alpha(self) -> float | None:
        model = self.model
        log_coef = getattr(model, "log_ent_coef", None)
        if log_coef is not None:
            return float(log_coef.detach().exp().item())
        tensor = getattr(model, "ent_coef_tensor", None)
        return float(tensor.item()) if tensor is not None else None

    def _record(self, step: int) -> None:
        model = self.model
        algo = self.config["algo"]
        if algo == "dqn":
            self._call("exploration", step, epsilon=float(model.exploration_rate))
        elif algo == "sac":
            target = getattr(model, "target_entropy", None)
            self._call(
                "exploration",
                step,
                alpha=self._alpha(),
                target_entropy=float(target) if isinstance(target, int | float) else None,
                action_noise=_noise_sigma(model.action_noise),  # SAC explores by its policy; noise is extra
            )
        elif algo in ("td3", "ddpg"):
            # the noise on the actor's actions is all they explore by: none is σ 0, not "not recorded"
            noise = model.action_noise
            self._call("exploration", step, action_noise=0.0 if noise is None else _noise_sigma(noise))
        buffer = getattr(model, "replay_buffer", None)
        if buffer is not None:
            n_envs = int(buffer.n_envs)
            ages = np.concatenate(self._ages) if self._ages else None
            self._call(
                "replay",
                step,
                size=int(buffer.size()) * n_envs,
                capacity=int(buffer.buffer_size) * n_envs,
                nbytes=_buffer_nbytes(buffer),
                ages=ages,
                prioritized=False,  # SB3's replay buffers sample uniformly
            )
        self._ages = []


def _noise_sigma(noise: Any) -> float | None:
    """The mean σ of SB3's action noise (per environment: ``VectorizedActionNoise`` holds one per env); None
    for no noise or one that does not say its σ."""
    if noise is None:
        return None
    noise = getattr(noise, "base_noise", noise)
    sigma = getattr(noise, "_sigma", None)
    return None if sigma is None else float(np.mean(np.asarray(sigma, dtype=np.float64)))
