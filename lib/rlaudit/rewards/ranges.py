"""Reward range and values paid: the distinct per-step rewards each side pays and how often, and the range
before and after the environments' wrappers (clipping, normalizing)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.env.analysis import rollout_pair, sizes
from rlaudit.evidence import fmt, pct
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.rewards import plots, probes
from rlaudit.rewards.components import MEASURED


def value_table(facts: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Distinct per-step reward values and how often each is paid (fraction of steps), per side."""
    rows = []
    for side, f in facts.items():
        rw = f["rewards"]
        if rw.get("values") is None:
            continue
        total = float(sum(rw["counts"])) or 1.0
        for v, c in zip(rw["values"], rw["counts"], strict=True):
            rows.append({"side": side, "value": float(v), "count": int(c), "frequency": c / total})
    return pd.DataFrame(rows, columns=["side", "value", "count", "frequency"])


def lost_values(values: pd.DataFrame, min_count: int = 20) -> list[dict[str, Any]]:
    """Reward values the baseline pays at least ``min_count`` times that the candidate pays at less than a
    tenth of the baseline's frequency."""
    out = []
    if values.empty:
        return out
    b = values[values["side"] == "baseline"].set_index("value")
    c = values[values["side"] == "candidate"].set_index("value")
    for v, row in b.iterrows():
        fc = float(c["frequency"].get(v, 0.0)) if len(c) else 0.0
        if row["count"] >= min_count and v != 0 and fc < 0.1 * row["frequency"]:
            out.append(
                {"value": float(v), "baseline_frequency": float(row["frequency"]), "candidate_frequency": fc}
            )
    return out


def range_needs(wb: Workbench, seed: int = 0) -> list[Pair]:
    """The shared random-policy rollout and the :func:`rlaudit.rewards.probes.reward_wrappers` probe."""
    from rlaudit.checks import run_probe

    wrap = run_probe(
        wb, probes.reward_wrappers, "reward wrappers", seed=seed, steps=sizes(wb.profile).equivalence_steps
    )
    return [rollout_pair(wb, seed), wrap]


def range_table(facts: dict[str, dict[str, Any]], wrappers: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Per side: reward statistics before and after the wrappers, and over the random-policy rollout."""
    rows = []
    for s in SIDES:
        for stage in ("before", "after"):
            st = wrappers[s][stage]
            rows.append(
                {
                    "side": s,
                    "stage": f"{stage} wrappers",
                    **{k: st.get(k) for k in ("min", "max", "mean", "std", "abs_max", "nonzero")},
                }
            )
        rw = facts[s]["rewards"]
        rows.append(
            {
                "side": s,
                "stage": "rollout (random policy)",
                "min": rw["min"],
                "max": rw["max"],
                "mean": rw["mean"],
            }
        )
    return pd.DataFrame(rows)


@check(
    "rewards/range", title="Reward range and values, before and after wrappers", needs=range_needs, **MEASURED
)
def reward_range(c: Check, evidence: list[Pair]) -> Section:
    """Both setups pay rewards over the same range and values, before and after their wrappers.

    Reward range and distinct values paid; the range before and after wrappers (clipping, normalizing).
    """
    pair, wrap = evidence
    facts = {s: pair[s].json("facts") for s in SIDES}
    values = value_table(facts)
    w = {s: wrap[s].result for s in SIDES}
    lost = lost_values(values)
    ab, ac = w["baseline"]["after"].get("abs_max", 0.0), w["candidate"]["after"].get("abs_max", 0.0)
    scale = (ac / ab) if ab else math.nan
    problems = []
    if lost:
        problems.append(
            "reward value(s) the baseline pays are (almost) never paid by the candidate: "
            + "; ".join(
                f"{fmt(x['value'])} ({pct(x['baseline_frequency'])} of steps -> {pct(x['candidate_frequency'])})"
                for x in lost
            )
        )
    if math.isfinite(scale) and not 0.5 <= scale <= 2.0:
        problems.append(
            f"the largest reward after wrappers changed from {fmt(ab)} to {fmt(ac)} (x{fmt(scale)})"
        )
    if w["baseline"]["wrapped"] != w["candidate"]["wrapped"] or (
        w["baseline"]["same_stream"] != w["candidate"]["same_stream"]
    ):
        problems.append(
            "the wrappers that transform rewards differ: "
            f"{' > '.join(w['baseline']['wrappers'])} vs {' > '.join(w['candidate']['wrappers'])}"
        )
    span = {s: [facts[s]["rewards"]["min"], facts[s]["rewards"]["max"]] for s in SIDES}
    if problems:
        finding = c.finding(
            Status.SUSPECT,
            Severity.HIGH,
            baseline={"range": span["baseline"], "wrappers": w["baseline"]["wrappers"]},
            candidate={"range": span["candidate"], "wrappers": w["candidate"]["wrappers"]},
            effect=scale,
            effect_label="largest |reward| after wrappers, candidate / baseline",
            summary="; ".join(problems),
            details={"lost_values": lost, "wrappers": w},
            remediation="Restore the reward values (or the clipping/normalization wrapper) of the baseline.",
            figures=["reward values"],
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            values=span,
            summary=f"same reward range [{fmt(span['baseline'][0])}, {fmt(span['baseline'][1])}] and values paid; "
            f"wrappers: {' > '.join(w['baseline']['wrappers'])}",
            remediation="Nothing to do.",
        )
    return c.section(
        finding,
        tables={
            "reward range": range_table(facts, w),
            "reward values paid": values.rename(columns={"value": "reward per step"}),
        },
        figures={"reward values": plots.value_frequencies(values)},
    )
