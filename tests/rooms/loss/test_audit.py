"""The loss room as a whole (``rlaudit.loss.audit``, its ``CHECKS``): each of its catalog faults is flagged, the
identical pair stays quiet.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

import pytest

# ---------------------------------------------------------------------------------------------------------------
# Detection matrix
# ---------------------------------------------------------------------------------------------------------------


LOSS_FAULTS = [
    f.id
    for f in __import__("rlaudit.demo.faults", fromlist=["CATALOG"]).CATALOG.values()
    if f.subsystem == "loss"
]


@pytest.mark.parametrize("fault", LOSS_FAULTS)
def test_loss_fault_is_flagged(make_wb, flagged, describe, fault: str) -> None:
    from rlaudit.loss import audit_all

    sections = audit_all(make_wb(f"builtin:reference+{fault}"))
    found = flagged(sections, "loss")
    errors = [f for s in sections for f in s.findings if f.status.value == "ERROR"]
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"
    assert not errors, describe(errors)


def test_identical_pair_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit.loss import audit_all

    sections = audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]
