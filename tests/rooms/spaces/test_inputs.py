"""The tests of :mod:`rlaudit.spaces.inputs`."""

from __future__ import annotations

import pytest


@pytest.mark.expensive  # a knock-on check beyond the detection matrix: one more training run
def test_normalizer_not_restored_shows_as_a_labelled_knock_on(make_wb, describe) -> None:
    from rlaudit.spaces import audit

    section = audit.network_input(make_wb("builtin:reference+checkpointing.normalizer_not_restored"))
    finding = next(f for f in section.findings if f.id == "spaces/network-input")
    assert finding.status.value == "SUSPECT", describe(section.findings)
    assert "04_checkpointing" in finding.evidence.summary and "case 002" in finding.evidence.summary
