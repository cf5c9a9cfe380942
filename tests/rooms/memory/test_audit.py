"""The memory room: growth fits, container walks, the growth-sites probe on a leaking toy env, detection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium import spaces

from rlaudit.demo.faults import CATALOG
from rlaudit.engine.io import read_table
from rlaudit.engine.subjects import parse_spec
from rlaudit.memory import audit, probes
from rlaudit.stats import Interval
from support.probing import probe_context

MEMORY_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "memory")


class LeakyEnv(gym.Env):
    """Episodes of 4 steps; with ``leak`` every reset files a string under a new key that is never removed."""

    def __init__(self, leak: bool) -> None:
        self.observation_space = spaces.Box(0, 1, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.leak = leak
        self.history: dict[str, str] = {}
        self.t = 0
        self.resets = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        self.resets += 1
        if self.leak:
            self.history[f"episode-{self.resets}"] = "x" * 200
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.zeros(2, dtype=np.float32), 0.0, False, self.t >= 4, {}


class LeakySubject:
    def __init__(self, leak: bool) -> None:
        self.leak = leak

    def config(self) -> dict:
        return {"trainer": {"num_envs": 1, "num_steps": 16}}

    def make_env(self, config: dict, seed: int) -> LeakyEnv:
        return LeakyEnv(self.leak)


def test_growth_per_episode_is_a_least_squares_slope() -> None:
    points = pd.DataFrame({"snapshot": [0, 1, 2, 3], "episodes": [0, 100, 200, 300]})
    values = pd.DataFrame(
        {
            "snapshot": [0, 1, 2, 3, 0, 1, 2, 3],
            "item": ["a"] * 4 + ["b"] * 4,
            "size": [10, 110, 210, 310, 50, 50, 50, 50],
        }
    )
    g = audit.growth_per_episode(values, points, "item", "size").set_index("item")
    assert g.loc["a", "per_1000_episodes"] == pytest.approx(1000.0)
    assert g.loc["b", "per_1000_episodes"] == pytest.approx(0.0)
    assert bool(g.loc["a", "monotone"])


def test_a_table_filled_once_is_not_growth() -> None:
    # Snapshot 0 is taken right after reset; a table built on the first update then stays the same size.
    points = pd.DataFrame({"snapshot": range(6), "episodes": [0, 50, 100, 150, 200, 250]})
    values = pd.DataFrame({"snapshot": range(6), "item": "tree", "size": [0, 4096, 4096, 4100, 4096, 4104]})
    g = audit.growth_per_episode(values, points, "item", "size").iloc[0]
    assert abs(g["per_1000_episodes"]) < 100  # the fill (4 KiB at the first update) is not a slope
    base = pd.DataFrame(columns=g.index)
    assert audit.compare_growth(base, pd.DataFrame([g]), audit.BYTES_PER_1000_EPISODES).empty


def test_compare_growth_needs_more_than_the_baseline_grows() -> None:
    base = pd.DataFrame(
        {
            "item": ["log", "labels"],
            "first": [0, 16],
            "last": [300, 16],
            "per_1000_episodes": [900.0, 0.0],
            "monotone": [True, True],
            "linear": [True, True],
        }
    )
    cand = pd.DataFrame(
        {
            "item": ["log", "labels"],
            "first": [0, 16],
            "last": [310, 320],
            "per_1000_episodes": [950.0, 1000.0],
            "monotone": [True, True],
            "linear": [True, True],
        }
    )
    out = audit.compare_growth(base, cand, threshold=100.0)
    assert out["item"].tolist() == ["labels"]  # "log" grows as fast in the baseline


def test_leak_verdicts_judge_the_extra_growth() -> None:
    thr = audit.RSS_PER_1000_STEPS
    flat = Interval(100.0, -500.0, 700.0)
    leak = Interval(10 * thr, 8 * thr, 12 * thr)
    assert audit.leak_verdict(flat, leak, thr).different  # 10 thr more, interval far from 0
    assert audit.leak_verdict(leak, leak, thr).inconclusive  # the same slope, each known to ±2 thr
    tight = Interval(10 * thr, 9.9 * thr, 10.1 * thr)
    assert audit.leak_verdict(tight, tight, thr).equivalent  # both grow alike: no extra growth
    assert audit.leak_verdict(flat, flat, thr).equivalent
    noisy = Interval(0.0, -3 * thr, 3 * thr)
    assert audit.leak_verdict(flat, noisy, thr).inconclusive  # neither within ±thr nor beyond it
    assert audit.leak_verdict(None, None, thr).inconclusive


def test_extra_growth_lies_inside_its_own_interval() -> None:
    # The report that printed effect -1.03e+04 with interval [2.42e+04, 1.1e+05] (the candidate's own interval).
    base = Interval(7.0e4, 3.0e4, 1.2e5)
    cand = Interval(5.97e4, 2.42e4, 1.1e5)
    diff = audit.growth_difference(base, cand)
    assert diff.point == pytest.approx(-1.03e4)
    assert diff.low < diff.point < diff.high
    half = 1.959963984540054
    se = np.hypot((1.1e5 - 2.42e4) / (2 * half), (1.2e5 - 3.0e4) / (2 * half))
    assert diff.high - diff.point == pytest.approx(half * se)
    assert audit.growth_difference(None, cand) == cand and audit.growth_difference(base, None) is None


def test_training_runs_without_a_memory_table_are_skipped_by_name(
    bench: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlaudit.trainer.runs import RunData

    table = RunData.table
    monkeypatch.setattr(
        RunData, "table", lambda self, name: pd.DataFrame() if name == "memory" else table(self, name)
    )
    section = audit.rss_training(bench("builtin:reference"))
    (finding,) = section.findings
    assert finding.status.value == "SKIPPED", finding.headline
    assert "memory table" in finding.evidence.summary and "recorder" in finding.remediation


def test_rss_slope_skips_the_warm_up() -> None:
    x = np.arange(0, 11) * 1000
    rss = np.where(x < 2000, 1e8 + 5e6 * (x > 0), 1.05e8 + 2048 * (x - 2000) / 1000)
    iv = audit.rss_slope(pd.DataFrame({"env_steps": x, "rss_bytes": rss}), "env_steps", seed=0)
    assert iv.point == pytest.approx(2048.0, rel=1e-6)


def test_container_sizes_walk_attributes_and_arrays() -> None:
    class Inner:
        def __init__(self) -> None:
            self.labels = {i: str(i) for i in range(5)}

    class Outer:
        __slots__ = ("buf", "inner", "items")

        def __init__(self) -> None:
            self.inner = Inner()
            self.items = [1, 2, 3]
            self.buf = np.zeros(10, dtype=np.float32)

    sizes = probes.container_sizes(Outer(), "env")
    assert sizes["env.inner.labels"] == 5 and sizes["env.items"] == 3 and sizes["env.buf#bytes"] == 40


def test_growth_sites_probe_finds_a_per_episode_dictionary(tmp_path: Path) -> None:
    tables = {}
    for leak in (False, True):
        subject = LeakySubject(leak)
        out = tmp_path / str(leak)
        ctx = probe_context(subject, out, {"config", "make_env"})
        probes.growth_sites(ctx, seed=0, steps=160, snapshots=3)
        points = read_table(out / "points")
        tables[leak] = audit.growth_per_episode(read_table(out / "containers"), points, "path", "size")
    flagged = audit.compare_growth(tables[False], tables[True], audit.ENTRIES_PER_1000_EPISODES)
    assert "env.history" in flagged["item"].tolist()
    assert audit.compare_growth(tables[False], tables[False], audit.ENTRIES_PER_1000_EPISODES).empty


@pytest.mark.parametrize("fault", MEMORY_FAULTS)
def test_memory_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "memory")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    wb = bench(parse_spec("builtin:reference", env={"RLAUDIT_AA_REPLICA": "1"}))
    for seed in (0, 1):
        sections = audit.audit_all(wb, seed=seed)
        assert not flagged(sections), f"seed {seed}: " + describe(flagged(sections))
