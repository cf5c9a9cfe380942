"""Learning over seeds on the primary metric: curves against steps and wall-clock, the final gap, stability.

Final performance is each run's mean of the primary metric over its last quarter, compared as an IQM with
the difference paired by seed and the probability of improvement (rliable's statistics, explicit seeds).
Direction-aware: for a lower-is-better metric "worse" means higher. A learning gap is a *symptom* every cause
produces; it sets what attribution explains, and the verdict is a claim:

- different (CONFIRMED when worse): at least :data:`MIN_SEEDS` seeds, the interval of the difference excludes
  0, the estimate lies beyond the margin (:data:`LEARNING_MARGIN` of the baseline's IQM), and the probability
  of improvement excludes one half;
- CLEARED only when the whole interval lies inside that margin (two one-sided tests);
- anything else is NOTED inconclusive, with the seeds per side that would settle it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import checks, stats
from rlaudit.checks import Check, check
from rlaudit.evidence import estimate, fmt, judge, pct, seeds
from rlaudit.findings import Finding, Severity, Status
from rlaudit.metrics import Metric
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES, seeds_to_settle, settle_text, side_finding
from rlaudit.trainer.outcomes import NON_FINITE, basis, outcomes_table, runs_detail
from rlaudit.trainer.runs import RunData, TrainingRuns, training_runs

SEED = 0  # bootstrap seed: every interval reproduces
LEARNING_MARGIN = 0.10  # equivalence margin: 10% of the baseline's final IQM
MIN_SEEDS = 3  # below this no interval over seeds carries a verdict, either way
FINAL_FRACTION = 0.25  # final performance: the last quarter of each run
STABILITY_FACTOR = 2.0  # spread ratios within [1/2, 2] count as the same stability
CURVE_BINS = 20


def wall_clock(run: RunData) -> tuple[np.ndarray, np.ndarray]:
    """(steps, seconds) points of the run (the recorder's memory samples), else its start and end."""
    memory = run.table("memory")
    if memory.empty or not {"step", "seconds"} <= set(memory):
        total = float(run.summary.get("seconds") or 0)
        steps = float(run.summary.get("steps") or 0)
        return np.array([0.0, steps]), np.array([0.0, total])
    return (
        np.concatenate([[0.0], memory["step"].to_numpy(dtype=float)]),
        np.concatenate([[0.0], memory["seconds"].to_numpy(dtype=float)]),
    )


def learning_curves(
    data: Mapping[str, Sequence[RunData]], metric: Any, bins: int = CURVE_BINS
) -> pd.DataFrame:
    """Per run, the metric's mean over the points in each of ``bins`` equal step intervals.

    Returns:
        ``side, seed, bin, step`` (bin centre), ``seconds`` (wall-clock at that step), ``value``, ``episodes``.
    """
    top = max((float(r.summary.get("steps") or 0) for s in SIDES for r in data[s]), default=0.0)
    edges = np.linspace(0.0, top, bins + 1) if top > 0 else np.linspace(0, 1, bins + 1)
    rows = []
    for side in SIDES:
        for run in data[side]:
            series = run.metric(metric)
            if series.empty:
                continue
            steps = series["step"].to_numpy(dtype=float)
            values = series["value"].to_numpy(dtype=float)
            idx = np.clip(np.searchsorted(edges, steps, side="left") - 1, 0, bins - 1)
            ws, wt = wall_clock(run)
            for b in range(bins):
                inside = values[idx == b]
                if len(inside) == 0:
                    continue
                centre = 0.5 * (edges[b] + edges[b + 1])
                rows.append(
                    {
                        "side": side,
                        "seed": run.seed,
                        "bin": b,
                        "step": centre,
                        "seconds": float(np.interp(centre, ws, wt)),
                        "value": float(np.mean(inside)),
                        "episodes": len(inside),
                    }
                )
    return pd.DataFrame(rows, columns=["side", "seed", "bin", "step", "seconds", "value", "episodes"])


def final_scores(data: Mapping[str, Sequence[RunData]], metric: Any) -> dict[str, dict[int, float]]:
    """Per side and seed: the metric's mean over the last :data:`FINAL_FRACTION` of the run (runs that never
    reported it are left out)."""
    out: dict[str, dict[int, float]] = {}
    for side in SIDES:
        finals = {run.seed: run.final(metric, FINAL_FRACTION) for run in data[side]}
        out[side] = {seed: value for seed, value in finals.items() if np.isfinite(value)}
    return out


def _finals(
    c: Check, runs: TrainingRuns, flagged: tuple[Status, Severity]
) -> tuple[Metric, dict[str, dict[int, float]], Finding | None]:
    """The primary metric and each side's final scores.

    A side without a final value gets a divergence finding (``flagged`` for the candidate) when its runs
    reported the metric but it was not finite, and SKIPPED only when they never reported it at all: a NaN is a
    finding, "not instrumented" is for a metric that is missing.
    """
    metric: Metric = c.wb.metric
    scores = final_scores(runs.data, metric)
    lacking = [s for s in SIDES if not scores[s]]
    if len(lacking) == len(SIDES) and metric.origin == "override":
        # No run recorded the name the user typed: a typo in --metric, not a gap in the subject (which the
        # SKIPPED advice below would wrongly suggest fixing).
        from rlaudit.engine.validate import InputError, recorded_metrics

        recorded = recorded_metrics(run.run_dir for side in SIDES for run in runs.data[side])
        raise InputError(
            f"--metric {metric.name}: no training run of either side recorded it; they recorded "
            f"{', '.join(recorded) or 'no episode statistics or scalars'}. Rerun with one of these names"
        )
    if lacking:
        diverged = _diverged(c, runs, metric, lacking, flagged)
        if diverged is not None:
            return metric, scores, diverged
        c.missing(f"run reporting `{metric.name}`", metric.how_to_report, lacking)
    return metric, scores, None


def reports(run: RunData, metric: Any) -> bool:
    """The run reported ``metric`` at all (a column of its episodes, or a logged scalar of that name or
    ending in ``/<name>``), finite or not."""
    name = str(getattr(metric, "name", metric))
    if name in run.table("episodes"):
        return True
    scalars = run.table("scalars")
    if scalars.empty or "name" not in scalars:
        return False
    names = scalars["name"].astype(str)
    return bool((names == name).any() or names.str.endswith("/" + name).any())


def _diverged(
    c: Check, runs: TrainingRuns, metric: Metric, lacking: list[str], flagged: tuple[Status, Severity]
) -> Finding | None:
    """The finding on sides whose runs reported the metric but never a finite final value (None when a
    lacking side simply never reported it)."""
    found = runs.outcomes()
    by_seed = {side: {r.seed: r for r in runs[side]} for side in SIDES}
    diverged = {
        side: [
            o
            for o in found.get(side, [])
            if o.outcome == NON_FINITE and o.seed in by_seed[side] and reports(by_seed[side][o.seed], metric)
        ]
        for side in lacking
    }
    diverged = {side: items for side, items in diverged.items() if items}
    if not diverged:
        return None
    side = "candidate" if "candidate" in diverged else "baseline"
    alike = len(diverged) == len(SIDES)
    listing = "; ".join(f"{s} seed {o.seed} {o.describe()}" for s in SIDES for o in diverged.get(s, []))
    who = "both sides" if alike else f"the {side}"
    return side_finding(
        c,
        side,
        alike,
        id=c.id,
        hypothesis=c.hypothesis,
        summary=f"{who} diverged: `{metric.name}` has no finite final value on "
        f"{', '.join(f'{len(diverged[s])} of {len(found.get(s, []))} {s} runs' for s in SIDES if s in diverged)} "
        f"({listing})",
        flagged=flagged,
        values={s: f"{len(diverged.get(s, []))} of {len(found.get(s, []))} runs non-finite" for s in SIDES},
        details={"runs": runs_detail(found, {s: [] for s in SIDES}), "metric": metric.to_dict()},
        remediation="Find where the candidate's values first turn non-finite (trainer/outcomes names the step "
        "and the quantity) and what feeds them: learning rate, loss scale, a log of a probability that reached 0.",
    )


def compare_final(
    scores: Mapping[str, Mapping[int, float]], sign: int = 1, margin: float = LEARNING_MARGIN
) -> dict[str, Any]:
    """IQM per side with intervals, the paired IQM difference judged against the margin, and the probability
    of improvement.

    Seeds common to both sides are paired (the same seed on both sides); intervals use :data:`SEED`.

    Args:
        scores: Per side, seed -> final value.
        sign: +1 when higher is better, -1 when lower is (:attr:`rlaudit.metrics.Metric.sign`).
        margin: Equivalence margin as a fraction of the baseline's |IQM|.

    Returns:
        ``n``, ``seeds``; with at least one common seed also ``iqm`` / ``iqm_ci`` per side, ``diff``
        (candidate - baseline IQM) with ``diff_ci``, ``relative`` (diff over the baseline's |IQM|), ``poi`` with
        ``poi_ci`` (P(a candidate run is better than a baseline run)), ``judgement``
        (:class:`rlaudit.evidence.Judgement` of the difference), ``worse``, ``decisive`` (at least
        :data:`MIN_SEEDS` seeds, the difference judged different and the probability-of-improvement interval
        clear of one half), ``equivalent`` (at least :data:`MIN_SEEDS` seeds and the whole interval inside the
        margin), ``seeds_needed`` (per side, to settle an inconclusive comparison).
    """
    common = sorted(set(scores["baseline"]) & set(scores["candidate"]))
    b = np.array([scores["baseline"][s] for s in common])
    c = np.array([scores["candidate"][s] for s in common])
    out: dict[str, Any] = {"n": len(common), "seeds": common, "decisive": False, "equivalent": False}
    if not common:
        return out
    out["iqm"] = {"baseline": stats.iqm(b), "candidate": stats.iqm(c)}
    out["iqm_ci"] = {
        "baseline": _around(out["iqm"]["baseline"], stats.iqm_ci(b, seed=SEED)),
        "candidate": _around(out["iqm"]["candidate"], stats.iqm_ci(c, seed=SEED)),
    }
    diff = stats.paired_bootstrap_diff(c, b, stat=stats.iqm, seed=SEED)
    poi = stats.probability_of_improvement_ci(sign * c, sign * b, seed=SEED)
    scale = abs(out["iqm"]["baseline"]) or max(abs(out["iqm"]["candidate"]), 1e-12)
    low, high = _around(diff.point, diff)
    sd = float(np.sqrt((np.var(b, ddof=1) + np.var(c, ddof=1)) / 2)) if len(common) >= 2 else float("nan")
    needed = seeds_to_settle(sd, margin * scale, diff.point)
    verdict = judge(diff.point, low, high, margin * scale, needed=needed)
    out.update(
        diff=diff.point,
        diff_ci=(low, high),
        relative=diff.point / scale,
        margin=margin * scale,
        poi=poi.point,
        poi_ci=_around(poi.point, poi),
        judgement=verdict,
        worse=bool(sign * diff.point < 0),
        seeds_needed=needed,
    )
    enough = len(common) >= MIN_SEEDS
    out["decisive"] = bool(enough and verdict.different and (poi.low > 0.5 or poi.high < 0.5))
    out["equivalent"] = bool(enough and verdict.equivalent)
    return out


def _around(point: float, interval: Any) -> tuple[float, float]:
    """A percentile interval widened to hold its own point estimate (a skewed statistic such as the IQM of
    few seeds can put the estimate just outside it)."""
    return (min(float(interval.low), float(point)), max(float(interval.high), float(point)))


@check("trainer/learning", title="Learning: {metric} over seeds", needs=training_runs, role=checks.SYMPTOM)
def learning(c: Check, runs: TrainingRuns) -> Section:
    """The candidate learns as well as the baseline ({metric})

    The primary metric over seeds against steps and wall-clock; final IQM paired by seed; P(improvement).
    """
    from rlaudit.trainer import plots

    metric, scores, diverged = _finals(c, runs, (Status.CONFIRMED, Severity.CRITICAL))
    if diverged is not None:
        return c.section(diverged, tables={"runs": outcomes_table(runs.outcomes())})
    cmp = compare_final(scores, sign=metric.sign)
    if not cmp["n"]:
        c.missing(
            "seed that completed on both sides (the comparison pairs runs by seed)",
            "Look at the failed runs' errors (the training-run probe's log) and rerun.",
        )
    verdict = cmp["judgement"]
    text = (
        f"final {metric.name} IQM: baseline {estimate(cmp['iqm']['baseline'], *cmp['iqm_ci']['baseline'])}, "
        f"candidate {estimate(cmp['iqm']['candidate'], *cmp['iqm_ci']['candidate'])}; paired difference "
        f"{estimate(cmp['diff'], *cmp['diff_ci'])} ({pct(cmp['relative'], signed=True)}; margin "
        f"{verdict.margin_text()}, {metric.better} is better), P(candidate run better) "
        f"{estimate(cmp['poi'], *cmp['poi_ci'], digits=2)} over {seeds(cmp['n'])} "
        f"({basis(runs.outcomes(), {s: cmp['seeds'] for s in SIDES})})"
    )
    evidence = dict(
        baseline=cmp["iqm"]["baseline"],
        candidate=cmp["iqm"]["candidate"],
        value_label=f"final {metric.name}, IQM over seeds",
        effect=cmp["diff"],
        effect_label=f"IQM difference ({metric.name}), paired by seed",
        ci=cmp["diff_ci"],
        test={"name": "probability of improvement", "statistic": cmp["poi"], "ci": list(cmp["poi_ci"])},
        details={
            "scores": {s: scores[s] for s in SIDES},
            "relative": cmp["relative"],
            "margin": cmp["margin"],
            "seeds_needed": cmp["seeds_needed"],
            "metric": metric.to_dict(),
            "runs": runs_detail(runs.outcomes(), {s: cmp["seeds"] for s in SIDES}),
        },
        figures=["learning curves"],
    )
    if cmp["decisive"]:
        worse = cmp["worse"]
        finding = c.finding(
            Status.CONFIRMED if worse else Status.NOTED,
            Severity.CRITICAL if worse else Severity.INFO,
            summary=f"the candidate learns {'worse' if worse else 'better'}: {text}",
            remediation="Attribute the gap (15_summary): restore one subsystem's settings at a time."
            if worse
            else "None: the candidate is better.",
            **evidence,
        )
    elif cmp["equivalent"]:
        finding = c.finding(
            Status.CLEARED,
            summary=f"no learning gap beyond {pct(LEARNING_MARGIN)} (the whole interval lies inside the "
            f"margin): {text}",
            **evidence,
        )
    else:
        settle = settle_text(cmp["seeds_needed"], cmp["n"], MIN_SEEDS)
        beyond = abs(cmp["relative"]) >= LEARNING_MARGIN
        finding = c.finding(
            Status.NOTED,
            Severity.LOW if beyond else Severity.INFO,
            summary=f"inconclusive ({settle}): {text}",
            remediation="Run more seeds (profile=standard or thorough) before reading the learning gap.",
            **evidence,
        )
    curves = learning_curves(runs.data, metric)
    table = pd.DataFrame(
        [{"side": s, "seed": seed, f"final {metric.name}": v} for s in SIDES for seed, v in scores[s].items()]
    )
    return c.section(
        finding,
        tables={"final performance": table},
        figures={"learning curves": plots.learning_figure(curves, metric.name, seed=SEED)},
        notes=[
            f"Final performance: mean `{metric.name}` over the last {pct(FINAL_FRACTION)} of each run "
            f"({metric.source} metric, {metric.better} is better; chosen: {metric.origin}). Intervals: "
            f"percentile bootstrap (2,000 resamples, seed {SEED}), the difference paired by seed. A gap counts "
            f"with {MIN_SEEDS}+ seeds, an interval clear of no difference and an estimate beyond "
            f"{pct(LEARNING_MARGIN)} of the baseline's IQM; CLEARED needs the whole interval inside that margin "
            "(two one-sided tests); otherwise the comparison is inconclusive.",
            "Bands are bootstrap intervals of the mean over seeds per step bin; wall-clock positions come from "
            "the recorder's memory samples.",
            *c.wb.metric_notes,
        ],
    )


def collapsed_runs(curves: pd.DataFrame, sign: int = 1, drop: float = 0.5) -> dict[str, list[int]]:
    """Runs that gave back more than ``drop`` of their improvement after their best point.

    Values are read in the metric's direction (``sign``). A run's improvement is its best point (the curve
    smoothed over three bins, so one lucky bin is no peak) over its first bin; the best must come before the
    last three bins, and the improvement must be at least a quarter of the largest improvement of any run. A
    run collapsed when its last three bins fell back by more than ``drop`` of its improvement.
    """
    out: dict[str, list[int]] = {s: [] for s in SIDES}
    if curves.empty:
        return out
    runs = {}
    for (side, seed), part in curves.groupby(["side", "seed"]):
        values = sign * part.sort_values("bin")["value"].to_numpy(dtype=float)
        smooth = pd.Series(values).rolling(3, center=True, min_periods=1).mean().to_numpy()
        runs[(str(side), int(seed))] = (values, smooth)
    ceiling = max((float(np.max(s) - v[0]) for v, s in runs.values()), default=0.0)
    for (side, seed), (values, smooth) in runs.items():
        if len(values) < 5:
            continue
        peak_at = int(np.argmax(smooth))
        gain = float(smooth[peak_at] - values[0])
        fallen = float(smooth[peak_at] - np.mean(values[-3:]))
        if gain > 0 and gain >= 0.25 * ceiling and peak_at < len(values) - 3 and fallen > drop * gain:
            out[side].append(seed)
    return out


@check("trainer/stability", title="Stability across seeds", needs=training_runs, role=checks.SYMPTOM)
def stability(c: Check, runs: TrainingRuns) -> Section:
    """The candidate is as stable across seeds as the baseline ({metric})

    Spread of final performance across seeds, and runs that collapsed after their peak.
    """
    metric, scores, diverged = _finals(c, runs, (Status.CONFIRMED, Severity.HIGH))
    if diverged is not None:
        return c.section(diverged, tables={"runs": outcomes_table(runs.outcomes())})
    collapsed = collapsed_runs(learning_curves(runs.data, metric), sign=metric.sign)
    found = runs.outcomes()
    # A run that raised, crashed or turned non-finite did not hold either: it counts with the collapses.
    unfinished = {s: sorted(o.seed for o in found.get(s, []) if not o.finished) for s in SIDES}
    vals = {s: np.array(list(scores[s].values())) for s in SIDES}
    n = {s: len(vals[s]) for s in SIDES}
    attempted = {s: max(n[s], len(found.get(s, []))) for s in SIDES}
    spread = {s: float(np.std(vals[s], ddof=1)) if n[s] >= 2 else float("nan") for s in SIDES}
    enough = min(n.values()) >= MIN_SEEDS
    ratio = None
    if enough and spread["baseline"] > 0:
        ratio = stats.bootstrap_ratio_ci(
            vals["candidate"],
            vals["baseline"],
            stat=lambda x, axis=None: np.std(x, axis=axis, ddof=1),
            seed=SEED,
        )
    count = {s: len(set(collapsed[s]) | set(unfinished[s])) for s in SIDES}
    text = (
        f"spread (SD over seeds): baseline {fmt(spread['baseline'])}, candidate {fmt(spread['candidate'])}"
        + (f", ratio {estimate(ratio.point, ratio.low, ratio.high)}" if ratio else "")
        + f"; collapsed or unfinished runs: baseline {count['baseline']}/{attempted['baseline']}, candidate "
        f"{count['candidate']}/{attempted['candidate']} ({basis(found, {s: list(scores[s]) for s in SIDES})})"
    )
    more_collapses = count["candidate"] >= 2 and count["candidate"] >= count["baseline"] + 2
    wider = ratio is not None and ratio.low > STABILITY_FACTOR
    same = (
        ratio is not None
        and 1 / STABILITY_FACTOR <= ratio.low
        and ratio.high <= STABILITY_FACTOR
        and count["candidate"] <= count["baseline"]
    )
    if enough and (more_collapses or wider):
        status, severity, summary = Status.SUSPECT, Severity.MEDIUM, "the candidate is less stable: " + text
    elif enough and same:
        status, severity = Status.CLEARED, Severity.INFO
        summary = f"as stable (the spread ratio's interval inside ×{fmt(1 / STABILITY_FACTOR)} to " + (
            f"×{fmt(STABILITY_FACTOR)}, no more collapses): {text}"
        )
    else:
        hint = more_collapses or (ratio is not None and ratio.point > STABILITY_FACTOR)
        status, severity = Status.NOTED, Severity.LOW if hint else Severity.INFO
        summary = f"inconclusive ({settle_text(None, min(n.values()), MIN_SEEDS)}): {text}"
    finding = c.finding(
        status,
        severity,
        values=spread,
        value_label=f"SD of final {metric.name} over seeds",
        effect=ratio.point if ratio else None,
        effect_label="spread ratio candidate / baseline",
        ci=(ratio.low, ratio.high) if ratio else None,
        summary=summary,
        details={
            "collapsed": collapsed,
            "unfinished": unfinished,
            "runs": runs_detail(found, {s: list(scores[s]) for s in SIDES}),
        },
        remediation="Look at the collapsed seeds' curves (learning rate, entropy, value loss around the drop)."
        if status.is_flag
        else "",
        figures=["learning curves"],
    )
    table = pd.DataFrame(
        [
            {
                "side": s,
                "seeds": n[s],
                "sd of final": spread[s],
                "collapsed seeds": collapsed[s],
                "unfinished seeds": unfinished[s],
            }
            for s in SIDES
        ]
    )
    return c.section(
        finding,
        tables={"stability": table},
        notes=f"A run has collapsed when its last three bins gave back more than half of its improvement (its "
        "best point, the curve smoothed over three bins, over its first bin; reached before the end and at least "
        f"a quarter of any run's improvement). A verdict needs {MIN_SEEDS}+ seeds; CLEARED needs the spread "
        f"ratio's whole interval inside ×{fmt(1 / STABILITY_FACTOR)} to ×{fmt(STABILITY_FACTOR)}.",
    )
