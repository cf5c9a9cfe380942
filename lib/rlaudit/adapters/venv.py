"""Per-subject interpreters: a virtual environment built from a requirements file, cached and reused.

Baseline and candidate may need different library versions (the regression may *be* a library upgrade).
:func:`ensure_venv` builds ``cache_dir()/venvs/<key>`` with ``python -m venv`` and ``pip install -r`` once per
(requirements content, interpreter) and returns its ``python``; the worker then runs the subject under it.
A subject asks for one with ``requirements:`` (and optionally ``system_site_packages:``) in its pair-file
entry (:class:`rlaudit.engine.subjects.SubjectSpec`); :func:`interpreter_for` is where the worker's interpreter is
chosen from a spec.

rlaudit itself is not installed into these environments: the worker reaches it through ``PYTHONPATH``. What the
environment must have is what probes import: numpy, torch and gymnasium. :func:`ensure_venv` checks that
after the install and says what is missing.

``system_site_packages=True`` lets the environment see the packages of the interpreter that builds it
(``--system-site-packages``; when that interpreter is itself a venv, its site-packages are linked with a
``.pth`` file, because ``--system-site-packages`` only reaches the base installation). Packages named in the
requirements are still installed into the new environment and take precedence; anything already satisfied
(torch, typically) is not downloaded again. Pin ``torch==<the version you have>`` in such a file. A file that
pins an older NumPy than the base's (``numpy<2`` beside ``gymnasium==0.29.1``) leaves the base's pandas and
pyarrow visible but unimportable there: probe-side code never imports them (tables fall back to ``.npz``).

Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlaudit.engine.subjects import SubjectSpec

PROBE_MODULES = ("numpy", "torch", "gymnasium")
"""What the rlaudit worker imports inside a subject's environment."""

MARKER = ".rlaudit-venv.json"
PIP_TIMEOUT = 3600.0  # seconds for `pip install -r` (large wheels on a slow network)
TAIL_LINES = 40


class VenvBuildError(RuntimeError):
    """Building a subject's environment failed; the message ends with the tail of the tool's output."""


def _bin(venv: Path, name: str) -> Path:
    if os.name == "nt":
        return venv / "Scripts" / (name + ".exe")
    return venv / "bin" / name


def venv_python(venv: str | Path) -> Path:
    """The interpreter inside a virtual environment directory (not resolved: it must stay the venv's)."""
    return _bin(Path(venv), "python")


