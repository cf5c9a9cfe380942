"""Checkpointing figures: a resumed run's metrics against the uninterrupted run's (built without pyplot)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlaudit.trainer.plots import panels


def resume_figure(table: pd.DataFrame, max_metrics: int = 6) -> Any:
    """Per metric, the uninterrupted run (solid) and the resumed run (markers) after the resume point.

    Args:
        table: :func:`rlaudit.checkpointing.audit.continuity` rows of both sides (with a ``side`` column).
        max_metrics: Panels drawn: the metrics with the largest relative differences, losses first on ties.
    """
    order = table.groupby("name")["rel_diff"].max() if not table.empty else pd.Series(dtype=float)
    # largest differences first; among equals, losses before the rest
    ranked = sorted(order.index, key=lambda n: (-float(order[n]), "loss" not in n, n))
    names = ranked[:max_metrics]
    fig, axes = panels(len(names), width=4.3)
    colors = {"baseline": "#4C72B0", "candidate": "#DD8452"}
    for ax, name in zip(axes, names, strict=True):
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
    fig.suptitle("After the resume point: uninterrupted (crosses) vs resumed (circles)")
    return fig
