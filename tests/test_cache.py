"""Fingerprints and the artifact store: keys, hits, atomic commits, locks, and code-change invalidation."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from rlaudit.engine import fingerprint, paths
from rlaudit.engine.io import atomic_write_json
from rlaudit.engine.store import (
    ArtifactStore,
    ProbeResult,
    fingerprint_details,
    params_hash,
    subject_fingerprint,
)
from rlaudit.engine.subjects import parse_spec
from rlaudit.engine.worker import ProbeError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LIB = Path(__file__).resolve().parents[1] / "lib"
SB3_SETUP = Path(__file__).resolve().parents[1] / "data" / "examples" / "sb3" / "ppo_cartpole.yaml"


def _result_json(out: Path, result: dict, params: dict | None = None) -> None:
    atomic_write_json(
        out / "result.json",
        {
            "probe": "m:p",
            "version": 1,
            "params": params or {},
            "result": result,
            "seconds": 0.1,
            "created": time.time(),
        },
    )


# --- keys ------------------------------------------------------------------------------------------------


def test_key_is_canonical_in_params(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    a = store.key("fp", "rlaudit.agents.probes:tree", 2, {"seed": 0, "sizes": (1, 2)})
    b = store.key("fp", "rlaudit.agents.probes:tree", 2, {"sizes": [1, 2], "seed": np.int64(0)})
    assert a == b
    assert a.parent == tmp_path / "fp" / "rlaudit.agents.probes.tree" and a.name.startswith("v2-")
    assert store.key("fp", "rlaudit.agents.probes:tree", 3, {"seed": 0, "sizes": (1, 2)}) != a  # version
    assert store.key("fp", "rlaudit.agents.probes:tree", 2, {"seed": 1, "sizes": (1, 2)}) != a  # params
    assert params_hash({"a": 1.0}) != params_hash({"a": 2.0})


def test_only_a_directory_with_result_json_is_a_hit(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    key = store.key("fp", "m:p", 1, {})
    key.mkdir(parents=True)
    (key / "tree.json").write_text("{}")
    assert store.get("fp", "m:p", 1, {}) is None  # artifacts without result.json: incomplete
    _result_json(key, {"n": 3})
    hit = store.get("fp", "m:p", 1, {}, side="baseline", spec="s")
    assert hit is not None and hit.ok and hit.cached and hit.result == {"n": 3} and hit.dir == key
    assert (hit.side, hit.spec) == ("baseline", "s")


def test_compute_commits_once_and_reads_back(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    calls = []

    def produce(out: Path) -> None:
        calls.append(out)
        (out / "data.json").write_text('{"v": 1}')
        _result_json(out, {"v": 1})

    first = store.compute("fp", "m:p", 1, {"a": 1}, produce)
    second = store.compute("fp", "m:p", 1, {"a": 1}, produce)
    assert len(calls) == 1 and not first.cached and second.cached
    assert first.json("data") == {"v": 1} and first.dir == second.dir
    assert calls[0] != first.dir  # written elsewhere, then renamed into place
    # fresh=True recomputes, and replaces the old directory
    third = store.compute("fp", "m:p", 1, {"a": 1}, produce, fresh=True)
    assert len(calls) == 2 and not third.cached and third.dir == first.dir


def test_failed_compute_caches_nothing(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)

    def produce(out: Path) -> None:
        (out / "half.json").write_text("{}")
        raise ProbeError("exception", "probe raised")

    with pytest.raises(ProbeError):
        store.compute("fp", "m:p", 1, {}, produce)
    key = store.key("fp", "m:p", 1, {})
    assert not key.exists() and store.get("fp", "m:p", 1, {}) is None
    assert [p.name for p in key.parent.iterdir() if p.name.endswith(".tmp")] == []
    # a produce that forgets result.json is not committed either
    with pytest.raises(RuntimeError, match=r"no result\.json"):
        store.compute("fp", "m:p", 1, {}, lambda out: (out / "x.json").write_text("{}"))
    assert not key.exists()


def test_newer_than_ignores_older_artifacts(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    store.compute("fp", "m:p", 1, {}, lambda out: _result_json(out, {"v": 1}))
    later = time.time() + 1
    assert store.get("fp", "m:p", 1, {}, newer_than=later) is None
    assert store.get("fp", "m:p", 1, {}, newer_than=later - 60) is not None


# --- a writer killed mid-write ---------------------------------------------------------------------------

_KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from rlaudit.engine.workbench import Workbench
    import toy_probes
    from rlaudit.engine.store import ArtifactStore
    subject, cache, ready, release = sys.argv[1:5]
    wb = Workbench(subject, subject, profile="smoke", jobs=1, cache=ArtifactStore(cache))
    wb.run_side("candidate", toy_probes.stall_midwrite, ready=ready, release=release)
    print("finished, which it should not")
    """
)


