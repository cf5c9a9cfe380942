"""Showing things in a notebook or a terminal: where the code runs (a live Jupyter frontend, a batch run, a
script), figures as embedded PNG, and findings as HTML tables, text lines and DataFrames.

Everything renders inline: matplotlib and seaborn figures become PNG images (no backend is ever switched).
Interactive controls (ipywidgets) are offered only in a live Jupyter frontend (:func:`interactive`); under
papermill, nbval and scripts the same calls draw static figures.
"""

from __future__ import annotations

import html
import io
import os
import platform
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlaudit.findings import (
    Finding,
    Status,
    sort_findings,
)

if TYPE_CHECKING:
    import pandas as pd

_TEMPLATES = Path(__file__).resolve().parent / "templates"


# ----------------------------------------------------------------------------------------------------------
# Environment: IPython, versions, figures
# ----------------------------------------------------------------------------------------------------------


def ipython_shell() -> Any:
    """The running IPython shell, or None; never imports IPython when the process is not already using it."""
    module = sys.modules.get("IPython")
    if module is None:
        return None
    get = getattr(module, "get_ipython", None)
    return get() if get else None


def show(obj: Any, text: str | None = None) -> None:
    """Show ``obj`` in a notebook (rich display), or print ``text`` (default ``str(obj)``) elsewhere."""
    shell = ipython_shell()
    if shell is not None and getattr(shell, "display_pub", None) is not None:
        from IPython.display import display

        display(obj)
    else:
        print(text if text is not None else str(obj))


class RichText:
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


def close_figure(obj: Any) -> None:
    # A figure made with pyplot would be shown a second time by the inline backend at the end of the cell;
    # once embedded it is closed. Figures made without pyplot are not registered and need nothing.
    pyplot = sys.modules.get("matplotlib.pyplot")
    fig = _as_figure(obj)
    if pyplot is not None and fig is not None:
        pyplot.close(fig)


def open_figure_numbers() -> set[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def register_figure_formatter() -> None:
    """Let IPython show a returned matplotlib Figure as PNG even before pyplot set up the inline backend.

    Figures built without pyplot (``matplotlib.figure.Figure()``, as rlaudit's plot helpers do) are not
    auto-displayed by the inline backend, so the display formatter is what shows them. This registers only a
    formatter; the matplotlib backend is left alone.
    """
    shell = ipython_shell()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    formatter = shell.display_formatter.formatters.get("image/png")
    if formatter is None:
        return
    formatter.for_type_by_name("matplotlib.figure", "Figure", lambda fig: figure_png(fig))


# ----------------------------------------------------------------------------------------------------------
# Formatting findings
# ----------------------------------------------------------------------------------------------------------


_SUFFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def format_number(value: float, *, kilo_from: float = 1e4) -> str:
    """A number as a person reads it: ``21.8k`` (not ``2.18e+04``), ``7134``, ``0.0546``, ``3.1e-06``.

    Three significant digits; from ``kilo_from`` on (10,000 by default) with a k/M/G/T suffix. A table passes
    ``kilo_from=1000`` for a column that holds both, so ``7.13k`` stands next to ``26.8k``, never ``7134``.
    """
    v = float(value)
    if v != v:
        return "—"
    if v in (float("inf"), float("-inf")):
        return "∞" if v > 0 else "-∞"
    a = abs(v)
    if a >= kilo_from:
        for scale, suffix in _SUFFIXES:
            if a >= scale:
                text = f"{v / scale:.3g}"
                if "e" not in text:
                    return text + suffix
        return f"{v:.3g}"
    if v == int(v) and a < 1e6:
        return str(int(v))
    if a >= 1000:
        return f"{v:.0f}"
    return f"{v:.3g}"


def _nested(value: Any, max_chars: int) -> str:
    """An item inside a list or mapping: a list in parentheses, so ``(128, 128), 64`` keeps its grouping."""
    text = format_value(value, max_chars)
    return f"({text})" if isinstance(value, list | tuple | set | frozenset | Mapping) else text


def format_value(value: Any, max_chars: int = 80) -> str:
    """A short human form of an evidence value: ``0.000457``, ``21.8k``, ``128, 128``, ``lr: 0.0003``, ``yes``.

    No Python reprs: a bool is yes/no, None a dash, a list its items, a mapping ``key: value`` pairs, a path
    its file name. ``max_chars=0`` never cuts the text short.
    """
    if value is None:
        return "—"
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float):
        text = format_number(value)
    elif isinstance(value, int):
        text = format_number(value) if abs(value) >= 10**4 else str(value)
    elif isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        text = ", ".join(_nested(v, max_chars) for v in items)
    elif isinstance(value, Mapping):
        text = "; ".join(f"{k}: {_nested(v, max_chars)}" for k, v in value.items())
    elif isinstance(value, os.PathLike):
        text = Path(value).name
    elif callable(getattr(value, "tolist", None)):  # numpy scalars and arrays, torch tensors
        return format_value(value.tolist(), max_chars)
    else:
        text = str(value)
    return text if not max_chars or len(text) <= max_chars else text[: max_chars - 1] + "…"


