"""The training loop: roll out ``num_steps`` steps of every walker, then one REINFORCE update."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tinyrl.agent import Agent
from tinyrl.env import Corridor
from tinyrl.returns import discounted


@dataclasses.dataclass
class Config:
    """Every hyperparameter of a run."""

    num_envs: int = 32  # walkers stepped together
    num_steps: int = 16  # rollout length per update
    length: int = 6  # cells per corridor
    max_steps: int = 24  # steps before an episode is cut
    goal_reward: float = 1.0  # paid on reaching the goal
    step_cost: float = 0.02  # paid on every step
    gamma: float = 0.95  # discount per step
    lr: float = 0.5  # policy-gradient step size


class EpisodeStats:
    """Running return and length of every walker's episode; finished episodes go to the recorder."""

    def __init__(self, num_envs: int, recorder: Any) -> None:
        self.recorder = recorder
        self.ret = np.zeros(num_envs)
        self.length = np.zeros(num_envs, dtype=np.int64)
        self.finished: list[float] = []

    def add(self, step: int, reward: np.ndarray, done: np.ndarray) -> None:
        """Account one step of every walker (``reward``, ``done``: ``(num_envs,)``) at env step ``step``."""
        self.ret += reward
        self.length += 1
        for i in np.flatnonzero(done):
            self.finished.append(float(self.ret[i]))
            if self.recorder is not None:
                self.recorder.episode(
                    step=step, env=int(i), **{"return": self.ret[i], "length": self.length[i]}
                )
        self.ret[done] = 0.0
        self.length[done] = 0

    def final_return(self) -> float:
        """Mean return of the last quarter of the finished episodes."""
        tail = self.finished[-max(1, len(self.finished) // 4) :]
        return float(np.mean(tail)) if tail else float("nan")


def collect(
    env: Corridor, agent: Agent, obs: np.ndarray, num_steps: int, stats: EpisodeStats, step: int
) -> tuple[np.ndarray, dict[str, np.ndarray], int]:
    """Roll out ``num_steps`` steps of every walker.

    Returns:
        The next observations, the batch (``obs`` ``(T * N, length)`` and ``actions`` ``(T * N,)`` flattened
        time-major, ``rewards`` and ``dones`` ``(T, N)``), and the env step count after the rollout.
    """
    b_obs, b_act, b_rew, b_done = [], [], [], []
    for _ in range(num_steps):
        actions = agent.act(obs)
        b_obs.append(obs.copy())
        b_act.append(actions)
        obs, reward, done = env.step(actions)
        b_rew.append(reward)
        b_done.append(done)
        step += env.num_envs
        stats.add(step, reward, done)
    batch = {
        "obs": np.concatenate(b_obs),
        "actions": np.concatenate(b_act),
        "rewards": np.asarray(b_rew),
        "dones": np.asarray(b_done, dtype=np.float64),
    }
    return obs, batch, step


def train(config: Config, steps: int, seed: int, recorder: Any = None) -> dict[str, float]:
    """Train for ``steps`` environment steps (all walkers together), reporting episodes to ``recorder``.

    Returns:
        ``{"episodes": n, "final_return": mean return of the last quarter of the episodes}``.
    """
    env = Corridor(
        config.num_envs, config.length, config.max_steps, config.goal_reward, config.step_cost, seed
    )
    agent = Agent(config.length, config.lr, seed)
    stats = EpisodeStats(config.num_envs, recorder)
    obs = env.reset()
    step = 0
    while step < steps:
        obs, batch, step = collect(env, agent, obs, config.num_steps, stats, step)
        returns = discounted(batch["rewards"], batch["dones"], config.gamma)
        agent.update(batch["obs"], batch["actions"], returns.reshape(-1))
    return {"episodes": len(stats.finished), "final_return": stats.final_return()}
