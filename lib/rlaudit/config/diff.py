"""The config diff every config check reads: both resolved configs (one cached probe run), flattened and
compared key by key, each key attributed to a subsystem (the subject's ``config_keys()`` when it has one, name
rules otherwise), and the small formatting and filing helpers the checks share.

Other rooms and the summary's attribution read it too (:func:`load_diff`), to restore one subsystem's keys at a
time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rlaudit.checks import run_probe
from rlaudit.config import probes
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.findings import Finding
from rlaudit.flatdiff import classify_key, flatten

__all__ = [
    "RESOLVE_DESC",
    "ConfigDiff",
    "config_diff",
    "diff_configs",
    "filed_under",
    "load_diff",
    "short_value",
    "values_equal",
]

RESOLVE_DESC = "config: resolved configs"
"""The description of the resolved-config probe run that every config check shares."""


@dataclass
class ConfigDiff:
    """Both flattened configs and their per-key comparison.

    Attributes:
        table: One row per key in either config: key, subsystem, baseline, candidate, change
            (``same``/``changed``/``added``/``removed``/``implicit``), relative (numeric relative change).
        baseline: Flattened baseline config.
        candidate: Flattened candidate config.
    """

    table: pd.DataFrame
    baseline: dict[str, Any]
    candidate: dict[str, Any]

    def changed(self) -> pd.DataFrame:
        return self.table[self.table["change"] != "same"]

    def keys_by_subsystem(self) -> dict[str, list[str]]:
        """Keys that differ, grouped by subsystem (what an attribution experiment would restore)."""
        out: dict[str, list[str]] = {}
        for row in self.changed().itertuples():
            out.setdefault(row.subsystem, []).append(row.key)
        return out


def _rules(pair: Pair) -> dict[str, list[str]] | None:
    """The subjects' own subsystem map (baseline first), or None to use name rules."""
    for side in (pair.baseline, pair.candidate):
        if side.ok and side.result.get("has_config_keys"):
            return side.json("config_keys")
    return None


def values_equal(a: Any, b: Any, rtol: float = 1e-9) -> bool:
    """Whether two config values are the same: booleans by identity, numbers within ``rtol``, the rest as JSON."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=0.0)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def diff_configs(a: dict[str, Any], b: dict[str, Any], rules: dict[str, list[str]] | None) -> ConfigDiff:
    """Compare two nested configs key by key.

    ``changed``: both sides set a value and they differ. ``implicit``: one side sets a value, the other sets
    None (case 000's scheduler fields that became None). ``added``/``removed``: the key exists on one side
    only. In the last three cases one side falls back to a default the config does not show.
    """
    fa, fb = flatten(a), flatten(b)
    rows = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key), fb.get(key)
        in_a, in_b = key in fa, key in fb
        if in_a and in_b and values_equal(va, vb):
            change = "same"
        elif not in_b:
            change = "removed"
        elif not in_a:
            change = "added"
        elif (va is None) != (vb is None):
            change = "implicit"
        else:
            change = "changed"
        relative = None
        if change == "changed" and isinstance(va, int | float) and isinstance(vb, int | float):
            if not isinstance(va, bool) and va != 0:
                relative = (float(vb) - float(va)) / abs(float(va))
        rows.append(
            {
                "key": key,
                "subsystem": classify_key(key, rules),
                "baseline": va if in_a else "(absent)",
                "candidate": vb if in_b else "(absent)",
                "change": change,
                "relative": relative,
            }
        )
    # Object columns keep each value as the config has it: a numeric column would turn 64 into 64.0 and None
    # into NaN (and an implicit None would no longer read as None).
    table = pd.DataFrame(
        rows, columns=["key", "subsystem", "baseline", "candidate", "change", "relative"], dtype=object
    )
    table["relative"] = pd.to_numeric(table["relative"], errors="coerce")
    return ConfigDiff(table=table, baseline=fa, candidate=fb)


def config_diff(pair: Pair) -> ConfigDiff:
    """Diff the two resolved configs of a :func:`rlaudit.config.probes.resolved_config` pair (both sides ok)."""
    return diff_configs(pair.baseline.json("config"), pair.candidate.json("config"), _rules(pair))


def load_diff(wb: Workbench) -> tuple[Pair, ConfigDiff | None]:
    """Resolve both configs (cached) and diff them; the diff is None when a side failed."""
    pair = run_probe(wb, probes.resolved_config, RESOLVE_DESC)
    return pair, (config_diff(pair) if pair.ok else None)


def short_value(value: Any) -> str:
    """A value as a finding's summary shows it: JSON unless a string, cut to 40 characters."""
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."


def filed_under(finding: Finding, subsystem: str) -> Finding:
    """File a finding of this room under the subsystem that owns the key (the ranking counts it there)."""
    finding.subsystem = subsystem
    return finding
