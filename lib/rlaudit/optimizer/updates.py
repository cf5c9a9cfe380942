"""What each optimizer step did at runtime: gradient norms before and after clipping against the declared
threshold, the share of clipped steps, and per-layer update ratios ``|dw| / |w|`` (the recorder's ``updates``
and ``layers`` tables of the short shared runs)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import Check, check, on_side
from rlaudit.evidence import estimate, fmt, judge, judge_ratio, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES, first_number, side_finding, stack_tables
from rlaudit.trainer.runs import TrainingRuns, short_training_runs

SEED = 0  # bootstrap seed: every interval in this room reproduces
CLIP_MARGIN = 0.25  # shares of clipped steps within 25 points of each other count as the same
RATIO_FACTOR = 3.0  # per-layer update ratios within a factor of 3 count as the same
CLIP_THRESHOLD_KEYS = (
    "max_grad_norm",
    "grad_clip",
    "clip_grad_norm",
    "grad_norm_clip",
    "max_norm",
    "gradient_clip*",
)
WATCH = "Call recorder.watch(policy, optimizer) in train(), before the first update."
CLIP_FRACTION = {
    "id": "optimizer/clip-fraction",
    "hypothesis": "The same share of updates is clipped on both sides",
}
"""The finding the clipping check adds when the share of clipped steps differs."""


def clipping_stats(updates: pd.DataFrame, threshold: float | None) -> dict[str, Any]:
    """Clipping of one side's optimizer steps (group 0 rows of the ``updates`` table, all seeds).

    Returns:
        ``steps``, ``fraction_clipped`` (post-clip norm below the pre-clip norm by more than 1e-4 relative),
        ``pre_median``/``post_median``, ``post_max``, ``over_threshold`` (steps whose applied norm exceeds the
        declared threshold by more than 1%), ``clipped`` (bool array per step), ``pre`` (the pre-clip norms).
    """
    g0 = updates[updates["group"] == 0]
    pre = g0["grad_norm"].to_numpy(dtype=float)
    post = g0["grad_norm_clipped"].to_numpy(dtype=float)
    ok = np.isfinite(pre) & np.isfinite(post)
    pre, post = pre[ok], post[ok]
    clipped = post < pre * (1 - 1e-4)
    over = int(np.sum(post > threshold * 1.01)) if threshold is not None else 0
    return {
        "steps": len(pre),
        "fraction_clipped": float(np.mean(clipped)) if len(pre) else float("nan"),
        "pre_median": float(np.median(pre)) if len(pre) else float("nan"),
        "post_median": float(np.median(post)) if len(post) else float("nan"),
        "post_max": float(np.max(post)) if len(post) else float("nan"),
        "over_threshold": over,
        "clipped": clipped,
        "pre": pre,
    }


def _not_applied(
    c: Check, side: str, key: str | None, threshold: float, st: Mapping[str, Any], alike: bool
) -> Finding:
    return side_finding(
        c,
        side,
        alike,
        id=f"optimizer/clipping-not-applied-{side}",
        hypothesis=f"The {side} clips gradients to the threshold its config declares",
        values=on_side(side, threshold),
        effect=st["post_max"],
        effect_label="largest applied gradient norm",
        summary=f"the {side}'s config declares {key} = {fmt(threshold)}, but {st['over_threshold']} of "
        f"{st['steps']} optimizer steps applied a larger gradient (up to {fmt(st['post_max'])})",
        remediation=f"Clip with the declared threshold in the {side}'s update step "
        "(clip_grad_norm_ between backward() and step()).",
    )


def _log_distance(ratio: float) -> float:
    """How far a ratio is from 1 on the log scale; a ratio of 0 (a tensor that stopped moving: the learning
    rate reached 0) or an undefined one is the farthest."""
    return abs(math.log(ratio)) if math.isfinite(ratio) and ratio > 0 else math.inf


CLIP_THRESHOLD = {
    "id": "optimizer/clip-threshold",
    "hypothesis": "Both sides declare the same gradient-clipping threshold",
}
"""A secondary finding of the clipping check: the declared thresholds differ."""


@check(
    "optimizer/grad-clipping",
    title="Gradient clipping",
    needs=short_training_runs,
    reads=("agents", "loss", "rewards", "trainer"),
)
def gradient_clipping(c: Check, runs: TrainingRuns) -> Section:
    """Gradients are clipped the same way on both sides.

    Threshold (config) against the recorder's total gradient norm before and after clipping at every step.
    """
    from rlaudit.optimizer import plots

    data = runs.data
    updates = stack_tables(data, "updates")
    lacking = [
        s for s in SIDES if updates.empty or "grad_norm" not in updates or not (updates["side"] == s).any()
    ]
    if lacking:
        c.missing("optimizer steps recorded (gradient norms before and after clipping)", WATCH, lacking)
    thresholds = {s: first_number(data[s][0].config, CLIP_THRESHOLD_KEYS) for s in SIDES}
    st = {s: clipping_stats(updates[updates["side"] == s], thresholds[s][1]) for s in SIDES}
    over = {s: thresholds[s][1] is not None and st[s]["over_threshold"] > 0 for s in SIDES}
    findings = [_not_applied(c, s, *thresholds[s], st[s], alike=all(over.values())) for s in SIDES if over[s]]
    if thresholds["baseline"][1] != thresholds["candidate"][1]:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.MEDIUM,
                **CLIP_THRESHOLD,
                baseline=thresholds["baseline"][1],
                candidate=thresholds["candidate"][1],
                summary=f"clipping threshold {fmt(thresholds['baseline'][1])} → {fmt(thresholds['candidate'][1])}",
                remediation="Restore the baseline's clipping threshold in the candidate.",
            )
        )
    # The share of clipped steps: a bootstrap over optimizer steps (independent resamples per side).
    fb, fc = st["baseline"]["clipped"].astype(float), st["candidate"]["clipped"].astype(float)
    share = stats.bootstrap_diff(fc, fb, seed=SEED) if len(fb) and len(fc) else None
    verdict = judge(*share, CLIP_MARGIN) if share is not None else None
    ratio = (
        stats.bootstrap_ratio_ci(st["candidate"]["pre"], st["baseline"]["pre"], stat=np.median, seed=SEED)
        if len(st["baseline"]["pre"]) > 1 and len(st["candidate"]["pre"]) > 1
        else None
    )
    shares = (
        f"{pct(st['candidate']['fraction_clipped'])} of the candidate's optimizer steps are clipped vs "
        + (f"{pct(st['baseline']['fraction_clipped'])} of the baseline's")
    )
    norms = "median pre-clip norm ratio " + (estimate(ratio.point, ratio.low, ratio.high) if ratio else "n/a")
    evidence: dict[str, Any] = dict(
        values={s: st[s]["fraction_clipped"] for s in SIDES},
        interval=share,
        effect_label="difference in the share of clipped steps",
    )
    if verdict is not None and verdict.different:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.MEDIUM,
                **CLIP_FRACTION,
                summary=f"{shares} (median pre-clip norm {fmt(st['candidate']['pre_median'])} vs "
                f"{fmt(st['baseline']['pre_median'])})",
                remediation="Find why the gradient norms differ (loss scale, learning rate, advantages) before "
                "changing the threshold.",
                figures=["gradient norms"],
                **evidence,
            )
        )
    if not any(f.status.is_flag for f in findings):
        if verdict is not None and verdict.equivalent:
            findings.append(
                c.finding(
                    Status.CLEARED,
                    summary=f"threshold {fmt(thresholds['baseline'][1])} on both sides; {shares} (the whole "
                    f"interval of the difference within ±{fmt(100 * CLIP_MARGIN)} points); {norms}",
                    **evidence,
                )
            )
        else:
            findings.append(
                c.finding(
                    Status.NOTED,
                    summary=f"inconclusive: {shares}, the interval of the difference reaches beyond "
                    f"±{fmt(100 * CLIP_MARGIN)} points (longer runs would settle it); {norms}",
                    **evidence,
                )
            )
    table = pd.DataFrame(
        [
            {
                "side": s,
                "threshold": thresholds[s][1],
                "threshold_key": thresholds[s][0],
                "optimizer_steps": st[s]["steps"],
                "fraction_clipped": st[s]["fraction_clipped"],
                "median_norm_before": st[s]["pre_median"],
                "median_norm_after": st[s]["post_median"],
                "max_norm_applied": st[s]["post_max"],
            }
            for s in SIDES
        ]
    )
    return c.section(
        findings,
        tables={"gradient clipping": table},
        figures={"gradient norms": plots.grad_norm_figure(updates, thresholds)},
    )


def update_ratio_table(layers: pd.DataFrame) -> pd.DataFrame:
    """Per layer: median ``|dw| / |w|`` on each side and their ratio with a bootstrap interval (seed 0)."""
    rows = []
    for layer in dict.fromkeys(layers["layer"]):
        part = layers[layers["layer"] == layer]
        b = part[part["side"] == "baseline"]["update_ratio"].dropna().to_numpy()
        c = part[part["side"] == "candidate"]["update_ratio"].dropna().to_numpy()
        row = {
            "layer": layer,
            "baseline": float(np.median(b)) if len(b) else np.nan,
            "candidate": float(np.median(c)) if len(c) else np.nan,
            "ratio": np.nan,
            "low": np.nan,
            "high": np.nan,
        }
        if len(b) >= 2 and len(c) >= 2 and np.median(b) > 0:
            ci = stats.bootstrap_ratio_ci(c, b, stat=np.median, seed=SEED)
            row.update(ratio=ci.point, low=ci.low, high=ci.high)
        rows.append(row)
    return pd.DataFrame(rows, columns=["layer", "baseline", "candidate", "ratio", "low", "high"])


def _off_and_frozen(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of :func:`update_ratio_table` whose ratio is three-fold off outside its interval (a
    learning-rate or epsilon change shows up here first), and those the candidate no longer moves at all."""
    off = table[(table["low"] > RATIO_FACTOR) | (table["high"] < 1 / RATIO_FACTOR)]
    zero = table[(table["candidate"] == 0) & (table["baseline"] > 0)]
    return off, zero


