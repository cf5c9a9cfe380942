"""``make lab`` / ``rlaudit lab``: the pair reaches every notebook of a live JupyterLab without editing a cell,
papermill's parameters still win, the session header says where the pair came from, and a finished notebook
leaves no idle worker behind."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from rlaudit import cli, lab
from rlaudit import notebook as rn

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

GIVEN = dict(lab.DEFAULTS)  # a parameters cell nobody edited
PAIR = lab.LabPair(
    baseline="data/examples/cartpole/v1/subject.py",
    candidate="data/examples/cartpole/v2/subject.py",
    profile="smoke",
    metric="length:lower",
    variants="fix=builtin:reference",
    source="make lab",
)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLAUDIT_REPORTS", str(tmp_path / "reports"))
    for name in ("RLAUDIT_PROFILE", "RLAUDIT_INTERACTIVE", lab.ENV):
        monkeypatch.delenv(name, raising=False)


def test_a_live_notebook_left_at_its_defaults_takes_the_labs_pair() -> None:
    params, origin = lab.resolve(GIVEN, {lab.ENV: PAIR.to_env()}, live=True)
    assert params["baseline"] == PAIR.baseline and params["candidate"] == PAIR.candidate
    assert (params["profile"], params["metric"], params["variants"]) == (
        "smoke",
        "length:lower",
        PAIR.variants,
    )
    assert origin == "from `make lab`"


def test_papermill_and_nbval_keep_their_parameters() -> None:
    given = {**GIVEN, "profile": "standard"}
    assert lab.resolve(given, {lab.ENV: PAIR.to_env()}, live=False) == (given, "")
    assert lab.resolve(given, {}, live=True) == (given, "")


def test_a_parameter_edited_in_the_cell_wins_and_the_header_says_so() -> None:
    edited = {**GIVEN, "candidate": "builtin:reference+wrong_gae"}
    params, origin = lab.resolve(edited, {lab.ENV: PAIR.to_env()}, live=True)
    assert params["candidate"] == "builtin:reference+wrong_gae"
    assert params["baseline"] == PAIR.baseline
    assert "candidate kept" in origin


def test_a_malformed_lab_pair_says_what_was_expected() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        lab.LabPair.from_env({lab.ENV: "{not json"})
    with pytest.raises(ValueError, match="keys among"):
        lab.LabPair.from_env({lab.ENV: json.dumps({"baseline": "a", "colour": "red"})})


def test_the_session_uses_the_labs_pair_and_shows_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv(lab.ENV, PAIR.to_env())
    monkeypatch.setenv("RLAUDIT_INTERACTIVE", "1")  # as in a JupyterLab kernel
    session = rn.Session("trainer", "builtin:reference", "builtin:regressed", "standard")
    assert (session.baseline, session.candidate, session.profile.name) == (
        PAIR.baseline,
        PAIR.candidate,
        "smoke",
    )
    assert session.requested_metric == "length:lower" and session.variants == PAIR.variants
    assert "pair: from `make lab`" in capsys.readouterr().out
    monkeypatch.setenv("RLAUDIT_INTERACTIVE", "0")  # papermill
    session = rn.Session("trainer", "builtin:reference", "builtin:regressed", "standard")
    assert session.baseline == "builtin:reference"
    assert "pair: from this notebook's parameters cell" in capsys.readouterr().out


class ClosingWorkbench:
    def __init__(self) -> None:
        self.closed = 0
        self.labels = {"baseline": "a", "candidate": "b"}

    def close(self) -> None:
        self.closed += 1


def test_finish_stops_the_idle_workers_and_a_later_cell_gets_a_fresh_workbench(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[ClosingWorkbench] = []
    import rlaudit.engine.workbench

    monkeypatch.setattr(
        rlaudit.engine.workbench, "Workbench", lambda *a, **k: made.append(ClosingWorkbench()) or made[-1]
    )
    session = rn.Session("agents", "builtin:reference", "builtin:regressed", "smoke", quiet=True)
    first = session.wb
    session.finish()
    assert first.closed == 1
    session.finish()  # twice: closed once
    assert first.closed == 1
    assert session.wb is not first and len(made) == 2
    # a workbench handed in (tests, shared kernels) belongs to the caller: never closed by the session
    given = ClosingWorkbench()
    rn.Session("agents", "a", "b", "smoke", quiet=True, workbench=given).finish()
    assert given.closed == 0


def test_rlaudit_lab_dry_run_prints_the_pair_the_cache_and_the_command(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUDIT_WORKDIR", str(ROOT))  # what the CLI sets, restored after the test
    code = cli.main(
        ["lab", "--baseline", PAIR.baseline, "--candidate", PAIR.candidate, "--profile", "smoke",
         "--metric", "length:lower", "--variants", PAIR.variants, "--dry-run", "--", "--no-browser"]
    )  # fmt: skip
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    env = dict(line.split("=", 1) for line in lines[:-1])
    pair = lab.LabPair.from_env({lab.ENV: env[lab.ENV].strip("'")})
    assert (pair.baseline, pair.candidate, pair.profile, pair.metric) == (
        PAIR.baseline, PAIR.candidate, "smoke", "length:lower",
    )  # fmt: skip
    from rlaudit.engine.paths import cache_dir

    assert env["RLAUDIT_CACHE"].strip("'") == str(cache_dir())  # the cache `rlaudit report` uses
    assert lines[-1].split()[1:4] == ["lab", str(ROOT / "notebooks"), "--no-browser"]


@pytest.mark.parametrize(
    ("flags", "origin"), [([], "rlaudit lab"), (["--launched-by", "make lab"], "make lab")]
)
def test_the_header_names_the_command_given_not_whatever_make_runs_it(
    flags: list[str], origin: str, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make test` runs `rlaudit lab` with MAKELEVEL set; only the Makefile's own flag says `make lab`."""
    monkeypatch.setenv("RLAUDIT_WORKDIR", str(ROOT))
    monkeypatch.setenv("MAKELEVEL", "1")
    assert cli.main(["lab", "--profile", "smoke", *flags, "--dry-run"]) == 0
    env = dict(line.split("=", 1) for line in capsys.readouterr().out.splitlines()[:-1])
    assert lab.LabPair.from_env({lab.ENV: env[lab.ENV].strip("'")}).source == origin


