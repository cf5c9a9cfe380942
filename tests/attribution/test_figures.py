"""Figures of attribution: learning curves averaged over seeds on one step grid, labels shown whole, empty
panels that say why."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rlaudit.attribution.arms import Arm, Attribution
from rlaudit.attribution.figures import (
    binned_curve,
    curves_plot,
    forest_plot,
    mean_curves,
    sps_waterfall,
    wrap,
)
from rlaudit.display import figure_png
from rlaudit.engine.store import ProbeResult
from rlaudit.metrics import Metric
from support.runs import fake_run

LONG_ARM = "fix curriculum.full_scan + fix loss.gae_bootstrap + restore optimizer config"


def _curve(steps, values):
    return pd.DataFrame({"step": steps, "value": values})


def test_one_run_is_binned_on_the_grid_and_its_interior_gaps_interpolated():
    edges = np.array([0.0, 10, 20, 30, 40])
    # points at 0 and 35 (and 40, the last edge, falls in the last bin): bins 1 and 2 are empty inside
    out = binned_curve(_curve([0, 35, 40], [0.0, 3.0, 5.0]), edges)
    assert np.allclose(out, [0.0, 4.0 / 3.0, 8.0 / 3.0, 4.0])
    # before the first point nothing is made up
    assert np.isnan(binned_curve(_curve([25], [1.0]), edges)[[0, 1, 3]]).all()


def test_seeds_with_different_steps_are_averaged_on_one_grid():
    a = _curve([0, 10, 20, 30, 40], [0.0, 1.0, 2.0, 3.0, 4.0])  # bins: 0 | 1 | 2 | 3, 4
    b = _curve([5, 15, 25, 35], [10.0, 11.0, 12.0, 13.0])  # the other seed's episodes end elsewhere
    out = mean_curves({"baseline": [a, b], "candidate": [_curve([8, 38], [1.0, 1.0])]}, bins=4)
    base = out[out["arm"] == "baseline"]
    assert base["step"].tolist() == [5.0, 15.0, 25.0, 35.0]  # one point per grid step: no zig-zag
    assert np.allclose(base["mean"], [5.0, 6.0, 7.0, 8.25]) and (base["n"] == 2).all()
    # two seeds: their range (a t interval at one degree of freedom would be 12.7 standard errors wide)
    assert np.allclose(base["low"], [0.0, 1.0, 2.0, 3.5]) and np.allclose(base["high"], [10, 11, 12, 13])
    assert (base["band"] == "range").all()
    cand = out[out["arm"] == "candidate"]
    assert cand["step"].tolist() == [5.0, 15.0, 25.0, 35.0]  # the same grid for every arm
    assert cand["low"].isna().all() and (cand["band"] == "").all()  # one seed: no band
    assert mean_curves({"x": [_curve([], [])]}).empty


def test_three_seeds_or_more_get_a_student_t_band():
    seeds = [_curve([0, 20], [v, v]) for v in (0.0, 3.0, 6.0)]
    out = mean_curves({"baseline": seeds}, bins=2)
    # mean 3, sd 3, n 3: t(0.975, 2 df) = 4.303, half width 4.303 * 3 / sqrt(3) = 7.453
    assert np.allclose(out["mean"], 3.0) and (out["band"] == "t").all()
    assert out["high"].iloc[0] - 3.0 == pytest.approx(4.303 * 3.0 / np.sqrt(3.0), rel=1e-3)


def _result(ranking=None, gaps=None, arms=(), primary=None):
    return Attribution(
        metrics=[(primary or Metric("heart.get")).name, "sps"],
        gaps=gaps or {},
        arms=list(arms),
        effects={},
        suspects=[],
        ranking=ranking or {},
        together={},
        spent={},
        notes=[],
        primary=primary or Metric("heart.get", primary=True),
    )


def _row(arm, point, verdict="cause"):
    return {"arm": arm, "suspects": [arm], "subsystems": ["loss"], "single": True, "point": point,
            "low": point - 0.2, "high": point + 0.2, "n": 2, "verdict": verdict}  # fmt: skip


def _texts(fig):
    texts = [
        t.get_text() for ax in fig.axes for t in (*ax.get_yticklabels(), *ax.texts, ax.title, ax.yaxis.label)
    ]
    legends = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    return [" ".join(t.split()) for t in texts + legends]


def test_long_arm_names_are_wrapped_never_cut():
    assert wrap(LONG_ARM).replace("\n", " ") == LONG_ARM and max(map(len, wrap(LONG_ARM).split("\n"))) <= 34
    metric = "charts/episodic_return_of_the_hardest_curriculum_level"
    assert wrap(metric, 40) == "charts/episodic_return_of_the_hardest_\ncurriculum_level"  # at a separator
    gaps = {
        "heart.get": {"measurable": True},
        "sps": {"measurable": True, "baseline": 60.0, "candidate": 30.0},
    }
    ranking = {
        "heart.get": [_row(LONG_ARM, 0.9), _row("gae", 0.1, "no effect")],
        "sps": [_row(LONG_ARM, 0.5)],
    }
    forest = forest_plot(_result(ranking, gaps))
    assert LONG_ARM in _texts(forest) and not any("..." in t for t in _texts(forest))
    waterfall = sps_waterfall(_result(ranking, gaps))
    assert LONG_ARM in _texts(waterfall)
    assert figure_png(forest) and figure_png(waterfall)


def test_curves_show_long_metric_names_whole_and_say_why_when_empty(tmp_path):
    metric = Metric("charts/episodic_return_of_the_hardest_curriculum_level", primary=True)
    runs = [fake_run(tmp_path, seed=s, metric=[1.0, 2.0, 3.0, 4.0], metric_name=metric.name) for s in (0, 1)]
    results = [
        ProbeResult("baseline", "x", "train_run", {}, ok=True, dir=r.dir, result=r.result) for r in runs
    ]
    arm = Arm("baseline", "baseline", results=results, measured=[{}, {}])
    fig = curves_plot(_result(arms=[arm], primary=metric))
    texts = _texts(fig)
    assert sum(metric.name in "".join(t.split()) for t in texts) == 2  # the title and the axis
    assert any(t.startswith("baseline (2 seeds, range)") for t in texts)
    # runs that never reported the metric, runs that failed, nothing at all: each says so
    other = Metric("heart.get", primary=True)
    assert any(
        "did not report heart.get" in t for t in _texts(curves_plot(_result(arms=[arm], primary=other)))
    )
    failed = ProbeResult("baseline", "x", "train_run", {}, ok=False, missing=["train"])
    empty = curves_plot(_result(arms=[Arm("baseline", "baseline", results=[failed], measured=[{}])]))
    assert any("no training run completed" in t for t in _texts(empty))
    assert any("No throughput measured" in t for t in _texts(sps_waterfall(_result())))
    notes = {"heart.get": {"note": "heart.get: the training runs did not report it"}}
    assert any("did not report it" in t for t in _texts(forest_plot(_result(gaps=notes))))
