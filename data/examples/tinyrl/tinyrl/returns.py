"""Discounted returns of a rollout."""

from __future__ import annotations

import numpy as np


def discounted(rewards: np.ndarray, dones: np.ndarray, gamma: float) -> np.ndarray:
    """Discounted return from every step to the end of its episode.

    Args:
        rewards: ``(T, N)`` rewards.
        dones: ``(T, N)`` True where the episode ended at that step.
        gamma: Discount per step.

    Returns:
        ``(T, N)`` returns; the tail of an unfinished episode counts as if it ended with the rollout.
    """
    out = np.zeros_like(rewards)
    running = np.zeros(rewards.shape[1])
    for t in range(rewards.shape[0] - 1, -1, -1):
        running = rewards[t] + gamma * running * (1.0 - dones[t])
        out[t] = running
    return out
