"""The trainer room: runtime geometry from recorder tables, config geometry, final-performance statistics,
collapses, and the detection matrix for the trainer faults (with identical and seed-shifted pairs quiet)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlaudit.demo import faults as catalog
from rlaudit.findings import Finding, Status
from rlaudit.io import write_table
from rlaudit.trainer import audit as ta
from rlaudit.trainer.runs import RunData


def flagged(sections: Iterable[Any]) -> list[Finding]:
    """SUSPECT/CONFIRMED findings of Sections (as tests/audits/conftest.py's helper, which is not importable)."""
    return [f for s in sections for f in s.findings if f.status.is_flag]


def describe(findings: Iterable[Finding]) -> str:
    return "\n".join(f"{f.id}: {f.headline}" for f in findings)


def fake_run(
    tmp: Path,
    *,
    num_envs: int,
    num_steps: int,
    rollouts: int,
    opt_steps: int,
    seed: int = 0,
    minibatch: int | None = None,
    metric: list[float] | None = None,
) -> RunData:
    """A run directory as train_run leaves it: recorder tables, summary.json and config.json."""
    run_dir = tmp / f"s{seed}-{num_envs}-{num_steps}" / "run"
    run_dir.mkdir(parents=True)
    batch = num_envs * num_steps
    steps = [batch * (i + 1) for i in range(rollouts) for _ in range(opt_steps)]
    write_table(
        run_dir / "updates",
        {
            "update": np.arange(1, len(steps) + 1),
            "step": steps,
            "group": np.zeros(len(steps), int),
            "lr": np.ones(len(steps)),
        },
    )
    values = metric if metric is not None else [0.0] * (2 * num_envs)
    n = len(values)
    write_table(
        run_dir / "episodes",
        {
            "step": np.linspace(batch, batch * rollouts, n).astype(int),
            "env": np.arange(n) % num_envs,
            "heart.get": np.asarray(values, float),
        },
    )
    summary = {"steps": batch * rollouts, "seconds": 10.0}
    (run_dir / "summary.json").write_text(json.dumps(summary))
    config = {"trainer": {"num_envs": 64, "num_steps": 64, "num_minibatches": 4, "update_epochs": 4}}
    (run_dir.parent / "config.json").write_text(json.dumps(config))
    result = {
        "summary": {
            "num_envs": num_envs,
            "num_steps": num_steps,
            "batch_size": batch,
            "minibatch_size": minibatch or batch // 4,
        },
        "seed": seed,
    }
    return RunData(side="x", seed=seed, dir=run_dir.parent, result=result)


def test_runtime_geometry_reads_envs_batch_and_optimizer_steps(tmp_path: Path) -> None:
    run = fake_run(tmp_path, num_envs=14, num_steps=64, rollouts=3, opt_steps=16)
    geo = ta.runtime_geometry(run)
    assert geo["num_envs"] == 14 and geo["batch"] == 896 and geo["opt_steps_per_rollout"] == 16
    assert geo["rollout_length"] == 64 and geo["epochs"] == pytest.approx(4.0)
    assert geo["updates_per_million"] == pytest.approx(1e6 / 896)


def test_config_geometry_derives_batch_and_optimizer_steps() -> None:
    geo = ta.config_geometry(
        {"trainer": {"num_envs": 64, "num_steps": 64, "num_minibatches": 4, "update_epochs": 4}}
    )
    assert geo["batch"] == 4096 and geo["minibatch_size"] == 1024 and geo["opt_steps_per_rollout"] == 16
    assert geo["num_envs_key"] == "trainer.num_envs"


def test_geometry_table_shows_the_heuristic_as_numbers(tmp_path: Path) -> None:
    data = {
        "baseline": [fake_run(tmp_path, num_envs=64, num_steps=64, rollouts=2, opt_steps=16)],
        "candidate": [fake_run(tmp_path, num_envs=14, num_steps=64, rollouts=2, opt_steps=16, seed=1)],
    }
    table, _per_side = ta.geometry_table(data)
    row = table.set_index("quantity").loc["environments"]
    assert (
        row["baseline config"],
        row["baseline runtime"],
        row["candidate config"],
        row["candidate runtime"],
    ) == (64, 64, 64, 14)


def test_compare_final_needs_seeds_and_a_practical_effect() -> None:
    two = {"baseline": {0: 1.0, 1: 1.1}, "candidate": {0: 0.5, 1: 0.55}}
    assert not ta.compare_final(two)["decisive"]  # two seeds can never carry a verdict
    five = {
        "baseline": {i: 1.0 + 0.02 * i for i in range(5)},
        "candidate": {i: 0.5 + 0.02 * i for i in range(5)},
    }
    out = ta.compare_final(five)
    assert out["decisive"] and out["diff"] == pytest.approx(-0.5) and out["poi"] == 0.0
    tiny = {
        "baseline": {i: 1.0 + 0.02 * i for i in range(5)},
        "candidate": {i: 0.97 + 0.02 * i for i in range(5)},
    }
    assert not ta.compare_final(tiny)["decisive"]  # consistent but below the 10% practical effect


def test_compare_final_pairs_by_seed() -> None:
    # Seed-to-seed spread is large, but every candidate seed is 20% below its baseline seed: paired, decisive.
    base = {i: v for i, v in enumerate([1.0, 2.0, 3.0, 4.0, 5.0])}
    cand = {i: 0.8 * v for i, v in base.items()}
    out = ta.compare_final({"baseline": base, "candidate": cand})
    assert out["diff_ci"][1] < 0


def test_collapsed_runs() -> None:
    import pandas as pd

    rows = []
    curves = {
        0: [0.1, 0.5, 1.0, 1.0, 0.9, 1.0, 0.95, 0.9],  # holds its level
        1: [0.1, 0.6, 1.0, 1.0, 0.9, 0.2, 0.1, 0.1],  # collapses after its peak
        2: [0.0, 0.0, 0.6, 0.0, 0.0, 0.1, 0.0, 0.1],  # one lucky bin, damped by the smoothing, is no peak
    }
    for seed, curve in curves.items():
        rows += [{"side": "candidate", "seed": seed, "bin": b, "value": v} for b, v in enumerate(curve)]
    assert ta.collapsed_runs(pd.DataFrame(rows)) == {"baseline": [], "candidate": [1]}


# ---------------------------------------------------------------------------------------------------------------
# Detection matrix
# ---------------------------------------------------------------------------------------------------------------

TRAINER_FAULTS = [f.id for f in catalog.CATALOG.values() if f.subsystem == "trainer"]


@pytest.mark.parametrize("fault", TRAINER_FAULTS)
def test_trainer_fault_is_flagged(make_wb, fault: str) -> None:
    from rlaudit.trainer import audit_all

    sections = audit_all(make_wb(f"builtin:reference+{fault}"))
    found = [f for f in flagged(sections) if f.subsystem == "trainer"]
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"
    geometry = [f for f in found if f.id.startswith("trainer/geometry")]
    assert geometry and geometry[0].status is Status.CONFIRMED, describe(found)


def test_identical_pair_is_quiet(make_wb) -> None:
    from rlaudit.trainer import audit_all

    sections = audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]


