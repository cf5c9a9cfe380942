"""Memory audit (notebook 12): does memory grow, where, and how big are the buffers?

Case 004's label dictionary gained an entry per episode and was never pruned; case 003's investigation was
skewed by zombie processes holding 30 GB. A leak is a growth slope whose interval excludes zero and exceeds a
practical threshold; this room measures the slope of resident memory over a long rollout and over the shared
training runs (the recorder samples resident memory by itself), then finds where it grows (tracemalloc
allocation sites inside the subject's code, object types, containers reachable from the environment),
comparing each with the baseline's counterpart.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, Check, check, run_checks
from rlaudit.env.analysis import sizes
from rlaudit.evidence import Judgement, fmt, judge
from rlaudit.findings import Finding, Severity, Status
from rlaudit.memory import plots, probes
from rlaudit.notebook import Section
from rlaudit.trainer.runs import TrainingRuns, runs
from rlaudit.workbench import Pair, Workbench

# Practical thresholds. RSS: 64 KiB per 1000 env steps is 64 MiB per million steps, a leak that ends a long
# run. Per-episode growth inside the process: 100 entries or 32 KiB per 1000 episodes, beyond what the
# baseline's counterpart grows.
RSS_PER_1000_STEPS = 64 * 1024
ENTRIES_PER_1000_EPISODES = 100.0
BYTES_PER_1000_EPISODES = 32 * 1024

MIN_TRAINING_SPAN = 100_000
"""Env steps a training run must span before its RSS slope can be a finding."""


def _mib(b: float) -> str:
    return f"{b / 2**20:.3g} MiB"


def _kib(b: float) -> str:
    return f"{b / 1024:.3g} KiB"


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
        return (
            "n/a" if iv is None else f"{_kib(iv.point)} [{_kib(iv.low)}, {_kib(iv.high)}] per 1000 env steps"
        )

    words = {
        "what": what,
        "b": text(b),
        "c": text(cand),
        "extra": f"extra growth {text(diff)}" if diff is not None else "no slope",
        "margin": _kib(RSS_PER_1000_STEPS),
        "million": _mib(cand.point * 1000) if cand is not None else "n/a",
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
                "ci_low": iv.low if iv else math.nan,
                "ci_high": iv.high if iv else math.nan,
                "RSS at start (MiB)": start / 2**20,
                "RSS at end (MiB)": end / 2**20,
            }
        )
    return rows


RSS_NOTE = (
    f"A leak: the candidate's extra growth over the baseline has a 95% interval that excludes 0 and exceeds "
    f"{_kib(RSS_PER_1000_STEPS)} per 1000 env steps ({_mib(RSS_PER_1000_STEPS * 1000)} per million), and its own "
    f"slope is credibly positive. No leak (CLEARED): the whole interval of the extra growth lies within "
    f"±{_kib(RSS_PER_1000_STEPS)}. The first 20% of each series is warm-up and left out."
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


# ---------------------------------------------------------------------------------------------------------
# Where it grows
# ---------------------------------------------------------------------------------------------------------


def _slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of the columns of ``y`` (n, k) against ``x`` (n,)."""
    xc = x - x.mean()
    sxx = float((xc * xc).sum())
    if sxx == 0:
        return np.zeros(y.shape[1])
    return (xc[:, None] * (y - y.mean(axis=0))).sum(axis=0) / sxx


