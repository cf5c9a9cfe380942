"""Figures of the curriculum audit (matplotlib Figures built without pyplot)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlaudit.env.plots import SIDE_COLORS, new_figure

CALLS = ("sample", "update")


def _per_call_panels(table: Any, height: float) -> Any:
    """A figure with one panel per curriculum call, and per panel ``(ax, call, [(side, color, rows), ...])`` for
    the sides that have rows."""
    fig, axes = new_figure(10.0, height, ncols=len(CALLS))
    panels = []
    for ax, call in zip(axes, CALLS, strict=True):
        part = table[table["call"] == call]
        sides = [(side, color, part[part["side"] == side]) for side, color in SIDE_COLORS.items()]
        panels.append((ax, call, [x for x in sides if not x[2].empty]))
    return fig, panels


def _finish(ax: Any, xlabel: str, title: str) -> None:
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("µs per call (CPU)")
    ax.set_title(title)
    ax.legend(fontsize=8)


def scaling(table: Any, fits: dict[tuple[str, str], tuple[float, float, float]]) -> Any:
    """Cost per call against task-pool size, log-log, one panel per call, with the fitted slopes.

    Args:
        table: DataFrame with ``side``, ``size``, ``call`` (``sample``/``update``), ``seconds``.
        fits: (side, call) -> (slope, low, high).
    """
    fig, panels = _per_call_panels(table, 3.4)
    for ax, call, sides in panels:
        for side, color, p in sides:
            ax.scatter(p["size"], 1e6 * p["seconds"], s=10, alpha=0.5, color=color)
            med = p.groupby("size")["seconds"].median()
            slope, low, high = fits.get((side, call), (np.nan, np.nan, np.nan))
            label = f"{side}: slope {slope:.2f} [{low:.2f}, {high:.2f}]"
            ax.plot(med.index, 1e6 * med.to_numpy(), color=color, marker="o", label=label)
        ax.set_xscale("log", base=2)
        _finish(ax, "task-pool size", f"{call}()")
    return fig


def trend(table: Any) -> Any:
    """Cost per call over episodes played at a fixed pool size.

    Args:
        table: DataFrame with ``side``, ``episodes``, ``call``, ``seconds``.
    """
    fig, panels = _per_call_panels(table, 3.2)
    for ax, call, sides in panels:
        for side, color, p in sides:
            ax.plot(p["episodes"], 1e6 * p["seconds"], color=color, marker=".", label=side)
        _finish(ax, "episodes played", f"{call}() over time")
    return fig


def distributions(counts: Any) -> Any:
    """Task-sampling distributions after the same scores, baseline beside candidate.

    Args:
        counts: DataFrame with ``task``, ``side``, ``probability``.
    """
    import seaborn as sns

    fig, (ax,) = new_figure(max(6.0, 0.35 * counts["task"].nunique()), 3.0)
    sns.barplot(data=counts, x="task", y="probability", hue="side", palette=SIDE_COLORS, ax=ax)
    ax.tick_params(axis="x", rotation=90, labelsize=7)
    ax.set_title("how often each task is drawn after the same synthetic scores (all phases)")
    return fig
