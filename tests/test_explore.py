"""rlaudit.explore: controls drive the figure's artists in place, the figure always shows what the controls say
(whatever order the changes come in, and after the view is shown again), and batch runs get the static figure.
Also 02's run explorer (the toolkit's curves explorer on a runs table) and the benchmark's change sequence; each
room's own explorer is tested beside the room (``tests/rooms/<room>/test_explore.py``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pytest

from rlaudit import explore
from rlaudit.bench.explore import control_changes, time_changes
from rlaudit.curves import ema_smooth
from support.toys import runs_table

matplotlib.use("Agg")  # tests only: no display here (the library itself never sets a backend)


def visible(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {k: (np.asarray(x, float), np.asarray(y, float)) for k, (x, y) in explore.line_data(ax).items()}


def seed_lines(ex: explore.Explorer, slot: str) -> list:
    return [line for line in ex._artists["runs"][slot] if line.get_visible()]


# ----------------------------------------------------------------------------------------------------------
# Controls -> figure data
# ----------------------------------------------------------------------------------------------------------


def test_the_mean_curve_is_the_mean_over_seeds_and_each_run_is_each_seed() -> None:
    ex = explore.curves_explorer(runs_table(), title="runs", smooth=0.0)
    fig = ex.figure()
    ax = fig.axes[0]
    x, y = visible(ax)["baseline (mean of 3)"]
    # baseline, first metric: k = 1, 2, 3 over seeds -> mean slope 2
    np.testing.assert_allclose(y, 2 * x + 1)
    assert ax.get_xlabel() == explore.STEPS
    band = ex._artists["bands"]["candidate"].get_paths()[0].vertices
    assert band[:, 1].min() < 4 * 1000 + 1 < band[:, 1].max()  # the interval straddles the candidate's mean

    ex.set(show=explore.EACH)
    lines = seed_lines(ex, "candidate")
    slopes = sorted(round(float(np.polyfit(*line.get_data(), 1)[0]), 6) for line in lines)
    assert slopes == [2.0, 4.0, 6.0]  # candidate, first metric: k = 2, 4, 6
    assert ax.get_title().startswith("charts/episodic_return: each run")
    assert len(ex._artists["lines"]["candidate"].get_xdata()) == 0  # no mean drawn in "each run"


def test_metric_x_axis_range_smoothing_and_log_y_change_the_artists_in_place() -> None:
    ex = explore.curves_explorer(runs_table(), title="runs", smooth=0.0)
    fig = ex.figure()
    ax = fig.axes[0]
    mean_line = ex._artists["lines"]["baseline"]

    ex.set(metric="losses/value_loss")
    x, y = mean_line.get_data()
    np.testing.assert_allclose(y, 4 * np.asarray(x) + 1)  # k = 2, 4, 6 -> mean 4
    assert ax.get_ylabel() == "losses/value_loss"

    ex.set(x=explore.WALL)
    cx, _ = ex._artists["lines"]["candidate"].get_data()
    assert ax.get_xlabel() == explore.WALL
    assert np.nanmax(cx) == pytest.approx(5.0)  # 1000 steps at 200 steps per second
    assert np.nanmax(mean_line.get_xdata()) == pytest.approx(10.0)

    ex.set(x=explore.STEPS, steps=(200, 600))
    x, _ = mean_line.get_data()
    assert x.min() == pytest.approx(200) and x.max() == pytest.approx(600)
    assert ax.get_xlim() == pytest.approx((200, 600))

    ex.set(show=explore.EACH, smooth=0.5)
    line = seed_lines(ex, "baseline")[0]
    whole = 2.0 * np.arange(0, 1001, 100) + 1  # metric 2, baseline, seed 0: k = 2
    # smoothed over the whole run, then cut to the range (the range never restarts the average)
    np.testing.assert_allclose(line.get_ydata(), ema_smooth(whole, 0.5)[2:7])

    ex.set(log_y=True)
    assert ax.get_yscale() == "log"  # every value is positive
    ex.set(log_y=False)
    assert ax.get_yscale() == "linear"
    assert fig is ex.figure() and mean_line is ex._artists["lines"]["baseline"]  # updated, never rebuilt
    assert ex.drawn == ex.values


def test_log_y_on_values_that_cross_zero_is_symlog() -> None:
    table = runs_table()
    table["value"] -= 2000.0
    ex = explore.curves_explorer(table, title="runs")
    ex.set(log_y=True)
    assert ex.figure().axes[0].get_yscale() == "symlog"


def test_a_control_rejects_a_value_it_cannot_take_and_names_what_it_takes() -> None:
    ex = explore.curves_explorer(runs_table(), title="runs")
    with pytest.raises(ValueError, match="not an option"):
        ex.set(metric="nope")
    with pytest.raises(ValueError, match="within"):
        ex.set(steps=(0, 5000))
    with pytest.raises(KeyError, match="has no control"):
        ex.set(colour="red")
    with pytest.raises(ValueError, match="empty"):
        explore.curves_explorer(runs_table().iloc[:0], title="none")


def test_only_the_controls_the_data_supports_are_offered() -> None:
    one = runs_table().query("name == 'losses/value_loss'").drop(columns="seconds")
    ex = explore.curves_explorer(one, title="runs")
    assert [c.name for c in ex.controls] == ["steps", "show", "smooth", "log_y"]


# ----------------------------------------------------------------------------------------------------------
# Live: widgets and the ipympl canvas stay in step
# ----------------------------------------------------------------------------------------------------------


def test_widget_changes_in_any_order_leave_the_figure_showing_the_controls() -> None:
    pytest.importorskip("ipympl")
    ex = explore.curves_explorer(runs_table(), title="runs")
    box = ex.widget()
    widgets = ex._widgets
    assert set(widgets) == {c.name for c in ex.controls}
    assert all(w.continuous_update is False for n, w in widgets.items() if n in ("steps", "smooth"))
    rng = np.random.default_rng(0)
    for _ in range(25):
        name = rng.choice(sorted(widgets))
        control = ex.control(name)
        if control.kind == "choice":
            widgets[name].value = control.option_values()[rng.integers(len(control.options))]
        elif control.kind == "slider":
            widgets[name].value = float(rng.uniform(0, 0.95))
        elif control.kind == "int_range":
            lo = int(rng.integers(0, 500))
            widgets[name].value = (lo, lo + int(rng.integers(100, 500)))
        else:
            widgets[name].value = not widgets[name].value
        assert ex.drawn == ex.values
    ax = ex.figure().axes[0]
    assert ax.get_ylabel() == ex.values["metric"]
    assert ax.get_title().startswith(f"{ex.values['metric']}: {ex.values['show']}")
    assert ex._status.value == ex.describe()
    # shown again (a closed tab reopened): the same widgets, canvas and figure; nothing stale to replay
    again = ex.widget()
    assert again.children[1].children == box.children[1].children and again.children[2] is ex._canvas
    assert ex.drawn == ex.values


def test_an_unchanged_value_does_not_redraw() -> None:
    ex = explore.curves_explorer(runs_table(), title="runs")
    ex.figure()
    ex.set(smooth=0.3)
    n = len(ex.timings)
    ex.set(smooth=0.3)
    assert len(ex.timings) == n


# ----------------------------------------------------------------------------------------------------------
# Batch: the static figure
# ----------------------------------------------------------------------------------------------------------


def test_batch_runs_display_the_static_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setattr(explore, "interactive", lambda: False)
    calls = []

    def static(values):
        calls.append(dict(values))
        from matplotlib.figure import Figure

        fig = Figure()
        fig.subplots().plot([0, 1])
        return fig

    ex = explore.curves_explorer(runs_table(), title="runs", static=static, smooth=0.3)
    ex._ipython_display_()
    assert calls and calls[0]["smooth"] == 0.3
    assert shown and shown[0].data[:4] == b"\x89PNG"
    assert ex._canvas is None and not ex._widgets  # no widget was made

    ex_default = explore.curves_explorer(runs_table(), title="runs")
    ex_default._ipython_display_()
    assert shown[1].data[:4] == b"\x89PNG"  # the explorer's own figure at its starting values


def test_live_display_is_the_widget(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ipympl")
    import ipywidgets

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setattr(explore, "interactive", lambda: True)
    ex = explore.curves_explorer(runs_table(), title="runs")
    ex._ipython_display_()
    assert isinstance(shown[0], ipywidgets.VBox)


# ----------------------------------------------------------------------------------------------------------
# The arm picker and the benchmark's changes
# ----------------------------------------------------------------------------------------------------------


def test_the_benchmark_visits_every_option_of_every_control() -> None:
    ex = explore.curves_explorer(runs_table(), title="runs")
    changes = control_changes(ex, 1)
    for control in ex.controls:
        seen = [c[control.name] for c in changes if control.name in c]
        if control.kind == "choice":
            assert set(seen) == set(control.option_values())
        else:
            assert len(set(map(str, seen))) >= 2
    seconds = time_changes(ex, changes[:4])
    assert len(seconds) == 4 and all(s > 0 for s in seconds)
    assert ex.drawn == ex.values


def test_the_benchmark_times_every_explorer_a_workbench_builds() -> None:
    """``rlaudit bench explore`` calls each notebook's explorer as its notebook does; only the three built from a
    finished check, an investigation or a table are left out (and say so)."""
    import json

    from rlaudit.bench.explore import EXPLORERS

    root = Path(__file__).resolve().parents[1]
    called = {}
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "code" and ".explore import " in text:
                module, name = text.split("from ", 1)[1].split("\n", 1)[0].split(" import ")
                called[path.stem] = f"{module.strip()}:{name.strip()}"
    assert len(called) == 15, sorted(called)
    timed = {notebook: dotted for notebook, dotted, _ in EXPLORERS}
    assert set(called) - set(timed) == {"13_seeding", "14_config", "15_summary"}
    for notebook, dotted in timed.items():
        assert called[notebook] == dotted, notebook


def test_the_benchmark_times_the_off_policy_explorers_as_their_notebooks_call_them() -> None:
    """09_loss's TD-target case picker has nothing to pick on the built-in PPO pair: the benchmark times it, and
    the run explorer's off-policy series, on the built-in DQN pair."""
    from rlaudit.bench.explore import OFF_POLICY_EXPLORERS, OFF_POLICY_PAIR
    from rlaudit.demo.subject import faults_of

    root = Path(__file__).resolve().parents[1]
    for notebook, dotted, _ in OFF_POLICY_EXPLORERS:
        module, name = dotted.split(":")
        text = (root / "notebooks" / f"{notebook}.ipynb").read_text()
        assert f"from {module} import {name}" in text, (notebook, dotted)
    assert [f.subsystem for f in faults_of(OFF_POLICY_PAIR[1].removeprefix("builtin:"))] == ["loss"]


def test_the_benchmark_names_the_explorers_when_asked_for_one_it_lacks() -> None:
    from rlaudit.bench.explore import bench_explore

    with pytest.raises(ValueError, match="02_trainer"):
        bench_explore(only="16_nothing")
