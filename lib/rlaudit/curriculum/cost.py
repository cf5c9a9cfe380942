"""What a curriculum call costs: against the task-pool size (curriculum/scaling) and over a long run at the
configured size (curriculum/trend).

Case 004 is the model: a learning-progress curriculum that invalidated its cache and scanned every task slot
on every episode, O(max_tasks) per episode. The per-call CPU time of ``sample()`` and ``update()`` is fitted
against the pool size on a log-log scale (slope 0: constant, 1: linear) and followed over many episodes, each
timed block beside a calibration workload (:mod:`rlaudit.timing`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, Check, check, probe_evidence
from rlaudit.curriculum import plots, probes
from rlaudit.curriculum.common import no_curriculum
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.env.analysis import sizes, timing_batch
from rlaudit.evidence import fmt, inconclusive, interval, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.timing import calibrated

CALLS = ("sample", "update")
SLOPE_MARGIN = 0.3
"""Cost exponents (log-log slopes) within this of each other scale alike (0.3: between constant and linear)."""
GROWTH_MARGIN = 0.25
"""A per-call cost that grows by less than 25% of its median over the run beyond the baseline's growth does not
get slower (one-sided: a candidate whose cost grows less than the baseline's is no concern here)."""


def complexity(slope: float) -> str:
    """A name for a log-log slope: constant, sublinear, linear, superlinear."""
    if not math.isfinite(slope):
        return "unknown"
    if slope < 0.2:
        return "constant (or logarithmic)"
    if slope < 0.7:
        return "sublinear"
    if slope < 1.3:
        return "linear"
    return "superlinear"


# ---------------------------------------------------------------------------------------------------------
# Cost scaling with the pool size
# ---------------------------------------------------------------------------------------------------------


def fit_slopes(timings: pd.DataFrame, *, seed: int) -> dict[str, stats.Interval]:
    """Log-log slope of CPU time per call against pool size, per call (``sample``, ``update``)."""
    out = {}
    for call in CALLS:
        col = f"{call}_seconds"
        piv = timings.pivot_table(index="size", columns="repeat", values=col)
        piv = piv.clip(lower=1e-9)
        out[call] = stats.loglog_slope(piv.index.to_numpy(), piv.to_numpy(), seed=seed)
    return out


def per_call_verdict(
    c: Check,
    points: dict[str, dict[str, float]],
    gaps: dict[str, tuple[float, float]],
    margin: float,
    quantity: tuple[str, Any],
    claims: tuple[str, str],
    *,
    details: dict[str, Any],
    rerun: str,
    figure: str,
    worse_only: bool = False,
    measured: dict[str, dict[str, Any]] | None = None,
) -> Finding:
    """CLEARED when, for every call, the interval of the candidate's minus the baseline's quantity lies within
    ``±margin`` (with ``worse_only``, below ``+margin``: a non-inferiority test, for a hypothesis that only a
    rise contradicts); else NOTED as inconclusive (used when no call was flagged).

    Args:
        points: Side -> call -> the quantity (a cost exponent, a growth over the run).
        gaps: Call -> interval of the difference.
        quantity: ``(template with {b} and {c}, formatter)`` naming one call's values.
        claims: The summary's claim when alike, and when inconclusive (``{margin}`` is filled in).
        details, rerun, figure: The finding's details, what a larger profile would add, the figure it cites.
        measured: ``{side: {quantity: value}}`` beyond the per-call points that the comparison rests on (e.g.
            the pool sizes timed); the finding clears only when every one was measured on both sides.
    """
    alike = all((worse_only or -margin <= low) and high <= margin for low, high in gaps.values())
    template, show = quantity
    margin_text = show(margin) if show is pct else fmt(margin)
    parts = "; ".join(
        f"{k}() {template.format(b=show(points['baseline'][k]), c=show(points['candidate'][k]))} (difference "
        f"{interval(*gaps[k])})"
        for k in CALLS
    )
    claim = claims[0] if alike else f"inconclusive: {claims[1]}"
    return c.finding(
        Status.CLEARED if alike else Status.NOTED,
        baseline={k: round(v, 3) for k, v in points["baseline"].items()},
        candidate={k: round(v, 3) for k, v in points["candidate"].items()},
        summary=f"{claim.format(margin=margin_text)}: {parts}",
        details=details,
        remediation="Nothing to do." if alike else inconclusive("", rerun).remediation,
        figures=[figure],
        measured={
            s: {
                **{f"{k}() {template.split(' ', 1)[0]}": points[s][k] for k in CALLS},
                **(measured or {}).get(s, {}),
            }
            for s in SIDES
        },
    )


def slope_gap(base: stats.Interval, cand: stats.Interval) -> tuple[float, float, float]:
    """Candidate minus baseline exponent, with the conservative interval of two independent intervals."""
    return cand.point - base.point, cand.low - base.high, cand.high - base.low


def scaling_verdict(base: stats.Interval, cand: stats.Interval) -> str:
    """``worse`` when the candidate's exponent is credibly higher by more than 0.3, ``better`` for the
    reverse, else ``same``."""
    if cand.point - base.point > 0.3 and cand.low > base.high:
        return "worse"
    if base.point - cand.point > 0.3 and base.low > cand.high:
        return "better"
    return "same"


def scaling_params(wb: Workbench, seed: int = 0) -> dict[str, Any]:
    """The scaling probe's parameters at the workbench's profile (one cache entry for the check and 06's picker)."""
    sz = sizes(wb.profile)
    return {
        "seed": seed,
        "sizes": list(sz.pool_sizes),
        "repeats": sz.timing_repeats,
        "calls": sz.scaling_calls,
        "batch": timing_batch(wb),
    }


def exponent_table(
    timings: dict[str, pd.DataFrame], fits: dict[str, dict[str, stats.Interval]], common: list[int]
) -> pd.DataFrame:
    """Per side and call: the log-log slope with its interval, its complexity class, and µs per call at the
    smallest and largest common pool size."""
    rows = []
    for s in SIDES:
        for call in CALLS:
            iv = fits[s][call]
            at = {n: timings[s][timings[s]["size"] == n][f"{call}_seconds"] for n in (common[0], common[-1])}
            rows.append(
                {
                    "side": s,
                    "call": call,
                    "slope": iv.point,
                    "ci_low": iv.low,
                    "ci_high": iv.high,
                    "complexity": complexity(iv.point),
                    **{f"µs/call at {n}": 1e6 * float(v.median()) for n, v in at.items()},
                }
            )
    return pd.DataFrame(rows)


def _slope_text(call: str, iv: stats.Interval) -> str:
    return f"{call}() slope {fmt(iv.point)} {interval(iv.low, iv.high)} ({complexity(iv.point)})"


@check(
    "curriculum/scaling",
    title="How does a curriculum call's cost grow with the task pool?",
    probe=probes.scaling,
    params=scaling_params,
    desc="curriculum cost scaling",
)
def scaling(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """The cost of sample() and update() grows the same way with the task-pool size.

    Per-call CPU time over pool sizes (16 to 4096); the log-log slope with a bootstrap interval.
    """
    if (none := no_curriculum(c, pair)) is not None:
        return none
    if not all(pair[s].result.get("pool_key") for s in SIDES):
        return c.section(
            c.finding(
                Status.SKIPPED,
                summary="no config key sizes the task pool (looked for "
                + ", ".join(probes.POOL_KEYS)
                + "), so "
                "the pool size cannot be varied",
                remediation="Name the pool-size key max_tasks (or num_tasks) in the curriculum config.",
            )
        )
    timings = {s: pair[s].table("timings") for s in SIDES}
    common = sorted(set(timings["baseline"]["size"]) & set(timings["candidate"]["size"]))
    if len(common) < 2:
        return c.section(
            c.finding(
                Status.NOTED,
                summary=f"fewer than two pool sizes could be built on both sides ({common})",
                details={s: pair[s].result.get("failed") for s in SIDES},
                remediation="Check the failures in the evidence (a pool smaller than the task family cannot be built).",
            )
        )
    fits = {s: fit_slopes(timings[s][timings[s]["size"].isin(common)], seed=seed) for s in SIDES}
    table = exponent_table(timings, fits, common)
    long_df = pd.DataFrame(
        [
            {"side": s, "call": call, "size": r.size, "seconds": getattr(r, f"{call}_seconds")}
            for s in SIDES
            for call in CALLS
            for r in timings[s].itertuples()
        ]
    )
    worse = [
        (call, fits["baseline"][call], fits["candidate"][call])
        for call in CALLS
        if scaling_verdict(fits["baseline"][call], fits["candidate"][call]) == "worse"
    ]
    if worse:
        call, b, cand = max(worse, key=lambda x: x[2].point - x[1].point)
        big = common[-1]
        at_big = {s: timings[s][timings[s]["size"] == big] for s in SIDES}
        tb, tc = (at_big[s][f"{call}_seconds"] for s in SIDES)
        # the ratio between sides in calibration units: the sides may have been timed at different moments
        units = {
            s: calibrated(at_big[s], at_big[s][f"{call}_seconds"].to_numpy(), seconds=False) for s in SIDES
        }
        ratio = stats.bootstrap_ratio_ci(units["candidate"], units["baseline"], stat=np.median, seed=seed)
        finding = c.finding(
            Status.CONFIRMED if cand.low > 0.7 else Status.SUSPECT,
            Severity.HIGH,
            baseline=_slope_text(call, b),
            candidate=_slope_text(call, cand),
            effect=cand.point - b.point,
            effect_label="difference of log-log slopes (cost exponent)",
            ci=slope_gap(b, cand)[1:],
            summary=(
                f"the candidate's {call}() cost is {complexity(cand.point)} in the task-pool size (slope "
                f"{fmt(cand.point)} vs {fmt(b.point)}): at {big} tasks one call costs "
                f"{fmt(1e6 * float(tc.median()))} µs vs {fmt(1e6 * float(tb.median()))} µs "
                f"(×{fmt(ratio.point)} {interval(ratio.low, ratio.high)}), case 004's O(max_tasks) scan per episode"
            ),
            details={"fits": table.to_dict("records"), "ratio_at_largest": tuple(ratio)},
            remediation=(
                "Keep the per-episode path O(1) or O(log n): update only the changed task's weight (a sum tree) "
                "instead of invalidating and rescanning every slot on each update."
            ),
            figures=["cost scaling"],
        )
    else:
        gaps = {k: slope_gap(fits["baseline"][k], fits["candidate"][k])[1:] for k in CALLS}
        points = {side: {k: fits[side][k].point for k in CALLS} for side in SIDES}
        finding = per_call_verdict(
            c,
            points,
            gaps,
            SLOPE_MARGIN,
            ("slope {b} vs {c}", fmt),
            (
                "per-call cost scales alike, within ±{margin}",
                "no exponent surely higher, but not every one shown within ±{margin}",
            ),
            details={"fits": table.to_dict("records")},
            rerun="more repeats per pool size",
            figure="cost scaling",
            # a pool size built on one side only is a difference the common sizes' slopes do not show
            measured={
                s: {
                    f"cost at {int(n)} tasks": 1.0 if n in set(timings[s]["size"]) else None
                    for n in sorted(set(timings["baseline"]["size"]) | set(timings["candidate"]["size"]))
                }
                for s in SIDES
            },
        )
    sz = sizes(c.profile)
    return c.section(
        finding,
        tables={
            "cost exponents": table.rename(
                columns={
                    "slope": "exponent (log-log slope of µs/call on pool size)",
                    "ci_low": "95% CI low (exponent)",
                    "ci_high": "95% CI high (exponent)",
                }
            )
        },
        figures={
            "cost scaling": plots.scaling(long_df, {(s, k): tuple(fits[s][k]) for s in SIDES for k in CALLS})
        },
        notes=f"Pool sizes {common} set through `{pair.baseline.result.get('pool_key')}`; {sz.timing_repeats} "
        f"interleaved repeats of {sz.scaling_calls} calls each, CPU time.",
    )


# ---------------------------------------------------------------------------------------------------------
# Cost over time at a fixed pool size
# ---------------------------------------------------------------------------------------------------------


def growth(blocks: pd.DataFrame, column: str) -> dict[str, Any]:
    """Trend of a per-call cost over blocks: Mann-Kendall, Theil-Sen slope, growth over the run (the slope
    times the run's span over the median cost, with the Theil-Sen interval as ``growth_low``/``growth_high``).

    The cost is taken in calibration units when the blocks carry ``calib_seconds`` (a fixed workload timed
    right after each block), so a machine that gets busier during the run does not read as a trend.
    """
    y = calibrated(blocks, blocks[column].to_numpy(dtype=float), seconds=True)
    x = blocks["episodes"].to_numpy(dtype=float)
    t = stats.trend_test(y, x)
    med = float(np.median(y))
    span = float(x[-1] - x[0]) if len(x) > 1 else 0.0
    per_run = span / med if med > 0 else math.nan
    low, high = t.get("ci") or (math.nan, math.nan)
    return {
        "p": t["p"],
        "direction": t["direction"],
        "slope": t["slope"],
        "relative_growth": t["slope"] * per_run,
        "growth_low": low * per_run,
        "growth_high": high * per_run,
        "median": med,
    }


def trend_params(wb: Workbench, seed: int = 0) -> dict[str, Any]:
    """Parameters of :func:`rlaudit.curriculum.probes.trend` at the workbench's profile."""
    sz = sizes(wb.profile)
    return {"seed": seed, "blocks": sz.trend_blocks, "calls": sz.trend_calls, "batch": timing_batch(wb)}


trend_pair = probe_evidence(probes.trend, trend_params, "curriculum cost over time")
"""The trend probe on both sides, ``trend_pair(wb, seed=0) -> Pair`` (one run for the trend and overhead checks)."""


TREND = {"needs": trend_pair, "reads": ("memory",)}
"""The evidence of the trend check: per-call costs over a long run, where a structure that grows with every
episode (12_memory) shows as a rising cost."""


def trend_table(
    blocks: dict[str, pd.DataFrame],
) -> tuple[pd.DataFrame, dict[tuple[str, str], dict[str, Any]]]:
    """Per side and call: median µs per call, growth over the run, the trend test; and the growth records."""
    rows, res = [], {}
    for s in SIDES:
        for call in CALLS:
            g = res[(s, call)] = growth(blocks[s], f"{call}_seconds")
            rows.append(
                {
                    "side": s,
                    "call": call,
                    "µs/call (median)": 1e6 * g["median"],
                    "growth over the run": g["relative_growth"],
                    "trend p": g["p"],
                    "direction": g["direction"],
                }
            )
    return pd.DataFrame(rows), res


def growth_gap(gb: dict[str, Any], gc: dict[str, Any]) -> tuple[float, float]:
    """Interval of the candidate's minus the baseline's growth over the run: the two independent intervals
    combined in quadrature on each side (as Newcombe combines two proportions' intervals)."""
    d = gc["relative_growth"] - gb["relative_growth"]
    low = d - math.hypot(gc["relative_growth"] - gc["growth_low"], gb["growth_high"] - gb["relative_growth"])
    high = d + math.hypot(gc["growth_high"] - gc["relative_growth"], gb["relative_growth"] - gb["growth_low"])
    return low, high


def grows(gb: dict[str, Any], gc: dict[str, Any]) -> bool:
    """The candidate's cost rises credibly (Mann-Kendall p < 0.01) by over 25% of its median across the run,
    and by 25 points more than the baseline's."""
    rb = gb["relative_growth"] if math.isfinite(gb["relative_growth"]) else 0.0
    return (
        gc["direction"] == "increasing"
        and gc["p"] < 0.01
        and gc["relative_growth"] > GROWTH_MARGIN
        and gc["relative_growth"] - max(rb, 0.0) > GROWTH_MARGIN
    )


@check("curriculum/trend", title="Does a curriculum call get slower as training goes on?", **TREND)
def cost_trend(c: Check, pair: Pair) -> Section:
    """A curriculum call does not get slower as training goes on.

    CPU time per call over many episodes at the configured pool size; Mann-Kendall trend test.
    """
    if (none := no_curriculum(c, pair)) is not None:
        return none
    blocks = {s: pair[s].table("blocks") for s in SIDES}
    table, res = trend_table(blocks)
    long = pd.DataFrame(
        [
            {"side": s, "call": call, "episodes": r.episodes, "seconds": getattr(r, f"{call}_seconds")}
            for s in SIDES
            for r in blocks[s].itertuples()
            for call in CALLS
        ]
    )
    flagged = [(call, res[("baseline", call)], res[("candidate", call)]) for call in CALLS]
    flagged = [x for x in flagged if grows(x[1], x[2])]
    episodes = int(blocks["baseline"]["episodes"].max())
    details = {"table": table.to_dict("records")}
    if flagged:
        call, gb, gc = flagged[0]
        finding = c.finding(
            Status.SUSPECT,
            Severity.HIGH,
            baseline=f"{call}() {pct(gb['relative_growth'])} over {episodes} episodes",
            candidate=f"{call}() {pct(gc['relative_growth'])} over {episodes} episodes",
            effect=gc["relative_growth"],
            effect_label="relative growth of the cost per call over the run",
            test={"name": "mann-kendall", "p": gc["p"]},
            summary=(
                f"the candidate's {call}() gets slower as episodes accumulate (+{pct(gc['relative_growth'])} over "
                f"{episodes} episodes, Mann-Kendall p = {fmt(gc['p'])}; baseline {pct(gb['relative_growth'])}): "
                "some structure grows with every episode"
            ),
            details=details,
            remediation="Find the structure that grows per episode (12_memory lists growing containers) and bound it.",
            figures=["cost over time"],
        )
    else:
        gaps = {k: growth_gap(res[("baseline", k)], res[("candidate", k)]) for k in CALLS}
        points = {side: {k: res[(side, k)]["relative_growth"] for k in CALLS} for side in SIDES}
        finding = per_call_verdict(
            c,
            points,
            gaps,
            GROWTH_MARGIN,
            ("growth {b} vs {c} over the run", pct),
            (
                f"no call gets slower over {episodes} episodes by more than {{margin}} beyond the baseline",
                f"no call surely gets slower over {episodes} episodes, but the growth is not shown to stay within "
                "{margin} of the baseline's",
            ),
            details=details,
            rerun="more and longer blocks",
            worse_only=True,
            figure="cost over time",
        )
    return c.section(finding, tables={"trend": table}, figures={"cost over time": plots.trend(long)})
