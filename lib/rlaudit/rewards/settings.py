"""Reward settings in the resolved configs: every reward-related key of both sides (penalties, clipping,
normalization, scales and components), removed, added or changed. Case 001's shaped rewards vanished in a
config rewrite (battery 0.8 became absent)."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.config import probes as config_probes
from rlaudit.engine.workbench import Pair
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.flatdiff import classify_key, flatten, values_equal
from rlaudit.notebook import Section

SUBSYSTEM = "rewards"


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
    shown = table.rename(columns={"change": "how it changed", "ratio": "candidate / baseline"})
    return c.section(findings, tables={"reward settings": shown})
