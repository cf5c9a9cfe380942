"""rlaudit subject for the single-file DQN example: how rlaudit sees ./cartpole_dqn.py.

The same file serves both versions (v1/subject.py and v2/subject.py are identical); each imports its own
``cartpole_dqn`` because rlaudit runs every subject in a process of its own with the subject's directory
first on ``sys.path``. Besides the core capabilities, it gives the off-policy ones: ``target_networks`` (the
target Q-network and the online one it is copied from), ``compute_td_targets`` (the trainer's own
``td_targets``, so a change in how it bootstraps is seen on a batch, not only in the return) and
``compute_td_loss`` (the trainer's own ``td_loss`` on ``Q(s, a)`` against given targets, so the loss on the TD
error is read as training applies it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cartpole_dqn as dqn
import numpy as np
import torch

from rlaudit.adapters.configs import apply_overrides


def config(overrides: list[str] | None = None) -> dict[str, Any]:
    """Every setting of ``cartpole_dqn.DEFAULTS``; overrides are ``key=value`` strings (YAML values)."""
    return dqn.settings(apply_overrides(dict(dqn.DEFAULTS), overrides))


def config_keys() -> dict[str, list[str]]:
    return {
        "env": ["env_id"],
        "trainer": ["total_timesteps", "batch_size", "learning_starts", "train_every", "eps_*"],
        "optimizer": ["lr", "max_grad_norm", "target_every"],
        "loss": ["gamma"],
        "memory": ["buffer_size"],
        "agents": ["hidden"],
        "logging": ["run_dir"],
    }


def total_steps(config: dict[str, Any]) -> int:
    return int(config["total_timesteps"])


def make_env(config: dict[str, Any], seed: int):
    return dqn.make_env(config, seed)


def make_policy(config: dict[str, Any], observation_space, action_space) -> torch.nn.Module:
    return dqn.make_agent(config, observation_space, action_space)


def make_optimizer(config: dict[str, Any], policy: torch.nn.Module):
    return dqn.make_optimizer(config, policy)


def target_networks(config: dict[str, Any], policy: torch.nn.Module) -> dict[str, str]:
    return {"q_target": "q"}


def compute_td_targets(
    config: dict[str, Any], policy: torch.nn.Module, batch: dict[str, Any]
) -> dict[str, Any]:
    """The trainer's ``td_targets`` on a batch (``rewards``, ``next_obs``, ``terminated``; a truncated step is
    stored as not terminated, as the training loop stores it)."""
    targets, bootstrap = dqn.td_targets(
        policy,
        torch.as_tensor(np.asarray(batch["rewards"]), dtype=torch.float32),
        torch.as_tensor(np.asarray(batch["next_obs"]), dtype=torch.float32),
        torch.as_tensor(np.asarray(batch["terminated"]), dtype=torch.float32),
        float(config["gamma"]),
    )
    return {"targets": targets.numpy(), "bootstrap": bootstrap.numpy()}


def compute_td_loss(
    config: dict[str, Any], policy: torch.nn.Module, batch: dict[str, Any], targets: Any
) -> float:
    """The loss a gradient step minimises on a batch (``obs``, ``actions``) against ``targets`` (B,): the
    trainer's ``td_loss`` on the online network's ``Q(s, a)``, as ``dqn_loss`` applies it to its targets."""
    obs = torch.as_tensor(np.asarray(batch["obs"]), dtype=torch.float32)
    actions = torch.as_tensor(np.asarray(batch["actions"]), dtype=torch.int64).reshape(-1)
    goal = torch.as_tensor(np.asarray(targets), dtype=torch.float32).reshape(-1)
    if goal.shape != actions.shape:
        raise ValueError(
            f"compute_td_loss needs one target per row: {len(actions)} rows, {len(goal)} targets"
        )
    with torch.no_grad():
        return float(dqn.td_loss(dqn.q_values_taken(policy, obs, actions), goal))


def train(config: dict[str, Any], steps: int, seed: int, recorder) -> dict:
    """Train through the recorder (its run_dir gets the logs and checkpoints). No ``resume_from``: the trainer
    does not save its replay buffer, so it cannot resume a run."""
    return dqn.train(config, steps, seed, recorder)


def _run_dir(config: dict[str, Any], run_dir) -> Path:
    return Path(run_dir) if run_dir is not None else dqn.HERE / config["run_dir"]


def checkpoints(config: dict[str, Any], run_dir=None) -> list[str]:
    return dqn.list_checkpoints(_run_dir(config, run_dir))


def load_checkpoint(config: dict[str, Any], path: str):
    return dqn.load_checkpoint(config, path)


def log_dir(config: dict[str, Any], run_dir=None) -> str:
    return str(_run_dir(config, run_dir) / "logs")