def test_rlaudit_lab_rejects_an_unknown_profile(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUDIT_WORKDIR", str(ROOT))
    assert cli.main(["lab", "--profile", "huge", "--dry-run"]) == 2
    assert "huge" in capsys.readouterr().err


def test_make_lab_passes_the_report_variables_on() -> None:
    out = subprocess.run(
        ["make", "-n", "lab", "BASELINE=a.py", "CANDIDATE=b.py", "PAIR=p.yaml", "PROFILE=smoke",
         "METRIC=length:lower", "VARIANTS=fix=c.py", "LAB_ARGS=--no-browser"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    command = " ".join(out.split("\\\n")).split("rlaudit lab", 1)[1]
    for expected in ('--launched-by "make lab"', '--baseline "a.py"', '--candidate "b.py"', '--pair "p.yaml"', "--profile smoke",
                     '--metric "length:lower"', '--variants "fix=c.py"', "-- --no-browser"):  # fmt: skip
        assert expected in " ".join(command.split()), expected


@pytest.mark.workbench  # starts a kernel
def test_every_notebook_opens_on_the_labs_pair_without_editing_a_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parameters and Session cells of every notebook, run in one kernel set up as `make lab` sets up the
    server (the pair in its environment, a live frontend): each session is on the lab's pair. Nothing here
    starts a worker (a Session builds its workbench on first use)."""
    from nbclient import NotebookClient

    cells = []
    for path in NOTEBOOKS:
        code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        cells += [c.source for c in code[:2]]
        cells.append(
            "import json\nprint('SESSION', json.dumps({'nb': session.notebook, 'baseline': session.baseline,"
            " 'candidate': session.candidate, 'profile': session.profile.name, 'origin': session.origin}))"
        )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # the server's environment, inherited by its kernels
    monkeypatch.setenv(lab.ENV, PAIR.to_env())
    monkeypatch.setenv("RLAUDIT_INTERACTIVE", "1")
    monkeypatch.setenv("RLAUDIT_REPORTS", str(tmp_path))
    NotebookClient(  # iopub_timeout: on a busy machine a cell's output can arrive seconds after its reply
        nb, timeout=300, iopub_timeout=60, kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "notebooks")}},
    ).execute()  # fmt: skip
    seen = []
    for cell in nb.cells:
        # a busy kernel may coalesce a stream: the line can follow other text of the same output
        text = "".join(output.get("text", "") for output in cell.get("outputs", []))
        seen += [json.loads(m.group(1)) for m in re.finditer(r"SESSION (\{[^\n]*\})", text)]
    assert len(seen) == len(NOTEBOOKS) == 15
    for s in seen:
        assert (s["baseline"], s["candidate"], s["profile"]) == (PAIR.baseline, PAIR.candidate, "smoke"), s
        assert s["origin"] == "from `make lab`", s
