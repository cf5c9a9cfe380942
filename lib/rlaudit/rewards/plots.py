"""Figures of the rewards audit (matplotlib Figures built without pyplot)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlaudit.env.plots import SIDE_COLORS, new_figure


def component_bars(table: Any, value: str = "per_episode", title: str = "") -> Any:
    """Grouped bars: each reward component's contribution per episode, baseline beside candidate.

    Args:
        table: DataFrame with columns ``component``, ``side`` and ``value``.
    """
    import seaborn as sns

    fig, (ax,) = new_figure(7.0, 3.2)
    if table.empty:
        ax.set_title("no reward components could be measured")
        return fig
    sns.barplot(data=table, x="component", y=value, hue="side", palette=SIDE_COLORS, ax=ax)
    ax.axhline(0.0, color="black", linewidth=0.6)
    ax.set_ylabel("reward per episode")
    ax.set_title(title or "reward per episode from each component (measured)")
    return fig


def value_frequencies(table: Any) -> Any:
    """How often each distinct reward value is paid per step, both sides (log scale).

    Args:
        table: DataFrame with columns ``value``, ``side``, ``frequency`` (fraction of steps).
    """
    fig, (ax,) = new_figure(7.0, 3.0)
    if table.empty:
        ax.set_title("reward values not histogrammed (too many distinct values)")
        return fig
    values = sorted(table["value"].unique())
    x = np.arange(len(values))
    width = 0.4
    for i, side in enumerate(("baseline", "candidate")):
        part = table[table["side"] == side].set_index("value")["frequency"]
        heights = [float(part.get(v, 0.0)) for v in values]
        ax.bar(x + (i - 0.5) * width, heights, width, label=side, color=SIDE_COLORS[side])
    ax.set_xticks(x, [f"{v:.4g}" for v in values], rotation=45, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("fraction of steps")
    ax.set_xlabel("reward value paid in one step")
    ax.legend(fontsize=8)
    ax.set_title("reward values paid under the random policy")
    return fig
