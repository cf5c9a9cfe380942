"""The tests of :mod:`rlaudit.trainer.learning`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rlaudit.findings import Status
from rlaudit.metrics import Metric
from rlaudit.trainer import learning as tl
from rlaudit.trainer.runs import RunData
from support.runs import bench, evidence, fake_run

# ---------------------------------------------------------------------------------------------------------------
# Learning: clearing needs evidence, in the metric's direction
# ---------------------------------------------------------------------------------------------------------------


def _runs(tmp: Path, finals: list[float], name: str = "heart.get", first: int = 0) -> list[RunData]:
    """One run per value, every episode of it scoring that value (its final performance)."""
    return [
        fake_run(
            tmp, seed=first + i, metric=[v] * 40, metric_name=name, summary={"steps": 128, "seconds": 1.0}
        )
        for i, v in enumerate(finals)
    ]


def test_compare_final_needs_seeds_and_clears_only_inside_the_margin() -> None:
    two = {"baseline": {0: 1.0, 1: 1.1}, "candidate": {0: 0.5, 1: 0.55}}
    out = tl.compare_final(two)
    assert not out["decisive"] and not out["equivalent"]  # two seeds carry no verdict, either way
    five = {
        "baseline": {i: 1.0 + 0.02 * i for i in range(5)},
        "candidate": {i: 0.5 + 0.02 * i for i in range(5)},
    }
    out = tl.compare_final(five)
    assert out["decisive"] and out["worse"] and out["diff"] == pytest.approx(-0.5) and out["poi"] == 0.0
    # Every seed 0.03 lower: the whole interval [-0.03, -0.03] lies inside ±10% of the baseline's IQM.
    tiny = {
        "baseline": {i: 1.0 + 0.02 * i for i in range(5)},
        "candidate": {i: 0.97 + 0.02 * i for i in range(5)},
    }
    out = tl.compare_final(tiny)
    assert out["equivalent"] and not out["decisive"]
    assert out["diff_ci"][0] == pytest.approx(-0.03) and out["diff_ci"][1] == pytest.approx(-0.03)


def test_compare_final_pairs_by_seed() -> None:
    # Seed-to-seed spread is large, but every candidate seed is 20% below its baseline seed: paired, decisive.
    base = {i: v for i, v in enumerate([1.0, 2.0, 3.0, 4.0, 5.0])}
    cand = {i: 0.8 * v for i, v in base.items()}
    out = tl.compare_final({"baseline": base, "candidate": cand})
    assert out["diff_ci"][1] < 0


def test_an_inconclusive_gap_is_noted_with_the_seeds_that_would_settle_it(tmp_path: Path) -> None:
    # A third-party PPO read CLEARED: difference about -46, interval about [-139, 17], lower on 4 of 5 seeds.
    base = [500.0, 420.0, 480.0, 300.0, 450.0]
    cand = [480.0, 300.0, 500.0, 150.0, 430.0]
    section = tl.learning(bench(), given=evidence(_runs(tmp_path, base), _runs(tmp_path, cand)))
    (finding,) = section.findings
    assert finding.status is Status.NOTED and finding.role == "symptom"
    low, high = finding.evidence.ci
    assert low < 0 < high and low <= finding.evidence.effect <= high
    assert (
        "inconclusive" in finding.evidence.summary and "per side would settle it" in finding.evidence.summary
    )
    assert finding.evidence.details["seeds_needed"] > 5


def test_a_lower_is_better_metric_reads_a_higher_candidate_as_worse(tmp_path: Path) -> None:
    loss = Metric("loss", direction="lower", primary=True)
    base = [1.0, 1.1, 0.9, 1.05, 0.95]
    cand = [v * 1.5 for v in base]
    section = tl.learning(
        bench(loss), given=evidence(_runs(tmp_path, base, "loss"), _runs(tmp_path, cand, "loss"))
    )
    (finding,) = section.findings
    assert finding.status is Status.CONFIRMED and "learns worse" in finding.evidence.summary
    assert "loss" in finding.hypothesis
    better = tl.learning(
        bench(loss), given=evidence(_runs(tmp_path, cand, "loss"), _runs(tmp_path, base, "loss"))
    )
    assert (
        better.findings[0].status is Status.NOTED and "learns better" in better.findings[0].evidence.summary
    )


def test_learning_without_the_metric_is_skipped_naming_how_to_report_it(tmp_path: Path) -> None:
    runs = _runs(tmp_path, [1.0, 2.0], name="return")
    (finding,) = tl.learning(bench(), given=evidence(runs, runs)).findings
    assert finding.status is Status.SKIPPED and "heart.get" in finding.evidence.summary
    assert "recorder.episode" in finding.remediation


def test_collapsed_runs_in_either_direction() -> None:
    rows = []
    curves = {
        0: [0.1, 0.5, 1.0, 1.0, 0.9, 1.0, 0.95, 0.9],  # holds its level
        1: [0.1, 0.6, 1.0, 1.0, 0.9, 0.2, 0.1, 0.1],  # gives back its improvement
        2: [0.0, 0.0, 0.6, 0.0, 0.0, 0.1, 0.0, 0.1],  # one lucky bin, damped by the smoothing, is no peak
    }
    for seed, curve in curves.items():
        rows += [{"side": "candidate", "seed": seed, "bin": b, "value": v} for b, v in enumerate(curve)]
    table = pd.DataFrame(rows)
    assert tl.collapsed_runs(table) == {"baseline": [], "candidate": [1]}
    # The same curves as a cost (lower is better, offset): still only seed 1 collapsed.
    cost = table.assign(value=10.0 - table["value"])
    assert tl.collapsed_runs(cost, sign=-1) == {"baseline": [], "candidate": [1]}


def test_stability_with_two_seeds_is_inconclusive(tmp_path: Path) -> None:
    runs = _runs(tmp_path, [1.0, 1.2])
    (finding,) = tl.stability(bench(), given=evidence(runs, runs)).findings
    assert finding.status is Status.NOTED and "needs 3+ seeds" in finding.evidence.summary


@pytest.mark.parametrize(
    ("base_seeds", "cand_seeds"), [([0, 1, 2], [3, 4, 5]), ([3, 4, 5], [0, 1, 2]), ([0, 2, 4], [1, 3, 5])]
)
def test_learning_and_stability_quiet_on_seed_shifted_pairs(
    make_wb, flagged, describe, base_seeds: list[int], cand_seeds: list[int]
) -> None:
    """The same subject on different seeds (an A/A with real seed-to-seed noise, three seeds a side so that a
    verdict is possible at all) must not be flagged."""
    from rlaudit.trainer.runs import run_data, runs

    wb = make_wb("builtin:reference")
    every = run_data(runs(wb, seeds=range(6)))["baseline"]
    by_seed = {r.seed: r for r in every}
    # Pair index i of one arm with index i of the other, as the paired statistics do.
    given = evidence(
        [by_seed[s] for s in base_seeds],
        [_reseeded(by_seed[s], b) for s, b in zip(cand_seeds, base_seeds, strict=True)],
    )
    sections = [tl.learning(wb, given=given), tl.stability(wb, given=given)]
    assert not flagged(sections), describe(flagged(sections))


def _reseeded(run: RunData, seed: int) -> RunData:
    return RunData(side="candidate", seed=seed, dir=run.dir, result=run.result)
