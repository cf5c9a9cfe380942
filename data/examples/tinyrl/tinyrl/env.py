"""A vectorized corridor: ``num_envs`` walkers on cells ``0 .. length - 1``, each trying to reach the far end.

Every step each walker moves left or right (action 0 or 1); reaching the last cell pays ``goal_reward`` and
ends the episode, and so does running out of ``max_steps``. Each step costs ``step_cost``. Observations
are one-hot vectors of the walker's cell, shape ``(num_envs, length)``. Episodes reset themselves (the
observation returned with ``done`` is already the next episode's first one).
"""

from __future__ import annotations

import numpy as np


class Corridor:
    """``num_envs`` corridors stepped together.

    Args:
        num_envs: Walkers stepped in one call.
        length: Cells per corridor (the goal is the last one).
        max_steps: Steps before an episode is cut.
        goal_reward: Paid on reaching the goal.
        step_cost: Paid (negative) on every step.
        seed: Seeds the slip noise.
        slip: Probability that a move goes the other way.
    """

    def __init__(
        self,
        num_envs: int,
        length: int,
        max_steps: int,
        goal_reward: float,
        step_cost: float,
        seed: int,
        slip: float = 0.2,
    ) -> None:
        self.num_envs = num_envs
        self.length = length
        self.max_steps = max_steps
        self.goal_reward = goal_reward
        self.step_cost = step_cost
        self.slip = slip
        self.rng = np.random.default_rng(seed)
        self.eye = np.eye(length, dtype=np.float32)
        self.pos = np.zeros(num_envs, dtype=np.int64)
        self.t = np.zeros(num_envs, dtype=np.int64)

    def reset(self) -> np.ndarray:
        """Start every walker at cell 0; returns observations ``(num_envs, length)``."""
        self.pos[:] = 0
        self.t[:] = 0
        return self.eye[self.pos]

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move every walker; returns ``(obs, reward, done)``, each with a leading ``num_envs`` axis."""
        moves = np.where(actions == 1, 1, -1)
        slipped = self.rng.random(self.num_envs) < self.slip
        moves = np.where(slipped, -moves, moves)
        self.pos = np.clip(self.pos + moves, 0, self.length - 1)
        self.t += 1
        at_goal = self.pos == self.length - 1
        reward = np.where(at_goal, self.goal_reward, 0.0) - self.step_cost
        done = at_goal | (self.t >= self.max_steps)
        self.pos[done] = 0
        self.t[done] = 0
        return self.eye[self.pos], reward, done
