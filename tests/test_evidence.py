"""Verdicts on a difference: different, equivalent (TOST), or inconclusive with the seeds that settle it."""

from __future__ import annotations

import math

import pytest

from rlaudit import evidence as ev
from rlaudit.findings import Severity, Status


@pytest.mark.parametrize(
    ("point", "low", "high", "kind"),
    [
        (-0.5, -0.7, -0.3, ev.DIFFERENT),  # clear of 0 and beyond the margin
        (0.02, -0.05, 0.08, ev.EQUIVALENT),  # the whole interval inside ±0.1
        (-0.459, -1.39, 0.175, ev.INCONCLUSIVE),  # the "no learning gap beyond 10%" case
        (0.05, 0.01, 0.09, ev.EQUIVALENT),  # clear of 0 but practically nothing
        (0.08, 0.02, 0.14, ev.INCONCLUSIVE),  # clear of 0, inside the margin, interval not
        (math.nan, 0.0, 1.0, ev.INCONCLUSIVE),
    ],
)
def test_judge_reads_an_interval_against_a_margin(point: float, low: float, high: float, kind: str) -> None:
    assert ev.judge(point, low, high, 0.1).kind == kind


def test_inconclusive_says_how_many_seeds_would_settle_it() -> None:
    j = ev.judge(-0.459, -1.39, 0.175, 0.1, needed=23)
    assert j.status() is Status.NOTED and j.settle() == "about 23 seeds per side would settle it"
    edge = ev.judge(-0.099, -0.2, 0.002, 0.1, needed=16_024)  # an estimate at the margin's edge
    assert edge.settle("runs").startswith(
        "no practical number of runs would settle it (about 16,024 per side"
    )

    assert ev.judge(0.0, -0.01, 0.01, 0.1, needed=23).needed is None


def test_judge_ratio_is_symmetric_on_the_log_scale() -> None:
    assert ev.judge_ratio(2.0, 1.8, 2.2, 1.15).different
    assert ev.judge_ratio(0.5, 1 / 2.2, 1 / 1.8, 1.15).different
    assert ev.judge_ratio(1.02, 0.95, 1.08, 1.15).equivalent
    assert ev.judge_ratio(1.1, 0.8, 1.4, 1.15).inconclusive


def test_equivalence_seeds_follow_the_normal_approximation() -> None:
    # 2 (z_.95 + z_.9)^2 = 2 (1.645 + 1.282)^2 = 17.1 -> 18 for sd = margin
    assert ev.equivalence_seeds(1.0, 1.0) == 18
    assert ev.equivalence_seeds(1.0, 2.0) == 5
    assert ev.equivalence_seeds(1.0, 1.0, diff=1.5) is None


def test_numbers_read_compactly() -> None:
    assert ev.fmt(0.00025) == "0.00025" and ev.fmt(12345.6) == "12,346" and ev.fmt(None) == "n/a"
    assert ev.estimate(0.5, 0.25, 0.75) == "0.5 [0.25, 0.75]" and ev.ratio(1.5, 1.2, 1.8) == "×1.5 [1.2, 1.8]"
    assert ev.pct(-0.12, signed=True) == "-12%" and ev.versus(3.2, 1.1, "ms") == "3.2 ms vs 1.1 ms"


def test_an_inconclusive_verdict_is_noted_and_says_what_would_settle_it() -> None:
    verdict = ev.inconclusive("ratio 1.1 [0.8, 1.4]", "longer rollouts")
    assert (verdict.status, verdict.severity) == (Status.NOTED, Severity.INFO)
    assert verdict.summary == "inconclusive: ratio 1.1 [0.8, 1.4]"
    assert verdict.remediation == "Rerun at a larger profile (longer rollouts) to settle it."


def test_coverage_finds_what_one_side_or_neither_side_measured() -> None:
    both = ev.coverage(
        {"baseline": {"scale": 0.5, "clipped": False}, "candidate": {"scale": 0.5, "clipped": False}}
    )
    assert both.complete and both.verdict() is None  # False is a measurement, not a gap
    huber = ev.coverage(
        {"baseline": {"scale": 0.5, "clipped": True}, "candidate": {"scale": None, "clipped": True}},
        {"baseline": {"scale": "½·MSE"}, "candidate": {"scale": "not a squared error (Huber)"}},
    )
    assert huber.one_sided == {"scale": "baseline"} and not huber.neither
    status, severity, summary, remediation = huber.verdict()
    assert status is Status.SUSPECT and severity is Severity.MEDIUM
    assert summary == (
        "measured on one side only, so not the same: scale: ½·MSE on the baseline, not measured on the candidate "
        "(not a squared error (Huber))"
    )
    assert remediation
    # a quantity one side does not even name, and NaN, are not measured either
    named = ev.coverage({"baseline": {"lr": 3e-4, "eps": math.nan}, "candidate": {"eps": math.nan}})
    assert named.one_sided == {"lr": "baseline"} and named.neither == ("eps",)
    nowhere = ev.coverage({"baseline": {}, "candidate": {}}, expected=("value-loss scale",))
    status, _, summary, _ = nowhere.verdict()
    assert status is Status.NOTED and summary.startswith("not measured: value-loss scale")


def test_a_speed_ratio_at_the_margins_edge_gets_no_plan_of_thousands_of_runs() -> None:
    """The SB3 SAC pair's standard report measured ×0.874 [0.725, 1.07] over five runs a side, on a loaded
    machine: just inside the ±15% margin, where equivalence would take about 16,000 runs per side."""
    import numpy as np

    from rlaudit import timing
    from rlaudit.trainer.common import seeds_to_settle, settle_text

    base = np.array([0.558, 0.578, 0.585, 0.437, 0.387])
    cand = np.array([0.560, 0.380, 0.455, 0.364, 0.466])
    logs = np.concatenate([np.log(x) - np.log(x.mean()) for x in (base, cand)])
    needed = seeds_to_settle(
        ev.spread(logs), math.log(timing.PRACTICAL_RATIO), math.log(cand.mean() / base.mean())
    )
    assert needed > ev.IMPRACTICAL
    assert settle_text(needed, 5, 3, "runs").startswith("no practical number of runs would settle it")
    assert settle_text(12, 5, 3, "runs") == "about 12 runs per side would settle it"
