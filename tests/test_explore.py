"""rlaudit.explore: controls drive the figure's artists in place, the figure always shows what the controls say
(whatever order the changes come in, and after the view is shown again), and batch runs get the static figure.
Also the room explorers built on it (02's run explorer, 15's arm picker) and the benchmark's change sequence."""

from __future__ import annotations

import types

import matplotlib
import numpy as np
import pandas as pd
import pytest

from rlaudit import explore
from rlaudit.attribution import explore as arm_explore
from rlaudit.attribution.arms import Effect
from rlaudit.bench.explore import control_changes, time_changes
from rlaudit.curves import ema_smooth

matplotlib.use("Agg")  # tests only: no display here (the library itself never sets a backend)


def runs_table() -> pd.DataFrame:
    """Two metrics, two sides, three seeds; value = k * step with k known per (metric, side, seed)."""
    rows = []
    for m, name in enumerate(("charts/episodic_return", "losses/value_loss")):
        for s, side in enumerate(("baseline", "candidate")):
            for seed in range(3):
                k = (m + 1) * (s + 1) * (seed + 1)
                for step in range(0, 1001, 100):
                    rows.append(
                        {
                            "name": name,
                            "side": side,
                            "seed": seed,
                            "step": step,
                            "seconds": step / (100.0 * (s + 1)),  # the candidate is twice as slow
                            "value": float(k * step + 1),
                        }
                    )
    return pd.DataFrame(rows)


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


def variance_section(sd: float, mean: float) -> types.SimpleNamespace:
    from rlaudit.findings import Evidence, Finding, Status

    details = {"metric": "return", "pooled_sd": sd, "variance": {"baseline": {"mean": mean}}}
    finding = Finding(
        id="seeding/variance",
        subsystem="seeding",
        hypothesis="h",
        status=Status.NOTED,
        evidence=Evidence(details=details),
    )
    return types.SimpleNamespace(findings=[finding])


def test_the_power_calculator_reads_seeds_off_the_measured_spread() -> None:
    from rlaudit.evidence import equivalence_seeds
    from rlaudit.seeding.explore import power_explorer
    from rlaudit.stats import power_seeds

    ex = power_explorer(variance_section(sd=10.0, mean=100.0))
    ex.figure()
    art = ex._artists
    # the default: a 10% gap (10 = one SD) at alpha 0.05, power 80%: 17 seeds per side (Cohen)
    assert art["detect"].get_xdata()[0] == power_seeds(10.0, 10.0) == 17
    assert art["clear"].get_xdata()[0] == equivalence_seeds(10.0, 10.0)
    n, power = art["curve"].get_data()
    assert power[list(n).index(17)] >= 0.8 > power[list(n).index(16)]
    ex.set(effect=50.0, alpha=0.01, power=0.95)  # 50% of a mean of 100: five SDs
    assert art["detect"].get_xdata()[0] == power_seeds(10.0, 50.0, alpha=0.01, power=0.95)
    assert art["target"].get_ydata()[0] == 0.95
    assert "alpha 0.01 and power 95%" in art["ax"].get_title()
    # no spread measured: a note instead of a calculator
    assert "No power calculator" in repr(power_explorer(variance_section(sd=0.0, mean=1.0)))


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


def config_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "key": ["optimizer.lr", "loss.vf_coef", "loss.ent_coef", "env.num_envs"],
            "subsystem": ["optimizer", "loss", "loss", "env"],
            "baseline": [3e-4, 0.5, 0.01, 8],
            "candidate": [3e-4, 5.0, 0.01, None],
            "change": ["same", "changed", "same", "removed"],
        }
    )


def test_the_config_explorer_filters_diff_only_by_key_and_by_subsystem() -> None:
    from rlaudit.config.explore import ALL, diff_explorer

    ex = diff_explorer(config_table())
    assert list(ex.table()["key"]) == ["loss.vf_coef", "env.num_envs"]  # diff only, at first
    assert ex.table()["candidate"].tolist() == ["5.0", "—"]
    ex.set(diff_only=False)
    assert len(ex.table()) == 4
    ex.set(search="COEF")
    assert list(ex.table()["key"]) == ["loss.vf_coef", "loss.ent_coef"]
    ex.set(search="", subsystem="env")
    assert list(ex.table()["key"]) == ["env.num_envs"] and ex.table()["room"].tolist() == ["05_env"]
    ex.set(subsystem=ALL, search="nothing like it")
    assert ex.table().empty and "no rows match" in ex._markup()


def test_the_config_explorer_live_follows_its_widgets_and_batch_shows_the_diff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rlaudit.config.explore import diff_explorer

    ex = diff_explorer(config_table())
    ex.widget()
    ex._widgets["diff_only"].value = False
    ex._widgets["search"].value = "lr"
    assert ex.drawn == ex.values and list(ex.shown["key"]) == ["optimizer.lr"]
    assert "optimizer.lr" in ex._html.value and "(1 rows)" in ex._status.value
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setattr(explore, "interactive", lambda: False)
    batch = diff_explorer(config_table())
    batch._ipython_display_()
    assert "loss.vf_coef" in shown[0].data and "optimizer.lr" not in shown[0].data


def test_the_layer_picker_offers_one_dropdown_per_picked_column() -> None:
    from rlaudit.optimizer.explore import layer_table

    rows = []
    for side, scale in (("baseline", 1.0), ("candidate", 10.0)):
        for step in (1, 2, 3):
            for layer in ("actor.0.weight", "critic.0.weight"):
                rows.append(
                    {"side": side, "seed": 0, "step": step, "layer": layer, "grad_norm": scale * step,
                     "weight_norm": 5.0, "update_ratio": scale * 0.01}
                )  # fmt: skip
    table = layer_table(pd.DataFrame(rows))
    assert set(table["quantity"]) == {"update ratio |dw|/|w|", "gradient norm", "weight norm"}
    ex = explore.curves_explorer(table, title="layers", pick=("layer", "quantity"), smooth=0.0)
    assert [c.name for c in ex.controls[:2]] == ["layer", "quantity"]
    ex.set(layer="critic.0.weight", quantity="gradient norm")
    x, y = ex._artists["lines"]["candidate"].get_data()
    np.testing.assert_allclose(y, 10.0 * np.asarray(x))  # the candidate's gradient norm, 10 x step
    assert ex._artists["ax"].get_ylabel() == "critic.0.weight · gradient norm"
