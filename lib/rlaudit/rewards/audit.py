"""Rewards audit (notebook 11): scale, shaping and components, declared and measured.

Case 001's shaped rewards vanished in a config rewrite (battery 0.8 became absent), and case 002's navigation
shaping (0.0001 per pixel) was cancelled by a 0.01 time penalty. This room reads the reward settings from both
resolved configs (here), measures what each component actually pays at runtime and whether one drowns another
(:mod:`rlaudit.rewards.components`), and compares the reward range and values paid before and after the
environments' wrappers (here).
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rlaudit.checks import SIDES, Check, check, run_checks
from rlaudit.compare import classify_key, flatten, values_equal
from rlaudit.config import probes as config_probes
from rlaudit.env.analysis import rollout_pair, sizes
from rlaudit.evidence import fmt, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.rewards import plots, probes
from rlaudit.rewards.components import MEASURED, components, relative_magnitudes
from rlaudit.workbench import Pair, Workbench

SUBSYSTEM = "rewards"

__all__ = [
    "CHECKS",
    "audit_all",
    "components",
    "relative_magnitudes",
    "reward_range",
    "reward_settings",
    "settings",
]


# ---------------------------------------------------------------------------------------------------------
# Settings from the resolved configs
# ---------------------------------------------------------------------------------------------------------


def setting_kind(key: str) -> str:
    """What a reward setting does, from its name: penalty, clip, normalize, scale, or component."""
    last = key.lower()
    for kind, patterns in (
        ("time penalty", ("*penalty*", "*per_step*", "*step_cost*")),
        ("clipping", ("*clip*",)),
        ("normalization", ("*norm*",)),
        ("scale", ("*scale*", "*coef*", "*multiplier*")),
    ):
        if any(fnmatch.fnmatch(last, p) for p in patterns):
            return kind
    return "component"


def reward_settings(
    config_a: dict[str, Any], config_b: dict[str, Any], rules: dict[str, list[str]] | None
) -> pd.DataFrame:
    """The reward settings of both configs side by side.

    A key is a reward setting when the subject's ``config_keys()`` (or rlaudit's name rules) file it under
    ``rewards``, or its name mentions a reward.

    Returns:
        One row per key: ``key``, ``kind`` (:func:`setting_kind`), ``baseline``, ``candidate`` (None when
        absent), ``change`` (``same``, ``changed``, ``vanished``, ``added``, ``removed``), ``ratio``
        (candidate / baseline for numbers).
    """
    fa, fb = flatten(config_a), flatten(config_b)
    rows = []
    for key in list(dict.fromkeys([*fa, *fb])):
        if classify_key(key, rules) != SUBSYSTEM and "reward" not in key.lower():
            continue
        in_a, in_b = key in fa, key in fb
        va, vb = fa.get(key), fb.get(key)
        num_a = isinstance(va, int | float) and not isinstance(va, bool)
        num_b = isinstance(vb, int | float) and not isinstance(vb, bool)
        if in_a and in_b and values_equal(va, vb):
            change = "same"
        elif in_a and num_a and va != 0 and (not in_b or vb is None or (num_b and vb == 0)):
            change = "vanished"
        elif not in_b:
            change = "removed"
        elif not in_a:
            change = "added"
        else:
            change = "changed"
        ratio = float(vb) / float(va) if num_a and num_b and va not in (0, None) else math.nan
        rows.append(
            {
                "key": key,
                "kind": setting_kind(key),
                "baseline": va if in_a else None,
                "candidate": vb if in_b else None,
                "change": change,
                "ratio": ratio,
            }
        )
    return pd.DataFrame(rows, columns=["key", "kind", "baseline", "candidate", "change", "ratio"])


@dataclass(frozen=True)
class SettingFlag:
    """How one kind of reward-setting change is reported (see :data:`SETTING_FLAGS`)."""

    changes: tuple[str, ...]
    status: Status
    severity: Severity
    id: str
    hypothesis: str
    label: str
    what: str
    remediation: str
    figures: tuple[str, ...] = ()


SETTING_FLAGS = (
    SettingFlag(
        ("vanished",),
        Status.SUSPECT,
        Severity.HIGH,
        "rewards/component-vanished-in-config",
        "Every reward component the baseline pays is still declared in the candidate",
        "components that vanished",
        "a reward component vanished from the config",
        "Restore the shaped reward(s) in the candidate's config (case 001 had to add back ore 0.1, battery 0.8, "
        "heart 1.0 after the rewrite).",
        ("reward components",),
    ),
    SettingFlag(
        ("changed", "removed"),
        Status.SUSPECT,
        Severity.MEDIUM,
        "rewards/settings-changed",
        "Reward scales, clipping, normalization and penalties are the same in both configs",
        "settings changed",
        "{n} reward setting(s) changed",
        "Restore the baseline's reward settings, or measure what the new scale does with the summary's attribution "
        "runs.",
    ),
)
"""Reward-setting changes flagged, in order: components that vanished, then settings changed or removed."""


def change_text(row: Any) -> str:
    """``0.8 -> 0 (×0)``: a setting's change with its implied scale when both values are numbers."""
    after = fmt(row.candidate) if row.candidate is not None else "absent"
    scale = f" (×{fmt(row.ratio)})" if isinstance(row.ratio, float) and math.isfinite(row.ratio) else ""
    return f"{fmt(row.baseline)} -> {after}{scale}"


