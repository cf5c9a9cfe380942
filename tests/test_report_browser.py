"""The rendered index, opened in a real browser (headless Chromium, Debian's package).

A harness page loads ``index.html`` in an iframe and writes what it finds into its own DOM (which Chromium's
``--dump-dom`` prints): the executive summary's sentences, the status grid's rows, and every figure's decoded
size, so an image that does not decode fails the test, not just one that is missing from the markup.
"""

from __future__ import annotations

import json
import os
import re
import shutil
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

HARNESS = """<!doctype html><html><body><div id="out">pending</div>
<iframe id="f" src="index.html" style="width:1200px;height:800px"></iframe>
<script>
document.getElementById('f').addEventListener('load', () => {
  setTimeout(() => {
    const d = document.getElementById('f').contentDocument;
    const imgs = [...d.querySelectorAll('#summary img')].map(i => [i.naturalWidth, i.naturalHeight]);
    const result = {
      title: d.querySelector('h1') ? d.querySelector('h1').textContent : null,
      sentences: [...d.querySelectorAll('#summary ul.rl-summary li')].map(li => li.textContent),
      grid_rows: d.querySelectorAll('#grid table.grid tbody tr').length,
      causes_rows: d.querySelectorAll('#summary table.rl-table tbody tr').length,
      images: imgs,
      findings_text: d.querySelector('#findings') ? d.querySelector('#findings').textContent : '',
    };
    document.getElementById('out').textContent = 'RESULT' + JSON.stringify(result) + 'END';
  }, 500);
});
</script></body></html>"""


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
        status = Status.CONFIRMED if subsystem == "loss" else Status.CLEARED
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


def test_index_shows_summary_grid_and_figures_in_chromium(rendered_index: Path) -> None:
    if CHROMIUM is None:
        pytest.fail("RLAUDIT_REQUIRE_BROWSER is set but chromium is not installed (apt-get install chromium)")
    harness = rendered_index.parent / "harness.html"
    harness.write_text(HARNESS)
    proc = subprocess.run(
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
            f"--user-data-dir={rendered_index.parent / 'chrome-profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            harness.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    match = re.search(r"RESULT(.*?)END", proc.stdout, re.DOTALL)
    assert match, f"the harness never reported (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    result = json.loads(match.group(1).replace("&quot;", '"'))
    assert result["title"] and "candidate" in result["title"]
    assert any("primary cause" in s for s in result["sentences"])
    assert result["grid_rows"] == len(SUBSYSTEMS)
    assert result["causes_rows"] >= 1
    assert result["images"] and all(w > 0 and h > 0 for w, h in result["images"]), result["images"]
    assert "Fix the GAE bootstrap" in result["findings_text"]
