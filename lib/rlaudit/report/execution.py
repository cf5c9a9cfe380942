"""Executing the report's notebooks: which ones, with what parameters and environment, and what their outcome is.

A :class:`NotebookRun` follows one notebook from its source to its executed copy, its log and its findings
file. :func:`execute` runs it with papermill (in a fresh subprocess and kernel, or on a lane of
:mod:`rlaudit.report.lanes`); :func:`settle` then decides its outcome and makes sure its findings file tells
the truth (a failed notebook gets an ERROR finding naming the failing cell).
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rlaudit.findings import Finding, Status, load_findings, save_findings
from rlaudit.report.overview import subsystem_of

if TYPE_CHECKING:
    from rlaudit.options import RunOptions
    from rlaudit.report.lanes import Lanes

KERNEL_STARTS = 3
"""Tries to start a notebook's kernel (a lane's, or papermill's own with fresh kernels). A kernel can die as it
starts: jupyter_client picks free ports, and another kernel starting at the same moment (the other lanes,
another report, a test suite's) may bind one of them first ("Address already in use"). A new kernel picks new
ports."""

KERNEL_DIED = "Kernel died before replying"
"""How jupyter_client says a kernel died as it started (``wait_for_ready``)."""

_NOTEBOOK_RE = re.compile(r"^(\d\d)_([A-Za-z0-9_]+)\.ipynb$")
_T = TypeVar("_T")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class NotebookRun:
    """One notebook's execution in a report.

    Attributes:
        name: ``NN_<name>`` (the file stem).
        source: The notebook in ``notebooks/``.
        output: The executed notebook (with outputs).
        html: The rendered page.
        log: papermill's log.
        findings_path: Where the notebook saves its findings.
        returncode: papermill's exit code (None before it ran).
        seconds: Wall time of the papermill subprocess.
        cpu_seconds: CPU time (user + system) of the papermill subprocess and every descendant it reaped: the
            kernel and the probe workers it started. Unlike ``seconds`` it does not grow when the machine is
            busy with other work or while the notebook waits for an artifact another notebook is computing.
        render_seconds: Time spent rendering the page.
        outcome: ``"ok"``, ``"failed"`` (an error in a cell, a dead kernel) or ``"no findings"``.
        error: A one-line description of the failure.
        findings: The findings the notebook saved (or the synthetic ERROR finding).
    """

    name: str
    source: Path
    output: Path
    html: Path
    log: Path
    findings_path: Path
    returncode: int | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    render_seconds: float = 0.0
    outcome: str = "pending"
    error: str = ""
    findings: list[Finding] = field(default_factory=list)

    @property
    def subsystem(self) -> str:
        return subsystem_of(self.name)


def discover_notebooks(notebooks_dir: str | Path, subset: str = "") -> list[Path]:
    """The report's notebooks, ``NN_<name>.ipynb`` sorted by number, optionally a subset.

    Args:
        notebooks_dir: Directory holding the notebooks.
        subset: Comma-separated names: ``07_optimizer``, ``07_optimizer.ipynb``, ``07`` or ``optimizer``.

    Raises:
        FileNotFoundError: The directory has no ``NN_*.ipynb``.
        ValueError: A name in ``subset`` matches no notebook (the available ones are listed).
    """
    directory = Path(notebooks_dir)
    found = sorted(p for p in directory.glob("*.ipynb") if _NOTEBOOK_RE.match(p.name))
    if not found:
        raise FileNotFoundError(
            f"no notebooks named NN_<name>.ipynb in {directory}; run from the rlaudit checkout "
            "or set RLAUDIT_HOME to it"
        )
    wanted = [w.strip() for w in subset.split(",") if w.strip()]
    if not wanted:
        return found
    chosen: list[Path] = []
    for token in wanted:
        stem = token[:-6] if token.endswith(".ipynb") else token
        hits = [p for p in found if stem in (p.stem, p.stem[:2], subsystem_of(p.stem))]
        if not hits:
            names = ", ".join(p.stem for p in found)
            raise ValueError(f"--notebooks: no notebook matches {token!r}; available: {names}")
        chosen.extend(h for h in hits if h not in chosen)
    return sorted(chosen)


# Papermill processes (one per notebook, or one per lane) start without the optional IRI format checker of
# jsonschema: when the rfc3987-syntax package is installed, importing it compiles a grammar that costs about
# 3 s of CPU in every papermill process (nbformat imports jsonschema); notebook validation never uses it.
NO_IRI_CHECKER = "import sys; sys.modules['rfc3987_syntax'] = None; "
_PAPERMILL_MAIN = NO_IRI_CHECKER + "from papermill.cli import papermill; papermill()"


def papermill_command(run: NotebookRun, parameters: Mapping[str, Any], cwd: Path) -> list[str]:
    """The papermill command line for one notebook (kernel ``python3``, parameters as YAML/JSON)."""
    return [
        sys.executable,
        "-c",
        _PAPERMILL_MAIN,
        str(run.source),
        str(run.output),
        "--kernel",
        "python3",
        "--language",
        "python",  # a notebook whose metadata lacks the language still runs
        "--cwd",
        str(cwd),
        "--parameters_yaml",
        json.dumps(dict(parameters)),  # JSON is YAML; keeps every value's type exact
        "--no-progress-bar",
        "--log-output",
        "--start-timeout",
        "180",
    ]


def notebook_environment(options: RunOptions, jobs: int = 1) -> dict[str, str]:
    """Environment of each papermill subprocess (and so of its kernel and the workers it starts).

    A notebook's kernel is a separate process: ``options`` reach its :class:`rlaudit.notebook.Session` as
    ``RLAUDIT_*`` variables (:meth:`RunOptions.environment`), read back there by :meth:`RunOptions.from_env`.

    Args:
        options: The options each notebook runs with (its probe jobs, fresh start, executor, limits).
        jobs: Notebooks running at once; above 1 every worker runs torch (and BLAS) on one thread.
    """
    from rlaudit.engine.paths import LIB_DIR

    # No frontend renders widgets here: draw static figures.
    options = options.replace(interactive=False)
    if jobs > 1:
        # Several notebooks (and their workers) share the cores: one torch/BLAS thread each.
        options = options.replace(torch_threads=1)
    env = options.child_environment()
    # The kernel must import the same rlaudit as this process, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(LIB_DIR), env.get("PYTHONPATH", "")) if p)
    # Prefer this environment's "python3" kernelspec over a user-level one (as the Makefile does).
    env.setdefault("JUPYTER_PREFER_ENV_PATH", "1")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if jobs > 1:
        env.setdefault("OMP_NUM_THREADS", "1")
    return env


def execute(
    run: NotebookRun,
    parameters: Mapping[str, Any],
    cwd: Path,
    env: Mapping[str, str],
    lanes: Lanes | None = None,
) -> NotebookRun:
    """Run one notebook with papermill; fills ``returncode``, ``seconds`` and ``cpu_seconds``.

    With ``lanes`` (what :func:`rlaudit.report.commands.run_report` passes with shared kernels, the default;
    :attr:`rlaudit.options.RunOptions.report_kernels`) the notebook runs on a free lane: a kernel that ran
    earlier notebooks of the report, namespace reset, its subjects' workers still running. Otherwise
    papermill runs in a subprocess of its own with a fresh kernel; when it fails before any cell ran (its
    kernel died as it started), papermill runs again with a new kernel, up to :data:`KERNEL_STARTS` times.
    """
    if lanes is not None:
        return lanes.execute(run, parameters, env)
    run.output.parent.mkdir(parents=True, exist_ok=True)
    run.log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    command = papermill_command(run, parameters, cwd)
    run.cpu_seconds = 0.0
    for attempt in range(1, KERNEL_STARTS + 1):
        run.output.unlink(missing_ok=True)  # an output left by a try before says nothing of this one
        with open(run.log, "w" if attempt == 1 else "a") as log:
            if attempt > 1:
                log.write(
                    f"\n[rlaudit] no cell ran (the kernel did not start); papermill again with a new kernel, "
                    f"try {attempt} of {KERNEL_STARTS}\n"
                )
            log.write(f"$ {shlex.join(command)}\n\n")
            log.flush()
            proc = subprocess.Popen(
                command,
                cwd=cwd,
                env=dict(env),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            try:
                run.returncode, cpu = _wait_with_usage(proc)
            except BaseException:  # interrupted: do not leave papermill (and its kernel) running
                proc.kill()
                proc.wait()
                raise
        run.cpu_seconds += cpu
        if run.returncode == 0 or not no_cell_ran(run.output):
            break
    run.seconds = time.perf_counter() - started
    return run


def retry_kernel_start(start: Callable[..., _T]) -> Callable[..., _T]:
    """``start`` (``jupyter_client.manager.start_new_kernel``, or a function calling it) tried again, up to
    :data:`KERNEL_STARTS` times, when the kernel dies as it starts; any other failure is raised at once.

    ``notebooks/conftest.py`` wraps nbval's kernel start with it, so a notebook under nbval is not failed by a
    port another kernel took.
    """

    @functools.wraps(start)
    def start_again_if_it_died(*args: Any, **kwargs: Any) -> _T:
        for _ in range(KERNEL_STARTS - 1):
            try:
                return start(*args, **kwargs)
            except RuntimeError as exc:
                if KERNEL_DIED not in str(exc):
                    raise
        return start(*args, **kwargs)  # the last try: whatever it raises is the answer

    return start_again_if_it_died


def no_cell_ran(path: str | Path) -> bool:
    """True when the executed notebook at ``path`` is missing or none of its code cells ran: papermill failed
    before the kernel ran anything (so running it again repeats nothing)."""
    import nbformat

    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception:
        return True
    return not any(
        cell.get("execution_count") is not None or cell.get("outputs")
        for cell in nb.cells
        if cell.get("cell_type") == "code"
    )


def _wait_with_usage(proc: subprocess.Popen[Any]) -> tuple[int, float]:
    """Wait for ``proc``; its exit code and the CPU seconds (user + system) of it and its reaped descendants.

    ``os.wait4`` gives the resource usage of exactly this child (several notebooks end in parallel, so the
    process-wide ``RUSAGE_CHILDREN`` would mix them); where it is missing the CPU time is reported as 0.
    """
    if not hasattr(os, "wait4"):
        return proc.wait(), 0.0
    while True:
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:  # reaped elsewhere (should not happen): no usage to report
            return proc.wait(), 0.0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, float(usage.ru_utime + usage.ru_stime)


def notebook_error(path: str | Path) -> dict[str, Any] | None:
    """The first error output of an executed notebook: cell number, ename, evalue, traceback; or None."""
    import nbformat

    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception:
        return None
    code_index = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        code_index += 1
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return {
                    "cell": code_index,
                    "execution_count": cell.get("execution_count"),
                    "ename": output.get("ename", "Error"),
                    "evalue": output.get("evalue", ""),
                    "traceback": _ANSI.sub("", "\n".join(output.get("traceback", []))),
                    "source": cell.get("source", "")[:2000],
                }
    return None


def log_tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a log, ANSI colours stripped (empty when it cannot be read)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return _ANSI.sub("", "\n".join(text.splitlines()[-lines:]))


def _meta_for(run: NotebookRun, parameters: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    from rlaudit.display import versions

    return {
        "notebook": run.name,
        "subsystem": run.subsystem,
        "parameters": dict(parameters),
        "subjects": {"baseline": parameters.get("baseline"), "candidate": parameters.get("candidate")},
        "profile": parameters.get("profile"),
        "versions": versions(),
        "duration_seconds": round(run.seconds, 3),
        "finished": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        **extra,
    }


def settle(run: NotebookRun, parameters: Mapping[str, Any]) -> NotebookRun:
    """Decide a finished run's outcome and make sure its findings file tells the truth.

    - papermill failed: the findings file gets an ERROR finding naming the failed cell's error (added to
      whatever the notebook saved before failing, if anything);
    - papermill succeeded but no findings file exists: an ERROR finding saying so is saved;
    - otherwise the notebook's own findings are read back.
    """
    subsystem = run.subsystem
    saved: list[Finding] = []
    if run.findings_path.exists():
        try:
            saved, _ = load_findings(run.findings_path)
        except ValueError as exc:
            run.outcome, run.error = "no findings", f"findings file unreadable: {exc}"
    if run.returncode not in (0, None):
        error = notebook_error(run.output)
        if error is not None:
            where = (
                f"cell In [{error['execution_count']}]"
                if error["execution_count"]
                else f"code cell {error['cell']}"
            )
            run.error = f"{where}: {error['ename']}: {error['evalue']}"[:300]
            details = dict(error)
        else:
            tail = log_tail(run.log)
            run.error = f"papermill exited with code {run.returncode} (kernel died or failed to start)"
            details = {"log_tail": tail}
        details["log"] = str(run.log)
        finding = Finding.about_the_audit(
            f"{subsystem}/notebook-failed",
            subsystem,
            f"The {run.name} notebook runs to the end",
            Status.ERROR,
            f"notebook {run.name} failed in {run.error}",
            {**details, "traceback": details.get("traceback") or details.get("log_tail", "")},
            f"Open {run.html.name} to see the failing cell (its traceback is in the evidence); fix the cell or "
            f"the audit it calls, then rerun `rlaudit report --notebooks {run.name}`.",
            notebook=run.name,
        )
        run.outcome = "failed"
        run.findings = [*saved, finding]
        save_findings(run.findings_path, run.findings, _meta_for(run, parameters, {"failed": True}))
        return run
    if not run.findings_path.exists() or run.outcome == "no findings":
        reason = run.error or f"{run.findings_path} is missing"
        finding = Finding.about_the_audit(
            f"{subsystem}/findings-missing",
            subsystem,
            f"The {run.name} notebook saves its findings",
            Status.ERROR,
            f"notebook {run.name} ran but saved no findings ({reason})",
            {"expected": str(run.findings_path), "log": str(run.log)},
            "End the notebook with a cell that calls `session.finish()` and keep the `findings_dir` "
            "parameter in its parameters cell (see docs/NOTEBOOK_TEMPLATE.md).",
            notebook=run.name,
        )
        run.outcome = "no findings"
        run.error = run.error or "no findings saved"
        run.findings = [finding]
        save_findings(run.findings_path, run.findings, _meta_for(run, parameters, {"missing_findings": True}))
        return run
    run.outcome = "ok"
    run.findings = saved
    return run
