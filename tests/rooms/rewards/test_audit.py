"""The rewards room as a whole (``rlaudit.rewards.audit``, its ``CHECKS``): each of its catalog faults is flagged,
the identical pair stays quiet, and a subject without an environment gets a finding per check.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

from typing import Any

import pytest

from rlaudit.demo.faults import CATALOG
from rlaudit.rewards import audit
from support.invariants import SUBJECTS_WITHOUT_AN_ENVIRONMENT, audited_without_an_environment
from support.load import aa_spec

REWARD_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "rewards")


@pytest.mark.parametrize("fault", REWARD_FAULTS)
def test_reward_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "rewards")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)
    assert any(f.status.value == "CONFIRMED" for f in found), "the runtime measurement should confirm it"


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    wb = bench(aa_spec())
    for seed in (0, 1):
        sections = audit.audit_all(wb, seed=seed)
        assert not flagged(sections), f"seed {seed}: " + describe(flagged(sections))


@pytest.mark.parametrize("subject", SUBJECTS_WITHOUT_AN_ENVIRONMENT)
def test_a_subject_without_an_environment_gets_a_finding_per_check_naming_what_is_missing(
    make_wb: Any, subject: str
) -> None:
    audited_without_an_environment(audit.audit_all, make_wb, subject)
