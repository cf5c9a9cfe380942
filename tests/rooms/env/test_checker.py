"""The tests of :mod:`rlaudit.env.checker`: Gymnasium's ``check_env`` side by side, decided on hand-built probe
results of both sides."""

from __future__ import annotations

from typing import Any

from rlaudit.engine.store import ProbeResult
from rlaudit.engine.workbench import Pair
from rlaudit.env.checker import check_env
from rlaudit.findings import Severity, Status
from support.runs import bench


def _pair(baseline: dict[str, Any], candidate: dict[str, Any]) -> Pair:
    probe = "rlaudit.env.probes:check_env"
    return Pair(
        ProbeResult("baseline", "b", probe, {}, True, result=baseline),
        ProbeResult("candidate", "c", probe, {}, True, result=candidate),
    )


PASSED = {"applicable": True, "passed": True, "warnings": ["obs is not float32"]}


def test_the_same_result_on_both_sides_is_cleared() -> None:
    (finding,) = check_env(bench(), given=_pair(PASSED, PASSED)).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert finding.evidence.baseline["warnings"] == finding.evidence.candidate["warnings"] == 1


def test_a_candidate_that_fails_where_the_baseline_passes_is_suspect_naming_the_error() -> None:
    failed = {"applicable": True, "passed": False, "error": "AssertionError: reset() must return a tuple"}
    (finding,) = check_env(bench(), given=_pair(PASSED, failed)).findings
    assert finding.status is Status.SUSPECT and finding.severity is Severity.HIGH, finding.headline
    assert (
        "the candidate fails check_env: AssertionError: reset() must return a tuple"
        in finding.evidence.summary
    )


def test_new_warnings_are_noted_and_shared_ones_are_not() -> None:
    warned = {**PASSED, "warnings": ["obs is not float32", "the step API returns 4 values"]}
    (finding,) = check_env(bench(), given=_pair(PASSED, warned)).findings
    assert finding.status is Status.NOTED and finding.severity is Severity.LOW, finding.headline
    assert "1 new check_env warning(s): the step API returns 4 values" in finding.evidence.summary


def test_two_vector_environments_are_skipped_saying_what_covers_them() -> None:
    vector = {"applicable": False}
    (finding,) = check_env(bench(), given=_pair(vector, vector)).findings
    assert finding.status is Status.SKIPPED, finding.headline
    assert "check_env applies to single environments" in finding.evidence.summary
