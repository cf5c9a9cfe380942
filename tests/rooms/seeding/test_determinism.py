"""The tests of :mod:`rlaudit.seeding.determinism`."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from rlaudit.engine.subjects import parse_spec
from rlaudit.seeding import audit, probes
from support.probing import probe_context

# A numpy-only subject whose random walk is seeded by reset(seed=...); with HASH_SALT its drift also depends
# on hash() of a string, which Python randomizes per process unless PYTHONHASHSEED is set.
TOY_SUBJECT = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces

    HASH_SALT = {hash_salt}

    class Walk(gym.Env):
        def __init__(self, drift):
            self.observation_space = spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64)
            self.action_space = spaces.Discrete(2)
            self.drift = drift

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.x = 0.0
            return np.array([self.x]), {{}}

        def step(self, action):
            self.x += self.np_random.normal() + self.drift + action
            return np.array([self.x]), 0.0, False, False, {{}}

    def config():
        return {{"env": {{"size": 1}}}}

    def make_env(config, seed):
        drift = (hash("rlaudit") % 1_000_003) / 1_000_003 if HASH_SALT else 0.0
        return Walk(drift)
    """
)


def toy_ctx(tmp_path: Path, name: str, hash_salt: bool) -> Any:
    directory = tmp_path / name
    directory.mkdir()
    path = directory / "subject.py"
    path.write_text(TOY_SUBJECT.format(hash_salt=hash_salt))
    spec = parse_spec(str(path))
    from rlaudit.engine.subjects import load_subject

    subject = load_subject(spec)
    return probe_context(subject, tmp_path / f"{name}-out", {"config", "make_env"}, spec=spec.text)


def test_fresh_processes_catch_hash_randomization(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    reports = {}
    for name, salt in (("clean", False), ("hashed", True)):
        ctx = toy_ctx(tmp_path, name, salt)
        out = probes.replicas(ctx, seed=3, other_seed=4, env_steps=8, train_steps=0, fresh=2, timeout=300)
        assert out["parts"] == ["env"]
        reports[name] = audit.same_seed_report(
            __import__("json").loads((ctx.out / "replicas.json").read_text())
        )
    clean, hashed = reports["clean"], reports["hashed"]
    assert clean["fresh"]["identical"] and clean["warm"]["identical"] and not clean["insensitive"]
    # hash("rlaudit") differs between two fresh interpreters (about a 1-in-a-million chance of a collision)
    assert hashed["fresh"]["env_step"] == 1 and not hashed["fresh"]["identical"]
