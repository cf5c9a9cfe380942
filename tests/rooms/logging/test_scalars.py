"""The tests of :mod:`rlaudit.logging.scalars`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from rlaudit.findings import Severity, Status
from rlaudit.logging import audit as la
from rlaudit.trainer.runs import TrainingRuns
from support.runs import bench


def test_tag_changes_match_renames() -> None:
    changes = la.tag_changes(
        ["losses/value_loss", "charts/episodic_return", "perf/sps"],
        ["losses/value_loss", "charts/episode_return", "perf/fps_total"],
    )
    assert changes["kept"] == ["losses/value_loss"]
    assert ("charts/episodic_return", "charts/episode_return") in [(o, n) for o, n, _ in changes["renamed"]]


def _logs(tags: list[str], names: list[str], files: int = 1) -> dict[str, Any]:
    inv = pd.DataFrame(
        {
            "file": [f"events.{i}" for i in range(files)],
            "format": "tensorboard",
            "bytes": 88,
            "records": 1,
            "scalars": 0 if not tags else 5,
            "tags": len(tags),
            "truncated": False,
            "seed": 0,
        }
    )
    return {
        "scalars": pd.DataFrame({"tag": tags}),
        "inventory": inv,
        "tags": tags,
        "recorder_names": names,
        "dirs": [Path("x")],
        "has_log_dir": True,
    }


def _presence(base: dict[str, Any], cand: dict[str, Any]) -> Any:
    given = la.Logged(runs=TrainingRuns(), logs={"baseline": base, "candidate": cand})
    return la.presence(bench(), given=given)


def test_empty_log_dir_is_confirmed_and_the_same_on_both_sides_only_noted(flagged) -> None:
    names = ["charts/episodic_return", "losses/value_loss"]
    section = _presence(_logs(names, names), _logs([], names))
    found = {f.id: f.status for f in section.findings}
    assert found["logging/empty-logs-candidate"] is Status.CONFIRMED
    quiet = _presence(_logs(names, names), _logs(names, names))
    assert not flagged([quiet])
    both = _presence(_logs([], names), _logs([], names))
    assert {(f.status, f.severity) for f in both.findings} == {(Status.NOTED, Severity.LOW)}