def _fmt_number(value: Any) -> str:
    try:
        return format_number(float(value))
    except (TypeError, ValueError):
        return str(value)


def evidence_lines(finding: Finding, max_chars: int = 80) -> list[tuple[str, str]]:
    """The evidence of a finding as (label, text) lines: baseline, candidate, effect and CI, test
    (``max_chars=0``: values whole, as the HTML tables show them)."""
    ev = finding.evidence
    lines: list[tuple[str, str]] = []
    if ev.baseline is not None or ev.candidate is not None:
        what = f" ({ev.value_label})" if ev.value_label else ""
        lines.append((f"baseline{what}", format_value(ev.baseline, max_chars)))
        lines.append((f"candidate{what}", format_value(ev.candidate, max_chars)))
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


def inline_markdown(text: str) -> str:
    """Escape text and render `code` spans, the only markup findings use."""
    escaped = html.escape(text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


def finding_anchor(finding_id: str) -> str:
    """The HTML id of a finding's row on its notebook's page (the report's links land there)."""
    return "finding-" + re.sub(r"[^A-Za-z0-9_-]+", "-", finding_id).strip("-")


_STATUS_TEXT = re.compile(r"(?:(?<=^)|(?<=; ))[!?x~=-] (CONFIRMED|SUSPECT|ERROR|NOTED|SKIPPED|CLEARED):")


def rich_text(text: str) -> str:
    """:func:`inline_markdown`, and each ``"! CONFIRMED:"`` that opens a finding's headline as its badge."""
    return _STATUS_TEXT.sub(
        lambda m: f'{status_badge(m[1])} <span class="rl-status rl-{m[1]}">{m[1]}</span>:',
        inline_markdown(text),
    )


def cause_badge(verdict: str) -> str:
    """An attribution verdict (``primary``, ``secondary``, ``minor``, ``undecided``, ...) as a coloured label."""
    key = re.sub(r"[^a-z]+", "-", str(verdict).lower()).strip("-")
    return f'<span class="rl-cause rl-cause-{key}">{html.escape(str(verdict))}</span>'


def headline_html(finding: Finding) -> str:
    text = finding.evidence.summary or finding.hypothesis
    status = finding.status.value
    return f'<span class="rl-status rl-{status}">{status}</span>: {inline_markdown(text)}'


def status_badge(status: Status | str) -> str:
    """A verdict as a coloured badge holding its ASCII mark (``rl-badge`` in findings.css), named for screen
    readers and on hover; ``"NOT RUN"`` (the status grid's placeholder) gets a grey one."""
    value = str(getattr(status, "value", status))
    mark = Status(value).mark if value in Status.__members__ else "·"
    key = value.replace(" ", "_")
    return (
        f'<span class="rl-badge rl-badge-{key}" role="img" aria-label="{value}" title="{value}">{mark}</span>'
    )


def _finding_row(finding: Finding, link: Callable[[Finding], str | None] | None, anchor: bool = False) -> str:
    status = finding.status.value
    meta = [html.escape(finding.id), finding.severity.value.lower()]
    href = link(finding) if link else None
    if href:
        page = href.rsplit("/", 1)[-1].split("#", 1)[0].removesuffix(".html")
        meta.append(f'<a href="{html.escape(href)}">see {html.escape(page)}</a>')
    cell = [f'<div class="rl-headline">{headline_html(finding)}</div>']
    if finding.remediation:
        cell.append(
            f'<div class="rl-fix"><span class="rl-k">fix:</span> {inline_markdown(finding.remediation)}</div>'
        )
    if finding.evidence.summary and finding.evidence.summary != finding.hypothesis:
        cell.append(f'<div class="rl-meta">hypothesis: {inline_markdown(finding.hypothesis)}</div>')
    cell.append(f'<div class="rl-meta">{" · ".join(meta)}</div>')
    evidence = "".join(
        f'<div><span class="rl-k">{html.escape(k)}:</span> {inline_markdown(v)}</div>'
        for k, v in evidence_lines(finding, max_chars=0)
    )
    if finding.figures:
        evidence += f'<div><span class="rl-k">figures:</span> {html.escape(", ".join(finding.figures))}</div>'
    details = finding.evidence.details or {}
    trace = details.get("traceback") or details.get("stderr_tail")
    if trace:
        evidence += f"<details><summary>traceback</summary><pre>{html.escape(str(trace))}</pre></details>"
    row_id = f' id="{finding_anchor(finding.id)}"' if anchor else ""
    return (
        f'<tr class="rl-row-{status}"{row_id}><td class="rl-mark">{status_badge(finding.status)}</td>'
        f'<td>{"".join(cell)}</td><td class="rl-ev">{evidence}</td></tr>'
    )


def findings_html(
    findings: Iterable[Finding],
    *,
    link: Callable[[Finding], str | None] | None = None,
    sort: bool = True,
    empty: str = "No findings.",
    anchors: bool = False,
) -> str:
    """The findings as an HTML table (no ``<style>``; see :func:`findings_css`).

    Args:
        findings: The findings to show.
        link: Optional function giving each finding a link (the report links subsystem pages).
        sort: Sort with :func:`rlaudit.findings.sort_findings` (most actionable first).
        empty: Text shown when there are no findings.
        anchors: Give each row the id :func:`finding_anchor` (on the one table of a page that owns it).
    """
    items = sort_findings(findings) if sort else list(findings)
    if not items:
        return f'<p class="rl-muted">{html.escape(empty)}</p>'
    rows = "".join(_finding_row(f, link, anchors) for f in items)
    return (
        '<table class="rl-findings"><thead><tr><th></th><th>finding and remediation</th>'
        f"<th>evidence</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def findings_css() -> str:
    """The stylesheet of findings tables and sections (a ``<style>`` body)."""
    return (_TEMPLATES / "findings.css").read_text()


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
        return f'<style>{findings_css()}</style><div class="rl-view">{head}{caption}{body}</div>'

    def __repr__(self) -> str:
        head = [self.title] if self.title else []
        if self.caption:
            head.append(self.caption)
        return "\n".join([*head, findings_text(self.findings)])


# ----------------------------------------------------------------------------------------------------------
# Interactive or static
# ----------------------------------------------------------------------------------------------------------

_BATCH_LAUNCHERS = ("papermill", "nbval", "pytest", "nbclient", "nbconvert", "jupyter-execute", "nbmake")
# Jupyter's own servers in any spelling (jupyter-lab, jupyterlab, jupyter_server, ...) and Voila.
_FRONTEND_LAUNCHER = re.compile(r"jupyter[-_]?(lab|notebook|server)|voila")


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


def _program(cmdline: str) -> str:
    """What a command line runs: its executable's and script's (or ``-m`` module's) names, not its arguments
    (a server whose notebook directory lies under a pytest temp folder is not pytest)."""
    words = cmdline.split()
    names = [Path(w).name for w in words[:2]]
    if "-m" in words[:3]:
        names.append(words[words.index("-m") + 1] if words.index("-m") + 1 < len(words) else "")
    return " ".join(names).lower()


_FORCED_INTERACTIVE: list[bool | None] = [None]  # set by force_interactive


def force_interactive(value: bool | None) -> None:
    """Force :func:`interactive`'s answer for this process (None: decide from the frontend again).

    The notebook's :class:`rlaudit.notebook.Session` calls it with its options' ``interactive``
    (``RLAUDIT_INTERACTIVE``, which ``rlaudit report`` sets to 0 for its notebooks).
    """
    _FORCED_INTERACTIVE[0] = value


def interactive() -> bool:
    """True only in a live Jupyter kernel whose frontend renders widgets; when in doubt, False.

    Decided in this order:

    1. :func:`force_interactive` forces the answer (``rlaudit report`` forces False for its notebooks).
    2. Not an IPython kernel (a script, a terminal IPython), or ipywidgets not installed: False.
    3. The process that launched the kernel (``JPY_PARENT_PID``, else the parent) is papermill, nbval,
       pytest, nbclient or nbconvert: False.
    4. A Jupyter server started the kernel for a notebook session (``JPY_SESSION_NAME`` is set, as
       jupyter_server does for JupyterLab and Notebook 7), or the launcher is JupyterLab/Notebook/Voila: True.
    5. Anything else: False.
    """
    forced = _FORCED_INTERACTIVE[0]
    if forced is not None:
        return forced
    shell = ipython_shell()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    launcher_pid = os.environ.get("JPY_PARENT_PID") or str(os.getppid())
    try:
        launcher = _program(_cmdline(int(launcher_pid)))
    except ValueError:
        launcher = ""
    if any(name in launcher for name in _BATCH_LAUNCHERS):
        return False
    if os.environ.get("JPY_SESSION_NAME"):
        return True
    return _FRONTEND_LAUNCHER.search(launcher) is not None


# ----------------------------------------------------------------------------------------------------------
# Tables for people
# ----------------------------------------------------------------------------------------------------------

_SHARE_COLUMN = re.compile(r"\bshare\b|\bfraction\b|(?<![\d.])%")  # "% of ...", not a "95% CI" level


def _cell_html(value: Any, column: str, kilo_from: float) -> tuple[str, bool]:
    """One table cell as HTML and whether it is a number (right-aligned)."""
    import numbers

    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return ("yes" if value else "no"), False
    if isinstance(value, numbers.Real):
        v = float(value)
        if v != v:
            return "—", True
        if _SHARE_COLUMN.search(column):
            return f"{v:.0%}", True
        if isinstance(value, numbers.Integral) and abs(v) < kilo_from:
            return str(int(v)), True
        return format_number(v, kilo_from=kilo_from), True
    if column == "verdict" and str(value) and str(value).split(" ")[0] in Status.__members__:
        return f"{status_badge(str(value).split(' ')[0])} {inline_markdown(str(value))}", False
    if column == "verdict" and isinstance(value, str):
        return cause_badge(value), False
    if value is None:
        return "—", False
    if isinstance(value, str):
        return rich_text(value), False
    if hasattr(value, "_repr_html_") and not callable(getattr(value, "tolist", None)):
        return value._repr_html_() or "", False
    return rich_text(format_value(value, max_chars=0)), False


def column_label(column: Any) -> str:
    """A column's header as words: snake_case read as words (so it wraps), a side suffix spelled out
    (``std_b`` -> ``std (baseline)``), and a pivot's tuple of levels (``("match", "baseline")``) joined as
    ``match · baseline`` instead of shown as a Python tuple."""
    parts = column if isinstance(column, tuple) else (column,)
    words = []
    for part in (str(p) for p in parts if str(p).strip()):
        side = SIDE_SUFFIXES.get(part[-2:]) if len(part) > 2 else None
        words.append(f"{part[:-2].replace('_', ' ')} ({side})" if side else part.replace("_", " "))
    return " · ".join(words)


SIDE_SUFFIXES = {"_b": "baseline", "_c": "candidate"}
"""The rooms' short column suffixes for the two sides (``std_b``), spelled out in a header."""

GENERIC_HEADERS = frozenset(
    {"ratio", "ci low", "ci high", "low", "high", "lo", "hi", "first", "last", "value", "values", "delta",
     "effect", "diff", "difference", "change"}
)  # fmt: skip
"""Headers that name no quantity, unit or direction of their own: ratio of what to what, the interval of which
statistic at what level, the first and last of what, in what unit. A table spells them out (``candidate /
baseline``, ``95% CI low (bytes per 1000 env steps)``, ``bytes at the first snapshot``)."""

_LEVEL_WORDS = re.compile(r"^\s*\d+(?:\.\d+)?%\s*")
_SIDE_WORDS = re.compile(r"\((?:baseline|candidate)\)|\b(?:baseline|candidate)\b|·")


def bare_header(column: Any) -> bool:
    """Whether a column's header (as :func:`column_label` shows it) is one of :data:`GENERIC_HEADERS` with at
    most a side added (``ci low (baseline)``, ``ratio · candidate``): its meaning would hang on the table's
    title or the finding instead of the header itself."""
    label = _LEVEL_WORDS.sub("", column_label(column).lower())  # "95% ci low" is as bare as "ci low"
    return " ".join(_SIDE_WORDS.sub(" ", label).split()) in GENERIC_HEADERS


def frame_html(frame: pd.DataFrame, *, max_rows: int = 40, classes: str = "rl-table") -> str:
    """A DataFrame as a table a person reads: no row numbers (a meaningful index becomes the first column),
    numbers as ``21.8k`` / ``0.0546`` (one style per column), columns named share/fraction as percentages,
    yes/no for booleans, no Python reprs (lists, dicts, paths, None), `code` spans and verdicts as badges, and
    the full text of every cell, wrapped."""
    import pandas as pd

    table = frame
    if not isinstance(table.index, pd.RangeIndex) or any(n is not None for n in table.index.names):
        table = table.reset_index()
    table = table.loc[:, ~table.columns.duplicated()]
    shown = (
        table if len(table) <= max_rows else pd.concat([table.head(max_rows // 2), table.tail(max_rows // 2)])
    )
    kilo = {}
    for c in table.columns:
        numeric = pd.to_numeric(table[c], errors="coerce") if table[c].dtype == object else table[c]
        try:
            big = bool(numeric.abs().max() >= 1e4) if pd.api.types.is_numeric_dtype(numeric) else False
        except TypeError:
            big = False
        kilo[c] = 1000.0 if big else 1e4
    head = "".join(f"<th>{html.escape(column_label(c))}</th>" for c in table.columns)
    rows = []
    for _, row in shown.iterrows():
        cells = []
        for c in table.columns:
            text, number = _cell_html(row[c], column_label(c), kilo[c])
            cells.append(f'<td class="rl-num">{text}</td>' if number else f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = (
        f'<p class="rl-muted">{len(table)} rows; the first and last {max_rows // 2} shown.</p>'
        if len(table) > max_rows
        else ""
    )
    return (
        f'<div class="rl-scroll"><table class="{classes}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{more}"
    )
