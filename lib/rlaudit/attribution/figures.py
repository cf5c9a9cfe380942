"""Figures of attribution: the share of each gap every arm restores (forest plot), the learning curves of the
baseline, the candidate and the best variants (averaged over seeds on one step grid), and the throughput
waterfall. A panel with nothing to draw says why."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.attribution.arms import DEFAULT_DELTA, SPS, Attribution
from rlaudit.attribution.ranking import gap_label, overlap
from rlaudit.trainer.runs import RunData

LABEL_WIDTH = 34
"""Characters per line of an arm's name on an axis (longer names wrap onto more lines, never cut)."""

_VERDICT_COLOR = {"cause": "#c0392b", "minor": "#d98880", "no effect": "#7f8c8d", "undecided": "#e67e22"}
INCOMPARABLE_COLOR = "#bdc3c7"
"""A share whose runs were timed at too different loads (no verdict): light grey, an open marker."""
INCOMPARABLE_LABEL = "not comparable: timed at too different loads"


def wrap(text: str, width: int = LABEL_WIDTH) -> str:
    """``text`` on lines of at most ``width`` characters, broken at spaces, and inside a longer word after
    ``/``, ``_`` or ``.`` (metric names such as ``charts/episodic_return``), else anywhere: a long arm or
    metric name is shown whole, never cut short."""
    lines: list[str] = []
    for word in str(text).split(" "):
        parts = re.split(r"(?<=[/_.])", word) if len(word) > width else [word]
        for i, part in enumerate(parts):
            glue = " " if i == 0 and lines and lines[-1] else ""
            if lines and len(lines[-1]) + len(glue) + len(part) <= width:
                lines[-1] += glue + part
                continue
            while len(part) > width:
                lines.append(part[:width])
                part = part[width:]
            lines.append(part)
    return "\n".join(lines)


def _empty(ax: Any, why: str) -> None:
    ax.text(0.5, 0.5, textwrap.fill(why, 60), ha="center", va="center", wrap=True)
    ax.set_axis_off()


def _why_no_gap(result: Attribution) -> str:
    notes = [g.get("note", "") for g in result.gaps.values() if g.get("note")]
    return " ".join(notes) or "no measurable gap on any metric: nothing was attributed"


# ------------------------------------------------------------------------------------------------------------
# Forest plot
# ------------------------------------------------------------------------------------------------------------


def forest_plot(result: Attribution, delta: float = DEFAULT_DELTA):  # -> Figure
    """Fraction of each gap restored by each arm, with 95% intervals (one panel per metric with a gap). A share
    whose runs were timed at too different loads (``incomparable``) is drawn light grey with an open marker and
    named so in the legend: a number, never a verdict."""
    import matplotlib.pyplot as plt

    metrics = [m for m in result.metrics if result.gaps.get(m, {}).get("measurable")]
    labels = {m: [wrap(r["arm"]) for r in result.ranking.get(m, [])] for m in metrics}
    # every row as tall as the tallest label (rows are evenly spaced), so no wrapped label reaches a neighbour's
    rows = max((len(ls) for ls in labels.values()), default=1)
    tallest = max((label.count("\n") + 1 for ls in labels.values() for label in ls), default=1)
    fig, axes = plt.subplots(
        1,
        max(1, len(metrics)),
        figsize=(6.5 * max(1, len(metrics)), 1.3 + 0.2 * max(3, rows * (tallest + 0.6))),
        squeeze=False,
    )
    if not metrics:
        _empty(axes[0][0], _why_no_gap(result))
        return fig
    for ax, m in zip(axes[0], metrics, strict=True):
        rows = result.ranking.get(m, [])
        if not rows:
            _empty(ax, f"{result.label(m)}: no arm was measured (no suspect, or the budget ran out)")
            continue
        y = np.arange(len(rows))[::-1]
        grey = False
        for yi, r in zip(y, rows, strict=True):
            incomparable = bool(r.get("incomparable"))
            first, grey = incomparable and not grey, grey or incomparable
            ax.errorbar(
                r["point"],
                yi,
                xerr=[[r["point"] - r["low"]], [r["high"] - r["point"]]],
                fmt="o",
                color=INCOMPARABLE_COLOR if incomparable else _VERDICT_COLOR.get(r["verdict"], "#34495e"),
                markerfacecolor="white" if incomparable else None,
                capsize=3,
                label=INCOMPARABLE_LABEL if first else None,
            )
        if grey:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), fontsize="small", frameon=False)
        ax.set_yticks(y, labels[m])
        for x, style in ((0, "-"), (delta, ":"), (1, "--")):
            ax.axvline(x, color="black", linestyle=style, linewidth=0.8)
        ax.set_xlabel(f"fraction of {gap_label(m)} restored")  # the title names the metric
        ax.set_title(wrap(result.label(m), 60))
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------------------------
# Learning curves on one step grid
# ------------------------------------------------------------------------------------------------------------


