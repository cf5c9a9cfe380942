"""Scheduling the report's notebooks: longest expected first, with costs learned from earlier reports."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from rlaudit.report.execution import NotebookRun

COST_HINTS: dict[str, float] = {
    "02_trainer": 60.0,
    "12_memory": 40.0,
    "13_seeding": 27.0,
    "05_env": 16.0,
    "06_curriculum": 10.0,
    "04_checkpointing": 6.0,
    "09_loss": 6.0,
    "11_rewards": 3.0,
    "07_optimizer": 2.0,
    "10_spaces": 2.0,
    "08_init": 1.5,
    "01_agents": 1.0,
    "03_logging": 0.5,
    "14_config": 0.5,
}
"""CPU seconds of each shipped notebook in a cold standard report on the built-in pair (-j 2, shared kernels):
what orders the first report of a profile; only the order matters. 02_trainer trains the shared runs that
03_logging and 13_seeding's variance read, so it starts first and 03_logging comes last; 12_memory computes the
short runs that 07_optimizer and 09_loss then read from the cache. After a ``--fresh`` report the measured
costs (``<out>/logs/costs.json``) take over."""

COSTS_FILE = "costs.json"


def expected_costs(out: Path, profile: str) -> dict[str, float]:
    """Expected CPU seconds per notebook: :data:`COST_HINTS`, updated by the last ``--fresh`` report of
    ``profile`` written to ``out`` (``<out>/logs/costs.json``)."""
    costs = dict(COST_HINTS)
    try:
        saved = json.loads((out / "logs" / COSTS_FILE).read_text())
        costs.update({str(k): float(v) for k, v in saved.get(profile, {}).items()})
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    return costs


def save_costs(out: Path, profile: str, runs: Sequence[NotebookRun]) -> None:
    """Record the CPU seconds of these (cold) runs for :func:`expected_costs`; other profiles' are kept."""
    path = out / "logs" / COSTS_FILE
    try:
        saved = json.loads(path.read_text())
        if not isinstance(saved, dict):
            saved = {}
    except (OSError, ValueError):
        saved = {}
    mine = dict(saved.get(profile) or {})
    mine.update({r.name: round(r.cpu_seconds, 1) for r in runs if r.cpu_seconds > 0})
    saved[profile] = mine
    from rlaudit.engine.io import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(saved, indent=2, sort_keys=True))


def schedule(runs: Sequence[NotebookRun], costs: Mapping[str, float]) -> list[NotebookRun]:
    """The order to start notebooks in: longest expected first (a notebook with no estimate counts as the
    longest, so an unknown long one never starts last), ties by name.

    With -j lanes taking the next notebook as each frees up, longest-first keeps the lanes' finishing times
    within about one short notebook of each other.
    """
    unknown = max(costs.values(), default=0.0)
    return sorted(runs, key=lambda r: (-float(costs.get(r.name, unknown)), r.name))
