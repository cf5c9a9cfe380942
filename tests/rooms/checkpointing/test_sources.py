"""The tests of :mod:`rlaudit.checkpointing.sources`."""

from __future__ import annotations

from typing import Any


def _entries(baseline: int, candidate: int) -> dict[str, dict[str, Any]]:
    def one(n: int) -> dict[str, Any]:
        paths = [f"ckpt/model_{i}.pt" for i in range(n)]
        return {"run": None, "paths": paths, "origin": "a dedicated run", "missing": [], "error": None}

    return {"baseline": one(baseline), "candidate": one(candidate)}


def test_a_side_without_checkpoints_is_skipped_lost_or_noted() -> None:
    from rlaudit.checkpointing.sources import guard_sources

    assert guard_sources(_entries(2, 2), "checkpointing/x", "h") is None
    neither = guard_sources(_entries(0, 0), "checkpointing/x", "h")
    assert (
        neither is not None
        and neither.status.value == "SKIPPED"
        and "either side" in neither.evidence.summary
    )
    lost = guard_sources(_entries(2, 0), "checkpointing/x", "h")
    assert lost is not None and (lost.status.value, lost.severity.value) == ("SUSPECT", "HIGH")
    assert "no longer saves checkpoints" in lost.evidence.summary
    gained = guard_sources(_entries(0, 2), "checkpointing/x", "h")
    assert gained is not None and (gained.status.value, gained.severity.value) == ("NOTED", "LOW")
