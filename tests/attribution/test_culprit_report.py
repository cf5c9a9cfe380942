"""The change search in the report: the section, the diffs, the executive summary's sentences."""

from __future__ import annotations

import pytest

from rlaudit.attribution import culprit_report as report
from rlaudit.attribution.bisection import Bisection
from rlaudit.attribution.engine import Engine
from rlaudit.changes import changeset as csm
from rlaudit.changes.priors import map_all
from rlaudit.changes.targets import Targets
from support import changes as sc


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory):
    made = sc.history(tmp_path_factory.mktemp("history"))
    cs = map_all(csm.change_set(f"git:{made['repo']}@{made['commits'][0]}", f"git:{made['repo']}@main"))
    targets = Targets(cs, root=tmp_path_factory.mktemp("hybrids"))
    engine = Engine(None, runner=sc.oracle_for_history(cs), metric="return", max_seeds=5, budget=60, steps=1)
    return Bisection(engine, cs, targets=targets).run()


def test_the_summary_names_each_culprit_with_its_commit_function_hunk_and_shares(result):
    sentences = report.summary_sentences(result)
    first = sentences[0]
    c3 = result.change_set.commits[2]
    assert first.startswith(
        f"Culprit: commit {c3.short} “Tidy the rollout and the returns helper”: tinyrl/train.py, collect, @@ -76,8 +79,8 @@"
    )
    assert "reverting it restores" in first and "95% CI" in first and "of the return gap" in first
    assert "applied alone to the baseline it reproduces" in first
    assert "CPU time per step" in sentences[1] and "tinyrl/env.py" in sentences[1]
    assert sentences[-1].startswith("The change search spent") and "per-hunk sweep" in sentences[-1]


def test_the_section_holds_the_commits_the_culprits_and_their_diffs(result):
    section = report.section(result)
    assert section.title == "Which commit, which hunk?"
    commits = section.tables["commits"]
    assert list(commits["verdict"]) == ["cleared", "cleared", "culprit", "culprit"]
    culprits = section.tables["culprits"]
    assert culprits.iloc[0]["function"] == "collect" and culprits.iloc[0]["hunk"] == "@@ -76,8 +79,8 @@"
    diff = section.tables["culprit 1: the diff"]
    page = diff._repr_html_()
    assert "np.stack(b_obs, axis=1)" in page and "background:#e6ffec" in page and "background:#ffebe9" in page
    assert (
        "unresolved hybrids" in section.tables
        and "ImportError" in section.tables["unresolved hybrids"].to_string()
    )
    html = section.to_html()
    assert "@@ -76,8 +79,8 @@" in html and "search log" in html


def test_the_explorer_is_static_outside_jupyterlab(result, monkeypatch):
    monkeypatch.setenv("RLAUDIT_INTERACTIVE", "0")
    shown = report.explore(result)
    assert "14 hunks searched" in repr(shown) and "JupyterLab" in shown._repr_html_()
    harmful = result.culprits[0].hunks[0]
    rows = report.hunk_arms(result, harmful.id)
    assert rows and any(r["kind"] == "apply" for r in rows) and any(r["kind"] == "revert" for r in rows)


def test_without_a_search_the_section_says_why():
    section = report.section(None, ["code changes not searched: builtin vs builtin"])
    assert section.tables == {} and section.notes == ["code changes not searched: builtin vs builtin"]
    assert report.summary_sentences(None) == []


def test_the_payload_for_attribution_json_carries_the_culprits_diffs(result):
    import json

    data = json.loads(json.dumps(report.payload(result)))
    top = data["culprits"][0]
    assert top["changes"][0]["hunk"] == "@@ -76,8 +79,8 @@" and "np.stack(b_obs, axis=1)" in top["diff"]
    assert data["sentences"][0].startswith("Culprit: commit")
    assert "background:#ffebe9" in report.diff_html(top["diff"])
    assert report.payload(None) is None


def _headline_agrees_with_the_log(result) -> list[str]:
    """Read every verdict behind the summary sentences: each commit the search calls a culprit, and each
    culprit hunk, is named in them, and no sentence says nothing restores a share."""
    sentences = report.summary_sentences(result)
    text = " ".join(sentences)
    named = [row for row in result.commits if str(row["verdict"]).startswith("culprit")]
    assert named, "the fixture's history has culprit commits"
    assert "no commit or hunk restores" not in text, sentences
    for row in named:
        assert str(row["sha"])[:7] in text, (row["sha"], sentences)
    return sentences


def test_a_summary_never_says_no_culprit_above_a_log_that_names_them(result):
    import copy

    _headline_agrees_with_the_log(result)
    # the hunks' intervals too wide to decide (a smoke run's one seed): named as undecided, with their shares
    undecided = copy.copy(result)
    undecided.culprits = [copy.copy(c) for c in result.culprits]
    for c in undecided.culprits:
        c.verdict = "undecided"
    sentences = _headline_agrees_with_the_log(undecided)
    assert (
        sentences[0].startswith("Narrowed down but undecided: commit ")
        and "reverting it restores" in sentences[0]
    )
    # no hunk singled out at all: the bisection's culprit commits are named with their ranges' shares
    commits_only = copy.copy(result)
    commits_only.culprits = []
    sentences = _headline_agrees_with_the_log(commits_only)
    assert sentences[0].startswith("The bisection names commit ") and "as a culprit" in sentences[0]
