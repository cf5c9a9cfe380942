"""Every training run accounted for: a run that raised, crashed, was killed, timed out or recorded NaN is a
result with an outcome, the trainer room flags a candidate that fails where the baseline finished, and the
statistics say which seeds they rest on."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rlaudit.engine.workbench import Pair, ProbeError, ProbeResult
from rlaudit.findings import Severity, Status
from rlaudit.recorder import Recorder
from rlaudit.trainer import learning as tl
from rlaudit.trainer import outcomes as to
from rlaudit.trainer.runs import RunData, TrainingRuns
from support.runs import bench, evidence, fake_run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TRACEBACK = """Traceback (most recent call last):
  File "/repo/lib/rlaudit/engine/worker.py", line 210, in _call
    result = fn(ctx, **params)
  File "/repo/lib/rlaudit/trainer/probes.py", line 120, in train_run
    summary = ctx.subject.train(config, steps, seed, recorder, **kwargs)
  File "/home/me/v2/subject.py", line 31, in train
    prefs = np.exp(prefs + 1000.0)
FloatingPointError: overflow encountered in exp
"""


def _raised(seed: int = 0) -> ProbeError:
    return ProbeError(
        "exception",
        "rlaudit.trainer.probes:train_run raised FloatingPointError: overflow encountered in exp",
        TRACEBACK,
    )


# ---------------------------------------------------------------------------------------------------------------
# From the probe's error or the run's record to an outcome
# ---------------------------------------------------------------------------------------------------------------


def test_a_raised_run_keeps_the_exception_its_message_and_the_subjects_frame() -> None:
    o = to.outcome_of_error("candidate", 0, _raised())
    assert (o.outcome, o.exception, o.message) == (
        to.RAISED,
        "FloatingPointError",
        "overflow encountered in exp",
    )
    assert o.where == "train (subject.py:31)"  # the subject's frame, not rlaudit's
    assert o.describe() == "raised FloatingPointError in train (subject.py:31): overflow encountered in exp"
    assert o.stopped and not o.finished


@pytest.mark.parametrize(
    ("kind", "message", "outcome"),
    [
        ("timeout", "train_run on 'v2' did not finish within 300 s", to.TIMED_OUT),
        ("oom", "killed by SIGKILL during train_run, not by rlaudit: suspected out of memory", to.KILLED),
        ("crash", "the worker died with SIGTERM during train_run (exit code -15)", to.KILLED),
        ("crash", "the worker died with SIGSEGV during train_run (exit code -11)", to.CRASHED),
        ("crash", "the worker exited with code 3 during train_run", to.CRASHED),
        ("import", "subject.py failed to import", to.FAILED),
    ],
)
def test_a_run_that_did_not_return_gets_the_outcome_of_its_error(
    kind: str, message: str, outcome: str
) -> None:
    o = to.outcome_of_error("candidate", 1, ProbeError(kind, message))
    assert o.outcome == outcome and o.seed == 1 and message[:40] in o.describe()


def test_the_recorder_notes_the_first_nonfinite_value_as_it_arrives(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "a")
    rec.log(8, **{"losses/value_loss": 1.0})
    rec.episode(16, env=0, **{"return": 2.0})
    rec.log(24, **{"losses/value_loss": math.inf})
    rec.episode(32, env=0, **{"return": math.nan})
    rec.close()
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["nonfinite"] == {"step": 24, "quantity": "losses/value_loss", "value": "inf"}
    clean = Recorder(tmp_path / "b")
    clean.episode(8, env=0, **{"return": 1.0})
    clean.episode(16, env=1, length=4)  # a statistic this episode lacks is NaN in the table, not a divergence
    clean.close()
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["nonfinite"] is None


def test_a_run_recorded_without_the_note_is_read_from_its_tables(tmp_path: Path) -> None:
    nan_returns = fake_run(tmp_path, metric=[math.nan] * 4, metric_name="return")
    assert to.first_nonfinite(nan_returns) == (64, "return", "nan")
    scalars = {"step": np.array([8, 16, 24]), "name": np.array(["a", "b", "a"]), "value": [1.0, np.nan, 2.0]}
    logged = fake_run(tmp_path, tables={"scalars": scalars})
    assert to.first_nonfinite(logged) == (16, "b", "nan")
    # NaN in a partly reported episode statistic means "not reported": no divergence
    partly = fake_run(tmp_path, metric=[1.0, math.nan, 2.0, 3.0], metric_name="return")
    assert to.first_nonfinite(partly) is None
    assert to.outcome_of_run(partly).finished


# ---------------------------------------------------------------------------------------------------------------
# The verdict and the table
# ---------------------------------------------------------------------------------------------------------------


def _finished(side: str, *seeds: int) -> list[to.RunOutcome]:
    return [to.RunOutcome(side, s, to.FINISHED) for s in seeds]


def test_a_candidate_that_crashes_where_the_baseline_finished_is_confirmed_naming_seed_and_error() -> None:
    found = {
        "baseline": _finished("baseline", 0, 1),
        "candidate": [to.outcome_of_error("candidate", 0, _raised()), *_finished("candidate", 1)],
    }
    verdict = to.judge_outcomes(found)
    assert (verdict.status, verdict.severity) == (Status.CONFIRMED, Severity.HIGH)
    assert verdict.summary.startswith("the candidate crashes on 1 of 2 seeds where the baseline finished")
    assert "seed 0 raised FloatingPointError in train (subject.py:31)" in verdict.summary
    assert verdict.error is not None and verdict.error.traceback == TRACEBACK


def test_a_candidate_that_only_times_out_is_suspect_and_shared_failures_are_an_error() -> None:
    timed_out = to.outcome_of_error("candidate", 1, ProbeError("timeout", "did not finish within 300 s"))
    verdict = to.judge_outcomes(
        {"baseline": _finished("baseline", 0, 1), "candidate": [*_finished("candidate", 0), timed_out]}
    )
    assert (verdict.status, verdict.severity) == (Status.SUSPECT, Severity.MEDIUM)
    assert "seed 1 timed out" in verdict.summary
    both = {
        "baseline": [to.outcome_of_error("baseline", 0, _raised()), *_finished("baseline", 1)],
        "candidate": [to.outcome_of_error("candidate", 0, _raised()), *_finished("candidate", 1)],
    }
    verdict = to.judge_outcomes(both)
    assert verdict.status is Status.ERROR
    assert "baseline seed 0 raised" in verdict.summary and "candidate seed 0 raised" in verdict.summary


def test_nonfinite_values_are_confirmed_on_the_candidate_and_noted_when_the_baseline_has_them_too() -> None:
    nan = {"step": 64, "quantity": "return", "value": "nan"}
    diverged = {side: [to.RunOutcome(side, s, to.NON_FINITE, **nan) for s in (0, 1)] for side in to.SIDES}
    verdict = to.judge_outcomes({"baseline": _finished("baseline", 0, 1), "candidate": diverged["candidate"]})
    assert (verdict.status, verdict.severity) == (Status.CONFIRMED, Severity.HIGH)
    assert "diverges (non-finite values) on 2 of 2 seeds" in verdict.summary
    assert "seed 0 non-finite from step 64 (`return` = nan)" in verdict.summary
    alike = to.judge_outcomes(diverged)
    assert (alike.status, alike.severity) == (
        Status.NOTED,
        Severity.LOW,
    ) and "both sides alike" in alike.summary
    clean = to.judge_outcomes({side: _finished(side, 0, 1) for side in to.SIDES})
    assert clean.status is Status.CLEARED


def _result(side: str, seed: int, run: RunData | None = None, error: ProbeError | None = None) -> ProbeResult:
    return ProbeResult(
        side=side,
        spec=side,
        probe="rlaudit.trainer.probes:train_run",
        params={"steps": 128, "seed": seed},
        ok=run is not None,
        error=error,
        result=dict(run.result, seed=seed) if run is not None else None,
        dir=run.dir if run is not None else None,
    )


def _crashed_on_seed_zero(tmp_path: Path) -> TrainingRuns:
    """Three seeds a side; the candidate's seed 0 raised (as the probe reports it), its others finished."""
    good = [fake_run(tmp_path, seed=s, metric=[1.0 + s] * 16) for s in range(3)]
    pairs = [
        Pair(
            baseline=_result("baseline", s, good[s]),
            candidate=_result("candidate", s, None if s == 0 else good[s], _raised() if s == 0 else None),
        )
        for s in range(3)
    ]
    return TrainingRuns.of(pairs)


