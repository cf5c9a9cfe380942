"""The tests of :mod:`rlaudit.env.resets`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rlaudit.env import resets


def test_proportion_difference_keeps_width_at_zero() -> None:
    # Newcombe's hybrid score interval: 0/10 vs 0/10 spans the Wilson bound 1.96^2 / (10 + 1.96^2) either way
    d, low, high = resets.proportion_difference(0, 10, 0, 10)
    assert d == 0.0 and high == pytest.approx(1.96**2 / (10 + 1.96**2)) and low == pytest.approx(-high)
    # 9/10 vs 1/10: Wilson [0.5958, 0.9821] and [0.0179, 0.4042], so 0.8 -/+ sqrt(0.3042^2 + 0.3042^2)
    d, low, high = resets.proportion_difference(9, 10, 1, 10)
    assert d == pytest.approx(0.8) and low == pytest.approx(0.3698, abs=1e-4)
    assert high == pytest.approx(0.8 + np.hypot(0.9821 - 0.9, 0.1 - 0.0179), abs=1e-4)


def test_reset_spread_separates_desync_from_truncating_every_episode() -> None:
    steps = pd.DataFrame({"ended": np.ones(300, dtype=int)})
    good = pd.DataFrame(
        {
            "env": [0, 1, 0, 1],
            "end": [10, 50, 109, 149],
            "length": [11, 51, 99, 99],
            "truncated": True,
            "first": [True, True, False, False],
        }
    )
    bad = pd.DataFrame(
        {
            "env": [0, 1, 0, 1],
            "end": [10, 50, 40, 90],
            "length": [11, 51, 30, 40],
            "truncated": True,
            "first": [True, True, False, False],
        }
    )
    assert resets.reset_spread(good, steps)["early_fraction"] == 0.0
    out = resets.reset_spread(bad, steps)
    assert out["limit"] == 51 and out["early_fraction"] == 1.0
