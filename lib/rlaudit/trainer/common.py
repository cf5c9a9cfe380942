"""Helpers shared by the learning-dynamics audits (trainer, logging, optimizer, loss): config lookups by key
pattern, recorder tables of many runs as one frame, and the verdict on a deviation found on one side.

Notebook side only (pandas).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from rlaudit import stats
from rlaudit.evidence import equivalence_seeds, fmt, settle_phrase
from rlaudit.findings import Severity, Status
from rlaudit.flatdiff import flatten
from rlaudit.trainer.runs import RunData

__all__ = [
    "SIDES",
    "find_keys",
    "first_number",
    "fmt",
    "seeds_to_settle",
    "settle_text",
    "side_finding",
    "side_verdict",
    "stack_tables",
]

SIDES = ("baseline", "candidate")


def find_keys(config: Mapping[str, Any], patterns: Iterable[str]) -> dict[str, Any]:
    """Flattened config entries whose last segment (or full dotted key) matches any glob in ``patterns``.

    Matching is case-insensitive; the result keeps the config's order.
    """
    flat = flatten(dict(config))
    pats = [p.lower() for p in patterns]
    out = {}
    for key, value in flat.items():
        leaf = key.rsplit(".", 1)[-1].lower()
        if any(fnmatch.fnmatch(leaf, p) or fnmatch.fnmatch(key.lower(), p) for p in pats):
            out[key] = value
    return out


def first_number(config: Mapping[str, Any], patterns: Iterable[str]) -> tuple[str | None, float | None]:
    """The first numeric (non-bool) entry matching ``patterns``: ``(key, value)`` or ``(None, None)``."""
    for key, value in find_keys(config, patterns).items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            return key, float(value)
    return None, None


def side_verdict(
    side: str,
    alike: bool,
    flagged: tuple[Status, Severity] = (Status.CONFIRMED, Severity.HIGH),
) -> tuple[Status, Severity]:
    """Status and severity of a deviation found within one side (a config the trainer ignores, a frozen
    tensor, an empty log).

    The candidate's deviation is ``flagged``; the baseline's is NOTED at low severity (it trained well with
    it). The same deviation on both sides (``alike``) is no difference between them: NOTED at low severity on
    both, so symmetric evidence never gets different severities.
    """
    if side == "candidate" and not alike:
        return flagged
    return Status.NOTED, Severity.LOW


def side_finding(
    c: Any,
    side: str,
    alike: bool,
    *,
    id: str,
    hypothesis: str,
    summary: str,
    flagged: tuple[Status, Severity] = (Status.CONFIRMED, Severity.HIGH),
    **fields: Any,
) -> Any:
    """A finding about a deviation within one side, at the status and severity of :func:`side_verdict`.

    Args:
        c: The :class:`rlaudit.checks.Check` making it.
        side: The side it was found on.
        alike: The same deviation was found on the other side too (said in the summary).
        id, hypothesis, summary: As in :meth:`rlaudit.checks.Check.finding`.
        flagged: Status and severity of a deviation on the candidate only.
        **fields: Further :meth:`rlaudit.checks.Check.finding` arguments (evidence, remediation, figures).
    """
    status, severity = side_verdict(side, alike, flagged)
    tail = " — both sides alike" if alike else ""
    return c.finding(status, severity, id=id, hypothesis=hypothesis, summary=summary + tail, **fields)


def seeds_to_settle(sd: float, margin: float, diff: float) -> int | None:
    """Seeds (or repeats) per side that would settle an inconclusive comparison of two means.

    When the observed difference lies inside the margin, the seeds that two one-sided tests need to show
    equivalence (:func:`rlaudit.evidence.equivalence_seeds`); otherwise the seeds a two-sample test needs to
    show a difference that large (:func:`rlaudit.stats.power_seeds`, the seeding room's power table). None when
    the spread is unknown.

    Args:
        sd: Spread of one run's value across seeds (same unit as ``margin`` and ``diff``).
        margin: The practical margin (> 0).
        diff: The observed difference.
    """
    if not (math.isfinite(sd) and math.isfinite(diff) and margin > 0):
        return None
    if abs(diff) < margin:
        return equivalence_seeds(sd, margin, diff)
    return stats.power_seeds(sd, abs(diff))


def settle_text(needed: int | None, have: int, minimum: int, what: str = "seeds") -> str:
    """What would settle an inconclusive comparison: ``"about 12 seeds per side would settle it"``.

    Never fewer than ``minimum`` (the fewest a verdict takes); when the estimate is not above what was run
    (an estimate from few seeds), just "more".
    """
    if needed is None or max(needed, minimum) <= have:
        return (
            f"more {what} would settle it" if have >= minimum else f"a verdict needs {minimum}+ {what} a side"
        )
    return settle_phrase(max(needed, minimum), what)


def stack_tables(data: Mapping[str, Sequence[RunData]], name: str) -> pd.DataFrame:
    """One recorder table of every run, with ``side`` and ``seed`` columns first (empty if none wrote it)."""
    frames = []
    for side, items in data.items():
        for run in items:
            df = run.table(name)
            if df.empty:
                continue
            df = df.copy()
            df.insert(0, "seed", run.seed)
            df.insert(0, "side", side)
            frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
