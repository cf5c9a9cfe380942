"""The check idiom: declared once, guarded, a missing piece SKIPPED, a crash an ERROR, roles stamped."""

from __future__ import annotations

import math
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


def test_a_finding_takes_both_sides_as_one_mapping_and_an_interval_as_one_triple() -> None:
    c = Check(gap.spec, WB)
    finding = c.finding(Status.NOTED, values={"baseline": 1, "candidate": 2}, interval=(0.5, 0.25, 0.75))
    assert (finding.evidence.baseline, finding.evidence.candidate) == (1, 2)
    assert finding.evidence.effect == 0.5 and finding.evidence.ci == (0.25, 0.75)
    assert finding.evidence.ci_level == 0.95
    one = c.finding(Status.NOTED, values=checks.on_side("candidate", "x"))
    assert (one.evidence.baseline, one.evidence.candidate) == (None, "x")
    with pytest.raises(ValueError, match="values= or baseline="):
        c.finding(Status.NOTED, values={"baseline": 1}, baseline=1)
    with pytest.raises(ValueError, match="interval="):
        c.finding(Status.NOTED, interval=(0.5, 0.25, 0.75), effect=0.5)
    with pytest.raises(ValueError, match=r"\(point, low, high\)"):
        c.finding(Status.NOTED, interval=(0.25, 0.75))
    with pytest.raises(ValueError, match="baseline, candidate"):
        checks.on_side("both", 1)


def test_a_verdict_is_concluded_into_a_finding_with_its_evidence() -> None:
    from rlaudit.evidence import Verdict, inconclusive

    c = Check(gap.spec, WB)
    finding = c.conclude(Verdict(Status.SUSPECT, Severity.HIGH, "slower", "Profile it."), effect=2.0)
    assert (finding.status, finding.severity, finding.evidence.summary) == (
        Status.SUSPECT,
        Severity.HIGH,
        "slower",
    )
    assert finding.remediation == "Profile it." and finding.evidence.effect == 2.0
    open_ = c.conclude(inconclusive("ratio 1.1 [0.8, 1.4]", "more repeats"))
    assert open_.status is Status.NOTED and open_.evidence.summary == "inconclusive: ratio 1.1 [0.8, 1.4]"
    assert open_.remediation == "Rerun at a larger profile (more repeats) to settle it."


class Bench:
    """Stands in for a Workbench: records the probes it was asked to run, with which parameters."""

    profile = SimpleNamespace(name="smoke")
    metric = None

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def run(self, probe: Any, **params: Any) -> Evidence:
        self.calls.append((probe.__name__, params))
        return Evidence()


def counts(*, seed: int = 0, steps: int = 10) -> None:
    """A probe's signature: the parameters it accepts."""


def test_probe_evidence_runs_the_probe_with_its_parameters_at_the_profile() -> None:
    wb = Bench()
    evidence = checks.probe_evidence(counts, lambda wb, seed=0: {"seed": seed, "steps": 3})
    assert isinstance(evidence(wb, seed=5, trust=True), Evidence)
    assert wb.calls == [("counts", {"seed": 5, "steps": 3})]
    checks.probe_evidence(counts)(wb, seed=2, trust=True)  # no params: the keyword arguments the probe takes
    assert wb.calls[-1] == ("counts", {"seed": 2})


def test_run_checks_calls_each_check_in_order_with_the_arguments_it_takes() -> None:
    @check("trainer/test-seeded", probe=counts)
    def seeded(c: Check, ev: Evidence, seed: int = 0) -> Any:
        """The probe ran with the given seed."""
        return c.section(c.finding(Status.CLEARED, summary=f"seed {seed}"))

    @check("trainer/test-unseeded")
    def unseeded(c: Check) -> Any:
        """A check that takes no arguments."""
        return c.section(c.finding(Status.CLEARED, summary="no seed"))

    wb = Bench()
    sections = checks.run_checks(wb, (seeded, unseeded), seed=4)
    assert [s.findings[0].evidence.summary for s in sections] == ["seed 4", "no seed"]
    assert wb.calls == [("counts", {"seed": 4})]


@pytest.mark.parametrize(
    ("candidate", "status"),
    [(0.5, Status.CLEARED), (None, Status.SUSPECT), (math.nan, Status.SUSPECT)],
)
def test_cleared_needs_every_compared_quantity_measured_on_both_sides(candidate: Any, status: Status) -> None:
    c = Check(gap.spec, WB)
    finding = c.finding(
        Status.CLEARED,
        summary="identical terms",
        measured={"baseline": {"value-loss scale": 0.5}, "candidate": {"value-loss scale": candidate}},
        measured_words={"candidate": {"value-loss scale": "not a squared error"}},
    )
    assert finding.status is status
    if status is Status.SUSPECT:
        summary = finding.evidence.summary
        assert (
            "value-loss scale" in summary and "not measured on the candidate (not a squared error)" in summary
        )
        assert summary.endswith("what was compared agrees (identical terms)")
        assert finding.evidence.details["unmeasured"] == {"value-loss scale": "baseline"}
    neither = c.finding(Status.CLEARED, measured={"baseline": {"x": None}, "candidate": {"x": None}})
    assert neither.status is Status.NOTED and neither.evidence.summary.startswith("not measured: x")
    # a flag stays the flag it is: coverage only ever withholds a clearance
    flagged = c.finding(Status.SUSPECT, summary="differs", measured={"baseline": {"x": 1}, "candidate": {}})
    assert flagged.status is Status.SUSPECT and flagged.evidence.summary == "differs"


def test_a_clearance_showing_one_sides_value_only_is_no_clearance() -> None:
    c = Check(gap.spec, WB)
    one = c.finding(
        Status.CLEARED, values={"baseline": 0.5}, effect_label="value-loss scale", summary="alike"
    )
    assert one.status is Status.SUSPECT and "value-loss scale: on the baseline" in one.evidence.summary
    both = c.finding(Status.CLEARED, values={"baseline": 0.5, "candidate": 0.5}, summary="alike")
    assert both.status is Status.CLEARED and both.evidence.summary == "alike"
    assert c.finding(Status.CLEARED, summary="nothing shown").status is Status.CLEARED
