"""The report: execute every notebook with papermill, render each to HTML, and write ``index.html``.

``rlaudit report`` runs the subsystem notebooks ``NN_<name>.ipynb`` in parallel (one papermill subprocess
and kernel each, up to ``-j``), then the summary (``15_summary``) once they have all finished, renders every
executed notebook to HTML with the code hidden, and writes ``<out>/index.html``: the executive summary,
the status grid of the fourteen subsystems, every finding ranked, links to the pages, and the run's
metadata. A notebook that fails is still rendered with its error and counts as ERROR; the command finishes
the rest and exits non-zero.

``rlaudit audit`` runs the same audits without notebooks (:func:`rlaudit.audits.run_audits`).

Layout of ``<out>`` (default ``reports/``)::

    index.html                the entry point (self-contained)
    NN_<name>.html            one rendered page per notebook
    findings/NN_<name>.json   each notebook's findings (read by 15_summary and the index)
    findings/attribution.json optional, written by the summary's attribution experiments
    notebooks/NN_<name>.ipynb the executed notebooks, outputs included
    logs/NN_<name>.log        papermill's log of each run
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import html
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlaudit.findings import (
    SUBSYSTEMS,
    Evidence,
    Finding,
    Severity,
    Status,
    load_findings,
    notebook_name,
    save_findings,
    sort_findings,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from rlaudit.notebook import Section

_TEMPLATES = Path(__file__).resolve().parent / "templates"
_NOTEBOOK_RE = re.compile(r"^(\d\d)_([A-Za-z0-9_]+)\.ipynb$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
NOT_RUN = "NOT RUN"
SUMMARY = "15_summary"
ATTRIBUTION_FILE = "attribution.json"
"""Optional file in the findings dir that the index renders in its executive summary (see
:func:`attribution_html`)."""


# ----------------------------------------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------------------------------------


def subsystem_of(name: str) -> str:
    """``"07_optimizer"`` -> ``"optimizer"``; ``"15_summary"`` -> ``"summary"``."""
    rest = name.split("_", 1)[1] if "_" in name else name
    return rest


def _is_summary(name: str) -> bool:
    return subsystem_of(name) == "summary"


def format_seconds(seconds: float) -> str:
    """``42.1 s``, ``3m 05s``, ``1h 02m``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def _worst(findings: Iterable[Finding]) -> Status | None:
    return min((f.status for f in findings), key=lambda s: s.rank, default=None)


# ----------------------------------------------------------------------------------------------------------
# Reading findings back: the summary notebook and the index share this
# ----------------------------------------------------------------------------------------------------------


