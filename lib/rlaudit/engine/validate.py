"""Bad input fails fast: everything ``rlaudit report`` and ``rlaudit audit`` can check before any training.

:func:`check_inputs` runs once at the start of both commands, before the first notebook or audit, and raises
:class:`InputError` (a ``ValueError``, which the CLI prints without a traceback and exits 2 on) that names the
input, says what was expected, what was found and what to do. It checks, cheapest first:

- every ``RLAUDIT_*`` setting in the environment (:data:`SETTINGS`), named in its error;
- the pair file (``--pair``) and the subject specs as strings (paths exist, schemes are known);
- the ``--variants`` syntax, naming the bad item;
- ``--out``: a directory (not a file), writable, and not inside a subject's directory (the report's own output
  would change the subject's fingerprint while it runs);
- each subject as far as this process can without starting it: an ``sb3:`` setup file read and resolved as
  the worker would, a ``package.module`` that can be found, a ``git:`` ref that resolves; then the variants'
  specs alike;
- ``--metric``: against what the subjects declare in ``metrics()`` and, once a training run of them is
  cached, what the recorder recorded. This is the one check that may start the subjects' workers: only to
  read their declarations (a cached probe the notebooks reuse), never to train.

The environment helpers (:func:`env_number`, :func:`env_flag`, :func:`env_choice`) are what the library reads
``RLAUDIT_*`` values through, so that a bad value names its variable wherever it is read; and
:func:`memory_cap_hint` names the worker's memory cap (``RLAUDIT_WORKER_MEMORY_MB``) beside a failure it likely
caused. This module imports only the standard library at the top: workers in a subject's interpreter use it.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MEMORY_VARIABLE = "RLAUDIT_WORKER_MEMORY_MB"


class InputError(ValueError):
    """Input rlaudit cannot use: the message names it, says what was expected and what to do."""


# --- RLAUDIT_* settings ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One ``RLAUDIT_*`` environment variable: what it sets and which values it takes.

    Attributes:
        meaning: What it sets, as the error quotes it.
        kind: ``"int"``, ``"number"``, ``"flag"``, ``"choice"`` or ``"dir"``.
        minimum: Smallest accepted value (numbers).
        choices: Accepted values (``choice``); a callable is asked lazily (profile names).
        example: A good value, for the error's advice.
    """

    meaning: str
    kind: str
    minimum: float | None = None
    choices: tuple[str, ...] | Callable[[], Iterable[str]] = ()
    example: str = ""


def _profiles() -> Iterable[str]:
    from rlaudit.profiles import PROFILES

    return PROFILES


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

SETTINGS: dict[str, Setting] = {
    "RLAUDIT_JOBS": Setting("probe calls each workbench runs at once", "int", 1, example="2"),
    "RLAUDIT_PROBE_TIMEOUT": Setting("seconds a probe call may take", "number", 1, example="1800"),
    "RLAUDIT_FRESH_SINCE": Setting(
        "the Unix time after which cached artifacts count as fresh (rlaudit report --fresh sets it)",
        "number",
        0,
        example="1700000000",
    ),
    "RLAUDIT_STALL_TIMEOUT": Setting(
        "seconds a probe may go without progress (rlaudit report --stall-timeout)", "number", 1, example="600"
    ),
    "RLAUDIT_CPU_LIMIT": Setting(
        "CPU-seconds a probe call may use (rlaudit report --cpu-limit)", "number", 1, example="1800"
    ),
    "RLAUDIT_RETRY_FAILED_SINCE": Setting(
        "the Unix time before which remembered probe failures run again (rlaudit report --retry-failed sets it)",
        "number",
        0,
        example="1700000000",
    ),
    "RLAUDIT_TORCH_THREADS": Setting("torch/OpenMP threads in each worker", "int", 1, example="1"),
    MEMORY_VARIABLE: Setting(
        "the address-space cap of each worker process in MiB (0: no cap)", "number", 0, example="8192"
    ),
    "RLAUDIT_PROGRESS": Setting("whether progress bars are shown", "flag", example="0"),
    "RLAUDIT_INTERACTIVE": Setting("whether figures are interactive widgets", "flag", example="0"),
    "RLAUDIT_EXECUTOR": Setting(
        "where probe jobs run", "choice", choices=("local", "processes", "ray"), example="local"
    ),
    "RLAUDIT_REPORT_KERNELS": Setting(
        "whether notebooks share kernels", "choice", choices=("shared", "fresh"), example="shared"
    ),
    "RLAUDIT_PROFILE": Setting(
        "the profile every notebook uses", "choice", choices=_profiles, example="smoke"
    ),
    "RLAUDIT_HOME": Setting("the project root (holding notebooks/)", "dir", example="a checkout of rlaudit"),
    "RLAUDIT_WORKDIR": Setting("the directory relative subject paths start from", "dir", example="."),
    "RLAUDIT_CACHE": Setting("the artifact cache directory", "dir", example="data/cache"),
    "RLAUDIT_REPORTS": Setting("where reports are written", "dir", example="reports"),
}
"""Every ``RLAUDIT_*`` variable a user may set, checked by :func:`check_environment`. (Variables rlaudit sets
for its own processes, like ``RLAUDIT_TRAIN_REEXEC``, are not listed.)"""


