"""The 08_init layer picker: the picked parameter's spectra and entry stds, both sides, against the PPO
expectation; the toggle rescales by the expected gain; no evidence gives a message, not a figure."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from rlaudit.init import explore as init_explore

matplotlib.use("Agg")  # tests only: no display here

SEEDS = (0, 1, 2)


def orthogonal(rng: np.random.Generator, out: int, inp: int, gain: float) -> np.ndarray:
    q, _ = np.linalg.qr(rng.normal(size=(max(out, inp), min(out, inp))))
    return gain * (q if out >= inp else q.T)


def synthetic() -> tuple[pd.DataFrame, dict, dict]:
    """hidden 8x4 orthogonal √2 on both sides; policy head 2x8 orthogonal 0.01 (baseline) against PyTorch's
    default U(±1/√8) (candidate); a zero bias on both."""
    rng = np.random.default_rng(0)
    made = {"baseline": {}, "candidate": {}}
    for side in made:
        for seed in SEEDS:
            made[side][(seed, "body.weight")] = orthogonal(rng, 8, 4, math.sqrt(2))
            made[side][(seed, "pi.weight")] = (
                orthogonal(rng, 2, 8, 0.01)
                if side == "baseline"
                else rng.uniform(-1, 1, (2, 8)) / math.sqrt(8)
            )
            made[side][(seed, "body.bias")] = np.zeros(8)
    params, singular = {}, {}
    for side, arrays in made.items():
        params[side] = pd.DataFrame(
            [{"seed": seed, "name": name, "std": float(v.std())} for (seed, name), v in arrays.items()]
        )
        singular[side] = {
            f"{seed}|{name}": np.linalg.svd(v, compute_uv=False)
            for (seed, name), v in arrays.items()
            if v.ndim == 2
        }
    table = pd.DataFrame(
        [
            {"parameter": "body.weight", "candidate": "body.weight", "role": "hidden", "shape b": "8x4",
             "shape c": "8x4", "scheme b": "orthogonal, gain 1.41 (√2)", "scheme c": "orthogonal, gain 1.41 (√2)",
             "same": True},
            {"parameter": "body.bias", "candidate": "body.bias", "role": "bias", "shape b": "8", "shape c": "8",
             "scheme b": "zeros", "scheme c": "zeros", "same": True},
            {"parameter": "pi.weight", "candidate": "pi.weight", "role": "policy head", "shape b": "2x8",
             "shape c": "2x8", "scheme b": "orthogonal, gain 0.01", "scheme c": "PyTorch default", "same": False},
        ]
    )  # fmt: skip
    return table, params, singular


def visible_lines(lines: list) -> list[np.ndarray]:
    return [np.asarray(line.get_ydata(), float) for line in lines if line.get_visible()]


def test_the_picker_shows_the_picked_parameter_against_the_expected_gain() -> None:
    table, params, singular = synthetic()
    ex = init_explore.layer_picker(init_explore.layers(table, params, singular))
    # starts on the parameter initialized differently, marked in the picker
    assert ex.values["parameter"] == 2
    assert ex.control("parameter").options[2][0] == "≠ pi.weight (policy head)"
    ex.figure()
    art = ex._artists
    base = visible_lines(art["lines"]["baseline"])
    cand = visible_lines(art["lines"]["candidate"])
    assert len(base) == len(cand) == len(SEEDS)
    assert all(np.allclose(v, 0.01) for v in base)  # flat at the gain: orthogonal 0.01
    assert not any(np.allclose(v, v[0]) for v in cand)  # the uniform matrix's spectrum is not flat
    assert art["expected_sv"].get_visible() and art["expected_sv"].get_ydata()[0] == pytest.approx(0.01)
    assert "initialized differently" in art["ax_sv"].get_title()
    assert "PyTorch default" in art["caption"].get_text()
    _, stds = art["points"]["candidate"].get_data()
    assert np.allclose(stds, params["candidate"].query("name == 'pi.weight'").sort_values("seed")["std"])
    # orthogonal 2x8 at gain 0.01: squared norm 2 * 0.01², over 16 entries: std 0.01 / √8
    assert art["expected_std"]["baseline"].get_ydata()[0] == pytest.approx(0.01 / math.sqrt(8))

    ex.set(relative=True)
    assert all(np.allclose(v, 1.0) for v in visible_lines(art["lines"]["baseline"]))
    assert art["expected_sv"].get_ydata()[0] == pytest.approx(1.0)
    assert art["ax_sv"].get_ylabel() == "singular value / expected gain"

    ex.set(parameter=0, relative=False)
    assert all(np.allclose(v, math.sqrt(2)) for v in visible_lines(art["lines"]["candidate"]))
    assert art["expected_sv"].get_ydata()[0] == pytest.approx(math.sqrt(2))
    assert "same scheme and gain" in art["ax_sv"].get_title()

    ex.set(parameter=1)  # a zero bias: no spectrum, std 0 measured and expected
    assert not visible_lines(art["lines"]["baseline"]) and not art["expected_sv"].get_visible()
    assert "no spectrum" in art["vector_note"].get_text()
    assert np.all(art["points"]["baseline"].get_data()[1] == 0.0)
    assert art["expected_std"]["candidate"].get_ydata()[0] == 0.0
    assert ex.drawn == {"parameter": 1, "relative": False}


def test_a_parameter_one_side_lacks_draws_only_the_other_side() -> None:
    table, params, singular = synthetic()
    table.loc[2, "candidate"] = "—"
    table.loc[2, "shape c"] = ""
    ex = init_explore.layer_picker(init_explore.layers(table, params, singular))
    ex.figure()
    art = ex._artists
    assert len(visible_lines(art["lines"]["baseline"])) == 3 and not visible_lines(art["lines"]["candidate"])
    assert art["points"]["candidate"].get_data()[0].size == 0
    assert not art["expected_std"]["candidate"].get_visible()


def test_no_evidence_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(init_explore, "evidence", lambda wb: None)
    shown = init_explore.scheme_explorer(object())
    assert "No layer picker" in repr(shown)
