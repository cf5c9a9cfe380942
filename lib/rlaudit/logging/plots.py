"""Figures of the logging audit (built without pyplot: returned, never shown or kept open here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.trainer.plots import SIDE_COLORS, figure


def presence_figure(table: pd.DataFrame):  # -> Figure
    """A grid: one row per scalar name, columns for each side's log file and recorder (filled = present)."""
    cols = [c for c in table.columns if c != "scalar"]
    fig, axes = figure(1, width=1.2 * len(cols) + 3, height=0.22 * max(1, len(table)) + 1.2)
    ax = axes[0]
    grid = table[cols].astype(float).to_numpy() if len(table) else np.zeros((1, len(cols)))
    from matplotlib.colors import ListedColormap

    ax.imshow(grid, cmap=ListedColormap(["#f4f4f4", "#4c72b0"]), vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(table)))
    ax.set_yticklabels(table["scalar"].tolist() if len(table) else [], fontsize=7)
    ax.set_title("scalars present (blue) per source")
    return fig


def truth_figure(
    frames: Mapping[str, tuple[pd.DataFrame, Mapping[int, pd.DataFrame]]], key: str, label: str
):  # -> Figure
    """Per side: the logged statistic (line) over the recorder's per-episode values (dots), first seed."""
    fig, axes = figure(2)
    for ax, side in zip(axes, ("baseline", "candidate"), strict=True):
        logged, episodes = frames[side]
        if logged.empty:
            ax.set_title(f"{side}: nothing logged")
            continue
        seed = int(sorted(logged["seed"].unique())[0])
        ep: Any = episodes.get(seed)
        if ep is not None and not ep.empty and key in ep:
            ax.scatter(ep["step"], ep[key], s=4, alpha=0.25, color="#8c8c8c", label="episodes (recorder)")
            window = ep[key].rolling(100, min_periods=1).mean()
            ax.plot(ep["step"], window, color="k", lw=0.8, ls=":", label="last 100 episodes")
        part = logged[logged["seed"] == seed].sort_values("step")
        ax.plot(
            part["step"], part["value"], color=SIDE_COLORS[side], lw=1.8, marker="o", ms=3, label="logged"
        )
        ax.set_title(f"{side} (seed {seed})")
        ax.set_xlabel("environment steps")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    return fig
