"""The tests of :mod:`rlaudit.trainer.speed`."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlaudit.findings import Status
from rlaudit.trainer import speed as ts
from rlaudit.trainer.runs import RunData
from support.runs import bench, evidence, fake_run

# ---------------------------------------------------------------------------------------------------------------
# Speed: calibrated CPU time, the subject's own phases
# ---------------------------------------------------------------------------------------------------------------


def _timed(tmp: Path, seed: int, sps_cpu: float, calibration: float = 1e-3, phases: bool = True) -> RunData:
    tables = {}
    if phases:
        tables["phases"] = {
            "name": ["collect", "collect/step_env", "learn"],
            "count": [2, 16, 2],
            "seconds": [0.5, 0.3, 0.4],
        }
    summary = {"steps": 1000, "seconds": 1.0, "sps": 1000.0, "sps_cpu": sps_cpu}
    return fake_run(tmp, seed=seed, summary=summary, calibration=calibration, tables=tables)


def test_speed_compares_calibrated_cpu_time_and_needs_three_runs(tmp_path: Path) -> None:
    base = [_timed(tmp_path, i, 1000 + 10 * i) for i in range(3)]
    slow = [_timed(tmp_path, i, 500 + 5 * i) for i in range(3)]
    (finding,) = ts.speed(bench(), given=evidence(base, slow)).findings
    assert finding.status is Status.CONFIRMED and finding.evidence.effect == pytest.approx(0.5, abs=0.02)
    assert finding.role == "symptom"
    (two,) = ts.speed(bench(), given=evidence(base[:2], slow[:2])).findings
    assert two.status is Status.NOTED  # the same gap, too few runs
    close = [_timed(tmp_path, i, 990 + 10 * i) for i in range(3)]
    (same,) = ts.speed(bench(), given=evidence(base, close)).findings
    assert same.status is Status.CLEARED


def test_a_side_trained_on_a_busy_machine_is_not_charged_for_it(tmp_path: Path) -> None:
    # The candidate's runs took 30% more CPU time per step, and so did the calibration workload beside them.
    base = [_timed(tmp_path, i, 1000 + 10 * i) for i in range(3)]
    loaded = [_timed(tmp_path, i, (1000 + 10 * i) / 1.3, calibration=1.3e-3) for i in range(3)]
    (finding,) = ts.speed(bench(), given=evidence(base, loaded)).findings
    assert finding.status is Status.CLEARED and finding.evidence.effect == pytest.approx(1.0)


def test_phase_table_shows_the_phases_the_subject_timed(tmp_path: Path) -> None:
    run = _timed(tmp_path, 0, 1000.0)
    times = ts.phase_times(run)
    assert times == pytest.approx({"collect": 0.5, "collect/step_env": 0.3, "learn": 0.4, "other": 0.1})
    table = ts.phase_table({"baseline": [run], "candidate": [run]}).set_index("phase")
    assert list(table.index) == ["collect", "collect/step_env", "learn", "other"]
    assert table.loc["collect", "baseline share"] == pytest.approx(0.5)
    bare = _timed(tmp_path, 1, 1000.0, phases=False)
    assert ts.phase_times(bare) == {}
    (finding,) = ts.speed(bench(), given=evidence([bare], [bare])).findings
    assert finding.status is Status.NOTED


def test_speed_without_recorded_steps_is_skipped(tmp_path: Path) -> None:
    runs = [fake_run(tmp_path, summary={"steps": 0, "seconds": 0.0, "sps_cpu": 0.0})]
    (finding,) = ts.speed(bench(), given=evidence(runs, runs)).findings
    assert finding.status is Status.SKIPPED and "recorder" in finding.remediation


@pytest.mark.expensive
def test_speed_raises_no_flag_on_an_aa_pair_with_a_busy_core(make_wb, flagged, describe) -> None:
    """The baseline's runs measured first (and then served from the cache), the candidate's (the same subject
    under another fingerprint) measured while another process keeps a core busy: no speed flag."""
    from rlaudit.trainer.runs import TrainingRuns, runs
    from support.load import aa_spec, busy_core

    seeds = [20, 21, 22]  # fresh seeds: every run is measured by this test
    runs(make_wb("builtin:reference"), seeds=seeds)
    wb = make_wb(aa_spec("speed"))
    with busy_core() as proc:
        given = TrainingRuns.of(runs(wb, seeds=seeds))
        assert proc.poll() is None
    sections = [ts.speed(wb, given=given)]
    assert not flagged(sections), describe(flagged(sections))
    assert sections[0].findings[0].status is not Status.ERROR
