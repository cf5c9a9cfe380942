"""The check idiom: declared once, guarded, a missing piece SKIPPED, a crash an ERROR, roles stamped."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rlaudit import checks
from rlaudit.checks import Check, check
from rlaudit.findings import Finding, Severity, Status
from rlaudit.metrics import Metric


class Evidence:
    """Stands in for a Pair: its guard says SKIPPED when a side lacks a capability."""

    def __init__(self, missing: str = "") -> None:
        self.missing = missing
        self.values = {"baseline": 1.0, "candidate": 3.0}

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        if self.missing:
            return Finding.skipped(id, subsystem, hypothesis, {"candidate": [self.missing]})
        return None


WB = SimpleNamespace(metric=Metric("heart.get", primary=True), profile=SimpleNamespace(name="smoke"))


@check(
    "trainer/test-gap",
    needs=lambda wb, seed=0, missing="": Evidence(missing),
    role=checks.SYMPTOM,
    reads=("env",),
)
def gap(c: Check, ev: Evidence, seed: int = 0, fail: str = "") -> Any:
    """The candidate reaches the baseline's {metric} at seed {seed}."""
    if fail == "missing":
        c.missing("episodes reporting `heart.get`", "call recorder.episode(...)", sides=["candidate"])
    if fail == "crash":
        return {}["no such table"]
    diff = ev.values["candidate"] - ev.values["baseline"]
    return c.section(c.finding(Status.SUSPECT, Severity.HIGH, effect=diff, ci=(1.5, 2.5), summary="higher"))


def test_a_check_runs_its_body_on_guarded_evidence_and_stamps_its_declaration() -> None:
    section = gap(WB, seed=3)
    (finding,) = section.findings
    assert finding.id == "trainer/test-gap" and finding.subsystem == "trainer"
    assert finding.hypothesis == "The candidate reaches the baseline's heart.get at seed 3"
    assert finding.status is Status.SUSPECT and finding.evidence.effect == 2.0
    assert finding.evidence.ci == (1.5, 2.5) and finding.evidence.ci_level == 0.95
    assert finding.role == "symptom" and finding.reads == ["env"]
    assert section.title == finding.hypothesis
    assert checks.REGISTRY["trainer/test-gap"].reads == ("env",)


def test_a_side_without_the_capability_is_skipped_before_the_body_runs() -> None:
    (finding,) = gap(WB, missing="train", fail="crash").findings
    assert finding.status is Status.SKIPPED and "`train`" in finding.evidence.summary


def test_a_missing_piece_is_skipped_naming_it_and_how_to_add_it() -> None:
    (finding,) = gap(WB, fail="missing").findings
    assert finding.status is Status.SKIPPED
    assert "candidate: no episodes reporting `heart.get`" == finding.evidence.summary
    assert finding.remediation == "call recorder.episode(...)"


def test_a_crash_in_the_body_is_an_error_finding_with_its_traceback() -> None:
    (finding,) = gap(WB, fail="crash").findings
    assert finding.status is Status.ERROR and "KeyError" in finding.evidence.summary
    assert "no such table" in finding.evidence.details["traceback"]
    assert finding.id == "trainer/test-gap"


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="must start with a subsystem"):
        check("nowhere/x")
    with pytest.raises(ValueError, match="reads unknown subsystem"):
        check("env/x", reads=("gpu",))
    with pytest.raises(ValueError, match="first paragraph must state the hypothesis"):
        check("env/x")(lambda c: None)
    assert checks.spec_of("trainer/test-gap-seed-1").id == "trainer/test-gap"


def test_the_hypothesis_is_the_docstrings_first_paragraph() -> None:
    def body(c: Check) -> None:
        """Both setups build
        the same network.

        How it is tested.
        """

    assert checks.hypothesis_of(body) == "Both setups build the same network"
