"""Per-subject virtual environments built from a requirements file (rlaudit.adapters.venv).

The environments here see the test interpreter's packages (``system_site_packages=True``) and install with
``--no-index``, so nothing is downloaded and torch is never installed again (the requirements pin the
torch version that is already there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from rlaudit.adapters.venv import MARKER, VenvBuildError, ensure_venv, interpreter_for
from rlaudit.engine.subjects import parse_spec

TORCH_PIN = f"torch=={torch.__version__.split('+')[0]}"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("venv-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLAUDIT_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def requirements(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reqs") / "requirements.txt"
    path.write_text(f"--no-index\nnumpy\n{TORCH_PIN}\ngymnasium\n")
    return path


@pytest.fixture(scope="module")
def venv_python(cache: Path, requirements: Path) -> Path:
    return ensure_venv(requirements, None, system_site_packages=True)


def _run(python: Path, code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_venv_built_under_the_cache_and_sees_the_installed_torch(venv_python: Path, cache: Path) -> None:
    venv = venv_python.parent.parent
    assert venv.parent == cache / "venvs"
    marker = json.loads((venv / MARKER).read_text())
    assert marker["system_site_packages"] is True and marker["python_version"] == ".".join(
        map(str, sys.version_info[:3])
    )
    info = json.loads(
        _run(
            venv_python,
            "import json, sys, torch; print(json.dumps([sys.prefix, torch.__version__, torch.__file__]))",
        )
    )
    assert Path(info[0]) == venv  # a separate environment ...
    assert info[1] == torch.__version__  # ... with the same torch, not a second copy:
    assert not str(Path(info[2]).resolve()).startswith(str(venv.resolve()))


def test_reused_not_rebuilt(venv_python: Path, requirements: Path) -> None:
    marker = venv_python.parent.parent / MARKER
    before = marker.stat().st_mtime_ns
    assert ensure_venv(requirements, None, system_site_packages=True) == venv_python
    assert marker.stat().st_mtime_ns == before
    # a spec naming the requirements file resolves to the same interpreter
    spec = type("Spec", (), {"requirements": str(requirements), "python": "", "system_site_packages": True})()
    assert interpreter_for(spec) == str(venv_python)


def test_worker_runs_in_the_subject_environment(venv_python: Path, toy_subject: Path, tmp_path: Path) -> None:
    from rlaudit.engine.client import WorkerClient

    spec = parse_spec(str(toy_subject), python=str(venv_python))
    with WorkerClient(spec, tmp_path / "logs", timeout=300) as client:
        info = client.start()
        assert client.load_error is None, client.load_error
        assert Path(info["executable"]) == venv_python  # rlaudit came in through PYTHONPATH, not installed
        assert client.capabilities


def test_subject_failing_to_import_in_its_venv(venv_python: Path, tmp_path: Path) -> None:
    from rlaudit.engine.client import WorkerClient

    subject = tmp_path / "needs_more" / "subject.py"
    subject.parent.mkdir()
    subject.write_text("import rlaudit_test_package_that_is_not_installed\n\ndef config():\n    return {}\n")
    with WorkerClient(
        parse_spec(str(subject), python=str(venv_python)), tmp_path / "logs", timeout=300
    ) as client:
        client.start()
        error = client.load_error
        assert error is not None and error.kind == "import"
        assert "rlaudit_test_package_that_is_not_installed" in str(error) and str(venv_python) in str(error)


def test_failed_build_gives_the_pip_tail_and_leaves_nothing(cache: Path, tmp_path: Path) -> None:
    bad = tmp_path / "requirements.txt"
    bad.write_text("--no-index\nrlaudit-no-such-package==1.0\n")
    with pytest.raises(VenvBuildError) as info:
        ensure_venv(bad, None, system_site_packages=True)
    message = str(info.value)
    assert "pip could not install" in message and str(bad.resolve()) in message
    assert "rlaudit-no-such-package" in message and "No matching distribution" in message
    leftovers = [p for p in (cache / "venvs").iterdir() if p.is_dir()]
    assert all((p / MARKER).is_file() for p in leftovers)  # only the good environment is there


def test_environment_without_probe_modules_is_refused(cache: Path, tmp_path: Path) -> None:
    empty = tmp_path / "requirements.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(
        VenvBuildError, match=r"cannot import what rlaudit's probes need: numpy .*torch=="
    ) as info:
        ensure_venv(empty, None, system_site_packages=False)
    assert "gymnasium" in str(info.value)


def test_missing_requirements_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"requirements file .* not found"):
        ensure_venv(tmp_path / "absent.txt")


# -- requirements: in specs and pair files, through the worker and the workbench -----------------------------


def test_pair_file_requirements_run_the_worker_in_the_built_venv(
    cache: Path, toy_subject: Path, tmp_path: Path
) -> None:
    """End to end: a pair file names a requirements file; the baseline's probes run in the venv built from it."""
    import toy_probes as tp

    from rlaudit.engine.workbench import Workbench

    (tmp_path / "envs").mkdir()
    requirements = tmp_path / "envs" / "requirements.txt"
    # nothing to install (so nothing is downloaded): the environment sees this interpreter's packages
    requirements.write_text("# numpy, torch and gymnasium come from the base interpreter\n")
    pair = tmp_path / "pair.yaml"
    pair.write_text(
        f"baseline: {{spec: {toy_subject}, requirements: envs/requirements.txt, system_site_packages: true}}\n"
        f"candidate: {{spec: {toy_subject}}}\n"
    )
    with Workbench("", "", profile="smoke", pair_file=str(pair), jobs=1) as wb:
        assert wb.fingerprints["baseline"] != wb.fingerprints["candidate"]  # the environment is part of it
        result = wb.run(tp.interpreter)
        assert result.baseline.ok and result.candidate.ok, (result.baseline.error, result.candidate.error)
    worker_python = Path(result.baseline.result["executable"])
    venv = worker_python.parent.parent
    assert venv.parent == cache / "venvs" and worker_python == venv / "bin" / "python"
    marker = json.loads((venv / MARKER).read_text())
    assert marker["requirements"] == str(requirements.resolve()) and marker["system_site_packages"] is True
    # built once: asking again gives the same environment, untouched
    built = (venv / MARKER).stat().st_mtime_ns
    assert ensure_venv(requirements, None, system_site_packages=True) == worker_python
    assert (venv / MARKER).stat().st_mtime_ns == built
    assert Path(result.candidate.result["executable"]) == Path(sys.executable)