@dataclass
class Overview:
    """Every notebook's saved findings, read back from a findings directory.

    Attributes:
        findings_dir: Where the JSON files were read from.
        findings: All findings, most actionable first.
        metas: Notebook name -> the ``meta`` its JSON recorded (subjects, fingerprints, durations, ...).
        skipped: File name -> why it was left out (unreadable, or written for another pair of subjects).
        attribution: The parsed ``attribution.json`` when present, else None.
    """

    findings_dir: Path
    findings: list[Finding] = field(default_factory=list)
    metas: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    attribution: Any = None

    def by_notebook(self) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = {name: [] for name in self.metas}
        for f in self.findings:
            out.setdefault(f.notebook, []).append(f)
        return out

    def grid(self) -> pd.DataFrame:
        """:func:`status_grid` of these findings."""
        return status_grid(self.findings)

    def fingerprints(self) -> dict[str, str]:
        for meta in self.metas.values():
            if meta.get("fingerprints"):
                return dict(meta["fingerprints"])
        return {}

    def status_section(self) -> Section:
        """A section with the status grid as a table and as a figure (no findings of its own)."""
        from rlaudit.notebook import Section

        grid = self.grid()
        return Section(
            title="Status of the fourteen subsystems",
            notes=[
                "One row per subsystem: how many of its checks ended in each verdict. The worst verdict "
                "decides the row; NOT RUN means no findings were saved for it."
            ],
            tables={"status grid": grid},
            figures={"status grid": plot_status_grid(grid)},
        )

    def ranked_section(self) -> Section:
        """The findings of every notebook, most actionable first (shown, not owned by the summary)."""
        from rlaudit.notebook import FindingsView, Section, verdict_line

        flagged = [f for f in self.findings if f.status not in (Status.CLEARED, Status.SKIPPED)]
        rest = [f for f in self.findings if f.status in (Status.CLEARED, Status.SKIPPED)]
        return Section(
            title="Findings, most actionable first",
            notes=[
                f"{verdict_line(self.findings)}. Confirmed and suspect causes first, then errors and notes."
            ],
            tables={
                "confirmed, suspect, errors and notes": FindingsView(flagged),
                "cleared and skipped": FindingsView(rest),
            },
        )

    def cleared_section(self) -> Section:
        """What was checked and cleared: subsystems with nothing flagged, and each cleared hypothesis."""
        import pandas as pd

        from rlaudit.notebook import Section

        grid = self.grid()
        cleared = grid[grid["worst"] == Status.CLEARED.value].index.tolist()
        quiet = grid[grid["worst"].isin([Status.NOTED.value, Status.SKIPPED.value])].index.tolist()
        hypotheses = pd.DataFrame(
            [
                {
                    "subsystem": f.subsystem,
                    "id": f.id,
                    "hypothesis": f.hypothesis,
                    "evidence": f.evidence.summary,
                }
                for f in self.findings
                if f.status is Status.CLEARED
            ],
            columns=["subsystem", "id", "hypothesis", "evidence"],
        )
        notes = [
            "Cleared subsystems: " + (", ".join(f"`{s}`" for s in cleared) if cleared else "none") + ".",
        ]
        if quiet:
            notes.append(
                "Nothing flagged but notes or skipped checks: " + ", ".join(f"`{s}`" for s in quiet) + "."
            )
        return Section(title="What was cleared", notes=notes, tables={"cleared hypotheses": hypotheses})

    def _repr_html_(self) -> str:
        from rlaudit.notebook import findings_css

        if not self.metas:
            body = (
                f'<p class="rl-muted">No findings files in <code>{html.escape(str(self.findings_dir))}</code> yet: '
                "run the subsystem notebooks first (<code>rlaudit report</code> runs them all).</p>"
            )
        else:
            rows = []
            groups = self.by_notebook()
            for name in sorted(self.metas):
                meta = self.metas[name]
                found = groups.get(name, [])
                worst = _worst(found)
                mark = f"{worst.mark} {worst.value}" if worst else "no findings"
                seconds = meta.get("duration_seconds")
                took = format_seconds(float(seconds)) if seconds is not None else "—"
                rows.append(
                    f"<tr><td>{html.escape(name)}</td><td>{len(found)}</td><td>{html.escape(mark)}</td>"
                    f"<td>{html.escape(str(meta.get('profile', '')))}</td><td>{took}</td>"
                    f"<td>{html.escape(str(meta.get('finished', '')))}</td></tr>"
                )
            body = (
                f"<p>Read {len(self.metas)} findings files from <code>{html.escape(str(self.findings_dir))}</code>.</p>"
                '<table class="rl-table"><thead><tr><th>notebook</th><th>findings</th><th>worst</th><th>profile</th>'
                f"<th>time</th><th>finished</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            )
        if self.skipped:
            items = "".join(
                f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>" for k, v in self.skipped.items()
            )
            body += f'<p class="rl-muted">Left out:</p><ul class="rl-muted">{items}</ul>'
        return f'<style>{findings_css()}</style><div class="rl-section">{body}</div>'

    def __repr__(self) -> str:
        return (
            f"Overview({len(self.metas)} notebooks, {len(self.findings)} findings from {self.findings_dir})"
        )


def _same_pair(meta: Mapping[str, Any], parameters: Mapping[str, Any]) -> bool:
    saved = meta.get("parameters") or {}
    return all(
        str(saved.get(k, "")) == str(parameters.get(k, "")) for k in ("baseline", "candidate", "pair_file")
    )


def collect_findings(
    findings_dir: str | Path,
    *,
    exclude: Sequence[str] = (SUMMARY,),
    parameters: Mapping[str, Any] | None = None,
) -> Overview:
    """Read every ``NN_<name>.json`` in a findings directory.

    Args:
        findings_dir: The directory notebooks saved their findings to.
        exclude: Notebook names to leave out (the summary itself, by default).
        parameters: When given (``baseline``, ``candidate``, ``pair_file``), files saved for another pair of
            subjects are left out, so stale findings of an earlier investigation never mix in.

    Returns:
        An :class:`Overview`; a directory that does not exist yields an empty one.
    """
    directory = Path(findings_dir)
    overview = Overview(findings_dir=directory)
    if not directory.is_dir():
        return overview
    found: list[Finding] = []
    for path in sorted(directory.glob("*.json")):
        name = path.stem
        if path.name == ATTRIBUTION_FILE or name in exclude:
            continue
        try:
            findings, meta = load_findings(path)
        except (ValueError, OSError, TypeError, KeyError) as exc:
            overview.skipped[path.name] = f"unreadable: {exc}"
            continue
        if parameters is not None and not _same_pair(meta, parameters):
            saved = meta.get("parameters") or {}
            overview.skipped[path.name] = (
                f"saved for {saved.get('baseline', '?')} vs {saved.get('candidate', '?')}, not this pair"
            )
            continue
        for f in findings:
            f.notebook = f.notebook or name
        overview.metas[name] = meta
        found.extend(findings)
    overview.findings = sort_findings(found)
    attribution = directory / ATTRIBUTION_FILE
    if attribution.exists():
        try:
            overview.attribution = json.loads(attribution.read_text())
        except (ValueError, OSError) as exc:
            overview.skipped[ATTRIBUTION_FILE] = f"unreadable: {exc}"
        else:
            _inline_figures(overview.attribution, directory)
    return overview


def _inline_figures(data: Any, directory: Path) -> None:
    """Embed the PNG files an attribution.json names (``figures: [{name, file}]``) as base64, so the index
    stays one self-contained page."""
    import base64

    if not isinstance(data, dict):
        return
    for fig in data.get("figures") or []:
        path = directory / str(fig.get("file", ""))
        if isinstance(fig, dict) and path.is_file():
            fig["data"] = base64.b64encode(path.read_bytes()).decode("ascii")


def status_grid(findings: Iterable[Finding], subsystems: Sequence[str] = SUBSYSTEMS) -> pd.DataFrame:
    """Subsystem x status counts and the worst status per subsystem.

    Args:
        findings: Findings of any notebooks.
        subsystems: Row order (the fourteen by default).

    Returns:
        DataFrame indexed by subsystem with columns ``notebook``, ``worst`` (a status, or "NOT RUN" when the
        subsystem has no findings), one count column per status (CONFIRMED ... CLEARED) and ``total``.
    """
    import pandas as pd

    items = list(findings)
    rows = []
    for subsystem in subsystems:
        mine = [f for f in items if f.subsystem == subsystem]
        counts = {s.value: sum(1 for f in mine if f.status is s) for s in Status}
        worst = _worst(mine)
        rows.append(
            {
                "subsystem": subsystem,
                "notebook": notebook_name(subsystem) if subsystem in SUBSYSTEMS else subsystem,
                "worst": worst.value if worst else NOT_RUN,
                **counts,
                "total": len(mine),
            }
        )
    return pd.DataFrame(rows).set_index("subsystem")


def plot_status_grid(grid: pd.DataFrame) -> Figure:
    """The status grid as a heatmap: one row per subsystem, one column per status, coloured by status.

    Cells with zero findings are pale; the number in each cell is the count. Built without pyplot.
    """
    import numpy as np
    from matplotlib.colors import to_rgba
    from matplotlib.figure import Figure

    colours = {
        "CONFIRMED": "#dc2626",
        "SUSPECT": "#ea580c",
        "ERROR": "#9333ea",
        "NOTED": "#ca8a04",
        "SKIPPED": "#64748b",
        "CLEARED": "#16a34a",
    }
    statuses = [s.value for s in Status]
    counts = grid[statuses].to_numpy(dtype=float)
    image = np.ones((*counts.shape, 4))
    for j, status in enumerate(statuses):
        for i in range(counts.shape[0]):
            image[i, j] = to_rgba(colours[status], 0.85) if counts[i, j] > 0 else to_rgba("#f3f4f6")
    fig = Figure(figsize=(7.5, 0.38 * len(grid) + 1.2), layout="constrained")
    ax = fig.subplots()
    ax.imshow(image, aspect="auto")
    for i in range(counts.shape[0]):
        for j in range(counts.shape[1]):
            if counts[i, j] > 0:
                ax.text(
                    j, i, f"{int(counts[i, j])}", ha="center", va="center", color="white", fontweight="bold"
                )
    ax.set_xticks(range(len(statuses)), statuses, rotation=30, ha="right")
    labels = [f"{nb}  ({worst})" for nb, worst in zip(grid["notebook"], grid["worst"], strict=True)]
    ax.set_yticks(range(len(grid)), labels)
    ax.set_xticks(np.arange(-0.5, len(statuses)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(grid)), minor=True)
    ax.grid(which="minor", color="white", linewidth=2)
    ax.tick_params(which="minor", length=0)
    ax.set_title("findings per subsystem and verdict")
    return fig


def attribution_html(data: Any) -> str:
    """Render ``attribution.json`` for the index's executive summary.

    The summary's attribution experiments own the file's content; this renders what it finds: an optional
    ``title`` and ``summary`` (sentences), and a table from the first list of records under ``causes``,
    ``rows`` or ``experiments`` (one column per key; values formatted briefly). Anything else is shown as
    formatted JSON, so a newer format is never hidden.
    """
    from rlaudit.notebook import format_value

    if not isinstance(data, Mapping):
        return f"<pre>{html.escape(json.dumps(data, indent=2, ensure_ascii=False))}</pre>"
    parts = []
    if isinstance(data.get("sentences"), list) and data["sentences"]:
        items = "".join(f"<li>{html.escape(str(s))}</li>" for s in data["sentences"])
        parts.append(f'<ul class="rl-summary">{items}</ul>')
    elif data.get("summary"):
        parts.append(f"<p>{html.escape(str(data['summary']))}</p>")
    records = next(
        (data[k] for k in ("causes", "rows", "experiments") if isinstance(data.get(k), list) and data[k]),
        None,
    )
    if records and all(isinstance(r, Mapping) for r in records):
        columns = list(dict.fromkeys(k for r in records for k in r))
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(format_value(r.get(c)))}</td>" for c in columns) + "</tr>"
            for r in records
        )
        parts.append(f'<table class="rl-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')
    else:
        rest = {k: v for k, v in data.items() if k not in ("summary", "title", "sentences", "figures")}
        parts.append(f"<pre>{html.escape(json.dumps(rest, indent=2, ensure_ascii=False))}</pre>")
    for fig in data.get("figures") or []:
        if isinstance(fig, Mapping) and fig.get("data"):
            name = html.escape(str(fig.get("name", "")))
            parts.append(
                f'<figure class="rl-figure"><img alt="{name}" src="data:image/png;base64,{fig["data"]}">'
                f"<figcaption>{name}</figcaption></figure>"
            )
    return "".join(parts)