def binned_curve(series: pd.DataFrame, edges: np.ndarray) -> np.ndarray:
    """One run's curve on a step grid: the mean value of the points in each bin, interior empty bins filled
    by linear interpolation between their neighbours (bins before the first or after the last point stay NaN).

    Args:
        series: ``step``, ``value`` (one row per episode or logged point).
        edges: Bin edges in environment steps, shape (bins + 1,), increasing.

    Returns:
        Shape (bins,): the run's value per bin.
    """
    bins = len(edges) - 1
    out = np.full(bins, np.nan)
    if series.empty:
        return out
    steps = series["step"].to_numpy(dtype=float)
    values = series["value"].to_numpy(dtype=float)
    ok = np.isfinite(steps) & np.isfinite(values)
    idx = np.clip(np.searchsorted(edges, steps[ok], side="right") - 1, 0, bins - 1)
    sums = np.bincount(idx, weights=values[ok], minlength=bins)
    counts = np.bincount(idx, minlength=bins)
    filled = counts > 0
    out[filled] = sums[filled] / counts[filled]
    if filled.sum() >= 2:
        centers = np.arange(bins, dtype=float)
        first, last = np.flatnonzero(filled)[[0, -1]]
        inside = (centers >= first) & (centers <= last) & ~filled
        out[inside] = np.interp(centers[inside], centers[filled], out[filled])
    return out


MIN_SEEDS_FOR_BAND = 3
"""Seeds from which a bin's band is a Student-t interval. At two seeds the t interval is 12.7 standard errors
wide (one degree of freedom) and drowns the curves, so the band shows the two seeds' range instead."""


