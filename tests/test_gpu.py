"""Subjects on a CUDA device: the built-in PPO and DQN pairs and the SB3 PPO pair, audited at smoke with
``device="cuda"``.

Marked ``gpu``: skipped where torch sees no CUDA device (tests/conftest.py says why), run where it does. The
pairs are judged by :mod:`rlaudit.bench.gpu_check`, the script that runs the same checks on a GPU machine
(``python -m rlaudit.bench.gpu_check``). ``tests/test_devices.py`` proves the same code paths on the CPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.gpu


@pytest.fixture
def gpu_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What gpu_check sets for its workers, restored after the test."""
    monkeypatch.setenv("RLAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    monkeypatch.delenv("RLAUDIT_WORKER_MEMORY_MB", raising=False)
    return tmp_path


@pytest.mark.parametrize("pair", ["builtin", "dqn", "sb3"])
def test_a_pair_on_cuda_finds_what_it_finds_on_the_cpu(pair: str, gpu_env: Path) -> None:
    """Every audit runs (no ERROR: no probe fed a CPU tensor to the GPU network, read a GPU tensor as numpy or
    loaded a checkpoint onto the wrong device), and the pair's known findings come out flagged."""
    from rlaudit.bench import gpu_check
    from rlaudit.engine.workbench import Workbench
    from rlaudit.rooms import run_audits

    baseline, candidate = gpu_check.pair_specs(pair, "cuda", gpu_env)
    wb = Workbench(baseline, candidate, profile="smoke")
    try:
        findings = list(run_audits(wb))
    finally:
        wb.close()
    result = gpu_check.evaluate(pair, baseline, candidate, findings, 0.0)
    assert result.passed, gpu_check.summary([result], "cuda")


def test_probes_and_recorder_on_cuda(tmp_path: Path) -> None:
    from rlaudit.agents.nets import as_tensors, trace_forward
    from rlaudit.devices import module_device, to_numpy
    from rlaudit.recorder import Recorder

    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)).cuda()
    assert module_device(net).type == "cuda"
    trace = trace_forward(net, as_tensors(np.zeros((5, 4), dtype=np.float32)))
    assert to_numpy(trace.outputs["2"]).shape == (5, 2)
    rec = Recorder(tmp_path / "run")
    rec.watch(net, torch.optim.Adam(net.parameters()))
    with rec.phase("update"):
        net(torch.zeros(5, 4, device="cuda")).sum().backward()
    rec.close()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["device"].startswith("cuda:") and summary["sps_wall"] >= 0


def _two_runs_on_cuda(subject: Any, config: dict[str, Any], steps: int, root: Path) -> list[dict[str, Any]]:
    """``subject.train`` twice from seed 0 under a recorder each, every run on the card; the train outputs
    without their throughput."""
    from rlaudit.recorder import Recorder

    outs = []
    for run in ("a", "b"):
        with Recorder(root / run) as rec:
            out = subject.train(config, steps, 0, rec)
        summary = json.loads((root / run / "summary.json").read_text())
        assert summary["device"].startswith("cuda:")
        outs.append({k: v for k, v in out.items() if k != "sps"})
    return outs


def test_the_builtin_trainer_repeats_a_seed_on_cuda(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same seed, same run, on the same card: deterministic algorithms and CUBLAS_WORKSPACE_CONFIG."""
    from rlaudit.bench.gpu_check import cuda
    from rlaudit.demo import checkpoint as ckpt

    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    config = cuda.reference.config(["trainer.num_envs=8", "trainer.num_steps=32"])
    runs = _two_runs_on_cuda(cuda.reference, config, 512, tmp_path)
    weights = [ckpt.read_checkpoint(out["checkpoints"][-1])["policy"] for out in runs]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_the_fingerprint_names_this_machines_gpu() -> None:
    from rlaudit.engine.fingerprint import fingerprint_details
    from rlaudit.engine.subjects import parse_spec

    details = fingerprint_details(parse_spec("builtin:reference"))
    assert details.get("device", {}).get("gpus"), "a CUDA machine's fingerprint must list its GPUs"


def test_the_builtin_dqn_repeats_a_seed_on_cuda(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The off-policy trainer on the card: replay batches moved to it, targets and copies made on it, and the
    same seed giving the same run."""
    from rlaudit.bench.gpu_check import cuda

    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    config = cuda.dqn.config(["trainer.learning_starts=200", "trainer.target_update_interval=20"])
    runs = _two_runs_on_cuda(cuda.dqn, config, 2_000, tmp_path)
    assert runs[0] == runs[1] and runs[0]["updates"] > 0
