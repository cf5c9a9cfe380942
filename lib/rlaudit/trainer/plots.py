"""Figures of the trainer audit, and the figure helpers the rooms share (:func:`figure`, :func:`panels`, the side
colours). Built without pyplot: returned, never shown or kept open here."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from rlaudit import stats

SIDE_COLORS = {"baseline": "#4c72b0", "candidate": "#dd8452"}
PHASE_PALETTE = ("#55a868", "#8172b3", "#c44e52", "#937860", "#da8bc3", "#64b5cd", "#ccb974")
OTHER_COLOR = "#8c8c8c"


def figure(cols: int, rows: int = 1, width: float = 4.4, height: float = 3.2):  # -> (Figure, axes)
    """A constrained-layout Figure of ``rows x cols`` panels (``width x height`` inches each) and its axes as
    a flat array."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(cols * width, rows * height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).reshape(-1)
    return fig, axes


def panels(n: int, *, wrap: int = 3, width: float = 4.2, height: float = 3.0):  # -> (Figure, axes)
    """Small multiples: a Figure with room for ``n`` panels (``width x height`` inches each) in rows of at most
    ``wrap``, and the ``n`` axes to draw on; the grid's other axes are hidden (all of them when ``n`` is 0, so an
    empty figure stays blank)."""
    cols = min(wrap, max(1, n))
    fig, axes = figure(cols, math.ceil(max(1, n) / cols), width, height)
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def geometry_figure(table: pd.DataFrame):  # -> Figure
    """Runtime geometry of both sides, relative to the baseline (log scale), config values as markers."""
    fig, axes = figure(1, width=6.5, height=3.4)
    ax = axes[0]
    rows = table.dropna(subset=["baseline runtime"]).reset_index(drop=True)
    base = rows["baseline runtime"].astype(float).to_numpy()
    y = np.arange(len(rows))
    for side, offset in (("baseline", -0.15), ("candidate", 0.15)):
        runtime = pd.to_numeric(rows[f"{side} runtime"], errors="coerce").to_numpy(dtype=float) / base
        config = pd.to_numeric(rows[f"{side} config"], errors="coerce").to_numpy(dtype=float) / base
        ax.barh(y + offset, runtime, 0.3, color=SIDE_COLORS[side], label=f"{side} (runtime)")
        ax.scatter(
            config,
            y + offset,
            marker="|",
            s=200,
            color="k",
            zorder=3,
            label="config" if side == "baseline" else None,
        )
    ax.set_yticks(y)
    ax.set_yticklabels(rows["quantity"].tolist(), fontsize=8)
    if len(rows):
        ax.set_xscale("log")
    ax.axvline(1.0, color="k", lw=0.6)
    ax.set_xlabel("relative to the baseline's runtime value")
    ax.legend(fontsize=7, loc="lower right")
    return fig


def phase_figure(phases: pd.DataFrame, runs: pd.DataFrame):  # -> Figure
    """Stacked bars of the top-level phases (the subject's own names) in seconds per 1,000 steps per side;
    beside them, each run's calibrated speed.

    Args:
        phases: Rows of :func:`rlaudit.trainer.speed.phase_table` (``phase``, ``<side> s/1k steps``).
        runs: One row per run: ``side``, ``speed (calibrated)``.
    """
    fig, axes = figure(2, width=4.0)
    ax = axes[0]
    palette = iter(PHASE_PALETTE * 3)
    bottom = np.zeros(2)
    for row in phases.to_dict("records"):
        values = np.nan_to_num(
            np.array([row.get(f"{s} s/1k steps", np.nan) for s in SIDE_COLORS], dtype=float)
        )
        color = OTHER_COLOR if row["phase"] == "other" else next(palette)
        ax.bar(list(SIDE_COLORS), values, bottom=bottom, color=color, label=str(row["phase"]))
        bottom += values
    if len(phases):
        ax.set_ylabel("wall seconds per 1,000 env steps")
        ax.legend(fontsize=8)
    ax.set_title("where the time goes")
    ax2 = axes[1]
    for i, side in enumerate(SIDE_COLORS):
        values = runs[runs["side"] == side]["speed (calibrated)"].astype(float).dropna().to_numpy()
        ax2.scatter(np.full(len(values), i), values, color=SIDE_COLORS[side], s=30)
        if len(values):
            ax2.hlines(values.mean(), i - 0.2, i + 0.2, color="k")
    ax2.set_xticks([0, 1])
    ax2.set_xticklabels(list(SIDE_COLORS))
    ax2.set_xlim(-0.6, 1.6)
    ax2.set_ylabel("steps per calibration unit (per run)")
    ax2.set_title("speed in CPU time")
    return fig


def _band(part: pd.DataFrame, x: str, seed: int) -> pd.DataFrame:
    rows = []
    for _, g in part.groupby("bin"):
        values = g["value"].to_numpy(dtype=float)
        point, low, high = stats.bootstrap_ci(values, seed=seed) if len(values) > 1 else (values[0],) * 3
        rows.append({"x": float(g[x].mean()), "mean": point, "low": low, "high": high})
    return pd.DataFrame(rows).sort_values("x")


def learning_figure(curves: pd.DataFrame, metric: str, seed: int = 0):  # -> Figure
    """The metric against environment steps and against wall-clock: seeds thin, mean with a bootstrap band."""
    fig, axes = figure(2)
    for ax, x, label in ((axes[0], "step", "environment steps"), (axes[1], "seconds", "wall-clock seconds")):
        for side in SIDE_COLORS:
            part = curves[curves["side"] == side]
            if part.empty:
                continue
            for _, run in part.groupby("seed"):
                ax.plot(run[x], run["value"], color=SIDE_COLORS[side], lw=0.6, alpha=0.35)
            band = _band(part, x, seed)
            ax.plot(band["x"], band["mean"], color=SIDE_COLORS[side], lw=1.8, label=side)
            ax.fill_between(band["x"], band["low"], band["high"], color=SIDE_COLORS[side], alpha=0.2)
        ax.set_xlabel(label)
        ax.set_ylabel(metric)
        ax.legend(fontsize=8)
    fig.suptitle(f"{metric} per episode, binned (mean over seeds, 95% bootstrap band)")
    return fig


def minibatch_figure(tables: Mapping[str, pd.DataFrame]):  # -> Figure
    """Per side, the sample index drawn at each position of the first recorded update, epoch after epoch:
    shuffled epochs look like noise, contiguous unshuffled ones like the same staircase repeated."""
    fig, axes = figure(2, width=4.2)
    for ax, side in zip(axes, SIDE_COLORS, strict=True):
        table = tables.get(side, pd.DataFrame())
        ax.set_title(side)
        if table.empty:
            ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes)
            continue
        first = table[(table["seed"] == table["seed"].min())] if "seed" in table else table
        first = first[first["step"] == first["step"].min()].sort_values(["epoch", "minibatch", "position"])
        ax.scatter(np.arange(len(first)), first["index"], c=first["epoch"], cmap="viridis", s=2, linewidths=0)
        ax.set_xlabel("draw (epoch after epoch)")
        ax.set_ylabel("sample index in the batch")
    fig.suptitle("minibatch order of the first recorded update (colour: epoch)")
    return fig
