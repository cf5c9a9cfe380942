"""A cause is decided, not lucky: shares of a gap decided family-wise (Holm over the arms a search tried), the
undecided ones named with the seeds that would decide them, and singles that overlap not stacked."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from rlaudit import stats
from rlaudit.attribution.arms import SPS, Arm, Attribution, Effect
from rlaudit.attribution.engine import family_effect
from rlaudit.attribution.ranking import attribution_findings, overlap
from rlaudit.attribution.summary import _gap_sentence
from rlaudit.attribution.suspects import Suspect
from rlaudit.findings import Status

# Five seeds of a gap of 1.0 (paired differences 1.1, 0.9, 1.0, 1.2, 0.8: sd 0.158), candidate at 0.
BASELINE = np.array([1.1, 0.9, 1.0, 1.2, 0.8])
CANDIDATE = np.zeros(5)
# One seed each: two real causes, a share that excludes zero at 95% on its own, and nothing.
ARMS = {"curriculum": [0.7], "rebuild": [0.45], "lr": [0.33], "reward": [0.0]}


def test_holm_adjusted_p_values_by_hand() -> None:
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> 0.06 (monotone)
    assert stats.holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm_adjust([0.2]) == [0.2]
    adjusted = stats.holm_adjust([0.01, float("nan")])
    assert adjusted[0] == pytest.approx(0.02) and np.isnan(adjusted[1])  # NaN counts in m, stays NaN


def test_holm_levels_by_hand_four_arms_one_barely_excluding_zero_becomes_undecided() -> None:
    # ranks 1, 2 pass 0.05/4 and 0.05/3; the third's 0.04 passes 0.05 alone but not its Holm 0.05/2
    levels = stats.holm_levels([0.0001, 0.0002, 0.04, 0.5])
    assert levels == pytest.approx([1 - 0.05 / 4, 1 - 0.05 / 3, 1 - 0.05 / 2, 1 - 0.05 / 2])
    # every step passes: the last is tested at 0.05 itself
    assert stats.holm_levels([0.001, 0.02, 0.0001, 0.04]) == pytest.approx(
        [1 - 0.05 / 3, 1 - 0.05 / 2, 1 - 0.05 / 4, 0.95]
    )
    assert stats.holm_levels([0.03]) == [pytest.approx(0.95)]  # a family of one is not adjusted


def test_a_share_that_excludes_zero_alone_is_undecided_among_four_arms() -> None:
    alone = stats.fractions_restored_holm(BASELINE, CANDIDATE, {"lr": ARMS["lr"]}, seed=0)["lr"]
    assert alone.family == 1 and alone.level == pytest.approx(0.95)
    assert 0.0 < alone.low and alone.p < 0.05  # a "cause" on its own: 33%, CI above zero
    family = stats.fractions_restored_holm(BASELINE, CANDIDATE, ARMS, seed=0)
    assert {k: v.family for k, v in family.items()} == dict.fromkeys(ARMS, 4)
    lr = family["lr"]
    assert lr.level == pytest.approx(0.975) and lr.low < 0.0 < lr.high and lr.p_holm > 0.05
    assert family["curriculum"].low > 0.0 and family["rebuild"].low > 0.0  # the real causes stay decided
    assert family["reward"].low < 0.0 < family["reward"].high
    # the search's reading: the lucky share is undecided, not a cause, and says what would decide it
    lr_effect = family_effect(lr, 1)
    assert family_effect(alone, 1).verdict(0.2) == "cause" and lr_effect.verdict(0.2) == "undecided"
    assert lr_effect.seeds_to_decide(0.2) and lr_effect.seeds_to_decide(0.2) > 1
    # reproducible for a seed, to the last digit
    assert stats.fractions_restored_holm(BASELINE, CANDIDATE, ARMS, seed=0) == family


def test_an_undecided_share_is_never_confirmed_and_names_its_family_and_seeds() -> None:
    suspect = Suspect("lr_schedule_missing", "optimizer", "fix", remove=("lr_schedule_missing",))
    lucky = Effect(0.24, -0.05, 0.55, 1, level=0.975, family=6)
    result = replace(
        Attribution([SPS], {}, [], {}, [], {}, {}, {}, []),
        gaps={SPS: {"measurable": True}},
        arms=[Arm("lr_schedule_missing", "candidate", suspects=("lr_schedule_missing",))],
        effects={"lr_schedule_missing": {SPS: lucky}},
        suspects=[suspect],
    )
    (finding,) = attribution_findings(result)
    assert finding.status is Status.SUSPECT
    summary = finding.evidence.summary
    assert (
        "restores 24% of the CPU time per step lost (95% CI over 6 arms (Holm) -5%..55%, 1 seed)" in summary
    )
    # half-width 0.30 at 0.04 from delta (0.2): 1 seed x (0.30 / 0.04)^2 = 56.25 -> 57
    assert summary.endswith("— undecided: about 57 seeds per arm would decide it")


def _row(arm: str, verdict: str, point: float, low: float, high: float, **extra: object) -> dict:
    return {
        "arm": arm,
        "single": True,
        "verdict": verdict,
        "point": point,
        "low": low,
        "high": high,
        "n": 2,
        "family": 6,
        "subsystems": [arm.split(".")[0]],
        "suspects": [arm],
        **extra,
    }


def _result(rows: list[dict], together: dict | None) -> SimpleNamespace:
    return SimpleNamespace(
        gaps={SPS: {"measurable": True, "baseline": 80_000.0, "candidate": 48_000.0}},
        label=lambda m: "steps per CPU-second",
        ranking={SPS: rows},
        injected={},
        together={"effects": {SPS: together} if together else {}},
    )


def test_singles_well_over_the_gap_are_said_to_overlap_and_the_joint_restore_is_the_total() -> None:
    rows = [
        _row("curriculum.full_scan", "cause", 0.9, 0.7, 1.1),
        _row("env.rebuild_on_reset", "cause", 0.65, 0.45, 0.85),
        _row("optimizer.lr_schedule_missing", "undecided", 0.24, -0.05, 0.55, needed=9),
    ]
    together = {"point": 0.98, "low": 0.9, "high": 1.06, "n": 2, "family": 6}
    result = _result(rows, together)
    found = overlap(result, SPS)
    assert found == {
        "singles": pytest.approx(1.55),
        "arms": ["curriculum.full_scan", "env.rebuild_on_reset"],
        "together": together,
    }
    recovery = {SPS: {**together, "arm": "the causes found, restored together"}}
    text = _gap_sentence(result, SPS, recovery)
    assert (
        "The single restores named add up to 155% of the CPU time per step lost, more than all of it: they "
        "overlap (undoing one also removes part of what another costs), so they are not added up; restored "
        "together they restore 98% (95% CI over 6 arms (Holm) 90%..106%)." in text
    )
    assert "Fixing them all is expected to recover 98% of it" in text
    # the undecided share is named as such, with the seeds that would decide it, and never as a cause
    assert "Undecided, so not named as causes: optimizer.lr_schedule_missing 24%" in text
    assert "about 9 seeds per arm would." in text
    assert "Also: env.rebuild_on_reset 65%." in text and "Also: optimizer" not in text
    # without the joint restore, the total is not established
    assert "their joint restore was not measured, so the total is not established" in _gap_sentence(
        _result(rows, None), SPS, {}
    )


def test_singles_that_add_up_to_about_the_gap_do_not_overlap() -> None:
    rows = [
        _row("curriculum.full_scan", "cause", 0.7, 0.5, 0.9),
        _row("env.rebuild_on_reset", "cause", 0.45, 0.3, 0.6),
    ]
    result = _result(rows, {"point": 1.0, "low": 0.9, "high": 1.1, "n": 2})
    assert overlap(result, SPS) is None  # 115%: within 20 points of the whole gap
    assert "overlap" not in _gap_sentence(result, SPS, {})


def test_the_waterfall_shows_the_joint_restore_when_singles_overlap() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rlaudit.attribution.figures import sps_waterfall

    rows = [
        _row("curriculum.full_scan", "cause", 0.9, 0.7, 1.1),
        _row("env.rebuild_on_reset", "cause", 0.65, 0.45, 0.85),
    ]
    fig = sps_waterfall(_result(rows, {"point": 0.98, "low": 0.9, "high": 1.06, "n": 2}))
    labels = [t.get_text().replace("\n", " ") for t in fig.axes[0].get_yticklabels()]
    plt.close(fig)
    assert labels[0] == "candidate" and labels[-2:] == ["unexplained", "baseline"]
    assert len(labels) == 4 and labels[1].startswith("together (overlapping)")


def _bars(fig) -> list[tuple[str, float, float, str]]:
    """The waterfall's bars as (row label, start, end, hatch), top row first."""
    ax = fig.axes[0]
    names = {round(t.get_position()[1]): t.get_text().replace("\n", " ") for t in ax.get_yticklabels()}
    bars = [(names[round(p.get_y() + p.get_height() / 2)], p.get_x(), p.get_x() + p.get_width(), p.get_hatch() or "")
            for p in ax.patches]  # fmt: skip
    return sorted(bars, key=lambda b: -next(k for k, v in names.items() if v == b[0]))