def test_the_outcomes_check_lists_every_seed_of_both_sides_and_drops_none(tmp_path: Path) -> None:
    given = _crashed_on_seed_zero(tmp_path)
    section = to.outcomes(bench(), given=given)
    (finding,) = section.findings
    assert finding.id == "trainer/outcomes" and finding.status is Status.CONFIRMED
    assert (
        "crashes on 1 of 3 seeds" in finding.evidence.summary
        and "FloatingPointError" in finding.evidence.summary
    )
    table = section.table("runs")
    assert list(zip(table["side"], table["seed"], table["outcome"], strict=True)) == [
        ("baseline", 0, "finished"),
        ("baseline", 1, "finished"),
        ("baseline", 2, "finished"),
        ("candidate", 0, "raised"),
        ("candidate", 1, "finished"),
        ("candidate", 2, "finished"),
    ]
    (failed,) = [o for o in finding.evidence.details["outcomes"] if o["outcome"] == "raised"]
    assert failed["error"]["traceback"] == TRACEBACK


def test_a_seed_that_fails_on_both_sides_is_an_error_with_its_traceback_and_the_table(tmp_path: Path) -> None:
    good = fake_run(tmp_path, seed=1, metric=[1.0] * 8)
    pairs = [
        Pair(
            baseline=_result("baseline", 0, error=_raised()),
            candidate=_result("candidate", 0, error=_raised()),
        ),
        Pair(baseline=_result("baseline", 1, good), candidate=_result("candidate", 1, good)),
    ]
    section = to.outcomes(bench(), given=TrainingRuns.of(pairs))
    (finding,) = section.findings
    assert finding.status is Status.ERROR and finding.evidence.details["traceback"] == TRACEBACK
    assert finding.evidence.summary.startswith("2 training runs did not finish: baseline seed 0 raised")
    assert list(section.table("runs")["outcome"]) == ["raised", "finished", "raised", "finished"]


