"""How fast do the two environments step? (env/throughput)

Both sides time interleaved blocks of vector steps at several ``num_envs`` in their own processes, on the CPU
clock, each block followed by a fixed calibration workload (:func:`rlaudit.env.probes.throughput`); the
candidate/baseline ratio is taken in steps per calibration unit, so a side measured on a busier or slower
moment (or served from the cache) is not charged for it (:mod:`rlaudit.timing`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, Check, check, run_probe
from rlaudit.engine.workbench import Pair
from rlaudit.env import plots, probes
from rlaudit.env.analysis import repeats_to_settle, sizes, timing_batch
from rlaudit.evidence import Verdict, fmt, inconclusive, interval
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.timing import CONFIRMED_RATIO, PRACTICAL_RATIO, confirmed, faster, judge_speed, slower


def throughput_table(blocks: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per timed block and side: ``sps`` (measured env steps/s) and ``nsps`` (per calibration unit)."""
    frames = []
    for side, df in blocks.items():
        df = df.copy()
        df["side"] = side
        df["sps"] = df["env_steps"] / df["seconds"]
        df["nsps"] = df["env_steps"] / (df["seconds"] / df["calib_seconds"])
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def throughput_ratios(table: pd.DataFrame, *, seed: int) -> pd.DataFrame:
    """Per requested size: median sps per side and the candidate/baseline ratio of normalized sps with CI."""
    rows = []
    for requested, part in table.groupby("requested", sort=True):
        b = part[part["side"] == "baseline"]
        c = part[part["side"] == "candidate"]
        if b.empty or c.empty:
            continue
        ci = stats.bootstrap_ratio_ci(c["nsps"], b["nsps"], stat=np.median, seed=seed)
        rows.append(
            {
                "requested": int(requested),
                "num_envs (baseline)": int(b["num_envs"].iloc[0]),
                "num_envs (candidate)": int(c["num_envs"].iloc[0]),
                "baseline sps": float(b["sps"].median()),
                "candidate sps": float(c["sps"].median()),
                "ratio": ci.point,
                "ci_low": ci.low,
                "ci_high": ci.high,
            }
        )
    return pd.DataFrame(rows)


def _main_row(ratios: pd.DataFrame) -> pd.Series:
    """The row the verdict rests on: the subjects' own num_envs, else the largest size timed."""
    own = ratios[ratios["requested"] == 0]
    return own.iloc[0] if len(own) else ratios.iloc[-1]


def _interval(row: pd.Series) -> stats.Interval:
    return stats.Interval(float(row["ratio"]), float(row["ci_low"]), float(row["ci_high"]))


def _throughput_params(wb: object, seed: int = 0) -> dict[str, object]:
    sz = sizes(wb.profile)  # type: ignore[attr-defined]
    return {
        "seed": seed,
        "num_envs": list(sz.throughput_envs),
        "repeats": sz.timing_repeats,
        "block_seconds": sz.block_seconds,
        "batch": timing_batch(wb),
    }


