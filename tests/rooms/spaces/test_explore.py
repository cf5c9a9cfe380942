"""10_spaces' feature picker: the histograms drawn are those of the picked feature's first-layer inputs, per
side and path; the shifted features come first; a subject with nothing to pick gets a muted line."""

from __future__ import annotations

import types

import matplotlib
import numpy as np
import pytest

from rlaudit.display import RichText
from rlaudit.engine.workbench import Pair
from rlaudit.env.plots import SIDE_COLORS
from rlaudit.spaces import explore

matplotlib.use("Agg")  # tests only: no display here


def side_arrays(rng: np.random.Generator, shift: float) -> dict[str, np.ndarray]:
    """Four features; feature 2's evaluation inputs are moved by ``shift`` standard deviations."""
    training = rng.normal(size=(256, 4)).astype(np.float32)
    evaluation = training.copy()
    evaluation[:, 2] = evaluation[:, 2] * 3.0 + shift
    raw = training * 10.0 + 5.0
    out = {}
    for name, rows in (("training", training), ("evaluation", evaluation), ("raw", raw)):
        out[f"{name}|rows"] = rows
        out[f"{name}|mean"] = rows.mean(axis=0).astype(float)
        out[f"{name}|std"] = rows.std(axis=0).astype(float)
    return out


def both() -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return {"baseline": side_arrays(rng, 0.0), "candidate": side_arrays(rng, 4.0)}


def drawn(ex, side: str, path: str) -> tuple[np.ndarray, np.ndarray]:
    stairs = ex._artists["steps"][(side, path)]
    data = stairs.get_data()
    return np.asarray(data.values), np.asarray(data.edges)


def test_the_shifted_feature_comes_first_and_names_its_side() -> None:
    arrays = both()
    order = explore.feature_order(arrays)
    assert order[0] == ("input[2] · shifted in baseline and candidate", 2)  # std ×3 on both, mean +4 in one
    assert sorted(i for _, i in order) == [0, 1, 2, 3]
    # a constant feature moved on one side comes after a varying one shifted on that side
    cand = arrays["candidate"]
    for path, value in (("training", 0.0), ("evaluation", 1.0)):
        cand[f"{path}|rows"][:, 0] = value
        cand[f"{path}|mean"][0], cand[f"{path}|std"][0] = value, 0.0
    cand["evaluation|rows"][:, 3] += 2.0
    cand["evaluation|mean"][3] += 2.0
    labels = [label for label, _ in explore.feature_order(arrays)]
    assert labels[:3] == [
        "input[2] · shifted in baseline and candidate",
        "input[3] · shifted in candidate",
        "input[0] · shifted in candidate",  # infinite SMD, but a constant
    ]


def test_every_control_moves_the_histograms_to_what_it_says() -> None:
    arrays = both()
    ex = explore.input_explorer(arrays, {"candidate": {"evaluation": "raw: no normalizer"}})
    ex.figure()
    assert ex.values["feature"] == 2
    for feature in (0, 3, 2):
        for bins in (5, 40):
            for same_x in (True, False):
                ex.set(feature=feature, bins=bins, same_x=same_x)
                for side in explore.SIDES:
                    for path in ("training", "evaluation"):
                        heights, edges = drawn(ex, side, path)
                        col = arrays[side][f"{path}|rows"][:, feature].astype(float)
                        expected, _ = np.histogram(col, bins=edges)
                        assert len(heights) == bins
                        np.testing.assert_allclose(heights, expected / len(col))
                        assert heights.sum() == pytest.approx(1.0)  # every input inside the range drawn
                        line = ex._artists["means"][(side, path)]
                        assert line.get_xdata()[0] == pytest.approx(col.mean())
                    assert (
                        ex._artists["axes"][side].get_title().startswith(f"{side}: input[{feature}] of 4\n")
                    )
                base_edges, cand_edges = (
                    drawn(ex, "baseline", "training")[1],
                    drawn(ex, "candidate", "training")[1],
                )
                assert np.array_equal(base_edges, cand_edges) == same_x
    # the candidate's evaluation inputs of feature 2 sit 4 to the right of its training inputs, drawn so
    ex.set(feature=2)
    assert ex._artists["means"][("candidate", "evaluation")].get_xdata()[0] > 3.0
    assert "raw: no normalizer" in ex._artists["axes"]["candidate"].get_xlabel()


def test_the_raw_toggle_adds_the_raw_observation_and_colours_follow_the_side() -> None:
    ex = explore.input_explorer(both())
    ex.figure()
    assert not ex._artists["steps"][("baseline", "raw")].get_visible()
    ex.set(raw=True, feature=1)
    heights, edges = drawn(ex, "baseline", "raw")
    assert ex._artists["steps"][("baseline", "raw")].get_visible() and heights.sum() == pytest.approx(1.0)
    assert edges[-1] >= both()["baseline"]["raw|rows"][:, 1].max() - 1e-6  # the range widens to hold it
    colour = matplotlib.colors.to_hex(ex._artists["steps"][("candidate", "training")].get_edgecolor())
    assert colour.lower() == SIDE_COLORS["candidate"].lower()
    assert ex.drawn == ex.values


def test_missing_rows_are_refused_and_the_workbench_reader_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    arrays = both()
    del arrays["candidate"]["evaluation|rows"]
    with pytest.raises(ValueError, match="candidate: no first-layer input rows for the evaluation path"):
        explore.input_explorer(arrays)

    from rlaudit.spaces import inputs

    result = types.SimpleNamespace(
        json=lambda name: {"paths": {"training": {}, "evaluation": {}}, "n": 256, "features": 28224},
        npz=lambda name: {k: v for k, v in arrays["baseline"].items() if not k.endswith("|rows")},
        ok=True,
    )
    pair = Pair(baseline=result, candidate=result)
    monkeypatch.setattr(inputs, "network_input_pair", lambda wb, trust=False: pair)
    got = explore.feature_explorer(types.SimpleNamespace())
    assert isinstance(got, RichText)
    assert "inputs were not kept for baseline and candidate" in got.text and "28224" in got.text


def test_the_probe_keeps_every_row_of_a_narrow_input_and_none_of_a_very_wide_one() -> None:
    from rlaudit.spaces.probes import INPUT_SAMPLE_VALUES, MIN_INPUT_ROWS, input_sample

    narrow = np.random.default_rng(0).normal(size=(1024, 4))
    kept = input_sample(narrow)
    assert kept.dtype == np.float32 and kept.shape == (1024, 4)
    np.testing.assert_allclose(kept, narrow, rtol=1e-6)
    wide = np.zeros((1024, INPUT_SAMPLE_VALUES // MIN_INPUT_ROWS))
    assert input_sample(wide).shape == (MIN_INPUT_ROWS, wide.shape[1])  # the budget, exactly
    assert input_sample(np.zeros((1024, 84 * 84 * 4))) is None  # a stacked Atari frame: too wide to sample
