"""The scalar picker of 03_logging: a logged episode statistic against the recorder's truth, with the
averaging window as a slider, so a wrong window shows as the gap closing at another setting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rlaudit.explore import Explorer, choice, nothing_to_explore, slider, toggle
from rlaudit.logging.logged import logged
from rlaudit.logging.truth import logged_statistic, statistics
from rlaudit.metrics import SCALAR
from rlaudit.trainer.common import SIDES

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

MAX_WINDOW = 1000


def truth_series(wb: Workbench) -> dict[tuple[str, str, int], tuple[Any, Any]]:
    """``{(statistic, side, seed): (logged (step, value) frame, the run's episodes)}`` for every statistic
    that is logged and reported per episode (what ``logging/truth`` compares)."""
    evidence = logged(wb)
    if not evidence.logs:
        return {}
    out = {}
    metric = wb.metric
    for key, _label in statistics(metric):
        if key == metric.name and metric.source == SCALAR:
            continue
        for side in SIDES:
            values, _tag, _source = logged_statistic(evidence.logs[side], evidence.data[side], key)
            for run in evidence.data[side]:
                episodes = run.table("episodes")
                part = values[values["seed"] == run.seed].sort_values("step")
                if part.empty or key not in episodes:
                    continue
                out[(key, side, int(run.seed))] = (part, episodes)
    return out


def window_truth(episodes: Any, key: str, steps: Any, window: int, cumulative: bool) -> Any:
    """At each logged step, the mean of ``key`` over the last ``window`` episodes finished by then (or over
    every episode so far); NaN before the first episode."""
    ep_steps = episodes["step"].to_numpy(dtype=float)
    values = episodes[key].to_numpy(dtype=float)
    counts = np.searchsorted(ep_steps, np.asarray(steps, dtype=float), side="right")
    csum = np.concatenate([[0.0], np.cumsum(values)])
    low = np.zeros_like(counts) if cumulative else np.maximum(counts - int(window), 0)
    n = counts - low
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (csum[counts] - csum[low]) / np.maximum(n, 1), np.nan)


def truth_explorer(wb: Workbench) -> Any:
    """The scalar picker (JupyterLab: live; the report: the first statistic, baseline, first seed)."""

    series = truth_series(wb)
    if not series:
        text = "Nothing to pick: no statistic is both logged and reported per episode (see logging/truth)."
        return nothing_to_explore(text)
    keys = list(dict.fromkeys(k for k, _, _ in series))
    seeds = sorted({s for _, _, s in series})

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.12, top=0.9)
        episodes = ax.scatter([], [], s=4, color="grey", alpha=0.25, label="episodes (recorder)")
        (truth,) = ax.plot([], [], color="#2ca02c", linewidth=2, label="recorder, averaged")
        (logged_line,) = ax.plot([], [], "o-", color="#1f77b4", markersize=3, linewidth=1, label="logged")
        ax.set_xlabel("environment steps")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
        return {"ax": ax, "episodes": episodes, "truth": truth, "logged": logged_line}

    def update(artists: dict[str, Any], values: dict[str, Any]) -> None:
        ax = artists["ax"]
        key, side, seed = values["statistic"], values["side"], values["seed"]
        found = series.get((key, side, seed))
        if found is None:
            for name in ("truth", "logged"):
                artists[name].set_data([], [])
            artists["episodes"].set_offsets(np.empty((0, 2)))
            ax.set_title(f"{side} seed {seed}: {key} is not logged in this run", fontsize="small")
            return
        part, episodes = found
        steps = part["step"].to_numpy(dtype=float)
        logged_values = part["value"].to_numpy(dtype=float)
        window = round(values["window"])
        truth = window_truth(episodes, key, steps, window, values["all_so_far"])
        artists["logged"].set_data(steps, logged_values)
        artists["truth"].set_data(steps, truth)
        artists["episodes"].set_offsets(
            np.column_stack([episodes["step"].to_numpy(dtype=float), episodes[key].to_numpy(dtype=float)])
        )
        ys = np.concatenate([logged_values, truth[np.isfinite(truth)], episodes[key].to_numpy(dtype=float)])
        ys = ys[np.isfinite(ys)]
        if ys.size:
            pad = 0.05 * (ys.max() - ys.min()) or 0.05 * max(abs(ys.max()), 1e-9)
            ax.set_ylim(ys.min() - pad, ys.max() + pad)
        ax.set_xlim(0, max(float(steps.max()), 1.0))
        ax.set_ylabel(key)
        gap = np.abs(logged_values - truth)
        gap = gap[np.isfinite(gap)]
        how = "every episode so far" if values["all_so_far"] else f"the last {window} episodes"
        worst = f"largest gap {gap.max():.3g}" if gap.size else "no point to compare"
        ax.set_title(f"{side} seed {seed}: logged {key} against {how}: {worst}", fontsize="small")

    controls = [
        choice("statistic", keys, label="statistic"),
        choice("side", list(SIDES), label="side"),
        choice("seed", seeds, label="seed"),
        slider("window", 1, MAX_WINDOW, 100, step=1, label="averaging window (episodes)"),
        toggle("all_so_far", False, label="every episode so far"),
    ]
    return Explorer(
        title="Scalar picker: logged statistics against the recorder's episodes",
        controls=controls,
        setup=setup,
        update=update,
    )


__all__ = ["Explorer", "truth_explorer", "truth_series", "window_truth"]
