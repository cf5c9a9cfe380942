"""The tests of :mod:`rlaudit.checkpointing.selection`."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


class _Selections:
    """Stands in for the selection probe's pair: ``pair[side].json("selection")``."""

    def __init__(self, data: dict[str, dict[str, Any]]) -> None:
        self.data = data

    def __getitem__(self, side: str) -> Any:
        return SimpleNamespace(json=lambda name: self.data[side])


def _picks(digit_test: dict[str, Any]) -> dict[str, Any]:
    return {
        "picks": ["ckpt/model_2.pt", "ckpt/model_1.pt"],
        "steps": [8192, 4096],
        "highest_index": 0,
        "latest_is_highest": True,
        "digit_test": digit_test,
    }


def test_selection_that_could_not_test_the_digit_boundary_never_clears() -> None:
    from rlaudit.checkpointing.selection import Selections, selection
    from rlaudit.checks import Check

    tested = {
        "tested": True,
        "older": "ckpt/model_9.pt",
        "newer": "ckpt/model_10.pt",
        "picked": "ckpt/model_10.pt",
        "correct": True,
    }
    untested = {
        "tested": False,
        "reason": "checkpoints() takes no run_dir=, so a scratch directory cannot be listed",
    }
    body = selection.__wrapped__
    both = body(
        Check(selection.spec, None),
        Selections(_Selections({"baseline": _picks(tested), "candidate": _picks(tested)})),
    )
    assert [f.status.value for f in both.findings] == ["CLEARED"]
    assert "order model_10 before model_9" in both.findings[0].evidence.summary
    half = body(
        Check(selection.spec, None),
        Selections(_Selections({"baseline": _picks(tested), "candidate": _picks(untested)})),
    )
    (finding,) = half.findings
    assert (
        finding.status.value == "NOTED"
        and "model_10" not in finding.evidence.summary.split("(picked")[0][:40]
    )
    assert (
        "candidate: the model_9 vs model_10 order (checkpoints() takes no run_dir="
        in finding.evidence.summary
    )