# ----------------------------------------------------------------------------------------------------------
# Running notebooks
# ----------------------------------------------------------------------------------------------------------


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
_NO_IRI_CHECKER = "import sys; sys.modules['rfc3987_syntax'] = None; "
_PAPERMILL_MAIN = _NO_IRI_CHECKER + "from papermill.cli import papermill; papermill()"


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


def notebook_environment(
    jobs: int,
    executor: str = "local",
    ray_address: str = "auto",
    *,
    probe_jobs: int | None = None,
    fresh_since: float | None = None,
) -> dict[str, str]:
    """Environment of each papermill subprocess (and so of its kernel and the workers it starts).

    Args:
        jobs: Notebooks running at once; above 1 every worker runs torch (and BLAS) on one thread.
        executor: ``local`` or ``ray``; passed on as ``RLAUDIT_EXECUTOR`` when not local.
        ray_address: Passed on as ``RLAUDIT_RAY_ADDRESS`` with the ray executor.
        probe_jobs: Probe calls each notebook's workbench runs at once (``RLAUDIT_JOBS``), unless the user
            set ``RLAUDIT_JOBS`` already.
        fresh_since: With ``--fresh``: the report's start time (``RLAUDIT_FRESH_SINCE``), so artifacts one
            notebook recomputed are reused by the next instead of being recomputed once per notebook.
    """
    from rlaudit.paths import LIB_DIR

    env = dict(os.environ)
    # The kernel must import the same rlaudit as this process, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(LIB_DIR), env.get("PYTHONPATH", "")) if p)
    env["RLAUDIT_INTERACTIVE"] = "0"  # no frontend renders widgets here: draw static figures
    # Prefer this environment's "python3" kernelspec over a user-level one (as the Makefile does).
    env.setdefault("JUPYTER_PREFER_ENV_PATH", "1")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if jobs > 1:
        # Several notebooks (and their workers) share the cores: one torch/BLAS thread each.
        env["RLAUDIT_TORCH_THREADS"] = "1"
        env.setdefault("OMP_NUM_THREADS", "1")
    if probe_jobs is not None and "RLAUDIT_JOBS" not in os.environ:
        env["RLAUDIT_JOBS"] = str(probe_jobs)
    if fresh_since is not None:
        env["RLAUDIT_FRESH_SINCE"] = repr(fresh_since)
    if executor != "local":
        env["RLAUDIT_EXECUTOR"] = executor
        env["RLAUDIT_RAY_ADDRESS"] = ray_address
    return env


def execute(
    run: NotebookRun, parameters: Mapping[str, Any], cwd: Path, env: Mapping[str, str]
) -> NotebookRun:
    """Run one notebook with papermill; fills ``returncode``, ``seconds`` and ``cpu_seconds``.

    Inside :func:`run_report` with shared kernels (the default, see :data:`KERNELS_VARIABLE`) the notebook runs
    on a free lane: a kernel that ran earlier notebooks of the report, namespace reset, its subjects' workers
    still running. Otherwise papermill runs in a subprocess of its own with a fresh kernel.
    """
    lanes = _ACTIVE_LANES
    if lanes is not None:
        return lanes.execute(run, parameters, env)
    run.output.parent.mkdir(parents=True, exist_ok=True)
    run.log.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open(run.log, "w") as log:
        log.write(f"$ {shlex.join(papermill_command(run, parameters, cwd))}\n\n")
        log.flush()
        proc = subprocess.Popen(
            papermill_command(run, parameters, cwd),
            cwd=cwd,
            env=dict(env),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            run.returncode, run.cpu_seconds = _wait_with_usage(proc)
        except BaseException:  # interrupted: do not leave papermill (and its kernel) running
            proc.kill()
            proc.wait()
            raise
    run.seconds = time.perf_counter() - started
    return run


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


# ----------------------------------------------------------------------------------------------------------
# Lanes: kernels shared by the notebooks of one report
# ----------------------------------------------------------------------------------------------------------

KERNELS_VARIABLE = "RLAUDIT_REPORT_KERNELS"
"""``shared`` (the default): ``rlaudit report -j N`` runs its notebooks on N lanes, each one papermill process
with one kernel that runs notebook after notebook; ``fresh``: one papermill process and kernel per notebook.

A fresh kernel per notebook costs its start and imports (pandas, matplotlib, scipy: ~1.5 s of CPU), and each
notebook's workbench then starts a worker per subject that imports torch and the subject again (~3 s of CPU
each for the built-ins): over fifteen notebooks, a quarter of a standard report's CPU. On a lane the kernel's
namespace is reset between notebooks (``get_ipython().reset()``, figures closed, the environment set to the
notebook's), so each starts from a clean slate as in a fresh kernel, while imported modules and the idle
workers of the previous notebook's workbench (:func:`rlaudit.workbench.keep_workers`, only for the same
subject fingerprint) carry over. A lane whose kernel dies gets a new kernel for its next notebook."""

_ACTIVE_LANES: _Lanes | None = None

_LANE_MAIN = _NO_IRI_CHECKER + "from rlaudit.report import lane_main; sys.exit(lane_main())"

# Run in a lane's kernel once, after it started: keep idle workers between the notebooks' workbenches.
_LANE_SETUP = "import rlaudit.workbench as _w\n_w.keep_workers(4)\ndel _w\n"

# Run in a lane's kernel before every notebook but the first: a clean namespace, as a fresh kernel has. The
# collection lets the previous notebook's workbench hand its idle workers to the kept pool now.
_LANE_RESET = (
    "get_ipython().reset(new_session=True)\n"
    "import sys as _sys\n"
    "if 'matplotlib.pyplot' in _sys.modules:\n"
    "    _sys.modules['matplotlib.pyplot'].close('all')\n"
    "del _sys\n"
    "import gc as _gc\n"
    "_gc.collect()\n"
    "del _gc\n"
)


def shared_kernels() -> bool:
    """True unless ``RLAUDIT_REPORT_KERNELS=fresh`` asks for a fresh kernel per notebook."""
    return os.environ.get(KERNELS_VARIABLE, "shared").strip().lower() != "fresh"


class _Lane:
    """The report's handle on one lane process (``lane_main``): JSON lines over its stdin and stdout."""

    def __init__(self, index: int, cwd: Path, env: Mapping[str, str], log: Path) -> None:
        self.index = index
        self.cwd = cwd
        self.env = dict(env)
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self.proc is not None and self.proc.poll() is None:
            return self.proc
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _LANE_MAIN],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,  # Ctrl-C reaches the report, which stops its lanes itself
            )
        return self.proc

    def run(self, run: NotebookRun, parameters: Mapping[str, Any], env: Mapping[str, str]) -> NotebookRun:
        run.output.parent.mkdir(parents=True, exist_ok=True)
        run.log.parent.mkdir(parents=True, exist_ok=True)
        run.log.write_text(f"# {run.name} on lane {self.index} (shared kernel; lane log {self.log})\n\n")
        request = {
            "source": str(run.source),
            "output": str(run.output),
            "log": str(run.log),
            "parameters": dict(parameters),
            # The kernel started with the lane's environment: what this notebook's differs by, and how to undo it.
            "env": {k: v for k, v in env.items() if self.env.get(k) != v},
            "unset": [k for k in self.env if k not in env],
        }
        request["restore"] = {k: self.env[k] for k in [*request["env"], *request["unset"]] if k in self.env}
        request["drop"] = [k for k in request["env"] if k not in self.env]
        started = time.perf_counter()
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
            line = proc.stdout.readline()
        except OSError:
            line = b""
        run.seconds = time.perf_counter() - started
        if not line:  # the lane process died: its log says why; the next notebook gets a new one
            code = proc.wait()
            with open(run.log, "a") as log:
                log.write(f"\nthe lane process exited with code {code} while running {run.name}:\n")
                log.write(_log_tail(self.log, 40) + "\n")
            run.returncode, run.cpu_seconds = code or 1, 0.0
            return run
        reply = json.loads(line)
        run.returncode = int(reply.get("returncode", 1))
        run.cpu_seconds = float(reply.get("cpu_seconds", 0.0))
        return run

    def close(self, kill: bool = False) -> None:
        """Stop the lane (its kernel shuts down, and with it the workers); ``kill``: at once (interrupted)."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            if kill:
                raise OSError("interrupted")
            assert proc.stdin is not None
            proc.stdin.write(b'{"op": "stop"}\n')
            proc.stdin.flush()
            proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            # The kernel (a session of its own) notices its parent is gone and exits, its workers with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class _Lanes:
    """The report's lanes: ``execute`` takes a free one (the summary gets whichever is free at the end)."""

    def __init__(self, size: int, cwd: Path, env: Mapping[str, str], log_dir: Path) -> None:
        import queue

        self._all = [_Lane(i, cwd, env, log_dir / f"lane-{i}.log") for i in range(max(1, size))]
        self._free: queue.SimpleQueue[_Lane] = queue.SimpleQueue()
        for lane in self._all:
            self._free.put(lane)

    def execute(self, run: NotebookRun, parameters: Mapping[str, Any], env: Mapping[str, str]) -> NotebookRun:
        lane = self._free.get()
        try:
            return lane.run(run, parameters, env)
        finally:
            self._free.put(lane)

    def close(self, kill: bool = False) -> None:
        for lane in self._all:
            lane.close(kill=kill)


