"""The whole report on subjects that are not built in: zero ERROR notebooks, zero ERROR findings, and
everything a subject cannot offer SKIPPED with the missing piece named.

Pairs: a subject with only ``config`` and ``train``, one with only ``config``, and the subject shapes the
contract allows (fixtures at the end). The built-in pair and the shipped examples get the same checks in
``test_readme.py``, on the reports their README commands make. Reports run at the smoke profile in the shared
test cache, so the runs the notebooks and other tests made are reused.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from support.reports import ROOT, ReportRun, assert_clean, assert_skips_say_what_is_missing, report

FIXTURES = ROOT / "tests" / "fixtures"
CACHE_KEY = "RLAUDIT_TEST_CACHE"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    return os.environ.get(CACHE_KEY) or str(tmp_path_factory.mktemp("matrix-cache"))


def _minimal_pair(tmp: Path, fixture: str) -> tuple[str, str]:
    """Two versions of a fixture subject in sibling directories; the candidate's learning rate is zeroed."""
    sides = []
    for name in ("v1", "v2"):
        directory = tmp / name
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / "subject.py"
        shutil.copyfile(FIXTURES / fixture, target)
        if name == "v2":
            target.write_text(target.read_text().replace('"learning_rate": 0.1', '"learning_rate": 0.0'))
        sides.append(str(target))
    return sides[0], sides[1]


def test_a_subject_with_only_config_and_train_is_audited_where_it_can_be(cache: str, tmp_path: Path) -> None:
    baseline, candidate = _minimal_pair(tmp_path, "minimal_train_subject.py")
    run = report(baseline, candidate, tmp_path / "out", cache)
    assert_clean(run)
    assert_skips_say_what_is_missing(run)
    checked = {f["subsystem"] for f in run.all_findings() if f["status"] not in ("SKIPPED",)}
    assert {"config", "trainer"} <= checked, run.explain()
    assert any("make_env" in f["evidence"].get("summary", "") for f in run.with_status("SKIPPED"))


def test_a_subject_with_only_config_is_skipped_everywhere_else(cache: str, tmp_path: Path) -> None:
    baseline, candidate = _minimal_pair(tmp_path, "config_only_subject.py")
    run = report(baseline, candidate, tmp_path / "out", cache)
    assert_clean(run)
    assert_skips_say_what_is_missing(run)
    outside = [f for f in run.all_findings() if f["subsystem"] != "config" and f["status"] != "SKIPPED"]
    assert not outside, "\n".join(f"{f['id']}: {f['status']}" for f in outside)


def _shape_pair(tmp: Path, fixture: str) -> tuple[str, str]:
    """Two versions of a shape fixture in sibling directories; the candidate's learning rate is zeroed."""
    sides = []
    for name in ("v1", "v2"):
        target = tmp / name / "subject.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        text = (FIXTURES / fixture).read_text()
        assert '"learning_rate": 0.01' in text, f"{fixture} must set learning_rate 0.01 for its pair"
        target.write_text(
            text.replace('"learning_rate": 0.01', '"learning_rate": 0.0') if name == "v2" else text
        )
        sides.append(str(target))
    return sides[0], sides[1]


def _ran(run: ReportRun) -> dict[str, str]:
    """Finding id -> status, for the findings that are not SKIPPED."""
    return {f["id"]: f["status"] for f in run.all_findings() if f["status"] != "SKIPPED"}


def test_a_plain_env_with_dict_observations_gets_every_check(cache: str, tmp_path: Path) -> None:
    """``make_env`` returns one ``gymnasium.Env`` (no vector env) whose observations are a Dict (a Box and a
    Discrete), with the network, optimizer, loss, checkpoint and log capabilities (no curriculum, ``env_fn``
    or ``config(overrides=)``). The checks that feed the network a fixed observation batch, roll out the
    subject's own env for the loss, or load its checkpoints run on it: before, they raised (TypeError on the
    dict observations, FileNotFoundError for the gradients of a plain env)."""
    baseline, candidate = _shape_pair(tmp_path, "dict_obs_subject.py")
    run = report(baseline, candidate, tmp_path / "out", cache)
    assert_clean(run)
    assert_skips_say_what_is_missing(run)
    ran = _ran(run)
    expected = {
        "agents/architecture",
        "init/schemes",
        "checkpointing/round-trip",
        "checkpointing/loading",
        "loss/gradient-flow",
        "spaces/observations",
        "spaces/network-input",
    }
    assert expected <= set(ran), f"not run: {sorted(expected - set(ran))}\n{run.explain()}"


