"""The 09_loss variant and probe picker: each side's answer against the picked advantage estimator on the picked
staged input and quantity (a side computing that variant lies on the diagonal), and the picked probe environment's
learned values and rewarded-action probabilities against their targets; no evidence gives a message."""

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
    ex = loss_explore.variant_picker(loss_explore.LossEvidence(answers=sides))
    # starts on the candidate's mistake (case 003's bootstrap from V(s_t))
    assert ex.values == {"variant": "bootstrap_current", "input": "random:advantages"}
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

    ex.set(input="impulse:returns")
    xy = art["scatter"]["baseline"].get_offsets()
    assert xy.shape == (16 * 2, 2)
    _, y = art["subject"]["baseline"].get_data()
    imp = sides["baseline"].inputs["impulse"]
    assert np.allclose(y, imp["returns"][:, col := int(art["ax_t"].get_title().split()[1])])
    assert art["ax_t"].get_ylabel() == "returns"
    assert ex.drawn == {"variant": "correct", "input": "impulse:returns"}


def test_a_truncation_variant_is_not_testable_without_truncation_flags() -> None:
    base = answers("correct")
    base.truncation = False
    ev = loss_explore.LossEvidence(
        answers={"baseline": base, "candidate": answers("truncation_as_termination")}
    )
    ex = loss_explore.variant_picker(ev)
    assert ex.values["variant"] == "truncation_as_termination"
    ex.figure()
    art = ex._artists
    assert art["scatter"]["baseline"].get_offsets().shape[0] == 0
    assert "not testable" in art["note"]["baseline"].get_text()
    assert max_off_diagonal(ex, "candidate") == pytest.approx(0.0, abs=1e-9)


def run(probe: str, values: list[float], probs: list[list[float]], passed: bool, gamma: float = 0.9) -> dict:
    """A probe_env_run result as the probe returns it."""
    return {"supported": True, "passed": passed, "values": values, "probs": probs, "gamma": gamma,
            "reason": "learned" if passed else "p(rewarded action) 0.40 < 0.9"}  # fmt: skip


def probe_runs() -> dict:
    """Both pass the discount rung; on the action rung the candidate learns the wrong action (a flipped
    advantage sign); the observation rung could not be run for the candidate."""
    pr = loss_explore.probe_run
    return {
        "observation": {
            "baseline": pr(run("observation", [-0.98, 1.01], [[1.0], [1.0]], True)),
            "candidate": pr({"supported": False, "reason": "train() takes no env_fn="}),
        },
        "discount": {
            "baseline": pr(run("discount", [1.88, 0.99], [[1.0], [1.0]], True)),
            "candidate": pr(run("discount", [1.9, 1.0], [[1.0], [1.0]], True, gamma=0.95)),
        },
        "action": {
            "baseline": pr(run("action", [0.9], [[0.05, 0.95]], True)),
            "candidate": pr(run("action", [-0.2], [[0.6, 0.4]], False)),
        },
    }


def heights(bars) -> list[float]:
    return [b.get_height() for b in bars if b.get_visible()]


def test_the_probe_picker_shows_the_learned_values_against_their_targets() -> None:
    ev = loss_explore.LossEvidence(answers=None, probes=probe_runs())
    ex = loss_explore.variant_picker(ev)
    assert [c.name for c in ex.controls] == ["probe"]  # no advantages: only the probe environments
    assert ex.values["probe"] == "action"  # the first rung the baseline passes and the candidate fails
    ex.figure()
    art = ex._artists
    assert heights(art["v_bars"]["candidate"]) == [pytest.approx(-0.2)]
    assert heights(art["p_bars"]["candidate"]) == [pytest.approx(0.4)]
    assert heights(art["p_bars"]["baseline"]) == [pytest.approx(0.95)]
    # the policy rung's target is the policy's expected reward, 2 p(good) - 1
    assert art["targets"]["candidate"].get_ydata() == pytest.approx([2 * 0.4 - 1])
    assert art["pass_line"].get_visible()
    assert "candidate: FAIL" in art["ax_v"].get_title() and "4. action" in art["ax_v"].get_title()

    ex.set(probe="discount")
    assert heights(art["v_bars"]["baseline"]) == pytest.approx([1.88, 0.99])
    # each side's own discount: V(0) -> 1 + gamma
    assert art["targets"]["baseline"].get_ydata() == pytest.approx([1.9, 1.0])
    assert art["targets"]["candidate"].get_ydata() == pytest.approx([1.95, 1.0])
    assert not heights(art["p_bars"]["baseline"]) and not art["pass_line"].get_visible()
    assert "no action to learn" in art["p_note"].get_text()
    assert [t.get_text() for t in art["ax_v"].get_xticklabels()] == ["obs 0", "obs 1"]

    ex.set(probe="observation")
    assert heights(art["v_bars"]["baseline"]) == pytest.approx([-0.98, 1.01])
    assert not heights(art["v_bars"]["candidate"])
    assert "candidate: not run" in art["ax_v"].get_title()
    assert ex.drawn == {"probe": "observation"}


def test_both_pickers_share_one_figure() -> None:
    sides = {"baseline": answers("correct"), "candidate": answers("correct")}
    ex = loss_explore.variant_picker(loss_explore.LossEvidence(answers=sides, probes=probe_runs()))
    assert [c.name for c in ex.controls] == ["variant", "input", "probe"]
    assert ex.values["variant"] == "correct"  # both compute the reference GAE
    ex.set(variant="lambda_one", probe="discount")
    assert max_off_diagonal(ex, "baseline") > 0.1
    assert heights(ex._artists["v_bars"]["candidate"]) == pytest.approx([1.9, 1.0])


def test_a_change_redoes_only_its_own_panels_and_any_sequence_ends_in_sync(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sides = {"baseline": answers("correct"), "candidate": answers("bootstrap_current")}
    ex = loss_explore.variant_picker(loss_explore.LossEvidence(answers=sides, probes=probe_runs()))
    ex.figure()
    art = ex._artists
    redone: list[str] = []
    for panel in ("variant", "probe"):  # count calls of each panel's update through the axes it retitles
        axis = art["axes"]["baseline"] if panel == "variant" else art["ax_v"]
        original = axis.set_title
        monkeypatch.setattr(
            axis, "set_title", lambda *a, _o=original, _p=panel, **k: (redone.append(_p), _o(*a, **k))
        )
    ex.set(probe="discount")
    assert redone == ["probe"]  # the 1,024 scatter points and the step panel are left as they are
    ex.set(input="impulse:returns")
    assert redone == ["probe", "variant"]
    ex.set(variant="correct", probe="action")
    ex.set(probe="observation")
    ex.set(variant="lambda_one")
    # the figure shows what the controls say, whatever order they moved in
    assert ex.drawn == {"variant": "lambda_one", "input": "impulse:returns", "probe": "observation"}
    assert "lambda_one" in art["caption"].get_text() and art["ax_t"].get_ylabel() == "returns"
    assert "observation" in art["ax_v"].get_title()
    assert heights(art["v_bars"]["baseline"]) == pytest.approx([-0.98, 1.01])


def test_no_evidence_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "No variant or probe picker" in repr(loss_explore.variant_picker(None))
    monkeypatch.setattr(loss_explore, "evidence", lambda wb, seed=0: loss_explore.LossEvidence())
    assert "No variant or probe picker" in repr(loss_explore.advantages_explorer(object()))
