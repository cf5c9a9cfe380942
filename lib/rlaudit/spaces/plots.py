"""Spaces figures: a heatmap of the per-feature shift, first-layer inputs on the training and evaluation paths,
and the input's cost (built without pyplot)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

COLORS = {"baseline": "#4C72B0", "candidate": "#DD8452"}


def smd_heatmap(smd: np.ndarray, title: str = "", rows: Sequence[str] | None = None, width: int = 32) -> Any:
    """Standardized mean differences as a heatmap, clipped to ±1 (diverging, 0 = white).

    Args:
        smd: (D,) one value per feature, laid out in rows of ``width`` features; or (R, D) with one row each
            (``rows`` names them), e.g. the blocks of a stacked observation.
        title: Figure title.
        rows: Row labels for a 2-D ``smd``.
        width: Features per row for a 1-D ``smd``.
    """
    import seaborn as sns
    from matplotlib.figure import Figure

    values = np.clip(np.nan_to_num(np.asarray(smd, dtype=float), posinf=1.0, neginf=-1.0), -1.0, 1.0)
    if values.ndim == 1:
        d = values.size
        n_rows = max(1, math.ceil(d / width))
        grid = np.full(n_rows * width, np.nan)
        grid[:d] = values
        grid = grid.reshape(n_rows, width)
        ylabels = [f"{i * width}–{min(d, (i + 1) * width) - 1}" for i in range(n_rows)]
    else:
        grid = values
        ylabels = list(rows) if rows is not None else [str(i) for i in range(len(values))]
    fig = Figure(
        figsize=(min(14.0, 2.0 + 0.08 * grid.shape[1] * 3), 1.2 + 0.35 * grid.shape[0]), layout="constrained"
    )
    ax = fig.subplots()
    sns.heatmap(
        grid,
        ax=ax,
        cmap="RdBu_r",
        vmin=-1,
        vmax=1,
        center=0,
        yticklabels=ylabels,
        xticklabels=False,
        cbar_kws={"label": "SMD (clipped to ±1)"},
    )
    ax.set_xlabel("feature")
    ax.set_title(title, fontsize=10)
    return fig


def input_paths_figure(arrays: Mapping[str, Mapping[str, np.ndarray]]) -> Any:
    """Per side, each input feature's std on the training path vs the evaluation path.

    Args:
        arrays: side -> the ``inputs.npz`` arrays (``training|std``, ``evaluation|std``, ...).
    """
    from matplotlib.figure import Figure

    sides = [s for s in ("baseline", "candidate") if s in arrays]
    fig = Figure(figsize=(11, 3.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(sides), sharey=True))
    for ax, side in zip(axes, sides, strict=True):
        a = arrays[side]
        for path, style in (("training", "-"), ("evaluation", "--"), ("raw", ":")):
            key = f"{path}|std"
            if key in a:
                ax.plot(np.arange(len(a[key])), a[key], style, label=path, lw=1.2)
        ax.set_title(f"{side}: first-layer input std per feature", fontsize=10)
        ax.set_xlabel("feature")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("std over observations")
    return fig


def cost_figure(table: pd.DataFrame, times_a: np.ndarray, times_b: np.ndarray) -> Any:
    """Left: candidate/baseline ratios of the input's costs; right: forward CPU time per call, block by block.

    Args:
        table: The cost table (``quantity``, ``ratio``).
        times_a, times_b: Baseline and candidate CPU seconds per forward call, one value per timed block.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    rated = table.dropna(subset=["ratio"])
    labels = [str(q).split(",")[0][:34] for q in rated["quantity"]]
    left.barh(labels, rated["ratio"].astype(float), color="#8172B3")
    left.axvline(1.0, color="k", lw=0.8)
    ratios = rated["ratio"].astype(float)
    if len(ratios) and ratios.max() / max(ratios.min(), 1e-12) > 4:
        left.set_xscale("log")
    left.set_xlabel("candidate / baseline")
    left.set_title("Cost of the input", fontsize=10)
    for side, values, marker in (("baseline", times_a, "o-"), ("candidate", times_b, "s-")):
        x = np.arange(1, len(values) + 1)
        right.plot(x, np.asarray(values) * 1e6, marker, ms=3, color=COLORS[side], label=side)
    right.set_xlabel("timed block (rounds in order)")
    right.set_ylabel("CPU µs per forward call")
    right.set_title("Forward pass, side by side", fontsize=10)
    right.legend(fontsize=8)
    return fig
