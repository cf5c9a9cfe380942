"""The notebook side: sections that show an audit's verdict and evidence, and the session that keeps them.

A subsystem notebook is thin (see ``docs/NOTEBOOK_TEMPLATE.md``): a parameters cell, a
:class:`Session`, one ``session.add(room.audit(session.wb))`` per hypothesis, and ``session.finish()``,
which shows the findings table and saves it as JSON for the summary and the report. Notebooks import this
module alone (``import rlaudit.notebook as rn``): ``rn.Session``, and ``rn.explore_curves`` (from
:mod:`rlaudit.curves`) for a table of learning curves.

How things are shown (figures, findings tables, a live frontend or a batch run) is :mod:`rlaudit.display`.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import html
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlaudit.curves import explore_curves
from rlaudit.display import (
    FindingsView,
    RichText,
    close_figure,
    figure_png,
    findings_css,
    findings_html,
    findings_table,
    findings_text,
    inline_markdown,
    ipython_shell,
    register_figure_formatter,
    show,
    status_counts,
    verdict_line,
    versions,
)
from rlaudit.findings import (
    SUBSYSTEMS,
    Finding,
    notebook_name,
    save_findings,
    sort_findings,
)

if TYPE_CHECKING:
    import pandas as pd


# ----------------------------------------------------------------------------------------------------------
# Sections
# ----------------------------------------------------------------------------------------------------------


def _table_html(name: str, table: Any, max_rows: int) -> str:
    head = f"<h4>{html.escape(name)}</h4>"
    if hasattr(table, "to_html") and hasattr(table, "columns"):  # a DataFrame
        body = table.to_html(
            max_rows=max_rows,
            max_cols=30,
            border=0,
            classes="rl-table",
            na_rep="—",
            float_format=lambda v: f"{v:.4g}",
        )
        if len(table) > max_rows:
            body += f'<p class="rl-muted">{len(table)} rows; the first and last shown.</p>'
        return head + body
    if hasattr(table, "_repr_html_"):
        return head + (table._repr_html_() or "")
    if isinstance(table, Mapping | list):
        import pandas as pd

        return _table_html(name, pd.DataFrame(table), max_rows)
    return head + f"<pre>{html.escape(str(table))}</pre>"


@dataclass(repr=False)
class Section:
    """What one audit returns: its findings and the tables and figures that show the evidence.

    Attributes:
        title: Heading of the section (the question it answers).
        findings: The verdicts (usually one per hypothesis the audit tests).
        tables: Name -> DataFrame (or anything with ``_repr_html_``, or records), shown as HTML tables.
        figures: Name -> matplotlib Figure / Axes / seaborn grid, shown inline as PNG.
        notes: Sentences shown under the title (a string or a list of paragraphs; `code` spans allowed).
    """

    title: str
    findings: list[Finding] = field(default_factory=list)
    tables: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    notes: str | list[str] = field(default_factory=list)
    _shown: bool = field(default=False, init=False, compare=False)
    _png: dict[str, bytes] = field(default_factory=dict, init=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.findings, Finding):
            self.findings = [self.findings]
        self.findings = list(self.findings)
        if isinstance(self.notes, str):
            self.notes = [self.notes] if self.notes else []
        bad = [f for f in self.findings if not isinstance(f, Finding)]
        if bad:
            raise TypeError(f"Section.findings must hold Finding objects, got {type(bad[0]).__name__}")

    @classmethod
    def of(cls, finding: Finding, title: str | None = None) -> Section:
        """A section holding one finding (a SKIPPED or ERROR verdict from ``Pair.guard``, say)."""
        return cls(title=title or finding.hypothesis, findings=[finding])

    def _figure_pngs(self) -> dict[str, bytes | None]:
        out: dict[str, bytes | None] = {}
        for name, fig in self.figures.items():
            if name not in self._png:
                png = figure_png(fig)
                if png is not None:
                    self._png[name] = png
                close_figure(fig)
            out[name] = self._png.get(name)
        return out

    def to_html(self, *, style: bool = True, max_rows: int = 40) -> str:
        """The whole section as one HTML fragment, figures embedded as PNG."""
        parts = [f"<h3>{html.escape(self.title)}</h3>"]
        if self.notes:
            parts.append(
                '<div class="rl-notes">'
                + "".join(f"<p>{inline_markdown(n)}</p>" for n in self.notes)
                + "</div>"
            )
        if self.findings:
            parts.append(findings_html(self.findings))
        for name, table in self.tables.items():
            parts.append(_table_html(name, table, max_rows))
        for name, png in self._figure_pngs().items():
            if png is None:
                parts.append(
                    f'<p class="rl-muted">figure {html.escape(name)}: {html.escape(repr(self.figures[name]))}</p>'
                )
                continue
            data = base64.b64encode(png).decode("ascii")
            parts.append(
                f'<figure class="rl-fig"><img src="data:image/png;base64,{data}" alt="{html.escape(name)}">'
                f"<figcaption>{html.escape(name)}</figcaption></figure>"
            )
        css = f"<style>{findings_css()}</style>" if style else ""
        return f'{css}<div class="rl-section">{"".join(parts)}</div>'

    def to_text(self) -> str:
        lines = [self.title, "=" * len(self.title), *self.notes]
        lines.append(findings_text(self.findings))
        for name, table in self.tables.items():
            lines.append(f"\n{name}:\n{table}")
        if self.figures:
            lines.append(f"(figures: {', '.join(self.figures)})")
        return "\n".join(lines)

    def show(self) -> None:
        """Display the section now (HTML in a notebook, text elsewhere)."""
        self._shown = True
        if ipython_shell() is not None:
            show(RichText(self.to_html(), self.to_text()))
        else:
            for fig in self.figures.values():
                close_figure(fig)
            print(self.to_text())

    def table(self, name: str) -> Any:
        """One of this section's tables, or, when the check could not produce it, a note saying why.

        Notebook cells show tables through this rather than ``section.tables[name]``: a check that was
        SKIPPED (the subject lacks a capability) or hit an ERROR has no tables, and the cell must still run.
        """
        if name in self.tables:
            return self.tables[name]
        worst = min(self.findings, key=lambda f: f.status.rank, default=None)
        reason = (
            f"{worst.status.value}: {worst.evidence.summary or worst.hypothesis}" if worst else "no findings"
        )
        text = f"no table “{name}” ({reason})"
        return RichText(f'<p class="rl-muted">{html.escape(text)}</p>', text)

    def explore(self, table: str, **kwargs: Any) -> Any:
        """:func:`explore_curves` over one of this section's tables (widgets in JupyterLab, else a figure)."""
        if table not in self.tables:
            raise KeyError(f"section {self.title!r} has no table {table!r}; it has {sorted(self.tables)}")
        return explore_curves(self.tables[table], **kwargs)

    def __repr__(self) -> str:
        counts = (
            ", ".join(f"{n} {s.lower()}" for s, n in status_counts(self.findings).items() if n)
            or "no findings"
        )
        return f"Section({self.title!r}: {counts}; tables {list(self.tables)}; figures {list(self.figures)})"

    def _repr_html_(self) -> str:
        if self._shown:
            # session.add() already displayed it; a cell ending in the returned section would repeat it.
            return f'<p class="rl-muted">(section “{html.escape(self.title)}” shown above)</p>'
        self._shown = True
        return self.to_html()


