"""A single-file DQN for CartPole-v1: the "before" version of the DQN worked example.

Written in a plain functional style: the settings are one dict (``DEFAULTS``), the replay buffer is a small
numpy class, and each piece of the algorithm is a module function (:func:`td_targets`, :func:`td_loss`,
:func:`dqn_loss`, :func:`epsilon_at`) that a subject file can hand to rlaudit. One Gymnasium environment, an
epsilon-greedy Q-network, a target network copied every ``target_every`` environment steps, a Huber loss (Mnih
et al. 2015). Learns CartPole in about 30k steps.

This file knows nothing about rlaudit: ``train`` takes any object with the recorder's methods or None, and
calls the off-policy ones (``update``, ``target_update``, ``exploration``, ``replay``) only where they exist.

Run it by hand: ``python cartpole_dqn.py --steps 30000 --seed 1 --set lr=0.0005``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import json
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent

DEFAULTS: dict[str, Any] = {
    "env_id": "CartPole-v1",
    "total_timesteps": 30_000,  # the run length the settings were tuned for
    "lr": 1e-3,  # Adam step size
    "gamma": 0.99,  # discount
    "buffer_size": 10_000,  # replay capacity, in transitions
    "batch_size": 64,  # transitions per gradient step
    "learning_starts": 1_000,  # env steps of random play before the first gradient step
    "train_every": 4,  # env steps between gradient steps
    "target_every": 500,  # env steps between hard copies of the online network into the target
    "eps_start": 1.0,  # epsilon-greedy: start ...
    "eps_end": 0.05,  # ... end ...
    "eps_steps": 10_000,  # ... reached after this many env steps (linear)
    "hidden": 64,  # width of the two hidden layers
    "max_grad_norm": 10.0,  # global gradient-norm clip
    "run_dir": "runs/default",  # logs and checkpoints (relative to this directory)
}


def settings(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """``DEFAULTS`` with ``overrides`` applied; unknown keys are an error that lists the known ones."""
    cfg = dict(DEFAULTS)
    unknown = sorted(set(overrides or {}) - set(cfg))
    if unknown:
        raise KeyError(f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(cfg)}")
    cfg.update(overrides or {})
    return cfg


# ---------------------------------------------------------------------------------------------------------
# Environment, network, replay


def make_env(cfg: dict[str, Any], seed: int) -> gym.vector.VectorEnv:
    """One CartPole in a synchronous vector env, reset in the same step an episode ends (the final
    observation of an episode is in ``info["final_obs"]``)."""
    env = gym.vector.SyncVectorEnv(
        [lambda: gym.make(cfg["env_id"])], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    env.action_space.seed(seed)
    return env


class QAgent(nn.Module):
    """The online Q-network ``q`` and its target copy ``q_target`` (never trained, only copied into)."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int) -> None:
        super().__init__()
        self.q = nn.Sequential(
            nn.Linear(obs_dim, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, n_actions),
        )
        self.q_target = copy.deepcopy(self.q)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.q(obs)

    def sync_target(self) -> None:
        self.q_target.load_state_dict(self.q.state_dict())


def make_agent(cfg: dict[str, Any], observation_space: gym.Space, action_space: gym.Space) -> QAgent:
    return QAgent(int(np.prod(observation_space.shape)), int(action_space.n), int(cfg["hidden"]))


def make_optimizer(cfg: dict[str, Any], agent: QAgent) -> torch.optim.Optimizer:
    return torch.optim.Adam(agent.q.parameters(), lr=cfg["lr"])


class Replay:
    """A ring buffer of transitions; ``sample`` draws uniformly and returns the rows' indices too."""

    def __init__(self, capacity: int, obs_dim: int) -> None:
        self.capacity = int(capacity)
        self.obs = np.zeros((self.capacity, obs_dim), np.float32)
        self.next_obs = np.zeros((self.capacity, obs_dim), np.float32)
        self.actions = np.zeros(self.capacity, np.int64)
        self.rewards = np.zeros(self.capacity, np.float32)
        self.terminated = np.zeros(self.capacity, np.float32)
        self.added_at = np.zeros(self.capacity, np.int64)  # env step of insertion
        self.pos, self.size = 0, 0

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.obs, self.next_obs, self.actions, self.rewards, self.terminated))

    def add(self, obs, action, reward, next_obs, terminated, step: int) -> None:
        i = self.pos
        self.obs[i], self.actions[i], self.rewards[i] = obs, action, reward
        self.next_obs[i], self.terminated[i], self.added_at[i] = next_obs, terminated, step
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[dict[str, torch.Tensor], np.ndarray]:
        idx = rng.integers(0, self.size, n)
        batch = {
            "obs": torch.as_tensor(self.obs[idx]),
            "actions": torch.as_tensor(self.actions[idx]),
            "rewards": torch.as_tensor(self.rewards[idx]),
            "next_obs": torch.as_tensor(self.next_obs[idx]),
            "terminated": torch.as_tensor(self.terminated[idx]),
        }
        return batch, idx


