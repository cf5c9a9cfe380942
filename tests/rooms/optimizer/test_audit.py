"""The optimizer room as a whole (``rlaudit.optimizer.audit``, its ``CHECKS``): each of its catalog faults is
flagged, the identical pair stays quiet.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

import pytest

from rlaudit.demo import faults as catalog

# ---------------------------------------------------------------------------------------------------------------
# Detection matrix
# ---------------------------------------------------------------------------------------------------------------

OPTIMIZER_FAULTS = [f.id for f in catalog.CATALOG.values() if f.subsystem == "optimizer"]


@pytest.mark.parametrize("fault", OPTIMIZER_FAULTS)
def test_optimizer_fault_is_flagged(make_wb, flagged, describe, fault: str) -> None:
    from rlaudit.optimizer import audit_all

    sections = audit_all(make_wb(f"builtin:reference+{fault}"))
    found = [f for f in flagged(sections) if f.subsystem == "optimizer"]
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"


def test_identical_pair_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit.optimizer import audit_all

    sections = audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]