def _tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and all its descendants, reaped ones included."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


class _LaneRunner:
    """Inside a lane process: one kernel (started on first use, replaced when it dies), notebooks in turn."""

    def __init__(self) -> None:
        self.km: Any = None
        self.ran = 0

    def _alive(self) -> bool:
        from jupyter_core.utils import run_sync

        return self.km is not None and bool(run_sync(self.km.is_alive)())

    def _kernel(self) -> Any:
        if self._alive():
            return self.km
        self._stop_kernel()
        from jupyter_client.manager import AsyncKernelManager
        from jupyter_core.utils import run_sync

        # The asynchronous manager, as papermill's own client uses: with it nbclient notices a kernel that died
        # in the middle of a cell (with the synchronous one it waits forever).
        km = AsyncKernelManager(kernel_name="python3")
        run_sync(km.start_kernel)()  # this process's cwd and environment: the report's
        self.km, self.ran = km, 0
        self._run_code(_LANE_SETUP)
        return km

    def _run_code(self, code: str) -> None:
        kc = self.km.blocking_client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=180)
            reply = kc.execute_interactive(
                code, store_history=False, timeout=120, output_hook=lambda msg: None
            )
        finally:
            kc.stop_channels()
        if reply["content"].get("status") != "ok":
            content = reply["content"]
            raise RuntimeError(f"lane set-up code failed: {content.get('ename')}: {content.get('evalue')}")

    def _stop_kernel(self) -> None:
        if self.km is not None:
            from jupyter_core.utils import run_sync

            with contextlib.suppress(Exception):
                run_sync(self.km.shutdown_kernel)(now=not self._alive())
        self.km = None

    def run(self, request: Mapping[str, Any]) -> dict[str, Any]:
        import logging
        import traceback

        import papermill
        from papermill.exceptions import PapermillExecutionError

        cpu0 = _tree_cpu_seconds()
        handler = logging.FileHandler(request["log"], mode="a")
        handler.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"))
        logger = logging.getLogger("papermill")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        code = 0
        try:
            km = self._kernel()
            if self.ran:
                self._run_code(_LANE_RESET)
            self._run_code(
                "import os as _os\n"
                f"_os.environ.update({dict(request.get('env') or {})!r})\n"
                f"for _k in {list(request.get('unset') or [])!r}:\n"
                "    _os.environ.pop(_k, None)\n"
                "del _os\n"
            )
            self.ran += 1
            papermill.execute_notebook(
                request["source"],
                request["output"],
                parameters=dict(request["parameters"]),
                kernel_name="python3",
                language="python",
                engine_name=_lane_engine(),
                progress_bar=False,
                log_output=True,
                start_timeout=180,
                km=km,
            )
        except PapermillExecutionError:
            code = 1  # the failing cell is in the output notebook, as with the papermill command
        except Exception:
            code = 1
            logger.error("the notebook could not run on this lane:\n%s", traceback.format_exc())
            self._stop_kernel()  # whatever went wrong, the next notebook gets a new kernel
        finally:
            # Undo this notebook's environment so the next one starts from the report's.
            if self._alive() and (request.get("env") or request.get("unset")):
                with contextlib.suppress(Exception):
                    self._run_code(
                        "import os as _os\n"
                        f"_os.environ.update({dict(request.get('restore') or {})!r})\n"
                        f"for _k in {list(request.get('drop') or [])!r}:\n"
                        "    _os.environ.pop(_k, None)\n"
                        "del _os\n"
                    )
            logger.removeHandler(handler)
            handler.close()
        return {"returncode": code, "cpu_seconds": _tree_cpu_seconds() - cpu0}

    def close(self) -> None:
        self._stop_kernel()


def _lane_engine() -> str:
    """Register (once) and name the papermill engine that runs a notebook on a given, running kernel."""
    from papermill.engines import papermill_engines

    name = "rlaudit-lane"
    if name in papermill_engines._engines:
        return name
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine
    from papermill.log import logger
    from papermill.utils import remove_args

    class LaneEngine(NBClientEngine):
        """papermill's nbclient engine on the lane's kernel: the kernel is left running, the client closed."""

        @classmethod
        def execute_managed_notebook(
            cls,
            nb_man: Any,
            kernel_name: str,
            log_output: bool = False,
            stdout_file: Any = None,
            stderr_file: Any = None,
            start_timeout: float = 60,
            execution_timeout: float | None = None,
            **kwargs: Any,
        ) -> Any:
            km = kwargs.pop("km")
            kwargs = remove_args(["input_path", "timeout", "startup_timeout"], **kwargs)
            client = PapermillNotebookClient(
                nb_man,
                km=km,
                timeout=execution_timeout,
                startup_timeout=start_timeout,
                kernel_name=kernel_name,
                log=logger,
                log_output=log_output,
                stdout_file=stdout_file,
                stderr_file=stderr_file,
                **kwargs,
            )
            try:
                return client.execute()
            finally:
                if client.kc is not None:
                    with contextlib.suppress(Exception):
                        client.kc.stop_channels()

    papermill_engines.register(name, LaneEngine)
    return name