def test_killed_writer_leaves_nothing_that_is_read(tmp_path: Path, toy_subject: Path) -> None:
    import toy_probes

    from rlaudit.engine.workbench import Workbench

    cache, ready, release = tmp_path / "cache", tmp_path / "ready", tmp_path / "release"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(LIB), str(FIXTURES)]))
    writer = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(toy_subject), str(cache), str(ready), str(release)],
        env=env,
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline and writer.poll() is None:
        time.sleep(0.05)
    assert ready.exists(), "the probe never started"
    worker_pid = int(ready.read_text())
    # Kill the notebook-side process (holder of the lock and the temp dir) and the worker, mid-write.
    writer.kill()
    writer.wait()
    os.killpg(worker_pid, signal.SIGKILL)

    wb = Workbench(str(toy_subject), str(toy_subject), profile="smoke", jobs=1, cache=ArtifactStore(cache))
    try:
        fp = wb.fingerprints["candidate"]
        params = {"ready": str(ready), "release": str(release)}
        name = "toy_probes:stall_midwrite"
        key = wb.cache.key(fp, name, 1, params)
        leftovers = [p for p in key.parent.iterdir() if p.name.endswith(".tmp")]
        assert leftovers and (leftovers[0] / "part.bin").exists()  # the half-written directory is there...
        assert not key.exists() and wb.cache.get(fp, name, 1, params) is None  # ...and is never a hit
        release.write_text("go")
        result = wb.run_side("candidate", toy_probes.stall_midwrite, **params)
        assert result.ok and not result.cached and result.result == {"finished": True}
        assert sorted(p.name for p in result.dir.iterdir()) == [
            "checksums.json",
            "part.bin",
            "partial.json",
            "result.json",
        ]
        assert [p for p in key.parent.iterdir() if p.name.endswith(".tmp")] == []  # swept under the lock
    finally:
        wb.close()


# --- concurrency -----------------------------------------------------------------------------------------


def test_concurrent_threads_compute_a_key_once(tmp_path: Path) -> None:
    counter = tmp_path / "count.txt"
    results: list[ProbeResult] = []

    def produce(out: Path) -> None:
        with open(counter, "a") as f:
            f.write("run\n")
        time.sleep(0.3)  # long enough for the other caller to arrive while this one computes
        _result_json(out, {"v": 7})

    def ask() -> None:
        results.append(ArtifactStore(tmp_path / "cache").compute("fp", "m:p", 1, {"k": 1}, produce))

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.read_text() == "run\n"
    assert [r.result for r in results] == [{"v": 7}] * 3
    assert sorted(r.cached for r in results) == [False, True, True]


_SAME_KEY = textwrap.dedent(
    """
    import sys
    from rlaudit.engine.workbench import Workbench
    from rlaudit.engine.store import ArtifactStore
    import toy_probes
    subject, cache, counter = sys.argv[1:4]
    wb = Workbench(subject, subject, profile="smoke", jobs=1, cache=ArtifactStore(cache))
    r = wb.run_side("candidate", toy_probes.count, counter=counter, seconds=1.0)
    print("ok" if r.ok else r.error.describe())
    wb.close()
    """
)


def test_two_processes_compute_a_key_once(tmp_path: Path, toy_subject: Path) -> None:
    counter = tmp_path / "count.txt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(LIB), str(FIXTURES)]))
    command = [sys.executable, "-c", _SAME_KEY, str(toy_subject), str(tmp_path / "cache"), str(counter)]
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert outputs == ["ok", "ok"]
    assert len(counter.read_text().splitlines()) == 1


# --- fingerprints ----------------------------------------------------------------------------------------


