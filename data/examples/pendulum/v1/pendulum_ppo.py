"""PPO for continuous control, written as one trainer class (Gymnasium 0.29 APIs).

The default task is Pendulum-v1: swing a pendulum up and keep it there, with a torque in [-2, 2]. Any
Gymnasium environment with a Box observation and a Box (Gaussian policy) or Discrete (categorical policy)
action space works.

Run it: ``python pendulum_ppo.py --total-steps 300000 --seed 1`` (checkpoints and a CSV log go to
``runs/<seed>/``), or from Python::

    trainer = PPOTrainer(Settings(seed=1))
    trainer.train(300_000)

Written for Gymnasium 0.29.x: a ``gym.vector.SyncVectorEnv`` of ``RecordEpisodeStatistics``-wrapped
environments, which resets an environment within the step its episode ends and hands that episode's last
observation and info over in ``info["final_observation"]`` / ``info["final_info"]`` (object arrays, one entry
per environment, masked by ``info["_final_observation"]`` / ``info["_final_info"]``).
"""

from __future__ import annotations

import argparse
import ast
import csv
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Normal

# ---------------------------------------------------------------------------------------------------------
# Settings: one nested object, readable as a dict and back
# ---------------------------------------------------------------------------------------------------------


@dataclass
class EnvSettings:
    env_id: str = "Pendulum-v1"  # any Gymnasium id with Box observations
    num_envs: int = 4  # environments stepped together (SyncVectorEnv)


@dataclass
class PPOSettings:
    rollout_steps: int = 512  # steps per environment between updates
    epochs: int = 10  # passes over each rollout
    minibatch_size: int = 256  # samples per gradient step
    gamma: float = 0.9  # discount: Pendulum's reward is immediate, a short horizon learns faster
    gae_lambda: float = 0.95  # GAE's bias/variance trade-off
    clip_coef: float = 0.2  # PPO's probability-ratio clip
    ent_coef: float = 0.0  # entropy bonus
    vf_coef: float = 0.5  # weight of the value loss
    max_grad_norm: float = 0.5  # global gradient-norm clip
    normalize_advantages: bool = True  # per minibatch


@dataclass
class OptimSettings:
    learning_rate: float = 1e-3  # Adam's step size at the start
    anneal: bool = True  # linear decay to 0 over the run
    adam_eps: float = 1e-5


@dataclass
class NetSettings:
    hidden: int = 64  # units in each of the two hidden layers (actor and critic alike)
    log_std_init: float = 0.0  # initial log standard deviation of the Gaussian policy (learned)


@dataclass
class Settings:
    env: EnvSettings = field(default_factory=EnvSettings)
    ppo: PPOSettings = field(default_factory=PPOSettings)
    optim: OptimSettings = field(default_factory=OptimSettings)
    net: NetSettings = field(default_factory=NetSettings)
    seed: int = 1
    checkpoint_every: int = 100_000  # environment steps between checkpoints (and one at the end)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        sections = {f.name: f.type for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key not in sections:
                raise KeyError(f"unknown setting {key!r}; expected one of {', '.join(sections)}")
            if isinstance(value, dict):
                section_type = {
                    "env": EnvSettings,
                    "ppo": PPOSettings,
                    "optim": OptimSettings,
                    "net": NetSettings,
                }[key]
                kwargs[key] = section_type(**value)
            else:
                kwargs[key] = value
        return cls(**kwargs)

    def override(self, assignments: list[str]) -> Settings:
        """A copy with ``section.key=value`` assignments applied (values as Python literals)."""
        data = self.to_dict()
        for text in assignments:
            key, _, raw = text.partition("=")
            node = data
            parts = key.strip().split(".")
            for part in parts[:-1]:
                node = node[part]
            if parts[-1] not in node:
                raise KeyError(f"unknown setting {key!r}")
            try:
                node[parts[-1]] = ast.literal_eval(raw.strip())
            except (ValueError, SyntaxError):
                node[parts[-1]] = raw.strip()
        return Settings.from_dict(data)


# ---------------------------------------------------------------------------------------------------------
# Environments
# ---------------------------------------------------------------------------------------------------------


def make_vector_env(settings: Settings, seed: int) -> gym.vector.SyncVectorEnv:
    """``num_envs`` copies of the task, each recording its episodes' return and length."""

    def thunk(index: int) -> Callable[[], gym.Env]:
        def make() -> gym.Env:
            env = gym.make(settings.env.env_id)
            env = gym.wrappers.RecordEpisodeStatistics(env)
            env.action_space.seed(seed + index)
            return env

        return make

    return gym.vector.SyncVectorEnv([thunk(i) for i in range(settings.env.num_envs)])


# ---------------------------------------------------------------------------------------------------------
# The network
# ---------------------------------------------------------------------------------------------------------


