"""The tests of :mod:`rlaudit.env.throughput`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rlaudit import stats, timing
from rlaudit.env import throughput as speed


def test_throughput_ratio_of_a_twice_slower_candidate() -> None:
    jitter = (0.98, 1.0, 1.03, 0.99, 1.01)
    frames = {
        side: pd.DataFrame(
            {
                "requested": 0,
                "num_envs": 8,
                "repeat": range(5),
                "env_steps": 1000,
                "seconds": [secs * j for j in jitter],
                "calib_seconds": 0.001,
            }
        )
        for side, secs in (("baseline", 1.0), ("candidate", 2.0))
    }
    ratios = speed.throughput_ratios(speed.throughput_table(frames), seed=0)
    row = ratios.iloc[0]
    assert abs(row["ratio"] - 0.5) < 0.02 and row["ci_high"] < 1
    assert timing.slower(stats.Interval(row["ratio"], row["ci_low"], row["ci_high"]))


def test_a_speed_difference_is_believed_only_when_a_repeat_agrees() -> None:
    slow, slower_still = stats.Interval(0.79, 0.67, 0.99), stats.Interval(0.6, 0.5, 0.7)
    quiet, fast = stats.Interval(0.98, 0.9, 1.05), stats.Interval(1.4, 1.2, 1.6)
    assert timing.confirmed(slow, slower_still) is slow  # both slower: the one nearer to 1
    assert timing.confirmed(slower_still, slow) is slow
    assert timing.confirmed(slow, quiet) is None  # a burst of load on one batch: not believed
    assert timing.confirmed(slow, fast) is None
    assert timing.confirmed(fast, stats.Interval(1.3, 1.2, 1.4)) == stats.Interval(1.3, 1.2, 1.4)


def test_bootstrap_diff_and_ratio_of_ratios_reproduce_with_a_seed() -> None:
    a, b = np.arange(10.0), np.arange(10.0) + 5
    iv = stats.bootstrap_diff(a, b, seed=1)
    assert iv.point == -5.0 and iv == stats.bootstrap_diff(a, b, seed=1) and iv.high < 0
    r = timing.ratio_of_ratios([4.0] * 5, [1.0] * 5, [2.0] * 5, [1.0] * 5, seed=0)
    assert r.point == 2.0 and timing.costlier(r, 1.5)
    assert not timing.slower(stats.Interval(0.95, 0.8, 1.1))
    assert timing.faster(stats.Interval(1.5, 1.3, 1.7))
