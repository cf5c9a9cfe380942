"""Execution settings travel as one typed RunOptions; environment variables only cross process boundaries.

Also: no private (underscore) name of one module is imported by another.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from rlaudit.cli import AuditArgs, ReportArgs, build_parser, main, typed_args
from rlaudit.engine.validate import SETTINGS, InputError
from rlaudit.options import RunOptions

LIB = Path(__file__).resolve().parents[1] / "lib"
PACKAGE = LIB / "rlaudit"

# Where an RLAUDIT_* variable may be named in code, and why each is a boundary.
BOUNDARIES = {
    "rlaudit/options.py": "RunOptions.from_env/environment: a notebook kernel's start, and the CLI's",
    "rlaudit/engine/worker.py": "WorkerSettings: the worker process's start",
    "rlaudit/cli.py": "the command line (RLAUDIT_WORKDIR: where the user typed the command)",
    "rlaudit/engine/validate.py": "the table of settings whose bad values the reading places name",
    "rlaudit/engine/paths.py": "where the project's files live, resolved alike by every process",
    "rlaudit/engine/train.py": "`rlaudit train` re-executing itself once (RLAUDIT_TRAIN_REEXEC)",
    "rlaudit/lab.py": "`rlaudit lab`: the Jupyter server's environment, which every kernel it starts inherits",
    "rlaudit/bench/gpu_check.py": "a script of its own: the cache and memory cap of the workers it starts",
}
# Who may build options from the environment: the session (a kernel's start), a workbench made by hand in a
# kernel or script, and a worker (and the replica processes it starts) reading its own settings.
READERS = {
    "from_env": {
        "rlaudit/notebook.py",
        "rlaudit/engine/workbench.py",
        "rlaudit/engine/worker.py",
        "rlaudit/options.py",
        "rlaudit/lab.py",  # the lab's pair, and the options its server's kernels inherit
        "rlaudit/bench/explore.py",  # a benchmark: a process of its own
    },
    "from_cli": {"rlaudit/cli.py"},
}
ENV_HELPERS = ("env_number", "env_flag", "env_choice", "check_environment")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(LIB).as_posix()


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def variable_names(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every ``RLAUDIT_*`` name in code (not in docstrings) of ``source``."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and re.fullmatch(r"RLAUDIT_[A-Z_]+", node.value)
    ]


def test_only_the_process_boundaries_name_rlaudit_variables() -> None:
    offenders = [
        f"{_name(path)}:{line} {name}"
        for path in _modules()
        if _name(path) not in BOUNDARIES
        for line, name in variable_names(path.read_text())
    ]
    assert offenders == [], "read settings from RunOptions, passed down, not from the environment"


def test_only_the_boundaries_read_settings_from_the_environment() -> None:
    offenders = []
    for path in _modules():
        name = _name(path)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            allowed = READERS.get(called)
            if allowed is not None and name not in allowed:
                offenders.append(f"{name}:{node.lineno} {called}()")
            if called in ENV_HELPERS and name not in BOUNDARIES:
                offenders.append(f"{name}:{node.lineno} {called}()")
    assert offenders == []


def test_the_scan_sees_a_module_that_reads_the_environment() -> None:
    """The scan above finds what it looks for (it is not vacuous)."""
    source = 'import os\n\n\ndef f():\n    """RLAUDIT_JOBS in a docstring is fine."""\n    return os.environ["RLAUDIT_JOBS"]\n'
    assert variable_names(source) == [(6, "RLAUDIT_JOBS")]
    assert variable_names((PACKAGE / "options.py").read_text())  # the boundary names them


FULL = RunOptions(
    jobs=3,
    executor="ray",
    ray_address="ray://head:10001",
    fresh_since=1700000000.25,
    torch_threads=2,
    stall_timeout=45.0,
    cpu_limit=1200.0,
    retry_failed_since=1700000001.5,
    memory_mb=4096.0,
    progress=False,
    interactive=False,
    profile="smoke",
    report_kernels="fresh",
    fingerprint_exclude=("/tmp/a", "/tmp/b"),
    cache_dir="/tmp/cache",
)


def test_options_round_trip_through_a_kernels_environment() -> None:
    env = FULL.environment()
    assert set(env) <= set(SETTINGS) | {"RLAUDIT_RAY_ADDRESS", "RLAUDIT_FINGERPRINT_EXCLUDE"}
    assert RunOptions.from_env(env) == FULL
    assert RunOptions.from_env(RunOptions().environment()) == RunOptions()
    # A child gets exactly these options, not a stale setting of the process that starts it.
    child = RunOptions(jobs=1).child_environment({"RLAUDIT_STALL_TIMEOUT": "9", "PATH": "/bin"})
    assert child == {"PATH": "/bin", "RLAUDIT_JOBS": "1"}


def test_options_round_trip_from_the_command_line() -> None:
    argv = ["report", "--executor", "ray", "--ray-address", "host:6379", "--fresh", "--retry-failed"]
    argv += ["--stall-timeout", "45", "--cpu-limit", "1200", "--profile", "thorough", "-j", "3"]
    args = typed_args(build_parser().parse_args(argv))
    assert isinstance(args, ReportArgs) and args.jobs == 3 and args.profile == "thorough"
    options = RunOptions.from_cli(args, environ={})
    assert (options.executor, options.ray_address) == ("ray", "host:6379")
    assert (options.stall_timeout, options.cpu_limit) == (45.0, 1200.0)
    assert options.fresh_since is not None and options.retry_failed_since is not None
    assert options.profile_name(args.profile) == "thorough"
    assert RunOptions.from_env(options.environment()) == options  # and on into each notebook's kernel
    # The environment under the flags: RLAUDIT_PROFILE wins over --profile, as in every notebook.
    under = RunOptions.from_cli(args, environ={"RLAUDIT_PROFILE": "smoke", "RLAUDIT_JOBS": "4"})
    assert under.profile_name(args.profile) == "smoke" and under.jobs == 4
    audit = typed_args(build_parser().parse_args(["audit", "--json", "x.json", "--subsystems", "loss"]))
    assert isinstance(audit, AuditArgs) and (audit.json_out, audit.subsystems) == ("x.json", "loss")
    assert RunOptions.from_cli(audit, environ={}) == RunOptions()


@pytest.mark.parametrize(
    ("name", "value", "expects"),
    [
        ("RLAUDIT_JOBS", "two", "a whole number >= 1"),
        ("RLAUDIT_STALL_TIMEOUT", "0", "a number >= 1"),
        ("RLAUDIT_PROBE_TIMEOUT", "soon", "a number >= 1"),
        ("RLAUDIT_EXECUTOR", "slurm", "one of local, processes, ray"),
        ("RLAUDIT_PROGRESS", "maybe", "1 or 0"),
    ],
)
def test_a_bad_value_names_its_variable(name: str, value: str, expects: str) -> None:
    with pytest.raises(InputError, match=re.escape(f"{name}={value!r}: expected {expects}")):
        RunOptions.from_env({name: value})


def test_a_bad_flag_or_setting_stops_the_cli_before_anything_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RLAUDIT_WORKDIR", str(tmp_path))  # (the CLI sets it when unset)
    assert main(["report", "--cpu-limit", "-5", "--notebooks", "none"]) == 2
    assert "--cpu-limit -5: expected a positive number of seconds" in capsys.readouterr().err
    monkeypatch.setenv("RLAUDIT_TORCH_THREADS", "many")
    assert main(["audit", "--json", str(tmp_path / "x.json")]) == 2
    assert "RLAUDIT_TORCH_THREADS='many': expected a whole number" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------------
# Private names stay private
# --------------------------------------------------------------------------------------------------------

# Packages not yet held to the rule (none left).
NOT_YET: tuple[str, ...] = ()


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(LIB).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_module(name: str) -> bool:
    """Whether ``name`` is a module of lib/ (found on disk: nothing is imported)."""
    base = LIB.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def private_imports() -> list[str]:
    """``from m import _x`` and ``m._x`` of an rlaudit module ``m`` in another module of lib/rlaudit."""
    found = []
    for path in _modules():
        here = _module_of(path)
        tree = ast.parse(path.read_text())
        modules: dict[str, str] = {}  # local name -> rlaudit module
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").startswith("rlaudit")
            ):
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    if _private(alias.name) and node.module != here and not _is_module(target):
                        found.append(f"{here} imports {node.module}.{alias.name}")
                    if _is_module(target):
                        modules[alias.asname or alias.name] = target
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("rlaudit"):
                        modules[alias.asname or alias.name.split(".")[0]] = (
                            alias.asname and alias.name
                        ) or "rlaudit"
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            chain, base = [], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                owner = ".".join([modules[base.id], *reversed(chain)])
                if owner != here and _is_module(owner):
                    found.append(f"{here} uses {owner}.{node.attr}")
    return sorted(
        set(f for f in found if not any(f.split()[-1].startswith(p.replace("/", ".")) for p in NOT_YET))
    )


def test_no_private_name_crosses_a_module() -> None:
    assert private_imports() == [], "give a shared name a public name and a docstring"


def test_the_private_name_scan_sees_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The scan above finds what it looks for, in both spellings (it is not vacuous)."""
    lib = tmp_path / "lib"
    (lib / "rlaudit" / "attribution").mkdir(parents=True)
    for name in ("__init__", "a", "b", "attribution/__init__", "attribution/c"):
        (lib / "rlaudit" / f"{name}.py").write_text("")
    (lib / "rlaudit" / "b.py").write_text(
        "from rlaudit.a import _x, y\nfrom rlaudit import a\nfrom rlaudit.attribution.c import _z\n\na._w()\n"
    )
    monkeypatch.setitem(globals(), "LIB", lib)
    monkeypatch.setitem(globals(), "PACKAGE", lib / "rlaudit")
    assert private_imports() == [
        "rlaudit.b imports rlaudit.a._x",
        "rlaudit.b imports rlaudit.attribution.c._z",
        "rlaudit.b uses rlaudit.a._w",
    ]
