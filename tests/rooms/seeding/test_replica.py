"""The tests of :mod:`rlaudit.seeding.replica`."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from rlaudit.seeding import audit, replica
from support.toys import TorchToy


def test_replicas_of_an_unseeded_trainer_differ_in_initial_weights(tmp_path: Path) -> None:
    args = {"seed": 0, "env_steps": 0, "train_steps": 1, "workdir": str(tmp_path)}
    good = [replica.run(args, TorchToy(True)) for _ in range(2)]
    bad = [replica.run(args, TorchToy(False)) for _ in range(2)]
    assert audit.compare_replicas(*good)["identical"]
    cmp = audit.compare_replicas(*bad)
    assert cmp["init"] is False and cmp["grad_step"] == 1 and cmp["losses"] is False
    assert "initial weights (2 tensors)" in audit.describe_difference(cmp)


def test_seed_globals_sets_each_named_generator() -> None:
    import torch

    replica.seed_globals({"python": 0, "numpy": 0, "torch": 0})
    first = (random.random(), np.random.random(), float(torch.rand(1)))  # noqa: NPY002
    replica.seed_globals({"python": 0, "numpy": 0, "torch": 0})
    assert (random.random(), np.random.random(), float(torch.rand(1))) == first  # noqa: NPY002
    replica.seed_globals({"numpy": 1})
    assert np.random.random() != first[1]  # noqa: NPY002


def test_replicas_compare_the_episodes_a_trainer_reports(tmp_path: Path) -> None:
    import minimal_train_subject as subject  # reports episodes only: no weights, no losses

    args = {"seed": 0, "env_steps": 0, "train_steps": 64, "workdir": str(tmp_path)}
    first, again = replica.run(args, subject), replica.run(args, subject)
    other = replica.run({**args, "seed": 1}, subject)
    same = audit.compare_replicas(first, again)
    assert same["identical"] and same["recorded"] == ["episode statistics"]
    assert same["init"] is None  # nothing recorded is nothing to compare, not "identical weights"
    assert audit.compare_replicas(first, other)["episodes"] is False


def test_a_replica_reads_its_recorder_tables_from_memory_and_writes_none(tmp_path: Path) -> None:
    args = {"seed": 0, "env_steps": 0, "train_steps": 1, "workdir": str(tmp_path)}
    out = replica.run(args, TorchToy(True))["train"]
    assert out["grad_norms"] and out["losses"] and out["init"] and out["final"]
    written = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert "summary.json" in written  # the recorder was closed
    assert not [n for n in written if n.endswith((".parquet", ".npz"))], written
