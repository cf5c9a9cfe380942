"""rlaudit.notebook: sections render findings and figures, audits that raise become ERROR findings, and the
session keeps findings and saves them with their metadata. A small fake stands in for the Workbench. Also what
sections are shown with: rlaudit.display (findings tables, values, a live frontend or a batch run) and
rlaudit.curves (smoothing, learning-curve figures and widgets)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

import rlaudit.engine.workbench
from rlaudit import curves, display
from rlaudit import notebook as rn
from rlaudit.findings import Evidence, Finding, Status, load_findings

matplotlib.use("Agg")  # tests only: no display here (the library itself never sets a backend)
import matplotlib.pyplot as plt


class FakeWorkbench:
    def __init__(self) -> None:
        self.labels = {"baseline": "ref (label)", "candidate": "reg (label)"}
        self.fingerprints = {"baseline": "aaaa1111", "candidate": "bbbb2222"}


def cleared() -> Finding:
    return Finding(
        id="agents/hidden-sizes",
        subsystem="agents",
        hypothesis="The two networks have the same hidden sizes",
        status=Status.CLEARED,
        evidence=Evidence(baseline=[128, 128], candidate=[128, 128], summary="hidden sizes match (128, 128)"),
    )


def suspect() -> Finding:
    return Finding(
        id="agents/activation",
        subsystem="agents",
        hypothesis="Both networks use the same activation",
        status=Status.SUSPECT,
        severity="HIGH",
        evidence=Evidence(
            baseline="tanh",
            candidate="relu",
            effect=0.42,
            effect_label="cohen_d",
            ci=(0.1, 0.8),
            ci_level=0.95,
            test={"name": "mann-whitney U", "statistic": 12.0, "p": 0.003},
            summary="activation changed from `tanh` to `relu`",
        ),
        remediation="Restore `tanh` in the policy",
    )


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLAUDIT_REPORTS", str(tmp_path / "reports"))
    monkeypatch.delenv("RLAUDIT_PROFILE", raising=False)
    monkeypatch.delenv("RLAUDIT_INTERACTIVE", raising=False)


# --------------------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------------------


def test_section_html_shows_status_marks_headlines_evidence_and_remediation() -> None:
    section = rn.Section(
        title="Architecture", findings=[cleared(), suspect()], notes="Compared `module_tree`."
    )
    page = section.to_html()
    assert 'class="rl-badge rl-badge-CLEARED"' in page and 'class="rl-badge rl-badge-SUSPECT"' in page
    assert "CLEARED</span>: hidden sizes match (128, 128)" in page
    assert "activation changed from <code>tanh</code> to <code>relu</code>" in page
    assert "cohen_d 0.42 [0.1, 0.8] (95% CI)" in page
    assert "mann-whitney U = 12 p = 0.003" in page
    assert "Restore <code>tanh</code> in the policy" in page
    assert "Compared <code>module_tree</code>." in page
    # Most actionable first: the suspect row comes before the cleared one.
    assert page.index("rl-row-SUSPECT") < page.index("rl-row-CLEARED")


def test_section_escapes_html_in_findings() -> None:
    finding = Finding(id="x/y", subsystem="env", hypothesis="<script>alert(1)</script>", status="NOTED")
    assert "<script>alert" not in rn.Section.of(finding).to_html()


def test_section_of_one_finding() -> None:
    section = rn.Section.of(suspect())
    assert section.title == "Both networks use the same activation"
    assert section.findings[0].id == "agents/activation"


def test_section_embeds_figures_and_tables_and_closes_pyplot_figures() -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    section = rn.Section(
        title="Curves",
        tables={"layers": pd.DataFrame({"layer": ["fc1"], "size": [128]})},
        figures={"curve": fig},
    )
    page = section.to_html()
    assert page.count("data:image/png;base64,") == 1
    assert "<figcaption>curve</figcaption>" in page
    assert "fc1" in page and "rl-table" in page
    # Closed once embedded, so the inline backend does not show it a second time.
    assert fig.number not in plt.get_fignums()


def test_a_section_already_shown_does_not_repeat_itself(capsys: pytest.CaptureFixture) -> None:
    section = rn.Section.of(cleared())
    section.show()
    assert "CLEARED" in capsys.readouterr().out  # no IPython here: the text form is printed
    assert "shown above" in section._repr_html_()
    assert "Section('The two networks have the same hidden sizes': 1 cleared" in repr(section)


def test_section_rejects_non_findings() -> None:
    with pytest.raises(TypeError, match="Finding"):
        rn.Section(title="x", findings=["not a finding"])  # type: ignore[list-item]


# --------------------------------------------------------------------------------------------------------
# Session
# --------------------------------------------------------------------------------------------------------


def test_session_creates_the_workbench_lazily_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made = []

    def factory(*args: object, **kwargs: object) -> FakeWorkbench:
        made.append((args, kwargs))
        return FakeWorkbench()

    monkeypatch.setattr(rlaudit.engine.workbench, "Workbench", factory)
    session = rn.Session(
        "agents", "builtin:reference", "builtin:regressed", "smoke", pair_file="p.yaml", metric="length:lower"
    )
    assert made == []
    assert session.wb is session.wb
    ((args, kwargs),) = made
    assert args == ("builtin:reference", "builtin:regressed")
    assert kwargs == {
        "profile": "smoke",
        "pair_file": "p.yaml",
        "fresh": False,
        "metric": "length:lower",
        "options": session.options,  # the session's options, read once from its kernel's environment
    }


def test_session_keeps_findings_and_saves_them_with_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    session = rn.Session(
        "agents", "builtin:reference", "builtin:regressed", "smoke", workbench=FakeWorkbench()
    )
    header = capsys.readouterr().out
    assert "builtin:regressed" in header and "smoke" in header
    first = session.add(rn.Section.of(cleared()))
    second = session.add([suspect()])
    assert isinstance(second, rn.Section)
    assert [f.notebook for f in session.findings] == ["01_agents", "01_agents"]
    session.add(first)  # adding the same section twice does not duplicate its findings
    assert len(session.findings) == 2

    table = session.finish()
    assert isinstance(table, pd.DataFrame)
    assert table["status"].tolist() == ["SUSPECT", "CLEARED"]
    assert "shown above" in table._repr_html_()
    assert "<table" in table.head()._repr_html_()  # anything derived displays as a normal DataFrame

    path = tmp_path / "reports" / "findings" / "01_agents.json"
    assert session.findings_path == path
    findings, meta = load_findings(path)
    assert [f.id for f in findings] == ["agents/activation", "agents/hidden-sizes"]
    assert meta["subjects"] == {"baseline": "ref (label)", "candidate": "reg (label)"}
    assert meta["fingerprints"] == {"baseline": "aaaa1111", "candidate": "bbbb2222"}
    assert meta["profile"] == "smoke"
    assert meta["parameters"]["baseline"] == "builtin:reference"
    assert {"python", "torch", "gymnasium", "rlaudit"} <= set(meta["versions"])
    assert meta["duration_seconds"] >= 0
    assert [s["findings"] for s in meta["sections"]] == [1, 1, 0]
    assert meta["counts"]["SUSPECT"] == 1


def test_session_findings_dir_and_profile_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLAUDIT_PROFILE", "thorough")
    session = rn.Session("optimizer", "a", "b", "smoke", findings_dir=str(tmp_path / "f"), quiet=True)
    assert session.profile.name == "thorough"
    session.finish()
    saved = json.loads((tmp_path / "f" / "07_optimizer.json").read_text())
    assert saved["findings"] == [] and saved["meta"]["profile"] == "thorough"
    assert saved["meta"]["fingerprints"] == {}  # no workbench was ever needed


def test_session_rejects_unknown_subsystems() -> None:
    with pytest.raises(ValueError, match="agents, trainer"):
        rn.Session("optimiser", "a", "b", quiet=True)


def test_findings_table_is_sorted_and_flat() -> None:
    table = display.findings_table([cleared(), suspect()])
    assert table["id"].tolist() == ["agents/activation", "agents/hidden-sizes"]
    row = table.iloc[0]
    assert row["mark"] == "?" and row["baseline"] == "tanh" and row["p"] == 0.003
    assert (row["ci_low"], row["ci_high"]) == (0.1, 0.8)
    assert np.isnan(table.iloc[1]["effect"])


def test_format_value() -> None:
    assert display.format_value(None) == "—"
    assert display.format_value(0.000457123) == "0.000457"  # three significant digits, as every number
    assert display.format_value([128, 128]) == "128, 128"  # no Python reprs: no brackets, no braces
    assert display.format_value(np.array([1.5, 2.0])) == "1.5, 2"
    assert display.format_value({"lr": 3e-4}) == "lr: 0.0003"
    assert display.format_value("x" * 100, max_chars=10) == "xxxxxxxxx…"


# --------------------------------------------------------------------------------------------------------
# Interactive or static
# --------------------------------------------------------------------------------------------------------


@pytest.fixture
def fake_kernel(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Pretend to be an IPython kernel (a shell with a ``kernel``)."""
    pytest.importorskip("ipywidgets")  # imported for real before IPython is replaced by the fake
    shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setenv("JPY_PARENT_PID", "4242")
    monkeypatch.setattr(display, "_FORCED_INTERACTIVE", [None])  # whatever a session in this process forced
    return monkeypatch


