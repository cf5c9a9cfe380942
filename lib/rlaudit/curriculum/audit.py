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
from rlaudit.env.analysis import rollout_pair, sizes
from rlaudit.evidence import fmt, interval, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.timing import calibrated
from rlaudit.workbench import Pair, Workbench

CALLS = ("sample", "update")


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
    neither = not any(has.values())
    return c.section(
        c.finding(
            Status.NOTED if neither else Status.SUSPECT,
            Severity.INFO if neither else Severity.HIGH,
            baseline="curriculum" if has["baseline"] else "none",
            candidate="curriculum" if has["candidate"] else "none",
            summary="make_curriculum(config) builds no curriculum for "
            + " and ".join(s for s in SIDES if not has[s]),
            remediation="Nothing to compare without a curriculum."
            if neither
            else "Check why one setup trains without a curriculum.",
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
    "Given the same scores, both curricula sample tasks from the same distribution",
    title="Same scores in, same tasks out?",
    probe=probes.sampling,
    params=lambda wb, seed=0: {"seed": seed, "episodes": sizes(wb.profile).curriculum_episodes},
    desc="curriculum sampling",
)
def sampling(c: Check, pair: Pair) -> Section:
    """Open-loop chi-square of the sampling distributions; closed-loop choice sequences when reproducible."""
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
        status, severity = Status.CLEARED, Severity.INFO
        summary = (
            f"the same scores give the same sampling distribution over {len(tasks_b)} tasks (total variation "
            f"{fmt(test['tvd'])}, chi-square p = {fmt(test['p'])}); {seq_note}"
        )
        remediation = "Nothing to do."
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
    "The cost of sample() and update() grows the same way with the task-pool size",
    title="How does a curriculum call's cost grow with the task pool?",
    probe=probes.scaling,
    params=_scaling_params,
    desc="curriculum cost scaling",
)
def scaling(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """Per-call CPU time over pool sizes (16 to 4096); the log-log slope with a bootstrap interval."""
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
        tb = timings["baseline"][timings["baseline"]["size"] == big][f"{call}_seconds"]
        tc = timings["candidate"][timings["candidate"]["size"] == big][f"{call}_seconds"]
        ratio = stats.bootstrap_ratio_ci(tc, tb, stat=np.median, seed=seed)
        finding = c.finding(
            Status.CONFIRMED if cand.low > 0.7 else Status.SUSPECT,
            Severity.HIGH,
            baseline=_slope_text(call, b),
            candidate=_slope_text(call, cand),
            effect=cand.point - b.point,
            effect_label="difference of log-log slopes (cost exponent)",
            ci=(cand.low - b.high, cand.high - b.low),
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
        finding = c.finding(
            Status.CLEARED,
            baseline={call: round(fits["baseline"][call].point, 3) for call in CALLS},
            candidate={call: round(fits["candidate"][call].point, 3) for call in CALLS},
            summary="per-call cost scales alike: "
            + "; ".join(
                f"{call}() slope {fmt(fits['baseline'][call].point)} vs {fmt(fits['candidate'][call].point)}"
                for call in CALLS
            ),
            details={"fits": table.to_dict("records")},
            remediation="Nothing to do.",
            figures=["cost scaling"],
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
    """Trend of a per-call cost over blocks: Mann-Kendall, Theil-Sen slope, growth over the run.

    The cost is taken in calibration units when the blocks carry ``calib_seconds`` (a fixed workload timed
    right after each block), so a machine that gets busier during the run does not read as a trend.
    """
    y = calibrated(blocks, blocks[column].to_numpy(dtype=float), seconds=True)
    x = blocks["episodes"].to_numpy(dtype=float)
    t = stats.trend_test(y, x)
    med = float(np.median(y))
    span = float(x[-1] - x[0]) if len(x) > 1 else 0.0
    rel = t["slope"] * span / med if med > 0 else math.nan
    return {
        "p": t["p"],
        "direction": t["direction"],
        "slope": t["slope"],
        "relative_growth": rel,
        "median": med,
    }


def trend_pair(wb: Workbench, seed: int = 0) -> Pair:
    """The :func:`rlaudit.curriculum.probes.trend` probe on both sides (shared by the trend and overhead checks)."""
    sz = sizes(wb.profile)
    return run_probe(
        wb, probes.trend, "curriculum cost over time", seed=seed, blocks=sz.trend_blocks, calls=sz.trend_calls
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


def grows(gb: dict[str, Any], gc: dict[str, Any]) -> bool:
    """The candidate's cost rises credibly (Mann-Kendall p < 0.01) by over 25% of its median across the run,
    and by 25 points more than the baseline's."""
    rb = gb["relative_growth"] if math.isfinite(gb["relative_growth"]) else 0.0
    return (
        gc["direction"] == "increasing"
        and gc["p"] < 0.01
        and gc["relative_growth"] > 0.25
        and gc["relative_growth"] - max(rb, 0.0) > 0.25
    )


@check(
    "curriculum/trend",
    "A curriculum call does not get slower as training goes on",
    title="Does a curriculum call get slower as training goes on?",
    needs=trend_pair,
)
def cost_trend(c: Check, pair: Pair) -> Section:
    """CPU time per call over many episodes at the configured pool size; Mann-Kendall trend test."""
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
        finding = c.finding(
            Status.CLEARED,
            baseline={k: round(res[("baseline", k)]["relative_growth"], 3) for k in CALLS},
            candidate={k: round(res[("candidate", k)]["relative_growth"], 3) for k in CALLS},
            summary=f"no call gets slower over {episodes} episodes (growth over the run: "
            + "; ".join(
                f"{k}() {pct(res[('baseline', k)]['relative_growth'])} vs "
                f"{pct(res[('candidate', k)]['relative_growth'])}"
                for k in CALLS
            )
            + ")",
            details=details,
            remediation="Nothing to do.",
            figures=["cost over time"],
        )
    return c.section(finding, tables={"trend": table}, figures={"cost over time": plots.trend(long)})


# ---------------------------------------------------------------------------------------------------------
# What the curriculum costs an environment step
# ---------------------------------------------------------------------------------------------------------


def overhead_row(
    side: str, blocks: pd.DataFrame, episodes: pd.DataFrame, steps: pd.DataFrame
) -> dict[str, Any]:
    """One side's curriculum cost per episode and per vector step (µs), and its share of a vector step."""
    per_ep = float(np.median((blocks["sample_seconds"] + blocks["update_seconds"]).to_numpy()))
    eps_per_step = len(episodes) / max(1, len(steps))
    step_cost = float(steps["seconds"].median())
    cost = per_ep * eps_per_step
    return {
        "side": side,
        "episodes per vector step": eps_per_step,
        "curriculum µs per episode": 1e6 * per_ep,
        "curriculum µs per vector step": 1e6 * cost,
        "env step µs (median)": 1e6 * step_cost,
        "share of a step": cost / step_cost if step_cost > 0 else math.nan,
    }


def overhead_needs(wb: Workbench, seed: int = 0) -> list[Pair]:
    """The curriculum's cost over time and the shared random-policy rollout."""
    return [trend_pair(wb, seed), rollout_pair(wb, seed)]


@check(
    "curriculum/overhead",
    "The curriculum costs the environment the same share of a step",
    title="What does the curriculum cost an environment step?",
    needs=overhead_needs,
)
def overhead(c: Check, evidence: list[Pair], *, seed: int = 0) -> Section:
    """Curriculum cost per environment step: (sample + update) x episodes per vector step, vs the step."""
    cur, env = evidence
    if (none := _no_curriculum(c, cur)) is not None:
        return none
    blocks = {s: cur[s].table("blocks") for s in SIDES}
    rows = [overhead_row(s, blocks[s], env[s].table("episodes"), env[s].table("steps")) for s in SIDES]
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
    if ratio.low > 1.5 and cand["share of a step"] > 0.10:
        status, severity = (
            Status.CONFIRMED if cand["share of a step"] > 0.5 else Status.SUSPECT,
            Severity.HIGH,
        )
        summary = (
            f"wrapping the environment in the candidate's curriculum costs {pct(cand['share of a step'])} of an "
            f"environment step (baseline {pct(b['share of a step'])}): each episode's sample()+update() got "
            f"{fmt(ratio.point)}x more expensive"
        )
        remediation = (
            "Make the curriculum's per-episode path cheap (see the scaling check) or call it less often."
        )
    else:
        status, severity = Status.CLEARED, Severity.INFO
        summary = (
            f"the curriculum costs {pct(b['share of a step'])} vs {pct(cand['share of a step'])} of an environment "
            f"step (per-episode cost ratio {fmt(ratio.point)})"
        )
        remediation = "Nothing to do."
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
        "episodes that end per vector step under the random policy, over the median CPU time of a vector step.",
    )


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every curriculum check, in notebook order."""
    return [
        sampling(wb, seed=seed),
        scaling(wb, seed=seed),
        cost_trend(wb, seed=seed),
        overhead(wb, seed=seed),
    ]
