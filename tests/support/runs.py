"""Training runs built by hand, as the training-run probe leaves them, for the rooms that read runs.

``fake_run`` writes a run directory (recorder tables, ``summary.json``, ``config.json``) and returns its
:class:`rlaudit.trainer.runs.RunData`; ``evidence`` wraps runs of both sides as a check's evidence and
``bench`` is a stand-in workbench carrying the primary metric, so a check runs on them directly::

    section = learning(bench(), given=evidence(baseline=[...], candidate=[...]))
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from rlaudit.engine.io import write_table
from rlaudit.metrics import Metric
from rlaudit.trainer.runs import RunData, TrainingRuns

CONFIG = {"trainer": {"num_envs": 64, "num_steps": 64, "num_minibatches": 4, "update_epochs": 4}}


def fake_run(
    tmp: Path,
    *,
    num_envs: int = 8,
    num_steps: int = 8,
    rollouts: int = 2,
    opt_steps: int = 4,
    seed: int = 0,
    minibatch: int | None = None,
    metric: Sequence[float] | None = None,
    metric_name: str = "heart.get",
    summary: Mapping[str, Any] | None = None,
    calibration: float | None = None,
    tables: Mapping[str, Mapping[str, Any]] | None = None,
    config: Mapping[str, Any] | None = None,
) -> RunData:
    """A run directory as ``train_run`` leaves it.

    Args:
        num_envs, num_steps, rollouts, opt_steps: The geometry the run's ``updates`` and ``episodes`` show.
        minibatch: The minibatch size the trainer's summary reports (default: a quarter of the batch).
        metric: One value per finished episode of ``metric_name`` (default: ``2 * num_envs`` zeros), spread
            evenly over the run's steps.
        summary: The recorder's ``summary.json`` (default: steps and 10 seconds).
        calibration: The probe's torch calibration (CPU seconds; the numpy one is an eighth of it).
        tables: More recorder tables (``phases``, ``minibatches``, ...), name -> columns.
        config: The resolved config (default: :data:`CONFIG`).
    """
    run_dir = tmp / f"s{seed}-{num_envs}-{num_steps}-{len(list(tmp.glob('*')))}" / "run"
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
    values = list(metric) if metric is not None else [0.0] * (2 * num_envs)
    n = len(values)
    write_table(
        run_dir / "episodes",
        {
            "step": np.linspace(batch, batch * rollouts, n).astype(int),
            "env": np.arange(n) % num_envs,
            metric_name: np.asarray(values, float),
        },
    )
    for name, columns in (tables or {}).items():
        write_table(run_dir / name, dict(columns))
    recorded = dict(summary) if summary is not None else {"steps": batch * rollouts, "seconds": 10.0}
    (run_dir / "summary.json").write_text(json.dumps(recorded))
    (run_dir.parent / "config.json").write_text(json.dumps(dict(config or CONFIG)))
    result: dict[str, Any] = {
        "summary": {
            "num_envs": num_envs,
            "num_steps": num_steps,
            "batch_size": batch,
            "minibatch_size": minibatch or batch // 4,
        },
        "seed": seed,
    }
    if calibration is not None:
        result["calibration"] = {"torch": calibration, "numpy": calibration / 8}
    return RunData(side="x", seed=seed, dir=run_dir.parent, result=result)


def evidence(baseline: Sequence[RunData], candidate: Sequence[RunData]) -> TrainingRuns:
    """Runs of both sides as the evidence a run-reading check takes (pass it as ``given=``)."""
    return TrainingRuns(data={"baseline": list(baseline), "candidate": list(candidate)})


def bench(metric: Metric | None = None, profile: str = "smoke") -> Any:
    """A stand-in workbench: the primary metric (default ``heart.get``, higher is better) and a profile."""
    from rlaudit.profiles import get_profile

    chosen = get_profile(profile)
    return SimpleNamespace(
        metric=metric or Metric("heart.get", primary=True),
        profile=chosen,
        labels={},
        metric_notes=[],
        train_steps=chosen.train_steps,
        short_train_steps=chosen.short_train_steps,
    )


def checker(check_id: str, wb: Any = None) -> Any:
    """The :class:`rlaudit.checks.Check` a check's body receives (for testing a helper that builds its
    findings); the check's module must have been imported."""
    from rlaudit.checks import REGISTRY, Check

    return Check(REGISTRY[check_id], wb if wb is not None else bench())
