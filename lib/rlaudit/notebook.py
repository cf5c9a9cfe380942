"""The notebook side: sections that show an audit's verdict and evidence, and the session that keeps them.

A subsystem notebook is thin (see ``docs/NOTEBOOK_TEMPLATE.md``): a parameters cell, a
:class:`Session`, one ``session.add(room.audit(session.wb))`` per hypothesis, and ``session.finish()``,
which shows the findings table and saves it as JSON for the summary and the report.

Everything renders inline: findings as an HTML table with status marks, tables as HTML, matplotlib and
seaborn figures as embedded PNG images (no backend is ever switched). Interactive controls (ipywidgets) are
offered only in a live Jupyter frontend (:func:`interactive`); under papermill, nbval and scripts the same
calls draw static figures.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import functools
import html
import io
import os
import platform
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlaudit.findings import (
    SUBSYSTEMS,
    Finding,
    Status,
    notebook_name,
    save_findings,
    sort_findings,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

_TEMPLATES = Path(__file__).resolve().parent / "templates"


# ----------------------------------------------------------------------------------------------------------
# Environment: IPython, versions, figures
# ----------------------------------------------------------------------------------------------------------


def _ipython() -> Any:
    """The running IPython shell, or None; never imports IPython when the process is not already using it."""
    module = sys.modules.get("IPython")
    if module is None:
        return None
    get = getattr(module, "get_ipython", None)
    return get() if get else None


def _display(obj: Any, text: str | None = None) -> None:
    """Show ``obj`` in a notebook (rich display), or print ``text`` (default ``str(obj)``) elsewhere."""
    shell = _ipython()
    if shell is not None and getattr(shell, "display_pub", None) is not None:
        from IPython.display import display

        display(obj)
    else:
        print(text if text is not None else str(obj))


class _HTML:
    """A display object with both an HTML and a plain-text form (for notebooks and terminals)."""

    def __init__(self, markup: str, text: str) -> None:
        self.markup = markup
        self.text = text

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        return self.text


def versions() -> dict[str, str]:
    """Versions of Python and the packages a report depends on (read from metadata, nothing imported)."""
    from importlib import metadata

    import rlaudit

    out = {"python": platform.python_version(), "rlaudit": rlaudit.__version__}
    for dist in ("torch", "gymnasium", "numpy", "pandas", "scipy", "papermill"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _css() -> str:
    return (_TEMPLATES / "findings.css").read_text()


def _as_figure(obj: Any) -> Any:
    """A matplotlib Figure from a Figure, an Axes, or a seaborn grid (anything with ``.figure``)."""
    if hasattr(obj, "savefig"):
        return obj
    inner = getattr(obj, "figure", None)
    if inner is not None and hasattr(inner, "savefig"):
        return inner
    return None


def figure_png(obj: Any, dpi: int = 100) -> bytes | None:
    """PNG bytes of a figure (Figure, Axes, seaborn grid) or the bytes themselves; None for anything else."""
    if isinstance(obj, bytes | bytearray):
        return bytes(obj)
    fig = _as_figure(obj)
    if fig is None:
        return None
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def _close_figure(obj: Any) -> None:
    # A figure made with pyplot would be shown a second time by the inline backend at the end of the cell;
    # once embedded it is closed. Figures made without pyplot are not registered and need nothing.
    pyplot = sys.modules.get("matplotlib.pyplot")
    fig = _as_figure(obj)
    if pyplot is not None and fig is not None:
        pyplot.close(fig)


def _open_figure_numbers() -> set[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def _register_figure_formatter() -> None:
    """Let IPython show a returned matplotlib Figure as PNG even before pyplot set up the inline backend.

    Figures built without pyplot (``matplotlib.figure.Figure()``, as rlaudit's plot helpers do) are not
    auto-displayed by the inline backend, so the display formatter is what shows them. This registers only a
    formatter; the matplotlib backend is left alone.
    """
    shell = _ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    formatter = shell.display_formatter.formatters.get("image/png")
    if formatter is None:
        return
    formatter.for_type_by_name("matplotlib.figure", "Figure", lambda fig: figure_png(fig))


# ----------------------------------------------------------------------------------------------------------
# Formatting findings
# ----------------------------------------------------------------------------------------------------------


def format_value(value: Any, max_chars: int = 80) -> str:
    """A short human form of an evidence value: ``0.000457``, ``(128, 128)``, ``{lr: 0.0003, ...}``."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        text = str(value)
    elif isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, list | tuple):
        text = "(" + ", ".join(format_value(v, max_chars) for v in value) + ")"
    elif isinstance(value, Mapping):
        text = "{" + ", ".join(f"{k}: {format_value(v, max_chars)}" for k, v in value.items()) + "}"
    elif callable(getattr(value, "tolist", None)):  # numpy scalars and arrays, torch tensors
        return format_value(value.tolist(), max_chars)
    else:
        text = str(value)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _fmt_number(value: Any) -> str:
    try:
        return f"{float(value):.3g}"
    except (TypeError, ValueError):
        return str(value)