def _layer(n_in: int, n_out: int, gain: float) -> nn.Linear:
    layer = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def _mlp(n_in: int, hidden: int, n_out: int, out_gain: float) -> nn.Sequential:
    return nn.Sequential(
        _layer(n_in, hidden, np.sqrt(2)),
        nn.Tanh(),
        _layer(hidden, hidden, np.sqrt(2)),
        nn.Tanh(),
        _layer(hidden, n_out, out_gain),
    )


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs; a Gaussian head for Box actions, a categorical one for Discrete.

    Args:
        obs_dim: Flattened observation size.
        action: ``{"kind": "box", "dim": d}`` or ``{"kind": "discrete", "n": n}`` (see :func:`describe_action`).
        net: Hidden size and the Gaussian's initial log standard deviation.
    """

    def __init__(self, obs_dim: int, action: dict[str, Any], net: NetSettings) -> None:
        super().__init__()
        self.action = dict(action)
        self.continuous = action["kind"] == "box"
        self.critic = _mlp(obs_dim, net.hidden, 1, out_gain=1.0)
        if self.continuous:
            self.actor_mean = _mlp(obs_dim, net.hidden, int(action["dim"]), out_gain=0.01)
            self.log_std = nn.Parameter(torch.full((int(action["dim"]),), float(net.log_std_init)))
        else:
            self.actor_logits = _mlp(obs_dim, net.hidden, int(action["n"]), out_gain=0.01)

    def distribution(self, obs: torch.Tensor) -> Normal | Categorical:
        if self.continuous:
            mean = self.actor_mean(obs)
            return Normal(mean, self.log_std.expand_as(mean).exp())
        return Categorical(logits=self.actor_logits(obs))

    def get_value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs)

    def get_action_and_value(
        self, obs: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(action, log-probability, entropy, value) for a batch of observations (B, obs_dim)."""
        dist = self.distribution(obs)
        if action is None:
            action = dist.sample()
        if self.continuous:
            return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.critic(obs)
        return action, dist.log_prob(action), dist.entropy(), self.critic(obs)


def describe_action(space: gym.Space) -> dict[str, Any]:
    if isinstance(space, gym.spaces.Box):
        return {
            "kind": "box",
            "dim": int(np.prod(space.shape)),
            "low": np.asarray(space.low, dtype=np.float64).reshape(-1).tolist(),
            "high": np.asarray(space.high, dtype=np.float64).reshape(-1).tolist(),
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"kind": "discrete", "n": int(space.n)}
    raise TypeError(f"unsupported action space {space}; expected Box or Discrete")


# ---------------------------------------------------------------------------------------------------------
# The trainer
# ---------------------------------------------------------------------------------------------------------


class _NoRecorder:
    """Stands in for an instrumentation object when none is given."""

    run_dir = None

    def watch(self, policy: Any, optimizer: Any) -> None: ...

    def log(self, step: int, **scalars: float) -> None: ...

    def episode(self, step: int, env: int = -1, **stats: Any) -> None: ...

    def phase(self, name: str) -> Any:
        import contextlib

        return contextlib.nullcontext()