def _bad(name: str, raw: str, setting: Setting, expected: str) -> InputError:
    return InputError(
        f"{name}={raw!r}: expected {expected} ({setting.meaning}); set it to a value like "
        f"{name}={setting.example} or unset it"
    )


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def env_number(name: str, environ: Mapping[str, str] | None = None) -> float | None:
    """The ``RLAUDIT_*`` number ``name`` (an int for ``int`` settings); None when unset or empty.

    Raises:
        InputError: Not a number, or below the setting's minimum; the message names the variable.
    """
    raw = _environ(environ).get(name)
    if raw is None or not raw.strip():
        return None
    setting = SETTINGS.get(name) or Setting("an rlaudit setting", "number", example="1")
    integer = setting.kind == "int"
    expected = "a whole number" if integer else "a number"
    if setting.minimum is not None:
        expected += f" >= {setting.minimum:g}"
    try:
        value: float = int(raw.strip()) if integer else float(raw.strip())
    except ValueError:
        raise _bad(name, raw, setting, expected) from None
    if value != value or value in (float("inf"), float("-inf")):  # nan or inf
        raise _bad(name, raw, setting, expected)
    if setting.minimum is not None and value < setting.minimum:
        raise _bad(name, raw, setting, expected)
    return value


def env_flag(name: str, environ: Mapping[str, str] | None = None) -> bool | None:
    """The ``RLAUDIT_*`` switch ``name`` (``1/0``, ``true/false``, ``yes/no``, ``on/off``); None when unset.

    Raises:
        InputError: Any other value; the message names the variable.
    """
    raw = _environ(environ).get(name)
    if raw is None or not raw.strip():
        return None
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    setting = SETTINGS.get(name) or Setting("an rlaudit switch", "flag", example="1")
    raise _bad(name, raw, setting, "1 or 0 (true/false, yes/no, on/off)")


