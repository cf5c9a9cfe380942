"""The Ray executor backend, against a real Ray cluster (2 CPUs) started once for the whole module.

The cluster is started the way a user starts one (``ray start --head`` in a subprocess) and the backend
reaches it by address, so the address path is the one under test. Skipped only when ray is not importable.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import toy_probes as tp

from rlaudit.engine import backends
from rlaudit.engine import ray_backend as rb
from rlaudit.engine.executor import Executor, JobError
from rlaudit.engine.paths import LIB_DIR
from rlaudit.engine.ray_backend import RaySetupError, RemoteTaskLost, SharedPathError
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.findings import Status

HAVE_RAY = importlib.util.find_spec("ray") is not None
requires_ray = pytest.mark.skipif(
    not HAVE_RAY, reason="ray is not installed: pip install 'rlaudit[ray]' to test the Ray executor backend"
)
FIXTURES = Path(__file__).resolve().parent / "fixtures"
START_ATTEMPTS = 3  # a loaded machine can make Ray's own startup time out (see _start_cluster)
START_TIMEOUT = 240.0  # seconds for one `ray start --head` to report "Ray runtime started"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_command() -> list[str]:
    script = Path(sys.executable).with_name("ray")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a `ray start --block` we started: SIGTERM makes it stop every Ray process it started."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    # Whatever is left of its process group (it leads one: start_new_session) goes too.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait(timeout=10)


def _start_cluster(tmp: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """``ray start --head --num-cpus 2 --block`` on free ports; returns the process and the head's address.

    Ray's raylet aborts when its dashboard agent has not written its port file within a fixed 15 s
    (ray-project/ray#65983); on a loaded two-core machine that happens now and then, so a failed start is
    retried with fresh ports.
    """
    failures = []
    for attempt in range(START_ATTEMPTS):
        port = _free_port()
        log_path = tmp / f"ray-start-{attempt}.log"
        command = [
            *_ray_command(),
            "start",
            "--head",
            "--block",
            "--num-cpus=2",
            f"--port={port}",
            f"--ray-client-server-port={_free_port()}",
            f"--dashboard-agent-listen-port={_free_port()}",
            "--include-dashboard=false",
            "--include-log-monitor=false",
            "--disable-usage-stats",
            f"--temp-dir={tmp / f'ray{attempt}'}",
        ]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            if b"Ray runtime started" in log_path.read_bytes():
                return proc, f"127.0.0.1:{port}"
            time.sleep(0.5)
        _stop(proc)
        failures.append(f"attempt {attempt + 1}: " + log_path.read_text(errors="replace")[-1500:])
    raise RuntimeError("`ray start --head` failed " + f"{START_ATTEMPTS} times:\n" + "\n".join(failures))


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A 2-CPU Ray cluster for this module; yields its address (``127.0.0.1:<port>``)."""
    import ray  # import here first: the cluster's own processes then start on a less busy machine

    tmp = Path(tempfile.mkdtemp(prefix="rlray-", dir="/tmp"))  # short: Ray's socket paths have a length limit
    # A token of our own: the cluster and this process authenticate with it, and ~/.ray is left alone.
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = dict(os.environ, **auth)
    env.pop("RAY_ADDRESS", None)
    env["PYTHONPATH"] = _cluster_pythonpath(tmp)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env.pop("RLAUDIT_TORCH_THREADS", None)  # the backend must set the jobs' threads itself
    proc, address = _start_cluster(tmp, env)
    try:
        with pytest.MonkeyPatch.context() as mp:
            for key, value in auth.items():
                mp.setenv(key, value)
            mp.delenv("RAY_ADDRESS", raising=False)
            _reload_ray_auth()
            try:
                yield address
            finally:
                ray.shutdown()  # backends leave a connection to an existing cluster open by design
                rb._RaySession.reset()
        _reload_ray_auth()
    finally:
        _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def _cluster_pythonpath(tmp: Path) -> str:
    """PYTHONPATH for the processes of a test cluster: this checkout's rlaudit, without rfc3987_syntax.

    In this environment jsonschema (which every Ray process imports) finds jupyter's rfc3987_syntax, whose
    import builds a grammar for seconds of CPU; on a loaded machine that alone makes Ray's agents miss their
    15-s startup window. Ray never validates IRIs, so its processes go without the package.
    """
    shim = tmp / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "rfc3987_syntax.py").write_text('raise ImportError("hidden from the Ray test cluster")\n')
    return os.pathsep.join(p for p in (str(shim), str(LIB_DIR), os.environ.get("PYTHONPATH", "")) if p)


