"""01_agents' module picker: the probe's histograms re-binned onto common edges keep every value, the drawn
histogram is the picked module's for the picked seed and bin count, the modules whose activations differ are
marked, and a pair it cannot show gets a line saying why."""

from __future__ import annotations

import types

import matplotlib
import numpy as np
import pytest

from rlaudit.agents import explore as agents_explore
from rlaudit.agents.nets import activation_histogram, activation_stats
from rlaudit.engine.store import ProbeResult
from rlaudit.engine.workbench import Pair

matplotlib.use("Agg")  # tests only: no display here

SEEDS = (0, 1)


CLS = {("baseline", "net.0"): "Linear", ("candidate", "net.0"): "Linear"}
CLS.update({("baseline", "net.1"): "Tanh", ("candidate", "net.1"): "ReLU"})


def raw(side: str, path: str, seed: int) -> np.ndarray:
    """A layer's outputs (256 observations x 16 units): ``net.0`` the same linear outputs on both sides;
    ``net.1`` tanh on the baseline, ReLU with half its units dead (zero on every observation) on the
    candidate; each seed its own draw and scale (seed 1 twice as wide)."""
    x = np.random.default_rng(seed).normal(size=(256, 16)) * (1 + seed)
    if path == "net.1":
        if side == "baseline":
            return np.tanh(x)
        x[:, :8] = -1.0
        return np.maximum(x, 0.0)
    return x


def columns(side: str) -> tuple[dict, dict]:
    """The probe's ``histograms.json`` and ``activations.json`` columns for one side."""
    hist = {k: [] for k in ("seed", "path", "low", "high", "zeros", "n", "counts")}
    stats = {k: [] for k in ("seed", "path", "mean", "std", "dead", "saturated")}
    for seed in SEEDS:
        for path in ("net.0", "net.1"):
            values = raw(side, path, seed)
            record = activation_histogram(values)
            hist["seed"].append(seed)
            hist["path"].append(path)
            for key in ("low", "high", "zeros", "n", "counts"):
                hist[key].append(record[key])
            stats["seed"].append(seed)
            stats["path"].append(path)
            for key, value in activation_stats(values, CLS[(side, path)]).items():
                if key in stats:
                    stats[key].append(value)
    return hist, stats


MODULES = [("net.0 · Linear", "net.0", "net.0"), ("net.1 · Tanh | ReLU", "net.1", "net.1")]


def explorer() -> agents_explore.Explorer:
    (hb, sb), (hc, sc) = columns("baseline"), columns("candidate")
    return agents_explore.histogram_explorer(MODULES, hb, hc, sb, sc)


def drawn(ex: agents_explore.Explorer, side: str) -> tuple[np.ndarray, np.ndarray]:
    patch = ex._artists["steps"][side]
    data = patch.get_data()
    return np.asarray(data.values), np.asarray(data.edges)


def test_rebinning_spreads_values_within_their_bin_and_puts_zeros_at_zero() -> None:
    # two values in [0, 0.5), two in [0.5, 1], one exact zero; quarter-wide bins
    out = agents_explore.rebin([2, 2], 0.0, 1.0, 1, np.linspace(0.0, 1.0, 5))
    np.testing.assert_allclose(out, [2.0, 1.0, 1.0, 1.0])
    # a layer with one value everywhere lands in the bin that holds it
    np.testing.assert_allclose(agents_explore.rebin([0, 3, 0], 0.7, 0.7, 0, np.linspace(0, 1, 3)), [0, 3])


def test_the_probe_histogram_counts_every_value_and_the_exact_zeros_apart() -> None:
    values = np.array([0.0, 0.0, 1.0, 2.0, 3.0, np.nan])
    record = activation_histogram(values, bins=2)
    assert record["zeros"] == 2 and record["n"] == 5  # the NaN is not a value
    assert record["counts"] == [1, 2] and (record["low"], record["high"]) == (1.0, 3.0)


