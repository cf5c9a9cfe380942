"""Agents figures: per-layer activation statistics side by side (seaborn; built without pyplot)."""

from __future__ import annotations

from typing import Any

import pandas as pd


def activations_figure(table: pd.DataFrame) -> Any:
    """Bars per layer: activation std and fraction of dead units, baseline vs candidate.

    Args:
        table: :func:`rlaudit.agents.activations.activation_table` (columns layer, kind, std_b, std_c, dead_b, dead_c).

    Returns:
        A matplotlib Figure.
    """
    import seaborn as sns
    from matplotlib.figure import Figure

    long = []
    for r in table.itertuples(index=False):
        for side, suffix in (("baseline", "b"), ("candidate", "c")):
            long.append(
                {
                    "layer": r.layer,
                    "side": side,
                    "std": getattr(r, f"std_{suffix}"),
                    "dead fraction": getattr(r, f"dead_{suffix}"),
                }
            )
    df = pd.DataFrame(long)
    fig = Figure(figsize=(max(6.0, 0.55 * len(table) + 2), 5.2), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for ax, col in zip(axes, ("std", "dead fraction"), strict=True):
        sns.barplot(data=df, x="layer", y=col, hue="side", ax=ax, palette=["#4C72B0", "#DD8452"])
        ax.set_ylabel(col)
        ax.set_xlabel("")
        if col == "dead fraction":
            ax.set_ylim(0, max(0.05, float(df[col].max() or 0) * 1.2))
    axes[1].tick_params(axis="x", rotation=45)
    axes[0].set_title("Activation statistics at initialization (mean over seeds)")
    return fig
