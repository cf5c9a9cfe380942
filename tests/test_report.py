"""rlaudit.report: the report runs notebooks with papermill, survives a failing one, and writes index.html."""

from __future__ import annotations

import json
import os
import re
import sys
import types
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from rlaudit.cli import AuditArgs, ReportArgs
from rlaudit.findings import Evidence, Finding, Status, load_findings, save_findings
from rlaudit.options import REPORT_KERNELS, RunOptions
from rlaudit.report import commands, costs, execution, index, overview, pages
from support.reports import ROOT

# Pictographs, dingbats, arrows-as-emoji and the emoji presentation selector: code points that need an emoji
# font (Debian's Chromium without one draws them as empty boxes).
EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u23e9-\u23fa\ufe0f]")

PARAMETERS = """baseline: str = "builtin:reference"  # spec of the setup that trained well
candidate: str = "builtin:regressed"  # spec of the setup that got worse
profile: str = "standard"  # smoke | standard | thorough
pair_file: str = ""  # optional YAML declaring both subjects
fresh: bool = False  # ignore cached artifacts
findings_dir: str = ""  # where the findings JSON goes"""

SESSION = """import rlaudit.notebook as rn
from rlaudit.findings import Evidence, Finding
session = rn.Session("{subsystem}", baseline, candidate, profile, pair_file=pair_file, fresh=fresh,
                     findings_dir=findings_dir)"""


def _notebook(*cells: str | tuple[str, str]) -> nbformat.NotebookNode:
    built = [
        new_markdown_cell("# a test notebook"),
        new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}),
    ]
    for cell in cells:
        built.append(new_markdown_cell(cell[1]) if isinstance(cell, tuple) else new_code_cell(cell))
    return new_notebook(
        cells=built,
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )


AGENTS_CELLS = (
    SESSION.format(subsystem="agents"),
    ("md", "## Hidden sizes"),
    'session.add(Finding(id="agents/hidden-sizes", subsystem="agents", hypothesis="The hidden sizes match",'
    ' status="CLEARED", evidence=Evidence(baseline=[128, 128], candidate=[128, 128],'
    ' summary="hidden sizes match (128, 128)")))',
    'session.add(Finding(id="agents/activation", subsystem="agents", hypothesis="Same activation",'
    ' status="SUSPECT", severity="HIGH", evidence=Evidence(baseline="tanh", candidate="relu",'
    ' summary="activation changed from tanh to relu"), remediation="Restore tanh"))',
    "session.finish()",
)
TRAINER_CELLS = (
    SESSION.format(subsystem="trainer"),
    'raise RuntimeError("trainer probe exploded")',
    "session.finish()",
)


def _report(args: ReportArgs) -> int:
    """``rlaudit report`` as the CLI runs it: options built once from the arguments and the environment."""
    return commands.run_report(args, RunOptions.from_cli(args))


def _audit(args: AuditArgs) -> int:
    """``rlaudit audit`` as the CLI runs it."""
    return commands.run_audit(args, RunOptions.from_cli(args))


