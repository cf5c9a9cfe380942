"""Limits that measure the subject, not the machine: a probe is stopped for making no progress or for its own
CPU time, never for wall time alone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import toy_probes as tp

from rlaudit.engine import heartbeat, limits
from rlaudit.engine.client import WorkerClient, _stuck_at
from rlaudit.engine.subjects import parse_spec
from rlaudit.engine.worker import ProbeError
from rlaudit.probe import probe_import_root, probe_name

ROOT = probe_import_root(tp.echo)


@pytest.fixture
def client(toy_subject: Path, tmp_path: Path) -> Iterator[WorkerClient]:
    worker = WorkerClient(parse_spec(str(toy_subject)), tmp_path / "logs", timeout=600)
    yield worker
    worker.close()


def call(worker: WorkerClient, fn, out: Path, **options) -> dict:
    params = options.pop("params", {})
    out.mkdir(parents=True, exist_ok=True)
    return worker.call(probe_name(fn), params, out, root=ROOT, **options)


def test_a_slow_probe_that_reports_progress_outlives_a_shorter_stall_limit(
    client: WorkerClient, tmp_path: Path
) -> None:
    # 10 beats 0.8 s apart: 8 s in all, twice the stall limit, never 4 s without progress
    started = time.monotonic()
    reply = call(client, tp.slow_progress, tmp_path / "a", stall=4.0, params={"beats": 10, "pause": 0.8})
    assert reply["ok"] and reply["result"] == {"beats": 10}
    assert time.monotonic() - started > 7.5


def test_recorder_steps_are_progress(client: WorkerClient, tmp_path: Path) -> None:
    # a trainer's steps reach the client through the recorder, without any ctx.progress call
    reply = call(client, tp.recorded_steps, tmp_path / "a", stall=4.0, params={"steps": 10, "pause": 0.8})
    assert reply["ok"] and reply["result"] == {"steps": 10}


def test_a_sleeping_probe_is_stopped_at_the_stall_limit(client: WorkerClient, tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ProbeError) as info:
        call(client, tp.hang, tmp_path / "a", stall=2.0, params={"seconds": 60})
    elapsed = time.monotonic() - started
    assert 2.0 <= elapsed < 20
    message = info.value.message
    assert info.value.kind == "timeout" and "made no progress for 2 s" in message
    assert "CPU-seconds in all" in message
    assert "rlaudit report --stall-timeout" in message and "STALL_TIMEOUT=" in message
    assert "stuck at: hang (toy_probes.py:" in message


def test_a_spinning_probe_is_stopped_at_its_cpu_time_limit(client: WorkerClient, tmp_path: Path) -> None:
    client.ping()  # start-up CPU (imports) is not the call's
    started = time.monotonic()
    with pytest.raises(ProbeError) as info:
        call(client, tp.spin, tmp_path / "a", stall=300.0, timeout=1.5, params={"seconds": 600})
    # 1.5 CPU-seconds (times the machine's scale): long before the stall limit, even on a busy machine
    assert time.monotonic() - started < 240
    message = info.value.message
    assert info.value.kind == "timeout" and "CPU time limit of" in message
    assert "--cpu-limit" in message and "CPU_LIMIT=" in message and "stuck at: spin" in message


def test_a_spinning_probe_without_progress_is_stopped_at_the_stall_limit(
    client: WorkerClient, tmp_path: Path
) -> None:
    with pytest.raises(ProbeError) as info:
        call(client, tp.spin, tmp_path / "a", stall=2.0, timeout=600, params={"seconds": 120})
    assert info.value.kind == "timeout" and "made no progress for 2 s" in info.value.message
    assert "CPU-seconds in all" in info.value.message


def test_limits_read_from_the_environment_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(limits.STALL_VARIABLE, "45")
    monkeypatch.setenv(limits.CPU_VARIABLE, "abc")
    assert limits.stall_timeout() == 45.0
    with pytest.raises(ValueError, match="RLAUDIT_CPU_LIMIT='abc': expected a number >= 1"):
        limits.cpu_limit()
    monkeypatch.setenv(limits.CPU_VARIABLE, "-1")
    with pytest.raises(ValueError, match="RLAUDIT_CPU_LIMIT='-1': expected a number >= 1"):
        limits.cpu_limit()
    monkeypatch.delenv(limits.CPU_VARIABLE)
    monkeypatch.setenv(limits.LEGACY_CPU_VARIABLE, "90")
    assert limits.cpu_limit() == 90.0


def test_machine_scale_is_at_least_one() -> None:
    assert 1.0 <= limits.machine_scale() <= limits.MAX_MACHINE_SCALE
    assert limits.ProbeLimits(stall=5, cpu=10).cpu_scaled == pytest.approx(10 * limits.machine_scale())


def test_heartbeat_counts_only_changes() -> None:
    before = heartbeat.PROGRESS.beats
    heartbeat.step(heartbeat.PROGRESS.step + 1)
    heartbeat.step(heartbeat.PROGRESS.step)  # the same step again is no progress
    heartbeat.update()
    heartbeat.episode()
    assert heartbeat.PROGRESS.beats == before + 3
    assert heartbeat.describe({"beats": 3, "step": 64, "updates": 2, "episodes": 0, "reports": 0}) == (
        "step 64, 2 updates"
    )
    assert heartbeat.describe(None) == "none"


def test_stuck_at_reads_the_probe_thread_from_a_faulthandler_dump() -> None:
    dump = (
        "Thread 0x01 (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
        '  File "/x/rlaudit/engine/worker.py", line 300 in _run\n'
        "\n"
        "Current thread 0x02 (most recent call first):\n"
        '  File "/y/toy_probes.py", line 88 in hang\n'
        '  File "/x/rlaudit/engine/worker.py", line 222 in run_probe\n'
        '  File "/x/rlaudit/engine/worker.py", line 150 in handle\n'
    )
    assert _stuck_at(dump) == "hang (toy_probes.py:88) < run_probe (worker.py:222) < handle (worker.py:150)"
    assert _stuck_at("no dump here") == ""


def test_a_hanging_train_costs_one_stall_per_probe_and_later_checks_get_the_remembered_error(
    tmp_path: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlaudit.engine.workbench import Workbench
    from rlaudit.findings import Status
    from rlaudit.rooms import run_audits

    stall = 4.0
    monkeypatch.setenv(limits.STALL_VARIABLE, str(stall))
    subject = tmp_path / "hang" / "subject.py"
    subject.parent.mkdir()
    subject.write_text((Path(__file__).parent / "fixtures" / "hanging_subject.py").read_text())
    started = time.monotonic()
    with Workbench(str(subject), str(subject), profile="smoke", jobs=2) as wb:
        findings = run_audits(wb, ["trainer"])
    elapsed = time.monotonic() - started
    calls = (subject.parent / "train_calls.log").read_text().splitlines()
    # train ran once per distinct probe call (steps, seed), never again for a later check
    assert calls and len(calls) == len(set(calls))
    errors = [f for f in findings if f.status is Status.ERROR]
    assert len(errors) == len(findings) > len(calls)
    assert all("made no progress for 4 s" in f.evidence.summary for f in errors)
    remembered = [f for f in errors if "remembered failure, not run again" in f.evidence.summary]
    assert len(remembered) >= len(errors) - len(calls)
    # one stall per distinct call at most (two jobs at once), plus start-up: not one per check
    assert elapsed < len(calls) * stall + 60, f"{elapsed:.0f} s for {len(calls)} hanging train calls"


def test_command_line_limits_reach_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlaudit.cli import build_parser

    for name in (limits.STALL_VARIABLE, limits.CPU_VARIABLE, limits.RETRY_VARIABLE):
        monkeypatch.setenv(name, "")  # empty is unset; recorded, so the values set below are undone
    before = time.time()
    for verb in ("report", "audit"):
        extra = ["--json", "x.json"] if verb == "audit" else []
        args = build_parser().parse_args(
            [verb, "--stall-timeout", "45", "--cpu-limit", "1200", "--retry-failed", *extra]
        )
        limits.export_cli_limits(args)
        assert limits.stall_timeout() == 45.0 and limits.cpu_limit() == 1200.0
        assert limits.retry_failed_since() >= before
    with pytest.raises(ValueError, match="--stall-timeout 0: expected a positive number"):
        limits.export_cli_limits(build_parser().parse_args(["report", "--stall-timeout", "0"]))
