"""The worker process and its client: one process serves many probes; every failure becomes a ProbeError."""

from __future__ import annotations

import os
import site
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import toy_probes as tp

from rlaudit.engine import client as worker_client
from rlaudit.engine.client import WorkerClient
from rlaudit.engine.subjects import parse_spec
from rlaudit.engine.worker import ProbeError
from rlaudit.probe import probe_import_root, probe_name

ROOT = probe_import_root(tp.echo)


@pytest.fixture
def client(toy_subject: Path, tmp_path: Path) -> Iterator[WorkerClient]:
    worker = WorkerClient(parse_spec(str(toy_subject)), tmp_path / "logs", timeout=30)
    yield worker
    worker.close()


def call(
    worker: WorkerClient, fn, out: Path, timeout: float | None = None, stall: float | None = None, **params
) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    return worker.call(probe_name(fn), params, out, timeout=timeout, root=ROOT, stall=stall)


def test_one_worker_serves_several_probes(client: WorkerClient, tmp_path: Path) -> None:
    first = call(client, tp.echo, tmp_path / "a", x=1)
    second = call(client, tp.echo, tmp_path / "b", x=2)
    assert first["ok"] and second["ok"]
    assert first["result"]["pid"] == second["result"]["pid"] == client.pid
    assert client.starts == 1
    assert second["result"] == {"x": 2, "pid": client.pid, "lr": 0.1, "spec": client.spec.text}
    # the worker wrote the artifacts and result.json (last) into the directory it was given
    assert (tmp_path / "b" / "echo.json").is_file() and (tmp_path / "b" / "result.json").is_file()
    assert client.capabilities == {"config", "make_env"}
    assert client.info["executable"] and client.info["pid"] == client.pid
    assert client.ping() == client.pid


def test_subject_prints_never_reach_the_protocol(client: WorkerClient, tmp_path: Path) -> None:
    # The toy subject prints at import; `chatty` prints JSON-looking lines through print and os.write(1).
    reply = call(client, tp.chatty, tmp_path / "a", lines=300)
    assert reply["ok"] and reply["result"]["lines"] == 300
    assert call(client, tp.echo, tmp_path / "b")["ok"]  # the pipe is still in sync
    log = client.log_path.read_text()
    assert "toy subject: importing (stdout)" in log and "raw write to fd 1" in log
    assert "chatty line 299" in log and '{"id": 12345' in log


def test_probe_exception_then_a_fresh_worker(client: WorkerClient, tmp_path: Path) -> None:
    pid = client.ping()
    with pytest.raises(ProbeError) as info:
        call(client, tp.boom, tmp_path / "a")
    error = info.value
    assert error.kind == "exception"
    assert "ValueError: boom in probe" in error.message
    assert "toy_probes.py" in error.traceback and 'raise ValueError("boom in probe")' in error.traceback
    # the failed probe may have left the subject half-changed: the next call runs in a new process
    assert call(client, tp.echo, tmp_path / "b")["result"]["pid"] != pid


def test_config_is_a_private_copy_per_probe(client: WorkerClient, tmp_path: Path) -> None:
    assert call(client, tp.mutate_config, tmp_path / "a")["result"] == {"before_lr": 0.1}
    assert call(client, tp.echo, tmp_path / "b")["result"]["lr"] == 0.1


def test_os_exit_is_a_crash_and_the_next_call_restarts(client: WorkerClient, tmp_path: Path) -> None:
    pid = client.ping()
    with pytest.raises(ProbeError) as info:
        call(client, tp.hard_exit, tmp_path / "a", code=3)
    assert info.value.kind == "crash" and "exited with code 3" in info.value.message
    reply = call(client, tp.echo, tmp_path / "b")
    assert reply["ok"] and reply["result"]["pid"] != pid and client.starts == 2