def _reload_ray_auth() -> None:
    """Make this process's ray read RAY_AUTH_MODE/RAY_AUTH_TOKEN again (it caches them when imported)."""
    try:
        from ray._private.authentication_test_utils import reset_auth_token_state
    except ImportError:  # another ray version: it reads the environment when it connects
        return
    reset_auth_token_state()


@pytest.fixture
def on_ray(ray_cluster: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Workbenches created in this test use the Ray backend (as `rlaudit report --executor ray` does)."""
    monkeypatch.setenv("RLAUDIT_EXECUTOR", "ray")
    monkeypatch.setenv("RLAUDIT_RAY_ADDRESS", ray_cluster)
    return ray_cluster


def _spy(mp: pytest.MonkeyPatch) -> list[Any]:
    """Record every item submitted to a RayBackend (while ``mp`` is active), in order."""
    items: list[Any] = []
    original = rb.RayBackend.submit

    def spy(self: rb.RayBackend, fn: Any, item: Any) -> Any:
        items.append(item)
        return original(self, fn, item)

    mp.setattr(rb.RayBackend, "submit", spy)
    return items


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every item submitted to a RayBackend in this test."""
    return _spy(monkeypatch)


def _subjects(root: Path) -> tuple[str, str]:
    """A toy subject and a 'regressed' copy (another learning rate), outside any git checkout."""
    source = (FIXTURES / "toy_subject.py").read_text()
    paths = []
    for name, text in (
        ("base", source),
        ("cand", source.replace("LEARNING_RATE = 0.1", "LEARNING_RATE = 0.3")),
    ):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "subject.py").write_text(text)
        paths.append(str(root / name / "subject.py"))
    return paths[0], paths[1]


def _comparable(result: Any) -> dict[str, Any]:
    """What must agree between backends: all but the worker's pid and thread settings (tested apart)."""
    return {
        k: v for k, v in (result.result or {}).items() if k not in ("pid", "torch_threads", "omp_threads")
    }


def _probe_batch(wb: Workbench) -> dict[str, Any]:
    return {
        "echo": wb.run_many(tp.echo, [dict(x=1), dict(x=2)]),
        "artifacts": wb.run(tp.artifacts, x=3),
        "interpreter": wb.run_side("candidate", tp.interpreter),
    }


