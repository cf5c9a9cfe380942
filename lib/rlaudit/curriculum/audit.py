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
from rlaudit.curriculum import plots, probes
from rlaudit.env import probes as env_probes
from rlaudit.env.analysis import fmt, pct, rollout_params, run_pair, sizes
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, audit_section
from rlaudit.timing import calibrated
from rlaudit.workbench import Pair, Workbench

SUBSYSTEM = "curriculum"
SIDES = ("baseline", "candidate")
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


def _no_curriculum(pair: Pair, fid: str, hypothesis: str) -> Finding | None:
    has = {s: pair[s].result.get("has_curriculum", True) for s in SIDES}
    if all(has.values()):
        return None
    status = Status.NOTED if not any(has.values()) else Status.SUSPECT
    return Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=Severity.INFO if status == Status.NOTED else Severity.HIGH,
        evidence=Evidence(
            baseline="curriculum" if has["baseline"] else "none",
            candidate="curriculum" if has["candidate"] else "none",
            summary="make_curriculum(config) builds no curriculum for "
            + " and ".join(s for s in SIDES if not has[s]),
        ),
        remediation="Nothing to compare without a curriculum."
        if status == Status.NOTED
        else "Check why one setup trains without a curriculum.",
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


@audit_section(
    "curriculum/sampling",
    SUBSYSTEM,
    "Given the same scores, both curricula sample tasks from the same distribution",
)
def sampling(wb: Workbench, *, seed: int = 0) -> Section:
    """Open-loop chi-square of the sampling distributions; closed-loop choice sequences when reproducible."""
    hypothesis = "Given the same scores, both curricula sample tasks from the same distribution"
    fid = "curriculum/sampling"
    sz = sizes(wb.profile)
    pair = run_pair(wb, probes.sampling, "curriculum sampling", seed=seed, episodes=sz.curriculum_episodes)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    if (f := _no_curriculum(pair, fid, hypothesis)) is not None:
        return Section.of(f)
    opened = {s: pair[s].json("open_loop")["phases"] for s in SIDES}
    closed = {s: pair[s].json("closed_loop") for s in SIDES}
    pooled = {s: pooled_counts(opened[s]) for s in SIDES}
    test = stats.chi_square_distributions(pooled["candidate"], pooled["baseline"])
    phase_rows = []
    for i, (pb, pc) in enumerate(zip(opened["baseline"], opened["candidate"], strict=False)):
        t = stats.chi_square_distributions(pc, pb)
        phase_rows.append(
            {
                "phase": i,
                "tasks (baseline)": len(pb),
                "tasks (candidate)": len(pc),
                "chi2": t["statistic"],
                "p": t["p"],
                "tvd": t["tvd"],
            }
        )
    phase_table = pd.DataFrame(phase_rows)
    tasks_b, tasks_c = set(pooled["baseline"]), set(pooled["candidate"])
    keys = sorted(tasks_b | tasks_c, key=lambda k: (len(k), k))
    probs = pd.DataFrame(
        [
            {"task": k, "side": s, "probability": pooled[s].get(k, 0) / max(1, sum(pooled[s].values()))}
            for s in SIDES
            for k in keys
        ]
    )
    findings = []
    repro = {s: pair[s].result.get("reproducible", False) for s in SIDES}
    seq_note = ""
    if all(repro.values()):
        a, b = closed["baseline"]["sequence"], closed["candidate"]["sequence"]
        div = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
        same_frac = float(np.mean([x == y for x, y in zip(a, b, strict=False)])) if a else math.nan
        seq_note = (
            f"the closed-loop choices are identical for all {len(a)} episodes"
            if div is None
            else f"the closed-loop choices first differ at episode {div} ({pct(same_frac)} identical)"
        )
    else:
        irreproducible = [s for s in SIDES if not repro[s]]
        how = {s: pair[s].result.get("seeded") for s in SIDES}
        who = (
            f"the {irreproducible[0]}'s curriculum chooses"
            if len(irreproducible) == 1
            else "both curricula choose"
        )
        seq_note = (
            f"{who} differently from one instance to the next under a fixed seed (make_curriculum takes no seed; "
            f"the {how[irreproducible[0]]} generators were seeded), so choice sequences are not comparable and the "
            "distribution test carries the verdict"
        )
    differs = test["p"] < 0.001 and test["tvd"] > 0.05
    if tasks_b != tasks_c:
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = (
            f"the curricula draw from different task sets ({len(tasks_b)} vs {len(tasks_c)} tasks; "
            f"only in candidate: {sorted(tasks_c - tasks_b)[:5]}, only in baseline: {sorted(tasks_b - tasks_c)[:5]})"
        )
        remediation = "Restore the task family (the curriculum's task lists) of the baseline."
    elif differs:
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = (
            f"the same scores give different sampling distributions (total variation {fmt(test['tvd'])}, "
            f"chi-square p = {fmt(test['p'])}); {seq_note}"
        )
        remediation = (
            "Diff the curriculum's scoring and sampling (learning-progress formula, exploration rate, "
            "smoothing) between versions."
        )
    else:
        status, severity = Status.CLEARED, Severity.INFO
        summary = (
            f"the same scores give the same sampling distribution over {len(tasks_b)} tasks (total "
            f"variation {fmt(test['tvd'])}, chi-square p = {fmt(test['p'])}); {seq_note}"
        )
        remediation = "Nothing to do."
    findings.append(
        Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=status,
            severity=severity,
            evidence=Evidence(
                baseline=f"{len(tasks_b)} tasks, {sum(pooled['baseline'].values())} draws",
                candidate=f"{len(tasks_c)} tasks, {sum(pooled['candidate'].values())} draws",
                effect=test["tvd"],
                effect_label="total variation distance",
                test={k: test[k] for k in ("name", "statistic", "p", "dof", "cramers_v")},
                summary=summary,
                details={"phases": phase_table.to_dict("records"), "reproducible": repro},
            ),
            remediation=remediation,
            figures=["sampling distributions"],
        )
    )
    if not all(repro.values()):
        findings.append(
            Finding(
                id="curriculum/not-reproducible",
                subsystem=SUBSYSTEM,
                hypothesis="A curriculum built with a fixed seed makes the same choices",
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    baseline="reproducible"
                    if repro["baseline"]
                    else f"differs from itself at episode {pair.baseline.result.get('self_divergence')}",
                    candidate="reproducible"
                    if repro["candidate"]
                    else f"differs from itself at episode {pair.candidate.result.get('self_divergence')}",
                    summary=seq_note,
                ),
                remediation="Give make_curriculum a seed (make_curriculum(config, seed)) so runs and audits can "
                "replay its choices.",
            )
        )
    return Section(
        title="Same scores in, same tasks out?",
        findings=findings,
        tables={"per phase": phase_table},
        figures={"sampling distributions": plots.distributions(probs)},
        notes=[
            "Open loop: every task seen is updated with the same synthetic score each phase, in a fixed order, "
            "then 2000 draws record the distribution, so the counts of two equivalent curricula differ only "
            "by multinomial noise (a valid chi-square)."
        ],
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


@audit_section(
    "curriculum/scaling",
    SUBSYSTEM,
    "The cost of sample() and update() grows the same way with the task-pool size",
)
def scaling(wb: Workbench, *, seed: int = 0) -> Section:
    """Per-call CPU time over pool sizes (16 to 4096); the log-log slope with a bootstrap interval."""
    hypothesis = "The cost of sample() and update() grows the same way with the task-pool size"
    fid = "curriculum/scaling"
    sz = sizes(wb.profile)
    pair = run_pair(
        wb,
        probes.scaling,
        "curriculum cost scaling",
        seed=seed,
        sizes=list(sz.pool_sizes),
        repeats=sz.timing_repeats,
        calls=sz.scaling_calls,
    )
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    if (f := _no_curriculum(pair, fid, hypothesis)) is not None:
        return Section.of(f)
    if not all(pair[s].result.get("pool_key") for s in SIDES):
        return Section.of(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SKIPPED,
                severity=Severity.INFO,
                evidence=Evidence(
                    summary="no config key sizes the task pool (looked for "
                    + ", ".join(probes.POOL_KEYS)
                    + "), so the pool size cannot be varied"
                ),
                remediation="Name the pool-size key max_tasks (or num_tasks) in the curriculum config.",
            )
        )
    timings = {s: pair[s].table("timings") for s in SIDES}
    common = sorted(set(timings["baseline"]["size"]) & set(timings["candidate"]["size"]))
    if len(common) < 2:
        return Section.of(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                severity=Severity.INFO,
                evidence=Evidence(
                    summary=f"fewer than two pool sizes could be built on both sides ({common})",
                    details={s: pair[s].result.get("failed") for s in SIDES},
                ),
                remediation="Check the failures in the evidence (a pool smaller than the task family cannot be built).",
            )
        )
    fits = {s: fit_slopes(timings[s][timings[s]["size"].isin(common)], seed=seed) for s in SIDES}
    rows = []
    long = []
    for s in SIDES:
        for call in CALLS:
            iv = fits[s][call]
            largest = timings[s][timings[s]["size"] == common[-1]][f"{call}_seconds"]
            smallest = timings[s][timings[s]["size"] == common[0]][f"{call}_seconds"]
            rows.append(
                {
                    "side": s,
                    "call": call,
                    "slope": iv.point,
                    "ci_low": iv.low,
                    "ci_high": iv.high,
                    "complexity": complexity(iv.point),
                    f"µs/call at {common[0]}": 1e6 * float(smallest.median()),
                    f"µs/call at {common[-1]}": 1e6 * float(largest.median()),
                }
            )
            for r in timings[s].itertuples():
                long.append(
                    {"side": s, "call": call, "size": r.size, "seconds": getattr(r, f"{call}_seconds")}
                )
    table = pd.DataFrame(rows)
    long_df = pd.DataFrame(long)
    figure = plots.scaling(long_df, {(s, c): tuple(fits[s][c]) for s in SIDES for c in CALLS})
    findings = []
    worse = [
        (c, fits["baseline"][c], fits["candidate"][c])
        for c in CALLS
        if scaling_verdict(fits["baseline"][c], fits["candidate"][c]) == "worse"
    ]
    if worse:
        call, b, c = max(worse, key=lambda x: x[2].point - x[1].point)
        big = common[-1]
        tb = timings["baseline"][timings["baseline"]["size"] == big][f"{call}_seconds"]
        tc = timings["candidate"][timings["candidate"]["size"] == big][f"{call}_seconds"]
        ratio = stats.bootstrap_ratio_ci(tc, tb, stat=np.median, seed=seed)
        status = Status.CONFIRMED if c.low > 0.7 else Status.SUSPECT
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=status,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline=f"{call}() slope {fmt(b.point)} [{fmt(b.low)}, {fmt(b.high)}] ({complexity(b.point)})",
                    candidate=f"{call}() slope {fmt(c.point)} [{fmt(c.low)}, {fmt(c.high)}] ({complexity(c.point)})",
                    effect=c.point - b.point,
                    effect_label="difference of log-log slopes (cost exponent)",
                    ci=(c.low - b.high, c.high - b.low),
                    ci_level=0.95,
                    summary=(
                        f"the candidate's {call}() cost is {complexity(c.point)} in the task-pool size (slope "
                        f"{fmt(c.point)} vs {fmt(b.point)}): at {big} tasks one call costs "
                        f"{fmt(1e6 * float(tc.median()))} µs vs {fmt(1e6 * float(tb.median()))} µs "
                        f"({fmt(ratio.point)}x [{fmt(ratio.low)}, {fmt(ratio.high)}]), case 004's "
                        "O(max_tasks) scan per episode"
                    ),
                    details={"fits": table.to_dict("records"), "ratio_at_largest": tuple(ratio)},
                ),
                remediation=(
                    "Keep the per-episode path O(1) or O(log n): update only the changed task's weight "
                    "(a sum tree) instead of invalidating and rescanning every slot on each update."
                ),
                figures=["cost scaling"],
            )
        )
    else:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                severity=Severity.INFO,
                evidence=Evidence(
                    baseline={c: round(fits["baseline"][c].point, 3) for c in CALLS},
                    candidate={c: round(fits["candidate"][c].point, 3) for c in CALLS},
                    summary="per-call cost scales alike: "
                    + "; ".join(
                        f"{c}() slope {fmt(fits['baseline'][c].point)} vs {fmt(fits['candidate'][c].point)}"
                        for c in CALLS
                    ),
                    details={"fits": table.to_dict("records")},
                ),
                remediation="Nothing to do.",
                figures=["cost scaling"],
            )
        )
    return Section(
        title="How does a curriculum call's cost grow with the task pool?",
        findings=findings,
        tables={"cost exponents": table},
        figures={"cost scaling": figure},
        notes=[
            f"Pool sizes {common} set through `{pair.baseline.result.get('pool_key')}`; "
            f"{sz.timing_repeats} interleaved repeats of {sz.scaling_calls} calls each, CPU time."
        ],
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


@audit_section("curriculum/trend", SUBSYSTEM, "A curriculum call does not get slower as training goes on")
def cost_trend(wb: Workbench, *, seed: int = 0) -> Section:
    """CPU time per call over many episodes at the configured pool size; Mann-Kendall trend test."""
    hypothesis = "A curriculum call does not get slower as training goes on"
    fid = "curriculum/trend"
    sz = sizes(wb.profile)
    pair = run_pair(
        wb, probes.trend, "curriculum cost over time", seed=seed, blocks=sz.trend_blocks, calls=sz.trend_calls
    )
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    if (f := _no_curriculum(pair, fid, hypothesis)) is not None:
        return Section.of(f)
    blocks = {s: pair[s].table("blocks") for s in SIDES}
    rows, long = [], []
    res: dict[tuple[str, str], dict[str, Any]] = {}
    for s in SIDES:
        for call in CALLS:
            g = growth(blocks[s], f"{call}_seconds")
            res[(s, call)] = g
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
        for r in blocks[s].itertuples():
            for call in CALLS:
                long.append(
                    {
                        "side": s,
                        "call": call,
                        "episodes": r.episodes,
                        "seconds": getattr(r, f"{call}_seconds"),
                    }
                )
    table = pd.DataFrame(rows)
    flagged = []
    for call in CALLS:
        gb, gc = res[("baseline", call)], res[("candidate", call)]
        rb = gb["relative_growth"] if math.isfinite(gb["relative_growth"]) else 0.0
        if (
            gc["direction"] == "increasing"
            and gc["p"] < 0.01
            and gc["relative_growth"] > 0.25
            and (gc["relative_growth"] - max(rb, 0.0) > 0.25)
        ):
            flagged.append((call, gb, gc))
    episodes = int(blocks["baseline"]["episodes"].max())
    if flagged:
        call, gb, gc = flagged[0]
        finding = Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.SUSPECT,
            severity=Severity.HIGH,
            evidence=Evidence(
                baseline=f"{call}() {pct(gb['relative_growth'])} over {episodes} episodes",
                candidate=f"{call}() {pct(gc['relative_growth'])} over {episodes} episodes",
                effect=gc["relative_growth"],
                effect_label="relative growth of the cost per call over the run",
                test={"name": "mann-kendall", "p": gc["p"]},
                summary=(
                    f"the candidate's {call}() gets slower as episodes accumulate (+{pct(gc['relative_growth'])} "
                    f"over {episodes} episodes, Mann-Kendall p = {fmt(gc['p'])}; baseline "
                    f"{pct(gb['relative_growth'])}): some structure grows with every episode"
                ),
                details={"table": table.to_dict("records")},
            ),
            remediation="Find the structure that grows per episode (12_memory lists growing containers) and bound it.",
            figures=["cost over time"],
        )
    else:
        finding = Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.CLEARED,
            severity=Severity.INFO,
            evidence=Evidence(
                baseline={c: round(res[("baseline", c)]["relative_growth"], 3) for c in CALLS},
                candidate={c: round(res[("candidate", c)]["relative_growth"], 3) for c in CALLS},
                summary=f"no call gets slower over {episodes} episodes (growth over the run: "
                + "; ".join(
                    f"{c}() {pct(res[('baseline', c)]['relative_growth'])} vs {pct(res[('candidate', c)]['relative_growth'])}"
                    for c in CALLS
                )
                + ")",
                details={"table": table.to_dict("records")},
            ),
            remediation="Nothing to do.",
            figures=["cost over time"],
        )
    return Section(
        title="Does a curriculum call get slower as training goes on?",
        findings=[finding],
        tables={"trend": table},
        figures={"cost over time": plots.trend(pd.DataFrame(long))},
    )


