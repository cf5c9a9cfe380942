"""Helpers shared by the learning-dynamics audits (trainer, logging, optimizer, loss): config lookups by key
pattern, a guard for training runs, recorder tables of many runs as one frame, short number formats.

Notebook side only (pandas).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.compare import flatten
from rlaudit.findings import Finding
from rlaudit.trainer.runs import RunData, run_data
from rlaudit.workbench import Pair

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


def guard_runs(pairs: Sequence[Pair], id: str, subsystem: str, hypothesis: str) -> Finding | None:
    """SKIPPED or ERROR when a side has no completed training run; None when both have at least one."""
    data = run_data(pairs)
    if all(data[side] for side in SIDES):
        return None
    for pair in pairs:
        finding = pair.guard(id, subsystem, hypothesis)
        if finding is not None:
            return finding
    return Finding.error(id, subsystem, hypothesis, "audit", RuntimeError("no training run completed"))


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


def fmt(value: Any, digits: int = 3) -> str:
    """``0.00025`` -> ``"0.00025"``, ``1024.0`` -> ``"1024"``, ``12345.6`` -> ``"12,346"``; None -> ``"—"``."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return str(number)
    if number.is_integer() and abs(number) < 1e12:
        return str(int(number))
    if abs(number) >= 1000:
        return f"{number:,.0f}"
    return f"{number:.{digits}g}"


def pct(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:+.0%}"