def lane_main() -> int:
    """A lane process: read notebook requests (JSON lines) from stdin, run each on the lane's kernel, answer
    ``{"returncode", "cpu_seconds"}`` on stdout; ``{"op": "stop"}`` or end of input stops it."""
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed (papermill, the kernel's own output) goes to the lane's log
    parent = os.getppid()

    def watch_parent() -> None:
        # The report was killed (not interrupted, which stops its lanes): go too, whatever the notebook is
        # doing. The kernel notices its parent is gone and exits, and its workers with it.
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(70)

    threading.Thread(target=watch_parent, name="rlaudit-lane-parent", daemon=True).start()
    runner = _LaneRunner()
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            request = json.loads(line)
            if request.get("op") == "stop":
                break
            replies.write(json.dumps(runner.run(request)) + "\n")
            replies.flush()
    finally:
        runner.close()
    return 0


# ----------------------------------------------------------------------------------------------------------
# Scheduling: longest first
# ----------------------------------------------------------------------------------------------------------

COST_HINTS: dict[str, float] = {
    "02_trainer": 60.0,
    "12_memory": 40.0,
    "13_seeding": 27.0,
    "05_env": 16.0,
    "06_curriculum": 10.0,
    "04_checkpointing": 6.0,
    "09_loss": 6.0,
    "11_rewards": 3.0,
    "07_optimizer": 2.0,
    "10_spaces": 2.0,
    "08_init": 1.5,
    "01_agents": 1.0,
    "03_logging": 0.5,
    "14_config": 0.5,
}
"""CPU seconds of each shipped notebook in a cold standard report on the built-in pair (-j 2, shared kernels):
what orders the first report of a profile; only the order matters. 02_trainer trains the shared runs that
03_logging and 13_seeding's variance read, so it starts first and 03_logging comes last; 12_memory computes the
short runs that 07_optimizer and 09_loss then read from the cache. After a ``--fresh`` report the measured
costs (``<out>/logs/costs.json``) take over."""

COSTS_FILE = "costs.json"


def expected_costs(out: Path, profile: str) -> dict[str, float]:
    """Expected CPU seconds per notebook: :data:`COST_HINTS`, updated by the last ``--fresh`` report of
    ``profile`` written to ``out`` (``<out>/logs/costs.json``)."""
    costs = dict(COST_HINTS)
    try:
        saved = json.loads((out / "logs" / COSTS_FILE).read_text())
        costs.update({str(k): float(v) for k, v in saved.get(profile, {}).items()})
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    return costs


def save_costs(out: Path, profile: str, runs: Sequence[NotebookRun]) -> None:
    """Record the CPU seconds of these (cold) runs for :func:`expected_costs`; other profiles' are kept."""
    path = out / "logs" / COSTS_FILE
    try:
        saved = json.loads(path.read_text())
        if not isinstance(saved, dict):
            saved = {}
    except (OSError, ValueError):
        saved = {}
    mine = dict(saved.get(profile) or {})
    mine.update({r.name: round(r.cpu_seconds, 1) for r in runs if r.cpu_seconds > 0})
    saved[profile] = mine
    from rlaudit.io import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(saved, indent=2, sort_keys=True))


def schedule(runs: Sequence[NotebookRun], costs: Mapping[str, float]) -> list[NotebookRun]:
    """The order to start notebooks in: longest expected first (a notebook with no estimate counts as the
    longest, so an unknown long one never starts last), ties by name.

    With -j lanes taking the next notebook as each frees up, longest-first keeps the lanes' finishing times
    within about one short notebook of each other.
    """
    unknown = max(costs.values(), default=0.0)
    return sorted(runs, key=lambda r: (-float(costs.get(r.name, unknown)), r.name))


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


def _log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return _ANSI.sub("", "\n".join(text.splitlines()[-lines:]))


def _meta_for(run: NotebookRun, parameters: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    from rlaudit.notebook import versions

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
            tail = _log_tail(run.log)
            run.error = f"papermill exited with code {run.returncode} (kernel died or failed to start)"
            details = {"log_tail": tail}
        details["log"] = str(run.log)
        finding = Finding(
            id=f"{subsystem}/notebook-failed",
            subsystem=subsystem,
            hypothesis=f"The {run.name} notebook runs to the end",
            status=Status.ERROR,
            severity=Severity.INFO,
            evidence=Evidence(
                summary=f"notebook {run.name} failed in {run.error}",
                details={**details, "traceback": details.get("traceback") or details.get("log_tail", "")},
            ),
            remediation=(
                f"Open {run.html.name} to see the failing cell (its traceback is in the evidence); fix the cell or "
                f"the audit it calls, then rerun `rlaudit report --notebooks {run.name}`."
            ),
            notebook=run.name,
        )
        run.outcome = "failed"
        run.findings = [*saved, finding]
        save_findings(run.findings_path, run.findings, _meta_for(run, parameters, {"failed": True}))
        return run
    if not run.findings_path.exists() or run.outcome == "no findings":
        reason = run.error or f"{run.findings_path} is missing"
        finding = Finding(
            id=f"{subsystem}/findings-missing",
            subsystem=subsystem,
            hypothesis=f"The {run.name} notebook saves its findings",
            status=Status.ERROR,
            severity=Severity.INFO,
            evidence=Evidence(
                summary=f"notebook {run.name} ran but saved no findings ({reason})",
                details={"expected": str(run.findings_path), "log": str(run.log)},
            ),
            remediation=(
                "End the notebook with a cell that calls `session.finish()` and keep the `findings_dir` "
                "parameter in its parameters cell (see docs/NOTEBOOK_TEMPLATE.md)."
            ),
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


def _banner(run: NotebookRun) -> str:
    worst = _worst(run.findings)
    status = f"{worst.mark} {worst.value}" if worst else "no findings"
    note = f" · {html.escape(run.error)}" if run.error else ""
    return (
        '<div style="font-family: system-ui, sans-serif; font-size: 14px; padding: 8px 16px; '
        'background: #f5f7ff; border-bottom: 1px solid #c7d2fe;">'
        f'<a href="index.html" style="color: #4338ca;">← report index</a> · <b>{html.escape(run.name)}</b> · '
        f"{html.escape(status)} · {format_seconds(run.seconds)}{note}</div>"
    )


def render(run: NotebookRun) -> NotebookRun:
    """Render the executed notebook to HTML with the code hidden (outputs, findings and figures shown).

    A notebook papermill never wrote (the kernel did not start) becomes a page with the log's tail.
    """
    started = time.perf_counter()
    run.html.parent.mkdir(parents=True, exist_ok=True)
    page = None
    if run.output.exists():
        try:
            import nbformat
            from nbconvert import HTMLExporter

            nb = nbformat.read(str(run.output), as_version=4)
            exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
            page, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": run.name}})
        except Exception as exc:  # a corrupt notebook still gets a page
            run.error = run.error or f"rendering failed: {exc}"
            page = None
    if page is None:
        page = (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(run.name)}</title></head><body>"
            f"<h1>{html.escape(run.name)}</h1><p>The notebook produced no output to render. "
            f"{html.escape(run.error)}</p><pre>{html.escape(_log_tail(run.log, 80))}</pre></body></html>"
        )
    page = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + _banner(run), page, count=1)
    run.html.write_text(page, encoding="utf-8")
    run.render_seconds = time.perf_counter() - started
    return run


# ----------------------------------------------------------------------------------------------------------
# The index
# ----------------------------------------------------------------------------------------------------------


def _page_href(out: Path, name: str) -> str | None:
    return f"{name}.html" if (out / f"{name}.html").exists() else None


