"""The arm picker of 15_summary (``rlaudit.attribution.explore``): an arm overlaid on the runs, relabelled at the threshold."""

from __future__ import annotations

import types

import matplotlib
import numpy as np
import pandas as pd
import pytest

from rlaudit.attribution import explore as arm_explore
from rlaudit.attribution.arms import Effect
from support.toys import runs_table

matplotlib.use("Agg")  # tests only: no display here (the library itself never sets a backend)


@pytest.mark.parametrize(
    ("effect", "threshold", "label"),
    [
        (Effect(0.5, 0.3, 0.7, 3), 0.2, "cause"),
        (Effect(0.5, 0.3, 0.7, 3), 0.6, "undecided"),
        (Effect(0.1, 0.06, 0.15, 3), 0.2, "minor"),
        (Effect(0.02, -0.05, 0.1, 3), 0.2, "no effect"),
        (Effect(0.3, -0.1, 0.7, 3), 0.2, "undecided"),
        (None, 0.2, "not measured"),
    ],
)
def test_the_threshold_relabels_an_arm(effect: Effect | None, threshold: float, label: str) -> None:
    assert arm_explore.label_at(effect, threshold) == label


def test_the_arm_picker_overlays_an_arm_and_relabels_at_the_threshold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = runs_table().query("name == 'charts/episodic_return'").rename(columns={"side": "arm"})
    extra = table.query("arm == 'candidate'").assign(arm="hunk 1", value=lambda d: d["value"] * 0.5)
    table = pd.concat([table, extra], ignore_index=True)
    monkeypatch.setattr(arm_explore, "arm_curves", lambda result: table)
    arm = types.SimpleNamespace(name="hunk 1", injects=(), suspects=("h1",))
    result = types.SimpleNamespace(
        primary=types.SimpleNamespace(name="charts/episodic_return"),
        arms=[types.SimpleNamespace(name="baseline", injects=()), arm],
        suspects=[types.SimpleNamespace(name="h1", source="change")],
        effects={"hunk 1": {"charts/episodic_return": Effect(0.3, 0.1, 0.5, 3)}},
    )
    ex = arm_explore.arm_explorer(result, 0.2)
    assert ex.control("overlay").options[1] == ("hunk 1 (hunk)", "hunk 1")
    ex.set(smooth=0.0)
    x, y = ex._artists["lines"]["overlay"].get_data()
    np.testing.assert_allclose(y, 2 * np.asarray(x) + 0.5)  # half the candidate's mean slope of 4, plus 1/2
    note = ex._artists["note"]
    assert "1 cause" in note.get_text() and "hunk 1: cause" in note.get_text()
    ex.set(threshold=0.4)
    assert "hunk 1: undecided" in note.get_text()
    ex.set(overlay="")
    assert len(ex._artists["lines"]["overlay"].get_xdata()) == 0
