"""The 06_curriculum pool-size and task picker: the picked size's cost per call on both sides, the picked task's
share of the draws and its plays; no curriculum gives a message, not a figure."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from rlaudit.curriculum import explore as cur_explore

matplotlib.use("Agg")  # tests only: no display here

SIZES = (16, 64, 256)


def timings(per_task: float, slope: float) -> pd.DataFrame:
    """Cost per call ``per_task * size**slope`` seconds (update twice sample), calibration 1 ms."""
    rows = []
    for repeat in range(3):
        for size in SIZES:
            cost = per_task * size**slope * (1 + 0.01 * repeat)
            rows.append(
                {"size": size, "repeat": repeat, "sample_seconds": cost, "update_seconds": 2 * cost,
                 "calib_seconds": 1e-3}
            )  # fmt: skip
    return pd.DataFrame(rows)


def evidence() -> cur_explore.CurriculumEvidence:
    """The baseline's calls cost constant 1 µs; the candidate's grow linearly (case 004). Task "b" is drawn
    twice as often by the candidate."""
    return cur_explore.CurriculumEvidence(
        timings={"baseline": timings(1e-6, 0.0), "candidate": timings(1e-7, 1.0)},
        phases={
            "baseline": [{"a": 50, "b": 50}, {"a": 80, "b": 20}, {"a": 60, "b": 40}],
            "candidate": [{"a": 50, "b": 50}, {"a": 60, "b": 40}, {"a": 20, "b": 80}],
        },
        sequence={"baseline": ["a", "b", "a", "a"], "candidate": ["b", "b", "a", "b"]},
    )


def test_the_picker_shows_the_picked_pool_size_and_task() -> None:
    ex = cur_explore.curriculum_picker(evidence())
    assert [c.name for c in ex.controls] == ["size", "call", "calibrated", "task"]
    assert ex.values == {"size": 256, "call": "sample", "calibrated": False, "task": "a"}
    ex.figure()
    art = ex._artists
    # the picked size: every timed block of each side, in µs
    x, y = art["picked"]["baseline"].get_data()
    assert np.all(x == 256) and np.allclose(y, [1.0, 1.01, 1.02])
    _, y = art["picked"]["candidate"].get_data()
    assert np.allclose(y, 0.1 * 256 * np.array([1.0, 1.01, 1.02]))
    assert list(art["size_line"].get_xdata()) == [256, 256]
    assert "×26" in art["ax_cost"].get_title()  # 25.6 µs against 1 µs at 256 tasks
    mx, my = art["medians"]["candidate"].get_data()
    assert list(mx) == list(SIZES) and np.allclose(my, 0.1 * np.array(SIZES) * 1.01)

    ex.set(size=16, call="update")
    _, y = art["picked"]["candidate"].get_data()
    assert np.allclose(y, 2 * 0.1 * 16 * np.array([1.0, 1.01, 1.02]))
    assert art["ax_cost"].get_ylabel() == "CPU per update() call (µs)"
    assert "at 16 tasks" in art["ax_cost"].get_title()

    ex.set(calibrated=True)
    _, y = art["picked"]["baseline"].get_data()
    assert np.allclose(y, 2e-6 / 1e-3 * np.array([1.0, 1.01, 1.02]))  # seconds over the calibration's
    assert "calibration units" in art["ax_cost"].get_ylabel()

    _, share = art["share"]["candidate"].get_data()
    assert np.allclose(share, [0.5, 0.6, 0.2])
    ex.set(task="b")
    _, share = art["share"]["candidate"].get_data()
    assert np.allclose(share, [0.5, 0.4, 0.8])
    _, plays = art["plays"]["candidate"].get_data()
    assert list(plays) == [1, 2, 2, 3]
    title = art["ax_share"].get_title()
    assert "30.0% of the baseline's draws, 60.0% of the candidate's" in title  # phases 1-2 pooled
    assert art["ax_plays"].get_title() == "task b in 4 closed-loop episodes\nplayed 1 vs 3 times"
    assert ex.drawn == {"size": 16, "call": "update", "calibrated": True, "task": "b"}


def test_without_timings_only_the_task_picker_is_offered() -> None:
    ev = evidence()
    ev.timings = {"baseline": ev.timings["baseline"]}  # the candidate's pool size could not be varied
    ex = cur_explore.curriculum_picker(ev)
    assert [c.name for c in ex.controls] == ["task"]
    ex.set(task="b")
    assert ex._artists["blocks"]["baseline"].get_offsets().shape[0] == 0


def test_no_curriculum_says_why() -> None:
    shown = cur_explore.curriculum_picker(cur_explore.CurriculumEvidence())
    assert "No pool-size or task picker" in repr(shown)


def test_the_notebook_entry_reads_the_cached_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    monkeypatch.setattr(cur_explore, "evidence", lambda wb, seed=0: seen.append(seed) or evidence())
    ex = cur_explore.curriculum_explorer(object(), seed=3)
    assert seen == [3] and ex.values["task"] == "a"