def write_index(
    out: Path,
    overview: Overview,
    runs: Sequence[NotebookRun],
    info: Mapping[str, Any],
) -> Path:
    """Write ``<out>/index.html`` (self-contained: inline CSS, no scripts).

    Args:
        out: The report directory.
        overview: Findings of every notebook (read back from the findings dir).
        runs: The notebooks executed in this run.
        info: Run metadata: ``parameters``, ``profile``, ``profile_sizes``, ``versions``, ``started``,
            ``wall_seconds``, ``options``, ``command``.
    """
    import jinja2

    from rlaudit.notebook import findings_css, findings_html, versions

    def link(f: Finding) -> str | None:
        return _page_href(out, f.notebook or notebook_name(f.subsystem))

    findings = overview.findings
    flagged = [f for f in findings if f.status.is_flag]
    errors = [f for f in findings if f.status is Status.ERROR]
    ranked = [f for f in findings if f.status not in (Status.CLEARED, Status.SKIPPED)]
    rest = [f for f in findings if f.status in (Status.CLEARED, Status.SKIPPED)]
    ran_names = {r.name for r in runs}
    durations = {r.name: r.seconds for r in runs}
    for name, meta in overview.metas.items():
        if name not in durations and meta.get("duration_seconds") is not None:
            durations[name] = float(meta["duration_seconds"])

    grid_rows = []
    grid = overview.grid()
    for subsystem, row in grid.iterrows():
        nb = row["notebook"]
        worst = row["worst"]
        worst_key = worst.replace(" ", "_")
        grid_rows.append(
            {
                "subsystem": subsystem,
                "notebook": nb,
                "href": _page_href(out, nb),
                "worst": worst,
                "worst_key": worst_key,
                "mark": Status(worst).mark if worst != NOT_RUN else "·",
                "counts": {s.value: int(row[s.value]) for s in Status},
                # Findings filed under this subsystem by other notebooks (the config notebook files each
                # changed key under its subsystem), so a reader knows which page holds the evidence.
                "sources": sorted(
                    {f.notebook for f in findings if f.subsystem == subsystem and f.notebook != nb}
                ),
                "time": format_seconds(durations[nb]) if nb in durations else "",
            }
        )
    cleared = [r for r in grid_rows if r["worst"] == Status.CLEARED.value]
    quiet = [r for r in grid_rows if r["worst"] in (Status.NOTED.value, Status.SKIPPED.value)]
    not_run = [r["notebook"] for r in grid_rows if r["worst"] == NOT_RUN]

    n_conf = sum(1 for f in flagged if f.status is Status.CONFIRMED)
    n_susp = len(flagged) - n_conf
    order = {s: i for i, s in enumerate(SUBSYSTEMS)}
    flagged_subsystems = sorted({f.subsystem for f in flagged}, key=lambda s: order.get(s, len(order)))
    cleared_text = f"{len(cleared)} of {len(SUBSYSTEMS)} subsystems cleared"
    if flagged:
        counts = " and ".join(
            f"{n} {label}" for n, label in ((n_conf, "confirmed"), (n_susp, "suspect")) if n
        )
        noun = "finding" if len(flagged) == 1 else "findings"
        verdict = f"{counts} {noun} in {', '.join(flagged_subsystems)}; {cleared_text}"
        verdict_class = "bad"
    elif findings:
        verdict = f"Nothing confirmed or suspect; {cleared_text}"
        verdict_class = "good" if not errors else ""
    else:
        verdict = "No findings were saved: every notebook failed or none ran"
        verdict_class = "bad"
    if errors:
        verdict += f"; {len(errors)} check{'s' if len(errors) != 1 else ''} could not finish (ERROR)"
    verdict += "."

    warnings = [f"{name}: {why}" for name, why in overview.skipped.items()]
    failed = [r for r in runs if r.outcome != "ok"]
    if failed:
        names = ", ".join(r.name for r in failed)
        warnings.insert(0, f"Did not finish cleanly: {names}. Their pages show the error.")

    run_rows = []
    for r in runs:
        worst = _worst(r.findings)
        run_rows.append(
            {
                "name": r.name,
                "href": _page_href(out, r.name),
                "status": r.outcome,
                "status_key": "CLEARED" if r.outcome == "ok" else "ERROR",
                "error": r.error,
                "findings": f"{len(r.findings)}" + (f" (worst {worst.value})" if worst else ""),
                "time": format_seconds(r.seconds),
                "log_href": os.path.relpath(r.log, out) if r.log.exists() else None,
            }
        )
    earlier = []
    for name, meta in sorted(overview.metas.items()):
        if name in ran_names or not _page_href(out, name):
            continue
        count = sum(1 for f in findings if f.notebook == name)
        seconds = meta.get("duration_seconds")
        earlier.append(
            {
                "name": name,
                "href": _page_href(out, name),
                "finished": meta.get("finished", "?"),
                "findings": count,
                "time": format_seconds(float(seconds)) if seconds is not None else "",
            }
        )

    longest = max((r.seconds for r in runs), default=0.0) or 1.0
    timing = [
        {"name": r.name, "time": format_seconds(r.seconds), "width": int(240 * r.seconds / longest)}
        for r in sorted(runs, key=lambda r: -r.seconds)
    ]
    parameters = info.get("parameters", {})
    context = {
        "css": (_TEMPLATES / "index.css").read_text(),
        "findings_css": findings_css(),
        "subjects": {
            "baseline": parameters.get("baseline", "?"),
            "candidate": parameters.get("candidate", "?"),
        },
        "fingerprints": overview.fingerprints(),
        "pair_file": parameters.get("pair_file", ""),
        "profile": info.get("profile", parameters.get("profile", "?")),
        "profile_sizes": info.get("profile_sizes", ""),
        "options": info.get("options", ""),
        "versions": info.get("versions") or versions(),
        "generated": info.get("started", ""),
        "total_wall": format_seconds(float(info.get("wall_seconds", 0.0))),
        "total_notebooks": format_seconds(sum(r.seconds for r in runs)),
        "total_render": format_seconds(sum(r.render_seconds for r in runs)),
        "command": info.get("command", ""),
        "verdict": verdict,
        "verdict_class": verdict_class,
        "warnings": warnings,
        "attribution_html": attribution_html(overview.attribution)
        if overview.attribution is not None
        else "",
        "flagged_html": findings_html(flagged, link=link, empty="Nothing confirmed or suspect."),
        "errors_html": findings_html(errors, link=link) if errors else "",
        "cleared": cleared,
        "quiet": quiet,
        "not_run": not_run,
        "statuses": [s.value for s in Status],
        "grid": grid_rows,
        "ranked_html": findings_html(ranked, link=link, empty="Nothing but cleared or skipped checks."),
        "rest_html": findings_html(rest, link=link),
        "rest_count": len(rest),
        "runs": run_rows,
        "earlier": earlier,
        "timing": timing,
    }
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    page = env.get_template("index.html.j2").render(**context)
    from rlaudit.io import atomic_write_text

    path = atomic_write_text(out / "index.html", page)
    path.chmod(
        0o644
    )  # the atomic write's temporary file is private; the report is meant to be served and shared
    return path


# ----------------------------------------------------------------------------------------------------------
# The commands
# ----------------------------------------------------------------------------------------------------------


def _parameters(args: Any) -> dict[str, Any]:
    from rlaudit.paths import user_dir
    from rlaudit.profiles import get_profile

    pair = str(getattr(args, "pair", "") or "")
    if pair:
        pair_path = user_dir() / Path(pair).expanduser()
        if not pair_path.exists():
            raise FileNotFoundError(
                f"pair file {pair} does not exist; pass a YAML file declaring both subjects"
            )
        pair = str(pair_path.resolve())
    return {
        "baseline": str(args.baseline),
        "candidate": str(args.candidate),
        "profile": get_profile(getattr(args, "profile", None)).name,
        "pair_file": pair,
        "fresh": bool(getattr(args, "fresh", False)),
        "metric": str(getattr(args, "metric", "") or ""),
    }


