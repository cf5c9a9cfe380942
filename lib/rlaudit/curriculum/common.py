"""What every curriculum check shares: the guard for a side whose ``make_curriculum(config)`` built nothing."""

from __future__ import annotations

from rlaudit.checks import SIDES, Check
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section


def no_curriculum(c: Check, pair: Pair) -> Section | None:
    """A section saying which side's ``make_curriculum(config)`` built nothing, or None when both did."""
    has = {s: pair[s].result.get("has_curriculum", True) for s in SIDES}
    if all(has.values()):
        return None
    if not any(has.values()):
        c.missing(
            "curriculum: make_curriculum(config) returns None on both sides",
            "Nothing to compare without a curriculum; return an object with sample() and update(task, score) from "
            "make_curriculum(config) to audit one.",
            SIDES,
        )
    return c.section(
        c.finding(
            Status.SUSPECT,
            Severity.HIGH,
            baseline="curriculum" if has["baseline"] else "none",
            candidate="curriculum" if has["candidate"] else "none",
            summary="make_curriculum(config) builds no curriculum for "
            + " and ".join(s for s in SIDES if not has[s]),
            remediation="Check why one setup trains without a curriculum.",
        )
    )