# ---------------------------------------------------------------------------------------------------------
# The math


def epsilon_at(cfg: dict[str, Any], step: int) -> float:
    """Linear decay from ``eps_start`` to ``eps_end`` over ``eps_steps`` environment steps."""
    frac = min(1.0, step / max(1, cfg["eps_steps"]))
    return cfg["eps_start"] + frac * (cfg["eps_end"] - cfg["eps_start"])


def td_targets(
    agent: QAgent, rewards: torch.Tensor, next_obs: torch.Tensor, terminated: torch.Tensor, gamma: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """One-step targets ``r + gamma * (1 - terminated) * max_a Q_target(s', a)``: a terminated episode has no
    future, a truncated one (time limit) is bootstrapped like any other step.

    Returns:
        ``(targets, bootstrap)``, both (B,); ``bootstrap`` is ``max_a Q_target(s', a)``.
    """
    with torch.no_grad():
        bootstrap = agent.q_target(next_obs).max(dim=1).values
        return rewards + gamma * (1.0 - terminated) * bootstrap, bootstrap


def q_values_taken(agent: QAgent, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``Q(s, a)`` of the online network for the actions taken, (B,)."""
    return agent.q(obs).gather(1, actions.long().view(-1, 1)).squeeze(1)


def td_loss(q_taken: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The loss on the TD error: Huber (smooth L1, threshold 1) between ``Q(s, a)`` and the targets, averaged
    over the batch."""
    return F.smooth_l1_loss(q_taken, targets)


def dqn_loss(agent: QAgent, batch: dict[str, torch.Tensor], gamma: float) -> dict[str, torch.Tensor]:
    """:func:`td_loss` between ``Q(s, a)`` and the TD targets of :func:`td_targets`."""
    targets, _ = td_targets(agent, batch["rewards"], batch["next_obs"], batch["terminated"], gamma)
    q_taken = q_values_taken(agent, batch["obs"], batch["actions"])
    return {"loss": td_loss(q_taken, targets), "q": q_taken.mean().detach()}


# ---------------------------------------------------------------------------------------------------------
# Checkpoints and logs


def save_checkpoint(run_dir: Path, agent: QAgent, optimizer, cfg: dict[str, Any], step: int) -> str:
    path = run_dir / "checkpoints" / f"step_{step:08d}.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {"agent": agent.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "cfg": cfg}, path
    )
    return str(path)


def list_checkpoints(run_dir: str | Path) -> list[str]:
    """Newest first."""
    return [str(p) for p in sorted((Path(run_dir) / "checkpoints").glob("step_*.pt"), reverse=True)]


def load_checkpoint(cfg: dict[str, Any], path: str | Path) -> tuple[QAgent, dict[str, Any]]:
    data = torch.load(path, map_location="cpu", weights_only=True)
    env = make_env(cfg, 0)
    agent = make_agent(cfg, env.single_observation_space, env.single_action_space)
    env.close()
    agent.load_state_dict(data["agent"])
    return agent, {"optimizer": data["optimizer"], "step": int(data["step"])}


class _Quiet:
    """Stands in for a recorder when none is given."""

    run_dir = None

    def __getattr__(self, name: str) -> Any:
        if name == "phase":
            return lambda _name: contextlib.nullcontext()
        return lambda *args, **kwargs: None


def _call(rec: Any, name: str, *args: Any, **kwargs: Any) -> None:
    method = getattr(rec, name, None)
    if callable(method):
        method(*args, **kwargs)


# ---------------------------------------------------------------------------------------------------------
# Training


def train(
    cfg: dict[str, Any], steps: int | None = None, seed: int = 0, recorder: Any = None
) -> dict[str, Any]:
    """Train for ``steps`` environment steps (default ``total_timesteps``); logs go to ``<run_dir>/logs``,
    checkpoints (half-way and at the end) to ``<run_dir>/checkpoints``."""
    rec = recorder if recorder is not None else _Quiet()
    run_dir = Path(getattr(rec, "run_dir", None) or HERE / cfg["run_dir"])
    total = int(steps or cfg["total_timesteps"])
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    env = make_env(cfg, seed)
    agent = make_agent(cfg, env.single_observation_space, env.single_action_space)
    optimizer = make_optimizer(cfg, agent)
    rec.watch(agent, optimizer)
    replay = Replay(cfg["buffer_size"], int(np.prod(env.single_observation_space.shape)))
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    log_file = open(run_dir / "logs" / "progress.csv", "w", newline="")
    log = csv.writer(log_file)
    log.writerow(["step", "name", "value"])

    obs, _ = env.reset(seed=seed)
    ep_return, ep_length, returns, gradient_steps = 0.0, 0, [], 0
    checkpoints, started = [], time.perf_counter()
    try:
        for step in range(1, total + 1):
            with rec.phase("collect"):
                eps = epsilon_at(cfg, step)
                if rng.random() < eps:
                    action = int(env.single_action_space.sample())
                else:
                    with torch.no_grad():
                        action = int(agent(torch.as_tensor(obs)).argmax(dim=1)[0])
                next_obs, reward, terminated, truncated, info = env.step(np.array([action]))
                real_next = info["final_obs"][0] if terminated[0] or truncated[0] else next_obs[0]
                replay.add(obs[0], action, reward[0], real_next, float(terminated[0]), step)
                obs = next_obs
                ep_return, ep_length = ep_return + float(reward[0]), ep_length + 1
                if terminated[0] or truncated[0]:
                    rec.episode(step=step, env=0, **{"return": ep_return, "length": ep_length})
                    returns.append(ep_return)
                    ep_return, ep_length = 0.0, 0
                if step % 100 == 0:
                    _call(rec, "exploration", step, epsilon=eps)

            if step > cfg["learning_starts"] and step % cfg["train_every"] == 0:
                with rec.phase("train"):
                    batch, idx = replay.sample(cfg["batch_size"], rng)
                    out = dqn_loss(agent, batch, cfg["gamma"])
                    optimizer.zero_grad()
                    out["loss"].backward()
                    nn.utils.clip_grad_norm_(agent.q.parameters(), cfg["max_grad_norm"])
                    optimizer.step()
                    gradient_steps += 1
                    _call(rec, "update", step, gradient_steps=1, batch_size=cfg["batch_size"])
                    if gradient_steps % 250 == 1:
                        ages = step - replay.added_at[idx]
                        _call(
                            rec,
                            "replay",
                            step,
                            size=replay.size,
                            capacity=replay.capacity,
                            nbytes=replay.nbytes,
                            ages=ages,
                            prioritized=False,
                        )
                        scalars = {"losses/td_loss": out["loss"].item(), "losses/q_values": out["q"].item()}
                        if returns:
                            scalars["charts/episodic_return"] = float(np.mean(returns[-20:]))
                        rec.log(step, **scalars)
                        log.writerows([step, k, v] for k, v in scalars.items())

            if step % cfg["target_every"] == 0:
                agent.sync_target()
                _call(rec, "target_update", step, gradient_step=gradient_steps, tau=1.0)
            if step == total // 2:
                checkpoints.append(save_checkpoint(run_dir, agent, optimizer, cfg, step))
        checkpoints.append(save_checkpoint(run_dir, agent, optimizer, cfg, total))
    finally:
        log_file.close()
        env.close()
    seconds = time.perf_counter() - started
    return {
        "steps": total,
        "gradient_steps": gradient_steps,
        "seconds": seconds,
        "sps": total / max(seconds, 1e-9),
        "mean_return_last20": float(np.mean(returns[-20:])) if returns else float("nan"),
        "run_dir": str(run_dir),
        "checkpoints": checkpoints,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    cli = parser.parse_args()
    overrides = {k: json.loads(v) for k, v in (item.split("=", 1) for item in cli.set)}
    print(json.dumps(train(settings(overrides), cli.steps, cli.seed), indent=2))