def test_segfault_is_a_crash_with_a_traceback(client: WorkerClient, tmp_path: Path) -> None:
    with pytest.raises(ProbeError) as info:
        call(client, tp.segfault, tmp_path / "a")
    assert info.value.kind == "crash" and "SIGSEGV" in info.value.message
    # faulthandler's dump of the Python stack ends up in the stderr tail
    assert "Segmentation fault" in info.value.stderr_tail and "in segfault" in info.value.stderr_tail
    assert call(client, tp.echo, tmp_path / "b")["ok"]


def test_foreign_sigkill_is_reported_as_suspected_oom(client: WorkerClient, tmp_path: Path) -> None:
    with pytest.raises(ProbeError) as info:
        call(client, tp.sigkill_self, tmp_path / "a")
    assert info.value.kind == "oom" and "suspected out of memory" in info.value.message


def test_hang_is_killed_at_the_stall_limit_with_its_children(
    client: WorkerClient, tmp_path: Path, wait_dead: Callable[[int], bool]
) -> None:
    pid = client.ping()
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    with pytest.raises(ProbeError) as info:
        call(client, tp.spawn_and_hang, tmp_path / "a", stall=1.5, pidfile=str(pidfile))
    elapsed = time.monotonic() - started
    assert info.value.kind == "timeout" and "made no progress for 1.5 s" in info.value.message
    assert "--stall-timeout" in info.value.message and "stuck at: spawn_and_hang" in info.value.message
    assert elapsed < 60  # the probe sleeps 120 s: it was killed, not waited for
    # the stack of the stuck call (faulthandler on SIGUSR1 before the kill) is in the tail
    assert "in spawn_and_hang" in info.value.stderr_tail
    assert wait_dead(pid), "the timed-out worker is still running"
    assert wait_dead(int(pidfile.read_text())), "the worker's child survived the timeout"
    reply = call(client, tp.echo, tmp_path / "b")
    assert reply["ok"] and reply["result"]["pid"] != pid


def test_memory_limit_turns_a_runaway_allocation_into_oom(toy_subject: Path, tmp_path: Path) -> None:
    worker = WorkerClient(parse_spec(str(toy_subject)), tmp_path / "logs", timeout=30, memory_mb=1024)
    try:
        with pytest.raises(ProbeError) as info:
            call(worker, tp.allocate, tmp_path / "a", gib=8.0)
        assert info.value.kind == "oom" and "RLAUDIT_WORKER_MEMORY_MB" in info.value.message
        assert "MemoryError" in info.value.traceback
        assert call(worker, tp.echo, tmp_path / "b")["ok"]  # a fresh worker after an OOM
        assert worker.starts == 2
    finally:
        worker.close()


def test_import_failure_is_reported_for_every_call(broken_subject: Path, tmp_path: Path) -> None:
    worker = WorkerClient(parse_spec(str(broken_subject)), tmp_path / "logs", timeout=30)
    try:
        for attempt in ("a", "b"):
            with pytest.raises(ProbeError) as info:
                call(worker, tp.echo, tmp_path / attempt)
            error = info.value
            assert error.kind == "import"
            assert "rlaudit_no_such_module_for_tests" in error.message
            assert "broken_subject" in error.traceback or "subject.py" in error.traceback
            assert "ModuleNotFoundError" in error.traceback
        assert "about to import a module that does not exist" in error.stderr_tail
        assert worker.starts == 1  # the failed load is remembered, not retried per call
    finally:
        worker.close()


def test_garbage_on_the_pipe_is_a_protocol_error(client: WorkerClient, tmp_path: Path) -> None:
    pid = client.ping()
    with pytest.raises(ProbeError) as info:
        call(client, tp.corrupt_protocol, tmp_path / "a")
    assert info.value.kind == "protocol" and "unreadable reply" in info.value.message
    reply = call(client, tp.echo, tmp_path / "b")  # a new worker, in sync again
    assert reply["ok"] and reply["result"]["pid"] != pid


