"""rlaudit subject for tinyrl, a REINFORCE agent on a vectorized corridor (``./tinyrl``).

The trainer needs numpy only and trains 300k steps in well under a second, which makes it the subject of the
change-search examples: ``make_history.py`` turns it into a git history with a culprit commit to find.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tinyrl.train import Config
from tinyrl.train import train as _train


def config(overrides: list[str] | None = None) -> dict[str, Any]:
    """Every field of ``tinyrl.train.Config``; ``overrides`` are ``key=value`` strings (YAML values)."""
    from rlaudit.adapters.configs import apply_overrides

    cfg = apply_overrides(dataclasses.asdict(Config()), overrides)
    Config(**cfg)  # rejects a key the trainer does not have
    return cfg


def config_keys() -> dict[str, list[str]]:
    return {
        "env": ["num_envs", "length", "max_steps"],
        "rewards": ["goal_reward", "step_cost"],
        "trainer": ["num_steps"],
        "loss": ["gamma"],
        "optimizer": ["lr"],
    }


def train(config: dict[str, Any], steps: int, seed: int, recorder: Any) -> dict[str, float]:
    """Train through the recorder (episodes with ``return`` and ``length``)."""
    return _train(Config(**config), steps, seed, recorder)
