"""JupyterLab in a real browser (playwright driving Debian's headless Chromium) on a smoke pair.

``rlaudit lab`` starts the server on the built-in pair at the smoke profile, on a copy of the notebooks (so
running them writes nothing into the checkout). Two notebooks are run from the Run menu without editing a
cell: 14_config, then 02_trainer, whose run explorer is then driven as a user would: every control is moved,
and after each move the figure's image in the browser must have changed and the line under it (written from
the values the figure was drawn with, in the kernel) must name the value the control now shows. Last, the tab
is closed and the notebook opened again: the explorer comes back from the kernel with the same values.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parents[1]

try:
    import playwright.sync_api as pw
except ImportError:  # pragma: no cover - depends on the environment
    pw = None

pytestmark = [
    pytest.mark.workbench,  # a Jupyter server, kernels and workers
    pytest.mark.skipif(
        (CHROMIUM is None or pw is None) and not os.environ.get("RLAUDIT_REQUIRE_BROWSER"),
        reason="needs headless Chromium (apt-get install chromium) and playwright (pip install playwright); "
        "CI sets RLAUDIT_REQUIRE_BROWSER=1",
    ),
]

TOKEN = "rlaudit-browser-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def lab_server(tmp_path: Path):
    """``rlaudit lab`` on the built-in pair at smoke, serving a copy of the notebooks; yields its URL."""
    home = tmp_path / "home"
    shutil.copytree(ROOT / "notebooks", home / "notebooks")
    settings = tmp_path / "lab-settings"
    # every cell in the page (no windowing: outputs below the fold are in the DOM too), no news prompt
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        '{"windowingMode": "none"}'
    )
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    port = _free_port()
    env = {
        **os.environ,
        "RLAUDIT_HOME": str(home),
        "RLAUDIT_CACHE": os.environ.get("RLAUDIT_TEST_CACHE") or str(tmp_path / "cache"),
        "RLAUDIT_REPORTS": str(tmp_path / "reports"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "lab-workspaces"),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "lib"), os.environ.get("PYTHONPATH", "")) if p),
    }
    env.pop("RLAUDIT_INTERACTIVE", None)
    env.pop("RLAUDIT_PROFILE", None)
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlaudit.cli", "lab", "--profile", "smoke", "--",
         "--no-browser", f"--port={port}", f"--IdentityProvider.token={TOKEN}",
         "--ServerApp.disable_check_xsrf=True", "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"rlaudit lab exited: {(tmp_path / 'lab.log').read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _open(page, url: str, name: str) -> None:
    page.goto(f"{url}/lab/tree/{name}?token={TOKEN}")
    # Lab restores the notebooks already open: wait until this one is the tab in view, or a Run All could land
    # on the previous notebook and its kernel's Idle be taken for this one's
    page.locator(".lm-TabBar-tab.lm-mod-current", has_text=name).first.wait_for(timeout=120_000)
    page.locator(".jp-NotebookPanel:visible .jp-Cell").first.wait_for(timeout=120_000)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        _accept_kernel_dialog(page)
        if _kernel_idle(page):
            return
        page.wait_for_timeout(500)
    raise AssertionError("the notebook's kernel did not start")


def _accept_kernel_dialog(page) -> None:
    """Accept "Select Kernel" (the notebook's own python3, as offered). On a busy machine it can open after
    the status bar already reads Idle (still the previous notebook's kernel), so every click checks first;
    any other dialog fails the test with its text."""
    dialog = page.locator(".jp-Dialog")
    if not dialog.count():
        return
    text = " ".join(dialog.first.inner_text().split())
    if "kernel" not in text.lower():
        raise AssertionError(f"JupyterLab opened a dialog: {text!r}")
    dialog.first.locator("button.jp-mod-accept").click()
    page.wait_for_timeout(500)


def _kernel_idle(page) -> bool:
    status = " | ".join(page.locator(".jp-StatusBar-Widget").all_inner_texts())
    return re.search(r"Python 3[^|]*\| Idle", status) is not None


def _run_all(page) -> None:
    """Run > Run All Cells, again if no cell started within 30 s (a click that lands while the notebook is
    still attaching its kernel is dropped by JupyterLab)."""
    for _ in range(3):
        _accept_kernel_dialog(page)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            prompts = " ".join(
                page.locator(".jp-NotebookPanel:visible .jp-InputArea-prompt").all_inner_texts()
            )
            if re.search(r"\[(\*|\d+)\]", prompts):
                return
            page.wait_for_timeout(500)
    raise AssertionError("Run All Cells started no cell")


def _wait_done(page, findings: Path, timeout_s: float) -> None:
    """Until the notebook's last cell (``session.finish()``) has written its findings and the kernel is idle."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if findings.exists() and _kernel_idle(page):
            page.wait_for_timeout(1000)
            return
        page.wait_for_timeout(1000)
    raise AssertionError(f"the notebook did not finish in {timeout_s:.0f} s (no {findings.name})")


def _errors(page) -> list[str]:
    return page.locator(
        ".jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']:has-text('Error')"
    ).all_inner_texts()


def _figure(explorer) -> str:
    """The figure as the browser shows it: the ipympl canvas's pixels."""
    return explorer.locator("canvas").first.evaluate(
        "c => { const all = [...c.closest('.rl-explorer').querySelectorAll('canvas')];"
        " const big = all.sort((a, b) => b.width * b.height - a.width * a.height)[0];"
        " return big.toDataURL(); }"
    )


def _status(explorer) -> str:
    return explorer.locator(".rl-explore-status").inner_text()


def _changed(page, explorer, before_image: str, expected: str, timeout_s: float = 60) -> None:
    """Until the status line names ``expected`` and the canvas differs from ``before_image``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if expected in _status(explorer) and _figure(explorer) != before_image:
            return
        page.wait_for_timeout(200)
    raise AssertionError(f"figure or status did not follow the control: wanted {expected!r}, status "
                         f"{_status(explorer)!r}")  # fmt: skip


def _slider_to(explorer, name: str, value: str) -> None:
    readout = explorer.locator(f".rl-control-{name} .widget-readout")
    readout.click()
    readout.press("Control+a")
    readout.type(value)
    readout.press("Enter")


def test_lab_runs_two_notebooks_and_the_run_explorer_follows_every_control(
    lab_server: str, tmp_path: Path
) -> None:
    findings = tmp_path / "reports" / "findings"
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            _open(page, lab_server, "14_config.ipynb")
            _run_all(page)
            _wait_done(page, findings / "14_config.json", 600)
            assert not _errors(page)
            header = page.locator(".rl-header").first.inner_text()
            assert "pair: from `rlaudit lab`" in header and "smoke" in header

            _open(page, lab_server, "02_trainer.ipynb")
            _run_all(page)
            _wait_done(page, findings / "02_trainer.json", 900)
            assert not _errors(page)
            # the run explorer of the notebook in view (14_config's table explorer stays in the page, hidden)
            explorer = page.locator(
                ".jp-NotebookPanel:visible .rl-explorer", has=page.locator("canvas")
            ).first
            explorer.locator("canvas").first.wait_for(timeout=60_000)
            explorer.scroll_into_view_if_needed()
            page.wait_for_timeout(1000)

            def move(action, expected: str) -> None:
                before = _figure(explorer)
                action()
                _changed(page, explorer, before, expected)

            metric = explorer.locator(".rl-control-metric select")
            options = metric.locator("option").all_inner_texts()
            target = next(o for o in options if o != metric.input_value())
            move(lambda: metric.select_option(label=target), f"metric={target}")
            move(lambda: explorer.locator(".rl-control-x select").select_option(label="wall-clock seconds"),
                 "x=wall-clock seconds")  # fmt: skip
            move(lambda: explorer.locator(".rl-control-show select").select_option(label="each run"),
                 "show=each run")  # fmt: skip
            move(lambda: _slider_to(explorer, "smooth", "0.1"), "smoothing=0.1")
            move(lambda: explorer.locator(".rl-control-log_y input").click(), "log y=True")
            high = int(re.search(r"steps=\(0, (\d+)\)", _status(explorer)).group(1))
            move(lambda: _slider_to(explorer, "steps", f"0 – {high // 2}"), f"steps=(0, {high // 2})")

            # what the controls show is what the figure was drawn with
            status = _status(explorer)
            assert f"metric={metric.input_value()}" in status
            assert "x=wall-clock seconds" in status and "show=each run" in status

            # the tab closed and reopened: the explorer comes back from the kernel, still in step
            page.keyboard.press("Control+s")
            page.wait_for_timeout(1000)
            page.locator(".lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
            page.wait_for_timeout(1000)
            _open(page, lab_server, "02_trainer.ipynb")
            # the run explorer of the notebook in view (14_config's table explorer stays in the page, hidden)
            explorer = page.locator(
                ".jp-NotebookPanel:visible .rl-explorer", has=page.locator("canvas")
            ).first
            explorer.locator("canvas").first.wait_for(timeout=60_000)
            assert _status(explorer) == status
            assert explorer.locator(".rl-control-metric select").input_value() == target
        finally:
            page.screenshot(path=str(tmp_path / "lab-browser.png"))  # kept by pytest for a failed run
            browser.close()
