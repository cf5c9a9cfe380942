"""The Workbench: both sides run in parallel, cached, missing capabilities skipped, failures as findings."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import toy_probes as tp

from rlaudit.engine import client as worker_client
from rlaudit.engine import subjects
from rlaudit.engine.jobs import keep_workers, kept_workers
from rlaudit.engine.store import ArtifactStore
from rlaudit.engine.workbench import Pair, ProbeResult, Workbench
from rlaudit.findings import Status
from rlaudit.probe import bind_params, probe_info
from rlaudit.profiles import get_profile


@pytest.fixture
def candidate_subject(tmp_path: Path) -> Path:
    """A second toy subject whose learning rate differs (a 'regressed' copy)."""
    directory = tmp_path / "cand"
    directory.mkdir()
    source = (Path(__file__).parent / "fixtures" / "toy_subject.py").read_text()
    (directory / "subject.py").write_text(source.replace("LEARNING_RATE = 0.1", "LEARNING_RATE = 0.3"))
    return directory / "subject.py"


@pytest.fixture
def wb(toy_subject: Path, candidate_subject: Path, tmp_cache: Path) -> Iterator[Workbench]:
    bench = Workbench(str(toy_subject), str(candidate_subject), profile="smoke", jobs=2)
    yield bench
    bench.close()


def test_run_gives_a_pair(wb: Workbench, toy_subject: Path, candidate_subject: Path, tmp_cache: Path) -> None:
    pair = wb.run(tp.echo, x=4)
    assert isinstance(pair, Pair) and pair.ok
    assert (pair.baseline.result["lr"], pair.candidate.result["lr"]) == (0.1, 0.3)
    assert pair.baseline.json("echo") == {"x": 4, "lr": 0.1}
    assert pair.baseline.params == {"x": 4, "counter": ""}  # defaults filled in
    assert pair.baseline.side == "baseline" and pair.candidate.spec == str(candidate_subject)
    assert [r.side for r in pair] == ["baseline", "candidate"]
    assert pair["candidate"] is pair.candidate
    assert pair.baseline.dir.is_relative_to(tmp_cache / wb.fingerprints["baseline"])
    assert wb.labels == {"baseline": str(toy_subject), "candidate": str(candidate_subject)}
    assert wb.specs["candidate"].target == str(candidate_subject)
    assert wb.profile == get_profile("smoke") and pair.guard("x/y", "config", "h") is None


def test_tables_and_arrays(wb: Workbench) -> None:
    result = wb.run_side("candidate", tp.artifacts, x=2)
    assert isinstance(result, ProbeResult) and result.ok
    assert result.table("table")["value"].tolist() == [0.0, 2.0, 4.0]
    assert result.npz("arrays")["weights"].tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_fully_cached_run_starts_no_worker(
    toy_subject: Path, candidate_subject: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Workbench(str(toy_subject), str(candidate_subject), profile="smoke", jobs=2) as first:
        computed = first.run(tp.echo, x=1)
        assert computed.ok and not computed.baseline.cached and not computed.candidate.cached

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker process was started")

    # WorkerClient.start is the only place a worker process is launched.
    monkeypatch.setattr(worker_client.WorkerClient, "start", refuse)
    with Workbench(str(toy_subject), str(candidate_subject), profile="smoke", jobs=2) as second:
        again = second.run(tp.echo, x=1)
        assert again.ok and again.baseline.cached and again.candidate.cached
        assert again.baseline.result == computed.baseline.result
        # run(p) and run(p, x=1) are the same call when 1 is the default: one key
        assert second.run(tp.echo).baseline.cached
        # capabilities were remembered with the cache: a probe the subject cannot serve is skipped
        # without a worker
        marker = toy_subject.parent / "ran"
        skipped = second.run(tp.needs_policy, marker=str(marker))
        assert skipped.baseline.missing == ["make_policy"] and skipped.candidate.missing == ["make_policy"]
        assert not skipped.ok and not marker.exists()
        finding = skipped.guard("agents/architecture", "agents", "The networks match")
        assert finding is not None and finding.status is Status.SKIPPED
        assert "baseline lacks `make_policy`" in finding.evidence.summary
        assert "candidate lacks `make_policy`" in finding.evidence.summary
        assert second.worker_pids() == {"baseline": [], "candidate": []}


def test_missing_capability_learned_from_a_fresh_worker(wb: Workbench, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    pair = wb.run(tp.needs_policy, marker=str(marker))
    assert pair.baseline.missing == ["make_policy"] and not marker.exists()
    assert wb.capabilities("baseline", load=False) == {"config", "make_env"}


def test_errors_become_findings(
    toy_subject: Path, broken_subject: Path, tmp_cache: Path, tmp_path: Path
) -> None:
    with Workbench(str(toy_subject), str(broken_subject), profile="smoke", jobs=2) as bench:
        pair = bench.run(tp.echo)
        assert pair.baseline.ok and not pair.candidate.ok and pair.candidate.error.kind == "import"
        finding = pair.guard("config/resolved", "config", "The resolved configs match")
        assert finding.status is Status.ERROR and finding.evidence.details["side"] == "candidate"
        assert finding.evidence.details["kind"] == "import"
        assert "rlaudit_no_such_module_for_tests" in finding.evidence.details["traceback"]
        # the import failure is remembered: the next probe does not start another worker for it
        starts = sum(c.starts for c in bench._subjects["candidate"].clients)
        assert bench.run_side("candidate", tp.chatty).error.kind == "import"
        assert sum(c.starts for c in bench._subjects["candidate"].clients) == starts
    with Workbench(str(broken_subject), str(broken_subject), profile="smoke", jobs=2) as bench:
        both = bench.run(tp.echo).guard("config/resolved", "config", "The resolved configs match")
        assert both.status is Status.ERROR and both.evidence.details["side"] == "baseline and candidate"
        assert set(both.evidence.details["sides"]) == {"baseline", "candidate"}


def test_failed_probes_are_remembered_not_cached(
    wb: Workbench,
    toy_subject: Path,
    candidate_subject: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = tmp_path / "boom.txt"
    first = wb.run_side("baseline", tp.boom, counter=str(counter))
    assert first.error.kind == "exception" and "boom in probe" in first.error.message
    # the second call gets the same error at once, saying it was remembered: the probe did not run again
    second = wb.run_side("baseline", tp.boom, counter=str(counter))
    assert second.error.kind == "exception" and "boom in probe" in second.error.message
    assert (
        "remembered failure, not run again" in second.error.message
        and "--retry-failed" in second.error.message
    )
    assert len(counter.read_text().splitlines()) == 1
    key = wb.cache.key(wb.fingerprints["baseline"], "toy_probes:boom", 1, first.params)
    assert not key.exists()
    # --retry-failed (a time after the failure) runs it again, once per report
    monkeypatch.setenv("RLAUDIT_RETRY_FAILED_SINCE", repr(time.time()))
    with Workbench(str(toy_subject), str(candidate_subject), profile="smoke", jobs=1) as retry:
        for _ in range(2):
            assert "boom in probe" in retry.run_side("baseline", tp.boom, counter=str(counter)).error.message
    assert len(counter.read_text().splitlines()) == 2


def test_crash_then_recovery(wb: Workbench) -> None:
    crashed = wb.run_side("candidate", tp.hard_exit, code=7)
    assert crashed.error.kind == "crash" and "code 7" in crashed.error.message
    assert wb.run_side("candidate", tp.echo, x=9).ok


def test_run_many_fans_out_over_several_workers(wb: Workbench, tmp_path: Path) -> None:
    params = [{"counter": str(tmp_path / f"c{i}"), "seconds": 0.4} for i in range(4)]
    pairs = wb.run_many(tp.count, params, sides=("candidate",))
    assert [p.baseline for p in pairs] == [None] * 4
    assert all(p.ok for p in pairs)
    assert len({p.candidate.result["pid"] for p in pairs}) == 2  # jobs=2: two worker processes
    # order follows params_list
    assert [p.candidate.params["counter"] for p in pairs] == [d["counter"] for d in params]
    both = wb.run_many(tp.echo, [{"x": 1}, {"x": 2}])
    assert [(p.baseline.result["x"], p.candidate.result["x"]) for p in both] == [(1, 1), (2, 2)]


def test_a_job_someone_else_is_computing_is_taken_last(
    toy_subject: Path, tmp_cache: Path, tmp_path: Path
) -> None:
    """Two notebooks asking for the same artifacts compute different ones instead of waiting in turn."""
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    spec = str(toy_subject)
    with Workbench(spec, spec, profile="smoke", jobs=1) as bench:
        info = probe_info(tp.echo)
        params = bind_params(tp.echo, {"x": 1, "counter": str(first)})
        key = bench.cache.key(bench.fingerprint("baseline"), info.name, info.version, params)
        held, released_early = threading.Event(), threading.Event()

        def other_notebook() -> None:
            # Holds the first job's lock as another process computing it would, until the second job is done.
            with bench.cache.lock(key):
                held.set()
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    if second.exists():
                        released_early.set()
                        break
                    time.sleep(0.02)

        thread = threading.Thread(target=other_notebook)
        thread.start()
        assert held.wait(10)
        results = bench.run_each(
            tp.echo,
            [("baseline", {"x": 1, "counter": str(first)}), ("baseline", {"x": 2, "counter": str(second)})],
        )
        thread.join()
    assert released_early.is_set(), (
        "the workbench waited on the busy job instead of computing the free one first"
    )
    assert [r.result["x"] for r in results] == [1, 2] and all(r.ok for r in results)


def test_kept_workers_serve_the_next_workbench_of_the_same_subject(
    toy_subject: Path, candidate_subject: Path, tmp_cache: Path
) -> None:
    spec = str(toy_subject)
    keep_workers(2)
    try:
        with Workbench(spec, spec, profile="smoke", jobs=1) as first:
            pid = first.run_side("baseline", tp.echo, x=1).result["pid"]
        assert kept_workers() == [pid]  # closed, but its idle worker kept
        with Workbench(spec, str(candidate_subject), profile="smoke", jobs=1) as second:
            assert second.run_side("baseline", tp.echo, x=2).result["pid"] == pid
            other = second.run_side("candidate", tp.echo, x=2).result["pid"]
            assert other != pid  # another subject never gets it
        assert sorted(kept_workers()) == sorted([pid, other])
    finally:
        keep_workers(0)
    assert kept_workers() == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_extra_arms_share_cache_and_machinery(wb: Workbench, tmp_path: Path) -> None:
    variant = tmp_path / "variant"
    variant.mkdir()
    source = (Path(__file__).parent / "fixtures" / "toy_subject.py").read_text()
    (variant / "subject.py").write_text(source.replace("LEARNING_RATE = 0.1", "LEARNING_RATE = 0.5"))
    first = wb.run_spec(str(variant / "subject.py"), tp.echo)
    assert first.ok and first.result["lr"] == 0.5 and not first.cached
    assert first.side == str(variant / "subject.py")
    assert wb.run_spec(str(variant / "subject.py"), tp.echo).cached
    mixed = wb.run_each(tp.echo, [("baseline", {"x": 3}), (str(variant), {"x": 3})])
    assert [r.result["lr"] for r in mixed] == [0.1, 0.5]


def test_fresh_recomputes_once_per_session(toy_subject: Path, tmp_cache: Path, tmp_path: Path) -> None:
    counter = tmp_path / "runs.txt"
    spec = str(toy_subject)
    with Workbench(spec, spec, profile="smoke", jobs=1) as bench:
        bench.run_side("baseline", tp.echo, counter=str(counter))
    with Workbench(spec, spec, profile="smoke", jobs=1, fresh=True) as bench:
        assert not bench.run_side("baseline", tp.echo, counter=str(counter)).cached
        assert bench.run_side("baseline", tp.echo, counter=str(counter)).cached
    assert len(counter.read_text().splitlines()) == 2


def test_parallel_workers_get_one_torch_thread(
    toy_subject: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RLAUDIT_TORCH_THREADS", raising=False)
    with Workbench(str(toy_subject), str(toy_subject), profile="smoke", jobs=2) as bench:
        assert bench.run_side("baseline", tp.interpreter).result["torch_threads"] == "1"


def test_pair_file_and_bad_inputs(
    tmp_path: Path, toy_subject: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pair.yaml").write_text(
        f"baseline: {{spec: {toy_subject}, label: old}}\ncandidate: {{spec: {toy_subject}, env: {{TOY_FLAG: 'on'}}}}\n"
    )
    with Workbench("", "", profile="smoke", pair_file=str(tmp_path / "pair.yaml")) as bench:
        assert bench.labels == {"baseline": "old", "candidate": str(toy_subject)}
        assert bench.fingerprints["baseline"] != bench.fingerprints["candidate"]  # env differs
        assert bench.run_side("candidate", tp.interpreter).result["flag"] == "on"
        with pytest.raises(TypeError, match="unexpected keyword argument 'sed'"):
            bench.run(tp.echo, sed=1)
        with pytest.raises(TypeError, match="not a probe"):
            bench.run(print)
    (tmp_path / "ppo.yaml").write_text("algo: ppo\n")
    monkeypatch.setattr(subjects, "ADAPTERS", {k: v for k, v in subjects.ADAPTERS.items() if k != "sb3"})
    with pytest.raises(ValueError, match="no adapter is registered for scheme 'sb3'"):
        Workbench(f"sb3:{tmp_path / 'ppo.yaml'}", str(toy_subject), profile="smoke")  # fails before any run
    with pytest.raises(ValueError, match="needs both subjects"):
        Workbench("", str(toy_subject))


def test_close_stops_every_worker(
    toy_subject: Path, candidate_subject: Path, tmp_cache: Path, wait_dead: Callable[[int], bool]
) -> None:
    bench = Workbench(
        str(toy_subject), str(candidate_subject), profile="smoke", jobs=2, cache=ArtifactStore()
    )
    bench.run(tp.chatty, lines=1)
    pids = [pid for pids in bench.worker_pids().values() for pid in pids]
    assert len(pids) == 2
    bench.close()
    assert all(wait_dead(pid) for pid in pids)
    with pytest.raises(RuntimeError, match="closed"):
        bench.run(tp.echo)


_KILLED_NOTEBOOK = """
import sys
from rlaudit.engine.workbench import Workbench
import toy_probes
wb = Workbench(sys.argv[1], sys.argv[1], profile="smoke", jobs=1)
wb.run_side("baseline", toy_probes.stall_midwrite, ready=sys.argv[2], release=sys.argv[3])
"""


def test_a_killed_notebook_takes_its_busy_worker_along(
    toy_subject: Path, tmp_cache: Path, tmp_path: Path, wait_dead: Callable[[int], bool]
) -> None:
    # SIGKILL skips exit handlers, and a busy worker does not read its request pipe: only the worker's own
    # watch on its parent can stop it.
    import os
    import signal
    import subprocess
    import sys
    import time

    fixtures = Path(__file__).parent / "fixtures"
    lib = Path(__file__).parents[1] / "lib"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(lib), str(fixtures)]))
    ready, release = tmp_path / "ready", tmp_path / "release"
    notebook = subprocess.Popen(
        [sys.executable, "-c", _KILLED_NOTEBOOK, str(toy_subject), str(ready), str(release)], env=env
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline and notebook.poll() is None:
        time.sleep(0.05)
    assert ready.exists(), "the probe never started"
    worker_pid = int(ready.read_text())
    notebook.send_signal(signal.SIGKILL)
    notebook.wait()
    try:
        assert wait_dead(worker_pid, seconds=15), "the worker outlived its killed notebook"
    finally:
        release.write_text("stop")  # lets a surviving worker finish instead of stalling forever


def test_garbage_collected_workbench_stops_its_workers(
    toy_subject: Path, tmp_cache: Path, wait_dead: Callable[[int], bool]
) -> None:
    import gc

    bench = Workbench(str(toy_subject), str(toy_subject), profile="smoke", jobs=1)
    bench.run_side("baseline", tp.chatty, lines=1)
    (pid,) = bench.worker_pids()["baseline"]
    del bench
    gc.collect()
    assert wait_dead(pid)


def test_jobs_shipped_to_another_process(
    toy_subject: Path, candidate_subject: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A backend whose jobs do not run as threads here gets self-contained ProbeJobs (the path a Ray
    # backend takes): each starts its own worker where it runs, and shares the cache directory.
    monkeypatch.setenv("RLAUDIT_EXECUTOR", "processes")
    with Workbench(str(toy_subject), str(candidate_subject), profile="smoke", jobs=2) as bench:
        pair = bench.run(tp.echo, x=6)
        assert pair.ok and (pair.baseline.result["lr"], pair.candidate.result["lr"]) == (0.1, 0.3)
        assert bench.worker_pids() == {"baseline": [], "candidate": []}  # none in this process
        assert bench.capabilities("candidate", load=False) == {"config", "make_env"}  # saved by the job
    monkeypatch.setenv("RLAUDIT_EXECUTOR", "local")
    with Workbench(str(toy_subject), str(candidate_subject), profile="smoke", jobs=2) as bench:
        assert bench.run(tp.echo, x=6).candidate.cached
    monkeypatch.setenv("RLAUDIT_EXECUTOR", "ray")
    with pytest.raises(ValueError, match="--executor ray"):
        Workbench(str(toy_subject), str(candidate_subject), profile="smoke")