# ---------------------------------------------------------------------------------------------------------
# What the curriculum costs an environment step
# ---------------------------------------------------------------------------------------------------------


@audit_section(
    "curriculum/overhead", SUBSYSTEM, "The curriculum costs the environment the same share of a step"
)
def overhead(wb: Workbench, *, seed: int = 0) -> Section:
    """Curriculum cost per environment step: (sample + update) x episodes per vector step, vs the step."""
    hypothesis = "The curriculum costs the environment the same share of a step"
    fid = "curriculum/overhead"
    sz = sizes(wb.profile)
    cur = run_pair(
        wb, probes.trend, "curriculum cost over time", seed=seed, blocks=sz.trend_blocks, calls=sz.trend_calls
    )
    env = run_pair(
        wb, env_probes.rollout, "env rollout (random)", **rollout_params(wb.profile, seed, "random")
    )
    for p in (cur, env):
        if (f := p.guard(fid, SUBSYSTEM, hypothesis)) is not None:
            return Section.of(f)
    if (f := _no_curriculum(cur, fid, hypothesis)) is not None:
        return Section.of(f)
    rows = []
    per_episode = {}
    for s in SIDES:
        blocks = cur[s].table("blocks")
        episodes = env[s].table("episodes")
        steps = env[s].table("steps")
        per_ep = (blocks["sample_seconds"] + blocks["update_seconds"]).to_numpy()
        # the side-by-side ratio in calibration units, so a side measured while the machine ran slower is
        # not charged for it; the table keeps microseconds
        per_episode[s] = calibrated(blocks, per_ep, seconds=False)
        eps_per_step = len(episodes) / max(1, len(steps))
        step_cost = float(steps["seconds"].median())
        cost = float(np.median(per_ep)) * eps_per_step
        rows.append(
            {
                "side": s,
                "episodes per vector step": eps_per_step,
                "curriculum µs per episode": 1e6 * float(np.median(per_ep)),
                "curriculum µs per vector step": 1e6 * cost,
                "env step µs (median)": 1e6 * step_cost,
                "share of a step": cost / step_cost if step_cost > 0 else math.nan,
            }
        )
    table = pd.DataFrame(rows)
    ratio = stats.bootstrap_ratio_ci(
        per_episode["candidate"], per_episode["baseline"], stat=np.median, seed=seed
    )
    b, c = rows
    evidence = Evidence(
        baseline=f"{pct(b['share of a step'])} of a step ({fmt(b['curriculum µs per vector step'])} µs)",
        candidate=f"{pct(c['share of a step'])} of a step ({fmt(c['curriculum µs per vector step'])} µs)",
        effect=ratio.point,
        effect_label="curriculum cost per episode, candidate / baseline",
        ci=(ratio.low, ratio.high),
        ci_level=0.95,
        details={"table": table.to_dict("records")},
    )
    if ratio.low > 1.5 and c["share of a step"] > 0.10:
        status = Status.CONFIRMED if c["share of a step"] > 0.5 else Status.SUSPECT
        severity = Severity.HIGH
        evidence.summary = (
            f"wrapping the environment in the candidate's curriculum costs {pct(c['share of a step'])} of an "
            f"environment step (baseline {pct(b['share of a step'])}): each episode's sample()+update() got "
            f"{fmt(ratio.point)}x more expensive"
        )
        remediation = (
            "Make the curriculum's per-episode path cheap (see the scaling check) or call it less often."
        )
    else:
        status, severity = Status.CLEARED, Severity.INFO
        evidence.summary = (
            f"the curriculum costs {pct(b['share of a step'])} vs {pct(c['share of a step'])} of an "
            f"environment step (per-episode cost ratio {fmt(ratio.point)})"
        )
        remediation = "Nothing to do."
    finding = Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=evidence,
        remediation=remediation,
    )
    return Section(
        title="What does the curriculum cost an environment step?",
        findings=[finding],
        tables={"curriculum overhead": table},
        notes=[
            "Estimated from measured parts: CPU time per sample()+update() at the configured pool "
            "size, times the episodes that end per vector step under the random policy, over the "
            "median CPU time of a vector step."
        ],
    )


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every curriculum check, in notebook order."""
    return [
        sampling(wb, seed=seed),
        scaling(wb, seed=seed),
        cost_trend(wb, seed=seed),
        overhead(wb, seed=seed),
    ]
