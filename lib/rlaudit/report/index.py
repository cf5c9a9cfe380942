"""The report's entry point, ``<out>/index.html``: executive summary, status grid, every finding, the run.

:func:`write_index` renders ``templates/index.html.j2`` (self-contained: inline CSS, no scripts) from an
:class:`~rlaudit.report.overview.Overview` and the notebooks this run executed; :func:`attribution_html`
renders the summary's ``attribution.json`` for its executive summary.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlaudit.findings import SUBSYSTEMS, Finding, Status, notebook_name
from rlaudit.report.execution import NotebookRun
from rlaudit.report.overview import NOT_RUN, Overview, format_seconds, worst_status

_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def attribution_html(data: Any) -> str:
    """Render ``attribution.json`` for the index's executive summary.

    The summary's attribution experiments own the file's content; this renders what it finds: an optional
    ``title`` and ``summary`` (sentences), and a table from the first list of records under ``causes``,
    ``rows`` or ``experiments`` (one column per key; values formatted briefly). Anything else is shown as
    formatted JSON, so a newer format is never hidden.
    """
    from rlaudit.display import format_value

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
        # a cause's code changes are shown below the table, with their diffs
        columns = [k for k in dict.fromkeys(k for r in records for k in r) if k != "changes"]
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(format_value(r.get(c)))}</td>" for c in columns) + "</tr>"
            for r in records
        )
        parts.append(f'<table class="rl-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')
    else:
        rest = {k: v for k, v in data.items() if k not in ("summary", "title", "sentences", "figures")}
        parts.append(f"<pre>{html.escape(json.dumps(rest, indent=2, ensure_ascii=False))}</pre>")
    parts.extend(_culprits_html(data.get("changes")))
    for fig in data.get("figures") or []:
        if isinstance(fig, Mapping) and fig.get("data"):
            name = html.escape(str(fig.get("name", "")))
            parts.append(
                f'<figure class="rl-figure"><img alt="{name}" src="data:image/png;base64,{fig["data"]}">'
                f"<figcaption>{name}</figcaption></figure>"
            )
    return "".join(parts)


def _culprits_html(changes: Any) -> list[str]:
    """Each culprit hunk of the change search (``attribution.json``'s ``changes``): its commit, file and
    function, the share of each gap reverting it restores, and its diff."""
    from rlaudit.changes.report import diff_html

    if not isinstance(changes, Mapping):
        return []
    parts = []
    for c in changes.get("culprits") or []:
        if not isinstance(c, Mapping) or c.get("verdict") not in ("cause", "minor") or not c.get("diff"):
            continue
        where = "; ".join(
            f"{ch.get('path')} · {ch.get('function') or 'module level'} · {ch.get('hunk')}"
            for ch in c.get("changes") or []
            if isinstance(ch, Mapping)
        )
        commit = f"{str(c.get('commit', ''))[:7]} “{c.get('commit_subject', '')}”" if c.get("commit") else ""
        shares = ", ".join(
            f"{m}: {100 * e['point']:.0f}% ({100 * e['low']:.0f}..{100 * e['high']:.0f}%)"
            for m, e in (c.get("effects") or {}).items()
            if isinstance(e, Mapping) and e.get("point") is not None
        )
        title = " — ".join(x for x in (commit, where, f"restores {shares}" if shares else "") if x)
        parts.append(diff_html(str(c["diff"]), title))
    return parts


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

    from rlaudit.display import findings_css, findings_html, status_badge, versions

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
                "badge": status_badge(worst),
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
        worst = worst_status(r.findings)
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
    from rlaudit.engine.io import atomic_write_text

    path = atomic_write_text(out / "index.html", page)
    path.chmod(
        0o644
    )  # the atomic write's temporary file is private; the report is meant to be served and shared
    return path
