"""Curriculum audit (notebook 06): same scores in, same tasks out? And what does each episode cost?

Case 004 is the model: a learning-progress curriculum that invalidated its cache and scanned every task slot
on every episode, O(max_tasks) per episode, so steps per second collapsed as the pool grew, while the sampled
distribution stayed exactly the same. Here both curricula get identical synthetic scores (their choices
are compared), their per-call cost is fitted against the pool size on a log-log scale (slope 0: constant,
1: linear), followed over many episodes, and set against an environment step.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, Check, check, run_probe
from rlaudit.curriculum import plots, probes
from rlaudit.env.analysis import inconclusive, rollout_pair, sizes, timing_batch
from rlaudit.evidence import fmt, interval, judge_ratio, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.timing import calibrated
from rlaudit.workbench import Pair, Workbench

CALLS = ("sample", "update")
TVD_MARGIN = 0.05
"""Two sampling distributions closer than this total variation are practically the same."""
SLOPE_MARGIN = 0.3
"""Cost exponents (log-log slopes) within this of each other scale alike (0.3: between constant and linear)."""
GROWTH_MARGIN = 0.25
"""A per-call cost that grows by less than 25% of its median over the run beyond the baseline's growth does not
get slower (one-sided: a candidate whose cost grows less than the baseline's is no concern here)."""
OVERHEAD_FACTOR = 1.15
"""Per-episode curriculum costs (in calibration units) within this factor of each other are the same."""
ADDED_SHARE = 0.02
"""A curriculum that adds less than 2% of an environment step costs practically nothing more."""


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


def _no_curriculum(c: Check, pair: Pair) -> Section | None:
    """A section saying which side's ``make_curriculum(config)`` built nothing, or None when both did."""
    has = {s: pair[s].result.get("has_curriculum", True) for s in SIDES}
    if all(has.values()):
        return None
    if not any(has.values()):
        c.missing(
            "curriculum: make_curriculum(config) returns None on both sides",
            "Nothing to compare without a curriculum; return an object with sample() and update(task, score) from "
            "make_curriculum(config) to audit one.",
            SIDES,
        )
    return c.section(
        c.finding(
            Status.SUSPECT,
            Severity.HIGH,
            baseline="curriculum" if has["baseline"] else "none",
            candidate="curriculum" if has["candidate"] else "none",
            summary="make_curriculum(config) builds no curriculum for "
            + " and ".join(s for s in SIDES if not has[s]),
            remediation="Check why one setup trains without a curriculum.",
        )
    )


# ---------------------------------------------------------------------------------------------------------
# Same scores in, same tasks out?
# ---------------------------------------------------------------------------------------------------------


def pooled_counts(phases: list[dict[str, int]], skip_first: bool = True) -> dict[str, int]:
    """Counts per task summed over phases (the initial, score-free phase left out by default)."""
    out: dict[str, int] = {}
    for counts in phases[1 if skip_first else 0 :]:
        for k, v in counts.items():
            out[k] = out.get(k, 0) + int(v)
    return out


def _sequence_note(pair: Pair, closed: dict[str, Any], repro: dict[str, bool]) -> str:
    """How the closed-loop choice sequences compare, or why they cannot be compared."""
    if all(repro.values()):
        a, b = closed["baseline"]["sequence"], closed["candidate"]["sequence"]
        div = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
        same_frac = float(np.mean([x == y for x, y in zip(a, b, strict=False)])) if a else math.nan
        if div is None:
            return f"the closed-loop choices are identical for all {len(a)} episodes"
        return f"the closed-loop choices first differ at episode {div} ({pct(same_frac)} identical)"
    irreproducible = [s for s in SIDES if not repro[s]]
    how = pair[irreproducible[0]].result.get("seeded")
    who = (
        f"the {irreproducible[0]}'s curriculum chooses"
        if len(irreproducible) == 1
        else "both curricula choose"
    )
    return (
        f"{who} differently from one instance to the next under a fixed seed (make_curriculum takes no seed; the "
        f"{how} generators were seeded), so choice sequences are not comparable and the distribution test "
        "carries the verdict"
    )


def tvd_interval(
    counts_a: dict[str, int], counts_b: dict[str, int], *, seed: int, n_boot: int = 1000
) -> tuple[float, float, float]:
    """Total variation distance between two samples of draws, with a parametric bootstrap 95% interval.

    Each resample redraws both sides' draws from their own observed frequencies (multinomial), so the interval
    carries the sampling noise of finite draws (which biases the distance upward: two identical curricula
    read a small positive distance).

    Returns:
        ``(tvd, low, high)``.
    """
    keys = sorted(set(counts_a) | set(counts_b))
    a = np.array([counts_a.get(k, 0) for k in keys], dtype=float)
    b = np.array([counts_b.get(k, 0) for k in keys], dtype=float)
    if a.sum() == 0 or b.sum() == 0:
        return math.nan, math.nan, math.nan
    pa, pb = a / a.sum(), b / b.sum()
    rng = stats.as_generator(seed)
    boot_a = rng.multinomial(int(a.sum()), pa, size=n_boot) / a.sum()
    boot_b = rng.multinomial(int(b.sum()), pb, size=n_boot) / b.sum()
    tvd = 0.5 * np.abs(boot_a - boot_b).sum(axis=1)
    point = 0.5 * float(np.abs(pa - pb).sum())
    low, high = np.quantile(tvd, [0.025, 0.975])
    return point, min(float(low), point), max(float(high), point)


def phase_table(opened: dict[str, list[dict[str, int]]]) -> pd.DataFrame:
    """Per open-loop phase: tasks drawn on each side and the chi-square test between the two draws."""
    rows = []
    for i, (pb, pc) in enumerate(zip(opened["baseline"], opened["candidate"], strict=False)):
        t = stats.chi_square_distributions(pc, pb)
        rows.append(
            {
                "phase": i,
                "tasks (baseline)": len(pb),
                "tasks (candidate)": len(pc),
                "chi2": t["statistic"],
                "p": t["p"],
                "tvd": t["tvd"],
            }
        )
    return pd.DataFrame(rows)


def _not_reproducible(c: Check, pair: Pair, repro: dict[str, bool], note: str) -> Finding:
    def side(s: str) -> str:
        return (
            "reproducible"
            if repro[s]
            else f"differs from itself at episode {pair[s].result.get('self_divergence')}"
        )

    return c.finding(
        Status.NOTED,
        Severity.LOW,
        id="curriculum/not-reproducible",
        hypothesis="A curriculum built with a fixed seed makes the same choices",
        baseline=side("baseline"),
        candidate=side("candidate"),
        summary=note,
        remediation="Give make_curriculum a seed (make_curriculum(config, seed)) so runs and audits can replay its "
        "choices.",
    )


@check(
    "curriculum/sampling",
    title="Same scores in, same tasks out?",
    probe=probes.sampling,
    params=lambda wb, seed=0: {"seed": seed, "episodes": sizes(wb.profile).curriculum_episodes},
    desc="curriculum sampling",
)
def sampling(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """Given the same scores, both curricula sample tasks from the same distribution.

    Open-loop chi-square of the sampling distributions; closed-loop choice sequences when reproducible.
    """
    if (none := _no_curriculum(c, pair)) is not None:
        return none
    opened = {s: pair[s].json("open_loop")["phases"] for s in SIDES}
    closed = {s: pair[s].json("closed_loop") for s in SIDES}
    pooled = {s: pooled_counts(opened[s]) for s in SIDES}
    test = stats.chi_square_distributions(pooled["candidate"], pooled["baseline"])
    phases = phase_table(opened)
    tasks_b, tasks_c = set(pooled["baseline"]), set(pooled["candidate"])
    keys = sorted(tasks_b | tasks_c, key=lambda k: (len(k), k))
    probs = pd.DataFrame(
        [
            {"task": k, "side": s, "probability": pooled[s].get(k, 0) / max(1, sum(pooled[s].values()))}
            for s in SIDES
            for k in keys
        ]
    )
    repro = {s: pair[s].result.get("reproducible", False) for s in SIDES}
    seq_note = _sequence_note(pair, closed, repro)
    if tasks_b != tasks_c:
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = (
            f"the curricula draw from different task sets ({len(tasks_b)} vs {len(tasks_c)} tasks; only in "
            f"candidate: {sorted(tasks_c - tasks_b)[:5]}, only in baseline: {sorted(tasks_b - tasks_c)[:5]})"
        )
        remediation = "Restore the task family (the curriculum's task lists) of the baseline."
    elif test["p"] < 0.001 and test["tvd"] > 0.05:
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = (
            f"the same scores give different sampling distributions (total variation {fmt(test['tvd'])}, "
            f"chi-square p = {fmt(test['p'])}); {seq_note}"
        )
        remediation = (
            "Diff the curriculum's scoring and sampling (learning-progress formula, exploration rate, smoothing) "
            "between versions."
        )
    else:
        tvd = tvd_interval(pooled["candidate"], pooled["baseline"], seed=seed)
        identical = all(repro.values()) and seq_note.startswith("the closed-loop choices are identical")
        if identical or tvd[2] <= TVD_MARGIN:
            status, severity = Status.CLEARED, Severity.INFO
            summary = (
                f"the same scores give the same sampling distribution over {len(tasks_b)} tasks (total variation "
                f"{fmt(tvd[0])} {interval(tvd[1], tvd[2])}, within {fmt(TVD_MARGIN)}; chi-square p = "
                f"{fmt(test['p'])}); {seq_note}"
            )
            remediation = "Nothing to do."
        else:
            status, severity, summary, remediation = inconclusive(
                f"total variation {fmt(tvd[0])} {interval(tvd[1], tvd[2])} over {len(tasks_b)} tasks "
                f"is not shown below {fmt(TVD_MARGIN)} (chi-square p = {fmt(test['p'])}); {seq_note}",
                "more draws per phase",
            )
    findings = [
        c.finding(
            status,
            severity,
            baseline=f"{len(tasks_b)} tasks, {sum(pooled['baseline'].values())} draws",
            candidate=f"{len(tasks_c)} tasks, {sum(pooled['candidate'].values())} draws",
            effect=test["tvd"],
            effect_label="total variation distance",
            test={k: test[k] for k in ("name", "statistic", "p", "dof", "cramers_v")},
            summary=summary,
            details={"phases": phases.to_dict("records"), "reproducible": repro},
            remediation=remediation,
            figures=["sampling distributions"],
        )
    ]
    if not all(repro.values()):
        findings.append(_not_reproducible(c, pair, repro, seq_note))
    return c.section(
        findings,
        tables={"per phase": phases},
        figures={"sampling distributions": plots.distributions(probs)},
        notes="Open loop: every task seen is updated with the same synthetic score each phase, in a fixed order, "
        "then 2000 draws record the distribution, so the counts of two equivalent curricula differ only by "
        "multinomial noise (a valid chi-square).",
    )


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
        remediation="Nothing to do." if alike else inconclusive("", rerun)[3],
        figures=[figure],
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


def _scaling_params(wb: Workbench, seed: int = 0) -> dict[str, Any]:
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
    params=_scaling_params,
    desc="curriculum cost scaling",
)
def scaling(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """The cost of sample() and update() grows the same way with the task-pool size.

    Per-call CPU time over pool sizes (16 to 4096); the log-log slope with a bootstrap interval.
    """
    if (none := _no_curriculum(c, pair)) is not None:
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
                f"({fmt(ratio.point)}x {interval(ratio.low, ratio.high)}), case 004's O(max_tasks) scan per episode"
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
        )
    sz = sizes(c.profile)
    return c.section(
        finding,
        tables={"cost exponents": table},
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


def trend_pair(wb: Workbench, seed: int = 0) -> Pair:
    """The :func:`rlaudit.curriculum.probes.trend` probe on both sides (shared by the trend and overhead checks)."""
    sz = sizes(wb.profile)
    return run_probe(
        wb,
        probes.trend,
        "curriculum cost over time",
        seed=seed,
        blocks=sz.trend_blocks,
        calls=sz.trend_calls,
        batch=timing_batch(wb),
    )


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


@check(
    "curriculum/trend",
    title="Does a curriculum call get slower as training goes on?",
    needs=trend_pair,
    reads=("memory",),
)
def cost_trend(c: Check, pair: Pair) -> Section:
    """A curriculum call does not get slower as training goes on.

    CPU time per call over many episodes at the configured pool size; Mann-Kendall trend test.
    """
    if (none := _no_curriculum(c, pair)) is not None:
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


# ---------------------------------------------------------------------------------------------------------
# What the curriculum costs an environment step
# ---------------------------------------------------------------------------------------------------------


def overhead_row(
    side: str, blocks: pd.DataFrame, episodes: pd.DataFrame, steps: pd.DataFrame, rollout_calib: list[float]
) -> dict[str, Any]:
    """One side's curriculum cost per episode and per vector step (µs), and its share of a vector step.

    The share sets two probes' timings against each other (the curriculum's blocks and the rollout's steps,
    measured at different moments), so each is taken in units of the calibration workload timed beside it.

    Args:
        blocks: The trend probe's blocks (``sample_seconds``, ``update_seconds``, ``calib_seconds``).
        episodes, steps: The random-policy rollout's tables.
        rollout_calib: The calibration workload's seconds timed after the rollout (empty: shares in seconds).
    """
    per_ep = (blocks["sample_seconds"] + blocks["update_seconds"]).to_numpy(dtype=float)
    eps_per_step = len(episodes) / max(1, len(steps))
    step_cost = float(steps["seconds"].median())
    calib = [x for x in rollout_calib if x > 0]
    if calib and "calib_seconds" in blocks:
        units = float(np.median(calibrated(blocks, per_ep, seconds=False))) * eps_per_step
        share = units / (step_cost / float(np.median(calib))) if step_cost > 0 else math.nan
    else:
        share = float(np.median(per_ep)) * eps_per_step / step_cost if step_cost > 0 else math.nan
    return {
        "side": side,
        "episodes per vector step": eps_per_step,
        "curriculum µs per episode": 1e6 * float(np.median(per_ep)),
        "curriculum µs per vector step": 1e6 * float(np.median(per_ep)) * eps_per_step,
        "env step µs (median)": 1e6 * step_cost,
        "share of a step": share,
    }


def overhead_verdict(ratio: stats.Interval, share_b: float, share_c: float) -> tuple[Status, Severity, str]:
    """Status, severity and the kind of verdict (``confirmed``, ``costlier``, ``cheaper``, ``same``, ``open``)
    from the per-episode cost ratio and the two shares of a step.

    A changed cost counts when the ratio's interval excludes 1 beyond ``OVERHEAD_FACTOR`` and the candidate's
    curriculum adds more than ``ADDED_SHARE`` of a step; the severity follows the share it adds. The two are the
    same when the ratio lies within the factor, or the added share's interval within ``ADDED_SHARE``.
    """
    added = share_c - share_b
    scale = [ratio.low / ratio.point, ratio.high / ratio.point] if ratio.point > 0 else [math.nan, math.nan]
    added_low, added_high = share_c * scale[0] - share_b, share_c * scale[1] - share_b
    verdict = judge_ratio(*ratio, OVERHEAD_FACTOR)
    if ratio.low > 1.5 and share_c > 0.5:
        return Status.CONFIRMED, Severity.HIGH, "confirmed"
    if verdict.different and ratio.point > 1 and added > ADDED_SHARE:
        return Status.SUSPECT, Severity.HIGH if added >= 0.10 else Severity.MEDIUM, "costlier"
    if verdict.different and ratio.point < 1 and added < -ADDED_SHARE:
        return Status.NOTED, Severity.LOW, "cheaper"
    if verdict.equivalent or (-ADDED_SHARE <= added_low and added_high <= ADDED_SHARE):
        return Status.CLEARED, Severity.INFO, "same"
    return Status.NOTED, Severity.INFO, "open"


def overhead_needs(wb: Workbench, seed: int = 0) -> list[Pair]:
    """The curriculum's cost over time and the shared random-policy rollout."""
    return [trend_pair(wb, seed), rollout_pair(wb, seed)]


@check(
    "curriculum/overhead",
    title="What does the curriculum cost an environment step?",
    needs=overhead_needs,
    reads=("env", "memory"),
)
def overhead(c: Check, evidence: list[Pair], *, seed: int = 0) -> Section:
    """The curriculum costs the environment the same share of a step.

    Curriculum cost per environment step: (sample + update) x episodes per vector step, vs the step.
    """
    cur, env = evidence
    if (none := _no_curriculum(c, cur)) is not None:
        return none
    blocks = {s: cur[s].table("blocks") for s in SIDES}
    rows = [
        overhead_row(
            s,
            blocks[s],
            env[s].table("episodes"),
            env[s].table("steps"),
            env[s].json("facts").get("calib_seconds", []),
        )
        for s in SIDES
    ]
    table = pd.DataFrame(rows)
    # the side-by-side ratio in calibration units, so a side measured while the machine ran slower is not
    # charged for it; the table keeps microseconds
    per_episode = {
        s: calibrated(
            blocks[s], (blocks[s]["sample_seconds"] + blocks[s]["update_seconds"]).to_numpy(), seconds=False
        )
        for s in SIDES
    }
    ratio = stats.bootstrap_ratio_ci(
        per_episode["candidate"], per_episode["baseline"], stat=np.median, seed=seed
    )
    b, cand = rows
    status, severity, kind = overhead_verdict(ratio, b["share of a step"], cand["share of a step"])
    shares = f"{pct(cand['share of a step'])} of an environment step (baseline {pct(b['share of a step'])})"
    cost = f"{fmt(ratio.point)}x {interval(ratio.low, ratio.high)}"
    if kind in ("confirmed", "costlier"):
        summary = (
            f"wrapping the environment in the candidate's curriculum costs {shares}: each episode's "
            f"sample()+update() got {cost} more expensive"
        )
        remediation = (
            "Make the curriculum's per-episode path cheap (see the scaling check) or call it less often."
        )
    elif kind == "cheaper":
        summary = f"the candidate's curriculum is cheaper: {shares}, per-episode cost {cost}"
        remediation = "Nothing to do for a regression."
    elif kind == "same":
        summary = (
            f"the curriculum costs {pct(b['share of a step'])} vs {pct(cand['share of a step'])} of an environment "
            f"step (per-episode cost ratio {cost}): the same within ×{fmt(OVERHEAD_FACTOR)} or "
            f"{pct(ADDED_SHARE)} of a step"
        )
        remediation = "Nothing to do."
    else:
        _, _, summary, remediation = inconclusive(
            f"the curriculum costs {shares}, per-episode cost ratio {cost}, neither shown the same within "
            f"×{fmt(OVERHEAD_FACTOR)} nor surely costlier by {pct(ADDED_SHARE)} of a step",
            "more and longer timed blocks",
        )
    finding = c.finding(
        status,
        severity,
        baseline=f"{pct(b['share of a step'])} of a step ({fmt(b['curriculum µs per vector step'])} µs)",
        candidate=f"{pct(cand['share of a step'])} of a step ({fmt(cand['curriculum µs per vector step'])} µs)",
        effect=ratio.point,
        effect_label="curriculum cost per episode, candidate / baseline",
        ci=(ratio.low, ratio.high),
        summary=summary,
        details={"table": table.to_dict("records")},
        remediation=remediation,
    )
    return c.section(
        finding,
        tables={"curriculum overhead": table},
        notes="Estimated from measured parts: CPU time per sample()+update() at the configured pool size, times the "
        "episodes that end per vector step under the random policy, over the median CPU time of a vector step; "
        "each in units of a calibration workload timed beside it, so probes timed at different moments compare.",
    )


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every curriculum check, in notebook order."""
    return [
        sampling(wb, seed=seed),
        scaling(wb, seed=seed),
        cost_trend(wb, seed=seed),
        overhead(wb, seed=seed),
    ]