class PPOTrainer:
    """Collects rollouts from a vector environment and improves the policy with clipped PPO.

    Args:
        settings: Everything that defines the run.
        run_dir: Where checkpoints and ``progress.csv`` go.
        env_fn: ``env_fn(num_envs, seed) -> VectorEnv`` replacing :func:`make_vector_env`.
        recorder: Optional instrumentation (``watch``, ``log``, ``episode``, ``phase``).
    """

    def __init__(
        self,
        settings: Settings,
        run_dir: str | Path = "runs/default",
        env_fn: Callable[[int, int], Any] | None = None,
        recorder: Any = None,
    ) -> None:
        self.settings = settings
        self.run_dir = Path(run_dir)
        self.recorder = recorder if recorder is not None else _NoRecorder()
        torch.manual_seed(settings.seed)
        self.envs = (env_fn or (lambda n, s: make_vector_env(settings, s)))(
            settings.env.num_envs, settings.seed
        )
        self.num_envs = int(self.envs.num_envs)
        obs_space = self.envs.single_observation_space
        self.obs_dim = int(np.prod(obs_space.shape))
        self.action = describe_action(self.envs.single_action_space)
        self.policy = ActorCritic(self.obs_dim, self.action, settings.net)
        self.optimizer = torch.optim.Adam(
            self.policy.parameters(), lr=settings.optim.learning_rate, eps=settings.optim.adam_eps
        )
        self.recorder.watch(self.policy, self.optimizer)
        self.global_step = 0
        self.episodes: list[tuple[int, float, int]] = []  # (step, return, length)
        self._log_rows: list[dict[str, float]] = []
        self._next_obs: np.ndarray | None = None

    # -- acting ------------------------------------------------------------------------------------------

    def _to_env(self, action: np.ndarray) -> np.ndarray:
        if self.action["kind"] == "box":
            return np.clip(action, self.action["low"], self.action["high"]).astype(np.float32)
        return action.astype(np.int64)

    def collect(self) -> dict[str, torch.Tensor]:
        """One rollout of ``rollout_steps`` vector steps; returns tensors of shape (T, N, ...)."""
        cfg = self.settings.ppo
        T, N = cfg.rollout_steps, self.num_envs
        obs_buf = torch.zeros((T, N, self.obs_dim))
        act_shape = (int(self.action["dim"]),) if self.action["kind"] == "box" else ()
        act_buf = torch.zeros((T, N, *act_shape))
        logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((T, N)) for _ in range(4))
        if self._next_obs is None:
            self._next_obs, _ = self.envs.reset(seed=self.settings.seed)
        obs = torch.as_tensor(np.asarray(self._next_obs, dtype=np.float32).reshape(N, -1))
        for t in range(T):
            with self.recorder.phase("act"), torch.no_grad():
                action, logp, _, value = self.policy.get_action_and_value(obs)
            with self.recorder.phase("env"):
                next_obs, reward, terminated, truncated, infos = self.envs.step(self._to_env(action.numpy()))
            self.global_step += N
            reward = np.asarray(reward, dtype=np.float32).copy()
            # A time limit is not a failure: bootstrap the cut-off episode from its last observation.
            cut = np.logical_and(truncated, np.logical_not(terminated))
            if cut.any() and "final_observation" in infos:
                last = np.stack(
                    [
                        np.asarray(infos["final_observation"][i], dtype=np.float32).reshape(-1)
                        for i in np.flatnonzero(cut)
                    ]
                )
                with torch.no_grad():
                    v_last = self.policy.get_value(torch.as_tensor(last)).reshape(-1).numpy()
                reward[cut] += cfg.gamma * v_last
            if "final_info" in infos:
                for i, info in enumerate(infos["final_info"]):
                    if info is not None and "episode" in info:
                        ret, length = float(info["episode"]["r"]), int(info["episode"]["l"])
                        self.episodes.append((self.global_step, ret, length))
                        self.recorder.episode(
                            step=self.global_step, env=i, **{"return": ret, "length": length}
                        )
            obs_buf[t], act_buf[t], logp_buf[t] = obs, action, logp
            val_buf[t] = value.reshape(-1)
            rew_buf[t] = torch.as_tensor(reward)
            done_buf[t] = torch.as_tensor(np.logical_or(terminated, truncated), dtype=torch.float32)
            self._next_obs = next_obs
            obs = torch.as_tensor(np.asarray(next_obs, dtype=np.float32).reshape(N, -1))
        with torch.no_grad():
            next_value = self.policy.get_value(obs).reshape(-1)
        return {
            "obs": obs_buf,
            "actions": act_buf,
            "logprobs": logp_buf,
            "rewards": rew_buf,
            "dones": done_buf,
            "values": val_buf,
            "next_value": next_value,
        }

    # -- learning ----------------------------------------------------------------------------------------

    @staticmethod
    def advantages(
        rewards: torch.Tensor,
        values: torch.Tensor,
        dones: torch.Tensor,
        next_value: torch.Tensor,
        gamma: float,
        lam: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE(gamma, lambda) over (T, N) tensors; ``dones[t]`` ends the episode after step t."""
        T = rewards.shape[0]
        adv = torch.zeros_like(rewards)
        running = torch.zeros_like(next_value)
        for t in reversed(range(T)):
            following = next_value if t == T - 1 else values[t + 1]
            alive = 1.0 - dones[t]
            delta = rewards[t] + gamma * following * alive - values[t]
            running = delta + gamma * lam * alive * running
            adv[t] = running
        return adv, adv + values

    def loss(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Clipped PPO loss on a minibatch (``obs``, ``actions``, ``logprobs``, ``advantages``, ``returns``)."""
        cfg = self.settings.ppo
        _, logp, entropy, value = self.policy.get_action_and_value(batch["obs"], batch["actions"])
        ratio = (logp - batch["logprobs"]).exp()
        adv = batch["advantages"]
        if cfg.normalize_advantages and adv.numel() > 1:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)).mean()
        value_loss = 0.5 * (value.reshape(-1) - batch["returns"]).pow(2).mean()
        entropy_mean = entropy.mean()
        total = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy_mean
        clipfrac = ((ratio - 1.0).abs() > cfg.clip_coef).float().mean()
        return {
            "loss": total,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy_mean,
            "clipfrac": clipfrac,
        }

    def update(self, rollout: dict[str, torch.Tensor]) -> dict[str, float]:
        cfg = self.settings.ppo
        adv, ret = self.advantages(
            rollout["rewards"],
            rollout["values"],
            rollout["dones"],
            rollout["next_value"],
            cfg.gamma,
            cfg.gae_lambda,
        )
        flat = {
            "obs": rollout["obs"].reshape(-1, self.obs_dim),
            "actions": rollout["actions"].reshape((-1, *rollout["actions"].shape[2:])),
            "logprobs": rollout["logprobs"].reshape(-1),
            "advantages": adv.reshape(-1),
            "returns": ret.reshape(-1),
        }
        size = flat["logprobs"].shape[0]
        stats: dict[str, list[float]] = {}
        for _ in range(cfg.epochs):
            order = torch.randperm(size)
            for start in range(0, size, cfg.minibatch_size):
                idx = order[start : start + cfg.minibatch_size]
                terms = self.loss({k: v[idx] for k, v in flat.items()})
                self.optimizer.zero_grad()
                terms["loss"].backward()
                nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm)
                self.optimizer.step()
                for k, v in terms.items():
                    stats.setdefault(k, []).append(float(v.detach()))
        return {k: float(np.mean(v)) for k, v in stats.items()}

    # -- the loop ----------------------------------------------------------------------------------------

    def train(self, total_steps: int) -> dict[str, Any]:
        """Train until ``total_steps`` environment steps (all environments together) have been taken."""
        per_update = self.settings.ppo.rollout_steps * self.num_envs
        updates = max(1, total_steps // per_update)
        start = time.perf_counter()
        next_checkpoint = self.settings.checkpoint_every
        for update in range(1, updates + 1):
            if self.settings.optim.anneal:
                frac = 1.0 - (update - 1.0) / updates
                for group in self.optimizer.param_groups:
                    group["lr"] = frac * self.settings.optim.learning_rate
            with self.recorder.phase("collect"):
                rollout = self.collect()
            self.recorder.log(self.global_step)  # the optimizer steps that follow belong to this step
            with self.recorder.phase("learn"):
                stats = self.update(rollout)
            recent = [r for _, r, _ in self.episodes[-20:]]
            row = {
                "step": self.global_step,
                "losses/policy_loss": stats["policy_loss"],
                "losses/value_loss": stats["value_loss"],
                "losses/entropy": stats["entropy"],
                "losses/clipfrac": stats["clipfrac"],
                "charts/learning_rate": self.optimizer.param_groups[0]["lr"],
                "perf/sps": self.global_step / max(time.perf_counter() - start, 1e-9),
            }
            if recent:
                row["charts/mean_return_20"] = float(np.mean(recent))
            self._log_rows.append(row)
            self.recorder.log(self.global_step, **{k: v for k, v in row.items() if k != "step"})
            if self.global_step >= next_checkpoint or update == updates:
                self.save(self.run_dir / "checkpoints" / f"step_{self.global_step:08d}.pt")
                next_checkpoint += self.settings.checkpoint_every
        self.write_log()
        self.envs.close()
        recent = [r for _, r, _ in self.episodes[-20:]]
        return {
            "steps": self.global_step,
            "episodes": len(self.episodes),
            "final_return": float(np.mean(recent)) if recent else None,
            "seconds": time.perf_counter() - start,
        }

    # -- files -------------------------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "model": self.policy.state_dict(),
                "obs_dim": self.obs_dim,
                "action": self.action,
                "settings": self.settings.to_dict(),
                "step": self.global_step,
                "optimizer": self.optimizer.state_dict(),
            },
            path,
        )

    @staticmethod
    def load(path: str | Path) -> tuple[ActorCritic, dict[str, Any]]:
        """The policy saved at ``path`` and the rest of the checkpoint (``step``, ``optimizer``, ``settings``)."""
        data = torch.load(path, map_location="cpu", weights_only=True)
        settings = Settings.from_dict(data["settings"])
        policy = ActorCritic(int(data["obs_dim"]), data["action"], settings.net)
        policy.load_state_dict(data["model"])
        return policy, {
            "step": int(data["step"]),
            "optimizer": data["optimizer"],
            "settings": data["settings"],
        }

    def write_log(self) -> None:
        """``progress.csv``: one row per update (the scalars passed to the recorder)."""
        if not self._log_rows:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        names = sorted({k for row in self._log_rows for k in row} - {"step"})
        with open(self.run_dir / "progress.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["step", *names])
            for row in self._log_rows:
                writer.writerow([row["step"], *(row.get(n, "") for n in names)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--set", nargs="*", default=[], help="section.key=value overrides, e.g. ppo.gamma=0.95"
    )
    args = parser.parse_args()
    settings = Settings(seed=args.seed).override(args.set)
    trainer = PPOTrainer(settings, run_dir=Path("runs") / str(args.seed))
    summary = trainer.train(args.total_steps)
    print(summary)


if __name__ == "__main__":
    main()
