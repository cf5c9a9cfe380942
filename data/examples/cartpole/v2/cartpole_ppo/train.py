"""A small single-file PPO for CartPole-v1 (Gymnasium): the "after" version of the worked example.

Version 2 "tidied up" the loss: the policy and value terms moved into helpers and the hyperparameters were
retyped. Training got worse; rlaudit's report on v1 vs v2 finds out why (see ../../README.md).

Reads top to bottom like CleanRL's ``ppo.py`` (same variable names: ``num_envs``, ``num_steps``, ``b_obs``,
``mb_inds``, ``clipfracs``), with the math kept in module functions (:func:`compute_gae`, :func:`ppo_loss`) so
that a subject file can hand them to rlaudit. Learns CartPole in about 100k steps (about ten seconds on a CPU).

This package knows nothing about rlaudit: ``train`` takes any object with the recorder's methods (``watch``,
``log``, ``episode``, ``phase``) or None.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_DIR = PACKAGE_DIR.parent


@dataclass
class Args:
    """Hyperparameters (CleanRL names; one line each)."""

    env_id: str = "CartPole-v1"  # Gymnasium environment id
    num_envs: int = 8  # parallel environments
    num_steps: int = 128  # steps per environment per rollout
    total_timesteps: int = 100_000  # default run length (train() takes its own `steps`)
    learning_rate: float = 2.5e-3  # Adam step size at the start of training
    anneal_lr: bool = True  # decay the learning rate linearly to 0 over the run
    adam_eps: float = 1e-5  # Adam epsilon (PPO implementations use 1e-5, torch's default is 1e-8)
    gamma: float = 0.99  # discount factor
    gae_lambda: float = 0.95  # GAE lambda
    num_minibatches: int = 4  # minibatches per epoch
    update_epochs: int = 4  # epochs over each rollout
    norm_adv: bool = True  # normalize advantages per minibatch
    clip_coef: float = 0.2  # PPO ratio clip
    clip_vloss: bool = True  # clip the value loss around the old values
    ent_coef: float = 0.01  # entropy bonus coefficient
    vf_coef: float = 5.0  # value loss coefficient
    max_grad_norm: float = 0.5  # global gradient-norm clip
    hidden_size: int = 64  # width of both hidden layers of actor and critic
    torch_threads: int = 1  # torch CPU threads while training
    run_dir: str = "runs/default"  # where logs and checkpoints go (relative to the project directory)
    checkpoint_every: int = 0  # also save a checkpoint every N updates (0: only half-way and at the end)

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches


def resolve_run_dir(args: Args) -> Path:
    path = Path(args.run_dir)
    return path if path.is_absolute() else PROJECT_DIR / path


# ---------------------------------------------------------------------------------------------------------
# Environment and agent


def make_env(args: Args, seed: int) -> gym.vector.VectorEnv:
    """``num_envs`` CartPoles in one synchronous vector env, reset in the same step an episode ends.

    SAME_STEP autoreset keeps CleanRL's convention: the observation returned with ``done`` is already the
    first one of the next episode. ``RecordEpisodeStatistics`` reports each finished episode's return and
    length in ``info["episode"]`` (masked by ``info["_episode"]``).
    """
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.make(args.env_id) for _ in range(args.num_envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)
    envs.action_space.seed(seed)
    envs.reset(seed=seed)
    return envs


def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    """Orthogonal init (Huang et al. 2022, "The 37 implementation details of PPO", detail 2)."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """Separate actor and critic MLPs with tanh activations."""

    def __init__(self, obs_dim: int, n_actions: int, hidden_size: int = 64) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden_size)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden_size, hidden_size)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden_size, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden_size)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden_size, hidden_size)),
            nn.Tanh(),
            layer_init(nn.Linear(hidden_size, n_actions), std=0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` (B, obs_dim) -> values (B,)."""
        return self.critic(x).squeeze(-1)

    def get_action_and_value(
        self, x: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample (or score) actions: ``x`` (B, obs_dim) -> (action (B,), logprob (B,), entropy (B,), value (B,))."""
        # log_softmax + gather is a categorical distribution without torch.distributions' per-call
        # validation, which costs more than the network itself at these sizes
        logp_all = torch.log_softmax(self.actor(x), dim=-1)
        p_all = logp_all.exp()
        if action is None:
            action = torch.multinomial(p_all, 1).squeeze(-1)
        logprob = logp_all.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        entropy = -(p_all * logp_all).sum(-1)
        return action, logprob, entropy, self.get_value(x)


def make_agent(args: Args, observation_space: gym.Space, action_space: gym.Space) -> Agent:
    obs_dim = int(np.prod(observation_space.shape))
    return Agent(obs_dim, int(action_space.n), args.hidden_size)


def make_optimizer(args: Args, agent: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=args.adam_eps)


# ---------------------------------------------------------------------------------------------------------
# The math


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    next_value: torch.Tensor,
    next_done: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation (Schulman et al. 2016, https://arxiv.org/abs/1506.02438).

    CleanRL's convention: ``dones[t]`` is 1 when ``obs[t]`` starts a new episode.

    Args:
        rewards, values, dones: (T, N).
        next_value, next_done: (N,) for the observation after the last step.

    Returns:
        ``(advantages, returns)``, both (T, N).
    """
    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros_like(next_value)
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nextnonterminal = 1.0 - next_done
            nextvalues = next_value
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
    return advantages, advantages + values


def clipped_policy_loss(ratio: torch.Tensor, advantages: torch.Tensor, clip_coef: float) -> torch.Tensor:
    """PPO's clipped surrogate (to minimize); ``ratio``, ``advantages`` (B,)."""
    pg_loss1 = -advantages * ratio
    pg_loss2 = -advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
    return torch.max(pg_loss1, pg_loss2).mean()


def clipped_value_loss(
    newvalue: torch.Tensor, oldvalue: torch.Tensor, returns: torch.Tensor, clip_coef: float, clip: bool
) -> torch.Tensor:
    """Half the squared error of the value head, optionally clipped around the old values; inputs (B,)."""
    if not clip:
        return 0.5 * ((newvalue - returns) ** 2).mean()
    v_loss_unclipped = (newvalue - returns) ** 2
    v_clipped = oldvalue + torch.clamp(newvalue - oldvalue, -clip_coef, clip_coef)
    v_loss_clipped = (v_clipped - returns) ** 2
    return 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()


def ppo_loss(
    args: Args,
    newlogprob: torch.Tensor,
    oldlogprob: torch.Tensor,
    advantages: torch.Tensor,
    newvalue: torch.Tensor,
    oldvalue: torch.Tensor,
    returns: torch.Tensor,
    entropy: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """Clipped PPO objective on one minibatch; every input is (B,).

    Returns:
        ``loss`` (what backward() is called on), ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``,
        ``clipfrac``.
    """
    logratio = newlogprob - oldlogprob
    ratio = logratio.exp()
    with torch.no_grad():
        # http://joschu.net/blog/kl-approx.html
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > args.clip_coef).float().mean()

    pg_loss = clipped_policy_loss(ratio, advantages, args.clip_coef)
    v_loss = clipped_value_loss(newvalue, oldvalue, returns, args.clip_coef, args.clip_vloss)
    entropy_loss = entropy.mean()
    loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
    return {
        "loss": loss,
        "policy_loss": pg_loss,
        "value_loss": v_loss,
        "entropy": entropy_loss,
        "approx_kl": approx_kl,
        "clipfrac": clipfrac,
    }


# ---------------------------------------------------------------------------------------------------------
# Checkpoints and logs


def checkpoint_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / "checkpoints"


def list_checkpoints(run_dir: str | Path) -> list[str]:
    """The run's checkpoints, latest (highest step) first."""
    found = sorted(checkpoint_dir(run_dir).glob("ckpt_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    return [str(p) for p in reversed(found)]


def save_checkpoint(
    run_dir: str | Path,
    agent: Agent,
    optimizer: torch.optim.Optimizer,
    args: Args,
    global_step: int,
    update: int,
) -> Path:
    """Tensors, plain dicts and numbers only, so ``torch.load(weights_only=True)`` reads it."""
    path = checkpoint_dir(run_dir) / f"ckpt_{global_step:08d}.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "agent": agent.state_dict(),
            "optimizer": optimizer.state_dict(),
            "global_step": global_step,
            "update": update,
            "args": json.dumps(asdict(args)),
            "spaces": {"obs_dim": agent.critic[0].in_features, "n_actions": agent.actor[-1].out_features},
        },
        tmp,
    )
    tmp.replace(path)
    return path


def load_checkpoint(args: Args, path: str | Path) -> tuple[Agent, dict[str, Any]]:
    data = torch.load(path, map_location="cpu", weights_only=True)
    spaces = data["spaces"]
    agent = Agent(int(spaces["obs_dim"]), int(spaces["n_actions"]), args.hidden_size)
    agent.load_state_dict(data["agent"])
    extras = {"optimizer": data["optimizer"], "step": int(data["global_step"]), "update": int(data["update"])}
    return agent, extras


class CsvLogger:
    """Scalars as ``<run_dir>/logs/scalars.csv`` with columns step, name, value (what TensorBoard would hold)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / "logs" / "scalars.csv"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", newline="")
        self._writer = csv.writer(self._file)
        self._writer.writerow(["step", "name", "value"])

    def log(self, step: int, scalars: dict[str, float]) -> None:
        for name, value in scalars.items():
            self._writer.writerow([step, name, f"{value:.8g}"])
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class _NoRecorder:
    """Stands in for a recorder when none is given."""

    run_dir = None

    def watch(self, policy: Any, optimizer: Any) -> None:
        pass

    def log(self, step: int, **scalars: float) -> None:
        pass

    def episode(self, step: int, env: int = -1, **stats: Any) -> None:
        pass

    def phase(self, name: str) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


# ---------------------------------------------------------------------------------------------------------
# Training


def train(
    args: Args,
    steps: int | None = None,
    seed: int = 1,
    recorder: Any = None,
    *,
    resume_from: str | Path | None = None,
    env_fn: Callable[[int, int], gym.vector.VectorEnv] | None = None,
) -> dict[str, Any]:
    """Train for ``steps`` environment steps (default ``args.total_timesteps``), rounded down to whole rollouts.

    Args:
        args: Hyperparameters.
        steps: Environment steps, all environments together.
        seed: Seeds torch (init, sampling), the minibatch shuffles and the environments.
        recorder: Runtime instrumentation (rlaudit's Recorder) or None; its ``run_dir``, when set, is where
            logs and checkpoints go (else ``args.run_dir``).
        resume_from: A checkpoint to continue from (weights, optimizer, step counter).
        env_fn: ``env_fn(num_envs, seed) -> VectorEnv`` replacing :func:`make_env` (SAME_STEP autoreset).

    Returns:
        Summary: steps, updates, seconds, sps, mean return of the last 20 episodes, run_dir, checkpoints.
    """
    rec = recorder if recorder is not None else _NoRecorder()
    run_dir = Path(rec.run_dir) if getattr(rec, "run_dir", None) is not None else resolve_run_dir(args)
    total = int(steps if steps is not None else args.total_timesteps)
    num_updates = max(1, total // args.batch_size)

    previous_threads = torch.get_num_threads()
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    envs = env_fn(args.num_envs, seed) if env_fn is not None else make_env(args, seed)
    agent = make_agent(args, envs.single_observation_space, envs.single_action_space)
    optimizer = make_optimizer(args, agent)
    rec.watch(agent, optimizer)
    logger = CsvLogger(run_dir)

    global_step, start_update = 0, 0
    if resume_from is not None:
        data = torch.load(resume_from, map_location="cpu", weights_only=True)
        agent.load_state_dict(data["agent"])
        optimizer.load_state_dict(data["optimizer"])
        global_step, start_update = int(data["global_step"]), int(data["update"])

    obs_shape = envs.single_observation_space.shape
    obs = torch.zeros((args.num_steps, args.num_envs, *obs_shape))
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.long)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    next_obs_np, _ = envs.reset(seed=seed)
    next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32)
    next_done = torch.zeros(args.num_envs)
    ep_return = np.zeros(args.num_envs)
    ep_length = np.zeros(args.num_envs, dtype=np.int64)
    recent_returns: list[float] = []
    start_time = time.perf_counter()
    update = start_update
    try:
        for update in range(start_update + 1, num_updates + 1):
            # learning-rate annealing: linear from learning_rate to 0 over the run
            if args.anneal_lr:
                frac = 1.0 - (update - 1.0) / num_updates
                optimizer.param_groups[0]["lr"] = frac * args.learning_rate

            with rec.phase("rollout"):
                for step in range(args.num_steps):
                    global_step += args.num_envs
                    obs[step] = next_obs
                    dones[step] = next_done
                    with torch.no_grad():
                        action, logprob, _, value = agent.get_action_and_value(next_obs)
                    values[step] = value
                    actions[step] = action
                    logprobs[step] = logprob

                    next_obs_np, reward, terminations, truncations, _ = envs.step(action.numpy())
                    done = np.logical_or(terminations, truncations)
                    rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
                    next_obs = torch.as_tensor(next_obs_np, dtype=torch.float32)
                    next_done = torch.as_tensor(done, dtype=torch.float32)

                    # episode statistics kept here rather than read from info: env_fn may hand in any env
                    ep_return += reward
                    ep_length += 1
                    for i in np.flatnonzero(done):
                        stats = {"return": float(ep_return[i]), "length": int(ep_length[i])}
                        rec.episode(step=global_step, env=int(i), **stats)
                        recent_returns.append(stats["return"])
                        ep_return[i], ep_length[i] = 0.0, 0

            with rec.phase("update"):
                # bootstrap value if not done
                with torch.no_grad():
                    next_value = agent.get_value(next_obs)
                    advantages, returns = compute_gae(
                        rewards, values, dones, next_value, next_done, args.gamma, args.gae_lambda
                    )

                # flatten the batch
                b_obs = obs.reshape((-1, *obs_shape))
                b_logprobs = logprobs.reshape(-1)
                b_actions = actions.reshape(-1)
                b_advantages = advantages.reshape(-1)
                b_returns = returns.reshape(-1)
                b_values = values.reshape(-1)

                b_inds = np.arange(args.batch_size)
                clipfracs = []
                for _epoch in range(args.update_epochs):
                    rng.shuffle(b_inds)
                    for start in range(0, args.batch_size, args.minibatch_size):
                        mb_inds = torch.as_tensor(b_inds[start : start + args.minibatch_size])
                        _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                            b_obs[mb_inds], b_actions[mb_inds]
                        )
                        out = ppo_loss(
                            args,
                            newlogprob,
                            b_logprobs[mb_inds],
                            b_advantages[mb_inds],
                            newvalue,
                            b_values[mb_inds],
                            b_returns[mb_inds],
                            entropy,
                        )
                        clipfracs.append(float(out["clipfrac"]))
                        optimizer.zero_grad()
                        out["loss"].backward()
                        nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                        optimizer.step()

            sps = global_step / max(time.perf_counter() - start_time, 1e-9)
            scalars = {
                "charts/learning_rate": float(optimizer.param_groups[0]["lr"]),
                "losses/value_loss": out["value_loss"].item(),
                "losses/policy_loss": out["policy_loss"].item(),
                "losses/entropy": out["entropy"].item(),
                "losses/approx_kl": out["approx_kl"].item(),
                "losses/clipfrac": float(np.mean(clipfracs)),
                "charts/clip_coef": args.clip_coef,
                "charts/ent_coef": args.ent_coef,
                "perf/sps": sps,
            }
            if recent_returns:
                scalars["charts/episodic_return"] = float(np.mean(recent_returns[-20:]))
            rec.log(global_step, **scalars)
            logger.log(global_step, scalars)
            if hasattr(rec, "sample_memory"):
                rec.sample_memory(global_step)
            periodic = args.checkpoint_every and update % args.checkpoint_every == 0
            if (update == num_updates // 2 or periodic) and update < num_updates:
                save_checkpoint(run_dir, agent, optimizer, args, global_step, update)
        save_checkpoint(run_dir, agent, optimizer, args, global_step, update)
    finally:
        logger.close()
        envs.close()
        torch.set_num_threads(previous_threads)
    seconds = time.perf_counter() - start_time
    return {
        "steps": global_step,
        "updates": update,
        "seconds": seconds,
        "sps": global_step / max(seconds, 1e-9),
        "mean_return_last20": float(np.mean(recent_returns[-20:])) if recent_returns else float("nan"),
        "run_dir": str(run_dir),
        "checkpoints": list_checkpoints(run_dir),
    }


if __name__ == "__main__":
    summary = train(Args())
    print(json.dumps(summary, indent=2))