def test_the_learning_statistics_name_the_seeds_they_rest_on_and_the_run_left_out(tmp_path: Path) -> None:
    given = _crashed_on_seed_zero(tmp_path)
    wb = bench()
    (learning,) = tl.learning(wb, given=given).findings
    summary = learning.evidence.summary
    assert "over 2 seeds (seeds 1, 2; left out:" in summary, summary
    assert "candidate seed 0 raised FloatingPointError" in summary and "baseline seed 0 unpaired" in summary
    assert learning.evidence.details["runs"]["candidate"]["left out"] == {
        0: given.outcomes()["candidate"][0].describe()
    }
    (stability,) = tl.stability(wb, given=given).findings
    assert "collapsed or unfinished runs: baseline 0/3, candidate 1/3" in stability.evidence.summary, (
        stability.evidence.summary
    )


def test_a_metric_reported_as_nan_is_divergence_and_one_never_reported_is_skipped(tmp_path: Path) -> None:
    wb = bench()
    base = [fake_run(tmp_path, seed=s, metric=[1.0] * 8) for s in (0, 1)]
    nan = [fake_run(tmp_path, seed=s, metric=[math.nan] * 8) for s in (0, 1)]
    for check, severity in ((tl.learning, Severity.CRITICAL), (tl.stability, Severity.HIGH)):
        (finding,) = check(wb, given=evidence(base, nan)).findings
        assert (finding.status, finding.severity) == (Status.CONFIRMED, severity), finding.evidence.summary
        assert "the candidate diverged" in finding.evidence.summary
        assert "candidate seed 0 non-finite from step 64 (`heart.get` = nan)" in finding.evidence.summary
    silent = [fake_run(tmp_path, seed=s, metric=[1.0] * 8, metric_name="other") for s in (0, 1)]
    (finding,) = tl.learning(wb, given=evidence(base, silent)).findings
    assert finding.status is Status.SKIPPED and "no run reporting `heart.get`" in finding.evidence.summary


# ---------------------------------------------------------------------------------------------------------------
# The fixture subjects, trained for real (tiny runs)
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_wb(audit_cache: str):
    """``tiny_wb(candidate)``: the minimal fixture subject against ``candidate``, on very short runs."""
    from rlaudit.engine.workbench import Workbench
    from rlaudit.profiles import get_profile

    opened = []
    profile = get_profile("smoke").replace(train_steps=512, short_train_steps=512, seeds=2)

    def make(candidate: str) -> Workbench:
        wb = Workbench(str(FIXTURES / "minimal_train_subject.py"), str(FIXTURES / candidate), profile=profile)
        opened.append(wb)
        return wb

    yield make
    for wb in opened:
        wb.close()


