"""Values check: per subsystem, which resolved values differ (SUSPECT, filed under the subsystem that owns
the key) and which subsystems are identical (CLEARED), with one NOTED mirror in the config room for the keys
other rooms judge.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.config import probes
from rlaudit.config.diff import RESOLVE_DESC, ConfigDiff, config_diff, filed_under, short_value
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Finding, Severity, Status, notebook_name
from rlaudit.notebook import Section


def _severity(rows: pd.DataFrame) -> Severity:
    rel = rows["relative"].dropna().abs()
    if (rel >= 0.5).any() or rows["relative"].isna().any():
        return Severity.HIGH
    return Severity.MEDIUM


def _owner_finding(row: Any) -> str:
    """The id of the finding that files a differing key under its owning subsystem."""
    return f"config/changed-{row.subsystem}" if row.change == "changed" else f"config/implicit-{row.key}"


CHANGED_VALUES = {
    "id": "config/changed-values",
    "hypothesis": "The resolved configuration is the same outside the config room's own keys",
}
"""A secondary finding of the values check: changed keys that other rooms own and judge."""


def changed_values(c: Check, diff: ConfigDiff) -> Finding | None:
    """NOTED in the config room for every resolved value that differs and is owned by another subsystem.

    Each difference is judged by the finding filed under its owning subsystem (``config/changed-<subsystem>``,
    ``config/implicit-<key>``); this one shows the config room that its configuration changed, with a pointer
    to the owning room, and says so in its details (``mirror_of``, ``knock_on``) so the ranking never counts
    the difference twice. None when nothing outside the config subsystem differs.
    """
    rows = diff.changed()
    rows = rows[rows["subsystem"] != "config"]
    if rows.empty:
        return None
    keys = [
        {
            "key": r.key,
            # the flattened configs' own values: the table's columns coerce 64 to 64.0 and None to NaN
            "baseline": diff.baseline.get(r.key, "(absent)"),
            "candidate": diff.candidate.get(r.key, "(absent)"),
            "change": r.change,
            "owner": r.subsystem,
            "room": notebook_name(r.subsystem),
            "finding": _owner_finding(r),
        }
        for r in rows.itertuples()
    ]
    items = [
        f"{k['key']}: {short_value(k['baseline'])} → {short_value(k['candidate'])} (see {k['room']})"
        for k in keys
    ]
    rooms = list(dict.fromkeys(k["room"] for k in keys))
    return c.finding(
        Status.NOTED,
        Severity.LOW,
        **CHANGED_VALUES,
        values={s: {k["key"]: k[s] for k in keys} for s in SIDES},
        effect=float(len(keys)),
        effect_label="keys changed (judged in their owning rooms)",
        summary=f"the configuration changed: {len(keys)} resolved value(s) differ, each judged in the room that "
        "owns it: " + "; ".join(items[:6]) + (" ..." if len(items) > 6 else ""),
        details={
            "keys": keys,
            "mirror_of": sorted({k["finding"] for k in keys}),
            "knock_on": True,
        },
        remediation="See "
        + ", ".join(rooms)
        + " for what each change does; restore the keys there or let the "
        "summary's attribution measure whether they matter.",
        figures=["config diff"],
    )


@check(
    "config/values", title="Resolved values, side by side", probe=probes.resolved_config, desc=RESOLVE_DESC
)
def values(c: Check, pair: Pair) -> Section:
    """Both setups resolve to the same configuration values.

    Per subsystem: which resolved values differ (SUSPECT), and which subsystems are identical (CLEARED).
    """
    diff = config_diff(pair)
    findings: list[Finding] = []
    changed = diff.table[diff.table["change"] == "changed"]
    for subsystem, rows in changed.groupby("subsystem", sort=True):
        items = [
            f"{r.key}: {short_value(r.baseline)} → {short_value(r.candidate)}" for r in rows.itertuples()
        ]
        finding = c.finding(
            Status.SUSPECT,
            _severity(rows),
            id=f"config/changed-{subsystem}",
            hypothesis=f"The {subsystem} settings are the same in both configs",
            baseline={r.key: r.baseline for r in rows.itertuples()},
            candidate={r.key: r.candidate for r in rows.itertuples()},
            effect=float(len(rows)),
            effect_label="keys changed",
            summary=f"{len(rows)} {subsystem} key(s) differ: "
            + "; ".join(items[:6])
            + (" ..." if len(items) > 6 else ""),
            details={"keys": rows[["key", "baseline", "candidate", "change"]].to_dict("records")},
            remediation=f"Restore the {subsystem} keys to the baseline's values (or keep them and let the "
            "summary's attribution measure whether they matter).",
            figures=["config diff"],
        )
        findings.append(filed_under(finding, str(subsystem)))
    same = diff.table[diff.table["change"] == "same"]
    cleared = sorted(set(same["subsystem"]) - set(changed["subsystem"]))
    if cleared:
        counts = same[same["subsystem"].isin(cleared)].groupby("subsystem").size()
        findings.append(
            c.finding(
                Status.CLEARED,
                id="config/unchanged",
                baseline=int(counts.sum()),
                candidate=int(counts.sum()),
                summary="identical settings for " + ", ".join(f"{s} ({n} keys)" for s, n in counts.items()),
                details={"subsystems": cleared},
            )
        )
    if (mirror := changed_values(c, diff)) is not None:
        findings.append(mirror)
    shown = diff.table[diff.table["change"] != "same"].reset_index(drop=True)
    shown.insert(2, "room", [notebook_name(s) for s in shown["subsystem"]])
    return c.section(
        findings,
        tables={
            "config diff": shown.rename(
                columns={
                    "change": "how it changed",
                    "relative": "relative change (candidate − baseline) / |baseline|",
                }
            )
        },
        notes=[f"{len(diff.table)} keys compared; {len(shown)} differ."],
    )