def test_fingerprint_follows_the_code_outside_git(tmp_path: Path, toy_subject: Path) -> None:
    spec = parse_spec(str(toy_subject))
    first = subject_fingerprint(spec)
    assert first == subject_fingerprint(spec) and first.startswith("toy-subject-")
    # noise that is not code, or lives in caches and environments, does not count
    (toy_subject.parent / "notes.txt").write_text("hello")
    (toy_subject.parent / "__pycache__").mkdir()
    (toy_subject.parent / "__pycache__" / "x.py").write_text("x = 1")
    (toy_subject.parent / ".venv" / "lib").mkdir(parents=True)
    (toy_subject.parent / ".venv" / "lib" / "y.py").write_text("y = 1")
    (toy_subject.parent / "wandb").mkdir()
    (toy_subject.parent / "wandb" / "config.yaml").write_text("run: 1")
    assert subject_fingerprint(spec) == first
    # the subject's own code, a helper module, a config file all count
    toy_subject.write_text(toy_subject.read_text().replace("LEARNING_RATE = 0.1", "LEARNING_RATE = 0.2"))
    second = subject_fingerprint(spec)
    assert second != first
    (toy_subject.parent / "helpers.py").write_text("K = 1\n")
    third = subject_fingerprint(spec)
    (toy_subject.parent / "conf").mkdir()
    (toy_subject.parent / "conf" / "train.yaml").write_text("lr: 0.1\n")
    fourth = subject_fingerprint(spec)
    assert len({first, second, third, fourth}) == 4
    # interpreter and extra env are part of it
    link = tmp_path / "python-other"
    link.symlink_to(sys.executable)
    assert subject_fingerprint(spec.replace(python=str(link))) != fourth
    assert subject_fingerprint(spec.replace(env={"OMP_NUM_THREADS": "1"})) != fourth


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-C", str(repo), *args],
        check=True,
        capture_output=True,
    )


def test_fingerprint_follows_the_code_in_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    subject = repo / "tools" / "subject.py"
    subject.write_text((FIXTURES / "toy_subject.py").read_text())
    (repo / "trainer.py").write_text("LR = 0.1\n")
    (repo / ".gitignore").write_text("runs/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    spec = parse_spec(str(subject))
    clean = subject_fingerprint(spec)
    # a dirty change anywhere in the checkout (the subject imports the trainer) changes it; reverting restores it
    (repo / "trainer.py").write_text("LR = 0.2\n")
    dirty = subject_fingerprint(spec)
    assert dirty != clean
    (repo / "trainer.py").write_text("LR = 0.1\n")
    assert subject_fingerprint(spec) == clean
    # an untracked code file counts; an ignored one does not
    (repo / "runs").mkdir()
    (repo / "runs" / "config.yaml").write_text("step: 1\n")
    assert subject_fingerprint(spec) == clean
    (repo / "new_helper.py").write_text("X = 1\n")
    untracked = subject_fingerprint(spec)
    assert untracked != clean
    # committing the same content changes the commit, so it changes too
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "helper")
    assert subject_fingerprint(spec) not in (clean, untracked)


def test_builtin_fingerprint_names_the_faults() -> None:
    reference = subject_fingerprint(parse_spec("builtin:reference"))
    assert reference == subject_fingerprint(parse_spec("builtin:reference"))
    assert reference.startswith("builtin-reference-")
    assert subject_fingerprint(parse_spec("builtin:reference+lr_schedule")) != reference


def test_module_fingerprint_follows_the_package(tmp_path: Path) -> None:
    pkg = tmp_path / "rlaudit_fp_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "subj.py").write_text("def config():\n    return {'a': 1}\n")
    spec = parse_spec("rlaudit_fp_pkg.subj", base_dir=tmp_path)
    first = subject_fingerprint(spec)
    (pkg / "subj.py").write_text("def config():\n    return {'a': 2}\n")
    assert subject_fingerprint(spec) != first


