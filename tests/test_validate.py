"""Bad input fails fast: ``rlaudit report`` and ``rlaudit audit`` reject it before any notebook or training.

Every case runs the real command line (:func:`rlaudit.cli.main`) with the notebook runner and the worker
start replaced by tripwires, so a test fails if anything would have started; each asserts exit code 2, a
message that names the input, no traceback, and a few seconds of wall time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rlaudit import cli
from rlaudit.engine import validate
from rlaudit.engine.io import write_table
from rlaudit.engine.validate import InputError

# Generous: nothing here trains; the slowest case imports stable-baselines3 to read a setup file.
FAST = 30.0
SB3_EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "examples" / "sb3" / "ppo_cartpole.yaml"


class Started(AssertionError):
    """A notebook or worker started, though the input was bad."""


@pytest.fixture
def tripwires(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No notebook and no worker may start; a private cache and a clean RLAUDIT_* environment."""
    from rlaudit.engine import client as worker_client
    from rlaudit.report import commands

    def execute(*args: object, **kwargs: object) -> None:
        raise Started("a notebook started")

    def start(self: object) -> None:
        raise Started("a worker started")

    monkeypatch.setattr(commands, "execute", execute)
    monkeypatch.setattr(worker_client.WorkerClient, "start", start)
    for name in list(os.environ):
        if name.startswith("RLAUDIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RLAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rejected(capsys: pytest.CaptureFixture, *argv: str) -> str:
    """Run ``rlaudit ARGV``; assert it fails fast with exit code 2 and one message; return the message."""
    started = time.monotonic()
    code = cli.main(list(argv))
    seconds = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2, err
    assert seconds < FAST, f"took {seconds:.1f} s"
    assert "Traceback" not in err and err.startswith(f"rlaudit {argv[0]}: "), err
    return err


def report(tmp: Path, *extra: str) -> tuple[str, ...]:
    return ("report", "--profile", "smoke", "--out", str(tmp / "report"), "--notebooks", "01_agents", *extra)


def test_a_missing_subject_file_is_rejected_by_report_as_by_audit(
    tripwires: Path, capsys: pytest.CaptureFixture
) -> None:
    for argv in (
        report(tripwires, "--baseline", "nowhere/subject.py"),
        ("audit", "--baseline", "nowhere/subject.py", "--json", str(tripwires / "a.json")),
    ):
        err = rejected(capsys, *argv)
        assert "--baseline" in err and "nowhere/subject.py" in err and "rlaudit new-subject" in err
    assert not (tripwires / "report").exists()


def test_an_unknown_scheme_names_the_side(tripwires: Path, capsys: pytest.CaptureFixture) -> None:
    err = rejected(capsys, *report(tripwires, "--candidate", "bultin:regressed"))
    assert "--candidate" in err and "no module 'bultin'" in err and "Did you mean builtin:regressed?" in err


def test_a_malformed_sb3_yaml_is_found_before_any_worker(
    tripwires: Path, capsys: pytest.CaptureFixture
) -> None:
    setup = tripwires / "setups" / "bad.yaml"
    setup.parent.mkdir()
    setup.write_text("algo: ppo\nenv_id: [CartPole\n")
    err = rejected(capsys, *report(tripwires, "--baseline", f"sb3:{setup}"))
    assert str(setup) in err and "not valid YAML" in err and "fix the file" in err


def test_an_unknown_sb3_key_is_found_before_any_worker(
    tripwires: Path, capsys: pytest.CaptureFixture
) -> None:
    pytest.importorskip("stable_baselines3")
    setup = tripwires / "setups" / "typo.yaml"
    setup.parent.mkdir()
    setup.write_text("algo: ppo\nenv_id: CartPole-v1\nn_stepz: 64\n")
    err = rejected(capsys, *report(tripwires, "--candidate", f"sb3:{setup}"))
    assert str(setup) in err and "'n_stepz'" in err and "did you mean 'n_steps'" in err


def test_a_pair_file_that_is_missing_or_malformed(tripwires: Path, capsys: pytest.CaptureFixture) -> None:
    err = rejected(capsys, *report(tripwires, "--pair", "nowhere.yaml"))
    assert "pair file nowhere.yaml does not exist" in err
    pair = tripwires / "pair.yaml"
    pair.write_text("baseline: builtin:reference\n")
    err = rejected(capsys, *report(tripwires, "--pair", str(pair)))
    assert str(pair) in err and "candidate" in err


@pytest.mark.parametrize(
    ("variants", "named"),
    [
        ("=,,foo==bar, x=", "item 1 of 4 '=' has no name"),
        ("fix=builtin:reference,,x=builtin:regressed", "item 2 of 3 is empty"),
        ("foo==bar", "'foo==bar' has more than one '='"),
        ("x=", "'x=' has no subject spec"),
        ("a@nowhere=builtin:reference", "unknown subsystem 'nowhere'"),
        ("a=builtin:reference, a=builtin:regressed", "the name 'a' is already taken"),
        ("fix=nowhere/subject.py", "--variants item 'fix=nowhere/subject.py'"),
    ],
)
def test_bad_variants_name_the_item(
    variants: str, named: str, tripwires: Path, capsys: pytest.CaptureFixture
) -> None:
    err = rejected(capsys, *report(tripwires, "--variants", variants))
    assert named in err and "--variants" in err


def test_variants_that_parse_keep_their_names_and_subsystems() -> None:
    parsed = validate.parse_variants(" fix gae@loss=builtin:reference , builtin:regressed, git:../p@abc1")
    assert [(v.name, v.subsystem, v.spec) for v in parsed] == [
        ("fix gae", "loss", "builtin:reference"),
        ("builtin:regressed", "", "builtin:regressed"),
        ("git:../p@abc1", "", "git:../p@abc1"),
    ]
    assert validate.parse_variants("  ") == []


def test_out_that_is_a_file_unwritable_or_inside_a_subject(
    tripwires: Path, capsys: pytest.CaptureFixture
) -> None:
    afile = tripwires / "afile"
    afile.write_text("")
    err = rejected(capsys, "report", "--out", str(afile), "--notebooks", "01_agents")
    assert f"--out {afile} is a file" in err
    err = rejected(capsys, "report", "--out", str(afile / "below"), "--notebooks", "01_agents")
    assert f"--out {afile / 'below'} cannot be written" in err
    subject = tripwires / "proj" / "subject.py"
    subject.parent.mkdir()
    subject.write_text("def config():\n    return {}\n")
    inside = subject.parent / "reports"
    err = rejected(
        capsys, "report", "--baseline", str(subject), "--out", str(inside), "--notebooks", "01_agents"
    )
    assert f"--out {inside} is inside the directory of a subject ({subject.parent})" in err
    assert not inside.exists()


def test_audit_json_that_is_a_directory_or_unwritable(tripwires: Path, capsys: pytest.CaptureFixture) -> None:
    err = rejected(capsys, "audit", "--json", str(tripwires))
    assert f"--json {tripwires} is a directory" in err
    afile = tripwires / "afile"
    afile.write_text("")
    err = rejected(capsys, "audit", "--json", str(afile / "a.json"))
    assert f"--json {afile / 'a.json'}: its directory cannot be written" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_out_in_a_read_only_directory(tripwires: Path, capsys: pytest.CaptureFixture) -> None:
    locked = tripwires / "locked"
    locked.mkdir(mode=0o500)
    err = rejected(capsys, "report", "--out", str(locked / "r"), "--notebooks", "01_agents")
    assert "cannot be written" in err


@pytest.mark.parametrize(
    ("name", "value", "expects"),
    [
        ("RLAUDIT_PROBE_TIMEOUT", "abc", "a number >= 1"),
        ("RLAUDIT_JOBS", "2.5", "a whole number >= 1"),
        ("RLAUDIT_JOBS", "0", "a whole number >= 1"),
        ("RLAUDIT_WORKER_MEMORY_MB", "lots", "a number >= 0"),
        ("RLAUDIT_TORCH_THREADS", "-1", "a whole number >= 1"),
        ("RLAUDIT_FRESH_SINCE", "yesterday", "a number"),
        ("RLAUDIT_PROGRESS", "maybe", "1 or 0"),
        ("RLAUDIT_INTERACTIVE", "2", "1 or 0"),
        ("RLAUDIT_EXECUTOR", "slurm", "one of local, processes, ray"),
        ("RLAUDIT_REPORT_KERNELS", "reuse", "one of shared, fresh"),
        ("RLAUDIT_PROFILE", "quick", "one of smoke, standard, thorough"),
        ("RLAUDIT_HOME", "/nonexistent/home", "an existing directory"),
        ("RLAUDIT_CACHE", "__file__", "a directory, not a file"),
    ],
)
def test_every_rlaudit_setting_is_named_in_its_error(
    name: str,
    value: str,
    expects: str,
    tripwires: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if value == "__file__":
        value = str(tripwires / "afile")
        Path(value).write_text("")
    monkeypatch.setenv(name, value)
    argv = report(tripwires) if name != "RLAUDIT_HOME" else ("audit", "--json", str(tripwires / "a.json"))
    err = rejected(capsys, *argv)
    assert f"{name}={value!r}: expected {expects}" in err and "unset it" in err


def test_the_library_reads_settings_through_the_helper_that_names_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rlaudit.engine.client import WorkerClient
    from rlaudit.engine.executor import progress_enabled

    monkeypatch.setenv("RLAUDIT_PROGRESS", "sometimes")
    with pytest.raises(InputError, match="RLAUDIT_PROGRESS='sometimes'"):
        progress_enabled()
    monkeypatch.setenv("RLAUDIT_WORKER_MEMORY_MB", "abc")
    with pytest.raises(InputError, match="RLAUDIT_WORKER_MEMORY_MB='abc': expected a number"):
        WorkerClient("builtin:reference", "/tmp")
    monkeypatch.setenv("RLAUDIT_WORKER_MEMORY_MB", "0")  # 0 means no cap, as before
    assert WorkerClient("builtin:reference", "/tmp").memory_mb is None
    assert validate.env_flag("X", {"X": " On "}) is True and validate.env_number("RLAUDIT_JOBS", {}) is None


def test_an_unknown_metric_names_the_declared_ones_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one check that starts workers: they read the declarations (a cached probe), and train nothing."""
    from rlaudit.report import commands

    def execute(*args: object, **kwargs: object) -> None:
        raise Started("a notebook started")

    monkeypatch.setattr(commands, "execute", execute)
    monkeypatch.setenv("RLAUDIT_CACHE", str(tmp_path / "cache"))
    err = rejected(capsys, *report(tmp_path, "--metric", "no.such.metric"))
    assert "--metric no.such.metric" in err and "declare heart.get, return in metrics()" in err
    probes = {p.name for p in (tmp_path / "cache").glob("*/*") if p.is_dir() and p.name != "logs"}
    assert probes == {"rlaudit.metrics.declared"}  # nothing trained


class _Bench:
    """What :func:`validate.check_metric` reads from a workbench."""

    def __init__(self, cache: Path, declared: dict) -> None:
        self.cache = type("Store", (), {"root": cache})()
        self.fingerprints = {"baseline": "fpa", "candidate": "fpb"}
        self.declared = declared

    def _declared(self) -> dict:
        return self.declared


def test_a_metric_is_checked_against_what_cached_runs_recorded(tmp_path: Path) -> None:
    bench = _Bench(tmp_path, {})
    # Nothing declared and nothing run yet: it cannot be checked, and says so; the return is the default.
    assert "cannot be checked yet" in validate.check_metric("score", bench)
    assert validate.check_metric("return", bench) == ""
    run = tmp_path / "fpa" / "rlaudit.trainer.probes.train" / "v1-abc" / "run"
    run.mkdir(parents=True)
    (run / "summary.json").write_text("{}")
    write_table(run / "episodes", {"step": np.arange(3), "env": np.zeros(3), "return": np.ones(3)})
    write_table(
        run / "scalars",
        {"step": np.arange(2), "name": np.array(["losses/value_loss"] * 2), "value": np.ones(2)},
    )
    assert validate.check_metric("losses/value_loss:lower", bench) == ""
    assert validate.check_metric("value_loss", bench) == ""  # as the runs read it: a scalar's last part
    with pytest.raises(InputError, match=r"recorded return, losses/value_loss\. Pass one of these"):
        validate.check_metric("retrun", bench)
    with pytest.raises(InputError, match="has no name"):
        validate.check_metric(":lower", bench)


def test_the_memory_cap_is_named_beside_the_failures_it_causes() -> None:
    torch_oom = (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
        "memory: you tried to allocate 8589934592 bytes. Error code 12 (Cannot allocate memory)"
    )
    hint = validate.memory_cap_hint(torch_oom, 3000)
    assert (
        "RLAUDIT_WORKER_MEMORY_MB=3000 MiB is the likely cause" in hint
        and "RLAUDIT_WORKER_MEMORY_MB=8192" in hint
    )
    assert "likely cause" in validate.memory_cap_hint(
        "ImportError: libtorch_cpu.so: failed to map segment", 300
    )
    assert validate.memory_cap_hint(torch_oom, None) == "" or os.environ.get("RLAUDIT_WORKER_MEMORY_MB")
    assert validate.memory_cap_hint("KeyError: 'lr'", 3000) == ""  # not a memory failure
    assert validate.memory_cap_hint(torch_oom, 0.0) == ""  # no cap


def test_a_cap_too_low_for_torch_names_the_cap(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from rlaudit.engine.client import WorkerClient
    from rlaudit.engine.subjects import parse_spec
    from rlaudit.engine.worker import ProbeError

    subject = tmp_path / "torchy" / "subject.py"
    subject.parent.mkdir()
    subject.write_text("import torch  # noqa: F401\n\n\ndef config():\n    return {}\n")
    worker = WorkerClient(parse_spec(str(subject)), tmp_path / "logs", timeout=30, memory_mb=300)
    try:
        worker.start()
        error = worker.load_error
        assert isinstance(error, ProbeError), worker.info
        # torch could not even map its library: the error says the cap did it, its value, and how to raise it
        assert error.kind == "oom" and "RLAUDIT_WORKER_MEMORY_MB=300 MiB is the likely cause" in error.message
        assert "Raise it" in error.message
    finally:
        worker.close()


DIES_ONCE = """import os
from pathlib import Path

_marker = Path(__file__).with_name("died")
if not _marker.exists():
    _marker.write_text("")
    os._exit(7)  # the first worker dies while loading the subject; later ones load


def config():
    return {}


def metrics():
    return [{"name": "score", "direction": "higher", "source": "episode", "primary": True}]
"""


def test_a_worker_that_dies_while_loading_is_an_error_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a note beside a fallback metric (the episodic return, not the declared score): every check that
    needs the metric reports the death as an ERROR."""
    from rlaudit import checks
    from rlaudit.engine.workbench import Workbench
    from rlaudit.engine.worker import ProbeError

    monkeypatch.setenv("RLAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(checks, "REGISTRY", dict(checks.REGISTRY))  # the check below is this test's only
    subject = tmp_path / "flaky" / "subject.py"
    subject.parent.mkdir()
    subject.write_text(DIES_ONCE)

    @checks.check("trainer/uses-the-metric")
    def uses_the_metric(c: checks.Check) -> None:
        """The candidate's {metric} holds up."""
        raise AssertionError(f"the metric resolved to {c.wb.metric}")

    with Workbench(str(subject), "builtin:reference", profile="smoke", jobs=1) as wb:
        with pytest.raises(ProbeError, match=r"baseline's declarations .* could not be read") as info:
            wb.metric  # noqa: B018
        assert info.value.kind == "crash" and "exited with code 7" in info.value.message
        assert wb.metric_notes == []
        (finding,) = uses_the_metric(wb).findings
    assert finding.status.value == "ERROR" and "could not be read" in finding.evidence.summary
    assert finding.hypothesis == "The candidate's the primary metric holds up"
    with Workbench(str(subject), "builtin:reference", profile="smoke", jobs=1) as wb:
        assert wb.metric.name == "score"  # the subject loads now: its own declaration, not a fallback


def test_the_command_line_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    """The installed command, end to end: no traceback, exit code 2, in seconds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLAUDIT_")}
    env["RLAUDIT_CACHE"] = str(tmp_path / "cache")
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlaudit.cli",
            "report",
            "--baseline",
            "nowhere/subject.py",
            "--out",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert time.monotonic() - started < FAST
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr.count("\n") == 1
        and "nowhere/subject.py" in done.stderr
        and "Traceback" not in done.stderr
    )


def test_a_metric_no_run_recorded_is_an_error_naming_what_they_did(tmp_path: Path) -> None:
    """Found only after the first run (nothing declared to check it against before): an ERROR that lists
    the recorded names, not a SKIPPED telling the subject to log a misspelled name."""
    from rlaudit.metrics import Metric
    from rlaudit.trainer import learning
    from support.runs import bench, evidence, fake_run

    runs = [fake_run(tmp_path, seed=s, metric=[1.0] * 8, metric_name="return") for s in range(2)]
    typo = Metric("retrun", primary=True, origin="override")
    (finding,) = learning.learning(bench(typo), given=evidence(runs, runs)).findings
    assert finding.status.value == "ERROR"
    assert "--metric retrun: no training run of either side recorded it" in finding.evidence.summary
    assert "recorded return" in finding.evidence.summary
    declared = Metric("retrun", primary=True, origin="declared")  # the subject's own: a gap it must fill
    (finding,) = learning.learning(bench(declared), given=evidence(runs, runs)).findings
    assert finding.status.value == "SKIPPED"
    assert "came from --metric" in typo.how_to_report and "came from" not in declared.how_to_report


def test_a_subject_that_fails_to_load_is_an_error_not_missing_capabilities(
    broken_subject: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load failure is not a subject without ``load_checkpoint``: the checkpoint checks report an ERROR."""
    from rlaudit.checkpointing import sources
    from rlaudit.checkpointing.loading import loading
    from rlaudit.engine.workbench import Workbench
    from rlaudit.engine.worker import ProbeError

    monkeypatch.setenv("RLAUDIT_CACHE", str(tmp_path / "cache"))
    with Workbench("builtin:reference", str(broken_subject), profile="smoke", jobs=1) as wb:
        with pytest.raises(ProbeError, match=r"candidate: subject .* failed to load"):
            sources.capabilities(wb)
        (finding,) = loading(wb).findings
    assert finding.status.value == "ERROR" and "rlaudit_no_such_module_for_tests" in finding.evidence.summary