def evidence_lines(finding: Finding) -> list[tuple[str, str]]:
    """The evidence of a finding as (label, text) lines: baseline, candidate, effect and CI, test."""
    ev = finding.evidence
    lines: list[tuple[str, str]] = []
    if ev.baseline is not None or ev.candidate is not None:
        lines.append(("baseline", format_value(ev.baseline)))
        lines.append(("candidate", format_value(ev.candidate)))
    if ev.effect is not None:
        text = f"{ev.effect_label + ' ' if ev.effect_label else ''}{_fmt_number(ev.effect)}"
        if ev.ci is not None:
            level = f"{ev.ci_level:.0%} " if ev.ci_level else ""
            text += f" [{_fmt_number(ev.ci[0])}, {_fmt_number(ev.ci[1])}] ({level}CI)"
        lines.append(("effect", text))
    elif ev.ci is not None:
        lines.append(("CI", f"[{_fmt_number(ev.ci[0])}, {_fmt_number(ev.ci[1])}]"))
    if ev.test:
        parts = [str(ev.test.get("name", "test"))]
        if ev.test.get("statistic") is not None:
            parts.append(f"= {_fmt_number(ev.test['statistic'])}")
        if ev.test.get("p") is not None:
            parts.append(f"p = {_fmt_number(ev.test['p'])}")
        lines.append(("test", " ".join(parts)))
    return lines