@pytest.mark.parametrize("joint", [1.05, None])
def test_the_waterfall_never_passes_the_baseline(joint: float | None) -> None:
    """Singles of 90% and 65% (155%): stacked they would end near twice the baseline's SPS. With a joint
    restore of 105% the bar stops at the baseline and the -5% remainder is hatched; without one each single is
    drawn alone from the candidate and the remainder is not established."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rlaudit.attribution.figures import sps_waterfall

    rows = [
        _row("curriculum.full_scan", "cause", 0.9, 0.7, 1.1),
        _row("env.rebuild_on_reset", "cause", 0.65, 0.45, 0.85),
    ]
    together = {"point": joint, "low": 0.9, "high": 1.2, "n": 2} if joint else None
    fig = sps_waterfall(_result(rows, together))
    bars = _bars(fig)
    title = fig.axes[0].get_title()
    texts = [t.get_text().replace("\n", " ") for t in fig.axes[0].texts]
    plt.close(fig)
    base, cand = 80_000.0, 48_000.0
    assert max(end for _, _, end, _ in bars) <= base + 1e-6, bars
    assert "overlap" in title
    if joint:
        assert [b[0] for b in bars][1].startswith("together (overlapping)")
        over = next(b for b in bars if b[0] == "over-restored")
        assert over[3] and over[2] == pytest.approx(base)  # hatched, drawn back from the baseline
        assert any(t.startswith("-5%: restored more than the gap") for t in texts), texts
    else:
        alone = [b for b in bars if b[0].startswith("alone:")]
        assert len(alone) == 2 and all(b[1] == pytest.approx(cand) for b in alone)  # from the candidate
        assert any("not established" in t for t in texts), texts
    # the sentence beside it claims the whole gap, never more than it
    recovery = {SPS: {"point": 1.05, "low": 0.9, "high": 1.2, "n": 2, "arm": "together"}}
    text = _gap_sentence(_result(rows, together), SPS, recovery)
    assert "expected to recover all of it (measured 105%" in text and "recover 105%" not in text
