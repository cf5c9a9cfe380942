"""Figures of the memory audit (matplotlib Figures built without pyplot)."""

from __future__ import annotations

from typing import Any

from rlaudit.env.plots import SIDE_COLORS, _figure


def rss_over_time(rollout: Any, training: Any | None = None) -> Any:
    """Resident memory (MiB) over environment steps, baseline and candidate overlaid.

    Args:
        rollout: DataFrame with ``side``, ``env_steps``, ``rss_bytes`` (the long rollout).
        training: Optional DataFrame with ``side``, ``seed``, ``step``, ``rss_bytes`` (the shared runs).
    """
    panels = 2 if training is not None and len(training) else 1
    fig, axes = _figure(5.0 * panels, 3.2, ncols=panels)
    for side, color in SIDE_COLORS.items():
        part = rollout[rollout["side"] == side]
        axes[0].plot(part["env_steps"], part["rss_bytes"] / 2**20, marker="o", color=color, label=side)
    axes[0].set_xlabel("env steps (rollout)")
    axes[0].set_ylabel("RSS (MiB)")
    axes[0].set_title("fixed-policy rollout")
    axes[0].legend(fontsize=8)
    if panels == 2:
        for (side, seed), part in training.groupby(["side", "seed"]):
            axes[1].plot(
                part["step"],
                part["rss_bytes"] / 2**20,
                color=SIDE_COLORS.get(side),
                alpha=0.8,
                label=f"{side} seed {seed}",
            )
        axes[1].set_xlabel("env steps (training)")
        axes[1].set_title("shared training runs")
        axes[1].legend(fontsize=7)
    return fig


def growth_bars(table: Any, title: str) -> Any:
    """Horizontal bars: growth per 1000 episodes of the fastest-growing items, both sides.

    Args:
        table: DataFrame with ``item``, ``side``, ``per_1000_episodes``.
    """
    import seaborn as sns

    fig, (ax,) = _figure(7.5, max(2.4, 0.35 * table["item"].nunique() + 1.0))
    if table.empty:
        ax.set_title(f"{title}: nothing grows")
        return fig
    sns.barplot(
        data=table, y="item", x="per_1000_episodes", hue="side", palette=SIDE_COLORS, orient="h", ax=ax
    )
    ax.set_xlabel("growth per 1000 episodes")
    ax.set_ylabel("")
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title(title)
    return fig
