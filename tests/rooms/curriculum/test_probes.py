"""The tests of :mod:`rlaudit.curriculum.probes`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rlaudit.curriculum import probes, sampling
from rlaudit.engine.io import read_table
from rlaudit.probe import ProbeContext
from support.probing import probe_context


class ToyCurriculum:
    """Samples tasks 0..n-1 with weights = 1 + last score; ``scan`` makes update O(pool) like case 004."""

    def __init__(self, pool: int, seed: int | None, scan: bool) -> None:
        self.pool = pool
        self.rng = np.random.default_rng(seed)
        self.weights = np.ones(8)
        self.scan = scan
        self.slots = list(range(pool))

    def sample(self) -> int:
        return int(self.rng.choice(8, p=self.weights / self.weights.sum()))

    def update(self, task: int, score: float) -> None:
        if self.scan:
            sum(1 for s in self.slots if s >= 0)  # reads every slot
        self.weights[task] = 1.0 + score


class ToySubject:
    def __init__(self, scan: bool = False) -> None:
        self.scan = scan

    def config(self) -> dict:
        return {"curriculum": {"max_tasks": 64}}

    def make_curriculum(self, config: dict, seed: int | None = None) -> ToyCurriculum:
        return ToyCurriculum(config["curriculum"]["max_tasks"], seed, self.scan)


def ctx_for(subject: Any, out: Path) -> ProbeContext:
    return probe_context(subject, out, ("config", "make_curriculum"))


def test_synthetic_scores_are_deterministic_learning_curves() -> None:
    first = [probes.synthetic_score(0, "3", k) for k in range(80)]
    assert first == [probes.synthetic_score(0, "3", k) for k in range(80)]
    assert all(0.0 <= s <= 1.0 for s in first)
    assert np.mean(first[-10:]) > np.mean(first[:5])  # it rises
    assert first != [probes.synthetic_score(1, "3", k) for k in range(80)]


def test_scaling_probe_varies_the_pool_through_the_config(tmp_path: Path) -> None:
    ctx = ctx_for(ToySubject(scan=True), tmp_path / "c")
    out = probes.scaling(ctx, seed=0, sizes=[16, 256, 4096], repeats=3, calls=8)
    assert out["pool_key"] == "curriculum.max_tasks" and out["sizes"] == [16, 256, 4096]
    timings = read_table(ctx.out / "timings")
    assert len(timings) == 9 and (timings["update_seconds"] > 0).all()


def test_sampling_probe_reproduces_a_seeded_curriculum(tmp_path: Path) -> None:
    ctx = ctx_for(ToySubject(), tmp_path / "s")
    out = probes.sampling(ctx, seed=0, phases=2, samples_per_phase=200, episodes=50)
    assert out["seeded"] == "argument" and out["reproducible"] and out["tasks_seen"] == 8
    phases = __import__("json").loads((ctx.out / "open_loop.json").read_text())["phases"]
    assert len(phases) == 3 and sum(phases[1].values()) == 200
    assert sampling.pooled_counts(phases) == {
        k: phases[1].get(k, 0) + phases[2].get(k, 0) for k in set(phases[1]) | set(phases[2])
    }
