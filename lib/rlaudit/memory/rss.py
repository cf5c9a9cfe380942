"""Does resident memory grow? The RSS slope per 1000 env steps over a long fixed-policy rollout and over
the shared short training runs (the recorder samples resident memory by itself), each side's slope with a
bootstrap interval, and the candidate's extra growth over the baseline judged against a practical threshold.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.env.analysis import sizes
from rlaudit.evidence import Judgement, judge
from rlaudit.findings import Finding, Severity, Status
from rlaudit.memory import plots, probes
from rlaudit.memory.common import RSS_PER_1000_STEPS, kib, mib
from rlaudit.notebook import Section
from rlaudit.trainer.runs import TrainingRuns, runs

MIN_TRAINING_SPAN = 100_000
"""Env steps a training run must span before its RSS slope can be a finding."""


def rss_slope(
    frame: pd.DataFrame, x: str, *, seed: int, groups: str | None = None, skip_fraction: float = 0.2
) -> stats.Interval | None:
    """Growth of ``rss_bytes`` per 1000 units of ``x`` after the first ``skip_fraction`` of ``x`` (warm-up:
    first allocations, lazy imports), with a bootstrap (by run when ``groups`` names a column)."""
    if frame.empty:
        return None
    start = frame[x].min() + skip_fraction * (frame[x].max() - frame[x].min())
    part = frame[frame[x] >= start]
    if part[x].nunique() < 3:
        part = frame
    if part[x].nunique() < 2:
        return None
    g = part[groups].to_numpy() if groups and part[groups].nunique() >= 2 else None
    return stats.growth_slope(part[x].to_numpy(), part["rss_bytes"].to_numpy(), per=1000, groups=g, seed=seed)


def growth_difference(base: stats.Interval | None, cand: stats.Interval | None) -> stats.Interval | None:
    """The candidate's extra growth (candidate slope - baseline slope) with a 95% interval.

    The two slopes come from independent measurements, so their standard errors (read off each bootstrap
    interval as its half-width / 1.96) add in quadrature; the interval is centred on the difference, so the
    estimate always lies inside it. Without a baseline slope the candidate's slope is the difference.
    """
    if cand is None:
        return None
    if base is None:
        return cand
    z = 1.959963984540054
    se = math.hypot((cand.high - cand.low) / (2 * z), (base.high - base.low) / (2 * z))
    point = cand.point - base.point
    return stats.Interval(point, point - z * se, point + z * se)


def leak_verdict(base: stats.Interval | None, cand: stats.Interval | None, threshold: float) -> Judgement:
    """Judge the candidate's extra RSS growth (:func:`growth_difference`) against ``±threshold``.

    Returns:
        The :class:`rlaudit.evidence.Judgement` of the difference: ``different`` (a leak when the difference
        is positive), ``equivalent`` (the whole interval within the threshold: no leak) or ``inconclusive``;
        NaN values when a side has no slope.
    """
    diff = growth_difference(base, cand)
    if diff is None:
        return judge(math.nan, math.nan, math.nan, threshold)
    return judge(diff.point, diff.low, diff.high, threshold)


def _leaks(iv: stats.Interval | None, threshold: float) -> bool:
    """A side's own slope is credibly above zero and above ``threshold``."""
    return iv is not None and iv.low > 0 and iv.point > threshold


