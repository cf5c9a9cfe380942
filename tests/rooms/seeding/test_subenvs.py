"""The tests of :mod:`rlaudit.seeding.subenvs`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from rlaudit.seeding import audit, probes
from support.probing import probe_context


class _Noisy:
    """A toy subject: a vector of random walks, each drawing its noise from its own seeded generator."""

    def __init__(self, *, fixed_seed: int | None) -> None:
        self.fixed_seed = fixed_seed

    def config(self) -> dict[str, Any]:
        return {"num_envs": 4}

    def make_env(self, config: dict[str, Any], seed: int) -> Any:
        import gymnasium as gym
        from gymnasium import spaces

        fixed = self.fixed_seed

        class Walk(gym.Env):
            observation_space = spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64)
            action_space = spaces.Discrete(2)

            def reset(self, *, seed=None, options=None):
                super().reset(seed=fixed if fixed is not None else seed)  # the fault: one seed for every env
                self.x = float(self.np_random.normal())
                return np.array([self.x]), {}

            def step(self, action):
                self.x += (1.0 if action else -1.0) + float(self.np_random.normal())
                return np.array([self.x]), 0.0, False, False, {}

        return gym.vector.SyncVectorEnv([Walk for _ in range(config["num_envs"])])


def _subenv_result(tmp_path: Path, subject: _Noisy, name: str) -> Any:
    from types import SimpleNamespace

    out = tmp_path / name
    probes.subenv_trajectories(probe_context(subject, out, ("config", "make_env")), seed=3, steps=6)
    data = json.loads((out / "trajectories.json").read_text())
    return SimpleNamespace(
        json=lambda artifact: data, missing=(), ok=True, error=None, probe="subenv_trajectories"
    )


def test_sub_environments_reset_with_one_seed_are_confirmed(tmp_path: Path) -> None:
    from rlaudit.engine.workbench import Pair
    from support.runs import bench

    apart = _subenv_result(tmp_path, _Noisy(fixed_seed=None), "apart")
    alike = _subenv_result(tmp_path, _Noisy(fixed_seed=7), "alike")
    (regressed,) = audit.sub_envs(bench(), given=Pair(baseline=apart, candidate=alike), seed=3).findings
    assert regressed.status.value == "CONFIRMED" and "replay one trajectory" in regressed.evidence.summary
    (fixed,) = audit.sub_envs(bench(), given=Pair(baseline=alike, candidate=apart), seed=3).findings
    assert fixed.status.value == "NOTED" and "a fix, not a regression" in fixed.evidence.summary
    (same,) = audit.sub_envs(bench(), given=Pair(baseline=apart, candidate=apart), seed=3).findings
    assert same.status.value == "CLEARED"
    assert audit.subenv_report(apart.json(""), 3) == {
        "num_envs": 4,
        "distinct": 4,
        "distinct_starts": 4,
        "seed_sensitive": True,
    }