def env_choice(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The ``RLAUDIT_*`` choice ``name``, lower-cased; None when unset or empty.

    Raises:
        InputError: A value not among the setting's choices; the message names the variable and lists them.
    """
    raw = _environ(environ).get(name)
    if raw is None or not raw.strip():
        return None
    setting = SETTINGS[name]
    choices = tuple(setting.choices() if callable(setting.choices) else setting.choices)
    value = raw.strip()
    if value not in choices and value.lower() not in choices:
        raise _bad(name, raw, setting, "one of " + ", ".join(choices))
    return value if value in choices else value.lower()


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Check every ``RLAUDIT_*`` setting that is set (:data:`SETTINGS`).

    Raises:
        InputError: The first bad value, naming its variable, what it expects and an example.
    """
    env = _environ(environ)
    for name, setting in SETTINGS.items():
        raw = env.get(name)
        if raw is None or not raw.strip():
            continue
        if setting.kind in ("int", "number"):
            env_number(name, env)
        elif setting.kind == "flag":
            env_flag(name, env)
        elif setting.kind == "choice":
            env_choice(name, env)
        elif setting.kind == "dir":
            path = Path(raw).expanduser()
            if path.exists() and not path.is_dir():
                raise _bad(name, raw, setting, "a directory, not a file")
            if name in ("RLAUDIT_HOME", "RLAUDIT_WORKDIR") and not path.is_dir():
                raise _bad(name, raw, setting, "an existing directory")


# --- the memory cap ----------------------------------------------------------------------------------------

# What a failure to get memory looks like: Python's MemoryError, torch's CPU allocator, the dynamic loader
# mapping a library (torch's libtorch_cpu.so needs ~1 GB of address space just to load), C++'s bad_alloc,
# numpy's "Unable to allocate", mmap/ENOMEM, and a thread that could not get its stack.
_MEMORY_FAILURE = re.compile(
    r"MemoryError|can't allocate memory|DefaultCPUAllocator|failed to map segment|cannot allocate memory|"
    r"std::bad_alloc|Unable to allocate|out of memory|failed to allocate|can't start new thread|"
    r"mmap failed|ENOMEM|Resource temporarily unavailable",
    re.IGNORECASE,
)


def memory_cap(environ: Mapping[str, str] | None = None) -> float | None:
    """The workers' memory cap in MiB (``RLAUDIT_WORKER_MEMORY_MB``), or None when there is none."""
    value = env_number(MEMORY_VARIABLE, environ)
    return value if value else None


def memory_cap_hint(text: str, cap_mb: float | None = None, *, always: bool = False) -> str:
    """A sentence naming the memory cap when it is the likely cause of the failure ``text`` describes.

    Args:
        text: The failure: its message, traceback and stderr tail.
        cap_mb: The cap in MiB (default: ``RLAUDIT_WORKER_MEMORY_MB``, unreadable taken as none).
        always: Name the cap whenever there is one, even if ``text`` does not look like a memory failure (a
            worker that died before it could say why).

    Returns:
        ``""`` without a cap, or when the failure does not look like memory; else `` (the worker's memory cap
        RLAUDIT_WORKER_MEMORY_MB=2048 MiB is the likely cause ...)`` with how to raise it.
    """
    if cap_mb is None:
        try:
            cap_mb = memory_cap()
        except InputError:
            cap_mb = None
    if not cap_mb or not (always or _MEMORY_FAILURE.search(text or "")):
        return ""
    return (
        f" (the worker's memory cap {MEMORY_VARIABLE}={cap_mb:g} MiB is the likely cause: it limits each "
        "worker's address space, and torch alone maps about 1 GB of it to load. Raise it, e.g. "
        f"{MEMORY_VARIABLE}={max(8192, int(2 * cap_mb))}, or unset {MEMORY_VARIABLE} for no cap)"
    )


# --- subjects, the pair file, variants, the output directory -----------------------------------------------


def check_subject(spec: Any) -> None:
    """Check a parsed subject spec as far as the notebook's process can: its loader, and an ``sb3:`` file.

    An ``sb3:`` setup file is read and resolved here exactly as the worker does (unknown keys, bad values, an
    unknown policy), when stable-baselines3 is importable here and the subject runs in this interpreter;
    otherwise only its YAML shape and ``algo:`` are checked.

    Raises:
        InputError: The spec cannot be loaded, or its sb3 setup file is malformed.
    """
    from rlaudit.engine.subjects import loader_for

    try:
        loader_for(spec)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if spec.scheme == "sb3":
        _check_sb3(spec)
    elif spec.scheme == "module" and not spec.requirements:  # (a venv still to be built may hold it)
        _check_module(spec)
    elif spec.scheme == "git":
        from rlaudit.engine.store import subject_fingerprint

        try:  # resolves the ref now, as the workbench would in every notebook
            subject_fingerprint(spec)
        except (ValueError, OSError) as exc:
            raise InputError(f"subject {spec.display!r}: {exc}") from None


def _check_module(spec: Any) -> None:
    """A ``package.module[:attr]`` spec names a module its interpreter can find (``bultin:x`` is one too)."""
    import difflib

    from rlaudit.engine.fingerprint import module_location
    from rlaudit.engine.subjects import PREFIX_SCHEMES

    top = spec.target.split(".")[0]
    cwd = spec.cwd or os.getcwd()
    if module_location(spec.interpreter, cwd, top, spec.env.get("PYTHONPATH", "")) is not None:
        return
    head = spec.text.partition(":")[0] if ":" in spec.text else ""
    close = difflib.get_close_matches(head.lower(), PREFIX_SCHEMES, n=1) if head else []
    hint = f" Did you mean {close[0]}:{spec.text.partition(':')[2]}?" if close else ""
    raise InputError(
        f"subject {spec.display!r}: no module {top!r} can be imported by {spec.interpreter} from {cwd}; "
        f"expected package.module[:attr] of an installed module, a path to a subject.py, or a scheme "
        f"({', '.join(s + ':' for s in PREFIX_SCHEMES)}).{hint}"
    )


def _check_sb3(spec: Any) -> None:
    import importlib.util
    import sys

    path = Path(spec.target)
    same_python = not spec.requirements and os.path.abspath(spec.interpreter) == os.path.abspath(
        sys.executable
    )
    try:
        if same_python and importlib.util.find_spec("stable_baselines3") is not None:
            from rlaudit.adapters.sb3.setup import read_setup, resolve_setup

            resolve_setup(read_setup(path), path.parent)
        else:
            from rlaudit.adapters.configs import read_yaml_mapping
            from rlaudit.adapters.sb3.setup import ALGORITHMS, SB3SetupError

            data = read_yaml_mapping(
                path, "SB3 setup file", "(algo:, env_id:, hyperparameters)", SB3SetupError
            )
            algo = str(data.get("algo", path.stem)).lower()
            if "algo" in data and algo not in ALGORITHMS:
                raise SB3SetupError(
                    f"SB3 setup file {path}: algo {data['algo']!r} is not one of {', '.join(ALGORITHMS)}"
                )
    except (ValueError, OSError) as exc:
        message = str(exc)
        if str(path) not in message:
            message = f"SB3 setup file {path}: {message}"
        raise InputError(f"subject {spec.display!r}: {message}; fix the file and rerun") from None


@dataclass(frozen=True)
class Variant:
    """One ``--variants`` item: ``name[@subsystem]=spec`` (or a bare ``spec``, named after itself)."""

    name: str
    subsystem: str
    spec: str
    item: str


def parse_variants(text: str) -> list[Variant]:
    """Parse ``--variants`` (``"name=spec, name@subsystem=spec, spec"``) strictly.

    Raises:
        InputError: An empty item (``a=x,,b=y``), a missing name or spec (``=x``, ``x=``), a second ``=``, an
            unknown subsystem, or a name used twice; the message quotes the bad item.
    """
    from rlaudit.findings import SUBSYSTEMS

    text = str(text or "")
    if not text.strip():
        return []
    how = "expected comma-separated items 'name=SPEC' or 'name@subsystem=SPEC', e.g. 'fix=builtin:reference'"
    out: list[Variant] = []
    parts = text.split(",")
    for number, raw in enumerate(parts, 1):
        item = raw.strip()
        where = f"--variants item {number} of {len(parts)}"
        if not item:
            raise InputError(f"{where} is empty (in {text!r}); {how}; remove the extra comma")
        label, sep, spec = item.partition("=")
        if not sep:
            label, spec = item, item
        label, spec = label.strip(), spec.strip()
        if "=" in spec:
            raise InputError(f"{where} {item!r} has more than one '='; {how}")
        if not label:
            raise InputError(f"{where} {item!r} has no name before '='; {how}")
        if not spec:
            raise InputError(f"{where} {item!r} has no subject spec after '='; {how}")
        # A bare spec names itself, '@' and all (git:repo@sha); only a name may carry @subsystem.
        name, _, subsystem = label.partition("@") if sep else (label, "", "")
        name, subsystem = name.strip(), subsystem.strip()
        if not name:
            raise InputError(f"{where} {item!r} has no name before '@'; {how}")
        if subsystem and subsystem not in SUBSYSTEMS:
            raise InputError(
                f"{where} {item!r}: unknown subsystem {subsystem!r}; expected one of {', '.join(SUBSYSTEMS)}"
            )
        if name in ("baseline", "candidate") or any(v.name == name for v in out):
            raise InputError(
                f"{where} {item!r}: the name {name!r} is already taken (by another variant or a side); "
                "give each variant its own name"
            )
        out.append(Variant(name=name, subsystem=subsystem, spec=spec, item=item))
    return out


def check_variants(text: str) -> list[Variant]:
    """:func:`parse_variants`, and each variant's spec parsed and checked like a side's.

    Raises:
        InputError: Bad syntax, or a spec that does not parse or load, naming the item.
    """
    from rlaudit.engine.subjects import parse_spec

    variants = parse_variants(text)
    for variant in variants:
        try:
            check_subject(parse_spec(variant.spec))
        except (ValueError, FileNotFoundError) as exc:
            raise InputError(f"--variants item {variant.item!r}: {exc}") from None
    return variants


def subject_directories(specs: Iterable[Any]) -> list[Path]:
    """The directories whose files make up each subject's fingerprint (subject files and sb3 setups)."""
    out = []
    for spec in specs:
        if spec.scheme in ("file", "sb3"):
            out.append(Path(spec.target).resolve().parent)
    return out


def check_out(out: Path, specs: Sequence[Any], name: str = "--out") -> None:
    """The report directory: a directory or nothing yet, writable, and outside every subject's directory.

    Args:
        out: The report directory.
        specs: The subjects of the report.
        name: How the error names the directory (``--out``, or where the default came from).

    Raises:
        InputError: ``out`` is a file, cannot be created or written, or lies inside a subject's directory.
    """
    out = Path(out).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise InputError(f"{name} {out} is a file; expected a directory for the report; pass another path")
    for directory in subject_directories(specs):
        if out == directory or directory in out.parents:
            raise InputError(
                f"{name} {out} is inside the directory of a subject ({directory}): the report's files would "
                "change that subject's fingerprint while it runs. Pass an --out outside it, e.g. "
                f"--out {directory.parent / 'rlaudit-report'}"
            )
    try:
        # Made now rather than by the first notebook: the report writes here anyway, and only trying says
        # whether this user may (permission bits do not bind root, nor describe a read-only mount).
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".rlaudit-write-test-"):
            pass
    except OSError as exc:
        raise InputError(
            f"{name} {out} cannot be written ({exc.strerror or exc}); pass a directory you can write to"
        ) from None