@pytest.fixture(scope="module")
def both_backends(ray_cluster: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same probes run through the local backend and through Ray, each with its own cache."""
    root = tmp_path_factory.mktemp("both")
    baseline, candidate = _subjects(root)
    out: dict[str, Any] = {"root": root}
    for name in ("local", "ray"):
        with pytest.MonkeyPatch.context() as mp:
            mp.delenv("RLAUDIT_TORCH_THREADS", raising=False)
            mp.setenv("RLAUDIT_EXECUTOR", name)
            mp.setenv("RLAUDIT_RAY_ADDRESS", ray_cluster)
            cache = root / f"cache-{name}"
            mp.setenv("RLAUDIT_CACHE", str(cache))
            items = _spy(mp)
            with Workbench(baseline, candidate, profile="smoke", jobs=1) as wb:
                out[name] = {"cache": cache, "results": _probe_batch(wb), "submitted": items}
    out["specs"] = (baseline, candidate)
    return out


def _flat(batch: dict[str, Any]) -> list[Any]:
    results = []
    for pair in batch["echo"]:
        results.extend([pair.baseline, pair.candidate])
    results.extend([batch["artifacts"].baseline, batch["artifacts"].candidate, batch["interpreter"]])
    return results


# ---------------------------------------------------------------------------------------------------------
# Workbench on Ray


@requires_ray
def test_ray_results_match_the_local_backend(both_backends: dict[str, Any]) -> None:
    local, ray = _flat(both_backends["local"]["results"]), _flat(both_backends["ray"]["results"])
    assert all(r.ok for r in local) and all(r.ok for r in ray), [r for r in ray if not r.ok]
    assert [_comparable(r) for r in ray] == [_comparable(r) for r in local]
    assert [(r.side, r.probe, r.params, r.fingerprint, r.cached) for r in ray] == [
        (r.side, r.probe, r.params, r.fingerprint, r.cached) for r in local
    ]
    echo_ray, echo_local = both_backends["ray"]["results"]["echo"], both_backends["local"]["results"]["echo"]
    assert echo_ray[1].candidate.json("echo") == echo_local[1].candidate.json("echo") == {"x": 2, "lr": 0.3}
    art_ray, art_local = (
        both_backends["ray"]["results"]["artifacts"],
        both_backends["local"]["results"]["artifacts"],
    )
    assert art_ray.baseline.table("table").equals(art_local.baseline.table("table"))
    assert art_ray.candidate.npz("arrays")["weights"].tolist() == [[3.0, 3.0], [3.0, 3.0]]


@requires_ray
def test_every_ray_job_was_a_task_and_its_artifacts_are_in_the_shared_cache(
    both_backends: dict[str, Any],
) -> None:
    ray_run, local_run = both_backends["ray"], both_backends["local"]
    assert local_run["submitted"] == []
    jobs = ray_run["submitted"]
    assert len(jobs) == 7  # echo: 2 params x 2 sides, artifacts: 2 sides, interpreter: 1
    assert {job.cache_root for job in jobs} == {str(ray_run["cache"])}
    for result, reference in zip(_flat(ray_run["results"]), _flat(local_run["results"]), strict=True):
        assert result.dir.is_relative_to(ray_run["cache"]) and (result.dir / "result.json").is_file()
        # the same cache layout (fingerprint/probe/version-params) as a local run
        assert result.dir.relative_to(ray_run["cache"]) == reference.dir.relative_to(local_run["cache"])


@requires_ray
def test_ray_jobs_start_the_subjects_worker_with_one_torch_thread(both_backends: dict[str, Any]) -> None:
    info = both_backends["ray"]["results"]["interpreter"].result
    # the job ran the usual rlaudit worker, with the subject's interpreter and cwd ...
    assert info["executable"] == sys.executable
    # ... and one torch/OpenMP thread, the one CPU Ray reserved for it
    assert info["torch_threads"] == "1" and info["omp_threads"] == "1"


@requires_ray
def test_a_second_run_is_served_by_the_cache_without_tasks(
    both_backends: dict[str, Any], on_ray: str, submitted: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUDIT_CACHE", str(both_backends["ray"]["cache"]))
    with Workbench(*both_backends["specs"], profile="smoke", jobs=1) as wb:
        again = _flat(_probe_batch(wb))
    assert submitted == []
    assert all(r.ok and r.cached for r in again)
    assert [_comparable(r) for r in again] == [_comparable(r) for r in _flat(both_backends["ray"]["results"])]


@requires_ray
def test_failing_probes_are_errors_in_their_slots(
    on_ray: str, toy_subject: Path, tmp_cache: Path, tmp_path: Path, submitted: list[Any]
) -> None:
    unwritable = tmp_path / "no" / "such" / "dir" / "counter.txt"
    with Workbench(str(toy_subject), str(toy_subject), profile="smoke", jobs=2) as wb:
        pairs = wb.run_many(tp.echo, [dict(x=5), dict(x=6, counter=str(unwritable))], sides=("baseline",))
        crashed = wb.run_side("baseline", tp.hard_exit, code=7)
    assert len(submitted) == 3
    assert pairs[0].ok and pairs[0].baseline.result["x"] == 5
    raised = pairs[1].baseline
    assert not raised.ok and raised.error.kind == "exception"
    assert "FileNotFoundError" in raised.error.message + raised.error.traceback
    finding = pairs[1].guard("config/resolved", "config", "The configs match")
    assert finding is not None and finding.status is Status.ERROR
    assert crashed.error.kind == "crash" and "7" in crashed.error.message


KILLER = '''
"""A probe that kills the process that started its worker: under the Ray backend, the Ray worker."""

import os
import signal
import time
from pathlib import Path

from rlaudit.probe import ProbeContext, probe


@probe(version=1)
def kill_ray_worker(ctx: ProbeContext, *, tally: str, kills: int) -> dict:
    """Kills its parent on each of the first ``kills`` attempts (counted in ``tally``), then succeeds."""
    path = Path(tally)
    attempt = len(path.read_text().splitlines()) if path.exists() else 0
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\\n")
    if attempt < kills:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)  # the worker follows its dead parent out long before this
    return {"attempt": attempt}
'''


@requires_ray
def test_a_lost_ray_worker_is_retried_then_becomes_an_error_finding(
    on_ray: str, toy_subject: Path, tmp_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module_dir = tmp_path / "killer"
    module_dir.mkdir()
    name = f"rlaudit_ray_killer_{os.getpid()}"
    (module_dir / f"{name}.py").write_text(textwrap.dedent(KILLER))
    monkeypatch.syspath_prepend(str(module_dir))
    killer = importlib.import_module(name)
    once, always = tmp_path / "once.txt", tmp_path / "always.txt"
    with Workbench(str(toy_subject), str(toy_subject), profile="smoke", jobs=2) as wb:
        recovered, lost = wb.run_each(
            killer.kill_ray_worker,
            [("baseline", dict(tally=str(once), kills=1)), ("candidate", dict(tally=str(always), kills=9))],
        )
    # a node lost once: Ray re-ran the job (max_retries=1) and the second attempt finished
    assert recovered.ok and recovered.result == {"attempt": 1}
    # lost on every attempt: one retry, then an error of kind crash, naming Ray, in its own slot
    assert len(always.read_text().splitlines()) == 2
    assert not lost.ok and lost.error.kind == "crash"
    assert "Ray worker" in lost.error.message and "died" in lost.error.message
    finding = Pair(baseline=recovered, candidate=lost).guard("trainer/curves", "trainer", "Both sides train")
    assert finding is not None and finding.status is Status.ERROR
    assert finding.evidence.details["side"] == "candidate" and finding.evidence.details["kind"] == "crash"


# ---------------------------------------------------------------------------------------------------------
# The backend itself


@requires_ray
def test_generic_jobs_keep_order_and_failures_stay_in_their_slots(ray_cluster: str) -> None:
    def job(x: Any) -> Any:
        if x == "die":
            os._exit(3)  # the Ray worker itself dies
        return 10 // x

    with Executor(jobs=2, backend="ray", address=ray_cluster, max_retries=0) as executor:
        assert executor.shares_memory is False
        results = executor.map(job, [5, 0, "die", 2], progress=False)
    assert results[0] == 2 and results[3] == 5
    raised = results[1]
    assert isinstance(raised, JobError) and isinstance(raised.error, ZeroDivisionError)
    assert "10 // x" in raised.traceback  # the traceback from the node
    died = results[2]
    assert isinstance(died, JobError) and isinstance(died.error, RemoteTaskLost)
    assert died.error.kind == "crash" and "died" in str(died.error)


@requires_ray
def test_check_shared_confirms_one_directory(ray_cluster: str, tmp_path: Path) -> None:
    with Executor(jobs=2, backend="ray", address=ray_cluster) as executor:
        backend = executor._backend
        assert isinstance(backend, rb.RayBackend)
        answers = backend.check_shared(tmp_path / "shared")
    assert answers and all(a["exists"] and a["same"] for a in answers.values())
    assert list((tmp_path / "shared").iterdir()) == []  # the marker file is gone again


def test_a_task_refuses_a_cache_directory_its_node_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a task does first on its node (called here directly: on one machine every path is shared)."""
    for name in rb._THREAD_VARIABLES:  # the task sets them; restore this process's afterwards
        monkeypatch.delenv(name, raising=False)
    ran: list[Any] = []
    missing = tmp_path / "not-on-this-node"
    failure = rb._ray_task(ran.append, "job", str(missing), 1)
    assert ran == [] and isinstance(failure, backends._Failure) and isinstance(failure.error, SharedPathError)
    assert str(missing) in str(failure.error) and "same path on every node" in str(failure.error)
    assert rb._ray_task(ran.append, "job", str(tmp_path), 1) is None and ran == ["job"]
    assert os.environ["RLAUDIT_TORCH_THREADS"] == os.environ["OMP_NUM_THREADS"] == "1"


def test_shared_path_problems_name_the_nodes() -> None:
    fine = {"a": {"exists": True, "same": True}}
    assert rb.shared_path_problems("/c", fine) == []
    problems = rb.shared_path_problems(
        "/c",
        {
            "a": {"exists": True, "same": True},
            "b": {"exists": False, "same": False},
            "c": {"exists": True, "same": False},
            "d": {"error": "No module named 'rlaudit'"},
        },
    )
    assert len(problems) == 3
    assert "/c does not exist on Ray node(s) b" in problems[0]
    assert "node(s) c have a directory /c, but not the one" in problems[1]
    assert "node d could not run" in problems[2] and "pip install 'rlaudit[ray]'" in problems[2]


@requires_ray
def test_one_process_talks_to_one_cluster(ray_cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Executor(jobs=1, backend="ray", address=ray_cluster):
        # "auto" (here: RAY_ADDRESS, as a user would set it) joins the connection this process has
        monkeypatch.setenv("RAY_ADDRESS", ray_cluster)
        Executor(jobs=1, backend="ray", address="auto").shutdown()
        monkeypatch.delenv("RAY_ADDRESS")
        # another cluster (something listens there, so the address itself is reachable) is refused
        with socket.socket() as other:
            other.bind(("127.0.0.1", 0))
            other.listen()
            address = f"127.0.0.1:{other.getsockname()[1]}"
            with pytest.raises(
                RaySetupError, match=r"already connected to the cluster at .* one cluster per"
            ):
                Executor(jobs=1, backend="ray", address=address)
        with pytest.raises(RaySetupError, match="private cluster"):
            Executor(jobs=1, backend="ray", address="local")


@requires_ray
def test_an_unreachable_address_fails_fast_and_says_how_to_start_a_cluster() -> None:
    port = _free_port()  # nothing listens there
    with pytest.raises(RaySetupError) as info:
        Executor(jobs=1, backend="ray", address=f"127.0.0.1:{port}", connect_timeout=2)
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "did not accept a connection" in message
    assert "ray start --head" in message and "--ray-address local" in message


def test_missing_ray_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_cache: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(RaySetupError, match=r"--executor ray.*pip install 'rlaudit\[ray\]'"):
        Executor(jobs=2, backend="ray", address="local")
    monkeypatch.setenv("RLAUDIT_EXECUTOR", "ray")
    with pytest.raises(ValueError, match="needs the ray package"):
        Workbench(str(FIXTURES / "toy_subject.py"), str(FIXTURES / "toy_subject.py"), profile="smoke")


@requires_ray
@pytest.mark.expensive
def test_a_private_local_cluster_starts_runs_and_stops() -> None:
    """``address="local"`` in a fresh process (Ray allows one connection per process): it starts a cluster
    with ``jobs`` CPUs, runs jobs there, and shutting the executor down stops every process it started."""
    script = textwrap.dedent(
        """
        import json, sys
        import psutil
        import ray
        from rlaudit.engine.executor import Executor
        with Executor(jobs=2, backend="ray", address="local", init_options={"_temp_dir": sys.argv[1]}) as ex:
            results = ex.map(lambda x: x * x, [1, 2, 3], progress=False)
            cpus = ray.cluster_resources().get("CPU")
            started = [p.pid for p in psutil.Process().children(recursive=True)]
        print(json.dumps({"results": results, "cpus": cpus, "started": started, "up": ray.is_initialized()}))
        """
    )
    temp = tempfile.mkdtemp(prefix="rlrayl-", dir="/tmp")
    # Token mode as Ray's default, with a token of our own (never ~/.ray/auth_token).
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), OMP_NUM_THREADS="1")
    env.update(RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=_cluster_pythonpath(Path(temp)))
    env.pop("RAY_ADDRESS", None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, temp], capture_output=True, text=True, env=env, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["results"] == [1, 4, 9] and report["cpus"] == 2.0 and not report["up"]
        assert report["started"], "ray.init(address='local') started no processes"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_running(pid) for pid in report["started"]):
            time.sleep(0.5)
        assert not [pid for pid in report["started"] if _running(pid)]
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