@check(
    "env/throughput",
    title="How fast do the environments step?",
    probe=probes.throughput,
    params=_throughput_params,
    desc="env throughput",
    reads=("curriculum", "memory", "spaces", "trainer"),
)
def throughput(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """The environments step equally fast across num_envs.

    Steps per second across ``num_envs``, repeated and normalized by a calibration workload; the ratio.
    """
    sz = sizes(c.profile)
    table = throughput_table({s: pair[s].table("blocks") for s in SIDES})
    ratios = throughput_ratios(table, seed=seed)
    main = _main_row(ratios)
    ci = _interval(main)
    repeat = None
    if slower(ci) or faster(ci):
        # A difference is believed only when a second batch, timed now, finds it too (timing.confirmed).
        params = _throughput_params(c.wb, seed)
        again = run_probe(
            c.wb,
            probes.throughput,
            "env throughput (repeat)",
            **{**params, "batch": f"{params['batch']}/repeat"},
        )
        again_table = throughput_table({s: again[s].table("blocks") for s in SIDES})
        again_ratios = throughput_ratios(again_table, seed=seed + 1)
        repeat = _interval(_main_row(again_ratios))
        if confirmed(ci, repeat) is repeat:
            table, ratios, main, ci, repeat = again_table, again_ratios, _main_row(again_ratios), repeat, ci
    label = (
        "the subjects' own num_envs" if int(main["requested"]) == 0 else f"num_envs={int(main['requested'])}"
    )
    others = ratios[ratios["requested"] != int(main["requested"])]
    slow_elsewhere = [
        int(r.requested) for r in others.itertuples() if r.ci_high < 1 and r.ratio < 1 / PRACTICAL_RATIO
    ]
    measured = f"({fmt(main['candidate sps'])} vs {fmt(main['baseline sps'])} env steps/s as measured)"
    if repeat is not None and confirmed(ci, repeat) is None:
        decided = inconclusive(
            f"at {label}, a first batch of timed blocks gave ratio {fmt(ci.point)} {interval(ci.low, ci.high)} and "
            f"a repeat gave {fmt(repeat.point)} {interval(repeat.low, repeat.high)}; the two disagree, so the "
            "machine's load, not the environment, moved them",
            "on a quieter machine, or with more and longer timed blocks (a larger profile)",
        )
    elif slower(ci):
        decided = Verdict(
            Status.CONFIRMED if ci.high < CONFIRMED_RATIO else Status.SUSPECT,
            Severity.HIGH,
            f"the candidate's environment steps at ×{fmt(ci.point)} the baseline's speed at {label} "
            f"[{fmt(ci.low)}, {fmt(ci.high)}] {measured}; a curriculum or wrapper inside the env counts too",
            "Profile env.step in the candidate (py-spy or cProfile over a rollout) and compare with the "
            "reset-cost and curriculum-overhead checks to find which part got slower.",
        )
    elif faster(ci):
        decided = Verdict(
            Status.NOTED,
            Severity.LOW,
            f"the candidate's environment is faster (×{fmt(ci.point)} at {label})",
            "Nothing to do for a regression.",
        )
    else:
        verdict = judge_speed(ci, needed=repeats_to_settle(sz.timing_repeats, *ci, PRACTICAL_RATIO))
        ratio_text = f"ratio {fmt(ci.point)} {interval(ci.low, ci.high)}"
        if verdict.equivalent:
            decided = Verdict(
                Status.CLEARED,
                Severity.INFO,
                f"equal speed at {label}: {ratio_text}, within ×{fmt(PRACTICAL_RATIO)} "
                f"({fmt(main['baseline sps'])} vs {fmt(main['candidate sps'])} env steps/s)",
                "Nothing to do.",
            )
        else:
            measurably = "measurably slower, but " if ci.high < 1 else ""
            decided = inconclusive(
                f"at {label}, {ratio_text} is {measurably}neither within ×{fmt(PRACTICAL_RATIO)} nor surely "
                f"slower by more; {verdict.settle('timed blocks')}",
                "more and longer timed blocks",
            )
        if slow_elsewhere:
            decided = decided._replace(summary=f"{decided.summary}; slower at num_envs {slow_elsewhere}")
    return c.section(
        c.conclude(
            decided,
            values={
                s: f"{fmt(main[s + ' sps'])} env steps/s ({int(main[f'num_envs ({s})'])} envs)" for s in SIDES
            },
            interval=ci,
            effect_label=f"throughput ratio candidate/baseline at {label} (calibration-normalized)",
            details={
                "ratios": ratios.to_dict("records"),
                "practical_ratio": PRACTICAL_RATIO,
                "repeat": None if repeat is None else repeat._asdict(),
            },
            figures=["throughput"],
        ),
        tables={
            "throughput by num_envs": ratios.rename(
                columns={
                    "ratio": "candidate / baseline (median normalized sps)",
                    "ci_low": "95% CI low (candidate / baseline)",
                    "ci_high": "95% CI high (candidate / baseline)",
                }
            )
        },
        figures={"throughput": plots.throughput_curves(table)},
        notes=f"{sz.timing_repeats} interleaved blocks of ~{sz.block_seconds} s per size and side, timed with each "
        "worker's CPU clock (other processes on a busy machine do not stretch it); each block is followed by a "
        "fixed calibration workload and the ratio uses steps per calibration unit. Steps/s are CPU-time rates as "
        "measured. num_envs 0 = the subject's own configuration. A ratio beyond the margin is timed again in a new "
        "batch and believed only when both batches agree.",
    )
