"""What every logging check reads: the shared training runs and what their own log files hold.

Each subject's logs (TensorBoard, CSV or JSONL under its ``log_dir``) are read by :mod:`rlaudit.logfiles`;
:func:`logged` is the ``needs=`` of the three checks, so the runs and their logs are read once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rlaudit.engine.workbench import Workbench
from rlaudit.findings import Finding
from rlaudit.logfiles import log_inventory, read_scalars
from rlaudit.trainer.common import SIDES, stack_tables
from rlaudit.trainer.runs import RunData, TrainingRuns, training_runs


@dataclass
class Logged:
    """The training runs and what their log files hold: the evidence of the logging checks."""

    runs: TrainingRuns
    logs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        return None if self.logs else self.runs.guard(id, subsystem, hypothesis)

    @property
    def data(self) -> dict[str, list[RunData]]:
        return self.runs.data


def logged(wb: Workbench, given: TrainingRuns | Logged | None = None) -> Logged:
    """``needs=`` of the logging checks: the shared training runs and each side's log files (``given`` runs,
    or runs with their logs, instead)."""
    if isinstance(given, Logged):
        return given
    runs = training_runs(wb, given)
    ok = all(runs[s] for s in SIDES)
    return Logged(runs=runs, logs=side_logs(runs.data) if ok else {})


def run_logs(run: RunData) -> tuple[pd.DataFrame, pd.DataFrame, Path | None]:
    """``(scalars, inventory, log_dir)`` of one run's own log files (empty frames when there are none)."""
    from rlaudit.logfiles import empty_scalars

    path = run.log_dir
    if path is None or not Path(path).exists():
        return (
            empty_scalars(),
            pd.DataFrame(columns=["file", "format", "bytes", "records", "scalars", "tags", "truncated"]),
            path,
        )
    return read_scalars(path), log_inventory(path), path


def side_logs(data: Mapping[str, Sequence[RunData]]) -> dict[str, dict[str, Any]]:
    """Per side: every run's scalars (with a ``seed`` column), inventories, tags, and the recorder's names."""
    out: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        frames, inventories, dirs = [], [], []
        for run in data[side]:
            scalars, inventory, path = run_logs(run)
            frames.append(scalars.assign(seed=run.seed))
            inventories.append(inventory.assign(seed=run.seed))
            dirs.append(path)
        scalars = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        inventory = pd.concat(inventories, ignore_index=True) if inventories else pd.DataFrame()
        recorder = stack_tables({side: data[side]}, "scalars")
        out[side] = {
            "scalars": scalars,
            "inventory": inventory,
            "tags": sorted(set(scalars["tag"])) if not scalars.empty else [],
            "recorder_names": sorted(set(recorder["name"])) if not recorder.empty else [],
            "dirs": dirs,
            "has_log_dir": any(d is not None for d in dirs),
        }
    return out
