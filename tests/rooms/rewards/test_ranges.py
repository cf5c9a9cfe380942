"""The tests of :mod:`rlaudit.rewards.ranges`."""

from __future__ import annotations

import pandas as pd

from rlaudit.rewards import audit


def test_lost_values_need_a_frequent_baseline_value() -> None:
    values = pd.DataFrame(
        [
            {"side": "baseline", "value": 0.8, "count": 50, "frequency": 0.05},
            {"side": "baseline", "value": 0.1, "count": 100, "frequency": 0.1},
            {"side": "baseline", "value": 5.0, "count": 3, "frequency": 0.003},
            {"side": "candidate", "value": 0.1, "count": 100, "frequency": 0.1},
        ]
    )
    assert [x["value"] for x in audit.lost_values(values)] == [0.8]
