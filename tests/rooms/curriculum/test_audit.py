"""The curriculum room as a whole (``rlaudit.curriculum.audit``, its ``CHECKS``): each of its catalog faults is
flagged, the identical pair stays quiet; the cost checks stay quiet with a busy core, and a subject without an
environment gets a finding per check.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

from typing import Any

import pytest

from rlaudit.curriculum import audit
from rlaudit.demo.faults import CATALOG
from support.invariants import SUBJECTS_WITHOUT_AN_ENVIRONMENT, audited_without_an_environment
from support.load import aa_spec, busy_core

CURRICULUM_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "curriculum")


@pytest.mark.parametrize("fault", CURRICULUM_FAULTS)
def test_curriculum_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "curriculum")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)
    assert any(f.id == "curriculum/scaling" for f in found), describe(found)


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    wb = bench(aa_spec())
    for seed in (0, 1):
        sections = audit.audit_all(wb, seed=seed)
        assert not flagged(sections), f"seed {seed}: " + describe(flagged(sections))


def test_cost_checks_stay_quiet_with_a_busy_core(bench: Any, flagged: Any, describe: Any) -> None:
    wb = bench(aa_spec())
    with busy_core() as proc:
        sections = [audit.scaling(wb, seed=7), audit.cost_trend(wb, seed=7), audit.overhead(wb, seed=7)]
        assert proc.poll() is None
    assert not flagged(sections), describe(flagged(sections))


@pytest.mark.parametrize("subject", SUBJECTS_WITHOUT_AN_ENVIRONMENT)
def test_a_subject_without_an_environment_gets_a_finding_per_check_naming_what_is_missing(
    make_wb: Any, subject: str
) -> None:
    audited_without_an_environment(audit.audit_all, make_wb, subject)
