"""Reading findings back: every notebook's saved findings, the status grid, and its figure.

The summary notebook (``report.collect_findings(...)``) and the report's index (:mod:`rlaudit.report.index`)
share this: :func:`collect_findings` reads a findings directory into an :class:`Overview`, and
:func:`status_grid` / :func:`plot_status_grid` count the verdicts per subsystem.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlaudit.findings import SUBSYSTEMS, Finding, Status, load_findings, notebook_name, sort_findings

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from rlaudit.notebook import Section

NOT_RUN = "NOT RUN"
SUMMARY = "15_summary"
ATTRIBUTION_FILE = "attribution.json"
"""Optional file in the findings dir that the index renders in its executive summary (see
:func:`rlaudit.report.index.attribution_html`)."""


# ----------------------------------------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------------------------------------


def subsystem_of(name: str) -> str:
    """``"07_optimizer"`` -> ``"optimizer"``; ``"15_summary"`` -> ``"summary"``."""
    rest = name.split("_", 1)[1] if "_" in name else name
    return rest


def is_summary(name: str) -> bool:
    """True for the summary notebook (``15_summary``), which runs after every other one."""
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


def worst_status(findings: Iterable[Finding]) -> Status | None:
    """The most actionable status among ``findings`` (None when there are none)."""
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
        from rlaudit.display import FindingsView, verdict_line
        from rlaudit.notebook import Section

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
        from rlaudit.display import findings_css, status_badge

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
                worst = worst_status(found)
                verdict = f"{status_badge(worst)} {worst.value}" if worst else "no findings"
                seconds = meta.get("duration_seconds")
                took = format_seconds(float(seconds)) if seconds is not None else "—"
                rows.append(
                    f"<tr><td>{html.escape(name)}</td><td>{len(found)}</td><td>{verdict}</td>"
                    f"<td>{html.escape(str(meta.get('profile', '')))}</td><td>{took}</td>"
                    f"<td>{html.escape(str(meta.get('finished', '')))}</td></tr>"
                )
            body = (
                f"<p>Read {len(self.metas)} findings files from <code>{html.escape(self.findings_dir.name)}/</code>.</p>"
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
        worst = worst_status(mine)
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

    # The verdict badges' colours (findings.css), so the figure and the pages speak one palette.
    colours = {
        "CONFIRMED": "#b91c1c",
        "SUSPECT": "#c2410c",
        "ERROR": "#7e22ce",
        "NOTED": "#a16207",
        "SKIPPED": "#475569",
        "CLEARED": "#15803d",
    }
    statuses = [s.value for s in Status]
    counts = grid[statuses].to_numpy(dtype=float)
    image = np.ones((*counts.shape, 4))
    for j, status in enumerate(statuses):
        for i in range(counts.shape[0]):
            image[i, j] = to_rgba(colours[status], 0.9) if counts[i, j] > 0 else to_rgba("#f3f4f6")
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