def test_interactive_is_false_outside_a_kernel() -> None:
    assert display.interactive() is False


@pytest.mark.parametrize(
    ("launcher", "session_name", "expected"),
    [
        ("/usr/bin/python -m papermill 01_agents.ipynb out.ipynb", "", False),
        ("/usr/bin/python -m pytest --nbval-lax notebooks", "", False),
        ("/usr/bin/python /usr/bin/jupyter-lab --no-browser", "", True),
        ("/usr/bin/python -m something_else", "notebooks/01_agents.ipynb", True),
        ("/usr/bin/python -m something_else", "", False),  # in doubt: static
        ("/usr/bin/python -m papermill x.ipynb", "notebooks/01_agents.ipynb", False),  # papermill wins
        # a server whose notebook folder lies under a pytest temp directory is still JupyterLab
        ("/usr/bin/python /usr/bin/jupyter-lab /tmp/pytest-of-root/p-1/home/notebooks", "nb.ipynb", True),
        ("/usr/bin/python /usr/bin/pytest tests", "", False),
    ],
)
def test_interactive_needs_a_frontend_and_no_batch_runner(
    fake_kernel: pytest.MonkeyPatch, launcher: str, session_name: str, expected: bool
) -> None:
    fake_kernel.setattr(display, "_cmdline", lambda pid: launcher)
    if session_name:
        fake_kernel.setenv("JPY_SESSION_NAME", session_name)
    assert display.interactive() is expected