def check_json_out(path: str | Path) -> None:
    """``rlaudit audit --json FILE``: a file (not a directory) in a directory this user can write.

    Raises:
        InputError: ``path`` is a directory, or its directory cannot be created or written.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        raise InputError(
            f"--json {path} is a directory; expected the path of a file to write the findings to"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".rlaudit-write-test-"):
            pass
    except OSError as exc:
        raise InputError(
            f"--json {path}: its directory cannot be written ({exc.strerror or exc}); pass a file in a "
            "directory you can write to"
        ) from None


# --- the metric --------------------------------------------------------------------------------------------


def recorded_metrics(run_dirs: Iterable[Path]) -> list[str]:
    """The metric names training runs recorded: episode statistics, then logged scalars.

    Args:
        run_dirs: Recorder run directories (holding ``episodes`` and ``scalars`` tables).
    """
    from rlaudit.engine.io import read_table, table_path

    names: dict[str, None] = {}
    for run_dir in run_dirs:
        for table in ("episodes", "scalars"):
            if table_path(run_dir / table) is None:
                continue
            try:
                frame = read_table(run_dir / table)
            except Exception:  # an unreadable table is the cache's business, not the metric check's
                continue
            if table == "episodes":
                names.update(dict.fromkeys(str(c) for c in frame.columns if c not in ("step", "env")))
            elif "name" in frame:
                names.update(dict.fromkeys(str(n) for n in frame["name"].unique()))
    return list(names)


def _cached_runs(cache_root: Path, fingerprint: str, limit: int = 2) -> list[Path]:
    """Up to ``limit`` recorder run directories of training runs cached for ``fingerprint``."""
    found = []
    base = cache_root / fingerprint
    if not base.is_dir():
        return found
    for summary in base.glob("*/*/run/summary.json"):
        found.append(summary.parent)
        if len(found) >= limit:
            break
    return found


def metric_known(name: str, known: Iterable[str]) -> bool:
    """Whether ``name`` is among ``known`` as the workbench would find it (a scalar may be ``group/name``)."""
    return any(k == name or k.endswith("/" + name) for k in known)


def check_metric(metric: str, wb: Any) -> str:
    """Check ``--metric`` against the subjects' ``metrics()`` and their cached training runs.

    Args:
        metric: ``NAME`` or ``NAME:lower``/``NAME:higher``.
        wb: The pair's workbench (its declarations probe is cached; no training runs).

    Returns:
        ``""`` when the name is known, else a note that it can only be checked once a run exists (nothing
        declared, nothing recorded yet).

    Raises:
        InputError: An empty name, or a name neither declared nor recorded, listing the known ones.
    """
    from rlaudit.metrics import RETURN, parse_override

    name, _direction = parse_override(metric)
    if not name:
        raise InputError(
            f"--metric {metric!r} has no name; expected NAME or NAME:lower, e.g. --metric return"
        )
    declared: list[str] = []
    for side in ("baseline", "candidate"):
        found = wb._declared().get(side) or {}
        declared.extend(m["name"] for m in found.get("metrics") or [] if m["name"] not in declared)
    runs = [run for fp in wb.fingerprints.values() for run in _cached_runs(Path(wb.cache.root), fp)]
    recorded = recorded_metrics(runs)
    if metric_known(name, declared) or metric_known(name, recorded) or (name == RETURN and not runs):
        return ""  # (the episodic return is every subject's default, until a run shows it is not recorded)
    if not declared and not recorded:
        return (
            f"note: --metric {name} cannot be checked yet: neither subject declares metrics() and no training "
            "run of them is cached; the learning checks name what the runs recorded if it is not among them"
        )
    parts = []
    if declared:
        parts.append(f"the subjects declare {', '.join(declared)} in metrics()")
    if recorded:
        parts.append(f"their cached training runs recorded {', '.join(recorded)}")
    else:
        parts.append("no training run of them is cached yet to show what else they record")
    raise InputError(
        f"--metric {metric}: {name!r} is not a metric of these subjects: {'; '.join(parts)}. Pass one of "
        "these names, or report it from train() (recorder.episode(step=..., **{NAME: value}) or "
        "recorder.log(step, **{NAME: value})) and declare it in metrics()"
    )


# --- everything at once ------------------------------------------------------------------------------------


def check_inputs(args: Any, *, out: Path | None = None, say: Callable[[str], None] = print) -> None:
    """Check the input of ``rlaudit report`` or ``rlaudit audit`` before anything runs.

    Args:
        args: The parsed arguments (baseline, candidate, pair, profile, metric; variants for a report).
        out: The report directory (``rlaudit report``); None for ``rlaudit audit``.
        say: Where a note (not an error) goes.

    Raises:
        InputError: The first bad input (see the module docstring). ``FileNotFoundError`` for a missing
            subject or pair file, as :func:`rlaudit.engine.subjects.parse_spec` raises it.
    """
    from rlaudit.engine.paths import user_dir
    from rlaudit.engine.subjects import load_pair_file, parse_spec
    from rlaudit.profiles import get_profile

    check_environment()
    get_profile(getattr(args, "profile", None))
    pair = str(getattr(args, "pair", "") or "")
    if pair:
        path = user_dir() / Path(pair).expanduser()
        if not path.is_file():
            raise FileNotFoundError(
                f"pair file {pair} does not exist (looked for {path}); pass a YAML file declaring both subjects"
            )
        specs = list(load_pair_file(path.resolve()))
    else:
        specs = []
        for side in ("baseline", "candidate"):
            text = str(getattr(args, side, "") or "")
            try:
                specs.append(parse_spec(text))
            except FileNotFoundError as exc:
                raise FileNotFoundError(f"--{side}: {exc}") from None
            except ValueError as exc:
                raise InputError(f"--{side}: {exc}") from None
    # The cheap checks first; then the ones that import a subject's framework or ask git.
    variants = str(getattr(args, "variants", "") or "")
    parse_variants(variants)
    if out is not None:
        given = getattr(args, "out", None)
        check_out(out, specs, "--out" if given else "the report directory (RLAUDIT_REPORTS or reports/)")
    if getattr(args, "json_out", None):  # rlaudit audit writes its findings there only at the end
        check_json_out(args.json_out)
    for side, spec in zip(("baseline", "candidate"), specs, strict=True):
        try:
            check_subject(spec)
        except InputError as exc:
            raise InputError(f"{f'pair file {pair}, ' if pair else '--'}{side}: {exc}") from None
    check_variants(variants)
    metric = str(getattr(args, "metric", "") or "")
    if metric:
        from rlaudit.notebook import _new_workbench

        wb = _new_workbench(
            str(args.baseline), str(args.candidate), get_profile(args.profile).name, False, pair and str(path)
        )
        try:
            note = check_metric(metric, wb)
        finally:
            close = getattr(wb, "close", None)
            if callable(close):
                close()
        if note:
            say(note)
