"""The rendered index, opened in a real browser (headless Chromium, Debian's package).

A harness page loads ``index.html`` in an iframe and writes what it finds into its own DOM (which Chromium's
``--dump-dom`` prints): the executive summary's sentences, the status grid's rows, every figure's decoded
size, and every verdict badge's box and computed colours, so an image that does not decode fails the test,
not just one that is missing from the markup. A screenshot of the same harness then shows whether the badges
are really drawn: each one's box holds its verdict's colour and a white glyph.

Debian's Chromium has no emoji font unless one is installed, so an emoji verdict mark would be drawn as an
empty box: the index must hold no emoji at all.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import string
import subprocess
from pathlib import Path

import pytest

from rlaudit.findings import SUBSYSTEMS, Evidence, Finding, Severity, Status, notebook_name, save_findings
from rlaudit.report import index, overview

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("RLAUDIT_REQUIRE_BROWSER"),
    reason="headless Chromium is not installed (apt-get install chromium); CI sets RLAUDIT_REQUIRE_BROWSER=1",
)

# Code points that need an emoji font: pictographs, dingbats, the misc. symbols, the presentation selector.
EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u23e9-\u23fa\ufe0f]")

WIDTH, HEIGHT = 1200, 5000  # the harness's viewport and iframe: the screenshot's pixels are the iframe's

HARNESS = string.Template("""<!doctype html><html><head><style>
body { margin: 0; overflow: hidden; } #out { display: none; }
iframe { position: absolute; left: 0; top: 0; border: 0; width: ${w}px; height: ${h}px; }
</style></head><body><div id="out">pending</div>
<iframe id="f" src="${src}" scrolling="no"></iframe>
<script>
document.getElementById('f').addEventListener('load', () => {
  setTimeout(() => {
    const d = document.getElementById('f').contentDocument;
    const w = document.getElementById('f').contentWindow;
    const imgs = [...d.querySelectorAll('#summary img')].map(i => [i.naturalWidth, i.naturalHeight]);
    const badges = [...d.querySelectorAll('.rl-badge')].map(b => {
      const r = b.getBoundingClientRect();
      const s = w.getComputedStyle(b);
      return {status: b.title, text: b.textContent, x: r.left, y: r.top, w: r.width, h: r.height,
              background: s.backgroundColor, color: s.color, font: s.fontFamily,
              hidden: !!b.closest('details:not([open])')};
    });
    const result = {
      title: d.querySelector('h1') ? d.querySelector('h1').textContent : null,
      body_font: w.getComputedStyle(d.body).fontFamily,
      sentences: [...d.querySelectorAll('#summary ul.rl-summary li')].map(li => li.textContent),
      grid_rows: d.querySelectorAll('#grid table.grid tbody tr').length,
      causes_rows: d.querySelectorAll('#summary table.rl-table tbody tr').length,
      images: imgs,
      badges: badges,
      findings_text: d.querySelector('#summary') ? d.querySelector('#summary').textContent : '',
      findings_align: [...d.querySelectorAll('table.rl-findings td:not(.rl-mark), table.rl-findings th')]
        .map(c => w.getComputedStyle(c).textAlign),
    };
    document.getElementById('out').textContent = 'RESULT' + JSON.stringify(result) + 'END';
  }, 500);
});
</script></body></html>""")

# One subsystem per verdict (the rest cleared), so that every badge colour is drawn.
STATUSES = {
    "loss": Status.CONFIRMED,
    "optimizer": Status.SUSPECT,
    "memory": Status.ERROR,
    "env": Status.NOTED,
    "logging": Status.SKIPPED,
}


def _png(path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # a test-only figure file; notebooks never set a backend
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 2))
    ax.errorbar([0.6], [0], xerr=[[0.2], [0.3]], fmt="o")
    fig.savefig(path, format="png")
    plt.close(fig)


@pytest.fixture
def rendered_index(tmp_path: Path) -> Path:
    findings_dir = tmp_path / "findings"
    for i, subsystem in enumerate(SUBSYSTEMS):
        status = STATUSES.get(subsystem, Status.CLEARED)
        f = Finding(
            id=f"{subsystem}/check",
            subsystem=subsystem,
            hypothesis=f"The {subsystem} behaves the same",
            status=status,
            severity=Severity.HIGH if status is Status.CONFIRMED else Severity.INFO,
            evidence=Evidence(
                baseline=i, candidate=i + (status is Status.CONFIRMED), summary=f"{subsystem} checked"
            ),
            remediation="Fix the GAE bootstrap" if subsystem == "loss" else "",
        )
        save_findings(findings_dir / f"{notebook_name(subsystem)}.json", [f], meta={})
    _png(findings_dir / "summary-forest.png")
    attribution = {
        "sentences": [
            "heart.get: primary cause fix loss.gae_bootstrap restores 62% of the gap.",
            "Verified as correct: agents, init.",
        ],
        "causes": [{"rank": 1, "subsystem": "loss", "verdict": "primary", "restores heart.get gap": "62%"}],
        "figures": [{"name": "gap restored (forest plot)", "file": "summary-forest.png"}],
    }
    (findings_dir / "attribution.json").write_text(json.dumps(attribution))
    out = tmp_path / "report"
    out.mkdir()
    found = overview.collect_findings(findings_dir)
    info = {
        "parameters": {"baseline": "builtin:reference", "candidate": "builtin:regressed"},
        "profile": "smoke",
    }
    return index.write_index(out, found, [], info)


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-sync",
            "--disable-background-networking",
            "--disable-component-update",
            "--allow-file-access-from-files",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=10000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _rgb(css: str) -> tuple[int, int, int]:
    """``"rgb(185, 28, 28)"`` -> ``(185, 28, 28)``."""
    match = re.fullmatch(r"rgba?\((\d+), (\d+), (\d+)(?:, [\d.]+)?\)", css)
    assert match, f"not an rgb() colour: {css!r}"
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


@pytest.fixture
def harness(rendered_index: Path) -> Path:
    if CHROMIUM is None:
        pytest.fail("RLAUDIT_REQUIRE_BROWSER is set but chromium is not installed (apt-get install chromium)")
    return _harness(rendered_index)


def _harness(page: Path) -> Path:
    path = page.parent / f"harness-{page.stem}.html"
    path.write_text(HARNESS.substitute(w=WIDTH, h=HEIGHT, src=page.name))
    return path


def _inspect(harness: Path) -> dict:
    proc = _chromium(harness.parent / "chrome-profile", "--dump-dom", harness.as_uri())
    match = re.search(r"RESULT(.*?)END", proc.stdout, re.DOTALL)
    assert match, f"the harness never reported (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    return json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_index_shows_summary_grid_and_figures_in_chromium(harness: Path) -> None:
    result = _inspect(harness)
    assert result["title"] and "candidate" in result["title"]
    assert any("primary cause" in s for s in result["sentences"])
    assert result["grid_rows"] == len(SUBSYSTEMS)
    assert result["causes_rows"] >= 1
    assert result["images"] and all(w > 0 and h > 0 for w, h in result["images"]), result["images"]
    assert "Fix the GAE bootstrap" in result["findings_text"]
    # The inline stylesheet is applied as written (escaped quotes would drop the font stack: a serif page).
    assert result["body_font"].startswith("system-ui"), result["body_font"]


def test_verdict_badges_are_drawn_without_an_emoji_font(harness: Path, rendered_index: Path) -> None:
    from PIL import Image

    page = rendered_index.read_text()
    assert not EMOJI.search(page), f"emoji in the index: {sorted(set(EMOJI.findall(page)))}"
    result = _inspect(harness)
    shown = [b for b in result["badges"] if not b["hidden"]]
    # Every verdict has a badge in view (the grid alone has one per subsystem), each a box of its own colour.
    assert {b["status"] for b in shown} >= {s.value for s in Status}, {b["status"] for b in shown}
    for b in shown:
        assert b["w"] >= 10 and b["h"] >= 10, b
        assert b["text"] == Status(b["status"]).mark, b
        assert _rgb(b["color"]) == (255, 255, 255), b
        assert "monospace" in b["font"], b
    colours = {b["status"]: _rgb(b["background"]) for b in shown}
    assert len(set(colours.values())) == len(colours), colours  # one colour per verdict
    red, green = colours["CONFIRMED"], colours["CLEARED"]
    assert red[0] > red[1] + 80 and red[0] > red[2] + 80, red
    assert green[1] > green[0] + 40 and green[1] > green[2] + 40, green

    # The screenshot: inside each badge's box, mostly its background colour, and a white glyph on it.
    png = harness.parent / "index.png"
    proc = _chromium(
        harness.parent / "chrome-profile",
        f"--window-size={WIDTH},{HEIGHT}",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",
        f"--screenshot={png}",
        harness.as_uri(),
    )
    assert png.exists(), f"no screenshot (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    image = Image.open(png).convert("RGB")
    checked = 0
    for b in shown:
        if b["y"] + b["h"] > image.height - 2:
            continue
        box = image.crop((round(b["x"]), round(b["y"]), round(b["x"] + b["w"]), round(b["y"] + b["h"])))
        pixels = [box.getpixel((x, y)) for y in range(box.height) for x in range(box.width)]
        near = lambda p, c: sum(abs(p[i] - c[i]) for i in range(3)) < 40  # noqa: E731
        fill = sum(near(p, colours[b["status"]]) for p in pixels) / len(pixels)
        glyph = sum(sum(p) > sum(colours[b["status"]]) + 240 for p in pixels)
        assert fill > 0.35, (b, fill)
        assert glyph >= 6, (b, glyph)  # a mark was drawn in white on the badge
        checked += 1
    assert checked >= len(SUBSYSTEMS), checked


def test_a_notebook_page_shows_badges_and_left_aligned_findings(tmp_path: Path) -> None:
    """nbconvert's JupyterLab stylesheet right-aligns every output table cell; findings must still read left
    to right, and the page's banner shows the notebook's verdict as a badge."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from rlaudit.display import FindingsView
    from rlaudit.report import execution, pages

    if CHROMIUM is None:
        pytest.fail("RLAUDIT_REQUIRE_BROWSER is set but chromium is not installed (apt-get install chromium)")
    suspect = Finding(
        id="env/equivalence", subsystem="env", hypothesis="The environments agree step for step",
        status=Status.SUSPECT, evidence=Evidence(baseline="a", candidate="b", summary="they diverge at step 3"),
        remediation="Diff the environment code",
    )  # fmt: skip
    cell = new_code_cell("session.finish()")
    cell.outputs = [new_output("display_data", data={"text/html": FindingsView([suspect])._repr_html_()})]
    run = execution.NotebookRun(
        name="05_env",
        source=tmp_path / "05_env.ipynb",
        output=tmp_path / "executed" / "05_env.ipynb",
        html=tmp_path / "05_env.html",
        log=tmp_path / "05_env.log",
        findings_path=tmp_path / "05_env.json",
        findings=[suspect],
    )
    run.output.parent.mkdir()
    nbformat.write(new_notebook(cells=[cell]), run.output)
    pages.render(run)
    assert not EMOJI.search(run.html.read_text())
    result = _inspect(_harness(run.html))
    assert result["findings_align"] and set(result["findings_align"]) == {"left"}, result["findings_align"]
    row, banner = sorted(result["badges"], key=lambda b: b["y"], reverse=True)
    assert banner["status"] == row["status"] == "SUSPECT" and banner["y"] < row["y"]
    assert banner["w"] >= 10 and _rgb(banner["background"]) == _rgb(row["background"]) != (0, 0, 0)


