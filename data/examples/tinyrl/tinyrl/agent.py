"""A tabular softmax policy (one row of logits per cell) trained with REINFORCE."""

from __future__ import annotations

import numpy as np


class Agent:
    """Softmax over two actions from a table of logits, ``(length, 2)``.

    Args:
        length: Cells (rows of the table).
        lr: Step size of the policy-gradient update.
        seed: Seeds the action sampling.
    """

    def __init__(self, length: int, lr: float, seed: int) -> None:
        self.logits = np.zeros((length, 2))
        self.lr = lr
        self.rng = np.random.default_rng(seed + 1)

    def probs(self, obs: np.ndarray) -> np.ndarray:
        """Action probabilities ``(N, 2)`` for one-hot observations ``(N, length)``."""
        z = obs @ self.logits
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Sample one action per walker, ``(N,)``."""
        p = self.probs(obs)
        return (self.rng.random(len(p)) < p[:, 1]).astype(np.int64)

    def update(self, obs: np.ndarray, actions: np.ndarray, returns: np.ndarray) -> float:
        """One REINFORCE step on a flattened rollout; returns the mean advantage magnitude.

        Args:
            obs: ``(B, length)`` one-hot observations.
            actions: ``(B,)`` actions taken.
            returns: ``(B,)`` discounted returns from each step.
        """
        adv = (returns - returns.mean()) / (returns.std() + 1e-8)
        p = self.probs(obs)
        grad_z = -p
        grad_z[np.arange(len(actions)), actions] += 1.0
        grad = obs.T @ (grad_z * adv[:, None]) / len(actions)
        self.logits += self.lr * grad
        return float(np.abs(adv).mean())
