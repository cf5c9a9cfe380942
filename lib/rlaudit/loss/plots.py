"""Figures of the loss audit (built without pyplot: returned, never shown or kept open here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.loss.gae import reference_gae
from rlaudit.trainer.plots import SIDE_COLORS, figure


def advantages_figure(verdict: Mapping[str, Mapping[str, Any]]):  # -> Figure
    """Each side's advantages against the reference GAE (computed with its own gamma and lambda)."""
    fig, axes = figure(2, width=4.2)
    for ax, side in zip(axes, ("baseline", "candidate"), strict=True):
        v = verdict[side]
        a = v["arrays"]
        trunc = (a.get("truncated"), a.get("final_values")) if v["mode"] == "kwargs" else (None, None)
        ref, _ = reference_gae(
            a["rewards"], a["values"], a["dones"], a["next_value"], v["gamma"], v["gae_lambda"], *trunc
        )
        ax.scatter(ref.reshape(-1), a["advantages"].reshape(-1), s=6, alpha=0.6, color=SIDE_COLORS[side])
        lo, hi = float(min(ref.min(), a["advantages"].min())), float(max(ref.max(), a["advantages"].max()))
        ax.plot([lo, hi], [lo, hi], color="k", lw=0.8, ls="--")
        label = ", ".join(v["matches"]) or "no known variant"
        ax.set_title(f"{side}: matches {label}", fontsize=9)
        ax.set_xlabel("reference GAE advantage")
        ax.set_ylabel("subject's advantage")
    return fig


def terms_figure(core: pd.DataFrame):  # -> Figure
    """Loss terms of both sides on the shared batch, one bar pair per term."""
    fig, axes = figure(1, width=5.0)
    ax = axes[0]
    x = np.arange(len(core))
    for i, side in enumerate(("baseline", "candidate")):
        values = pd.to_numeric(core[side], errors="coerce").to_numpy(dtype=float)
        ax.bar(x + (i - 0.5) * 0.4, values, 0.4, color=SIDE_COLORS[side], label=side)
    ax.set_xticks(x)
    ax.set_xticklabels(core["term"].tolist())
    ax.axhline(0, color="k", lw=0.6)
    ax.legend(fontsize=8)
    ax.set_title("loss terms on the shared batch")
    return fig


def gradient_figure(table: pd.DataFrame):  # -> Figure
    """Gradient norm of the total loss per parameter tensor, both sides (log scale; zero drawn at the floor)."""
    part = table.rename(columns={"loss baseline": "baseline", "loss candidate": "candidate"})
    fig, axes = figure(1, width=max(5.0, 0.5 * len(part) + 2), height=3.4)
    ax = axes[0]
    x = np.arange(len(part))
    positive = pd.concat([part["baseline"], part["candidate"]]).astype(float)
    floor = float(positive[positive > 0].min()) / 10 if (positive > 0).any() else 1e-12
    for i, side in enumerate(("baseline", "candidate")):
        values = part[side].astype(float).to_numpy()
        shown = np.where(values > 0, values, floor)
        bars = ax.bar(x + (i - 0.5) * 0.4, shown, 0.4, color=SIDE_COLORS[side], label=side)
        for bar, value in zip(bars, values, strict=True):
            if value == 0:
                bar.set_hatch("xx")
                bar.set_edgecolor("red")
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(part["parameter"].tolist(), rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("|grad| of the total loss (hatched red: exactly 0)")
    ax.legend(fontsize=8)
    return fig


def probe_grid_figure(table: pd.DataFrame):  # -> Figure
    """Pass (green) or fail (red) per probe and side, annotated with the value error."""
    probes = list(dict.fromkeys(table["probe"]))
    fig, axes = figure(1, width=4.8, height=0.5 * len(probes) + 1.2)
    ax = axes[0]
    grid = np.zeros((len(probes), 2))
    for i, probe in enumerate(probes):
        for j, side in enumerate(("baseline", "candidate")):
            row = table[(table["probe"] == probe) & (table["side"] == side)]
            ok = bool(row["passed"].iloc[0]) if len(row) else False
            grid[i, j] = 1.0 if ok else 0.0
            err = row["value_error"].iloc[0] if len(row) else None
            text = ("pass" if ok else "FAIL") + (
                f"\n|dV| {err:.2f}" if err is not None and np.isfinite(err) else ""
            )
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    from matplotlib.colors import ListedColormap

    ax.imshow(grid, cmap=ListedColormap(["#f4a6a6", "#a6dba0"]), vmin=0, vmax=1, aspect="auto")
    ax.set_xticks([0, 1])
    ax.set_xticklabels(["baseline", "candidate"])
    ax.set_yticks(range(len(probes)))
    ax.set_yticklabels(probes, fontsize=8)
    ax.set_title("probe environments")
    return fig
