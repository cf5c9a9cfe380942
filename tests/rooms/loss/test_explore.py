"""The 09_loss variant and probe picker: each side's answer against the picked advantage estimator on the picked
staged input and quantity; a side computing that variant lies on the diagonal; no answers give a message."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from rlaudit.loss import explore as loss_explore
from rlaudit.loss.gae import VARIANTS, make_gae_inputs, make_impulse_inputs

matplotlib.use("Agg")  # tests only: no display here

GAMMA, LAM = 0.99, 0.95


def answers(variant: str) -> loss_explore.SideAnswers:
    """A side whose compute_advantages is ``variant`` (given truncation flags), on both staged inputs."""
    fn = next(v.fn for v in VARIANTS if v.name == variant)
    inputs = {}
    for name, a in (("random", make_gae_inputs(0)), ("impulse", make_impulse_inputs())):
        adv, ret = fn(a["rewards"], a["values"], a["dones"], a["next_value"], GAMMA, LAM, a["truncated"],
                      a["final_values"])  # fmt: skip
        inputs[name] = {**a, "advantages": adv, "returns": ret}
    return loss_explore.SideAnswers(GAMMA, LAM, True, inputs, (variant,))


def max_off_diagonal(ex, side: str) -> float:
    xy = ex._artists["scatter"][side].get_offsets()
    return float(np.max(np.abs(xy[:, 1] - xy[:, 0])))


def test_the_picker_puts_the_side_computing_the_variant_on_the_diagonal() -> None:
    sides = {"baseline": answers("correct"), "candidate": answers("bootstrap_current")}
    ex = loss_explore.variant_picker(sides)
    # starts on the candidate's mistake (case 003's bootstrap from V(s_t))
    assert ex.values == {"variant": "bootstrap_current", "probe": "random:advantages"}
    ex.figure()
    art = ex._artists
    assert max_off_diagonal(ex, "candidate") == pytest.approx(0.0, abs=1e-9)
    assert max_off_diagonal(ex, "baseline") > 0.1
    assert art["axes"]["candidate"].get_title().startswith("candidate: matches")
    assert art["axes"]["baseline"].get_title().startswith("baseline: differs")
    assert art["scatter"]["baseline"].get_offsets().shape == (64 * 8, 2)
    assert "V(s_t)" in art["caption"].get_text()

    ex.set(variant="correct")
    assert max_off_diagonal(ex, "baseline") == pytest.approx(0.0, abs=1e-9)
    assert art["axes"]["candidate"].get_title().startswith("candidate: differs")
    # the step panel: the environment where a side departs most, its episode ends marked
    col = int(art["ax_t"].get_title().split()[1])
    a = sides["candidate"].inputs["random"]
    _, y = art["subject"]["candidate"].get_data()
    assert np.allclose(y, a["advantages"][:, col])
    marked = {round(seg[0][0]) for seg in art["ends"].get_segments()} | {
        round(seg[0][0]) for seg in art["truncs"].get_segments()
    }
    assert marked == set(np.flatnonzero(a["dones"][:, col]))

    ex.set(probe="impulse:returns")
    xy = art["scatter"]["baseline"].get_offsets()
    assert xy.shape == (16 * 2, 2)
    _, y = art["subject"]["baseline"].get_data()
    imp = sides["baseline"].inputs["impulse"]
    assert np.allclose(y, imp["returns"][:, col := int(art["ax_t"].get_title().split()[1])])
    assert art["ax_t"].get_ylabel() == "returns"
    assert ex.drawn == {"variant": "correct", "probe": "impulse:returns"}


def test_a_truncation_variant_is_not_testable_without_truncation_flags() -> None:
    base = answers("correct")
    base.truncation = False
    ex = loss_explore.variant_picker({"baseline": base, "candidate": answers("truncation_as_termination")})
    assert ex.values["variant"] == "truncation_as_termination"
    ex.figure()
    art = ex._artists
    assert art["scatter"]["baseline"].get_offsets().shape[0] == 0
    assert "not testable" in art["note"]["baseline"].get_text()
    assert max_off_diagonal(ex, "candidate") == pytest.approx(0.0, abs=1e-9)


def test_no_answers_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "No variant picker" in repr(loss_explore.variant_picker(None))
    monkeypatch.setattr(loss_explore, "evidence", lambda wb, seed=0: None)
    assert "No variant picker" in repr(loss_explore.advantages_explorer(object()))
