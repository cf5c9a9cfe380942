"""Training-run probe: train the subject with the recorder, inside the subject's own process.

Imports only the standard library and light rlaudit modules at import time (the recorder imports numpy, and
torch lazily).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from rlaudit.probe import ProbeContext, probe

RUN_SUBDIR = "run"
"""The recorder's ``run_dir`` inside the artifact: recorder tables, and the subject's own logs and
checkpoints when its ``train`` writes them under ``recorder.run_dir``."""

CALIBRATION_REPEATS = 15
"""Calibration workloads timed before and after ``train``: their median CPU time is the unit the trainer audit
measures CPU time per step in, so that a side trained while the machine was slower is not charged for it."""


def _relative(paths: list[str], root: Path) -> list[str]:
    """Paths inside the artifact, made relative (the artifact directory is renamed when committed)."""
    out = []
    for p in paths:
        try:
            out.append(str(Path(p).resolve().relative_to(root.resolve())))
        except ValueError:
            out.append(str(p))  # outside the artifact (an existing run of the user's): keep it absolute
    return out


def _calibrate(repeats: int = CALIBRATION_REPEATS) -> dict[str, list[float]]:
    """CPU seconds of ``repeats`` runs of each calibration workload, in this process.

    ``numpy``: :func:`rlaudit.env.rollout.calibration_workload` (small numpy operations and bytecode, about
    0.3 ms). ``torch``: a few Adam steps of a small MLP on one thread (about 2 ms), which, like a training
    update, touches more memory: on a loaded machine (other processes evicting the caches) it slows down with
    training, where the small workload barely moves. Without torch only ``numpy``.
    """
    from rlaudit.env.rollout import Clock, calibration_workload

    clock = Clock("cpu")
    out = {"numpy": [calibration_workload(clock) for _ in range(repeats)]}
    try:
        import torch
    except ImportError:  # a subject without torch: the small workload alone
        return out
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(256, 64, generator=gen)
        net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64))
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        times = []
        for _ in range(repeats):
            start = clock.now()
            for _ in range(5):
                loss = net(x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            times.append(clock.now() - start)
        out["torch"] = times
    finally:
        torch.set_num_threads(threads)
    return out


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _call_with_run_dir(fn: Any, config: dict, run_dir: Path) -> Any:
    if "run_dir" in inspect.signature(fn).parameters:
        return fn(config, run_dir=str(run_dir))
    return fn(config)


@probe(requires=("config", "train"), version=3)
def train_run(
    ctx: ProbeContext,
    *,
    steps: int,
    seed: int,
    overrides: list[str] | None = None,
    sample_every: int = 10,
    resume_from: str | None = None,
) -> dict:
    """Train for ``steps`` environment steps with ``seed``; the recorder writes to ``<artifact>/run``.

    Args:
        steps: Environment steps, all environments together.
        seed: The run's seed.
        overrides: ``dotted.key=value`` config overrides applied through the subject's own
            ``config(overrides=...)`` (attribution's restores use this).
        sample_every: The recorder's per-layer sampling interval, in optimizer steps.
        resume_from: A checkpoint to resume from (an absolute path, e.g. in another artifact).

    Returns:
        ``summary`` (what ``train`` returned), ``checkpoints`` and ``log_dir`` (relative to the artifact when
        inside it), ``seed``, ``steps``, ``calibration`` (median CPU seconds of each calibration workload
        timed right before and after ``train``: ``numpy``, and ``torch`` when the interpreter has torch).
    """
    from rlaudit.recorder import Recorder

    config = ctx.subject.config(overrides=list(overrides)) if overrides else ctx.config
    ctx.write_json("config", config)
    run_dir = ctx.path(RUN_SUBDIR)
    run_dir.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, Any] = {"resume_from": resume_from} if resume_from else {}
    calibration = _calibrate()  # before the recorder starts its clocks
    targets = None
    if ctx.has("target_networks"):  # the recorder then measures target-network updates itself

        def targets(policy: Any) -> dict[str, str]:
            return ctx.subject.target_networks(config, policy)

    recorder = Recorder(run_dir, sample_every=sample_every, target_networks=targets)
    try:
        summary = ctx.subject.train(config, steps, seed, recorder, **kwargs)
    finally:
        recorder.close()
    after = _calibrate()
    checkpoints: list[str] = []
    if ctx.has("checkpoints"):
        checkpoints = _relative(list(_call_with_run_dir(ctx.subject.checkpoints, config, run_dir)), ctx.out)
    log_dir = None
    if ctx.has("log_dir"):
        log_dir = _relative([str(_call_with_run_dir(ctx.subject.log_dir, config, run_dir))], ctx.out)[0]
    return {
        "summary": summary or {},
        "checkpoints": checkpoints,
        "log_dir": log_dir,
        "seed": seed,
        "steps": steps,
        "calibration": {k: _median(v + after.get(k, [])) for k, v in calibration.items()},
    }
