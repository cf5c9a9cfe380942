"""Figures of attribution: the share of each gap every arm restores (forest plot), the learning curves of the
baseline, the candidate and the best variants, and the throughput waterfall."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rlaudit.attribution.arms import DEFAULT_DELTA, SPS, Attribution
from rlaudit.attribution.ranking import METRIC_LABEL, gap_label
from rlaudit.trainer.runs import RunData


def forest_plot(result: Attribution, delta: float = DEFAULT_DELTA):  # -> Figure
    """Fraction of each gap restored by each arm, with 95% intervals (one panel per metric with a gap)."""
    import matplotlib.pyplot as plt

    metrics = [m for m in result.metrics if result.gaps.get(m, {}).get("measurable")]
    fig, axes = plt.subplots(
        1,
        max(1, len(metrics)),
        figsize=(
            6 * max(1, len(metrics)),
            0.5 + 0.45 * max(1, max((len(result.ranking.get(m, [])) for m in metrics), default=1)),
        ),
        squeeze=False,
    )
    for ax, m in zip(axes[0], metrics or [result.metric if hasattr(result, "metric") else ""], strict=False):
        rows = result.ranking.get(m, [])
        if not rows:
            ax.text(0.5, 0.5, "no arms measured", ha="center", va="center")
            ax.set_axis_off()
            continue
        y = np.arange(len(rows))[::-1]
        for yi, r in zip(y, rows, strict=True):
            color = {"cause": "#c0392b", "minor": "#d98880", "no effect": "#7f8c8d", "unclear": "#e67e22"}[
                r["verdict"]
            ]
            ax.errorbar(
                r["point"],
                yi,
                xerr=[[r["point"] - r["low"]], [r["high"] - r["point"]]],
                fmt="o",
                color=color,
                capsize=3,
            )
        ax.set_yticks(y, [r["arm"] if len(r["arm"]) < 48 else r["arm"][:45] + "..." for r in rows])
        for x, style in ((0, "-"), (delta, ":"), (1, "--")):
            ax.axvline(x, color="black", linestyle=style, linewidth=0.8)
        ax.set_xlabel(f"fraction of {gap_label(m)} restored")  # the title names the metric
        ax.set_title(METRIC_LABEL.get(m, m))
    fig.tight_layout()
    return fig


def _binned_curve(run: RunData, metric: str, bins: int = 20) -> pd.DataFrame:
    eps = run.table("episodes")
    if eps.empty or metric not in eps.columns:
        return pd.DataFrame()
    edges = np.linspace(0, float(eps["step"].max()) + 1, bins + 1)
    idx = np.clip(np.digitize(eps["step"], edges) - 1, 0, bins - 1)
    df = pd.DataFrame({"bin": idx, "value": eps[metric].to_numpy()}).groupby("bin", as_index=False).mean()
    df["step"] = (edges[df["bin"]] + edges[df["bin"] + 1]) / 2
    return df


def curves_plot(result: Attribution, metric: str, top: int = 2):  # -> Figure
    """Learning curves of the baseline, the candidate and the best variants (mean over seeds, 95% band)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    best = [r["arm"] for r in result.ranking.get(metric, []) if r["single"]][:top]
    arms = {a.name: a for a in result.arms}
    frames = []
    for name in ["baseline", "candidate", *best]:
        arm = arms.get(name)
        if arm is None:
            continue
        for seed, res in enumerate(arm.results):
            if res.ok:
                df = _binned_curve(RunData.from_result(res, name), metric)
                if len(df):
                    frames.append(df.assign(arm=name, seed=seed))
    fig, ax = plt.subplots(figsize=(8, 4))
    if frames:
        data = pd.concat(frames, ignore_index=True)
        sns.lineplot(data=data, x="step", y="value", hue="arm", errorbar=("ci", 95), seed=0, ax=ax)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(f"{metric} per episode")
    ax.set_title(f"{metric}: baseline, candidate and the best variants")
    fig.tight_layout()
    return fig


def sps_waterfall(result: Attribution):  # -> Figure
    """From the candidate's SPS to the baseline's: what each single cause restores, and what is left
    (negative when the causes restore more than the gap)."""
    import matplotlib.pyplot as plt

    gap = result.gaps.get(SPS, {})
    fig, ax = plt.subplots(figsize=(8, 3.5))
    if not gap or gap.get("baseline") is None or not np.isfinite(gap.get("candidate", np.nan)):
        ax.text(0.5, 0.5, "no SPS measured", ha="center", va="center")
        ax.set_axis_off()
        return fig
    base, cand = gap["baseline"], gap["candidate"]
    rows = [r for r in result.ranking.get(SPS, []) if r["single"] and r["verdict"] in ("cause", "minor")]
    labels, starts, widths = ["candidate"], [0.0], [cand]
    # shares are of the CPU time per step (they add up there); each bar is the SPS gained by taking that
    # cause's time off what is left, so the steps are cumulative and end at the baseline when nothing is left
    cost, cost_gap = 1.0 / cand, 1.0 / cand - 1.0 / base
    level = cand
    for r in rows:
        cost = max(cost - r["point"] * cost_gap, 1e-12)
        labels.append(r["arm"])
        starts.append(level)
        widths.append(1.0 / cost - level)
        level = 1.0 / cost
    labels.append("unexplained")
    starts.append(level)
    widths.append(base - level)
    labels.append("baseline")
    starts.append(0.0)
    widths.append(base)
    y = np.arange(len(labels))[::-1]
    colors = ["#7f8c8d"] + ["#27ae60"] * len(rows) + ["#bdc3c7", "#2c3e50"]
    ax.barh(y, widths, left=starts, color=colors)
    ax.set_yticks(y, labels)
    ax.set_xlabel("steps per CPU-second of training")
    ax.set_title("SPS waterfall: candidate → causes restored → baseline")
    fig.tight_layout()
    return fig
