"""Small hand-built subjects and module records that test files of more than one room module share.

Each is defined once here rather than copied into the test files that use it:

- ``rec`` / ``mlp``: module records as ``rlaudit.agents.nets.describe_modules`` writes them (agents' align, trees).
- ``TorchToy``: a subject whose ``train`` builds a tiny network, seeded or not (seeding's replica, generators).
- ``SPACES_TOY``: the source of a subject with a 5-feature Box observation whose feature 3 leaves its bounds
  when ``SCALE`` > 1 (spaces' audit, declared).
- ``shape_subject`` / ``ROLLOUT_CAPABILITIES``: the Dict-observation fixture subject on any env (loss' probes,
  terms).
- ``runs_table``: two metrics, two sides, three seeds of known slopes (the explore toolkit, the arm picker).
"""

from __future__ import annotations

import itertools
import textwrap
from typing import Any

import numpy as np
import pandas as pd


def rec(path: str, cls: str, kind: str, params: dict | None = None, settings: dict | None = None) -> dict:
    return {
        "path": path,
        "cls": cls,
        "kind": kind,
        "params": params or {},
        "settings": settings or {},
        "block": path.split(".")[0],
        "order": 0,
    }


def mlp(names: list[str], widths: list[int], act: str = "Tanh") -> list[dict]:
    out = []
    for i, (name, (a, b)) in enumerate(zip(names, itertools.pairwise(widths), strict=True)):
        out.append(rec(name, "Linear", "linear", {"weight": [b, a], "bias": [b]}, {"in_features": str(a)}))
        if i < len(widths) - 2:
            out.append(rec(f"{name}_act", act, "activation"))
    return out


class TorchToy:
    """A subject whose train() builds a tiny network; ``seeded=False`` reseeds torch from entropy."""

    def __init__(self, seeded: bool, use_numpy_global: bool = False) -> None:
        self.seeded = seeded
        self.use_numpy_global = use_numpy_global

    def config(self) -> dict:
        return {}

    def train(self, config: dict, steps: int, seed: int, recorder: Any) -> dict:
        import torch

        if self.seeded:
            torch.manual_seed(seed)
        else:
            torch.seed()
        net = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        recorder.watch(net, opt)
        gen = np.random.default_rng(seed)
        for step in range(3):
            x = torch.as_tensor(gen.normal(size=(4, 3)), dtype=torch.float32)
            if self.use_numpy_global:
                x = x + float(np.random.random())  # noqa: NPY002 - the hidden dependence under test
            loss = net(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            recorder.log(step, **{"losses/loss": loss.item()})
        return {}


SPACES_TOY = textwrap.dedent(
    """
    import numpy as np
    import gymnasium as gym
    from gymnasium import spaces
    from torch import nn


    SCALE = 1.0


    def config():
        return {"hidden": 6}


    class Env(gym.Env):
        def __init__(self, seed):
            self.observation_space = spaces.Box(0.0, 1.0, (5,), np.float32)
            self.action_space = spaces.Discrete(3)
            self.rng = np.random.default_rng(seed)
            self.t = 0

        def reset(self, *, seed=None, options=None):
            if seed is not None:
                self.rng = np.random.default_rng(seed)
            self.t = 0
            return self.rng.random(5).astype(np.float32), {}

        def step(self, action):
            self.t += 1
            obs = self.rng.random(5).astype(np.float32) * (1 + int(action)) / 3
            obs[3] *= SCALE  # SCALE > 1: feature 3 leaves the declared Box(0, 1)
            return obs, 0.0, False, self.t >= 10, {}


    def make_env(config, seed):
        return Env(seed)


    def make_policy(config, observation_space, action_space):
        return nn.Sequential(nn.Linear(5, config["hidden"]), nn.Tanh(), nn.Linear(config["hidden"], 3))
    """
)


def shape_subject(make_env: Any) -> Any:
    """The Dict-observation fixture subject's policy and loss (its policy encodes any space) on ``make_env``."""
    from types import SimpleNamespace

    import dict_obs_subject as module  # tests/fixtures is on sys.path

    return SimpleNamespace(
        config=module.config,
        make_env=make_env or module.make_env,
        make_policy=module.make_policy,
        compute_advantages=module.compute_advantages,
        compute_loss=module.compute_loss,
    )


ROLLOUT_CAPABILITIES = ("config", "make_env", "make_policy", "compute_advantages", "compute_loss")


def runs_table() -> pd.DataFrame:
    """Two metrics, two sides, three seeds; value = k * step with k known per (metric, side, seed)."""
    rows = []
    for m, name in enumerate(("charts/episodic_return", "losses/value_loss")):
        for s, side in enumerate(("baseline", "candidate")):
            for seed in range(3):
                k = (m + 1) * (s + 1) * (seed + 1)
                for step in range(0, 1001, 100):
                    rows.append(
                        {
                            "name": name,
                            "side": side,
                            "seed": seed,
                            "step": step,
                            "seconds": step / (100.0 * (s + 1)),  # the candidate is twice as slow
                            "value": float(k * step + 1),
                        }
                    )
    return pd.DataFrame(rows)
