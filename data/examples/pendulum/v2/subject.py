"""rlaudit subject: how rlaudit sees the class-based Pendulum PPO in ``pendulum_ppo.py``.

Written from ``rlaudit new-subject``'s template. The trainer is used as it is: rlaudit reads its settings
object as a nested dict, builds its environment and network through its own functions, and trains it with
``PPOTrainer`` handing the recorder in. This file is identical in v1 and v2; only ``pendulum_ppo.py`` differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pendulum_ppo as ppo
import torch

HERE = Path(__file__).resolve().parent


def config(overrides: list[str] | None = None) -> dict:
    """The trainer's ``Settings`` as a nested dict, with ``section.key=value`` overrides applied."""
    from rlaudit.adapters.configs import apply_overrides, to_plain

    return apply_overrides(to_plain(ppo.Settings()), overrides)


def _settings(config: dict, seed: int | None = None) -> ppo.Settings:
    settings = ppo.Settings.from_dict(config)
    if seed is not None:
        settings.seed = int(seed)
    return settings


def make_env(config: dict, seed: int):
    """The vector env ``train`` uses (SyncVectorEnv of RecordEpisodeStatistics-wrapped envs)."""
    return ppo.make_vector_env(_settings(config, seed), seed)


def make_policy(config: dict, observation_space, action_space):
    return ppo.ActorCritic(
        int(np.prod(observation_space.shape)), ppo.describe_action(action_space), _settings(config).net
    )


def make_optimizer(config: dict, policy):
    optim = _settings(config).optim
    return torch.optim.Adam(policy.parameters(), lr=optim.learning_rate, eps=optim.adam_eps)


def compute_advantages(config: dict, rewards, values, dones, next_value):
    ppo_cfg = _settings(config).ppo
    as_tensor = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float32)  # noqa: E731
    return ppo.PPOTrainer.advantages(
        as_tensor(rewards),
        as_tensor(values),
        as_tensor(dones),
        as_tensor(next_value),
        ppo_cfg.gamma,
        ppo_cfg.gae_lambda,
    )


class _LossOnly(ppo.PPOTrainer):
    """The trainer's ``loss`` method without building environments (it only needs settings and a policy)."""

    def __init__(self, settings: ppo.Settings, policy: Any) -> None:
        self.settings = settings
        self.policy = policy


def compute_loss(config: dict, policy, batch: dict):
    tensors = {k: torch.as_tensor(np.asarray(v) if not torch.is_tensor(v) else v) for k, v in batch.items()}
    tensors = {k: v.float() if k != "actions" or policy.continuous else v.long() for k, v in tensors.items()}
    return _LossOnly(_settings(config), policy).loss(tensors)


def train(config: dict, steps: int, seed: int, recorder, env_fn=None):
    """Train ``steps`` environment steps with ``PPOTrainer``; checkpoints and ``progress.csv`` go under the
    recorder's run directory."""
    trainer = ppo.PPOTrainer(
        _settings(config, seed), run_dir=recorder.run_dir, env_fn=env_fn, recorder=recorder
    )
    return trainer.train(int(steps))


def checkpoints(config: dict, run_dir=None) -> list[str]:
    """Newest first (the trainer resumes and evaluates from its newest checkpoint)."""
    root = Path(run_dir) if run_dir is not None else HERE / "runs" / str(_settings(config).seed)
    return [str(p) for p in sorted((root / "checkpoints").glob("step_*.pt"), reverse=True)]


def load_checkpoint(config: dict, path: str):
    policy, extras = ppo.PPOTrainer.load(path)
    return policy, {"step": extras["step"], "optimizer": extras["optimizer"]}


def log_dir(config: dict, run_dir=None) -> str:
    return str(Path(run_dir) if run_dir is not None else HERE / "runs" / str(_settings(config).seed))


def config_keys() -> dict[str, list[str]]:
    return {
        "env": ["env.*"],
        "trainer": ["ppo.rollout_steps", "ppo.epochs", "ppo.minibatch_size", "checkpoint_every"],
        "loss": [
            "ppo.gamma",
            "ppo.gae_lambda",
            "ppo.clip_coef",
            "ppo.ent_coef",
            "ppo.vf_coef",
            "ppo.normalize_advantages",
        ],
        "optimizer": ["optim.*", "ppo.max_grad_norm"],
        "agents": ["net.hidden"],
        "init": ["net.log_std_init"],
        "seeding": ["seed"],
    }
