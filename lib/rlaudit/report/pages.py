"""Rendering each executed notebook to its HTML page (nbconvert, code hidden), with a banner linking the index."""

from __future__ import annotations

import html
import re
import time

from rlaudit.report.execution import NotebookRun, log_tail
from rlaudit.report.overview import format_seconds, worst_status


def _toc(page: str) -> str:
    """A table of contents of the page's sections (its markdown ``##`` headings), as links under the banner."""
    heads = [
        (anchor, re.sub(r"<[^>]+>|¶", "", text).strip())
        for anchor, text in re.findall(r'<h2 id="([^"]+)"[^>]*>(.*?)</h2>', page, re.DOTALL)
    ]
    if len(heads) < 3:
        return ""
    links = " · ".join(
        f'<a href="#{html.escape(a, quote=True)}" style="color: #4338ca;">{t}</a>' for a, t in heads
    )
    return f'<div class="rl-toc" style="margin-top: 4px; font-size: 13px; line-height: 1.6;">On this page: {links}</div>'


def _banner(run: NotebookRun, toc: str = "") -> str:
    """The strip above each page: a link back to the index, the notebook's worst verdict, time and error.

    It carries the findings stylesheet itself, since a notebook that failed early has no output that does.
    """
    from rlaudit.display import findings_css, status_badge

    worst = worst_status(run.findings)
    status = (
        f'{status_badge(worst)} <span class="rl-status rl-{worst.value}">{worst.value}</span>'
        if worst
        else "no findings"
    )
    note = f" · {html.escape(run.error)}" if run.error else ""
    return (
        f"<style>{findings_css()}</style>"
        '<div class="rl-banner" style="font-family: system-ui, sans-serif; font-size: 14px; padding: 8px 16px; '
        'background: #f5f7ff; border-bottom: 1px solid #c7d2fe;">'
        f'<a href="index.html" style="color: #4338ca;">&larr; report index</a> · <b>{html.escape(run.name)}</b> · '
        f"{status} (worst of the {len(run.findings)} findings on this page) · {format_seconds(run.seconds)}{note}"
        f"{toc}</div>"
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
            f"{html.escape(run.error)}</p><pre>{html.escape(log_tail(run.log, 80))}</pre></body></html>"
        )
    banner = _banner(run, _toc(page))
    page = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + banner, page, count=1)
    run.html.write_text(page, encoding="utf-8")
    run.render_seconds = time.perf_counter() - started
    return run