def growth_per_episode(values: pd.DataFrame, points: pd.DataFrame, key: str, value: str) -> pd.DataFrame:
    """Per item (``key``), the least-squares growth of ``value`` per 1000 episodes over the snapshots.

    The first snapshot (taken right after reset) is left out of the fit when there are four or more, so a
    structure filled once at the start (a table built on the first update) does not read as growth; and an
    item only counts as growing ``linearly`` when the second half of the snapshots still grows at half the
    overall rate or more (a leak keeps growing, a cache that filled up does not).

    Args:
        values: Long table with ``snapshot``, ``key`` and ``value`` columns (absent = 0 at that snapshot).
        points: The snapshots' ``snapshot`` and ``episodes``.

    Returns:
        ``item``, ``first``, ``last``, ``per_1000_episodes``, ``monotone`` (never shrinks by more than 5%),
        ``linear``, sorted by growth, largest first.
    """
    columns = ["item", "first", "last", "per_1000_episodes", "monotone", "linear"]
    if values.empty or len(points) < 3:
        return pd.DataFrame(columns=columns)
    wide = (
        values.pivot_table(index="snapshot", columns=key, values=value, aggfunc="sum")
        .reindex(points["snapshot"])
        .fillna(0.0)
    )
    x = points.set_index("snapshot").loc[wide.index, "episodes"].to_numpy(dtype=float)
    y = wide.to_numpy(dtype=float)
    fit = slice(1, None) if len(x) >= 4 else slice(None)
    if np.ptp(x[fit]) == 0:
        return pd.DataFrame(columns=columns)
    slope = _slope(x[fit], y[fit])
    half = len(x) // 2
    late = _slope(x[half:], y[half:]) if np.ptp(x[half:]) > 0 else slope
    drops = np.diff(y, axis=0)
    monotone = (drops >= -0.05 * np.maximum(np.abs(y[:-1]), 1.0)).all(axis=0)
    out = pd.DataFrame(
        {
            "item": wide.columns.astype(str),
            "first": y[0],
            "last": y[-1],
            "per_1000_episodes": 1000.0 * slope,
            "monotone": monotone,
            "linear": late >= 0.5 * slope,
        }
    )
    return out.sort_values("per_1000_episodes", ascending=False, ignore_index=True)


