"""The tests of :mod:`rlaudit.curriculum.cost`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rlaudit.curriculum import cost
from rlaudit.stats import Interval


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


def test_growth_gap_combines_both_intervals() -> None:
    flat = {"relative_growth": 0.0, "growth_low": -0.1, "growth_high": 0.1}
    rising = {"relative_growth": 0.5, "growth_low": 0.4, "growth_high": 0.6}
    low, high = cost.growth_gap(flat, rising)
    assert low == pytest.approx(0.5 - np.hypot(0.1, 0.1)) and high == pytest.approx(0.5 + np.hypot(0.1, 0.1))
    assert cost.slope_gap(Interval(0.0, -0.1, 0.1), Interval(1.0, 0.9, 1.1)) == pytest.approx((1.0, 0.8, 1.2))


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
