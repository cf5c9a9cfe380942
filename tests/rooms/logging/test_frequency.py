"""The tests of :mod:`rlaudit.logging.frequency`."""

from __future__ import annotations

from pathlib import Path

from rlaudit.findings import Status
from rlaudit.logging import audit as la
from support.runs import bench, evidence, fake_run


def test_frequency_without_any_logged_scalar_is_skipped(tmp_path: Path) -> None:
    runs = [fake_run(tmp_path, seed=0)]
    (finding,) = la.frequency(bench(), given=evidence(runs, runs)).findings
    assert finding.status is Status.SKIPPED and "recorder.log" in finding.remediation