def test_the_histogram_is_the_picked_modules_for_the_picked_seed_and_bins() -> None:
    ex = explorer()
    # net.1 is marked (half its units are dead on the candidate), net.0 is not;
    # the report starts on the module whose distributions differ most
    labels = [label for label, _ in ex.control("module").options]
    assert labels == ["net.0 · Linear", "net.1 · Tanh | ReLU  ◆ differs"]
    assert ex.values["module"] == 1
    ex.figure()
    for seed, bins in (("all", 40), (1, 80), (0, 20)):
        ex.set(seed=seed, bins=bins)
        for side in ("baseline", "candidate"):
            values, edges = drawn(ex, side)
            assert len(values) == bins
            truth = np.concatenate([raw(side, "net.1", s).ravel() for s in SEEDS if seed in ("all", s)])
            expected = np.histogram(truth, bins=edges)[0] / truth.size
            assert values.sum() == pytest.approx(1.0)
            np.testing.assert_allclose(values, expected, atol=0.01)  # re-binned from 128 finer bins
        candidate, edges = drawn(ex, "candidate")
        holds_zero = np.searchsorted(edges, 0.0, side="right") - 1
        assert candidate[holds_zero] >= 0.74  # the dead units' zeros and half the live ones
    note = ex._artists["note"].get_text()
    exact = raw("candidate", "net.1", 0)
    assert f"mean {exact.mean():.3g}, std {exact.std():.3g}" in note and "1 seed)" in note

    ex.set(module=0, seed="all", log_y=True)
    base, _ = drawn(ex, "baseline")
    cand, _ = drawn(ex, "candidate")
    np.testing.assert_array_equal(base, cand)  # the same layer outputs on both sides
    assert ex._artists["ax"].get_yscale() == "log"
    assert ex._artists["ax"].get_title().startswith("net.0 · Linear")
    assert ex.drawn == {"module": 0, "seed": "all", "bins": 20, "log_y": True}


def test_a_module_only_one_side_has_is_drawn_for_that_side_alone() -> None:
    (hb, sb), (hc, sc) = columns("baseline"), columns("candidate")
    modules = [*MODULES, ("net.1 (baseline only) · Tanh", "net.1", None)]
    ex = agents_explore.histogram_explorer(modules, hb, hc, sb, sc)
    ex.figure()
    ex.set(module=2)
    assert ex._artists["steps"]["baseline"].get_visible()
    assert not ex._artists["steps"]["candidate"].get_visible()
    assert "candidate: no such module" in ex._artists["note"].get_text()
    assert "◆ differs" in dict((v, k) for k, v in ex.control("module").options)[2]


def fake_wb(pair: Pair) -> types.SimpleNamespace:
    profile = types.SimpleNamespace(seeds=2, rollout_steps=64)
    return types.SimpleNamespace(profile=profile, run=lambda probe, **params: pair)


def test_a_pair_it_cannot_show_gets_a_line_saying_why(tmp_path) -> None:
    def failed(side: str) -> ProbeResult:
        return ProbeResult(side=side, spec="x", probe="p", params={}, ok=False, missing=["make_policy"])

    out = agents_explore.activation_explorer(
        fake_wb(
            Pair(
                baseline=failed("baseline"),
                candidate=ProbeResult(
                    side="candidate", spec="x", probe="p", params={}, ok=True, dir=tmp_path
                ),
            )
        )
    )
    assert out.text.startswith("No module picker") and "on the baseline (" in out.text
    with pytest.raises(ValueError, match="no module has an activation histogram"):
        agents_explore.histogram_explorer([("x", "x", "x")], columns("baseline")[0], columns("candidate")[0])


def test_a_module_is_marked_only_when_the_check_would_call_it_different() -> None:
    def record(dead: float, std: float) -> dict:
        return {"low": -1.0, "high": 1.0, "zeros": 0, "n": 10, "counts": [5, 5], "dead": dead, "std": std}

    def judged(b: dict, c: dict) -> bool:
        return agents_explore.judged_different({"baseline": {0: b}, "candidate": {0: c}})

    assert not judged(record(0.0, 1.0), record(0.05, 1.4))  # within DEAD_JUMP and STD_RATIO
    assert judged(record(0.0, 1.0), record(0.10, 1.0))  # dead fraction jumps by DEAD_JUMP
    assert judged(record(0.0, 1.0), record(0.0, 1.6))  # scale beyond x1.5
    assert judged(record(0.0, 1.0), record(0.0, 0.6))  # and below x1/1.5
