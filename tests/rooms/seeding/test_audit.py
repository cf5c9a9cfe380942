"""The seeding room as a whole (``rlaudit.seeding.audit``, its ``CHECKS``): each of its catalog faults is flagged,
the identical pair stays quiet, and a subject with only a config is skipped by name.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlaudit.demo.faults import CATALOG
from rlaudit.engine.subjects import parse_spec
from rlaudit.seeding import audit

SEEDING_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "seeding")


@pytest.mark.parametrize("fault", SEEDING_FAULTS)
def test_seeding_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "seeding")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)
    assert any(f.id == "seeding/fresh-processes" and f.status.value == "CONFIRMED" for f in found), describe(
        found
    )


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    sections = audit.audit_all(bench(parse_spec("builtin:reference", env={"RLAUDIT_AA_REPLICA": "1"})))
    assert not flagged(sections), describe(flagged(sections))
    variance = [f for s in sections for f in s.findings if f.id == "seeding/variance"]
    assert variance and variance[0].evidence.details.get("power_table"), (
        "the power table belongs in the findings"
    )


def test_a_subject_with_only_a_config_is_skipped_by_name(make_wb: Any) -> None:
    subject = str(Path(__file__).resolve().parents[2] / "fixtures" / "config_only_subject.py")
    findings = [f for s in audit.audit_all(make_wb(subject, baseline=subject)) for f in s.findings]
    assert {f.status.value for f in findings} == {"SKIPPED"}, "\n".join(f.headline for f in findings)
    needs = {"seeding/sub-envs": "make_env"}  # the others need a training run
    assert all(needs.get(f.id, "train") in f.evidence.summary for f in findings), [
        f.evidence.summary for f in findings
    ]