def as_section(obj: Section | Finding | Iterable[Finding], title: str = "") -> Section:
    """Accept what audits return: a Section, a single Finding, or a list of Findings."""
    if isinstance(obj, Section):
        return obj
    if isinstance(obj, Finding):
        return Section.of(obj, title or None)
    if isinstance(obj, Iterable) and not isinstance(obj, str | bytes | Mapping):
        items = list(obj)
        if all(isinstance(f, Finding) for f in items):
            return Section(
                title=title or (items[0].hypothesis if len(items) == 1 else "Findings"), findings=items
            )
    raise TypeError(
        f"expected a Section, a Finding or a list of Findings from the audit, got {type(obj).__name__}; "
        "an audit function must return rlaudit.notebook.Section(...)"
    )


# ----------------------------------------------------------------------------------------------------------
# The session
# ----------------------------------------------------------------------------------------------------------


def _new_workbench(
    baseline: str, candidate: str, profile: str, fresh: bool, pair_file: str, metric: str = ""
) -> Any:
    from rlaudit.engine.workbench import Workbench

    kwargs: dict[str, Any] = {
        "baseline": baseline,
        "candidate": candidate,
        "profile": profile,
        "fresh": fresh,
        "metric": metric,
    }
    if pair_file:
        kwargs["pair_file"] = pair_file
    return Workbench(**kwargs)


def _fingerprints(wb: Any) -> dict[str, str]:
    found = getattr(wb, "fingerprints", None)
    if isinstance(found, Mapping):
        return {str(k): str(v) for k, v in found.items()}
    out = {}
    for side in ("baseline", "candidate"):
        value = getattr(getattr(wb, side, None), "fingerprint", None)
        if value:
            out[side] = str(value)
    return out


