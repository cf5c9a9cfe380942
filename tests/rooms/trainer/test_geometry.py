"""The tests of :mod:`rlaudit.trainer.geometry`."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlaudit.findings import Status
from rlaudit.trainer import geometry as tg
from rlaudit.trainer.runs import RunData
from support.runs import bench, evidence, fake_run

# ---------------------------------------------------------------------------------------------------------------
# Geometry
# ---------------------------------------------------------------------------------------------------------------


def test_runtime_geometry_reads_envs_batch_and_optimizer_steps(tmp_path: Path) -> None:
    run = fake_run(tmp_path, num_envs=14, num_steps=64, rollouts=3, opt_steps=16)
    geo = tg.runtime_geometry(run)
    assert geo["num_envs"] == 14 and geo["batch"] == 896 and geo["opt_steps_per_rollout"] == 16
    assert geo["rollout_length"] == 64 and geo["epochs"] == pytest.approx(4.0)
    assert geo["updates_per_million"] == pytest.approx(1e6 / 896)


def test_config_geometry_derives_batch_and_optimizer_steps() -> None:
    geo = tg.config_geometry(
        {"trainer": {"num_envs": 64, "num_steps": 64, "num_minibatches": 4, "update_epochs": 4}}
    )
    assert geo["batch"] == 4096 and geo["minibatch_size"] == 1024 and geo["opt_steps_per_rollout"] == 16
    assert geo["num_envs_key"] == "trainer.num_envs"


def test_geometry_table_shows_the_heuristic_as_numbers(tmp_path: Path) -> None:
    data = {
        "baseline": [fake_run(tmp_path, num_envs=64, num_steps=64, rollouts=2, opt_steps=16)],
        "candidate": [fake_run(tmp_path, num_envs=14, num_steps=64, rollouts=2, opt_steps=16, seed=1)],
    }
    table, _per_side = tg.geometry_table(data)
    row = table.set_index("quantity").loc["environments"]
    assert (
        row["baseline config"],
        row["baseline runtime"],
        row["candidate config"],
        row["candidate runtime"],
    ) == (64, 64, 64, 14)


def test_the_same_ignored_config_on_both_sides_gets_the_same_severity(tmp_path: Path) -> None:
    def side(seed: int) -> list[RunData]:
        return [fake_run(tmp_path, num_envs=14, num_steps=64, rollouts=2, opt_steps=16, seed=seed)]

    one = {f.id: f for f in tg.geometry(bench(), given=evidence(side(0), side(1))).findings}
    assert {f.status for f in one.values()} == {Status.NOTED}
    assert one["trainer/geometry-baseline"].severity == one["trainer/geometry-candidate"].severity
    wide = [fake_run(tmp_path, num_envs=64, num_steps=64, rollouts=2, opt_steps=16, seed=2)]
    only = {f.id: f.status for f in tg.geometry(bench(), given=evidence(wide, side(3))).findings}
    assert only == {"trainer/geometry-candidate": Status.CONFIRMED}