def test_a_train_that_crashes_on_one_seed_is_flagged_and_listed(tiny_wb) -> None:
    """Two checks only: a failed run is not cached, so every check that asks for the runs trains it again (the
    whole room on this subject runs in the subject matrix)."""
    wb = tiny_wb("crash_on_seed_subject.py")
    section = to.outcomes(wb)
    (outcome,) = section.findings
    assert outcome.status is Status.CONFIRMED, outcome.evidence.summary
    assert "crashes on 1 of 2 seeds" in outcome.evidence.summary
    assert "seed 0 raised FloatingPointError in train (crash_on_seed_subject.py:" in outcome.evidence.summary
    table = section.table("runs")
    assert list(zip(table["side"], table["seed"], table["outcome"], strict=True)) == [
        ("baseline", 0, "finished"),
        ("baseline", 1, "finished"),
        ("candidate", 0, "raised"),
        ("candidate", 1, "finished"),
    ]
    (learning,) = tl.learning(wb).findings
    assert learning.status is not Status.ERROR
    assert "candidate seed 0 raised FloatingPointError" in learning.evidence.summary


def test_a_train_whose_returns_and_scalars_are_nan_is_divergence_not_uninstrumented(tiny_wb) -> None:
    from rlaudit.trainer import audit_all

    sections = audit_all(tiny_wb("nan_train_subject.py"))
    found = {f.id: f for s in sections for f in s.findings}
    outcome = found["trainer/outcomes"]
    assert (outcome.status, outcome.severity) == (Status.CONFIRMED, Severity.HIGH)
    assert "seed 0 non-finite from step 8 (`return` = nan)" in outcome.evidence.summary
    for name in ("trainer/learning", "trainer/stability"):
        assert found[name].status is Status.CONFIRMED, found[name].evidence.summary
    assert not [f.id for f in found.values() if f.status is Status.ERROR]


def test_a_value_that_is_nan_for_a_while_and_finite_again_is_no_divergence(tmp_path: Path) -> None:
    """SB3's A2C logged an explained variance of NaN for one batch (its returns were all equal) in a run that
    went on learning to a return of 133, and the report said the candidate "diverges". Only a quantity that stays
    non-finite to the end of the run is a divergence; one that turned finite again is named as passed."""
    rec = Recorder(tmp_path / "a" / "run")
    for step, value in ((8, 0.5), (16, math.nan), (24, math.nan), (32, 0.7), (40, math.inf), (48, 0.9)):
        rec.log(step, **{"losses/explained_variance": value})
    rec.log(48, **{"losses/value_loss": 1.0})
    rec.close()
    run = RunData("candidate", 0, tmp_path / "a")
    assert run.run_dir == tmp_path / "a" / "run"
    summary = run.summary
    assert summary["nonfinite"] is None
    assert summary["nonfinite_passed"] == {"losses/explained_variance": {"first_step": 16, "times": 2}}
    outcome = to.outcome_of_run(run)
    assert outcome.finished and outcome.passed == (("losses/explained_variance", 16, 2),)
    assert (
        outcome.row()["detail"]
        == "`losses/explained_variance` NaN or infinite 2 times from step 16, finite again after"
    )
    verdict = to.judge_outcomes({"baseline": _finished("baseline", 0), "candidate": [outcome]})
    assert verdict.status is Status.CLEARED
    assert verdict.summary.startswith("every run finished with finite values at its end")
    assert (
        "candidate seed 0 `losses/explained_variance` NaN or infinite 2 times from step 16" in verdict.summary
    )
    # one that stays non-finite to the end is where the run diverged, even after others passed
    rec = Recorder(tmp_path / "b")
    rec.log(8, **{"losses/explained_variance": math.nan, "losses/value_loss": 1.0})
    rec.log(16, **{"losses/explained_variance": 0.2, "losses/value_loss": math.nan})
    rec.log(24, **{"losses/explained_variance": 0.3, "losses/value_loss": math.nan})
    rec.close()
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["nonfinite"] == {"step": 16, "quantity": "losses/value_loss", "value": "nan"}


def test_tables_without_the_note_count_only_what_stays_non_finite(tmp_path: Path) -> None:
    scalars = {
        "step": np.array([8, 8, 16, 16, 24, 24]),
        "name": np.array(["ev", "loss", "ev", "loss", "ev", "loss"]),
        "value": [np.nan, 1.0, 0.5, np.inf, 0.6, np.inf],
    }
    assert to.first_nonfinite(fake_run(tmp_path, tables={"scalars": scalars})) == (16, "loss", "inf")
    scalars["value"] = [np.nan, 1.0, 0.5, np.inf, 0.6, 2.0]  # both turned finite again
    assert to.first_nonfinite(fake_run(tmp_path, tables={"scalars": scalars})) is None