def test_continuous_actions_without_checkpoints_get_every_check(cache: str, tmp_path: Path) -> None:
    """Box actions (a Gaussian policy) on a vector env, and no ``checkpoints``, ``load_checkpoint`` or
    ``train(resume_from=)``: every check that needs a checkpoint says SKIPPED and names what is missing."""
    baseline, candidate = _shape_pair(tmp_path, "continuous_subject.py")
    run = report(baseline, candidate, tmp_path / "out", cache)
    assert_clean(run)
    assert_skips_say_what_is_missing(run)
    ran = _ran(run)
    assert {"agents/architecture", "loss/terms", "loss/gradient-flow", "spaces/observations"} <= set(ran), (
        run.explain()
    )
    checkpointing = [f for f in run.all_findings() if f["subsystem"] == "checkpointing"]
    assert checkpointing and all(f["status"] == "SKIPPED" for f in checkpointing), run.explain()
    said = " ".join(f["evidence"]["summary"] + " " + f["remediation"] for f in checkpointing)
    assert "checkpoints" in said and "load_checkpoint" in said


def _flagged(run: ReportRun, finding_id: str) -> dict:
    """The one finding ``finding_id`` of a report, asserted to be flagged (SUSPECT or CONFIRMED)."""
    (finding,) = [f for f in run.all_findings() if f["id"] == finding_id]
    assert finding["status"] in ("SUSPECT", "CONFIRMED"), f"{finding['status']}: {finding['evidence']}"
    return finding


def _against_the_minimal_subject(candidate: str, out: Path, cache: str) -> ReportRun:
    """The whole report: the minimal fixture subject against the fixture ``candidate``, with no ERROR and
    every SKIPPED naming what is missing."""
    run = report(str(FIXTURES / "minimal_train_subject.py"), str(FIXTURES / candidate), out, cache)
    assert_clean(run)
    assert_skips_say_what_is_missing(run)
    return run


def test_a_train_that_crashes_on_one_seed_is_flagged_and_nothing_else_errs(
    cache: str, tmp_path: Path
) -> None:
    """The candidate raises FloatingPointError on seed 0 only: a flagged trainer finding names the seed and the
    error, every seed's outcome is listed, and no other check turns the crash into an ERROR of its own."""
    run = _against_the_minimal_subject("crash_on_seed_subject.py", tmp_path / "out", cache)
    finding = _flagged(run, "trainer/outcomes")
    assert "crashes on 1 of 2 seeds" in finding["evidence"]["summary"], finding["evidence"]["summary"]
    assert "seed 0 raised FloatingPointError" in finding["evidence"]["summary"]
    listed = [(o["side"], o["seed"], o["outcome"]) for o in finding["evidence"]["details"]["outcomes"]]
    assert sorted(listed) == [
        ("baseline", 0, "finished"),
        ("baseline", 1, "finished"),
        ("candidate", 0, "raised"),
        ("candidate", 1, "finished"),
    ]


def test_a_train_whose_returns_are_nan_is_flagged_as_divergence_and_nothing_else_errs(
    cache: str, tmp_path: Path
) -> None:
    """The candidate reports every return and logged scalar as NaN: divergence, CONFIRMED with the first step
    and quantity, and never "not instrumented" in the trainer room."""
    run = _against_the_minimal_subject("nan_train_subject.py", tmp_path / "out", cache)
    finding = _flagged(run, "trainer/outcomes")
    assert "non-finite from step 8 (`return` = nan)" in finding["evidence"]["summary"]
    for check in ("trainer/learning", "trainer/stability"):
        assert _flagged(run, check)["status"] == "CONFIRMED"
