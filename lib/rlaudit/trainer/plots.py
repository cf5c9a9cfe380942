"""Figures of the trainer audit (built without pyplot: returned, never shown or kept open here)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.optimizer.plots import SIDE_COLORS

PHASE_COLORS = {"env": "#55a868", "inference": "#8172b3", "update": "#c44e52", "other": "#8c8c8c"}


def _figure(cols: int, rows: int = 1, width: float = 4.4, height: float = 3.2):  # -> (Figure, axes)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(cols * width, rows * height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).reshape(-1)
    return fig, axes


def geometry_figure(table: pd.DataFrame):  # -> Figure
    """Runtime geometry of both sides, relative to the baseline (log scale), config values as markers."""
    fig, axes = _figure(1, width=6.5, height=3.4)
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
    ax.set_xscale("log")
    ax.axvline(1.0, color="k", lw=0.6)
    ax.set_xlabel("relative to the baseline's runtime value")
    ax.legend(fontsize=7, loc="lower right")
    return fig


def phase_figure(table: pd.DataFrame, phases: Sequence[str]):  # -> Figure
    """Stacked bars: seconds per 1,000 steps in each phase, mean over seeds, per side; SPS per seed beside."""
    fig, axes = _figure(2, width=4.0)
    ax = axes[0]
    if phases:
        means = table.groupby("side")[list(phases)].mean().reindex(["baseline", "candidate"])
        bottom = np.zeros(len(means))
        for phase in phases:
            values = means[phase].fillna(0).to_numpy(dtype=float)
            ax.bar(means.index, values, bottom=bottom, color=PHASE_COLORS.get(phase, "#cccccc"), label=phase)
            bottom += values
        ax.set_ylabel("seconds per 1,000 env steps")
        ax.legend(fontsize=8)
    ax.set_title("where the time goes")
    ax2 = axes[1]
    for i, side in enumerate(("baseline", "candidate")):
        values = table[table["side"] == side]["sps"].astype(float).to_numpy()
        ax2.scatter(np.full(len(values), i), values, color=SIDE_COLORS[side], s=30)
        if len(values):
            ax2.hlines(values.mean(), i - 0.2, i + 0.2, color="k")
    ax2.set_xticks([0, 1])
    ax2.set_xticklabels(["baseline", "candidate"])
    ax2.set_xlim(-0.6, 1.6)
    ax2.set_ylabel("steps per second (per seed)")
    ax2.set_title("speed")
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
    fig, axes = _figure(2)
    for ax, x, label in ((axes[0], "step", "environment steps"), (axes[1], "seconds", "wall-clock seconds")):
        for side in ("baseline", "candidate"):
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