def _summary_parameters(args: Any, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The summary's parameters: the pair's, plus the variant arms and the change-set search switch."""
    return {
        **parameters,
        "variants": str(getattr(args, "variants", "") or ""),
        "changes": str(getattr(args, "changes", "") or "auto"),
    }


def _command_line(parameters: Mapping[str, Any], jobs: int, notebooks: str) -> str:
    """The command that reproduces this report."""
    words = [
        "rlaudit",
        "report",
        "--baseline",
        parameters["baseline"],
        "--candidate",
        parameters["candidate"],
    ]
    if parameters.get("pair_file"):
        words += ["--pair", parameters["pair_file"]]
    for key in ("metric", "variants"):
        if parameters.get(key):
            words += [f"--{key}", str(parameters[key])]
    if parameters.get("changes") not in (None, "", "auto"):
        words += ["--changes", str(parameters["changes"])]
    words += ["--profile", parameters["profile"], "-j", str(jobs)]
    if parameters.get("fresh"):
        words.append("--fresh")
    if notebooks:
        words += ["--notebooks", notebooks]
    return shlex.join(words)


_PRINT_LOCK = threading.Lock()


def _print(line: str = "") -> None:
    with _PRINT_LOCK:  # the lanes' threads print too: one line at a time
        print(line, flush=True)


def run_report(args: Any) -> int:
    """``rlaudit report``: execute the notebooks, render the pages, write ``index.html``.

    Args:
        args: Parsed arguments of ``rlaudit report`` (baseline, candidate, pair, profile, fresh, jobs,
            executor, ray_address, out, notebooks).

    Returns:
        0 when every notebook ran and saved its findings, 1 otherwise (the report is written either way).
    """
    from rlaudit.notebook import versions
    from rlaudit.paths import notebooks_dir, reports_dir
    from rlaudit.profiles import get_profile

    wall_start = time.perf_counter()
    started = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    jobs = max(1, int(getattr(args, "jobs", 1) or 1))
    nb_dir = notebooks_dir()
    selected = discover_notebooks(nb_dir, getattr(args, "notebooks", "") or "")
    parameters = _parameters(args)
    out = Path(args.out).expanduser().resolve() if getattr(args, "out", None) else reports_dir()
    findings_dir = out / "findings"
    findings_dir.mkdir(parents=True, exist_ok=True)
    parameters["findings_dir"] = str(findings_dir)
    executor = getattr(args, "executor", "local")
    ray_address = getattr(args, "ray_address", "auto")
    fresh_since = time.time() if parameters["fresh"] else None
    # While up to -j notebooks run side by side each probes one job at a time; the summary runs alone and
    # may use all -j for its attribution runs.
    env = notebook_environment(
        jobs, executor, ray_address, probe_jobs=1 if jobs > 1 else None, fresh_since=fresh_since
    )
    env_last = notebook_environment(jobs, executor, ray_address, probe_jobs=jobs, fresh_since=fresh_since)

    runs = [
        NotebookRun(
            name=p.stem,
            source=p,
            output=out / "notebooks" / p.name,
            html=out / f"{p.stem}.html",
            log=out / "logs" / f"{p.stem}.log",
            findings_path=findings_dir / f"{p.stem}.json",
        )
        for p in selected
    ]
    for run in runs:
        # A findings file left from an earlier run would hide a notebook that now fails to save one.
        run.findings_path.unlink(missing_ok=True)
    first = [r for r in runs if not _is_summary(r.name)]
    last = [r for r in runs if _is_summary(r.name)]

    _print(
        f"rlaudit report: {parameters['baseline']} vs {parameters['candidate']} · profile {parameters['profile']} · "
        f"{len(runs)} notebook{'s' if len(runs) != 1 else ''} · -j {jobs} · output {out}"
    )
    done = 0

    def finished(run: NotebookRun) -> None:
        nonlocal done
        settle(run, parameters)
        render(run)
        done += 1
        worst = _worst(run.findings)
        verdict = f"{worst.mark} {worst.value}" if worst else "no findings"
        flag = "ok" if run.outcome == "ok" else f"FAILED ({run.error})"
        _print(
            f"  [{done}/{len(runs)}] {run.name:<18} {format_seconds(run.seconds):>8}  {flag} · worst {verdict}"
        )

    summary_parameters = _summary_parameters(args, parameters)

    def start(run: NotebookRun, run_env: Mapping[str, str]) -> NotebookRun:
        _print(f"  started {run.name}")
        given = summary_parameters if _is_summary(run.name) else parameters
        return execute(run, given, nb_dir, run_env)

    global _ACTIVE_LANES
    lanes = _Lanes(jobs, nb_dir, env, out / "logs") if shared_kernels() else None
    _ACTIVE_LANES = lanes
    try:
        # Longest expected first, so that the -j lanes finish together instead of one waiting on a long tail.
        ordered = schedule(first, expected_costs(out, parameters["profile"]))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(start, run, env): run for run in ordered}
            try:
                for future in as_completed(futures):
                    finished(future.result())
            except BaseException:
                for future in futures:
                    future.cancel()
                if lanes is not None:
                    lanes.close(kill=True)  # else leaving this block would wait for the running notebooks
                raise
        for run in last:  # the summary reads everyone else's findings, so it runs after they all finished
            finished(start(run, env_last))
    except BaseException:
        if lanes is not None:
            lanes.close(kill=True)  # interrupted: do not wait for the notebooks running on them
        raise
    finally:
        _ACTIVE_LANES = None
        if lanes is not None:
            lanes.close()
    if parameters["fresh"]:
        save_costs(out, parameters["profile"], [r for r in runs if r.outcome == "ok"])

    overview = collect_findings(findings_dir, exclude=(), parameters=parameters)
    profile = get_profile(parameters["profile"])
    info = {
        "parameters": parameters,
        "profile": profile.name,
        "profile_sizes": f"{profile.seeds} seeds, {profile.train_steps:,} train steps, "
        f"{profile.rollout_steps:,} rollout steps",
        "options": f"-j {jobs}, executor {executor}, fresh {'yes' if parameters['fresh'] else 'no'}",
        "versions": versions(),
        "started": started,
        "wall_seconds": time.perf_counter() - wall_start,
        "command": _command_line(summary_parameters, jobs, getattr(args, "notebooks", "") or ""),
    }
    index = write_index(out, overview, runs, info)
    wall = time.perf_counter() - wall_start

    failed = [r for r in runs if r.outcome != "ok"]
    _print()
    _print(f"report: {index}")
    if failed:
        _print(
            f"{len(failed)} notebook(s) did not finish cleanly: "
            + ", ".join(f"{r.name} ({r.error})" for r in failed)
        )
    _print("where the time went:")
    longest = max((r.seconds for r in runs), default=0.0) or 1.0
    for run in sorted(runs, key=lambda r: -r.seconds):
        bar = "█" * max(1, int(30 * run.seconds / longest))
        _print(
            f"  {run.name:<18} {format_seconds(run.seconds):>8}  cpu {format_seconds(run.cpu_seconds):>8}  {bar}"
        )
    _print(
        f"  total wall {format_seconds(wall)} (notebooks {format_seconds(sum(r.seconds for r in runs))} "
        f"summed over {jobs} job{'s' if jobs != 1 else ''}, cpu {format_seconds(sum(r.cpu_seconds for r in runs))}, "
        f"rendering {format_seconds(sum(r.render_seconds for r in runs))})"
    )
    return 1 if failed else 0


_BENCH_CELLS = (
    "import rlaudit.notebook as rn\n"
    "from rlaudit.findings import Evidence, Finding\n"
    "session = rn.Session(SUBSYSTEM, baseline, candidate, profile, pair_file=pair_file, fresh=fresh,\n"
    "                     findings_dir=findings_dir)",
    "session.add(Finding(id=SUBSYSTEM + '/bench', subsystem=SUBSYSTEM, hypothesis='The report runs',\n"
    "                    status='CLEARED', evidence=Evidence(baseline=1, candidate=1, summary='same')))",
    "session.finish()",
)


def bench_report(quick: bool = False) -> list[dict[str, Any]]:
    """``rlaudit bench report``: what the report machinery costs around the audits themselves.

    Runs trivial notebooks (a session, one finding, ``finish()``) through :func:`run_report` in a temporary
    home, once with ``-j 1`` and once with ``-j 2``, and writes an index of 14 x 10 synthetic findings.

    Returns:
        Figures (``name``, ``value``, ``unit``; the ``-j`` comparison also ``baseline``, ``candidate``,
        ``ratio``): per-notebook overhead (papermill + kernel start + rendering), render time per page,
        index time, and the wall time of the two runs.
    """
    import argparse
    import contextlib
    import io
    import tempfile

    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    count = 2 if quick else 4
    parameters = (
        'baseline: str = "a"  # baseline spec\ncandidate: str = "b"  # candidate spec\n'
        'profile: str = "smoke"  # profile\npair_file: str = ""  # pair file\nfresh: bool = False  # fresh\n'
        'findings_dir: str = ""  # findings dir'
    )
    figures: list[dict[str, Any]] = []
    saved = {k: os.environ.get(k) for k in ("RLAUDIT_HOME", "RLAUDIT_REPORTS", "RLAUDIT_PROFILE")}
    with tempfile.TemporaryDirectory(prefix="rlaudit-bench-") as tmp:
        home = Path(tmp)
        (home / "notebooks").mkdir()
        for subsystem in SUBSYSTEMS[:count]:
            cells = [new_code_cell(parameters, metadata={"tags": ["parameters"]})]
            cells += [new_code_cell(f"SUBSYSTEM = {subsystem!r}")] + [new_code_cell(c) for c in _BENCH_CELLS]
            nb = new_notebook(
                cells=cells,
                metadata={
                    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
                },
            )
            nbformat.write(nb, home / "notebooks" / f"{notebook_name(subsystem)}.ipynb")
        walls = {}
        try:
            os.environ["RLAUDIT_HOME"] = str(home)
            os.environ.pop("RLAUDIT_PROFILE", None)
            for jobs in (1, 2):
                out = home / f"reports-j{jobs}"
                os.environ["RLAUDIT_REPORTS"] = str(out)
                args = argparse.Namespace(
                    baseline="a", candidate="b", pair="", profile="smoke", fresh=False, jobs=jobs,
                    executor="local", ray_address="auto", out=str(out), notebooks="",
                )  # fmt: skip
                started = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    code = run_report(args)
                walls[jobs] = time.perf_counter() - started
                if code != 0:
                    raise RuntimeError(f"bench notebooks failed; see the logs in {out / 'logs'}")
                if jobs == 1:
                    metas = [load_findings(p)[1] for p in sorted((out / "findings").glob("*.json"))]
                    figures.append(
                        {"name": "report.notebook_seconds", "value": round(walls[1] / count, 2), "unit": "s",
                         "note": f"wall per trivial notebook at -j 1 ({count} notebooks): papermill, kernel, render"}
                    )  # fmt: skip
                    inside = sum(m.get("duration_seconds", 0.0) for m in metas) / max(1, len(metas))
                    figures.append({"name": "report.session_seconds", "value": round(inside, 3), "unit": "s"})
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        figures.append(
            {"name": "report.parallel_wall", "value": round(walls[2], 2), "unit": "s", "baseline": round(walls[1], 2),
             "candidate": round(walls[2], 2), "ratio": round(walls[2] / walls[1], 3), "note": "-j 2 over -j 1"}
        )  # fmt: skip

        # Rendering and the index, measured alone.
        run = NotebookRun(
            name="01_agents",
            source=home / "notebooks" / "01_agents.ipynb",
            output=home / "reports-j1" / "notebooks" / "01_agents.ipynb",
            html=home / "render" / "01_agents.html",
            log=home / "render" / "01_agents.log",
            findings_path=home / "render" / "01_agents.json",
        )
        started = time.perf_counter()
        for _ in range(2 if quick else 5):
            render(run)
        figures.append(
            {"name": "report.render_seconds", "value": round((time.perf_counter() - started) / (2 if quick else 5), 3),
             "unit": "s"}
        )  # fmt: skip
        findings = [
            Finding(id=f"{s}/check-{i}", subsystem=s, hypothesis=f"check {i}", status=list(Status)[i % len(Status)],
                    notebook=notebook_name(s), evidence=Evidence(baseline=i, candidate=i + 1, effect=0.1 * i,
                    ci=(0.0, 0.2 * i), ci_level=0.95, summary=f"check {i} of {s}"))
            for s in SUBSYSTEMS for i in range(10)
        ]  # fmt: skip
        overview = Overview(findings_dir=home / "render", findings=sort_findings(findings))
        started = time.perf_counter()
        write_index(home / "render", overview, [], {"parameters": {"baseline": "a", "candidate": "b"}})
        figures.append(
            {"name": "report.index_seconds", "value": round(time.perf_counter() - started, 3), "unit": "s",
             "note": "index of 140 findings"}
        )  # fmt: skip
    return figures


def ranked_suspects_text(findings: Sequence[Finding]) -> str:
    """The subsystems ranked by audit evidence alone (what `rlaudit audit` can say without experiments):
    checks that only echo a flagged upstream change count a fifth (:func:`rlaudit.attribution.knock_on`)."""
    from rlaudit.attribution import rank_causes

    causes = rank_causes(findings)
    if not causes:
        return "no subsystem flagged: nothing to rank"
    lines = ["suspects by audit evidence (run `rlaudit report` to measure which ones explain the gap):"]
    for i, c in enumerate(causes, 1):
        ids = ", ".join(f.id for f in c.findings[:3]) + (" …" if len(c.findings) > 3 else "")
        lines.append(f"  {i:>2}. {c.subsystem:<14} evidence {c.rank_score:.2f}  {ids}")
    return "\n".join(lines)


def run_audit(args: Any) -> int:
    """``rlaudit audit``: run the audits without notebooks, print the findings, save them as JSON.

    Returns:
        0 normally; 1 when every audit errored (nothing was actually checked).

    Raises:
        ValueError: Unknown subsystem names.
        FileNotFoundError: The pair file does not exist.
    """
    from rlaudit.audits import run_audits
    from rlaudit.notebook import _new_workbench, findings_text, versions

    wanted = [s.strip() for s in (getattr(args, "subsystems", "") or "").split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SUBSYSTEMS]
    if unknown:
        raise ValueError(
            f"--subsystems: unknown {', '.join(unknown)}; expected any of {', '.join(SUBSYSTEMS)}"
        )
    parameters = _parameters(args)
    started = time.perf_counter()
    _print(
        f"rlaudit audit: {parameters['baseline']} vs {parameters['candidate']} · profile {parameters['profile']}"
    )
    executor = getattr(args, "executor", "local")
    if executor != "local":  # the workbench reads these, as the notebooks of `rlaudit report` do
        os.environ["RLAUDIT_EXECUTOR"] = executor
        os.environ["RLAUDIT_RAY_ADDRESS"] = getattr(args, "ray_address", "auto") or "auto"
    wb = _new_workbench(
        parameters["baseline"],
        parameters["candidate"],
        parameters["profile"],
        parameters["fresh"],
        parameters["pair_file"],
        parameters["metric"],
    )
    findings = sort_findings(run_audits(wb, wanted or None, progress=lambda line: _print("  " + line)))
    _print()
    _print(findings_text(findings))
    _print()
    _print(ranked_suspects_text(findings))
    from rlaudit.notebook import _fingerprints, status_counts

    meta = {
        "notebook": "audit",
        "parameters": parameters,
        "subjects": dict(getattr(wb, "labels", {}) or {}),
        "fingerprints": _fingerprints(wb),
        "profile": parameters["profile"],
        "subsystems": wanted or list(SUBSYSTEMS),
        "versions": versions(),
        "duration_seconds": round(time.perf_counter() - started, 3),
        "counts": status_counts(findings),
    }
    path = save_findings(args.json_out, findings, meta)
    _print(f"\nwrote {len(findings)} findings to {path} ({format_seconds(time.perf_counter() - started)})")
    if findings and all(f.status is Status.ERROR for f in findings):
        _print("every audit errored: nothing was checked")
        return 1
    return 0
