"""Figures of the optimizer audit (built without pyplot: returned, never shown or kept open here)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from rlaudit.trainer.plots import SIDE_COLORS, figure

__all__ = ["SIDE_COLORS", "grad_norm_figure", "schedules_figure", "update_ratio_figure"]


def schedules_figure(curves: pd.DataFrame):  # -> Figure
    """One panel per coefficient: its runtime value over normalized progress, a line per (side, seed).

    Args:
        curves: Columns ``name``, ``side``, ``seed``, ``progress`` (0 to 1), ``value``.
    """
    import seaborn as sns

    names = list(dict.fromkeys(curves["name"])) if not curves.empty else ["learning rate"]
    fig, axes = figure(len(names), width=4.2, height=3.0)
    for ax, name in zip(axes, names, strict=True):
        part = curves[curves["name"] == name]
        if part.empty:
            ax.set_title(f"{name} (not recorded)")
            continue
        # each value holds until the next record; the last one holds to the end of the run
        ends = part.sort_values("progress").groupby(["side", "seed"], sort=False).tail(1).assign(progress=1.0)
        part = pd.concat([part, ends], ignore_index=True).sort_values(
            ["side", "seed", "progress"], kind="stable"
        )
        sns.lineplot(
            data=part,
            x="progress",
            y="value",
            hue="side",
            units="seed",
            estimator=None,
            drawstyle="steps-post",
            palette=SIDE_COLORS,
            ax=ax,
            linewidth=1.4,
            alpha=0.85,
        )
        ax.set_title(name)
        ax.set_xlabel("fraction of training done")
        ax.set_ylabel("")
    fig.suptitle("Effective schedules at runtime (recorder)")
    return fig


def grad_norm_figure(
    updates: pd.DataFrame, thresholds: Mapping[str, tuple[str | None, float | None]]
):  # -> Figure
    """Total gradient norm before (solid) and after (dashed) clipping per optimizer step, per side."""
    fig, axes = figure(2, width=4.2, height=3.0)
    g0 = updates[updates["group"] == 0]
    for ax, side in zip(axes, ("baseline", "candidate"), strict=True):
        part = g0[g0["side"] == side]
        for i, (_, rows) in enumerate(part.groupby("seed")):
            first = i == 0  # one legend entry per kind of line, not per seed
            ax.plot(
                rows["update"],
                rows["grad_norm"],
                color=SIDE_COLORS[side],
                lw=1.0,
                alpha=0.8,
                label="before clipping (a line per seed)" if first else None,
            )
            ax.plot(
                rows["update"],
                rows["grad_norm_clipped"],
                color="k",
                lw=0.8,
                ls="--",
                alpha=0.6,
                label="after clipping" if first else None,
            )
        threshold = thresholds.get(side, (None, None))[1]
        if threshold is not None:
            ax.axhline(threshold, color="red", lw=0.8, ls=":", label=f"threshold {threshold:g}")
        ax.set_title(side)
        ax.set_xlabel("optimizer step")
        ax.set_ylabel("total gradient norm")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    return fig


def update_ratio_figure(table: pd.DataFrame):  # -> Figure
    """Median per-layer update ratio ``|dw| / |w|`` on both sides (log scale), one bar pair per tensor."""
    fig, axes = figure(1, width=max(5.0, 0.45 * len(table) + 2), height=3.4)
    ax = axes[0]
    x = np.arange(len(table))
    width = 0.4
    for i, side in enumerate(("baseline", "candidate")):
        ax.bar(
            x + (i - 0.5) * width,
            table[side].to_numpy(dtype=float),
            width,
            color=SIDE_COLORS[side],
            label=side,
        )
    ax.set_xticks(x)
    ax.set_xticklabels(table["layer"].tolist(), rotation=60, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("median |dw| / |w| per step")
    ax.legend(fontsize=8)
    return fig
