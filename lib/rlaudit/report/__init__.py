"""The report: execute every notebook with papermill, render each to HTML, and write ``index.html``.

``rlaudit report`` runs the subsystem notebooks ``NN_<name>.ipynb`` in parallel (on ``-j`` lanes, one
kernel each), then the summary (``15_summary``) once they have all finished, renders every executed
notebook to HTML with the code hidden, and writes ``<out>/index.html``: the executive summary, the status
grid of the fourteen subsystems, every finding ranked, links to the pages, and the run's metadata. A notebook
that fails is still rendered with its error and counts as ERROR; the command finishes the rest and exits 3
(:mod:`rlaudit.exits` lists every exit code).

The modules, in the order a report uses them:

- :mod:`~rlaudit.report.commands`: ``rlaudit report``, ``rlaudit audit`` (the audits without notebooks) and
  ``rlaudit bench report``;
- :mod:`~rlaudit.report.execution`: which notebooks, their papermill command and environment, the outcome
  of each run (:func:`~rlaudit.report.execution.settle`);
- :mod:`~rlaudit.report.lanes`: kernels shared by the notebooks of one report;
- :mod:`~rlaudit.report.costs`: the order notebooks start in (longest expected first);
- :mod:`~rlaudit.report.pages`: each notebook's HTML page (nbconvert);
- :mod:`~rlaudit.report.overview`: findings read back, the status grid (shared with the summary notebook);
- :mod:`~rlaudit.report.index`: ``index.html``.

Layout of ``<out>`` (default ``reports/``)::

    index.html                the entry point (self-contained)
    NN_<name>.html            one rendered page per notebook
    findings/NN_<name>.json   each notebook's findings (read by 15_summary and the index)
    findings/attribution.json optional, written by the summary's attribution experiments
    notebooks/NN_<name>.ipynb the executed notebooks, outputs included
    logs/NN_<name>.log        papermill's log of each run
"""

from __future__ import annotations

from rlaudit.report.commands import bench_report, ranked_suspects_text, run_audit, run_report
from rlaudit.report.index import attribution_html, write_index
from rlaudit.report.overview import (
    ATTRIBUTION_FILE,
    NOT_RUN,
    SUMMARY,
    Overview,
    collect_findings,
    format_seconds,
    plot_status_grid,
    status_grid,
    subsystem_of,
)

__all__ = [
    "ATTRIBUTION_FILE",
    "NOT_RUN",
    "SUMMARY",
    "Overview",
    "attribution_html",
    "bench_report",
    "collect_findings",
    "format_seconds",
    "plot_status_grid",
    "ranked_suspects_text",
    "run_audit",
    "run_report",
    "status_grid",
    "subsystem_of",
    "write_index",
]
