"""The tests of :mod:`rlaudit.seeding.generators`."""

from __future__ import annotations

from pathlib import Path

from rlaudit.seeding import audit, replica
from support.toys import TorchToy


def test_perturbing_global_generators_exposes_a_hidden_numpy_dependence(tmp_path: Path) -> None:
    args = {"seed": 0, "env_steps": 0, "train_steps": 1, "workdir": str(tmp_path)}
    toy = TorchToy(True, use_numpy_global=True)
    canon = {"python": 0, "numpy": 0, "torch": 0}
    base = replica.run({**args, "globals": canon}, toy)
    assert audit.compare_replicas(base, replica.run({**args, "globals": canon}, toy))["identical"]
    numpy_moved = replica.run({**args, "globals": {**canon, "numpy": 1}}, toy)
    torch_moved = replica.run({**args, "globals": {**canon, "torch": 1}}, toy)
    assert not audit.compare_replicas(base, numpy_moved)["identical"]
    assert audit.compare_replicas(base, torch_moved)["identical"]  # torch is reseeded by train itself
