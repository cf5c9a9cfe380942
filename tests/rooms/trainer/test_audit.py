"""The trainer room as a whole (``rlaudit.trainer.audit``, its ``CHECKS``): each of its catalog faults is flagged,
the identical pair stays quiet; every trainer fault has a check meant to catch it, and minimal subjects end every
check in a finding.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlaudit.demo import faults as catalog

# ---------------------------------------------------------------------------------------------------------------
# Detection matrix and quiet pairs
# ---------------------------------------------------------------------------------------------------------------

TRAINER_FAULTS = {f.id for f in catalog.CATALOG.values() if f.subsystem == "trainer"}
CAUGHT_BY = {
    "trainer.num_envs_heuristic": "trainer/geometry",
    "trainer.debug_batch": "trainer/geometry",
    "trainer.minibatch_no_shuffle": "trainer/minibatches",
}


def test_every_trainer_fault_has_a_check_that_should_catch_it() -> None:
    assert set(CAUGHT_BY) == TRAINER_FAULTS


@pytest.mark.parametrize("fault", sorted(TRAINER_FAULTS))
def test_trainer_fault_is_flagged(make_wb, flagged, describe, fault: str) -> None:
    from rlaudit.trainer import audit_all

    sections = audit_all(make_wb(f"builtin:reference+{fault}"))
    found = flagged(sections, "trainer")
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"
    caught = [f for f in found if f.id.startswith(CAUGHT_BY[fault]) and f.role == "mechanism"]
    assert caught, describe(found)


def test_identical_pair_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit.trainer import audit_all

    sections = audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize(
    ("spec", "status"), [("minimal_train_subject.py", None), ("config_only_subject.py", "SKIPPED")]
)
def test_minimal_subjects_end_every_check_in_a_finding(make_wb, spec: str, status: str | None) -> None:
    from rlaudit.trainer import audit_all
    from rlaudit.trainer.audit import CHECKS

    path = str(FIXTURES / spec)
    sections = audit_all(make_wb(path, baseline=path))
    assert len(sections) == len(CHECKS) and all(s.findings for s in sections)
    statuses = {f.id: f.status.value for s in sections for f in s.findings}
    assert "ERROR" not in statuses.values(), statuses
    if status:
        assert set(statuses.values()) == {status}, statuses
    else:
        assert statuses["trainer/minibatches"] == "SKIPPED" and statuses["trainer/learning"] == "NOTED"