# ----------------------------------------------------------------------------------------------------------
# A real report of the built-in pair (smoke profile, three notebooks): every page at 1024 and 1600 px
# ----------------------------------------------------------------------------------------------------------

# 02_trainer (tables of numbers and ratios), 04_checkpointing and 14_config: the config notebook files a changed
# checkpoint setting under checkpointing, so the subsystem's verdict and its page's differ.
SMOKE_NOTEBOOKS = "02,04,14"
PAGE_WIDTHS = (1024, 1600)

PAGES_HARNESS = string.Template("""<!doctype html><html><head><style>
body { margin: 0; } #out { display: none; } iframe { border: 0; height: 900px; }
</style></head><body><div id="out">pending</div><iframe id="f"></iframe>
<script>
const pages = ${pages}, widths = ${widths}, f = document.getElementById('f'), out = {};
const load = (src, w) => new Promise(done => {
  f.style.width = w + 'px'; f.onload = () => setTimeout(done, 300); f.src = src; });
const title = el => el ? (el.querySelector('.rl-badge') || {}).title || '' : '';
(async () => {
  for (const page of pages) for (const w of widths) {
    await load(page, w);
    const d = f.contentDocument, view = d.documentElement.clientWidth;
    const shown = e => !e.closest('details:not([open])');
    const r = {width: w, view: view, scroll: d.documentElement.scrollWidth,
      // images and tables wider than the page (a wide table may scroll inside its own box, never the page)
      wide: [...d.querySelectorAll('img, table')].filter(shown)
        .filter(e => e.getBoundingClientRect().right > view + 1 && !e.closest('.rl-scroll'))
        .map(e => e.tagName + ' ' + (e.alt || e.className) + ' ' + Math.round(e.getBoundingClientRect().right)),
      banner: title(d.querySelector('.rl-banner')),
      toc: d.querySelectorAll('.rl-toc a').length,
      grid: [...d.querySelectorAll('#grid tbody tr')].map(tr => [tr.cells[0].textContent.trim().split(' ')[0],
        title(tr.cells[1]), title(tr.cells[2])]),
      pages: [...d.querySelectorAll('#pages tbody tr')].map(tr => [tr.cells[0].textContent.trim(),
        tr.cells[2].textContent.trim()])};
    out[page + '@' + w] = r;
  }
  document.getElementById('out').textContent = 'RESULT' + JSON.stringify(out) + 'END';
})();
</script></body></html>""")


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real report, shared by the tests below: ``rlaudit report`` of the built-in pair at smoke."""
    from rlaudit.cli import ReportArgs
    from rlaudit.options import RunOptions
    from rlaudit.report import commands

    if CHROMIUM is None:
        pytest.fail("RLAUDIT_REQUIRE_BROWSER is set but chromium is not installed (apt-get install chromium)")
    out = tmp_path_factory.mktemp("smoke-report")
    args = ReportArgs(
        baseline="builtin:reference", candidate="builtin:regressed", profile="smoke", jobs=2, out=str(out),
        notebooks=SMOKE_NOTEBOOKS,
    )  # fmt: skip
    commands.run_report(args, RunOptions.from_cli(args))
    assert (out / "index.html").exists() and len(list(out.glob("[0-9][0-9]_*.html"))) == 3
    return out


@pytest.fixture(scope="module")
def smoke_pages(smoke_report: Path) -> dict[str, dict]:
    """What Chromium finds on every page of the smoke report, at each width of :data:`PAGE_WIDTHS`."""
    pages = ["index.html", *sorted(p.name for p in smoke_report.glob("[0-9][0-9]_*.html"))]
    harness = smoke_report / "harness-pages.html"
    harness.write_text(PAGES_HARNESS.substitute(pages=json.dumps(pages), widths=json.dumps(PAGE_WIDTHS)))
    proc = _chromium(smoke_report / "chrome-profile", "--dump-dom", harness.as_uri())
    match = re.search(r"RESULT(.*?)END", proc.stdout, re.DOTALL)
    assert match, f"the harness never reported (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    return json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.mark.workbench  # the shared report runs notebooks
def test_every_page_fits_the_column_from_1024_to_1600_px(smoke_pages: dict[str, dict]) -> None:
    assert len(smoke_pages) == 4 * len(PAGE_WIDTHS)
    for key, page in smoke_pages.items():
        assert page["scroll"] <= page["view"], f"{key} scrolls sideways: {page['scroll']} > {page['view']}"
        assert not page["wide"], f"{key}: wider than the page: {page['wide']}"


@pytest.mark.workbench  # the shared report runs notebooks
def test_each_verdict_reads_the_same_in_every_view(smoke_pages: dict[str, dict]) -> None:
    index = smoke_pages[f"index.html@{PAGE_WIDTHS[0]}"]
    banners = {k.split(".html")[0]: p["banner"] for k, p in smoke_pages.items() if not k.startswith("index")}
    listed = {name: re.search(r"worst (\w+)", text) for name, text in index["pages"]}
    grid = {nb: (subsystem, page) for nb, subsystem, page in index["grid"]}
    for name, banner in banners.items():
        assert banner, f"{name}: no verdict badge in the banner"
        # the Pages table, the grid's page column and the page's own banner: one verdict per page
        assert listed[name] and listed[name].group(1) == banner, (name, listed[name], banner)
        assert grid[name][1] == banner, (name, grid[name], banner)
    # the grid counts by subsystem and says so: 04's subsystem holds 14_config's changed checkpoint setting
    subsystem, page = grid["04_checkpointing"]
    assert Status[subsystem].rank <= Status[page].rank, grid["04_checkpointing"]


@pytest.mark.workbench  # the shared report runs notebooks
def test_long_pages_have_a_table_of_contents(smoke_pages: dict[str, dict]) -> None:
    for key, page in smoke_pages.items():
        if not key.startswith("index"):
            assert page["toc"] >= 3, f"{key}: no table of contents"


@pytest.mark.workbench  # the shared report runs notebooks
def test_no_placeholder_repr_path_or_row_index_leaks_into_a_page(smoke_report: Path) -> None:
    for path in sorted(smoke_report.glob("*.html")):
        if path.name.startswith("harness"):
            continue
        page = path.read_text()
        text = re.sub(
            r"<style.*?</style>|<script.*?</script>|data:image/png;base64,[^\"']+", "", page, flags=re.S
        )
        assert not re.search(r"\{[A-Z][A-Z_]+\}", text), (
            path.name,
            re.findall(r".{60}\{[A-Z][A-Z_]+\}", text),
        )
        assert "PosixPath(" not in text and str(smoke_report) not in text, path.name
        tables = re.findall(r'<table class="rl-table">.*?</table>', text, re.S)
        for table in tables:
            cells = re.findall(r"<td[^>]*>([^<]*)</td>", table)
            assert not any(re.fullmatch(r"True|False|None|\[.*\]|\{.*\}|-?\d\.\d+e[+-]\d+", c) for c in cells), (
                path.name, [c for c in cells if re.fullmatch(r"True|False|None|\[.*\]|\{.*\}|.*e[+-]\d+", c)]
            )  # fmt: skip
        assert "<th></th>" not in "".join(tables), f"{path.name}: a table shows pandas' row numbers"
        headers = re.findall(r"<th>([^<]*)</th>", "".join(tables))
        assert not [h for h in headers if h.startswith("(")], (
            path.name,
            [h for h in headers if h.startswith("(")],
        )
        shown = re.findall(r"<h4>([^<]+)</h4>", text)
        assert len(shown) == len(set(shown)), (path.name, [t for t in shown if shown.count(t) > 1])


def test_a_figure_wider_than_the_column_is_scaled_to_fit(rendered_index: Path) -> None:
    """A two-panel forest plot is about 1400 px wide: at 1024 and 1600 px the index must not scroll sideways."""
    import matplotlib

    matplotlib.use("Agg")  # a test-only figure file; notebooks never set a backend
    import matplotlib.pyplot as plt

    if CHROMIUM is None:
        pytest.fail("RLAUDIT_REQUIRE_BROWSER is set but chromium is not installed (apt-get install chromium)")
    fig, _ = plt.subplots(1, 2, figsize=(17, 3))
    fig.savefig(rendered_index.parent.parent / "findings" / "summary-forest.png", format="png", dpi=100)
    plt.close(fig)
    findings_dir = rendered_index.parent.parent / "findings"
    found = overview.collect_findings(findings_dir)
    info = {"parameters": {"baseline": "builtin:reference", "candidate": "builtin:regressed"}}
    page = index.write_index(rendered_index.parent, found, [], info)
    harness = page.parent / "harness-wide.html"
    harness.write_text(
        PAGES_HARNESS.substitute(pages=json.dumps([page.name]), widths=json.dumps(PAGE_WIDTHS))
    )
    proc = _chromium(page.parent / "chrome-profile", "--dump-dom", harness.as_uri())
    match = re.search(r"RESULT(.*?)END", proc.stdout, re.DOTALL)
    assert match, f"the harness never reported (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    for key, shown in json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&")).items():
        assert shown["scroll"] <= shown["view"] and not shown["wide"], (key, shown)