def mean_curves(
    curves: Mapping[str, Sequence[pd.DataFrame]], bins: int = 20, level: float = 0.95
) -> pd.DataFrame:
    """Learning curves averaged over seeds on one step grid shared by every arm.

    Each run is binned on the same grid (:func:`binned_curve`; the grid spans 0 to the last step of any run),
    then the runs of an arm are averaged bin by bin. Seeds whose episodes end at different steps would
    otherwise draw a zig-zag between their points.

    Args:
        curves: Arm name -> one ``(step, value)`` table per seed.
        bins: Grid points.
        level: Coverage of the Student-t band.

    Returns:
        Columns ``arm``, ``step`` (bin centre), ``mean``, ``low``, ``high``, ``n`` (seeds with a value there)
        and ``band``: ``"t"`` (a Student-t interval over seeds, from :data:`MIN_SEEDS_FOR_BAND` seeds),
        ``"range"`` (the lowest and highest seed, with two) or ``""`` (one seed: ``low``/``high`` NaN). Bins no
        seed reached are left out.
    """
    from scipy.stats import t as student_t

    ends = [float(s["step"].max()) for runs in curves.values() for s in runs if not s.empty]
    columns = ["arm", "step", "mean", "low", "high", "n", "band"]
    if not ends or max(ends) <= 0:
        return pd.DataFrame(columns=columns)
    edges = np.linspace(0.0, max(ends), bins + 1)
    centers = 0.5 * (edges[:-1] + edges[1:])
    frames = []
    for arm, runs in curves.items():
        matrix = np.array([binned_curve(s, edges) for s in runs if not s.empty]).reshape(-1, bins)
        finite = np.isfinite(matrix)
        n = finite.sum(axis=0)
        keep = n > 0
        if not keep.any():
            continue
        values = np.where(finite, matrix, 0.0)
        mean = values.sum(axis=0) / np.maximum(n, 1)
        sd = np.sqrt((np.where(finite, matrix - mean, 0.0) ** 2).sum(axis=0) / np.maximum(n - 1, 1))
        half = student_t.ppf(0.5 + level / 2, np.maximum(n - 1, 1)) * sd / np.sqrt(np.maximum(n, 1))
        lowest = np.where(finite, matrix, np.inf).min(axis=0)
        highest = np.where(finite, matrix, -np.inf).max(axis=0)
        t_band, two = n >= MIN_SEEDS_FOR_BAND, n == 2
        low = np.where(t_band, mean - half, np.where(two, lowest, np.nan))
        high = np.where(t_band, mean + half, np.where(two, highest, np.nan))
        band = np.where(t_band, "t", np.where(two, "range", ""))
        frames.append(
            pd.DataFrame(
                {
                    "arm": arm,
                    "step": centers[keep],
                    "mean": mean[keep],
                    "low": low[keep],
                    "high": high[keep],
                    "n": n[keep],
                    "band": band[keep],
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def curves_plot(result: Attribution, top: int = 2, bins: int = 20):  # -> Figure
    """Learning curves of the primary metric: the baseline, the candidate and the ``top`` single restores of
    its ranking, each the mean over seeds on one step grid, shaded with a 95% t band over seeds (the seeds'
    range with two seeds; :func:`mean_curves`)."""
    import matplotlib.pyplot as plt

    metric = result.primary
    best = [r["arm"] for r in result.ranking.get(metric.name, []) if r["single"]][:top]
    arms = {a.name: a for a in result.arms}
    curves: dict[str, list[pd.DataFrame]] = {}
    runs = failed = 0
    for name in ["baseline", "candidate", *best]:
        arm = arms.get(name)
        for res in arm.results if arm is not None else []:
            if res is None:
                continue
            if not res.ok:
                failed += 1
                continue
            runs += 1
            curves.setdefault(name, []).append(RunData.from_result(res, name).metric(metric))
    data = mean_curves(curves, bins=bins)
    fig, ax = plt.subplots(figsize=(8, 4))
    if data.empty:
        if runs:
            why = f"the training runs did not report {metric.name}. {metric.how_to_report}"
        elif failed:
            why = f"no training run completed ({failed} failed: see the arms table)"
        else:
            why = "no training runs to draw"
        _empty(ax, f"No learning curves: {why}")
        return fig
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, part) in enumerate(data.groupby("arm", sort=False)):
        color = colors[i % len(colors)]
        seeds = len(curves.get(str(name), []))
        shaded = {"t": ", 95% CI", "range": ", range"}.get(str(part["band"].iloc[-1]), "")
        label = wrap(f"{name} ({seeds} seed{'s' if seeds != 1 else ''}{shaded})", 40)
        ax.plot(part["step"], part["mean"], color=color, label=label)
        ax.fill_between(part["step"], part["low"], part["high"], color=color, alpha=0.2, linewidth=0)
    name = wrap(metric.name, 40)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(f"{name}\nper episode" if metric.source == "episode" else name)
    better = "" if metric.direction == "higher" else f" ({metric.better} is better)"
    ax.set_title(wrap(f"{metric.name}{better}: baseline, candidate and the best variants", 70))
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------------------------------------
# Throughput waterfall
# ------------------------------------------------------------------------------------------------------------


def sps_waterfall(result: Attribution):  # -> Figure
    """From the candidate's SPS to the baseline's: what each single cause restores, and what is left.

    The bars never pass the baseline. When the singles overlap (they add up to well over the gap,
    :func:`~rlaudit.attribution.ranking.overlap`), one bar shows what they restore together and the title says
    so; when that joint restore was not measured, each single is drawn alone from the candidate (not stacked)
    and the remainder is not established. When the causes restore more than the gap (seed noise, or overlap),
    the negative remainder is drawn distinctly: hatched, ending at the baseline, and labelled with its share."""
    import matplotlib.pyplot as plt

    gap = result.gaps.get(SPS, {})
    base, cand = gap.get("baseline"), gap.get("candidate")
    rows = [r for r in result.ranking.get(SPS, []) if r["single"] and r["verdict"] in ("cause", "minor")]
    overlapping = overlap(result, SPS)
    joint = "was not measured"
    if overlapping is not None and (overlapping["together"] or {}).get("incomparable"):
        overlapping = {**overlapping, "together": None}  # timed at too different loads: not drawn as decided
        joint = "was timed at too different loads"
    left_out = [r for r in result.ranking.get(SPS, []) if r["single"] and r.get("incomparable")]
    stacked = True
    if overlapping is not None and overlapping["together"] is not None:
        rows = [
            {"arm": "together (overlapping): " + " + ".join(overlapping["arms"]), **overlapping["together"]}
        ]
    elif overlapping is not None:
        stacked = False  # no joint restore: each single alone, never added up
    rest = "unexplained" if gap.get("measurable") else "not attributed"
    names = [r["arm"] if stacked else f"alone: {r['arm']}" for r in rows]
    labels = ["candidate", *(wrap(n) for n in names), rest, "baseline"]
    lines = sum(label.count("\n") + 1 for label in labels)
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.3 * max(8, lines)))
    if (
        base is None
        or cand is None
        or not (np.isfinite(base) and np.isfinite(cand))
        or cand <= 0
        or base <= 0
    ):
        _empty(ax, gap.get("note") or "No throughput measured: no training run reported its steps per second")
        return fig
    top = max(base, cand)
    starts, widths, shares = [0.0], [cand], [""]
    colors, hatches = ["#7f8c8d"], [""]
    # shares are of the CPU time per step (they add up there); each bar is the SPS gained by taking that
    # cause's time off what is left, so the steps are cumulative and end at the baseline when nothing is left
    cost, cost_gap = 1.0 / cand, 1.0 / cand - 1.0 / base
    level = cand
    for r in rows:
        after = 1.0 / max((cost if stacked else 1.0 / cand) - r["point"] * cost_gap, 1e-12)
        start = level if stacked else cand
        starts.append(start)
        widths.append(max(min(after, top) - start, 0.0))  # never past the baseline
        shares.append(f"{r['point']:.0%}")
        colors.append("#27ae60")
        hatches.append("" if stacked else "..")
        if stacked:
            cost, level = 1.0 / after, after
    remainder = 1.0 - sum(r["point"] for r in rows) if stacked else None
    if remainder is None:
        starts.append(0.0)
        widths.append(0.0)
        shares.append(f"not established: the singles overlap and their joint restore {joint}")
        colors.append("#bdc3c7")
        hatches.append("")
    elif level <= base:
        starts.append(level)
        widths.append(base - level)
        shares.append(f"{remainder:.0%}" if rows and gap.get("measurable") else "")
        colors.append("#bdc3c7")
        hatches.append("")
    else:  # a negative remainder: the causes restore more than the gap; drawn back from the baseline
        excess = min(level - base, base)
        labels[-2] = "over-restored"
        starts.append(base - excess)
        widths.append(excess)
        shares.append(f"{remainder:.0%}: restored more than the gap (seed noise or overlap)")
        colors.append("none")
        hatches.append("////")
    starts.append(0.0)
    widths.append(base)
    shares.append("")
    colors.append("#2c3e50")
    hatches.append("")
    y = np.arange(len(labels))[::-1]
    for yi, s, w, c, h, share in zip(y, starts, widths, colors, hatches, shares, strict=True):
        edge = "#c0392b" if c == "none" else ("#1e8449" if h else c)
        ax.barh(yi, w, left=s, color=c, hatch=h, edgecolor=edge, linewidth=1.2 if h else 0)
        if not share:
            continue
        if w > 0.25 * top:  # inside the bar
            x, ha, text = s + w / 2, "center", share
        elif s > top / 2:  # left of a bar near the baseline
            x, ha, text = s - 0.01 * top, "right", wrap(share, 50)
        else:
            x, ha, text = s + w + 0.01 * top, "left", wrap(share, 50)
        light = ha != "center" or c in ("none", "#bdc3c7")
        ax.text(x, yi, text, va="center", ha=ha, fontsize=8, color="black" if light else "white")
    ax.set_yticks(y, labels)
    ax.set_xlim(0, top * 1.02)
    ax.xaxis.set_major_formatter(lambda v, _: f"{v / 1000:g}k" if v else "0")
    ax.set_xlabel("steps per CPU-second of training")
    title = "SPS waterfall: candidate → causes restored → baseline"
    if overlapping is not None:
        title += "\n(the single causes overlap: " + (
            "their joint restore is drawn)" if stacked else "each drawn alone, not added up)"
        )
    if not gap.get("measurable"):
        title += "\n(no measurable throughput gap: nothing attributed)"
    if left_out:
        title += f"\n({len(left_out)} undecided, not drawn: {INCOMPARABLE_LABEL})"
    ax.set_title(title)
    fig.tight_layout()
    return fig