def _args(out: Path, **changes: object) -> ReportArgs | AuditArgs:
    """Typed arguments of ``rlaudit report`` (of ``rlaudit audit`` when ``json_out`` is given)."""
    if "json_out" in changes:
        return AuditArgs(profile="smoke", **changes)  # type: ignore[arg-type]
    return ReportArgs(profile="smoke", out=str(out), **changes)  # type: ignore[arg-type]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project home with its own notebooks/ and reports/, so nothing is written into the checkout."""
    monkeypatch.setenv("RLAUDIT_HOME", str(tmp_path))
    monkeypatch.setenv("RLAUDIT_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setenv("RLAUDIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RLAUDIT_PROFILE", raising=False)
    (tmp_path / "notebooks").mkdir()
    return tmp_path


@pytest.mark.parametrize("kernels", ["shared", "fresh"])
def test_report_survives_a_failing_notebook_and_marks_it_error(
    home: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, kernels: str
) -> None:
    monkeypatch.setenv(REPORT_KERNELS, kernels)
    nbformat.write(_notebook(*AGENTS_CELLS), home / "notebooks" / "01_agents.ipynb")
    nbformat.write(_notebook(*TRAINER_CELLS), home / "notebooks" / "02_trainer.ipynb")
    out = home / "reports"
    # A stale findings file from an earlier run must not stand in for the failing notebook's verdict.
    save_findings(out / "findings" / "02_trainer.json", [], {"parameters": {}})

    code = _report(_args(out))

    assert code != 0
    index_html = (out / "index.html").read_text()
    for page in ("01_agents", "02_trainer"):
        assert (out / f"{page}.html").exists(), page
        assert f'href="{page}.html"' in index_html
    # The failing notebook is rendered with its error (code hidden), and the index names it as ERROR.
    trainer_page = (out / "02_trainer.html").read_text()
    assert "trainer probe exploded" in trainer_page
    assert "session = rn.Session" not in trainer_page
    trainer_findings, meta = load_findings(out / "findings" / "02_trainer.json")
    assert [f.status for f in trainer_findings] == [Status.ERROR]
    assert "RuntimeError: trainer probe exploded" in trainer_findings[0].evidence.summary
    assert meta["failed"] is True
    assert "trainer/notebook-failed" in index_html
    assert "RuntimeError: trainer probe exploded" in index_html
    # The other notebook's findings and page are all there; its suspect leads the executive summary.
    agents_page = (out / "01_agents.html").read_text()
    assert "hidden sizes match (128, 128)" in agents_page
    summary_part = index_html.split('id="grid"')[0]
    assert "activation changed from tanh to relu" in summary_part
    assert "Restore tanh" in summary_part
    printed = capsys.readouterr().out
    assert "where the time went" in printed and "02_trainer" in printed


def test_summary_runs_last_after_every_other_notebook_finished(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("01_agents", "05_env", "15_summary"):
        nbformat.write(_notebook("pass"), home / "notebooks" / f"{name}.ipynb")
    events: list[tuple[str, str]] = []

    # Stands in for papermill: no kernels in this test.
    def fake_execute(run, parameters, cwd, env, lanes=None):
        events.append(("start", run.name))
        if run.name == "15_summary":
            assert {p.name for p in run.findings_path.parent.glob("*.json")} == {
                "01_agents.json",
                "05_env.json",
            }
            assert env["RLAUDIT_JOBS"] == "3"
        else:
            assert env["RLAUDIT_JOBS"] == "1" and env["RLAUDIT_TORCH_THREADS"] == "1"
        if run.name != "05_env":  # 05_env "forgets" session.finish()
            save_findings(
                run.findings_path, [_finding(run.subsystem, "CLEARED", run.name)], {"parameters": parameters}
            )
        run.returncode, run.seconds = 0, 0.1
        events.append(("end", run.name))
        return run

    monkeypatch.delenv("RLAUDIT_JOBS", raising=False)
    monkeypatch.setattr(commands, "execute", fake_execute)
    code = _report(_args(home / "reports", jobs=3))
    assert code == 3  # 05_env saved no findings (rlaudit.exits.NOTEBOOK_FAILED)
    assert events[-2:] == [("start", "15_summary"), ("end", "15_summary")]
    env_findings, _ = load_findings(home / "reports" / "findings" / "05_env.json")
    assert [f.id for f in env_findings] == ["env/findings-missing"]
    assert "env/findings-missing" in (home / "reports" / "index.html").read_text()
    # A notebook papermill never wrote still gets a page.
    assert "produced no output" in (home / "reports" / "05_env.html").read_text()


def test_every_notebook_gets_the_metric_and_the_summary_its_arms(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("01_agents", "07_optimizer", "15_summary"):
        nbformat.write(_notebook("pass"), home / "notebooks" / f"{name}.ipynb")
    given: dict[str, dict] = {}

    def fake_execute(run, parameters, cwd, env, lanes=None):
        given[run.name] = dict(parameters)
        save_findings(
            run.findings_path, [_finding(run.subsystem, "CLEARED", run.name)], {"parameters": parameters}
        )
        run.returncode = 0
        return run

    monkeypatch.setattr(commands, "execute", fake_execute)
    out = home / "reports"
    args = _args(out, metric="heart.get:lower", variants="fix=builtin:reference", changes="off")
    assert _report(args) == 0
    assert {name: p["metric"] for name, p in given.items()} == dict.fromkeys(given, "heart.get:lower")
    assert "variants" not in given["01_agents"] and "changes" not in given["07_optimizer"]
    assert (
        given["15_summary"]["variants"] == "fix=builtin:reference" and given["15_summary"]["changes"] == "off"
    )
    # The index's reproducing command line carries them too.
    footer = (out / "index.html").read_text().split("<footer>")[1]
    assert "--metric heart.get:lower --variants fix=builtin:reference --changes off --profile smoke" in footer


RECORD = """import json, os
from pathlib import Path
record = {{"pid": os.getpid(), "jobs": os.environ.get("RLAUDIT_JOBS"), "leftover": "leftover" in globals(),
          "metric": globals().get("metric"), "variants": globals().get("variants")}}
Path(findings_dir).parent.joinpath("{name}.record.json").write_text(json.dumps(record))"""


def test_lanes_share_a_kernel_reset_between_notebooks_and_replace_a_dead_one(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cells = {
        "02_trainer": [RECORD.format(name="02_trainer"), "leftover = 1"],
        "04_checkpointing": [RECORD.format(name="04_checkpointing")],
        "01_agents": [RECORD.format(name="01_agents"), "os._exit(3)  # the kernel dies"],
        "03_logging": [RECORD.format(name="03_logging")],
        "15_summary": [RECORD.format(name="15_summary")],
    }
    for name, body in cells.items():
        sub = overview.subsystem_of(name)
        ran = (
            f'session.add(Finding(id="{sub}/ran", subsystem="{sub}", hypothesis="It runs", status="CLEARED", '
            'evidence=Evidence(summary="ran")))'
        )
        nb = _notebook(
            SESSION.format(subsystem=sub), *body, *([ran] if sub != "summary" else []), "session.finish()"
        )
        nbformat.write(nb, home / "notebooks" / f"{name}.ipynb")
    monkeypatch.delenv("RLAUDIT_JOBS", raising=False)
    monkeypatch.delenv(REPORT_KERNELS, raising=False)
    out = home / "reports"
    assert _report(_args(out, jobs=1, metric="heart.get", variants="fix=builtin:reference")) == 3
    rec = {name: json.loads((out / f"{name}.record.json").read_text()) for name in cells}
    # One lane: the notebooks ran in the order of their expected costs, in one kernel until it died.
    assert rec["02_trainer"]["pid"] == rec["04_checkpointing"]["pid"] == rec["01_agents"]["pid"]
    assert not rec["04_checkpointing"]["leftover"]  # the namespace was reset in between
    assert rec["03_logging"]["pid"] == rec["15_summary"]["pid"] != rec["01_agents"]["pid"]  # a new kernel
    # The summary's environment (all -j for its own probes) was applied in the shared kernel, and undone.
    assert rec["15_summary"]["jobs"] == "1" and rec["03_logging"]["jobs"] is None
    # Every notebook got the metric through its lane; only the summary got the variant arms.
    assert {name: r["metric"] for name, r in rec.items()} == dict.fromkeys(rec, "heart.get")
    assert rec["15_summary"]["variants"] == "fix=builtin:reference" and rec["03_logging"]["variants"] is None
    agents, _ = load_findings(out / "findings" / "01_agents.json")
    assert [f.id for f in agents][-1] == "agents/notebook-failed"
    for name in ("02_trainer", "04_checkpointing", "03_logging"):
        assert load_findings(out / "findings" / f"{name}.json")[0][0].status is Status.CLEARED, name


def test_schedule_starts_the_longest_first_and_learns_costs(tmp_path: Path) -> None:
    runs = [_run(tmp_path, name, 0) for name in ("01_a", "02_b", "03_c")]
    names = lambda hints: [r.name for r in costs.schedule(runs, hints)]  # noqa: E731
    assert names({"01_a": 1.0, "02_b": 5.0, "03_c": 2.0}) == ["02_b", "03_c", "01_a"]
    assert names({"01_a": 1.0, "02_b": 5.0}) == ["02_b", "03_c", "01_a"]  # unknown counts as the longest
    assert costs.expected_costs(tmp_path, "smoke") == costs.COST_HINTS
    runs[0].cpu_seconds, runs[1].cpu_seconds = 9.0, 0.5
    costs.save_costs(tmp_path, "smoke", runs[:2])
    learned = costs.expected_costs(tmp_path, "smoke")
    assert learned["01_a"] == 9.0 and learned["02_b"] == 0.5 and "03_c" not in learned
    assert costs.expected_costs(tmp_path, "standard") == costs.COST_HINTS  # per profile


def _run(tmp_path: Path, name: str, returncode: int) -> execution.NotebookRun:
    return execution.NotebookRun(
        name=name,
        source=tmp_path / f"{name}.ipynb",
        output=tmp_path / "out" / f"{name}.ipynb",
        html=tmp_path / f"{name}.html",
        log=tmp_path / "logs" / f"{name}.log",
        findings_path=tmp_path / "findings" / f"{name}.json",
        returncode=returncode,
        seconds=1.5,
    )


def test_settle_turns_missing_findings_into_an_error(tmp_path: Path) -> None:
    run = execution.settle(_run(tmp_path, "05_env", 0), {"baseline": "a", "candidate": "b"})
    assert run.outcome == "no findings"
    findings, meta = load_findings(run.findings_path)
    assert [(f.id, f.status) for f in findings] == [("env/findings-missing", Status.ERROR)]
    assert meta["parameters"] == {"baseline": "a", "candidate": "b"}


def test_settle_keeps_a_successful_notebooks_findings(tmp_path: Path) -> None:
    run = _run(tmp_path, "05_env", 0)
    cleared = Finding(id="env/x", subsystem="env", hypothesis="h", status="CLEARED", notebook="05_env")
    save_findings(run.findings_path, [cleared], {})
    execution.settle(run, {})
    assert run.outcome == "ok"
    assert [f.id for f in run.findings] == ["env/x"]


def test_settle_names_the_failed_cell_from_the_executed_notebook(tmp_path: Path) -> None:
    run = _run(tmp_path, "07_optimizer", 1)
    nb = new_notebook(cells=[new_code_cell("x = 1"), new_code_cell("1 / 0")])
    nb.cells[1].outputs = [
        nbformat.v4.new_output(
            "error",
            ename="ZeroDivisionError",
            evalue="division by zero",
            traceback=["\x1b[31mTraceback\x1b[0m"],
        )
    ]
    run.output.parent.mkdir(parents=True)
    nbformat.write(nb, run.output)
    execution.settle(run, {})
    assert run.outcome == "failed"
    assert run.error == "code cell 2: ZeroDivisionError: division by zero"
    (finding,) = run.findings
    assert finding.id == "optimizer/notebook-failed"
    assert finding.evidence.details["traceback"] == "Traceback"  # ANSI colours stripped


def test_a_failed_notebook_renders_with_its_error_and_an_error_badge(tmp_path: Path) -> None:
    run = _run(tmp_path, "07_optimizer", 1)
    nb = _notebook('raise ValueError("the optimizer probe exploded")')
    nb.cells[-1].outputs = [
        nbformat.v4.new_output(
            "error", ename="ValueError", evalue="the optimizer probe exploded", traceback=["ValueError: ..."]
        )
    ]
    run.output.parent.mkdir(parents=True)
    nbformat.write(nb, run.output)
    pages.render(execution.settle(run, {}))
    page = run.html.read_text()
    assert "the optimizer probe exploded" in page
    assert "raise ValueError" not in page  # code hidden, the error shown
    banner = page.split('class="rl-banner"')[1].split("</div>")[0]
    assert 'class="rl-badge rl-badge-ERROR"' in banner and "code cell 2: ValueError" in banner
    assert not EMOJI.search(page)


def test_discover_notebooks_selects_by_name_number_or_subsystem(tmp_path: Path) -> None:
    for name in ("01_agents", "07_optimizer", "15_summary", "notes"):
        (tmp_path / f"{name}.ipynb").write_text("{}")
    names = lambda subset: [p.stem for p in execution.discover_notebooks(tmp_path, subset)]  # noqa: E731
    assert names("") == ["01_agents", "07_optimizer", "15_summary"]
    assert names("optimizer,15") == ["07_optimizer", "15_summary"]
    assert names("01_agents.ipynb") == ["01_agents"]
    with pytest.raises(ValueError, match="available: 01_agents, 07_optimizer, 15_summary"):
        execution.discover_notebooks(tmp_path, "loss")


def test_papermill_gets_typed_parameters_and_python3_kernel(tmp_path: Path) -> None:
    run = _run(tmp_path, "01_agents", 0)
    params = {"baseline": "123", "fresh": True, "pair_file": ""}
    cmd = execution.papermill_command(run, params, tmp_path)
    assert cmd[cmd.index("--kernel") + 1] == "python3"
    assert json.loads(cmd[cmd.index("--parameters_yaml") + 1]) == params  # "123" stays a string


def test_notebook_environment_pins_threads_only_in_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLAUDIT_TORCH_THREADS", "3")  # an execution setting of this process is not inherited
    assert "RLAUDIT_TORCH_THREADS" not in execution.notebook_environment(RunOptions(), 1)
    env = execution.notebook_environment(RunOptions(jobs=1, fresh_since=12.5), 2)
    assert env["RLAUDIT_TORCH_THREADS"] == "1"
    assert env["RLAUDIT_JOBS"] == "1"
    assert env["RLAUDIT_FRESH_SINCE"] == "12.5"
    assert env["RLAUDIT_INTERACTIVE"] == "0"


def _finding(subsystem: str, status: str, notebook: str, **kw: object) -> Finding:
    return Finding(id=f"{subsystem}/{status.lower()}", subsystem=subsystem, hypothesis="h", status=status,
                   notebook=notebook, **kw)  # fmt: skip


def test_status_grid_takes_the_worst_status_per_subsystem() -> None:
    grid = overview.status_grid(
        [
            _finding("agents", "CLEARED", "01_agents"),
            _finding("agents", "SUSPECT", "01_agents"),
            _finding("env", "CLEARED", "05_env"),
        ]
    )
    assert grid.loc["agents", "worst"] == "SUSPECT"
    assert grid.loc["agents", "CLEARED"] == 1 and grid.loc["agents", "SUSPECT"] == 1
    assert grid.loc["env", "worst"] == "CLEARED"
    assert grid.loc["loss", "worst"] == overview.NOT_RUN
    assert list(grid.index[:2]) == ["agents", "trainer"] and len(grid) == 14


def test_status_grid_figure_keeps_every_label_inside_the_figure() -> None:
    grid = overview.status_grid([_finding("checkpointing", "SUSPECT", "04_checkpointing")])
    fig = overview.plot_status_grid(grid)  # the longest row label: "04_checkpointing  (SUSPECT)"
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    (ax,) = fig.axes
    labels = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.title]
    assert any("04_checkpointing  (SUSPECT)" == t.get_text() for t in labels)
    box = fig.bbox
    for text in labels:
        extent = text.get_window_extent(renderer)
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and box.y0 <= extent.y0 and extent.y1 <= box.y1, (
            text.get_text(),
            extent,
            box,
        )


def test_collect_findings_leaves_out_other_pairs_and_the_summary(tmp_path: Path) -> None:
    ours = {"parameters": {"baseline": "a", "candidate": "b", "pair_file": ""}}
    theirs = {"parameters": {"baseline": "x", "candidate": "y", "pair_file": ""}}
    save_findings(tmp_path / "01_agents.json", [_finding("agents", "CLEARED", "01_agents")], ours)
    save_findings(tmp_path / "05_env.json", [_finding("env", "CONFIRMED", "05_env")], theirs)
    save_findings(tmp_path / "15_summary.json", [], ours)
    (tmp_path / "attribution.json").write_text(json.dumps({"causes": [{"cause": "lr", "fraction": 0.8}]}))
    found = overview.collect_findings(
        tmp_path, parameters={"baseline": "a", "candidate": "b", "pair_file": ""}
    )
    assert list(found.metas) == ["01_agents"]
    assert [f.subsystem for f in found.findings] == ["agents"]
    assert "05_env.json" in found.skipped
    assert found.attribution == {"causes": [{"cause": "lr", "fraction": 0.8}]}
    assert "<td>lr</td><td>0.8</td>" in index.attribution_html(found.attribution)


def test_write_index_puts_flagged_findings_first_and_renders_attribution(tmp_path: Path) -> None:
    findings_dir = tmp_path / "findings"
    params = {"baseline": "a", "candidate": "b", "pair_file": "", "profile": "smoke"}
    cleared = _finding("agents", "CLEARED", "01_agents", evidence=Evidence(summary="same layers"))
    confirmed = _finding(
        "optimizer", "CONFIRMED", "07_optimizer", severity="CRITICAL",
        evidence=Evidence(baseline=3e-4, candidate=3e-4, effect=0.4, effect_label="ratio", ci=(0.3, 0.5),
                          ci_level=0.95, summary="learning rate never decays"),
        remediation="Restore the schedule",
    )  # fmt: skip
    save_findings(findings_dir / "01_agents.json", [cleared], {"parameters": params})
    save_findings(findings_dir / "07_optimizer.json", [confirmed], {"parameters": params})
    (findings_dir / "attribution.json").write_text(
        json.dumps({"summary": "the schedule explains 80% of the gap"})
    )
    (tmp_path / "07_optimizer.html").write_text("<html></html>")
    found = overview.collect_findings(findings_dir, exclude=(), parameters=params)
    index_html = index.write_index(
        tmp_path, found, [], {"parameters": params, "wall_seconds": 3.0}
    ).read_text()
    summary, _ = index_html.split('id="grid"')
    assert "learning rate never decays" in summary and "Restore the schedule" in summary
    assert "ratio 0.4 [0.3, 0.5] (95% CI)" in summary
    assert 'href="07_optimizer.html#finding-' in summary  # the link lands on the finding's row
    assert "the schedule explains 80% of the gap" in summary
    # Cleared subsystems are listed, each with its badge (an ASCII mark on the verdict's colour, no emoji).
    assert (
        '<span class="rl-badge rl-badge-CLEARED" role="img" aria-label="CLEARED" title="CLEARED">=</span> agents'
        in summary
    )
    assert not EMOJI.search(index_html), EMOJI.findall(index_html)
    assert "1 confirmed finding in optimizer; 1 of 14 subsystems cleared" in summary
    assert "<script" not in index_html  # self-contained: no scripts, CSS inline


# --------------------------------------------------------------------------------------------------------
# rlaudit.rooms and `rlaudit audit`
# --------------------------------------------------------------------------------------------------------


class _Workbench:
    def __init__(self) -> None:
        self.labels = {"baseline": "a", "candidate": "b"}
        self.fingerprints = {"baseline": "f1", "candidate": "f2"}


def _room(monkeypatch: pytest.MonkeyPatch, name: str, audit_all: object) -> str:
    module = types.ModuleType(name)
    module.audit_all = audit_all  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, module)
    return f"{name}:audit_all"


def test_run_audits_turns_missing_and_broken_rooms_into_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlaudit import rooms as audits
    from rlaudit.notebook import Section

    def good(wb: object) -> list[Section]:
        return [Section.of(_finding("agents", "CLEARED", ""))]

    def bad(wb: object) -> list[Section]:
        raise RuntimeError("room exploded")

    monkeypatch.setitem(audits.AUDITS, "agents", _room(monkeypatch, "fake_agents_room", good))
    monkeypatch.setitem(audits.AUDITS, "trainer", _room(monkeypatch, "fake_trainer_room", bad))
    monkeypatch.setitem(audits.AUDITS, "memory", "rlaudit.no_such_room:audit_all")
    lines: list[str] = []
    found = audits.run_audits(_Workbench(), ["agents", "trainer", "memory"], progress=lines.append)
    by_subsystem = {f.subsystem: f for f in found}
    assert by_subsystem["agents"].status is Status.CLEARED
    assert by_subsystem["agents"].notebook == "01_agents"
    assert by_subsystem["trainer"].status is Status.ERROR
    assert "room exploded" in by_subsystem["trainer"].evidence.summary
    assert by_subsystem["memory"].status is Status.ERROR
    assert by_subsystem["memory"].evidence.summary == (
        "audit not available: module rlaudit.no_such_room has no audit_all"
    )
    assert len(lines) == 3
    with pytest.raises(ValueError, match="unknown subsystem"):
        audits.run_audits(_Workbench(), ["optimiser"])


def test_every_subsystem_is_registered() -> None:
    from rlaudit import rooms as audits
    from rlaudit.findings import SUBSYSTEMS

    assert audits.AUDITS == {s: f"rlaudit.{s}:audit_all" for s in SUBSYSTEMS}


def test_run_audit_writes_json_and_exits_4_on_error_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import rlaudit.engine.workbench
    from rlaudit import rooms as audits

    monkeypatch.setattr(rlaudit.engine.workbench, "Workbench", lambda *args, **kwargs: _Workbench())
    monkeypatch.setitem(
        audits.AUDITS,
        "agents",
        _room(monkeypatch, "fake_agents_room2", lambda wb: [_finding("agents", "SUSPECT", "")]),
    )
    monkeypatch.setitem(audits.AUDITS, "trainer", "rlaudit.no_such_room:audit_all")
    out = tmp_path / "audit.json"
    args = _args(tmp_path, subsystems="agents,trainer", json_out=str(out))
    assert _audit(args) == 4  # the trainer room is an ERROR finding
    findings, meta = load_findings(out)
    assert [f.status for f in findings] == [Status.SUSPECT, Status.ERROR]
    assert meta["fingerprints"] == {"baseline": "f1", "candidate": "f2"}
    assert "SUSPECT" in capsys.readouterr().out

    assert _audit(_args(tmp_path, subsystems="trainer", json_out=str(out))) == 4
    assert _audit(_args(tmp_path, subsystems="agents", json_out=str(out))) == 0
    with pytest.raises(ValueError, match="unknown optimiser"):
        _audit(_args(tmp_path, subsystems="optimiser", json_out=str(out)))


def test_a_pair_file_names_the_subjects_of_the_report(tmp_path: Path) -> None:
    from rlaudit.options import RunOptions
    from rlaudit.report.commands import _parameters

    (tmp_path / "a.py").write_text("def config():\n    return {}\n")
    (tmp_path / "pair.yaml").write_text(
        "baseline: {spec: a.py, label: old trainer}\ncandidate: {spec: a.py, label: new trainer}\n"
    )
    args = ReportArgs(pair=str(tmp_path / "pair.yaml"))
    parameters = _parameters(args, RunOptions())
    assert (parameters["baseline"], parameters["candidate"]) == ("old trainer", "new trainer")
    assert parameters["pair_file"] == str(tmp_path / "pair.yaml")


# ------------------------------------------------------------------------------------------------------------
# Exit codes a CI job can act on (rlaudit.exits)
# ------------------------------------------------------------------------------------------------------------


def _fake_report(home: Path, monkeypatch: pytest.MonkeyPatch, statuses: dict[str, list[str]]) -> None:
    """Notebooks that "run" without a kernel and save findings with ``statuses``; a notebook mapped to
    ``["FAILS"]`` exits non-zero without saving any (papermill's failed execution)."""
    for name in statuses:
        nbformat.write(_notebook("pass"), home / "notebooks" / f"{name}.ipynb")

    def fake_execute(run, parameters, cwd, env, lanes=None):
        if statuses[run.name] == ["FAILS"]:
            run.returncode, run.error = 1, "PapermillExecutionError"
            return run
        findings = [
            Finding(id=f"{run.subsystem}/check-{i}", subsystem=run.subsystem, hypothesis="h", status=status)
            for i, status in enumerate(statuses[run.name])
        ]
        save_findings(run.findings_path, findings, {"parameters": parameters})
        run.returncode = 0
        return run

    monkeypatch.setattr(commands, "execute", fake_execute)


@pytest.mark.parametrize(
    ("statuses", "fail_on", "code"),
    [
        ({"01_agents": ["CLEARED"], "05_env": ["NOTED"]}, "error", 0),
        ({"01_agents": ["CLEARED"], "05_env": ["FAILS"]}, "error", 3),
        ({"01_agents": ["ERROR"], "05_env": ["FAILS"]}, "suspect", 3),  # a failed run outranks the rest
        ({"01_agents": ["ERROR", "ERROR"], "05_env": ["CLEARED"]}, "error", 4),  # never trained: not 0
        ({"01_agents": ["ERROR"], "05_env": ["CONFIRMED"]}, "confirmed", 4),
        ({"01_agents": ["ERROR"], "05_env": ["CLEARED"]}, "none", 0),
        ({"01_agents": ["SUSPECT"], "05_env": ["CONFIRMED"]}, "error", 0),
        ({"01_agents": ["SUSPECT"], "05_env": ["CONFIRMED"]}, "confirmed", 5),
        ({"01_agents": ["SUSPECT"], "05_env": ["CONFIRMED"]}, "suspect", 5),
        ({"01_agents": ["SUSPECT"], "05_env": ["CLEARED"]}, "confirmed", 0),
        ({"01_agents": ["SUSPECT"], "05_env": ["CLEARED"]}, "suspect", 6),
    ],
)
def test_report_exit_codes_tell_a_ci_job_what_happened(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    statuses: dict[str, list[str]],
    fail_on: str,
    code: int,
) -> None:
    _fake_report(home, monkeypatch, statuses)
    assert _report(_args(home / "reports", jobs=1, fail_on=fail_on)) == code
    printed = capsys.readouterr().out
    assert (f"exit {code}:" in printed) == (code != 0)


def test_report_exit_codes_read_only_this_run_and_count_the_summarys_decided_causes(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = home / "reports"
    # a CONFIRMED finding left from an earlier run of another notebook does not fail this run
    stale = [Finding(id="loss/old", subsystem="loss", hypothesis="h", status="CONFIRMED")]
    save_findings(out / "findings" / "06_loss.json", stale, {"parameters": {}})
    _fake_report(home, monkeypatch, {"01_agents": ["CLEARED"]})
    assert _report(_args(out, jobs=1, fail_on="confirmed", notebooks="01_agents")) == 0
    # the summary's own finding for a decided cause is a confirmed regression
    _fake_report(home, monkeypatch, {"01_agents": ["NOTED"], "15_summary": ["CONFIRMED"]})
    assert _report(_args(out, jobs=1, fail_on="confirmed")) == 5


def test_audit_exit_codes_follow_fail_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rlaudit.engine.workbench
    from rlaudit import rooms as audits

    monkeypatch.setattr(rlaudit.engine.workbench, "Workbench", lambda *args, **kwargs: _Workbench())
    monkeypatch.setitem(
        audits.AUDITS,
        "agents",
        _room(monkeypatch, "fake_agents_room3", lambda wb: [_finding("agents", "SUSPECT", "")]),
    )
    monkeypatch.setitem(
        audits.AUDITS,
        "env",
        _room(monkeypatch, "fake_env_room3", lambda wb: [_finding("env", "CONFIRMED", "")]),
    )
    out = str(tmp_path / "audit.json")
    codes = {
        level: _audit(_args(tmp_path, subsystems="agents", json_out=out, fail_on=level))
        for level in ("none", "error", "confirmed", "suspect")
    }
    assert codes == {"none": 0, "error": 0, "confirmed": 0, "suspect": 6}
    both = _args(tmp_path, subsystems="agents,env", json_out=out, fail_on="confirmed")
    assert _audit(both) == 5


# --------------------------------------------------------------------------------------------------------
# Reading right: numbers, tables and the index for people
# --------------------------------------------------------------------------------------------------------


def test_numbers_read_like_a_person_wrote_them() -> None:
    from rlaudit.display import format_number, format_value

    assert format_number(21_800.0) == "21.8k" and format_number(2.683e4) == "26.8k"
    assert format_number(7134.0) == "7134" and format_number(7134.0, kilo_from=1000) == "7.13k"
    assert format_number(0.0546) == "0.0546" and format_number(1_250_000) == "1.25M"
    assert format_number(float("nan")) == "—"
    assert format_value(True) == "yes" and format_value(None) == "—"
    assert format_value([128, 128]) == "128, 128" and format_value({"lr": 3e-4, "sizes": [64, 64]}) == (
        "lr: 0.0003; sizes: (64, 64)"
    )
    assert format_value(Path("/home/someone/reports/findings/attribution.json")) == "attribution.json"


def test_a_table_has_no_row_numbers_reprs_or_machine_numbers() -> None:
    import pandas as pd

    from rlaudit.display import frame_html

    frame = pd.DataFrame(
        {
            "side": ["baseline", "candidate"],
            "steps per CPU-second": [7134.0, 26_830.0],
            "share of the gap restored": [0.1923, 1.05],
            "single": [True, False],
            "suspects": [["fix a", "fix b"], []],
            "overrides": [{"lr": 0.001}, None],
            "file": [Path("/tmp/x/attribution.json"), Path("/tmp/x/b.json")],
            "verdict": ["CONFIRMED", "undecided"],
            "remediation": ["use `values[t + 1]` " + "and say why at length " * 8, ""],
        }
    )
    page = frame_html(frame)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page)
    assert "<th></th>" not in page and ">0<" not in page and ">1<" not in page  # no row index
    assert "7.13k" in cells and "26.8k" in cells  # one style per column, never 2.683e+04
    assert "19%" in cells and "105%" in cells  # shares as percentages
    assert "yes" in cells and "no" in cells and "fix a, fix b" in cells and "lr: 0.001" in cells
    assert "attribution.json" in cells and "/tmp/x" not in page and "PosixPath" not in page
    for repr_ in ("True", "False", "None", "[", "{", "e+0"):
        assert not any(repr_ in c for c in cells if "<" not in c), (repr_, cells)
    assert 'class="rl-badge rl-badge-CONFIRMED"' in page and 'class="rl-cause rl-cause-undecided"' in page
    assert (
        "<code>values[t + 1]</code>" in page and ("and say why at length " * 8).strip() in page
    )  # whole text


def test_a_shown_sections_table_is_not_printed_twice() -> None:
    import pandas as pd

    from rlaudit.notebook import Section

    section = Section(title="Speed", tables={"runs": pd.DataFrame({"sps": [1.0]})})
    assert section.table("runs")._repr_html_().startswith("<div")  # not shown yet: the table itself
    section.to_html()
    section._shown = True
    again = section.table("runs")
    assert "shown above" in again._repr_html_() and again["sps"].tolist() == [1.0]  # still the data


def test_the_executive_summary_table_shows_the_whole_text_with_badges_and_code() -> None:
    long = "use `values[t + 1]` (next_value at the last step) in delta_t, not values[t], " * 3
    html_ = index.attribution_html(
        {
            "sentences": ["steps per CPU-second: baseline 21.8k, candidate 11.6k. Fix `gae`."],
            "causes": [
                {"rank": 1, "subsystem": "loss", "verdict": "primary", "audit evidence": "! CONFIRMED: x",
                 "remediation": long},
            ],
        }
    )  # fmt: skip
    assert "…" not in html_
    assert html_.count("<code>values[t + 1]</code>") == 3 and "Fix <code>gae</code>" in html_
    assert 'class="rl-cause rl-cause-primary"' in html_ and "rl-badge rl-badge-CONFIRMED" in html_


def test_the_index_lists_each_finding_once_and_says_what_each_view_counts(tmp_path: Path) -> None:
    findings_dir = tmp_path / "findings"
    params = {"baseline": "a", "candidate": "b", "pair_file": "", "profile": "smoke"}
    # the config notebook files a changed checkpoint setting under checkpointing: the checkpointing subsystem
    # is SUSPECT while its own page holds only a note
    changed = _finding("checkpointing", "SUSPECT", "14_config", evidence=Evidence(summary="interval 25 -> 5"))
    changed.id = "config/changed-checkpointing"
    noted = _finding("checkpointing", "NOTED", "04_checkpointing", evidence=Evidence(summary="same keys"))
    cleared = _finding("agents", "CLEARED", "01_agents", evidence=Evidence(summary="same layers"))
    save_findings(findings_dir / "14_config.json", [changed], {"parameters": params})
    save_findings(findings_dir / "04_checkpointing.json", [noted], {"parameters": params})
    save_findings(findings_dir / "01_agents.json", [cleared], {"parameters": params})
    for name in ("14_config", "04_checkpointing", "01_agents"):
        (tmp_path / f"{name}.html").write_text("<html></html>")
    found = overview.collect_findings(findings_dir, exclude=(), parameters=params)
    page = index.write_index(tmp_path, found, [], {"parameters": params}).read_text()
    for f in found.findings:  # every finding once, none lost
        assert page.count(f"{f.id}") >= 1 and page.count('<div class="rl-headline">') == len(found.findings)
    assert page.count("interval 25 -&gt; 5") == 1
    assert 'href="14_config.html#finding-config-changed-checkpointing"' in page
    row = re.search(r"<tr>\s*<td><a href=\"04_checkpointing.html\">.*?</tr>", page, re.DOTALL).group(0)
    assert "SUSPECT" in row and "NOTED" in row  # the subsystem's verdict and its page's, side by side
    assert "Counted by subsystem" in page and "findings on the page (worst)" in page


@pytest.mark.workbench
@pytest.mark.parametrize("deaths", [1, 3])
def test_a_lane_replaces_a_kernel_that_dies_as_it_starts(
    monkeypatch: pytest.MonkeyPatch, deaths: int
) -> None:
    """A kernel can die as it starts: jupyter_client picks free ports, and another kernel starting at the same
    moment may bind one first ("Address already in use"). In a `make test` run the lane then waited 180 s for the
    dead kernel and the notebook failed ("Kernel didn't respond in 180 seconds"). The lane now sees the death at
    once and starts a new kernel, up to three tries, then says why."""
    import time

    import jupyter_client.manager as manager

    from rlaudit.report import lanes

    started: list[object] = []

    class DiesAtFirst(manager.AsyncKernelManager):
        async def start_kernel(self, **kw: object) -> None:
            await super().start_kernel(**kw)
            started.append(self)
            if len(started) <= deaths:
                await self._async_kill_kernel()  # as a kernel whose port another one took

    monkeypatch.setattr(manager, "AsyncKernelManager", DiesAtFirst)
    runner = lanes._LaneRunner()
    began = time.monotonic()
    try:
        if deaths < execution.KERNEL_STARTS:
            km = runner._kernel()
            assert km is started[-1] and len(started) == deaths + 1 and runner._alive()
        else:
            with pytest.raises(
                RuntimeError, match="no kernel started in 3 tries: the kernel died as it started"
            ):
                runner._kernel()
            assert len(started) == execution.KERNEL_STARTS
    finally:
        runner.close()
    assert time.monotonic() - began < lanes.READY_SECONDS  # a dead kernel is not waited for


# Stands in for papermill: fails without running a cell (a kernel that died as it started) until the try named
# by `ok_at`, then writes an executed notebook; with `ok_at` 0 a cell runs and raises.
_FAKE_PAPERMILL = """
import json, sys
from pathlib import Path
output, tries, ok_at = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
n = int(tries.read_text()) + 1 if tries.exists() else 1
tries.write_text(str(n))
cell = {"cell_type": "code", "id": "c1", "metadata": {}, "source": "x = 1", "execution_count": None, "outputs": []}
if ok_at and n < ok_at:
    output.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    print("RuntimeError: Kernel died before replying to kernel_info")
    sys.exit(1)
cell["execution_count"] = 1
if not ok_at:
    cell["outputs"] = [{"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": []}]
output.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
sys.exit(0 if ok_at else 1)
"""


@pytest.mark.workbench  # its stand-in papermill is a process
@pytest.mark.parametrize(("ok_at", "tries", "returncode"), [(3, 3, 0), (4, 3, 1), (0, 1, 1)])
def test_fresh_papermill_starts_again_only_when_no_cell_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ok_at: int, tries: int, returncode: int
) -> None:
    """With fresh kernels (`RLAUDIT_REPORT_KERNELS=fresh`) papermill starts its own kernel, which can die as it
    starts as a lane's can. A failure before any cell ran is tried again with a new kernel, up to three times; a
    notebook whose cell failed is not run twice."""
    script, counter = tmp_path / "fake_papermill.py", tmp_path / "tries"
    script.write_text(_FAKE_PAPERMILL)
    run = _run(tmp_path, "01_agents", -1)
    monkeypatch.setattr(
        execution,
        "papermill_command",
        lambda run, parameters, cwd: [sys.executable, str(script), str(run.output), str(counter), str(ok_at)],
    )
    execution.execute(run, {}, tmp_path, dict(os.environ))
    assert int(counter.read_text()) == tries
    assert run.returncode == returncode
    log = run.log.read_text()
    assert log.count("$ ") == tries
    assert ("try 2 of 3" in log) == (tries > 1)
    assert execution.no_cell_ran(run.output) == (ok_at > 3)


def _dies_first(
    deaths: int, message: str = "Kernel died before replying to kernel_info"
) -> tuple[list[int], object]:
    calls: list[int] = []

    def start(**kwargs: object) -> str:
        calls.append(1)
        if len(calls) <= deaths:
            raise RuntimeError(message)
        return "km, kc"

    return calls, start


@pytest.mark.parametrize(("deaths", "calls_made"), [(0, 1), (2, 3), (3, 3)])
def test_a_kernel_start_is_tried_again_only_when_the_kernel_died(deaths: int, calls_made: int) -> None:
    calls, start = _dies_first(deaths)
    wrapped = execution.retry_kernel_start(start)
    if deaths < execution.KERNEL_STARTS:
        assert wrapped(kernel_name="python3") == "km, kc"
    else:
        with pytest.raises(RuntimeError, match="Kernel died"):
            wrapped(kernel_name="python3")
    assert len(calls) == calls_made
    calls, start = _dies_first(1, "Kernel didn't respond in 60 seconds")  # a slow kernel is not started twice
    with pytest.raises(RuntimeError, match="didn't respond"):
        execution.retry_kernel_start(start)()
    assert len(calls) == 1


def test_nbval_starts_a_new_kernel_when_one_dies_as_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """`notebooks/conftest.py` wraps nbval's kernel start: under `make test` a notebook's kernel died as it
    started (a port another kernel took) and nbval failed the notebook before any cell ran."""
    import importlib.util

    import nbval.kernel

    calls, start = _dies_first(2)
    monkeypatch.setattr(nbval.kernel, "start_new_kernel", start)
    spec = importlib.util.spec_from_file_location("notebooks_conftest", ROOT / "notebooks" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    conftest.pytest_configure(None)
    assert nbval.kernel.start_new_kernel(kernel_name="python3") == "km, kc"
    assert len(calls) == 3
