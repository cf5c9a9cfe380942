"""Checkpointing figures: a resumed run's metrics against the uninterrupted run's (built without pyplot)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


def resume_figure(table: pd.DataFrame, max_metrics: int = 6) -> Any:
    """Per metric, the uninterrupted run (solid) and the resumed run (markers) after the resume point.

    Args:
        table: :func:`rlaudit.checkpointing.audit.continuity` rows of both sides (with a ``side`` column).
        max_metrics: Panels drawn: the metrics with the largest relative differences, losses first on ties.
    """
    from matplotlib.figure import Figure

    order = table.groupby("name")["rel_diff"].max() if not table.empty else pd.Series(dtype=float)
    # largest differences first; among equals, losses before the rest
    ranked = sorted(order.index, key=lambda n: (-float(order[n]), "loss" not in n, n))
    names = ranked[:max_metrics]
    n = max(1, len(names))
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(4.3 * cols, 3.0 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).reshape(-1)
    colors = {"baseline": "#4C72B0", "candidate": "#DD8452"}
    for ax, name in zip(axes, names, strict=False):
        part = table[table["name"] == name].sort_values("step")
        for side, group in part.groupby("side"):
            ax.plot(
                group["step"],
                group["uninterrupted"],
                "x-",
                color=colors.get(side, "k"),
                label=f"{side} uninterrupted",
            )
            ax.plot(
                group["step"],
                group["resumed"],
                "o",
                mfc="none",
                color=colors.get(side, "k"),
                label=f"{side} resumed",
            )
        ax.set_title(f"{name} (max rel. Δ {order[name]:.2g})", fontsize=9)
        ax.set_xlabel("environment step")
        ax.legend(fontsize=7)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    fig.suptitle("After the resume point: uninterrupted (crosses) vs resumed (circles)")
    return fig