def different_layers(table: pd.DataFrame) -> list[str]:
    """The layers that move at a different rate, each once (a frozen layer is usually also three-fold off)."""
    off, zero = _off_and_frozen(table)
    return list(dict.fromkeys([*off["layer"], *zero["layer"]]))


@check(
    "optimizer/update-ratios",
    title="Per-layer update ratios",
    needs=short_training_runs,
    reads=("agents", "init", "loss", "rewards", "trainer"),
)
def update_ratios(c: Check, runs: TrainingRuns) -> Section:
    """Each layer's weights move by a similar fraction per update on both sides.

    Per-layer update ratios ``|dw| / |w|`` from the recorder's ``layers`` table (sampled optimizer steps).
    """
    from rlaudit.optimizer import plots

    layers = stack_tables(runs.data, "layers")
    lacking = [s for s in SIDES if layers.empty or not (layers["side"] == s).any()]
    if lacking:
        c.missing("per-layer update statistics (the recorder's layers table)", WATCH, lacking)
    table = update_ratio_table(layers)
    off, zero = _off_and_frozen(table)
    if len(off) or len(zero):
        worst = off.iloc[off["ratio"].apply(_log_distance).argmax()] if len(off) else zero.iloc[0]
        finding = c.finding(
            Status.SUSPECT,
            Severity.MEDIUM,
            baseline=float(worst["baseline"]),
            candidate=float(worst["candidate"]),
            effect=float(worst["ratio"]) if math.isfinite(worst["ratio"]) else None,
            effect_label=f"update-ratio ratio candidate / baseline ({worst['layer']})",
            ci=(float(worst["low"]), float(worst["high"])) if math.isfinite(worst["low"]) else None,
            summary=f"{len(different_layers(table))} of {len(table)} tensors move at a different rate; worst "
            f"`{worst['layer']}`: median |dw|/|w| {fmt(worst['baseline'])} → {fmt(worst['candidate'])}",
            details={"layers": (off if len(off) else zero)["layer"].tolist()},
            remediation="Compare the optimizer's settings and learning rate above (optimizer/hyperparameters, "
            "optimizer/lr-schedule); a per-layer gap without an optimizer difference comes from the gradients: "
            "the loss (09_loss) or the batch each update sees (02_trainer's geometry).",
            figures=["update ratios"],
        )
    else:
        kinds = [
            judge_ratio(r["ratio"], r["low"], r["high"], RATIO_FACTOR).kind for r in table.to_dict("records")
        ]
        open_layers = [
            r["layer"] for r, k in zip(table.to_dict("records"), kinds, strict=True) if k != "equivalent"
        ]
        if open_layers:
            summary = (
                f"inconclusive: {len(open_layers)} of {len(table)} tensors have a ratio interval reaching beyond "
                f"×{fmt(RATIO_FACTOR)} (or too few samples), e.g. `{open_layers[0]}`; none differs credibly (longer "
                "runs would settle it)"
            )
        else:
            summary = (
                f"every layer moves within ×{fmt(RATIO_FACTOR)} of the baseline's rate, the whole interval (median "
                f"ratio {fmt(table['ratio'].median())} over {len(table)} tensors)"
            )
        finding = c.finding(
            Status.NOTED if open_layers else Status.CLEARED,
            summary=summary,
            values={s: float(table[s].median()) for s in SIDES},
            effect=float(table["ratio"].median()) if table["ratio"].notna().any() else None,
            effect_label="median over layers of the ratio candidate / baseline",
            details={"undecided": open_layers},
        )
    return c.section(
        finding,
        tables={
            "update ratios": table.rename(
                columns={
                    "baseline": "baseline median |dw| / |w|",
                    "candidate": "candidate median |dw| / |w|",
                    "ratio": "candidate / baseline",
                    "low": "95% CI low (candidate / baseline)",
                    "high": "95% CI high (candidate / baseline)",
                }
            )
        },
        figures={"update ratios": plots.update_ratio_figure(table)},
    )