def compare_growth(base: pd.DataFrame, cand: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Items whose candidate growth per 1000 episodes exceeds ``threshold``, is monotone and linear, and is
    more than twice the baseline's growth of the same item (and beyond it by ``threshold``)."""
    b = base.set_index("item")["per_1000_episodes"] if len(base) else pd.Series(dtype=float)
    rows = []
    for r in cand.itertuples():
        gb = float(b.get(r.item, 0.0))
        if (
            r.per_1000_episodes > threshold
            and r.monotone
            and r.per_1000_episodes > 2 * max(gb, 0.0)
            and (r.per_1000_episodes - gb > threshold)
        ):
            rows.append(
                {
                    "item": r.item,
                    "first": r.first,
                    "last": r.last,
                    "candidate per 1000 episodes": r.per_1000_episodes,
                    "baseline per 1000 episodes": gb,
                }
            )
    return pd.DataFrame(
        rows, columns=["item", "first", "last", "candidate per 1000 episodes", "baseline per 1000 episodes"]
    )


def _site_key(frame: pd.DataFrame) -> pd.DataFrame:
    # A site is matched across versions by file and source text (line numbers shift between versions).
    out = frame.copy()
    out["site"] = out["file"].astype(str) + ": " + out["code"].astype(str)
    return out


def _growth_params(wb: Workbench, seed: int = 0) -> dict[str, Any]:
    sz = sizes(wb.profile)
    return {"seed": seed, "steps": sz.memory_site_steps, "snapshots": sz.memory_snapshots}


def _first(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The first non-empty flagged table, in order of evidence strength (containers, sites, types)."""
    return next(t for t in tables.values() if len(t))


@check(
    "memory/growth-sites",
    title="Where does memory grow?",
    probe=probes.growth_sites,
    params=_growth_params,
    desc="memory: where it grows",
    reads=("curriculum", "env"),
)
def growth_sites(c: Check, pair: Pair) -> Section:
    """Nothing in the candidate grows with every episode that does not grow in the baseline.

    tracemalloc allocation sites, live objects by type, and containers reachable from the env.
    """
    grow: dict[str, dict[str, pd.DataFrame]] = {}
    for s in SIDES:
        points = pair[s].table("points")
        sites = _site_key(pair[s].table("sites"))
        grow[s] = {
            "sites": growth_per_episode(sites, points, "site", "size"),
            "subject_sites": growth_per_episode(sites[sites["subject"]], points, "site", "size"),
            "types": growth_per_episode(pair[s].table("types"), points, "type", "count"),
            "containers": growth_per_episode(pair[s].table("containers"), points, "path", "size"),
        }
    base, cand = grow["baseline"], grow["candidate"]
    flagged = {
        "containers": compare_growth(base["containers"], cand["containers"], ENTRIES_PER_1000_EPISODES),
        "sites": compare_growth(base["sites"], cand["sites"], BYTES_PER_1000_EPISODES),
        "types": compare_growth(base["types"], cand["types"], ENTRIES_PER_1000_EPISODES),
    }
    # Byte-counting containers (numpy arrays, "#bytes") use the byte threshold instead of the entry one.
    cont = flagged["containers"]
    is_bytes = cont["item"].str.endswith("#bytes")
    flagged["containers"] = cont[~is_bytes | (cont["candidate per 1000 episodes"] > BYTES_PER_1000_EPISODES)]
    episodes = {s: int(pair[s].table("points")["episodes"].max()) for s in SIDES}
    parts = []
    if len(flagged["containers"]):
        r = flagged["containers"].iloc[0]
        parts.append(
            f"`{r['item']}` grew from {fmt(r['first'])} to {fmt(r['last'])} "
            f"(+{fmt(r['candidate per 1000 episodes'])} per 1000 episodes; baseline "
            f"{fmt(r['baseline per 1000 episodes'])})"
        )
    if len(flagged["sites"]):
        r = flagged["sites"].iloc[0]
        parts.append(
            f"allocation site `{r['item']}` holds +{_kib(r['candidate per 1000 episodes'])} per 1000 "
            f"episodes (baseline {_kib(r['baseline per 1000 episodes'])})"
        )
    if len(flagged["types"]):
        r = flagged["types"].iloc[0]
        parts.append(f"live `{r['item']}` objects +{fmt(r['candidate per 1000 episodes'])} per 1000 episodes")
    tables = {f"flagged {k}": v for k, v in flagged.items() if len(v)}
    for s in SIDES:
        tables[f"fastest-growing sites in the subject's code ({s})"] = grow[s]["subject_sites"].head(8)
    if parts:
        confirmed = len(flagged["containers"]) and (len(flagged["sites"]) or len(flagged["types"]))
        r = _first(flagged).iloc[0]
        finding = c.finding(
            Status.CONFIRMED if confirmed else Status.SUSPECT,
            Severity.HIGH,
            baseline=f"{fmt(r['baseline per 1000 episodes'])} per 1000 episodes",
            candidate=f"{fmt(r['candidate per 1000 episodes'])} per 1000 episodes ({r['item']})",
            effect=float(r["candidate per 1000 episodes"] - r["baseline per 1000 episodes"]),
            effect_label="extra growth per 1000 episodes",
            summary=f"grows with every episode in the candidate only (over {episodes['candidate']} episodes): "
            + "; ".join(parts)
            + " (case 004's unbounded per-episode dictionary)",
            details={k: v.to_dict("records") for k, v in flagged.items()},
            remediation="Bound the growing structure: key it by task (not by episode), prune it, or drop it; "
            "a per-episode entry that is never removed costs memory and slows every lookup.",
            figures=["what grows"],
        )
    else:
        top_c = cand["subject_sites"].head(1)
        what = (
            (
                f"; the fastest-growing site in the subject's code, `{top_c['item'].iloc[0]}`, grows "
                f"{_kib(top_c['per_1000_episodes'].iloc[0])} per 1000 episodes in both"
            )
            if len(top_c)
            else ""
        )
        finding = c.finding(
            Status.CLEARED,
            baseline=f"{episodes['baseline']} episodes",
            candidate=f"{episodes['candidate']} episodes",
            summary="no allocation site, object type or container grows per episode in the "
            "candidate beyond the baseline" + what,
            remediation="Nothing to do.",
            figures=["what grows"],
        )
    return c.section(
        finding,
        tables=tables,
        figures={"what grows": _growth_figure(grow, flagged)},
        notes=[
            "tracemalloc snapshots after a garbage collection at evenly spaced points of a random-"
            "policy rollout; sites are matched across versions by file and source line text. "
            f"Flagged: growth above {fmt(ENTRIES_PER_1000_EPISODES)} entries or "
            f"{_kib(BYTES_PER_1000_EPISODES)} per 1000 episodes, never shrinking, and more than "
            "twice the baseline's."
        ],
    )


def _growth_figure(grow: dict[str, dict[str, pd.DataFrame]], flagged: dict[str, pd.DataFrame]) -> Any:
    """Bars of the flagged items' growth on both sides (the candidate's fastest subject sites when none is)."""
    items: set[str] = set()
    for k in ("containers", "sites"):
        items |= set(flagged[k]["item"].head(5))
    if not items:
        items = set(grow["candidate"]["subject_sites"]["item"].head(5))
    bars = [
        {"item": r.item[:70], "side": s, "per_1000_episodes": r.per_1000_episodes}
        for s in SIDES
        for kind in ("containers", "sites")
        for r in grow[s][kind][grow[s][kind]["item"].isin(items)].itertuples()
    ]
    return plots.growth_bars(
        pd.DataFrame(bars, columns=["item", "side", "per_1000_episodes"]), "what grows per 1000 episodes"
    )


# ---------------------------------------------------------------------------------------------------------
# Buffers implied by the config
# ---------------------------------------------------------------------------------------------------------


@check(
    "memory/buffers",
    title="How big are the rollout buffers?",
    probe=probes.buffer_sizes,
    desc="memory: buffer sizes",
    reads=("env", "spaces", "trainer"),
)
def buffers(c: Check, pair: Pair) -> Section:
    """The rollout buffers the configs imply have the same size.

    num_envs x num_steps x observation size (and the other per-step buffers), side by side.
    """
    res = {s: pair[s].result for s in SIDES}
    rows = [
        {"quantity": q, **{s: res[s].get(k) for s in SIDES}}
        for q, k in (
            ("num_envs (config)", "num_envs_config"),
            ("num_envs (built)", "num_envs_built"),
            ("num_steps", "num_steps"),
            ("observation size", "obs_size"),
        )
    ]
    names = list(dict.fromkeys([*res["baseline"]["buffers"], *res["candidate"]["buffers"]]))
    for name in names:
        rows.append(
            {"quantity": f"{name} (MiB)", **{s: res[s]["buffers"].get(name, math.nan) / 2**20 for s in SIDES}}
        )
    total = {s: float(sum(res[s]["buffers"].values())) for s in SIDES}
    rows.append({"quantity": "total (MiB)", **{s: total[s] / 2**20 for s in SIDES}})
    table = pd.DataFrame(rows)
    if not total["baseline"] or not total["candidate"]:
        finding = c.finding(
            Status.NOTED,
            summary="no rollout length key (num_steps) in a config; buffer sizes not computed",
            remediation="Name the rollout length num_steps in the config to size buffers.",
        )
        return c.section(finding, tables={"buffers": table})
    ratio = total["candidate"] / total["baseline"]
    changes = [
        f"{r['quantity']} {fmt(r['baseline'])} -> {fmt(r['candidate'])}"
        for r in rows[:4]
        if r["baseline"] != r["candidate"]
    ]
    common = {
        "baseline": _mib(total["baseline"]),
        "candidate": _mib(total["candidate"]),
        "effect": ratio,
        "effect_label": "buffer size ratio, candidate / baseline",
        "details": {"table": table.to_dict("records")},
    }
    if not 0.5 <= ratio <= 2.0:
        finding = c.finding(
            Status.NOTED,
            Severity.MEDIUM,
            **common,
            summary=f"the candidate's rollout buffers take {_mib(total['candidate'])} vs "
            f"{_mib(total['baseline'])} (x{fmt(ratio)}): "
            + "; ".join(changes)
            + " (a knock-on of the environment or trainer settings that changed)",
            remediation="Check that the change of num_envs, num_steps or observation size is intended.",
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            **common,
            summary=f"rollout buffers of {_mib(total['baseline'])} vs {_mib(total['candidate'])}"
            + (": " + "; ".join(changes) if changes else " (same shapes)"),
            remediation="Nothing to do.",
        )
    return c.section(finding, tables={"buffers": table})


CHECKS = (rss_rollout, rss_training, growth_sites, buffers)
"""Every memory check, in notebook order."""


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every memory check, in notebook order."""
    return run_checks(wb, CHECKS, seed=seed)
