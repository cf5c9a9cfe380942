"""The TD-target case picker of 09_loss on hand-built ``td_cases`` tables: a dropped done mask shows as the
terminated case on the diagonal, the picker starts on the case whose move differs most between the sides, and a
pair without ``compute_td_targets`` gets a line saying why."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rlaudit.loss import td_explore

N = 16


def _cases(*, done_mask: bool = True, has_target: bool = True) -> pd.DataFrame:
    """A one-step TD target r + 0.9 (1 - done) V(s'), as the probe's table lays it out (the base rewards in
    every case's ``reward`` column)."""
    rng = np.random.default_rng(0)
    reward = rng.integers(0, 2, N).astype(float)
    v, v_other = rng.uniform(1.0, 2.0, N), rng.uniform(1.0, 2.0, N)
    boot = 0.9 * v
    targets = {
        "base": reward + boot,
        "rewards_0": boot,
        "rewards_1": 1.0 + boot,
        "terminated": reward + (0.0 if done_mask else boot),
        "truncated": reward + boot,
        "next_obs": reward + 0.9 * v_other,
        "obs": reward + boot,
        "target": reward + 0.9 * v_other if has_target else np.full(N, np.nan),
        "online": reward + boot,
    }
    return pd.DataFrame(
        [
            {"case": case, "row": i, "target": float(t[i]), "reward": float(reward[i])}
            for case, t in targets.items()
            for i in range(N)
        ]
    )


def test_each_case_is_drawn_against_the_base_bootstrap() -> None:
    points = td_explore.case_points(_cases())
    assert list(points) == list(td_explore.CASES)
    assert td_explore.moved(points["terminated"]) == pytest.approx(1.0)  # down to y = 0
    assert td_explore.moved(points["truncated"]) == pytest.approx(0.0)  # on the diagonal
    assert td_explore.moved(points["rewards_0"]) == pytest.approx(0.0)  # its own reward, 0, taken off
    assert td_explore.moved(points["next_obs"]) > 0.05
    assert "target" not in td_explore.case_points(_cases(has_target=False))  # no target networks: not offered
    assert td_explore.case_points(_cases().query("case != 'base'")) == {}


def test_the_picker_starts_on_the_dropped_done_mask_and_says_how_far_each_side_moved() -> None:
    sides = {
        "baseline": td_explore.case_points(_cases()),
        "candidate": td_explore.case_points(_cases(done_mask=False)),
    }
    explorer = td_explore.case_picker(sides)
    (case,) = explorer.controls
    assert case.value == "terminated"
    assert case.options[0] == ("every transition terminated (moved 100% vs 0%)", "terminated")
    fig = explorer.static_figure()
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["baseline: moves 100% of the bootstrap", "candidate: moves 0% of the bootstrap"]
    assert "lies on y = 0" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="no TD-target case on both sides"):
        td_explore.case_picker({"baseline": {}, "candidate": sides["candidate"]})


def test_a_pair_without_td_targets_gets_a_line_saying_why() -> None:
    wb = SimpleNamespace(run=lambda probe, **params: SimpleNamespace(ok=False))
    shown = td_explore.td_explorer(wb, seed=3)
    assert "No TD-target case picker" in str(shown) and "on-policy learner" in str(shown)
