"""The scalar picker of 03_logging (``rlaudit.logging.explore``): episodes averaged over the window."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")  # tests only: no display here (the library itself never sets a backend)


def test_the_scalar_picker_averages_the_recorders_episodes_over_the_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rlaudit.logging import explore as logging_explore

    episodes = pd.DataFrame({"step": np.arange(1, 201) * 10, "return": np.arange(1, 201, dtype=float)})
    steps = np.array([500, 1000, 2000])
    # the candidate logs the mean of the last 10 episodes, the baseline the mean of the last 100
    logged_by = {
        w: pd.DataFrame(
            {"seed": 0, "step": steps, "value": [np.mean(np.arange(1, s // 10 + 1)[-w:]) for s in steps]}
        )
        for w in (10, 100)
    }
    series = {
        ("return", "baseline", 0): (logged_by[100], episodes),
        ("return", "candidate", 0): (logged_by[10], episodes),
    }
    monkeypatch.setattr(logging_explore, "truth_series", lambda wb: series)
    np.testing.assert_allclose(
        logging_explore.window_truth(episodes, "return", steps, 10, False), logged_by[10]["value"]
    )
    ex = logging_explore.truth_explorer(object())
    ex.figure()
    ax = ex._artists["ax"]
    assert ax.get_title().endswith("largest gap 0")  # the baseline at its own window: no gap
    ex.set(side="candidate")
    assert "largest gap 0" not in ax.get_title()
    ex.set(window=10)
    assert ax.get_title().endswith("largest gap 0")
    np.testing.assert_allclose(ex._artists["truth"].get_ydata(), logged_by[10]["value"])
    ex.set(all_so_far=True)
    np.testing.assert_allclose(ex._artists["truth"].get_ydata(), [25.5, 50.5, 100.5])