RSS_OUTCOMES: dict[str, tuple[Status, Severity, str, str]] = {
    "leak": (
        Status.SUSPECT,
        Severity.HIGH,
        "resident memory grows by {c} in the candidate during {what} (baseline {b}; {extra}): {million} per "
        "million env steps",
        "Find what grows (the allocation-site and container checks below) and bound or free it.",
    ),
    "both": (
        Status.NOTED,
        Severity.MEDIUM,
        "both setups' resident memory grows during {what} ({b} vs {c})",
        "A shared leak: not a difference between the setups, but worth bounding.",
    ),
    "none": (
        Status.CLEARED,
        Severity.INFO,
        "no leak during {what}: RSS slope {b} vs {c}; {extra}, within ±{margin}",
        "Nothing to do.",
    ),
    "baseline faster": (
        Status.NOTED,
        Severity.LOW,
        "the baseline's resident memory grows faster than the candidate's during {what} ({b} vs {c}): not a "
        "regression of the candidate",
        "Nothing to do for the candidate; the baseline's growth may be worth bounding.",
    ),
    "inconclusive": (
        Status.NOTED,
        Severity.INFO,
        "inconclusive during {what}: RSS slope {b} vs {c}; {extra} is neither within nor beyond ±{margin}; a "
        "longer rollout (more env steps between snapshots) would settle it",
        "Rerun at a larger profile (standard or thorough) to measure the slope over more steps.",
    ),
}
"""RSS verdict -> (status, severity, summary template, remediation); the templates' fields are filled by
:func:`_rss_finding`."""


def _rss_finding(c: Check, slopes: dict[str, stats.Interval | None], what: str) -> Finding:
    """The verdict on the RSS slopes of both sides (per 1000 env steps) during ``what``."""
    b, cand = slopes["baseline"], slopes["candidate"]
    diff = growth_difference(b, cand)
    verdict = leak_verdict(b, cand, RSS_PER_1000_STEPS)

    def text(iv: stats.Interval | None) -> str:
        return "n/a" if iv is None else f"{kib(iv.point)} [{kib(iv.low)}, {kib(iv.high)}] per 1000 env steps"

    words = {
        "what": what,
        "b": text(b),
        "c": text(cand),
        "extra": f"extra growth {text(diff)}" if diff is not None else "no slope",
        "margin": kib(RSS_PER_1000_STEPS),
        "million": mib(cand.point * 1000) if cand is not None else "n/a",
    }
    if verdict.different and verdict.point > 0 and _leaks(cand, RSS_PER_1000_STEPS):
        kind = "leak"
    elif _leaks(b, RSS_PER_1000_STEPS) and _leaks(cand, RSS_PER_1000_STEPS) and not verdict.different:
        kind = "both"
    elif verdict.equivalent:
        kind = "none"
    else:
        kind = "baseline faster" if verdict.different else "inconclusive"
    status, severity, summary, remediation = RSS_OUTCOMES[kind]
    return c.finding(
        status,
        severity,
        baseline=text(b),
        candidate=text(cand),
        effect=diff.point if diff is not None else None,
        effect_label="extra RSS growth (candidate - baseline), bytes per 1000 env steps",
        ci=(diff.low, diff.high) if diff is not None else None,
        summary=summary.format(**words),
        details={"threshold_bytes_per_1000": RSS_PER_1000_STEPS, "judgement": verdict.kind},
        remediation=remediation,
        figures=["RSS over time"],
    )


def _slope_rows(
    where: str, slopes: dict[str, stats.Interval | None], frames: dict[str, pd.DataFrame]
) -> list[dict]:
    """Rows of the RSS-slopes table: slope, interval, and RSS at the start and end (mean over runs)."""
    rows = []
    for s in SIDES:
        iv, part = slopes[s], frames[s]
        by_run = part.groupby("seed")["rss_bytes"] if "seed" in part else None
        start = by_run.first().mean() if by_run is not None else part["rss_bytes"].iloc[0]
        end = by_run.last().mean() if by_run is not None else part["rss_bytes"].iloc[-1]
        rows.append(
            {
                "where": where,
                "side": s,
                "bytes per 1000 env steps": iv.point if iv else math.nan,
                "95% CI low (bytes per 1000 env steps)": iv.low if iv else math.nan,
                "95% CI high (bytes per 1000 env steps)": iv.high if iv else math.nan,
                "RSS at start (MiB)": start / 2**20,
                "RSS at end (MiB)": end / 2**20,
            }
        )
    return rows


