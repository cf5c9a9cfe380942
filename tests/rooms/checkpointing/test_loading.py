"""The tests of :mod:`rlaudit.checkpointing.loading`."""

from __future__ import annotations


def test_partial_load_counts_the_tensors(make_wb) -> None:
    from rlaudit.checkpointing.loading import loading

    section = loading(make_wb("builtin:reference+checkpointing.partial_load"))
    finding = next(f for f in section.findings if f.id == "checkpointing/partial-load")
    assert "6 of 12" in finding.evidence.summary and "at-init" in finding.evidence.summary
