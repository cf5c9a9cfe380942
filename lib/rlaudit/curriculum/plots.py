"""Figures of the curriculum audit (matplotlib Figures built without pyplot)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlaudit.env.plots import SIDE_COLORS, _figure


def scaling(table: Any, fits: dict[tuple[str, str], tuple[float, float, float]]) -> Any:
    """Cost per call against task-pool size, log-log, one panel per call, with the fitted slopes.

    Args:
        table: DataFrame with ``side``, ``size``, ``call`` (``sample``/``update``), ``seconds``.
        fits: (side, call) -> (slope, low, high).
    """
    calls = ["sample", "update"]
    fig, axes = _figure(10.0, 3.4, ncols=2)
    for ax, call in zip(axes, calls, strict=True):
        part = table[table["call"] == call]
        for side, color in SIDE_COLORS.items():
            p = part[part["side"] == side]
            if p.empty:
                continue
            ax.scatter(p["size"], 1e6 * p["seconds"], s=10, alpha=0.5, color=color)
            med = p.groupby("size")["seconds"].median()
            slope, low, high = fits.get((side, call), (np.nan, np.nan, np.nan))
            ax.plot(
                med.index,
                1e6 * med.to_numpy(),
                color=color,
                marker="o",
                label=f"{side}: slope {slope:.2f} [{low:.2f}, {high:.2f}]",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("task-pool size")
        ax.set_ylabel("µs per call (CPU)")
        ax.set_title(f"{call}()")
        ax.legend(fontsize=8)
    return fig


def trend(table: Any) -> Any:
    """Cost per call over episodes played at a fixed pool size.

    Args:
        table: DataFrame with ``side``, ``episodes``, ``call``, ``seconds``.
    """
    fig, axes = _figure(10.0, 3.2, ncols=2)
    for ax, call in zip(axes, ["sample", "update"], strict=True):
        part = table[table["call"] == call]
        for side, color in SIDE_COLORS.items():
            p = part[part["side"] == side]
            ax.plot(p["episodes"], 1e6 * p["seconds"], color=color, marker=".", label=side)
        ax.set_yscale("log")
        ax.set_xlabel("episodes played")
        ax.set_ylabel("µs per call (CPU)")
        ax.set_title(f"{call}() over time")
        ax.legend(fontsize=8)
    return fig


def distributions(counts: Any) -> Any:
    """Task-sampling distributions after the same scores, baseline beside candidate.

    Args:
        counts: DataFrame with ``task``, ``side``, ``probability``.
    """
    import seaborn as sns

    fig, (ax,) = _figure(max(6.0, 0.35 * counts["task"].nunique()), 3.0)
    sns.barplot(data=counts, x="task", y="probability", hue="side", palette=SIDE_COLORS, ax=ax)
    ax.tick_params(axis="x", rotation=90, labelsize=7)
    ax.set_title("how often each task is drawn after the same synthetic scores (all phases)")
    return fig