def _config_rules(pair: Pair) -> dict[str, list[str]] | None:
    """The first side's ``config_keys()`` patterns, when a subject declares them."""
    for side in SIDES:
        if pair[side].result.get("has_config_keys"):
            return pair[side].json("config_keys")
    return None


def _keyed(rows: pd.DataFrame, column: str) -> dict[str, Any]:
    return {r.key: getattr(r, column) for r in rows.itertuples()}


SETTINGS_ADDED = {
    "id": "rewards/settings-added",
    "hypothesis": "The candidate declares no reward settings the baseline lacks",
}
"""A secondary finding of the settings check: reward settings only the candidate declares."""


@check(
    "rewards/settings", title="Reward settings in the resolved configs", probe=config_probes.resolved_config
)
def settings(c: Check, pair: Pair) -> Section:
    """Both configs declare the same reward components, scales, clipping, normalization and time penalty.

    Reward settings from the resolved configs, side by side; vanished and rescaled components flagged.
    """
    table = reward_settings(pair.baseline.json("config"), pair.candidate.json("config"), _config_rules(pair))
    if table.empty:
        c.missing(
            "reward setting in either config (the measured components below are all there is to compare)",
            "Expose the reward weights in config() (and rewards patterns in config_keys()) so they can be "
            "compared.",
        )
    findings: list[Finding] = []
    for flag in SETTING_FLAGS:
        rows = table[table["change"].isin(flag.changes)]
        if len(rows):
            items = [f"{r.key}: {change_text(r)}" for r in rows.itertuples()]
            findings.append(
                c.finding(
                    flag.status,
                    flag.severity,
                    id=flag.id,
                    hypothesis=flag.hypothesis,
                    baseline=_keyed(rows, "baseline"),
                    candidate=_keyed(rows, "candidate"),
                    effect=float(len(rows)),
                    effect_label=flag.label,
                    summary=f"{flag.what.format(n=len(rows))}: " + "; ".join(items[:6]),
                    details={"rows": rows.to_dict("records")},
                    remediation=flag.remediation,
                    figures=flag.figures,
                )
            )
    added = table[table["change"] == "added"]
    same = table[table["change"] == "same"]
    if len(added):
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **SETTINGS_ADDED,
                candidate=_keyed(added, "candidate"),
                summary=f"the candidate adds {len(added)} reward setting(s): "
                + ", ".join(added["key"].tolist()[:6]),
                remediation="Check that the new settings are intended.",
            )
        )
    if not findings:
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline=_keyed(same, "baseline"),
                candidate=_keyed(same, "candidate"),
                summary=f"the same {len(same)} reward settings: "
                + ", ".join(f"{r.key}={fmt(r.baseline)}" for r in same.itertuples())[:300],
                remediation="Nothing to do.",
            )
        )
    return c.section(findings, tables={"reward settings": table})


# ---------------------------------------------------------------------------------------------------------
# Range, values paid, wrappers
# ---------------------------------------------------------------------------------------------------------


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
        tables={"reward range": range_table(facts, w), "reward values paid": values},
        figures={"reward values": plots.value_frequencies(values)},
    )


CHECKS = (settings, components, reward_range, relative_magnitudes)
"""Every rewards check, in notebook order."""


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every rewards check, in notebook order."""
    return run_checks(wb, CHECKS, seed=seed)