def test_subject_that_hangs_at_import_times_out(tmp_path: Path) -> None:
    subject = tmp_path / "slow" / "subject.py"
    subject.parent.mkdir()
    subject.write_text("import time\ntime.sleep(120)\n\ndef config():\n    return {}\n")
    worker = WorkerClient(parse_spec(str(subject)), tmp_path / "logs", load_timeout=1.5)
    try:
        with pytest.raises(ProbeError) as info:
            call(worker, tp.echo, tmp_path / "a")
        assert info.value.kind == "timeout" and "load" in info.value.message
        assert "time.sleep(120)" in info.value.stderr_tail or "subject.py" in info.value.stderr_tail
        assert worker.pid is None
    finally:
        worker.close()


def test_missing_capability_does_not_run_the_probe(client: WorkerClient, tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    reply = call(client, tp.needs_policy, tmp_path / "a", marker=str(marker))
    assert reply == {"ok": False, "missing": ["make_policy"]}
    assert not marker.exists()


def test_second_interpreter_path_and_env(toy_subject: Path, tmp_path: Path) -> None:
    # A different interpreter path: a symlink to this one outside any venv, with this environment's
    # packages handed over through PYTHONPATH (as a user would for a bare interpreter).
    link = tmp_path / "bin" / "python-other"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    packages = os.pathsep.join(site.getsitepackages())
    spec = parse_spec(
        str(toy_subject), python=str(link), cwd=str(tmp_path), env={"PYTHONPATH": packages, "TOY_FLAG": "yes"}
    )
    worker = WorkerClient(spec, tmp_path / "logs", timeout=30)
    try:
        reply = call(worker, tp.interpreter, tmp_path / "a")
        assert reply["result"]["executable"] == str(link) == worker.info["executable"]
        assert reply["result"]["flag"] == "yes"
        assert Path(reply["result"]["cwd"]).resolve() == tmp_path.resolve()
    finally:
        worker.close()


def test_torch_thread_settings_reach_the_worker(toy_subject: Path, tmp_path: Path) -> None:
    worker = WorkerClient(parse_spec(str(toy_subject)), tmp_path / "logs", torch_threads=1)
    try:
        result = call(worker, tp.interpreter, tmp_path / "a")["result"]
        assert (result["torch_threads"], result["omp_threads"]) == ("1", "1")
    finally:
        worker.close()


def test_progress_heartbeats_reach_the_client(client: WorkerClient, tmp_path: Path) -> None:
    beats: list[tuple[int, int]] = []
    (tmp_path / "a").mkdir()
    reply = client.call(
        probe_name(tp.beats),
        {"n": 3},
        tmp_path / "a",
        root=ROOT,
        on_progress=lambda i, n: beats.append((i, n)),
    )
    assert reply["ok"] and beats and beats[-1] == (3, 3)


def test_unimportable_probe_module_is_an_import_error(client: WorkerClient, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    with pytest.raises(ProbeError) as info:
        client.call("rlaudit_no_such_probes:thing", {}, tmp_path / "a")
    assert info.value.kind == "import" and "could not be imported" in info.value.message


def test_old_logs_are_pruned(toy_subject: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_client, "KEEP_LOGS", 2)
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(4):
        old = logs / f"worker-old-{i}.log"
        old.write_text("x")
        os.utime(old, (1_000_000 + i, 1_000_000 + i))
    worker = WorkerClient(parse_spec(str(toy_subject)), logs)
    try:
        worker.ping()
        assert sorted(p.name for p in logs.iterdir()) == sorted(["worker-old-3.log", worker.log_path.name])
    finally:
        worker.close()


def test_close_stops_the_worker(toy_subject: Path, tmp_path: Path, wait_dead: Callable[[int], bool]) -> None:
    worker = WorkerClient(parse_spec(str(toy_subject)), tmp_path / "logs")
    pid = worker.ping()
    worker.close()
    assert wait_dead(pid) and worker.pid is None


def test_probe_error_round_trips() -> None:
    error = ProbeError("timeout", "too slow", "tb", "tail")
    again = ProbeError.from_dict(error.to_dict())
    assert (again.kind, again.message, again.traceback, again.stderr_tail) == (
        "timeout",
        "too slow",
        "tb",
        "tail",
    )
    assert "tail" in again.describe()
    with pytest.raises(ValueError, match="kind must be one of"):
        ProbeError("weird", "x")


# --- the probe decorator and context ---------------------------------------------------------------------


def test_probe_decorator_records_name_requirements_and_version() -> None:
    from rlaudit.probe import probe_info

    info = probe_info(tp.needs_policy)
    assert (info.name, info.requires, info.version) == ("toy_probes:needs_policy", ("make_policy",), 1)
    assert Path(probe_import_root(tp.echo)) == Path(tp.__file__).parent


def test_probe_decorator_rejects_bad_declarations() -> None:
    from rlaudit.probe import probe, probe_info

    with pytest.raises(ValueError, match=r"unknown capability 'make_polcy'.*make_policy"):
        probe(requires=("make_polcy",))
    with pytest.raises(ValueError, match="version must be an integer >= 1"):
        probe(version=0)

    @probe()
    def local(ctx: object) -> dict:
        return {}

    with pytest.raises(TypeError, match="cannot be imported by a worker"):
        probe_info(local)
    with pytest.raises(TypeError, match="not a probe"):
        probe_info(print)


def test_bind_params_fills_defaults_and_names_the_parameters() -> None:
    from rlaudit.probe import bind_params

    assert bind_params(tp.echo, {}) == {"x": 1, "counter": ""}
    assert bind_params(tp.echo, {"x": 3}) == {"x": 3, "counter": ""}
    with pytest.raises(TypeError, match="it takes x, counter"):
        bind_params(tp.echo, {"y": 1})


def test_probe_context_writers(tmp_path: Path) -> None:
    from rlaudit.probe import ProbeContext

    ctx = ProbeContext(subject=None, config={}, out=tmp_path, spec="s", capabilities=frozenset({"config"}))
    assert ctx.has("config") and not ctx.has("train")
    ctx.write_json("a", {"v": float("nan")})  # NaN becomes null: the file always parses
    assert (tmp_path / "a.json").read_text().split() == ["{", '"v":', "null", "}"]
    ctx.write_npz("b", {"w": [1, 2]}, z=[3])
    with np.load(tmp_path / "b.npz") as data:
        assert sorted(data.files) == ["w", "z"]
    with pytest.raises(ValueError, match="relative path inside"):
        ctx.write_json("../escape", {})
    ctx.progress(1, 2)  # no heartbeat receiver: a no-op


def test_a_slow_import_that_keeps_importing_is_not_stopped(tmp_path: Path) -> None:
    """Loading is limited by progress, not wall time: 4 s of imports, each 0.4 s apart, under a 1.5 s stall."""
    subject = tmp_path / "slowimport" / "subject.py"
    subject.parent.mkdir()
    for i in range(10):
        (subject.parent / f"part{i}.py").write_text("X = 1\n")
    subject.write_text(
        # __import__, as an import statement does: importlib.import_module raises no "import" audit event
        "import time\n\nfor i in range(10):\n    time.sleep(0.4)\n"
        "    __import__(f'part{i}')\n\ndef config():\n    return {'lr': 0.1}\n"
    )
    worker = WorkerClient(parse_spec(str(subject)), tmp_path / "logs", load_timeout=1.5)
    try:
        reply = call(worker, tp.echo, tmp_path / "a")
        assert reply["ok"], reply
    finally:
        worker.close()


def test_a_hung_import_is_stopped_for_no_progress(tmp_path: Path) -> None:
    subject = tmp_path / "hung" / "subject.py"
    subject.parent.mkdir()
    subject.write_text("import time\ntime.sleep(120)\n\ndef config():\n    return {}\n")
    worker = WorkerClient(parse_spec(str(subject)), tmp_path / "logs", load_timeout=1.5)
    try:
        with pytest.raises(ProbeError) as info:
            call(worker, tp.echo, tmp_path / "a")
        assert info.value.kind == "timeout" and "made no progress for 1.5 s" in info.value.message
    finally:
        worker.close()
