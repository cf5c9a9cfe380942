"""The trainer room: runtime geometry from recorder tables, minibatch composition, speed in calibrated CPU time
with the subject's own phases, learning verdicts that clear only on evidence (direction-aware), collapses, and
the detection matrix for the trainer faults (with identical, seed-shifted and minimal pairs quiet)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rlaudit.demo import faults as catalog
from rlaudit.findings import Status
from rlaudit.metrics import Metric
from rlaudit.recorder import MINIBATCH_UPDATES, Recorder
from rlaudit.trainer import geometry as tg
from rlaudit.trainer import learning as tl
from rlaudit.trainer import minibatches as tm
from rlaudit.trainer import speed as ts
from rlaudit.trainer.runs import RunData
from support.runs import bench, evidence, fake_run

# ---------------------------------------------------------------------------------------------------------------
# Figure helpers the rooms share
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "grid", "shown"), [(0, (1, 1), 0), (1, (1, 1), 1), (4, (2, 3), 4), (6, (2, 3), 6)]
)
def test_panels_wrap_at_three_and_hide_the_unused_axes(n: int, grid: tuple[int, int], shown: int) -> None:
    from rlaudit.trainer.plots import panels

    fig, axes = panels(n, width=2.0, height=1.0)
    assert len(axes) == shown and all(ax.get_visible() for ax in axes)
    everything = fig.get_axes()
    assert len(everything) == grid[0] * grid[1]
    assert sum(ax.get_visible() for ax in everything) == shown
    assert tuple(fig.get_size_inches()) == (2.0 * grid[1], 1.0 * grid[0])


# ---------------------------------------------------------------------------------------------------------------
# Geometry
# ---------------------------------------------------------------------------------------------------------------


def test_runtime_geometry_reads_envs_batch_and_optimizer_steps(tmp_path: Path) -> None:
    run = fake_run(tmp_path, num_envs=14, num_steps=64, rollouts=3, opt_steps=16)
    geo = tg.runtime_geometry(run)
    assert geo["num_envs"] == 14 and geo["batch"] == 896 and geo["opt_steps_per_rollout"] == 16
    assert geo["rollout_length"] == 64 and geo["epochs"] == pytest.approx(4.0)
    assert geo["updates_per_million"] == pytest.approx(1e6 / 896)


def test_config_geometry_derives_batch_and_optimizer_steps() -> None:
    geo = tg.config_geometry(
        {"trainer": {"num_envs": 64, "num_steps": 64, "num_minibatches": 4, "update_epochs": 4}}
    )
    assert geo["batch"] == 4096 and geo["minibatch_size"] == 1024 and geo["opt_steps_per_rollout"] == 16
    assert geo["num_envs_key"] == "trainer.num_envs"


def test_geometry_table_shows_the_heuristic_as_numbers(tmp_path: Path) -> None:
    data = {
        "baseline": [fake_run(tmp_path, num_envs=64, num_steps=64, rollouts=2, opt_steps=16)],
        "candidate": [fake_run(tmp_path, num_envs=14, num_steps=64, rollouts=2, opt_steps=16, seed=1)],
    }
    table, _per_side = tg.geometry_table(data)
    row = table.set_index("quantity").loc["environments"]
    assert (
        row["baseline config"],
        row["baseline runtime"],
        row["candidate config"],
        row["candidate runtime"],
    ) == (64, 64, 64, 14)


def test_the_same_ignored_config_on_both_sides_gets_the_same_severity(tmp_path: Path) -> None:
    def side(seed: int) -> list[RunData]:
        return [fake_run(tmp_path, num_envs=14, num_steps=64, rollouts=2, opt_steps=16, seed=seed)]

    one = {f.id: f for f in tg.geometry(bench(), given=evidence(side(0), side(1))).findings}
    assert {f.status for f in one.values()} == {Status.NOTED}
    assert one["trainer/geometry-baseline"].severity == one["trainer/geometry-candidate"].severity
    wide = [fake_run(tmp_path, num_envs=64, num_steps=64, rollouts=2, opt_steps=16, seed=2)]
    only = {f.id: f.status for f in tg.geometry(bench(), given=evidence(wide, side(3))).findings}
    assert only == {"trainer/geometry-candidate": Status.CONFIRMED}


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


# ---------------------------------------------------------------------------------------------------------------
# Speed: calibrated CPU time, the subject's own phases
# ---------------------------------------------------------------------------------------------------------------


def _timed(tmp: Path, seed: int, sps_cpu: float, calibration: float = 1e-3, phases: bool = True) -> RunData:
    tables = {}
    if phases:
        tables["phases"] = {
            "name": ["collect", "collect/step_env", "learn"],
            "count": [2, 16, 2],
            "seconds": [0.5, 0.3, 0.4],
        }
    summary = {"steps": 1000, "seconds": 1.0, "sps": 1000.0, "sps_cpu": sps_cpu}
    return fake_run(tmp, seed=seed, summary=summary, calibration=calibration, tables=tables)


def test_speed_compares_calibrated_cpu_time_and_needs_three_runs(tmp_path: Path) -> None:
    base = [_timed(tmp_path, i, 1000 + 10 * i) for i in range(3)]
    slow = [_timed(tmp_path, i, 500 + 5 * i) for i in range(3)]
    (finding,) = ts.speed(bench(), given=evidence(base, slow)).findings
    assert finding.status is Status.CONFIRMED and finding.evidence.effect == pytest.approx(0.5, abs=0.02)
    assert finding.role == "symptom"
    (two,) = ts.speed(bench(), given=evidence(base[:2], slow[:2])).findings
    assert two.status is Status.NOTED  # the same gap, too few runs
    close = [_timed(tmp_path, i, 990 + 10 * i) for i in range(3)]
    (same,) = ts.speed(bench(), given=evidence(base, close)).findings
    assert same.status is Status.CLEARED


def test_a_side_trained_on_a_busy_machine_is_not_charged_for_it(tmp_path: Path) -> None:
    # The candidate's runs took 30% more CPU time per step, and so did the calibration workload beside them.
    base = [_timed(tmp_path, i, 1000 + 10 * i) for i in range(3)]
    loaded = [_timed(tmp_path, i, (1000 + 10 * i) / 1.3, calibration=1.3e-3) for i in range(3)]
    (finding,) = ts.speed(bench(), given=evidence(base, loaded)).findings
    assert finding.status is Status.CLEARED and finding.evidence.effect == pytest.approx(1.0)


def test_phase_table_shows_the_phases_the_subject_timed(tmp_path: Path) -> None:
    run = _timed(tmp_path, 0, 1000.0)
    times = ts.phase_times(run)
    assert times == pytest.approx({"collect": 0.5, "collect/step_env": 0.3, "learn": 0.4, "other": 0.1})
    table = ts.phase_table({"baseline": [run], "candidate": [run]}).set_index("phase")
    assert list(table.index) == ["collect", "collect/step_env", "learn", "other"]
    assert table.loc["collect", "baseline share"] == pytest.approx(0.5)
    bare = _timed(tmp_path, 1, 1000.0, phases=False)
    assert ts.phase_times(bare) == {}
    (finding,) = ts.speed(bench(), given=evidence([bare], [bare])).findings
    assert finding.status is Status.NOTED


def test_speed_without_recorded_steps_is_skipped(tmp_path: Path) -> None:
    runs = [fake_run(tmp_path, summary={"steps": 0, "seconds": 0.0, "sps_cpu": 0.0})]
    (finding,) = ts.speed(bench(), given=evidence(runs, runs)).findings
    assert finding.status is Status.SKIPPED and "recorder" in finding.remediation


# ---------------------------------------------------------------------------------------------------------------
# Minibatch composition
# ---------------------------------------------------------------------------------------------------------------


def test_random_span_by_hand() -> None:
    # Two of three items: ranges 1, 2, 1 -> mean 4/3; the span counts both ends: (4/3 + 1) / 3.
    assert tm.random_span(2, 3) == pytest.approx(7 / 9)


def _minibatches(order: str, batch: int = 64, size: int = 16, epochs: int = 2, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    rows: dict[str, list[int]] = {k: [] for k in ("step", "epoch", "minibatch", "position", "index")}
    fixed = rng.permutation(batch)
    for epoch in range(epochs):
        inds = {
            "shuffled": rng.permutation(batch),
            "contiguous": np.arange(batch),
            "once": fixed,
            "replacement": rng.integers(0, batch, batch),
        }[order]
        for k in range(batch // size):
            part = inds[k * size : (k + 1) * size]
            rows["step"] += [batch] * size
            rows["epoch"] += [epoch] * size
            rows["minibatch"] += [k] * size
            rows["position"] += list(range(size))
            rows["index"] += part.tolist()
    return rows


def test_composition_tells_shuffled_from_contiguous_from_not_reshuffled() -> None:
    shuffled = tm.composition(pd.DataFrame(_minibatches("shuffled")))
    assert shuffled["coverage"] == 1.0 and shuffled["repeated"] == 0.0 and shuffled["locality"] > 0.8
    contiguous = tm.composition(pd.DataFrame(_minibatches("contiguous")))
    assert contiguous["repeated"] == 1.0 and contiguous["locality"] == pytest.approx(
        (16 / 64) / tm.random_span(16, 64)
    )
    assert set(tm.problems(contiguous)) == {"locality", "repeated"}
    once = tm.composition(pd.DataFrame(_minibatches("once")))
    assert set(tm.problems(once)) == {"repeated"}
    drawn = tm.composition(pd.DataFrame(_minibatches("replacement")))
    assert set(tm.problems(drawn)) == {"coverage"} and drawn["duplicates"] > 0.2


def test_minibatch_check_flags_the_candidate_and_skips_a_trainer_that_does_not_report(tmp_path: Path) -> None:
    def side(order: str, seed: int) -> list[RunData]:
        return [fake_run(tmp_path, seed=seed, tables={"minibatches": _minibatches(order, seed=seed)})]

    (bad,) = tm.minibatches(bench(), given=evidence(side("shuffled", 0), side("contiguous", 1))).findings
    assert bad.status is Status.SUSPECT and "contiguous" in bad.evidence.summary
    (same,) = tm.minibatches(bench(), given=evidence(side("shuffled", 0), side("shuffled", 1))).findings
    assert same.status is Status.CLEARED
    (both,) = tm.minibatches(bench(), given=evidence(side("once", 0), side("once", 1))).findings
    assert both.status is Status.NOTED
    silent = [fake_run(tmp_path, seed=5)]
    (skipped,) = tm.minibatches(bench(), given=evidence(side("shuffled", 0), silent)).findings
    assert skipped.status is Status.SKIPPED and "recorder.minibatch" in skipped.remediation
    assert "candidate" in skipped.evidence.summary


def test_the_recorder_keeps_the_minibatches_of_the_first_updates(tmp_path: Path) -> None:
    from rlaudit.engine.io import read_table

    rec = Recorder(tmp_path)
    for update in range(MINIBATCH_UPDATES + 2):
        # no step reported between updates: a new update starts when the epoch goes back to 0
        for epoch in range(2):
            for k in range(2):
                rec.minibatch(epoch, np.arange(4 * k, 4 * k + 4) + update)
    rec.close()
    table = read_table(tmp_path / "minibatches")
    assert len(table) == MINIBATCH_UPDATES * 2 * 2 * 4
    first = table.iloc[:16]
    assert first["minibatch"].tolist() == [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4
    assert first["position"].tolist() == list(range(4)) * 4
    assert table["index"].max() == MINIBATCH_UPDATES - 1 + 7


# ---------------------------------------------------------------------------------------------------------------
# Detection matrix and quiet pairs
# ---------------------------------------------------------------------------------------------------------------

TRAINER_FAULTS = {f.id for f in catalog.CATALOG.values() if f.subsystem == "trainer"}
CAUGHT_BY = {
    "trainer.num_envs_heuristic": "trainer/geometry",
    "trainer.debug_batch": "trainer/geometry",
    "trainer.minibatch_no_shuffle": "trainer/minibatches",
}


def test_every_trainer_fault_has_a_check_that_should_catch_it() -> None:
    assert set(CAUGHT_BY) == TRAINER_FAULTS


@pytest.mark.parametrize("fault", sorted(TRAINER_FAULTS))
def test_trainer_fault_is_flagged(make_wb, flagged, describe, fault: str) -> None:
    from rlaudit.trainer import audit_all

    sections = audit_all(make_wb(f"builtin:reference+{fault}"))
    found = flagged(sections, "trainer")
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"
    caught = [f for f in found if f.id.startswith(CAUGHT_BY[fault]) and f.role == "mechanism"]
    assert caught, describe(found)


def test_identical_pair_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit.trainer import audit_all

    sections = audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]


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


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize(
    ("spec", "status"), [("minimal_train_subject.py", None), ("config_only_subject.py", "SKIPPED")]
)
def test_minimal_subjects_end_every_check_in_a_finding(make_wb, spec: str, status: str | None) -> None:
    from rlaudit.trainer import audit_all
    from rlaudit.trainer.audit import CHECKS

    path = str(FIXTURES / spec)
    sections = audit_all(make_wb(path, baseline=path))
    assert len(sections) == len(CHECKS) and all(s.findings for s in sections)
    statuses = {f.id: f.status.value for s in sections for f in s.findings}
    assert "ERROR" not in statuses.values(), statuses
    if status:
        assert set(statuses.values()) == {status}, statuses
    else:
        assert statuses["trainer/minibatches"] == "SKIPPED" and statuses["trainer/learning"] == "NOTED"


@pytest.mark.expensive
def test_speed_raises_no_flag_on_an_aa_pair_with_a_busy_core(make_wb, flagged, describe) -> None:
    """The baseline's runs measured first (and then served from the cache), the candidate's (the same subject
    under another fingerprint) measured while another process keeps a core busy: no speed flag."""
    from rlaudit.trainer.runs import TrainingRuns, runs
    from support.load import aa_spec, busy_core

    seeds = [20, 21, 22]  # fresh seeds: every run is measured by this test
    runs(make_wb("builtin:reference"), seeds=seeds)
    wb = make_wb(aa_spec("speed"))
    with busy_core() as proc:
        given = TrainingRuns.of(runs(wb, seeds=seeds))
        assert proc.poll() is None
    sections = [ts.speed(wb, given=given)]
    assert not flagged(sections), describe(flagged(sections))
    assert sections[0].findings[0].status is not Status.ERROR