def _inline_markdown(text: str) -> str:
    """Escape text and render `code` spans, the only markup findings use."""
    escaped = html.escape(text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


def headline_html(finding: Finding) -> str:
    text = finding.evidence.summary or finding.hypothesis
    status = finding.status.value
    return f'<span class="rl-status rl-{status}">{status}</span>: {_inline_markdown(text)}'


def status_badge(status: Status | str) -> str:
    """A verdict as a coloured badge holding its ASCII mark (``rl-badge`` in findings.css), named for screen
    readers and on hover; ``"NOT RUN"`` (the status grid's placeholder) gets a grey one."""
    value = str(getattr(status, "value", status))
    mark = Status(value).mark if value in Status.__members__ else "·"
    key = value.replace(" ", "_")
    return (
        f'<span class="rl-badge rl-badge-{key}" role="img" aria-label="{value}" title="{value}">{mark}</span>'
    )


def _finding_row(finding: Finding, link: Callable[[Finding], str | None] | None) -> str:
    status = finding.status.value
    meta = [html.escape(finding.id), finding.severity.value.lower()]
    href = link(finding) if link else None
    if href:
        page = href.rsplit("/", 1)[-1].removesuffix(".html")
        meta.append(f'<a href="{html.escape(href)}">see {html.escape(page)}</a>')
    cell = [f'<div class="rl-headline">{headline_html(finding)}</div>']
    if finding.evidence.summary and finding.evidence.summary != finding.hypothesis:
        cell.append(f'<div class="rl-meta">hypothesis: {_inline_markdown(finding.hypothesis)}</div>')
    cell.append(f'<div class="rl-meta">{" · ".join(meta)}</div>')
    evidence = "".join(
        f'<div><span class="rl-k">{html.escape(k)}:</span> {html.escape(v)}</div>'
        for k, v in evidence_lines(finding)
    )
    if finding.figures:
        evidence += f'<div><span class="rl-k">figures:</span> {html.escape(", ".join(finding.figures))}</div>'
    details = finding.evidence.details or {}
    trace = details.get("traceback") or details.get("stderr_tail")
    if trace:
        evidence += f"<details><summary>traceback</summary><pre>{html.escape(str(trace))}</pre></details>"
    return (
        f'<tr class="rl-row-{status}"><td class="rl-mark">{status_badge(finding.status)}</td>'
        f'<td>{"".join(cell)}</td><td class="rl-ev">{evidence}</td>'
        f"<td>{_inline_markdown(finding.remediation)}</td></tr>"
    )


def findings_html(
    findings: Iterable[Finding],
    *,
    link: Callable[[Finding], str | None] | None = None,
    sort: bool = True,
    empty: str = "No findings.",
) -> str:
    """The findings as an HTML table (no ``<style>``; see :func:`findings_css`).

    Args:
        findings: The findings to show.
        link: Optional function giving each finding a link (the report links subsystem pages).
        sort: Sort with :func:`rlaudit.findings.sort_findings` (most actionable first).
        empty: Text shown when there are no findings.
    """
    items = sort_findings(findings) if sort else list(findings)
    if not items:
        return f'<p class="rl-muted">{html.escape(empty)}</p>'
    rows = "".join(_finding_row(f, link) for f in items)
    return (
        '<table class="rl-findings"><thead><tr><th></th><th>finding</th><th>evidence</th>'
        f"<th>remediation</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def findings_css() -> str:
    """The stylesheet of findings tables and sections (a ``<style>`` body)."""
    return _css()


def findings_text(findings: Iterable[Finding]) -> str:
    """The findings as plain text lines (terminals, logs): mark, status, id, headline."""
    lines = []
    for f in sort_findings(findings):
        lines.append(f"{f.status.mark} {f.status.value:<9} {f.id}: {f.evidence.summary or f.hypothesis}")
        if f.remediation and f.status.is_flag:
            lines.append(f"    -> {f.remediation}")
    return "\n".join(lines) if lines else "(no findings)"


def findings_table(findings: Iterable[Finding]) -> pd.DataFrame:
    """Findings as a DataFrame, most actionable first.

    Columns: ``mark``, ``status``, ``severity``, ``subsystem``, ``id``, ``headline``, ``hypothesis``,
    ``baseline``, ``candidate`` (short text), ``effect``, ``effect_label``, ``ci_low``, ``ci_high``, ``p``
    (floats, NaN when absent), ``remediation``, ``notebook``.
    """
    import pandas as pd

    columns = (
        "mark status severity subsystem id headline hypothesis baseline candidate effect effect_label "
        "ci_low ci_high p remediation notebook"
    ).split()
    rows = []
    for f in sort_findings(findings):
        ev = f.evidence
        p = (ev.test or {}).get("p")
        rows.append(
            {
                "mark": f.status.mark,
                "status": f.status.value,
                "severity": f.severity.value,
                "subsystem": f.subsystem,
                "id": f.id,
                "headline": ev.summary or f.hypothesis,
                "hypothesis": f.hypothesis,
                "baseline": format_value(ev.baseline),
                "candidate": format_value(ev.candidate),
                "effect": float(ev.effect) if ev.effect is not None else float("nan"),
                "effect_label": ev.effect_label,
                "ci_low": float(ev.ci[0]) if ev.ci is not None else float("nan"),
                "ci_high": float(ev.ci[1]) if ev.ci is not None else float("nan"),
                "p": float(p) if p is not None else float("nan"),
                "remediation": f.remediation,
                "notebook": f.notebook,
            }
        )
    return pd.DataFrame(rows, columns=columns)


def status_counts(findings: Iterable[Finding]) -> dict[str, int]:
    """``{status: count}`` for every status, in rank order (zeros included)."""
    counts = {s.value: 0 for s in Status}
    for f in findings:
        counts[f.status.value] += 1
    return counts


def verdict_line(findings: Sequence[Finding]) -> str:
    """One sentence: ``"7 findings: 1 confirmed, 2 suspect, 4 cleared"``."""
    counts = status_counts(findings)
    parts = [f"{n} {s.lower()}" for s, n in counts.items() if n]
    noun = "finding" if len(findings) == 1 else "findings"
    return f"{len(findings)} {noun}" + (": " + ", ".join(parts) if parts else "")


class FindingsView:
    """A findings table that displays as readable HTML in a notebook and as text elsewhere.

    Attributes:
        findings: The findings, shown most actionable first.
        title: Heading above the table.
        caption: A line under the heading.
        link: Optional per-finding link (see :func:`findings_html`).
    """

    def __init__(
        self,
        findings: Iterable[Finding],
        title: str = "",
        caption: str = "",
        link: Callable[[Finding], str | None] | None = None,
    ) -> None:
        self.findings = sort_findings(findings)
        self.title = title
        self.caption = caption
        self.link = link

    def to_frame(self) -> pd.DataFrame:
        return findings_table(self.findings)

    def _repr_html_(self) -> str:
        head = f"<h3>{html.escape(self.title)}</h3>" if self.title else ""
        caption = f'<p class="rl-muted">{html.escape(self.caption)}</p>' if self.caption else ""
        body = findings_html(self.findings, link=self.link)
        return f'<style>{_css()}</style><div class="rl-view">{head}{caption}{body}</div>'

    def __repr__(self) -> str:
        head = [self.title] if self.title else []
        if self.caption:
            head.append(self.caption)
        return "\n".join([*head, findings_text(self.findings)])


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
                _close_figure(fig)
            out[name] = self._png.get(name)
        return out

    def to_html(self, *, style: bool = True, max_rows: int = 40) -> str:
        """The whole section as one HTML fragment, figures embedded as PNG."""
        parts = [f"<h3>{html.escape(self.title)}</h3>"]
        if self.notes:
            parts.append(
                '<div class="rl-notes">'
                + "".join(f"<p>{_inline_markdown(n)}</p>" for n in self.notes)
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
        css = f"<style>{_css()}</style>" if style else ""
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
        if _ipython() is not None:
            _display(_HTML(self.to_html(), self.to_text()))
        else:
            for fig in self.figures.values():
                _close_figure(fig)
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
        return _HTML(f'<p class="rl-muted">{html.escape(text)}</p>', text)

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


def audit_section(id: str, subsystem: str, hypothesis: str, title: str | None = None) -> Callable:
    """Decorator: an audit that raises returns a Section with an ERROR finding instead of stopping the notebook.

    The ERROR finding has ``side="audit"`` and the traceback in ``evidence.details["traceback"]``. Figures
    the audit opened with pyplot before failing are closed. An audit returning a Finding or a list of them
    gets them wrapped in a Section; returning None is reported as an ERROR too.

    Args:
        id: The finding id used for the ERROR (normally the audit's main finding id).
        subsystem: One of :data:`rlaudit.findings.SUBSYSTEMS`.
        hypothesis: The audit's hypothesis in one sentence.
        title: Section title for the ERROR section (default: the hypothesis).
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Section]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Section:
            before = _open_figure_numbers()
            try:
                result = fn(*args, **kwargs)
                if result is None:
                    raise TypeError(f"audit {fn.__qualname__} returned None; expected a Section")
                return as_section(result, title or hypothesis)
            except Exception as exc:  # one broken check must not take the notebook down
                pyplot = sys.modules.get("matplotlib.pyplot")
                if pyplot is not None:
                    for number in _open_figure_numbers() - before:
                        pyplot.close(number)
                finding = Finding.error(id, subsystem, hypothesis, "audit", exc)
                finding.evidence.details["traceback"] = traceback.format_exc()
                finding.evidence.details["audit"] = f"{fn.__module__}.{fn.__qualname__}"
                return Section(
                    title=title or hypothesis,
                    findings=[finding],
                    notes=[
                        f"The audit `{fn.__qualname__}` raised {type(exc).__name__}; the rest of the notebook runs on."
                    ],
                )

        return wrapper

    return decorate


# ----------------------------------------------------------------------------------------------------------
# The session
# ----------------------------------------------------------------------------------------------------------


def _new_workbench(
    baseline: str, candidate: str, profile: str, fresh: bool, pair_file: str, metric: str = ""
) -> Any:
    from rlaudit.workbench import Workbench

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
        from rlaudit.paths import reports_dir
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
        _register_figure_formatter()
        if not quiet:
            self._show_header()

    # -- the workbench ------------------------------------------------------------------------------------

    @property
    def wb(self) -> Any:
        """The :class:`rlaudit.workbench.Workbench` for this pair, created on first use."""
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
                _display(
                    _HTML(
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
        _display(_HTML(f'<style>{_css()}</style><div class="rl-header">{markup}</div>', text))

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
            _display(FindingsView(ordered, title=f"Verdict: {self.notebook}", caption=caption))
        return _findings_frame(findings_table(ordered), f"{verdict_line(ordered)}: the table is shown above.")


# ----------------------------------------------------------------------------------------------------------
# Interactive or static
# ----------------------------------------------------------------------------------------------------------

_BATCH_LAUNCHERS = ("papermill", "nbval", "pytest", "nbclient", "nbconvert", "jupyter-execute", "nbmake")
_FRONTEND_LAUNCHERS = (
    "jupyter-lab",
    "jupyter-notebook",
    "jupyter-server",
    "jupyter_server",
    "jupyterlab",
    "voila",
)


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        try:
            import psutil

            return " ".join(psutil.Process(pid).cmdline())
        except Exception:
            return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace")


def interactive() -> bool:
    """True only in a live Jupyter kernel whose frontend renders widgets; when in doubt, False.

    Decided in this order:

    1. ``RLAUDIT_INTERACTIVE=1`` or ``0`` forces the answer (``rlaudit report`` sets 0 for its notebooks).
    2. Not an IPython kernel (a script, a terminal IPython), or ipywidgets not installed: False.
    3. The process that launched the kernel (``JPY_PARENT_PID``, else the parent) is papermill, nbval,
       pytest, nbclient or nbconvert: False.
    4. A Jupyter server started the kernel for a notebook session (``JPY_SESSION_NAME`` is set, as
       jupyter_server does for JupyterLab and Notebook 7), or the launcher is JupyterLab/Notebook/Voila: True.
    5. Anything else: False.
    """
    forced = os.environ.get("RLAUDIT_INTERACTIVE", "").strip().lower()
    if forced in ("1", "true", "yes"):
        return True
    if forced in ("0", "false", "no"):
        return False
    shell = _ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    launcher_pid = os.environ.get("JPY_PARENT_PID") or str(os.getppid())
    try:
        launcher = _cmdline(int(launcher_pid)).lower()
    except ValueError:
        launcher = ""
    if any(name in launcher for name in _BATCH_LAUNCHERS):
        return False
    if os.environ.get("JPY_SESSION_NAME"):
        return True
    return any(name in launcher for name in _FRONTEND_LAUNCHERS)


def ema_smooth(values: Sequence[float], weight: float) -> Any:
    """TensorBoard-style smoothing: an exponential moving average with bias correction.

    Args:
        values: The series, shape (n,).
        weight: 0 (no smoothing) to below 1 (heavy smoothing).

    Returns:
        Array (n,) of smoothed values; NaNs are carried over without poisoning the average.
    """
    import numpy as np

    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    y = np.asarray(values, dtype=float)
    out = np.empty_like(y)
    last, norm = 0.0, 0.0
    for i, v in enumerate(y):
        if np.isnan(v):
            out[i] = np.nan
            continue
        last = weight * last + (1 - weight) * v
        norm = weight * norm + (1 - weight)
        out[i] = last / norm
    return out


def _check_columns(df: Any, needed: Mapping[str, str | None]) -> None:
    missing = {role: col for role, col in needed.items() if col is not None and col not in df.columns}
    if missing:
        raise KeyError(
            f"explore_curves: columns {missing} not in the table (it has {list(df.columns)}); "
            "pass the column names as x=, y=, hue=, options=, seed="
        )


def curves_figure(
    df: Any,
    x: str = "step",
    y: str = "value",
    hue: str | None = "side",
    options: str | None = "name",
    *,
    seed: str | None = "seed",
    metrics: Sequence[Any] | None = None,
    seeds: Sequence[Any] | None = None,
    smooth: float = 0.0,
    col_wrap: int = 3,
    height: float = 3.0,
    title: str = "",
) -> Figure:
    """Static learning curves: one panel per metric, one line per (hue, seed), EMA-smoothed.

    The figure is built without pyplot, so it is shown once (where it is displayed or embedded) and never
    by the inline backend on its own.

    Args:
        df: Tidy table, one row per (metric, side, seed, step).
        x: Column of the x axis (environment steps).
        y: Column of values.
        hue: Column that colours lines (``"side"``: baseline/candidate), or None.
        options: Column naming the metric (one panel each), or None for a single panel.
        seed: Column of the run's seed (one thin line per seed), or None.
        metrics: Metrics to draw (default: all, in order of appearance).
        seeds: Seeds to draw (default: all).
        smooth: EMA weight in [0, 1) applied per line.
        col_wrap: Panels per row.
        height: Panel height in inches.
        title: Figure title.
    """
    import numpy as np
    import seaborn as sns
    from matplotlib.figure import Figure

    seed = seed if seed is not None and seed in df.columns else None
    _check_columns(df, {"x": x, "y": y, "hue": hue, "options": options})
    data = df
    if seeds is not None and seed is not None:
        data = data[data[seed].isin(list(seeds))]
    names = list(metrics) if metrics is not None else (list(dict.fromkeys(data[options])) if options else [y])
    n = max(1, len(names))
    cols = min(col_wrap, n)
    rows = int(np.ceil(n / cols))
    fig = Figure(figsize=(cols * height * 1.45, rows * height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).reshape(-1)
    group_cols = [c for c in (hue, seed) if c is not None]
    hue_order = list(dict.fromkeys(data[hue])) if hue else None
    for i, (ax, name) in enumerate(zip(axes, names, strict=False)):
        part = data[data[options] == name] if options else data
        if part.empty:
            ax.set_title(f"{name} (no data)")
            continue
        part = part.sort_values([*group_cols, x])
        if smooth > 0:
            part = part.copy()
            if group_cols:
                part[y] = part.groupby(group_cols, sort=False)[y].transform(
                    lambda s: ema_smooth(s.to_numpy(), smooth)
                )
            else:
                part[y] = ema_smooth(part[y].to_numpy(), smooth)
        sns.lineplot(
            data=part,
            x=x,
            y=y,
            hue=hue,
            hue_order=hue_order,
            units=seed,
            estimator=None if seed else "mean",
            errorbar=None,
            linewidth=1.2,
            alpha=0.85,
            ax=ax,
        )
        ax.set_title(str(name))
        ax.set_ylabel("")
        if i > 0 and ax.get_legend() is not None:
            ax.get_legend().remove()  # one legend for the figure is enough
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


def explore_curves(
    df: Any,
    x: str = "step",
    y: str = "value",
    hue: str | None = "side",
    options: str | None = "name",
    *,
    seed: str | None = "seed",
    smooth: float = 0.0,
    title: str = "",
) -> Any:
    """Learning curves to explore: widgets in JupyterLab, a static figure everywhere else.

    Interactive (see :func:`interactive`): a metric dropdown, a seed picker ("all" or one seed) and a
    smoothing slider above one panel. Otherwise (papermill, nbval, the HTML report): every metric in its
    own panel with every seed, smoothed with ``smooth``, via :func:`curves_figure`.

    Args:
        df: Tidy table with columns ``x``, ``y``, and optionally ``hue``, ``options`` (metric name), ``seed``.
        x, y, hue, options, seed: Column names (see :func:`curves_figure`).
        smooth: Initial EMA weight in [0, 1).
        title: Figure title.

    Returns:
        An ipywidgets container (interactive) or a matplotlib Figure; display it by ending the cell with it.
    """
    if not interactive():
        return curves_figure(df, x, y, hue, options, seed=seed, smooth=smooth, title=title)

    import ipywidgets as widgets
    from IPython.display import Image, display

    has_seed = seed is not None and seed in df.columns
    _check_columns(df, {"x": x, "y": y, "hue": hue, "options": options})
    metric_names = list(dict.fromkeys(df[options])) if options else [y]
    seed_values = sorted(dict.fromkeys(df[seed])) if has_seed else []
    metric = widgets.Dropdown(options=metric_names, description="metric")
    pick = widgets.Dropdown(
        options=["all", *seed_values], value="all", description="seed", disabled=not has_seed
    )
    slider = widgets.FloatSlider(value=smooth, min=0.0, max=0.99, step=0.01, description="smoothing")

    def draw(metric: Any, seed_choice: Any, smoothing: float) -> None:
        fig = curves_figure(
            df,
            x,
            y,
            hue,
            options,
            seed=seed if has_seed else None,
            metrics=[metric],
            seeds=None if seed_choice == "all" else [seed_choice],
            smooth=smoothing,
            col_wrap=1,
            height=4.0,
            title=title,
        )
        display(Image(data=figure_png(fig)))

    out = widgets.interactive_output(draw, {"metric": metric, "seed_choice": pick, "smoothing": slider})
    return widgets.VBox([widgets.HBox([metric, pick, slider]), out])