def _metric_of(wb: Any) -> dict[str, Any] | None:
    """The workbench's primary metric as a dict, if it was resolved (never starts a worker for it)."""
    metric = getattr(wb, "_metric", None)
    return metric.to_dict() if hasattr(metric, "to_dict") else None


def _findings_frame(frame: Any, caption: str) -> Any:
    """Wrap the returned DataFrame so that a cell ending in ``session.finish()`` does not repeat the table."""
    import pandas as pd

    global _FindingsFrame
    if _FindingsFrame is None:

        class FindingsFrame(pd.DataFrame):
            """The findings as a DataFrame; shown in a notebook as a pointer to the table finish() displayed.

            Any operation on it (``.head()``, filtering) returns a plain DataFrame that displays normally.
            """

            _rlaudit_caption: str = ""

            @property
            def _constructor(self) -> type:
                return pd.DataFrame

            def _repr_html_(self) -> str:
                return f'<p class="rl-muted">{html.escape(self._rlaudit_caption)}</p>'

        _FindingsFrame = FindingsFrame
    wrapped = _FindingsFrame(frame)
    wrapped._rlaudit_caption = caption
    return wrapped


_FindingsFrame: Any = None


class Session:
    """One notebook's investigation of one subsystem: parameters in, findings JSON out.

    Args:
        subsystem: One of :data:`rlaudit.findings.SUBSYSTEMS`, or ``"summary"``.
        baseline: Spec of the setup that trained well (the notebook's ``baseline`` parameter).
        candidate: Spec of the setup that got worse.
        profile: ``smoke``, ``standard`` or ``thorough``; ``RLAUDIT_PROFILE`` wins when set.
        pair_file: Optional YAML declaring both subjects (passed to the Workbench).
        fresh: Ignore cached artifacts.
        findings_dir: Where the findings JSON goes; ``""`` means ``<reports>/findings``.
        notebook: Name of the notebook (default ``NN_<subsystem>``), used for the JSON file and findings.
        workbench: A ready workbench to use instead of creating one (tests, or sharing one).
        quiet: Do not display anything (for scripts that only want the JSON).
        metric: The primary metric (``NAME`` or ``NAME:lower``), overriding what the subjects declare in
            ``metrics()``; empty: their declaration, else the episodic return (:mod:`rlaudit.metrics`).

    Attributes:
        findings: Every finding added so far, in order.
        findings_path: Where :meth:`finish` writes the JSON.
    """

    def __init__(
        self,
        subsystem: str,
        baseline: str,
        candidate: str,
        profile: str = "standard",
        pair_file: str = "",
        fresh: bool = False,
        findings_dir: str = "",
        *,
        notebook: str | None = None,
        workbench: Any = None,
        quiet: bool = False,
        metric: str = "",
    ) -> None:
        from rlaudit.engine.paths import reports_dir
        from rlaudit.profiles import get_profile

        if subsystem not in SUBSYSTEMS and subsystem != "summary":
            raise ValueError(
                f"unknown subsystem {subsystem!r}; expected one of {', '.join(SUBSYSTEMS)} or 'summary'"
            )
        self.subsystem = subsystem
        self.baseline = str(baseline)
        self.candidate = str(candidate)
        self.requested_profile = profile
        self.profile = get_profile(profile)
        self.pair_file = str(pair_file or "")
        self.fresh = bool(fresh)
        self.notebook = notebook or notebook_name(subsystem)
        base = Path(findings_dir).expanduser() if findings_dir else reports_dir() / "findings"
        self.findings_dir = base.resolve()
        self.findings_path = self.findings_dir / f"{self.notebook}.json"
        self.findings: list[Finding] = []
        self.sections: list[dict[str, Any]] = []
        self.quiet = quiet
        self.requested_metric = str(metric or "")
        self._wb = workbench
        self._started = time.time()
        self._last = time.perf_counter()
        self._t0 = self._last
        register_figure_formatter()
        if not quiet:
            self._show_header()

    # -- the workbench ------------------------------------------------------------------------------------

    @property
    def wb(self) -> Any:
        """The :class:`rlaudit.engine.workbench.Workbench` for this pair, created on first use."""
        if self._wb is None:
            started = time.perf_counter()
            self._wb = _new_workbench(
                self.baseline,
                self.candidate,
                self.profile.name,
                self.fresh,
                self.pair_file,
                self.requested_metric,
            )
            if not self.quiet:
                prints = _fingerprints(self._wb)
                text = ", ".join(f"{side} {fp}" for side, fp in prints.items()) or "not reported"
                show(
                    RichText(
                        f'<p class="rl-muted">workbench ready in {time.perf_counter() - started:.1f} s; '
                        f"fingerprints: {html.escape(text)}</p>",
                        f"workbench ready; fingerprints: {text}",
                    )
                )
        return self._wb

    @property
    def metric(self) -> Any:
        """The primary :class:`rlaudit.metrics.Metric` of this investigation (see :attr:`Workbench.metric`)."""
        return self.wb.metric

    @property
    def parameters(self) -> dict[str, Any]:
        """The notebook's parameters as given (what the findings JSON records and the summary matches on)."""
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "profile": self.requested_profile,
            "pair_file": self.pair_file,
            "fresh": self.fresh,
            "metric": self.requested_metric,
        }

    @property
    def labels(self) -> dict[str, str]:
        """Display names of the two subjects (the workbench's when it exists, else the specs)."""
        if self._wb is not None and isinstance(getattr(self._wb, "labels", None), Mapping):
            return dict(self._wb.labels)
        return {"baseline": self.baseline, "candidate": self.candidate}

    def _show_header(self) -> None:
        override = os.environ.get("RLAUDIT_PROFILE")
        profile = self.profile.name + (
            " (from RLAUDIT_PROFILE)" if override and override != self.requested_profile else ""
        )
        p = self.profile
        sizes = f"{p.seeds} seeds, {p.train_steps:,} train steps, {p.rollout_steps:,} rollout steps"
        rows = [
            ("notebook", self.notebook),
            ("baseline", self.baseline),
            ("candidate", self.candidate),
            ("profile", f"{profile}: {sizes}"),
        ]
        if self.pair_file:
            rows.append(("pair file", self.pair_file))
        if self.fresh:
            rows.append(("fresh", "cached artifacts are ignored"))
        markup = "<br>".join(f"<b>{k}</b>: <code>{html.escape(v)}</code>" for k, v in rows)
        text = "\n".join(f"{k:>9}: {v}" for k, v in rows)
        show(RichText(f'<style>{findings_css()}</style><div class="rl-header">{markup}</div>', text))

    # -- sections and findings ----------------------------------------------------------------------------

    def add(self, section: Section | Finding | Iterable[Finding]) -> Section:
        """Show a section and keep its findings (tagged with this notebook's name).

        Returns:
            The section (a Finding or list of Findings is wrapped in one).
        """
        section = as_section(section)
        now = time.perf_counter()
        known = {id(f) for f in self.findings}
        new = [f for f in section.findings if id(f) not in known]
        for finding in new:
            finding.notebook = self.notebook
        self.findings.extend(new)
        self.sections.append(
            {"title": section.title, "findings": len(new), "seconds": round(now - self._last, 3)}
        )
        if not self.quiet:
            section.show()
        self._last = time.perf_counter()
        return section

    def meta(self) -> dict[str, Any]:
        """What the findings JSON records about this run: subjects, fingerprints, profile, versions, timing."""
        finished = time.time()
        return {
            "notebook": self.notebook,
            "subsystem": self.subsystem,
            "parameters": self.parameters,
            "subjects": self.labels,
            "fingerprints": _fingerprints(self._wb) if self._wb is not None else {},
            "metric": _metric_of(self._wb),
            "profile": self.profile.name,
            "profile_settings": dataclasses.asdict(self.profile),
            "versions": versions(),
            "started": _dt.datetime.fromtimestamp(self._started, _dt.UTC).isoformat(timespec="seconds"),
            "finished": _dt.datetime.fromtimestamp(finished, _dt.UTC).isoformat(timespec="seconds"),
            "duration_seconds": round(time.perf_counter() - self._t0, 3),
            "sections": list(self.sections),
            "counts": status_counts(self.findings),
        }

    def finish(self) -> pd.DataFrame:
        """Show the findings table (most actionable first), save it as JSON, and return it as a DataFrame.

        The JSON goes to :attr:`findings_path` (``<findings_dir>/<notebook>.json``) with :meth:`meta`.
        """
        ordered = sort_findings(self.findings)
        path = save_findings(self.findings_path, ordered, self.meta())
        caption = f"{verdict_line(ordered)} · saved to {path}"
        if not self.quiet:
            show(FindingsView(ordered, title=f"Verdict: {self.notebook}", caption=caption))
        return _findings_frame(findings_table(ordered), f"{verdict_line(ordered)}: the table is shown above.")