def test_fingerprint_follows_the_requirements_file(tmp_path: Path, toy_subject: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("numpy\n")
    plain = parse_spec(str(toy_subject))
    spec = parse_spec(str(toy_subject), requirements=str(requirements))
    first = subject_fingerprint(spec)
    assert first == subject_fingerprint(spec) and first != subject_fingerprint(plain)
    # a new pin changes it (the venv is rebuilt, so are the artifacts); the same content again restores it
    requirements.write_text("numpy==2.0.0\n")
    pinned = subject_fingerprint(spec)
    assert pinned != first
    requirements.write_text("numpy\n")
    assert subject_fingerprint(spec) == first
    assert subject_fingerprint(spec.replace(system_site_packages=True)) != first
    # the details name what is hashed; a missing file still fingerprints (its worker reports the error)
    venv = fingerprint_details(spec.replace(system_site_packages=True))["venv"]
    assert venv["requirements_sha256"] == hashlib.sha256(b"numpy\n").hexdigest()
    assert venv["system_site_packages"] is True
    assert "venv" not in fingerprint_details(plain)
    requirements.unlink()
    assert subject_fingerprint(spec) not in (first, pinned)


def _edited(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """Make the fingerprint see ``target`` with other content, without touching the real file."""
    real = fingerprint._file_digest

    def digest(path: Path, *args: object) -> str:
        return "edited" if Path(path).resolve() == target.resolve() else real(path, *args)

    monkeypatch.setattr(fingerprint, "_file_digest", digest)


@pytest.mark.parametrize("source", ["demo/ppo.py", "recorder.py"])
def test_builtin_fingerprint_covers_demo_and_recorder(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = parse_spec("builtin:reference")
    before = subject_fingerprint(spec)
    _edited(monkeypatch, paths.PACKAGE_DIR / source)
    assert subject_fingerprint(spec) != before


@pytest.mark.parametrize(
    "source",
    ["adapters/sb3/loss.py", "adapters/sb3/subject.py", "adapters/configs.py", "safeload.py", "recorder.py"],
)
def test_sb3_fingerprint_covers_the_adapter_code(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = parse_spec(f"sb3:{SB3_SETUP}")
    before = subject_fingerprint(spec)
    assert before == subject_fingerprint(spec)
    _edited(monkeypatch, paths.PACKAGE_DIR / source)
    assert subject_fingerprint(spec) != before


def test_sb3_fingerprint_covers_the_installed_sb3_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    spec = parse_spec(f"sb3:{SB3_SETUP}")
    details = fingerprint_details(spec)["code"]
    assert details["stable_baselines3"] == metadata.version("stable-baselines3")
    before = subject_fingerprint(spec)
    real = metadata.version
    monkeypatch.setattr(
        metadata, "version", lambda name: "0.0.1" if name == "stable-baselines3" else real(name)
    )
    assert fingerprint_details(spec)["code"]["stable_baselines3"] == "0.0.1"
    assert subject_fingerprint(spec) != before


# --- results and metadata --------------------------------------------------------------------------------


def test_probe_result_accessors(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)

    def produce(out: Path) -> None:
        atomic_write_json(out / "tree.json", {"layers": 2})
        np.savez(out / "w.npz", a=np.arange(3))
        _result_json(out, {})

    result = store.compute("fp", "m:p", 1, {}, produce)
    assert result.json("tree") == {"layers": 2} == result.json("tree.json")
    assert result.npz("w")["a"].tolist() == [0, 1, 2]
    assert result.path("w.npz").is_file()
    with pytest.raises(FileNotFoundError, match=r"wrote no 'x.pt'.*result.json, tree.json, w.npz"):
        result.path("x.pt")
    failed = ProbeResult("candidate", "s", "m:p", {}, ok=False, error=ProbeError("crash", "died"))
    with pytest.raises(ProbeError, match="died"):
        failed.json("tree")
    skipped = ProbeResult("baseline", "s", "m:p", {}, ok=False, missing=["make_env"])
    with pytest.raises(FileNotFoundError, match="lacks make_env"):
        skipped.path("x")


def test_capabilities_are_remembered_per_fingerprint(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    spec = parse_spec("builtin:reference")
    assert store.capabilities("fp") is None
    store.save_subject("fp", spec, details={"spec": spec.text})
    assert store.capabilities("fp") is None  # written, but never loaded: still unknown
    store.save_subject("fp", spec, {"config", "train"}, {"pid": 1})
    assert store.capabilities("fp") == {"config", "train"}
    assert json.loads((tmp_path / "fp" / "subject.json").read_text())["details"] == {"spec": spec.text}


def test_busy_says_whether_someone_holds_a_keys_lock(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    key = store.key("fp", "probe", 1, {"seed": 0})
    assert not store.busy(key)  # nobody ever started on it
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with store.lock(key):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(10)
    assert store.busy(key)
    release.set()
    thread.join()
    assert not store.busy(key)


# --- corrupt entries -------------------------------------------------------------------------------------


def _truncate(path: Path) -> None:
    """Cut a file to half its length, as a full disk or a killed copy would."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _artifacts(out: Path) -> None:
    from rlaudit.engine.io import write_table

    write_table(out / "table", {"step": np.arange(50), "value": np.linspace(0.0, 1.0, 50)})
    np.savez(out / "arrays.npz", weights=np.arange(64.0))
    atomic_write_json(out / "meta.json", {"x": list(range(50))})
    _result_json(out, {"x": 1})


@pytest.mark.parametrize("name", ["table.parquet", "arrays.npz", "meta.json", "result.json"])
def test_a_corrupt_cached_file_is_recomputed_once_naming_it(tmp_path: Path, name: str) -> None:
    store = ArtifactStore(tmp_path)
    calls = []

    def produce(out: Path) -> None:
        calls.append(out)
        _artifacts(out)

    first = store.compute("fp", "m:p", 1, {}, produce)
    assert (first.dir / "checksums.json").is_file() and first.notes == []
    _truncate(first.dir / name)
    again = store.compute("fp", "m:p", 1, {}, produce)
    assert len(calls) == 2 and not again.cached
    assert (
        len(again.notes) == 1 and str(first.dir / name) in again.notes[0] and "recomputed" in again.notes[0]
    )
    # the recomputed entry is whole: its artifacts read, and the next call is a plain hit
    assert again.table("table")["step"].tolist() == list(range(50))
    assert again.npz("arrays")["weights"].shape == (64,) and again.json("meta")["x"][-1] == 49
    third = store.compute("fp", "m:p", 1, {}, produce)
    assert len(calls) == 2 and third.cached and third.notes == []


def test_an_edit_that_keeps_the_size_is_caught_by_the_checksum(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    first = store.compute("fp", "m:p", 1, {}, _artifacts)
    meta = first.dir / "meta.json"
    meta.write_text(meta.read_text().replace("49", "48"))  # same length, other content
    assert store.get("fp", "m:p", 1, {}) is None
    assert "meta.json does not match its checksum" in store.invalid[first.dir]


def test_a_workbench_prints_and_keeps_the_note(
    toy_subject: Path, tmp_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import toy_probes

    from rlaudit.engine.workbench import Workbench

    with Workbench(str(toy_subject), str(toy_subject), profile="smoke", jobs=1) as wb:
        first = wb.run_side("candidate", toy_probes.artifacts, x=3)
        assert first.ok and not first.cached
        damaged = next(p for p in first.dir.iterdir() if p.name.startswith("table."))
        _truncate(damaged)
    with Workbench(str(toy_subject), str(toy_subject), profile="smoke", jobs=1) as wb:
        again = wb.run_side("candidate", toy_probes.artifacts, x=3)
        assert again.ok and not again.cached and again.table("table")["value"].tolist() == [0.0, 3.0, 6.0]
        assert len(wb.cache_notes) == 1 and str(damaged) in wb.cache_notes[0]
        assert str(damaged) in capsys.readouterr().out  # a log line in the notebook's output
        assert wb.run_side("candidate", toy_probes.artifacts, x=3).cached and len(wb.cache_notes) == 1


def test_a_check_puts_the_cache_note_on_its_findings_and_page() -> None:
    from types import SimpleNamespace

    from rlaudit.checks import Check, check
    from rlaudit.findings import Severity, Status

    wb = SimpleNamespace(cache_notes=["candidate: earlier note"], profile=SimpleNamespace(name="smoke"))

    def needs(wb: SimpleNamespace) -> None:
        wb.cache_notes.append("candidate: The cached result of m:p was invalid (/c/t.parquet: ...)")

    @check("config/test-cache-note", needs=needs)
    def noted(c: Check, evidence: None) -> object:
        """The cache note reaches the finding."""
        return c.finding(Status.CLEARED, Severity.INFO, summary="fine")

    section = noted(wb)
    assert section.notes == ["candidate: The cached result of m:p was invalid (/c/t.parquet: ...)"]
    assert section.findings[0].evidence.details["cache_notes"] == section.notes


@pytest.mark.parametrize("name", ["table.parquet", "arrays.npz", "meta.json"])
def test_reading_a_damaged_artifact_names_the_file(tmp_path: Path, name: str) -> None:
    from rlaudit.engine.io import ArtifactReadError
    from rlaudit.findings import Finding

    store = ArtifactStore(tmp_path)
    result = store.compute("fp", "m:p", 1, {}, _artifacts)
    _truncate(result.dir / name)  # damaged after the entry was verified: the read itself must say which file
    read = {"table.parquet": result.table, "arrays.npz": result.npz, "meta.json": result.json}[name]
    with pytest.raises(ArtifactReadError, match=re.escape(str(result.dir / name))) as caught:
        read(name.split(".")[0])
    finding = Finding.error("x/y", "config", "h", "audit", caught.value)
    assert str(result.dir / name) in finding.remediation and "timeout" not in finding.remediation
    assert "BadZipFile" in str(caught.value) if name.endswith(".npz") else True


# --- fingerprints: large trees, files the subject reads, the report's own output ------------------------


def _age(root: Path, seconds: float = 60.0) -> None:
    """Date every file under ``root`` back, as files of a real project are (fresh ones are not indexed)."""
    past = time.time() - seconds
    for path in root.rglob("*"):
        os.utime(path, (past, past))


def test_a_large_tree_has_no_file_cap_and_is_indexed(
    tmp_path: Path, toy_subject: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = toy_subject.parent
    (project / "src").mkdir()
    trainer = project / "src" / "trainer.py"  # walked after logs/: past a cap of 5,000 files
    trainer.write_text("VF_COEF = 0.5\n")
    logs = project / "logs"
    logs.mkdir()
    for i in range(5001):
        (logs / f"{i:05d}.json").write_text(f'{{"step": {i}}}')
    _age(project)
    spec = parse_spec(str(toy_subject))
    first = subject_fingerprint(spec)
    assert fingerprint_details(spec)["code"]["files"]["n_files"] == 5003  # subject, trainer, 5,001 logs
    # warm: nothing is read again; the index in the cache answers by size and mtime
    reads: list[str | Path] = []
    real = fingerprint._content_digest

    def counting(path: str | Path) -> str:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(fingerprint, "_content_digest", counting)
    assert subject_fingerprint(spec) == first and reads == []
    trainer.write_text("VF_COEF = 0.9\n")
    edited = subject_fingerprint(spec)
    assert edited != first and reads == [str(trainer.resolve())]  # only the edited file is read again
    # the same content again gives the same fingerprint
    trainer.write_text("VF_COEF = 0.5\n")
    assert subject_fingerprint(spec) == first


_READS_CONFIG = """
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def config() -> dict:
    # a machine-local override, ignored by git, read when the config is resolved
    text = (HERE / "local.yaml").read_text()
    return {"lr": float(text.split(":")[1]), "hidden": [8], "env": {"size": 3}}
"""


def test_a_gitignored_file_read_by_config_is_part_of_the_fingerprint(tmp_path: Path, tmp_cache: Path) -> None:
    import toy_probes

    from rlaudit.engine.workbench import Workbench

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "subject.py").write_text(_READS_CONFIG)
    (repo / "local.yaml").write_text("lr: 0.1\n")
    (repo / ".gitignore").write_text("local.yaml\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    subject = str(repo / "subject.py")

    def run() -> tuple[str, ProbeResult]:
        with Workbench(subject, subject, profile="smoke", jobs=1) as wb:
            return wb.fingerprints["candidate"], wb.run_side("candidate", toy_probes.echo)

    first, computed = run()
    assert computed.ok and computed.result["lr"] == 0.1 and not computed.cached
    recorded = json.loads((tmp_cache / first / "subject.json").read_text())["reads"]
    assert str(repo / "local.yaml") in recorded  # the worker saw config() open it
    again, cached = run()
    assert again == first and cached.cached  # nothing changed: the cache is reused
    (repo / "local.yaml").write_text("lr: 0.7\n")
    edited, recomputed = run()
    assert edited != first and not recomputed.cached and recomputed.result["lr"] == 0.7
    (repo / "local.yaml").write_text("lr: 0.1\n")
    back, reused = run()
    assert back == first and reused.cached and reused.result["lr"] == 0.1


_READS_LEVEL = """
from pathlib import Path

LEVEL = Path(__file__).resolve().parent / "levels" / "start.txt"


def config() -> dict:
    return {"lr": 0.1}


class _Fixed:
    def __init__(self, start: int) -> None:
        self.start = start

    def reset(self) -> int:
        return self.start


def make_env(config: dict, seed: int) -> _Fixed:
    return _Fixed(int(LEVEL.read_text()))  # a data file, not code: only the worker's record knows it
"""


def test_a_file_read_by_make_env_is_part_of_the_fingerprint(tmp_path: Path, tmp_cache: Path) -> None:
    import toy_probes

    from rlaudit.engine.workbench import Workbench

    project = tmp_path / "levels_subject"
    (project / "levels").mkdir(parents=True)
    (project / "subject.py").write_text(_READS_LEVEL)
    (project / "levels" / "start.txt").write_text("3")
    subject = str(project / "subject.py")

    def run() -> tuple[str, ProbeResult]:
        with Workbench(subject, subject, profile="smoke", jobs=1) as wb:
            return wb.fingerprints["candidate"], wb.run_side("candidate", toy_probes.first_observation)

    first, computed = run()
    assert computed.ok and computed.result["obs"] == 3
    again, cached = run()
    assert again == first and cached.cached
    (project / "levels" / "start.txt").write_text("5")
    edited, recomputed = run()
    assert edited != first and not recomputed.cached and recomputed.result["obs"] == 5


def test_the_worker_records_what_it_reads_not_what_it_writes(tmp_path: Path) -> None:
    from rlaudit.engine import worker

    config, output = tmp_path / "local.yaml", tmp_path / "out.txt"
    config.write_text("a: 1\n")
    with worker._recording_reads() as reads:
        config.read_text()
        output.write_text("x")
        output.read_text()  # written by the process itself: not an input
        import json as _json  # noqa: F401  (already imported: opens nothing)

        (Path(np.__file__).parent / "version.py").read_text()  # an installed package: not the subject's
        os.close(os.open(tmp_path / "missing.yaml", os.O_RDONLY | os.O_CREAT))
        missing = tmp_path / "optional.yaml"
        with pytest.raises(FileNotFoundError):
            missing.read_text()
    config.read_text()  # after the recording: not recorded
    assert reads.files() == [str(config), str(missing)]


@pytest.mark.parametrize("in_git", [False, True])
def test_the_report_being_written_is_not_fingerprinted(
    tmp_path: Path, toy_subject: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch, in_git: bool
) -> None:
    from rlaudit.engine.fingerprint import EXCLUDE_VARIABLE

    project = toy_subject.parent
    if in_git:
        _git(project, "init", "-q")
        _git(project, "add", "-A")
        _git(project, "commit", "-q", "-m", "base")
    out = project / "report"
    spec = parse_spec(str(toy_subject))
    monkeypatch.setenv(EXCLUDE_VARIABLE, str(out))
    before = subject_fingerprint(spec)
    assert ("git" in fingerprint_details(spec)["code"]) is in_git  # git's view, not a fallback walk
    (out / "findings").mkdir(parents=True)
    (out / "findings" / "01_agents.json").write_text("{}")
    (out / "costs.json").write_text("{}")
    assert subject_fingerprint(spec) == before
    monkeypatch.delenv(EXCLUDE_VARIABLE)
    assert subject_fingerprint(spec) != before  # the same files, not excluded, would count


def test_a_report_passes_its_out_to_the_notebooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from rlaudit.engine.fingerprint import EXCLUDE_VARIABLE
    from rlaudit.report import commands

    seen: list[str] = []

    def fake_execute(run: object, parameters: object, cwd: object, env: dict, lanes: object = None) -> object:
        seen.append(env.get(EXCLUDE_VARIABLE, ""))
        run.returncode, run.seconds, run.cpu_seconds = 0, 0.0, 0.0  # type: ignore[attr-defined]
        return run

    monkeypatch.setattr(commands, "execute", fake_execute)
    monkeypatch.setattr(commands, "shared_kernels", lambda: False)
    monkeypatch.setattr(commands, "settle", lambda run, parameters: None)
    monkeypatch.setattr(commands, "render", lambda run: None)
    monkeypatch.setattr(commands, "write_index", lambda *a, **k: tmp_path / "index.html")
    out = tmp_path / "subject" / "report"
    args = argparse.Namespace(
        baseline="builtin:reference", candidate="builtin:reference", pair="", profile="smoke", fresh=False,
        jobs=1, executor="local", ray_address="auto", out=str(out), notebooks="01_agents",
    )  # fmt: skip
    with contextlib.suppress(Exception):
        commands.run_report(args)
    assert seen and all(str(out.resolve()) in value.split(os.pathsep) for value in seen)