def test_interactive_can_be_forced(fake_kernel: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake_kernel.setattr(display, "_cmdline", lambda pid: "jupyter-lab")
    assert display.interactive() is True
    fake_kernel.setenv("RLAUDIT_INTERACTIVE", "0")  # as `rlaudit report` starts its kernels
    assert display.interactive() is True  # the variable alone changes nothing: the session reads it
    rn.Session("optimizer", "a", "b", "smoke", findings_dir=str(tmp_path), quiet=True)
    assert display.interactive() is False


def test_ema_smooth_by_hand() -> None:
    np.testing.assert_allclose(curves.ema_smooth([1.0, 1.0, 1.0], 0.5), [1.0, 1.0, 1.0])
    # [0, 2] with weight 0.5: 0, then (0.5 * 0 + 0.5 * 2) / (1 - 0.25) = 4/3 (bias-corrected).
    np.testing.assert_allclose(curves.ema_smooth([0.0, 2.0], 0.5), [0.0, 4 / 3])
    np.testing.assert_allclose(curves.ema_smooth([3.0, 5.0], 0.0), [3.0, 5.0])
    out = curves.ema_smooth([1.0, np.nan, 1.0], 0.9)
    assert np.isnan(out[1]) and out[2] == pytest.approx(1.0)


def _curves() -> pd.DataFrame:
    rows = []
    for name in ("charts/episodic_return", "losses/value_loss"):
        for side in ("baseline", "candidate"):
            for seed in (0, 1):
                for step in range(0, 50, 10):
                    rows.append(
                        {"name": name, "side": side, "seed": seed, "step": step, "value": step * (seed + 1)}
                    )
    return pd.DataFrame(rows)


def test_explore_curves_is_a_static_figure_without_a_frontend() -> None:
    fig = curves.explore_curves(_curves(), smooth=0.6)
    from matplotlib.figure import Figure

    assert isinstance(fig, Figure)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert titles == ["charts/episodic_return", "losses/value_loss"]
    assert display.figure_png(fig)[:4] == b"\x89PNG"
    with pytest.raises(KeyError, match="columns"):
        curves.explore_curves(_curves(), y="missing")


def test_explore_curves_offers_widgets_when_interactive(monkeypatch: pytest.MonkeyPatch) -> None:
    ipywidgets = pytest.importorskip("ipywidgets")
    monkeypatch.setattr(curves, "interactive", lambda: True)
    pytest.importorskip("ipympl")
    box = curves.explore_curves(_curves())
    assert isinstance(box, ipywidgets.VBox)
    controls = box.children[1].children
    assert [c.description for c in controls] == ["metric", "steps", "show", "smoothing", "log y"]
    explorer = curves.curves_explorer_of(_curves())
    explorer.set(metric="losses/value_loss", show="each run", smooth=0.0)
    lines = [line for line in explorer._artists["runs"]["candidate"] if line.get_visible()]
    assert sorted(float(line.get_ydata()[-1]) for line in lines) == [40.0, 80.0]  # seeds 0 and 1 at step 40


def test_a_section_without_a_table_shows_why_instead_of_raising() -> None:
    skipped = Finding.skipped("curriculum/scaling", "curriculum", "h", {"candidate": ["make_curriculum"]})
    section = rn.Section("Scaling", findings=[skipped])
    shown = section.table("cost exponents")
    assert "no table “cost exponents”" in repr(shown) and "`make_curriculum`" in repr(shown)
    assert "SKIPPED" in shown._repr_html_()
    full = rn.Section("Scaling", tables={"cost exponents": [1, 2]})
    assert full.table("cost exponents") == [1, 2]