RSS_NOTE = (
    f"A leak: the candidate's extra growth over the baseline has a 95% interval that excludes 0 and exceeds "
    f"{kib(RSS_PER_1000_STEPS)} per 1000 env steps ({mib(RSS_PER_1000_STEPS * 1000)} per million), and its own "
    f"slope is credibly positive. No leak (CLEARED): the whole interval of the extra growth lies within "
    f"±{kib(RSS_PER_1000_STEPS)}. The first 20% of each series is warm-up and left out."
)


def _rss_rollout_params(wb: Workbench, seed: int = 0) -> dict[str, Any]:
    sz = sizes(wb.profile)
    return {"seed": seed, "steps": sz.memory_steps, "samples": 2 * sz.memory_snapshots}


@check(
    "memory/rss-rollout",
    title="Does resident memory grow over a rollout?",
    probe=probes.rss_rollout,
    params=_rss_rollout_params,
    desc="memory: RSS over a rollout",
    reads=("env",),
)
def rss_rollout(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """Resident memory does not grow over a long rollout.

    RSS slope per 1000 env steps over a long fixed-policy rollout, both sides.
    """
    frames = {s: pair[s].table("rss").assign(side=s) for s in SIDES}
    slopes = {s: rss_slope(frames[s], "env_steps", seed=seed) for s in SIDES}
    return c.section(
        _rss_finding(c, slopes, "the rollout"),
        tables={"RSS slopes": pd.DataFrame(_slope_rows("rollout", slopes, frames))},
        figures={"RSS over time": plots.rss_over_time(pd.concat(frames.values(), ignore_index=True))},
        notes=[RSS_NOTE],
    )


def _short_runs(wb: Workbench) -> TrainingRuns:
    # the shared short runs (runtime traces, not learning); a failed seed leaves the others, and
    # trainer/outcomes reports it
    return TrainingRuns.of(runs(wb, short=True))


@check(
    "memory/rss-training",
    title="Does resident memory grow during training?",
    needs=_short_runs,
    reads=("trainer",),
)
def rss_training(c: Check, training: TrainingRuns, *, seed: int = 0) -> Section:
    """Resident memory does not grow over a training run.

    RSS slope per 1000 env steps over the shared short training runs (the recorder's ``memory`` table).
    """
    frames: dict[str, list[pd.DataFrame]] = {s: [] for s in SIDES}
    for s in SIDES:
        for run in training[s]:
            mem = run.table("memory")
            if len(mem) and "rss_bytes" in mem and "step" in mem:
                frames[s].append(mem.assign(side=s, seed=run.seed))
    lacking = [s for s in SIDES if not frames[s]]
    if lacking:
        c.missing(
            "memory table in the training runs (resident memory sampled during train())",
            "Hand train() the rlaudit recorder it is given and report through it (recorder.log, "
            "recorder.episode or recorder.watch): the recorder samples resident memory by itself as the "
            "run goes; a trainer that bypasses it leaves nothing to measure.",
            lacking,
        )
    per_side = {s: pd.concat(frames[s], ignore_index=True) for s in SIDES}
    slopes = {s: rss_slope(per_side[s], "step", seed=seed, groups="seed") for s in SIDES}
    training = pd.concat(per_side.values(), ignore_index=True)
    finding = _rss_finding(c, slopes, "training")
    span = int(training["step"].max() - training["step"].min())
    if span < MIN_TRAINING_SPAN:
        # A few updates are all allocator and cache warm-up: whatever the slopes say, they neither show a leak
        # nor rule one out, and their verdict would change from run to run.
        finding.status, finding.severity = Status.NOTED, Severity.LOW
        finding.remediation = (
            f"Rerun at a profile whose training runs span {MIN_TRAINING_SPAN:,}+ steps; until then the "
            "allocation-site check decides."
        )
        finding.evidence.summary = (
            f"inconclusive: runs of {span:,} steps are too short to tell growth from warm-up ("
            + finding.evidence.summary
            + ")"
        )
    return c.section(
        finding,
        tables={"RSS slopes": pd.DataFrame(_slope_rows("training", slopes, per_side))},
        figures={"RSS over time": plots.rss_over_time(None, training)},
        notes=[RSS_NOTE],
    )