def _run(cmd: list[str], *, timeout: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    for name in ("PYTHONHOME", "PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(name, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _tail(proc: subprocess.CompletedProcess[str], lines: int = TAIL_LINES) -> str:
    text = "\n".join(part for part in (proc.stdout, proc.stderr) if part)
    return "\n".join(text.strip().splitlines()[-lines:])


def interpreter_info(python: str) -> dict[str, str]:
    """Version, real executable, prefix and site-packages of ``python`` (by running it).

    Raises:
        FileNotFoundError: ``python`` cannot be run.
    """
    code = (
        "import json, sys, sysconfig;"
        "p = sysconfig.get_paths();"
        "print(json.dumps({'version': sys.version, 'executable': sys.executable, 'prefix': sys.prefix,"
        "'base_prefix': sys.base_prefix, 'purelib': p['purelib'], 'platlib': p['platlib'],"
        "'short': '%d.%d.%d' % sys.version_info[:3]}))"
    )
    try:
        proc = _run([python, "-c", code], timeout=60)
    except OSError as exc:
        raise FileNotFoundError(
            f"cannot run interpreter {python!r} ({exc}); expected a python executable"
        ) from None
    if proc.returncode != 0:
        raise FileNotFoundError(f"interpreter {python!r} failed to start: {_tail(proc, 10)}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def venv_key(
    requirements: str | Path, python: str | None = None, *, system_site_packages: bool = False
) -> str:
    """16 hex digits naming the environment for these requirements, interpreter and visibility."""
    info = interpreter_info(python or sys.executable)
    text = Path(requirements).read_bytes()
    digest = hashlib.sha256()
    for part in (text, info["version"].encode(), os.path.realpath(info["executable"]).encode()):
        digest.update(part)
        digest.update(b"\0")
    digest.update(b"system" if system_site_packages else b"isolated")
    return digest.hexdigest()[:16]


def venvs_dir() -> Path:
    from rlaudit.engine.paths import cache_dir

    return cache_dir() / "venvs"


def ensure_venv(
    requirements: Path,
    python: str | None = None,
    *,
    system_site_packages: bool = False,
    check_modules: tuple[str, ...] = PROBE_MODULES,
    timeout: float = PIP_TIMEOUT,
) -> Path:
    """The interpreter of a cached virtual environment with ``requirements`` installed (built if needed).

    Args:
        requirements: A pip requirements file. Relative paths inside it resolve against its directory.
        python: The interpreter to base the environment on (default: the one running this code).
        system_site_packages: Let the environment see the base interpreter's packages (see the module
            docstring); saves downloading what is already installed, such as torch.
        check_modules: Modules that must import in the finished environment (the probes' needs).
        timeout: Seconds ``pip install`` may take.

    Returns:
        Path of ``<cache>/venvs/<key>/bin/python``.

    Raises:
        FileNotFoundError: The requirements file or the interpreter does not exist.
        VenvBuildError: ``python -m venv`` or ``pip install`` failed (the message ends with the tail of its
            output), or a module in ``check_modules`` does not import afterwards. A failed build leaves no
            environment behind, so the next call tries again.
    """
    from rlaudit.adapters import file_lock

    requirements = Path(requirements).expanduser().resolve()
    if not requirements.is_file():
        raise FileNotFoundError(
            f"requirements file {requirements} not found; expected a pip requirements file (one package per line)"
        )
    base = python or sys.executable
    key = venv_key(requirements, base, system_site_packages=system_site_packages)
    venv = venvs_dir() / key
    interpreter = venv_python(venv)
    if (venv / MARKER).is_file() and interpreter.exists():
        return interpreter
    with file_lock(venvs_dir() / f"{key}.lock", timeout=timeout + 600, what="virtual environment"):
        if (venv / MARKER).is_file() and interpreter.exists():  # built by another process while we waited
            return interpreter
        if venv.exists():
            shutil.rmtree(venv)  # a build that died half-way
        try:
            _build(venv, requirements, base, system_site_packages, check_modules, timeout)
        except BaseException:
            shutil.rmtree(venv, ignore_errors=True)
            raise
    return interpreter


def _build(
    venv: Path,
    requirements: Path,
    base: str,
    system_site_packages: bool,
    check_modules: tuple[str, ...],
    timeout: float,
) -> None:
    info = interpreter_info(base)
    started = time.time()
    venv.parent.mkdir(parents=True, exist_ok=True)
    # No pip inside the environment: the building interpreter's pip installs into it (`pip --python`), which
    # skips the ensurepip step; fall back to ensurepip when that pip is too old for --python (pip < 22.3).
    cmd = [base, "-m", "venv", "--without-pip"]
    if system_site_packages:
        cmd.append("--system-site-packages")
    proc = _run([*cmd, str(venv)], timeout=600)
    if proc.returncode != 0:
        raise VenvBuildError(f"`{' '.join(cmd)} {venv}` failed:\n{_tail(proc)}")
    interpreter = venv_python(venv)
    if system_site_packages and os.path.realpath(info["prefix"]) != os.path.realpath(info["base_prefix"]):
        # The base interpreter is itself a venv: --system-site-packages only reaches *its* base installation,
        # so link its own site-packages too (after the new environment's, which keeps precedence).
        new = interpreter_info(str(interpreter))
        lines = sorted({info["purelib"], info["platlib"]})
        Path(new["purelib"]).mkdir(parents=True, exist_ok=True)
        (Path(new["purelib"]) / "_rlaudit_base_site.pth").write_text("\n".join(lines) + "\n")

    pip = _pip_command(base, interpreter)
    install = [*pip, "install", "--no-input", "-r", str(requirements)]
    proc = _run(install, timeout=timeout, cwd=requirements.parent)
    if proc.returncode != 0:
        raise VenvBuildError(
            f"pip could not install {requirements} into a new environment for {base} "
            f"(exit code {proc.returncode}); fix the requirements file and retry. Last lines of pip's output:\n"
            f"{_tail(proc)}"
        )
    if check_modules:
        probe = "import importlib, sys\nmissing = []\n"
        probe += f"for name in {list(check_modules)!r}:\n"
        probe += "    try:\n        importlib.import_module(name)\n"
        probe += (
            "    except Exception as exc:\n        missing.append(f'{name} ({type(exc).__name__}: {exc})')\n"
        )
        probe += "print('\\n'.join(missing)); sys.exit(1 if missing else 0)\n"
        check = _run([str(interpreter), "-c", probe], timeout=600)
        if check.returncode != 0:
            raise VenvBuildError(
                f"the environment built from {requirements} cannot import what rlaudit's probes need: "
                f"{'; '.join(check.stdout.strip().splitlines()) or _tail(check, 10)}. Add "
                f"{', '.join(check_modules)} to the requirements (pin torch to the version you have, e.g. "
                "torch==2.13.0), or build with system_site_packages=True to reuse the installed ones"
            )
    marker = {
        "requirements": str(requirements),
        "requirements_sha256": hashlib.sha256(requirements.read_bytes()).hexdigest(),
        "base_python": base,
        "python_version": info["short"],
        "system_site_packages": system_site_packages,
        "seconds": round(time.time() - started, 1),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    (venv / MARKER).write_text(json.dumps(marker, indent=2) + "\n")


def _pip_command(base: str, interpreter: Path) -> list[str]:
    version = _run([base, "-c", "import pip; print(pip.__version__)"], timeout=60)
    if version.returncode == 0:
        try:
            major, minor = (int(x) for x in version.stdout.strip().split(".")[:2])
        except ValueError:
            major, minor = 0, 0
        if (major, minor) >= (22, 3):
            return [base, "-m", "pip", "--python", str(interpreter)]
    proc = _run([str(interpreter), "-m", "ensurepip", "--upgrade"], timeout=600)
    if proc.returncode != 0:
        raise VenvBuildError(f"could not install pip into {interpreter}:\n{_tail(proc)}")
    return [str(interpreter), "-m", "pip"]


# (requirements path, its sha256, base interpreter, system_site_packages, venvs dir) -> built interpreter: a
# worker start after the first skips venv_key's interpreter probe (a subprocess) when nothing changed.
_BUILT: dict[tuple[str, str, str, bool, str], Path] = {}


def interpreter_for(spec: SubjectSpec | Any) -> str:
    """The interpreter a subject's worker runs under; the one place that choice is made.

    ``spec.requirements`` set: the interpreter of the virtual environment :func:`ensure_venv` builds from that
    file (once, then cached under ``<cache>/venvs``), based on ``spec.python`` when given (else the current
    interpreter), with ``spec.system_site_packages``. Otherwise ``spec.python``, or the current interpreter.

    Args:
        spec: A :class:`rlaudit.engine.subjects.SubjectSpec` (any object with ``python`` and optionally
            ``requirements`` and ``system_site_packages`` attributes).

    Returns:
        Path of the python executable to start.

    Raises:
        FileNotFoundError: The requirements file or the base interpreter does not exist.
        VenvBuildError: The environment could not be built, or cannot import numpy, torch and gymnasium.
        TimeoutError: Another process held the build lock for too long.
    """
    requirements = str(getattr(spec, "requirements", "") or "")
    python = str(getattr(spec, "python", "") or "") or None
    if not requirements:
        return python or sys.executable
    system = bool(getattr(spec, "system_site_packages", False))
    path = Path(requirements).expanduser().resolve()
    base = python or sys.executable
    memo = None
    if path.is_file():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        memo = (str(path), digest, base, system, str(venvs_dir()))
        known = _BUILT.get(memo)
        if known is not None and known.exists() and (known.parent.parent / MARKER).is_file():
            return str(known)
    interpreter = ensure_venv(path, python, system_site_packages=system)
    if memo is not None:
        _BUILT[memo] = interpreter
    return str(interpreter)
