"""Which scalars each side's log files hold: empty logs (case 002 trained blind: its TensorBoard files
existed and held zero scalars), scalars the trainer logs that never reach the files, and tags removed, added
or renamed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from rlaudit.checks import Check, check
from rlaudit.findings import Finding, Severity, Status
from rlaudit.flatdiff import match_near_names
from rlaudit.logging.logged import Logged, logged
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES, side_finding

LOG_DIR_HOW = (
    "Define log_dir(config, run_dir=None) in the subject, returning the directory train() writes its "
    "TensorBoard, CSV or JSONL logs to (under recorder.run_dir when given)."
)


def tag_changes(base: Sequence[str], cand: Sequence[str]) -> dict[str, Any]:
    """Tags kept, removed, added and renamed (near names matched by :func:`rlaudit.flatdiff.match_near_names`)."""
    renamed = match_near_names(base, cand)
    renamed_old = {o for o, _, _ in renamed}
    renamed_new = {n for _, n, _ in renamed}
    return {
        "kept": sorted(set(base) & set(cand)),
        "removed": sorted(set(base) - set(cand) - renamed_old),
        "added": sorted(set(cand) - set(base) - renamed_new),
        "renamed": renamed,
    }


DROPPED_SCALARS = {
    "id": "logging/dropped-scalars",
    "hypothesis": "Every scalar the candidate's trainer logs reaches its log files",
}
"""A secondary finding of the presence check: scalars the trainer logs that never reach its log files."""


REMOVED_TAGS = {
    "id": "logging/removed-tags",
    "hypothesis": "The candidate logs every scalar the baseline logs",
}
"""A secondary finding of the presence check: scalars the baseline logs and the candidate does not."""


RENAMED_TAGS = {"id": "logging/renamed-tags", "hypothesis": "The scalars keep their names"}
"""A secondary finding of the presence check: scalars logged under a new name."""


@check("logging/presence", title="Which scalars are written", needs=logged)
def presence(c: Check, evidence: Logged) -> Section:
    """Both setups write the same scalars to their logs.

    Which scalars each side's log files hold: empty logs, removed, added and renamed tags.
    """
    from rlaudit.logging import plots

    logs = evidence.logs
    without = [s for s in SIDES if not logs[s]["has_log_dir"]]
    if len(without) == 2:
        c.missing("`log_dir` capability (where train() writes its logs)", LOG_DIR_HOW, without)
    findings: list[Finding] = []
    empty = [s for s in SIDES if logs[s]["has_log_dir"] and not logs[s]["tags"]]
    for side in empty:
        inv, names = logs[side]["inventory"], logs[side]["recorder_names"]
        files, size = len(inv), int(inv["bytes"].sum()) if len(inv) else 0
        findings.append(
            side_finding(
                c,
                side,
                len(empty) == 2,
                id=f"logging/empty-logs-{side}",
                hypothesis=f"The {side}'s log files hold the scalars it trains on",
                baseline=len(logs["baseline"]["tags"]),
                candidate=len(logs["candidate"]["tags"]),
                effect=float(len(names)),
                effect_label="scalars the trainer logged through the recorder",
                summary=f"the {side}'s log directory holds {files} log file(s) ({size:,} bytes) with zero scalars, "
                f"while its trainer logged {len(names)} scalar names through the recorder: anyone watching "
                "TensorBoard trains blind (case 002)",
                details={"files": inv.to_dict("records")},
                remediation=f"Check the {side}'s log writer: the tags it filters or the namespaces it allows, "
                "flushes and close(); a test that reads the event file back catches it.",
                figures=["tags per side"],
            )
        )
    cand = logs["candidate"]
    lost = [n for n in cand["recorder_names"] if n not in cand["tags"]]
    if cand["has_log_dir"] and cand["tags"] and lost:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.MEDIUM,
                **DROPPED_SCALARS,
                candidate=lost,
                effect=float(len(lost)),
                effect_label="recorder scalars missing from the log files",
                summary=f"{len(lost)} of the {len(cand['recorder_names'])} scalars the candidate's trainer logged "
                f"never reach its log files: {', '.join(lost[:6])}",
                remediation="Write every logged scalar to the log writer (check its tag filter).",
            )
        )
    changes = tag_changes(logs["baseline"]["tags"], cand["tags"])
    both_have = bool(logs["baseline"]["tags"] and cand["tags"])
    if both_have and changes["removed"]:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.MEDIUM,
                **REMOVED_TAGS,
                baseline=len(logs["baseline"]["tags"]),
                candidate=len(cand["tags"]),
                effect=float(len(changes["removed"])),
                effect_label="tags removed",
                summary=f"{len(changes['removed'])} tag(s) the baseline logs are gone: "
                + ", ".join(changes["removed"][:8]),
                remediation="Log the removed scalars again (dashboards and alerts reading them went blank).",
                figures=["tags per side"],
            )
        )
    if both_have and (changes["renamed"] or changes["added"]):
        parts = [f"{o} → {n}" for o, n, _ in changes["renamed"]]
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **RENAMED_TAGS,
                summary=(f"renamed: {', '.join(parts)}" if parts else "")
                + ("; " if parts and changes["added"] else "")
                + (f"added: {', '.join(changes['added'][:8])}" if changes["added"] else ""),
                details=changes,
                remediation="Update dashboards to the new names (or keep the old ones as aliases).",
            )
        )
    if both_have and not any(f.status.is_flag for f in findings):
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline=len(logs["baseline"]["tags"]),
                candidate=len(cand["tags"]),
                summary=f"both log files hold the same {len(changes['kept'])} scalar tags"
                + (f" (plus {len(changes['added'])} new)" if changes["added"] else ""),
            )
        )
    if without:
        findings.append(
            c.finding(
                Status.SKIPPED,
                id="logging/presence-side",
                summary=f"{without[0]}: no `log_dir` capability (where train() writes its logs)",
                details={"missing": "log_dir", "sides": without},
                remediation=LOG_DIR_HOW,
            )
        )
    every = sorted({t for s in SIDES for t in (*logs[s]["tags"], *logs[s]["recorder_names"])})
    table = pd.DataFrame(
        [
            {
                "scalar": t,
                **{f"{s} log file": t in logs[s]["tags"] for s in SIDES},
                **{f"{s} recorder": t in logs[s]["recorder_names"] for s in SIDES},
            }
            for t in every
        ]
    )
    inventory = pd.concat([logs[s]["inventory"].assign(side=s) for s in SIDES], ignore_index=True)
    return c.section(
        findings,
        tables={"tags per side": table, "log files": inventory},
        figures={"tags per side": plots.presence_figure(table)},
    )
