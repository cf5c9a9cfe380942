"""Figures of the memory audit (matplotlib Figures built without pyplot)."""

from __future__ import annotations

from typing import Any

from rlaudit.env.plots import SIDE_COLORS, new_figure


def rss_over_time(rollout: Any | None, training: Any | None = None) -> Any:
    """Resident memory (MiB) over environment steps, baseline and candidate overlaid: one panel per series
    given.

    Args:
        rollout: DataFrame with ``side``, ``env_steps``, ``rss_bytes`` (the long rollout), or None.
        training: DataFrame with ``side``, ``seed``, ``step``, ``rss_bytes`` (the shared runs), or None.
    """
    has_rollout = rollout is not None and len(rollout)
    has_training = training is not None and len(training)
    panels = max(1, int(bool(has_rollout)) + int(bool(has_training)))
    fig, axes = new_figure(5.0 * panels, 3.2, ncols=panels)
    axes = list(axes)
    if has_rollout:
        ax = axes.pop(0)
        for side, color in SIDE_COLORS.items():
            part = rollout[rollout["side"] == side]
            ax.plot(part["env_steps"], part["rss_bytes"] / 2**20, marker="o", color=color, label=side)
        ax.set_xlabel("env steps (rollout)")
        ax.set_ylabel("RSS (MiB)")
        ax.set_title("fixed-policy rollout")
        ax.legend(fontsize=8)
    if has_training:
        ax = axes.pop(0)
        for (side, seed), part in training.groupby(["side", "seed"]):
            ax.plot(
                part["step"],
                part["rss_bytes"] / 2**20,
                color=SIDE_COLORS.get(side),
                alpha=0.8,
                label=f"{side} seed {seed}",
            )
        ax.set_xlabel("env steps (training)")
        ax.set_ylabel("RSS (MiB)")
        ax.set_title("shared training runs")
        ax.legend(fontsize=7)
    return fig


def growth_bars(table: Any, title: str) -> Any:
    """Horizontal bars: growth per 1000 episodes of the fastest-growing items, both sides.

    Args:
        table: DataFrame with ``item``, ``side``, ``per_1000_episodes``.
    """
    import seaborn as sns

    fig, (ax,) = new_figure(7.5, max(2.4, 0.35 * table["item"].nunique() + 1.0))
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
