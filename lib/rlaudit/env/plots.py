"""Figures of the environment audit. Each returns a matplotlib Figure built without pyplot (no backend is
touched, nothing is left open)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

SIDE_COLORS = {"baseline": "#4C72B0", "candidate": "#DD8452"}


def new_figure(width: float, height: float, ncols: int = 1, nrows: int = 1) -> tuple[Any, np.ndarray]:
    """A constrained-layout figure (not registered with pyplot) and its axes as a flat array; the rooms' plots
    share it."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).reshape(-1)
    return fig, axes


def divergence(fractions: Mapping[str, np.ndarray], title: str = "") -> Any:
    """Per step, the fraction of environments whose field differs between baseline and candidate.

    Args:
        fractions: field name -> ``(steps,)`` fractions in [0, 1] (step 0 is the reset).
    """
    fig, (ax,) = new_figure(7.5, 3.0)
    for name, values in fractions.items():
        ax.plot(np.arange(len(values)), values, label=name, linewidth=1.3)
    ax.set_xlabel("step (0 = reset)")
    ax.set_ylabel("envs that differ")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title or "where the two environments diverge")
    return fig


def histograms(samples: Mapping[str, Mapping[str, Sequence[float]]], title: str = "") -> Any:
    """Overlaid histograms, one panel per quantity.

    Args:
        samples: panel name -> {side: values}.
    """
    import seaborn as sns

    names = list(samples)
    fig, axes = new_figure(4.0 * max(1, len(names)), 3.2, ncols=max(1, len(names)))
    for ax, name in zip(axes, names, strict=False):
        data = samples[name]
        pooled = np.concatenate([np.asarray(v, dtype=float) for v in data.values()]) if data else np.zeros(0)
        if pooled.size == 0:
            ax.set_title(f"{name} (no episodes)")
            continue
        bins = np.histogram_bin_edges(pooled, bins=min(40, max(5, int(np.sqrt(pooled.size)))))
        for side, values in data.items():
            sns.histplot(
                np.asarray(values, dtype=float),
                bins=bins,
                stat="density",
                element="step",
                fill=True,
                alpha=0.3,
                color=SIDE_COLORS.get(side),
                label=f"{side} (n={len(values)})",
                ax=ax,
            )
        ax.set_title(name)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def reset_raster(ends: Mapping[str, tuple[np.ndarray, np.ndarray]], num_envs: Mapping[str, int]) -> Any:
    """Where each environment's episodes ended: one dot per (step, env), one panel per side.

    Args:
        ends: side -> (``end_steps``, ``env_ids``) of every finished episode.
        num_envs: side -> number of environments.
    """
    sides = list(ends)
    fig, axes = new_figure(7.5, 2.4 * len(sides), nrows=len(sides))
    for ax, side in zip(axes, sides, strict=False):
        steps, envs = ends[side]
        ax.scatter(steps, envs, s=12, color=SIDE_COLORS.get(side), marker="|", linewidths=1.2)
        ax.set_ylabel("env")
        ax.set_ylim(-1, max(1, num_envs.get(side, 1)))
        ax.set_title(f"{side}: episode ends (reset steps)")
    axes[-1].set_xlabel("vector step")
    return fig


def throughput_curves(table: Any) -> Any:
    """Normalized environment steps per second against ``num_envs``, with per-repeat points.

    Args:
        table: DataFrame with columns ``side``, ``num_envs``, ``sps`` (one row per timed block).
    """
    import seaborn as sns

    fig, (ax,) = new_figure(6.0, 3.4)
    common = {"data": table, "x": "num_envs", "y": "sps", "hue": "side", "palette": SIDE_COLORS, "ax": ax}
    sns.lineplot(**common, estimator="median", errorbar=("pi", 50), marker="o")
    sns.stripplot(**common, native_scale=True, size=3, alpha=0.5, legend=False)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("num_envs")
    ax.set_ylabel("env steps / s (measured)")
    ax.set_title("throughput (median and interquartile range of repeats)")
    return fig