@pytest.mark.parametrize(
    ("base_seeds", "cand_seeds"), [([0, 1, 2], [3, 4, 5]), ([3, 4, 5], [0, 1, 2]), ([0, 2, 4], [1, 3, 5])]
)
def test_learning_and_stability_quiet_on_seed_shifted_pairs(
    make_wb, base_seeds: list[int], cand_seeds: list[int]
) -> None:
    """The same subject on different seeds (an A/A with real seed-to-seed noise, three seeds a side so that a
    verdict is possible at all) must not be flagged."""
    from rlaudit.trainer.runs import run_data, runs

    wb = make_wb("builtin:reference")
    every = run_data(runs(wb, seeds=range(6)))["baseline"]
    by_seed = {r.seed: r for r in every}
    # Pair index i of one arm with index i of the other, as the paired statistics do.
    data = {
        "baseline": [by_seed[s] for s in base_seeds],
        "candidate": [_reseeded(by_seed[s], b) for s, b in zip(cand_seeds, base_seeds, strict=True)],
    }
    sections = [ta.learning_section(data, "heart.get", "A/A"), ta.stability_section(data, "heart.get", "A/A")]
    assert not flagged(sections), describe(flagged(sections))


def _reseeded(run: RunData, seed: int) -> RunData:
    return RunData(side="candidate", seed=seed, dir=run.dir, result=run.result)


def _timed_run(tmp: Path, seed: int, sps: float) -> RunData:
    run = fake_run(tmp, num_envs=8, num_steps=8, rollouts=2, opt_steps=4, seed=seed)
    steps = 8 * 8 * 2
    (run.run_dir / "summary.json").write_text(json.dumps({"steps": steps, "seconds": steps / sps}))
    write_table(
        run.run_dir / "phases",
        {
            "name": ["rollout", "rollout/env", "rollout/inference", "update"],
            "count": [2, 16, 16, 2],
            "seconds": [0.5 * steps / sps, 0.3 * steps / sps, 0.1 * steps / sps, 0.4 * steps / sps],
        },
    )
    return run


def test_speed_needs_three_runs_and_a_practical_gap(tmp_path: Path) -> None:
    slow = {
        "baseline": [_timed_run(tmp_path / "b", i, 1000 + 10 * i) for i in range(3)],
        "candidate": [_timed_run(tmp_path / "c", i, 500 + 10 * i) for i in range(3)],
    }
    finding = ta.speed_section(slow, "h").findings[0]
    assert finding.status is Status.CONFIRMED and finding.evidence.effect == pytest.approx(0.51, abs=0.02)
    two = {s: runs[:2] for s, runs in slow.items()}
    assert ta.speed_section(two, "h").findings[0].status is Status.NOTED  # the same gap, too few runs
    close = {
        "baseline": slow["baseline"],
        "candidate": [_timed_run(tmp_path / "d", i, 950 + 10 * i) for i in range(3)],
    }
    assert (
        ta.speed_section(close, "h").findings[0].status is Status.CLEARED
    )  # 5% is below the practical effect


def test_phase_breakdown_splits_time_per_thousand_steps(tmp_path: Path) -> None:
    run = _timed_run(tmp_path, 0, 1000.0)
    parts = ta.phase_breakdown(run)
    assert parts["env"] == pytest.approx(0.3) and parts["inference"] == pytest.approx(0.1)
    assert parts["update"] == pytest.approx(0.4) and parts["other"] == pytest.approx(0.2)