def test_missing_requirements_file_is_that_subjects_error_only(
    cache: Path, toy_subject: Path, tmp_path: Path
) -> None:
    import toy_probes as tp

    from rlaudit.engine.workbench import Workbench
    from rlaudit.findings import Status

    pair = tmp_path / "pair.yaml"
    pair.write_text(
        f"baseline: {{spec: {toy_subject}, requirements: absent.txt}}\ncandidate: {{spec: {toy_subject}}}\n"
    )
    with Workbench("", "", profile="smoke", pair_file=str(pair), jobs=1) as wb:
        result = wb.run(tp.interpreter)
        later = wb.run_side("baseline", tp.echo)
    assert result.candidate.ok  # the other side still runs
    error = result.baseline.error
    assert error is not None and error.kind == "import"
    message = str(error)
    assert str(tmp_path / "absent.txt") in message and "not found" in message and str(toy_subject) in message
    assert later.error is not None and "absent.txt" in str(later.error)
    finding = result.guard("venv/test", "config", "The subjects run")
    assert finding is not None and finding.status == Status.ERROR and "baseline" in finding.evidence.summary


def test_failed_environment_is_kept_not_rebuilt_by_the_client(
    tmp_path: Path, toy_subject: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlaudit.adapters import venv as venv_module
    from rlaudit.engine.client import WorkerClient
    from rlaudit.engine.worker import ProbeError

    attempts = []

    def failing(spec: object) -> str:
        attempts.append(spec)
        raise VenvBuildError("pip could not install requirements.txt: No matching distribution for foo==9")

    monkeypatch.setattr(venv_module, "interpreter_for", failing)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("foo==9\n")
    spec = parse_spec(str(toy_subject), requirements=str(requirements))
    with WorkerClient(spec, tmp_path / "logs", timeout=60) as client:
        client.start()
        assert client.load_error is not None and client.load_error.kind == "import"
        assert "No matching distribution for foo==9" in str(client.load_error)
        assert str(requirements) in str(client.load_error) and not client.alive
        with pytest.raises(ProbeError, match="foo==9"):
            client.call("toy_probes:echo", {}, tmp_path / "out")
        with pytest.raises(ProbeError, match="foo==9"):
            client.ping()
    assert len(attempts) == 1  # the failure is remembered, pip is not run again for every call


def test_interpreter_for_remembers_a_built_environment(
    venv_python: Path, requirements: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from rlaudit.adapters import venv as venv_module

    spec = parse_spec("builtin:reference", requirements=str(requirements), system_site_packages=True)
    assert interpreter_for(spec) == str(venv_python)
    calls = []
    monkeypatch.setattr(venv_module, "ensure_venv", lambda *a, **k: calls.append(a) or venv_python)
    assert interpreter_for(spec) == str(venv_python) and calls == []  # no rebuild, no interpreter probe
    # other requirements content is another environment: asked for again
    changed = tmp_path / "requirements.txt"
    changed.write_text(requirements.read_text() + "# changed\n")
    interpreter_for(spec.replace(requirements=str(changed)))
    assert len(calls) == 1
    # no requirements: the spec's python, or this interpreter
    assert interpreter_for(parse_spec("builtin:reference")) == sys.executable
