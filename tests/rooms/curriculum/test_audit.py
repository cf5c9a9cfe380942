"""The curriculum room: synthetic scores, the probes on a toy curriculum, slope fits, trends, detection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rlaudit.curriculum import audit, common, cost, overhead, probes, sampling
from rlaudit.demo.faults import CATALOG
from rlaudit.engine.io import read_table
from rlaudit.probe import ProbeContext
from rlaudit.stats import Interval
from support.invariants import SUBJECTS_WITHOUT_AN_ENVIRONMENT, audited_without_an_environment
from support.load import aa_spec, busy_core
from support.probing import probe_context

CURRICULUM_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "curriculum")


class ToyCurriculum:
    """Samples tasks 0..n-1 with weights = 1 + last score; ``scan`` makes update O(pool) like case 004."""

    def __init__(self, pool: int, seed: int | None, scan: bool) -> None:
        self.pool = pool
        self.rng = np.random.default_rng(seed)
        self.weights = np.ones(8)
        self.scan = scan
        self.slots = list(range(pool))

    def sample(self) -> int:
        return int(self.rng.choice(8, p=self.weights / self.weights.sum()))

    def update(self, task: int, score: float) -> None:
        if self.scan:
            sum(1 for s in self.slots if s >= 0)  # reads every slot
        self.weights[task] = 1.0 + score


class ToySubject:
    def __init__(self, scan: bool = False) -> None:
        self.scan = scan

    def config(self) -> dict:
        return {"curriculum": {"max_tasks": 64}}

    def make_curriculum(self, config: dict, seed: int | None = None) -> ToyCurriculum:
        return ToyCurriculum(config["curriculum"]["max_tasks"], seed, self.scan)


def ctx_for(subject: Any, out: Path) -> ProbeContext:
    return probe_context(subject, out, ("config", "make_curriculum"))


def test_synthetic_scores_are_deterministic_learning_curves() -> None:
    first = [probes.synthetic_score(0, "3", k) for k in range(80)]
    assert first == [probes.synthetic_score(0, "3", k) for k in range(80)]
    assert all(0.0 <= s <= 1.0 for s in first)
    assert np.mean(first[-10:]) > np.mean(first[:5])  # it rises
    assert first != [probes.synthetic_score(1, "3", k) for k in range(80)]


def test_sampling_probe_reproduces_a_seeded_curriculum(tmp_path: Path) -> None:
    ctx = ctx_for(ToySubject(), tmp_path / "s")
    out = probes.sampling(ctx, seed=0, phases=2, samples_per_phase=200, episodes=50)
    assert out["seeded"] == "argument" and out["reproducible"] and out["tasks_seen"] == 8
    phases = __import__("json").loads((ctx.out / "open_loop.json").read_text())["phases"]
    assert len(phases) == 3 and sum(phases[1].values()) == 200
    assert sampling.pooled_counts(phases) == {
        k: phases[1].get(k, 0) + phases[2].get(k, 0) for k in set(phases[1]) | set(phases[2])
    }


def test_scaling_probe_varies_the_pool_through_the_config(tmp_path: Path) -> None:
    ctx = ctx_for(ToySubject(scan=True), tmp_path / "c")
    out = probes.scaling(ctx, seed=0, sizes=[16, 256, 4096], repeats=3, calls=8)
    assert out["pool_key"] == "curriculum.max_tasks" and out["sizes"] == [16, 256, 4096]
    timings = read_table(ctx.out / "timings")
    assert len(timings) == 9 and (timings["update_seconds"] > 0).all()


def test_complexity_names_and_slope_fits() -> None:
    assert cost.complexity(0.05) == "constant (or logarithmic)"
    assert cost.complexity(0.95) == "linear"
    sizes = [16, 64, 256, 1024, 4096]
    rng = np.random.default_rng(0)
    rows = []
    for r in range(4):
        for n in sizes:
            noise = rng.uniform(0.9, 1.1)
            rows.append(
                {"size": n, "repeat": r, "sample_seconds": 2e-6 * noise, "update_seconds": 1e-8 * n * noise}
            )
    fits = cost.fit_slopes(pd.DataFrame(rows), seed=0)
    assert abs(fits["sample"].point) < 0.05 and abs(fits["update"].point - 1.0) < 0.05
    assert cost.scaling_verdict(fits["sample"], fits["update"]) == "worse"
    assert cost.scaling_verdict(fits["update"], fits["sample"]) == "better"
    assert cost.scaling_verdict(Interval(0.1, 0.0, 0.2), Interval(0.3, 0.1, 0.5)) == "same"


def test_growth_sees_a_rising_cost_and_not_a_flat_one() -> None:
    episodes = np.arange(1, 13) * 50
    rising = pd.DataFrame({"episodes": episodes, "update_seconds": 1e-5 * (1 + episodes / 200)})
    flat = pd.DataFrame({"episodes": episodes, "update_seconds": 1e-5 * (1 + 0.01 * np.sin(episodes))})
    g = cost.growth(rising, "update_seconds")
    assert g["direction"] == "increasing" and g["relative_growth"] > 1.0
    assert cost.growth(flat, "update_seconds")["relative_growth"] < 0.05


@pytest.mark.parametrize("fault", CURRICULUM_FAULTS)
def test_curriculum_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "curriculum")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)
    assert any(f.id == "curriculum/scaling" for f in found), describe(found)


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    wb = bench(aa_spec())
    for seed in (0, 1):
        sections = audit.audit_all(wb, seed=seed)
        assert not flagged(sections), f"seed {seed}: " + describe(flagged(sections))


def test_cost_checks_stay_quiet_with_a_busy_core(bench: Any, flagged: Any, describe: Any) -> None:
    wb = bench(aa_spec())
    with busy_core() as proc:
        sections = [audit.scaling(wb, seed=7), audit.cost_trend(wb, seed=7), audit.overhead(wb, seed=7)]
        assert proc.poll() is None
    assert not flagged(sections), describe(flagged(sections))


def test_tvd_interval_of_two_samples_of_one_distribution_stays_below_the_margin() -> None:
    counts = {str(k): 625 for k in range(16)}  # 10,000 draws over 16 tasks
    point, low, high = sampling.tvd_interval(counts, dict(counts), seed=0)
    assert point == 0.0 and low == 0.0 and 0 < high < sampling.TVD_MARGIN
    skewed = {**counts, "0": 2625}
    assert sampling.tvd_interval(skewed, counts, seed=0)[1] > sampling.TVD_MARGIN


def test_growth_gap_combines_both_intervals() -> None:
    flat = {"relative_growth": 0.0, "growth_low": -0.1, "growth_high": 0.1}
    rising = {"relative_growth": 0.5, "growth_low": 0.4, "growth_high": 0.6}
    low, high = cost.growth_gap(flat, rising)
    assert low == pytest.approx(0.5 - np.hypot(0.1, 0.1)) and high == pytest.approx(0.5 + np.hypot(0.1, 0.1))
    assert cost.slope_gap(Interval(0.0, -0.1, 0.1), Interval(1.0, 0.9, 1.1)) == pytest.approx((1.0, 0.8, 1.2))


def test_overhead_verdict_weighs_the_share_a_costlier_curriculum_adds() -> None:
    # case 004: 150x per episode and three quarters of a step
    assert overhead.overhead_verdict(Interval(150.0, 130.0, 160.0), 0.06, 0.75)[0].value == "CONFIRMED"
    # a label per episode: 1.8x per episode, 4 points of a step more: flagged, but a medium cost
    status, severity, kind = overhead.overhead_verdict(Interval(1.8, 1.7, 1.9), 0.06, 0.10)
    assert (status.value, severity.value, kind) == ("SUSPECT", "MEDIUM", "costlier")
    assert overhead.overhead_verdict(Interval(1.01, 0.95, 1.08), 0.06, 0.06)[2] == "same"
    # 1.8x of a negligible share is the same in practice; a wide interval on a real share is open
    assert overhead.overhead_verdict(Interval(1.8, 1.7, 1.9), 0.001, 0.0018)[2] == "same"
    assert overhead.overhead_verdict(Interval(1.1, 0.8, 1.5), 0.10, 0.11)[2] == "open"


def test_a_subject_without_a_curriculum_is_skipped_naming_it() -> None:
    from types import SimpleNamespace

    from rlaudit.checks import Check, Missing

    none = SimpleNamespace(result={"has_curriculum": False})
    c = Check(audit.sampling.spec, SimpleNamespace(profile=None, metric=None))
    with pytest.raises(Missing, match="make_curriculum"):
        common.no_curriculum(c, {"baseline": none, "candidate": none})
    one = common.no_curriculum(c, {"baseline": SimpleNamespace(result={}), "candidate": none})
    assert one is not None and one.findings[0].status.value == "SUSPECT"


@pytest.mark.parametrize("subject", SUBJECTS_WITHOUT_AN_ENVIRONMENT)
def test_a_subject_without_an_environment_gets_a_finding_per_check_naming_what_is_missing(
    make_wb: Any, subject: str
) -> None:
    audited_without_an_environment(audit.audit_all, make_wb, subject)


def test_equal_slopes_over_the_common_pool_sizes_do_not_clear_a_size_built_on_one_side_only() -> None:
    from types import SimpleNamespace

    from rlaudit.checks import REGISTRY, Check
    from rlaudit.findings import Status

    c = Check(REGISTRY["curriculum/scaling"], SimpleNamespace(metric=None, profile=None))
    points = {s: {k: 0.1 for k in cost.CALLS} for s in ("baseline", "candidate")}
    gaps = {k: (-0.01, 0.01) for k in cost.CALLS}
    args = (c, points, gaps, 0.2, ("slope {b} vs {c}", cost.fmt), ("alike within ±{margin}", "open"))
    kwargs = {"details": {}, "rerun": "more repeats", "figure": "cost scaling"}
    assert cost.per_call_verdict(*args, **kwargs).status is Status.CLEARED
    # the candidate could not build the largest pool: its slopes rest on the small sizes only
    sizes = {
        "baseline": {"cost at 64 tasks": 1.0, "cost at 1024 tasks": 1.0},
        "candidate": {"cost at 64 tasks": 1.0},
    }
    finding = cost.per_call_verdict(*args, **kwargs, measured=sizes)
    assert finding.status is Status.SUSPECT
    assert "cost at 1024 tasks: on the baseline, not measured on the candidate" in finding.evidence.summary
