"""rlaudit subject for the CartPole PPO example: how rlaudit sees the trainer in ./cartpole_ppo.

This file is the glue between a trainer and rlaudit, and the same file serves both versions of the example
(v1/subject.py and v2/subject.py are identical): each imports *its own* ``cartpole_ppo`` package, because
rlaudit runs every subject in a process of its own with the subject's directory first on ``sys.path``.

Every capability of the contract is here (``rlaudit new-subject DIR`` writes a commented template of them).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch
from cartpole_ppo import train as ppo

from rlaudit.adapters.configs import apply_overrides

HERE = Path(__file__).resolve().parent
_FIELDS = {f.name for f in dataclasses.fields(ppo.Args)}


def _args(config: dict[str, Any]) -> ppo.Args:
    """The trainer's own config object from the dict rlaudit passes around."""
    unknown = sorted(set(config) - _FIELDS)
    if unknown:
        raise ValueError(
            f"config key(s) {', '.join(unknown)} are not hyperparameters of cartpole_ppo.train.Args; "
            f"known: {', '.join(sorted(_FIELDS))}"
        )
    return ppo.Args(**config)


def config(overrides: list[str] | None = None) -> dict[str, Any]:
    """Every hyperparameter of ``cartpole_ppo.train.Args`` (the trainer derives nothing else at startup
    but ``batch_size = num_envs * num_steps`` and ``minibatch_size = batch_size // num_minibatches``).

    overrides: ``key=value`` strings (YAML values), e.g. ``["vf_coef=0.5", "norm_adv=true"]``.
    """
    cfg = apply_overrides(dataclasses.asdict(ppo.Args()), overrides)
    _args(cfg)  # rejects a value the trainer would not accept
    return cfg


def config_keys() -> dict[str, list[str]]:
    return {
        "env": ["env_id", "num_envs"],
        "trainer": ["num_steps", "total_timesteps", "update_epochs", "num_minibatches", "torch_threads"],
        "optimizer": ["learning_rate", "anneal_lr", "adam_eps", "max_grad_norm"],
        "loss": ["gamma", "gae_lambda", "norm_adv", "clip_coef", "clip_vloss", "ent_coef", "vf_coef"],
        "agents": ["hidden_size"],
        "logging": ["run_dir"],
        "checkpointing": ["checkpoint_every"],
    }


def make_env(config: dict[str, Any], seed: int):
    return ppo.make_env(_args(config), seed)


def make_policy(config: dict[str, Any], observation_space, action_space) -> torch.nn.Module:
    return ppo.make_agent(_args(config), observation_space, action_space)


def make_optimizer(config: dict[str, Any], policy: torch.nn.Module):
    """Adam, and with ``anneal_lr`` a scheduler that mirrors the training loop's decay (one step per update)."""
    args = _args(config)
    optimizer = ppo.make_optimizer(args, policy)
    if not args.anneal_lr:
        return optimizer
    num_updates = max(1, args.total_timesteps // args.batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: max(0.0, 1.0 - k / num_updates))
    return optimizer, scheduler


def compute_advantages(config: dict[str, Any], rewards, values, dones, next_value):
    """GAE on a rollout in the contract's convention (``dones[t]``: the episode ended at step t)."""
    args = _args(config)
    as_numpy = isinstance(rewards, np.ndarray)
    ended = torch.as_tensor(np.asarray(dones, dtype=np.float32) if as_numpy else dones).float()
    # the trainer marks episode *starts*: obs[t] starts an episode when the step before it ended one
    starts = torch.zeros_like(ended)
    starts[1:] = ended[:-1]
    adv, ret = ppo.compute_gae(
        torch.as_tensor(rewards).float(),
        torch.as_tensor(values).float(),
        starts,
        torch.as_tensor(next_value).float(),
        ended[-1],
        args.gamma,
        args.gae_lambda,
    )
    return (adv.numpy(), ret.numpy()) if as_numpy else (adv, ret)


def compute_loss(
    config: dict[str, Any], policy: torch.nn.Module, batch: dict[str, Any]
) -> dict[str, torch.Tensor]:
    """The trainer's PPO loss on one minibatch (``obs``, ``actions``, ``logprobs``, ``advantages``, ``returns``, ``values``)."""
    _, newlogprob, entropy, newvalue = policy.get_action_and_value(
        torch.as_tensor(batch["obs"], dtype=torch.float32), torch.as_tensor(batch["actions"]).long()
    )
    return ppo.ppo_loss(
        _args(config),
        newlogprob,
        torch.as_tensor(batch["logprobs"], dtype=torch.float32),
        torch.as_tensor(batch["advantages"], dtype=torch.float32),
        newvalue,
        torch.as_tensor(batch["values"], dtype=torch.float32),
        torch.as_tensor(batch["returns"], dtype=torch.float32),
        entropy,
    )


def total_steps(config: dict[str, Any]) -> int:
    """The trainer's own run length (its learning-rate annealing spans it); rlaudit trains no longer than this."""
    return int(_args(config).total_timesteps)


def train(config: dict[str, Any], steps: int, seed: int, recorder, *, resume_from=None, env_fn=None) -> dict:
    """Train through the recorder (its run_dir gets the CSV logs and checkpoints)."""
    return ppo.train(_args(config), steps, seed, recorder, resume_from=resume_from, env_fn=env_fn)


def _run_dir(config: dict[str, Any], run_dir) -> Path:
    return Path(run_dir) if run_dir is not None else ppo.resolve_run_dir(_args(config))


def checkpoints(config: dict[str, Any], run_dir=None) -> list[str]:
    return ppo.list_checkpoints(_run_dir(config, run_dir))


def load_checkpoint(config: dict[str, Any], path: str):
    return ppo.load_checkpoint(_args(config), path)


def log_dir(config: dict[str, Any], run_dir=None) -> str:
    return str(_run_dir(config, run_dir) / "logs")
