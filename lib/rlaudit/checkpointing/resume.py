"""Checkpointing audit, resume: does a run resumed from a mid-run checkpoint continue like the uninterrupted run?

Each side's dedicated run is resumed from its middle checkpoint with ``train(..., resume_from=<checkpoint>)``
and the same seed and steps; the recorder's scalars after the resume point are compared with the uninterrupted
run's at the same steps (timing metrics left out: they never repeat).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checkpointing.files import step
from rlaudit.checkpointing.sources import (
    contents_of,
    dedicated_params,
    dedicated_run,
    one_side,
    run_checkpoints,
)
from rlaudit.checks import Check, check, value_learners
from rlaudit.engine.workbench import SIDES, Pair, ProbeResult, Workbench
from rlaudit.evidence import Verdict, fmt, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section

TIMING_METRIC = re.compile(r"(?:^perf/|sps|seconds|time|fps|throughput)", re.IGNORECASE)
EXACT = 1e-6
"""A resumed run whose metrics differ from the uninterrupted run's by less than this (relative) continues
exactly."""
BROKEN = 0.10
"""A resumed run whose largest relative metric difference exceeds this does not continue the run."""


def continuity(full: pd.DataFrame, resumed: pd.DataFrame) -> pd.DataFrame:
    """Scalars of the resumed run next to the uninterrupted run's at the same steps.

    Args:
        full: Uninterrupted run's ``scalars`` table (step, name, value).
        resumed: Resumed run's ``scalars`` table (only steps after the resume point).

    Returns:
        Columns name, step, uninterrupted, resumed, abs_diff, rel_diff (|Δ| over the larger of |value|, the
        metric's std over the uninterrupted run, and 1e-8); timing metrics are left out.
    """
    columns = ["name", "step", "uninterrupted", "resumed", "abs_diff", "rel_diff"]
    if (
        full.empty
        or resumed.empty
        or not {"step", "name", "value"} <= set(full.columns) & set(resumed.columns)
    ):
        return pd.DataFrame(columns=columns)
    keep = ~resumed["name"].str.contains(TIMING_METRIC)
    merged = resumed[keep].merge(full, on=["step", "name"], suffixes=("_r", "_u"))
    scale = full.groupby("name")["value"].std().fillna(0.0)
    merged["scale"] = np.maximum.reduce(
        [
            merged["value_u"].abs().to_numpy(),
            merged["name"].map(scale).fillna(0.0).to_numpy(),
            np.full(len(merged), 1e-8),
        ]
    )
    merged["abs_diff"] = (merged["value_r"] - merged["value_u"]).abs()
    merged["rel_diff"] = merged["abs_diff"] / merged["scale"]
    return merged.rename(columns={"value_u": "uninterrupted", "value_r": "resumed"})[columns]


def resume_class(table: pd.DataFrame) -> str:
    """``exact``, ``approximate``, ``broken`` (see :data:`EXACT`, :data:`BROKEN`) or ``unknown`` (no overlap)."""
    if table.empty:
        return "unknown"
    worst = float(table["rel_diff"].max())
    if worst <= EXACT:
        return "exact"
    return "broken" if worst > BROKEN else "approximate"


@dataclass
class Resumes:
    """Per side: the dedicated run, its resumed run, and how the resumed run continues.

    Attributes:
        runs: The dedicated runs (or a Pair guard when one failed).
        classes: Per side ``exact``/``approximate``/``broken``/``unknown``, or ``untestable``/``unsupported``.
        points: Per side the step resumed from (None when untestable).
        tables: Per side the :func:`continuity` table.
        notes: Why a side could not be tested.
        stop: A guard finding (a capability missing, a run that failed).
    """

    runs: dict[str, ProbeResult] = field(default_factory=dict)
    classes: dict[str, str] = field(default_factory=dict)
    points: dict[str, int | None] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    stop: Any = None

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        if isinstance(self.stop, Pair):
            return self.stop.guard(id, subsystem, hypothesis)
        return self.stop


def resumes(wb: Workbench, trust: bool = False, given: Resumes | None = None) -> Resumes:
    """Resume each side's dedicated run from its middle checkpoint and compare with the uninterrupted run
    (``given``: these, as a test passes them)."""
    if given is not None:
        return given
    from rlaudit.checkpointing.sources import capabilities
    from rlaudit.trainer.probes import train_run
    from rlaudit.trainer.runs import RunData

    caps = capabilities(wb)
    missing = {side: [c for c in ("train", "checkpoints") if c not in caps[side]] for side in SIDES}
    out = Resumes()
    if any(missing.values()):
        hypothesis = "A run resumed from a checkpoint continues like the uninterrupted run"
        out.stop = Finding.skipped("checkpointing/resume", "checkpointing", hypothesis, missing)
        return out
    out.runs = dedicated_run(wb)
    if not all(r.ok for r in out.runs.values()):
        out.stop = Pair(baseline=out.runs["baseline"], candidate=out.runs["candidate"])
        return out
    params = dedicated_params(wb)
    for side in SIDES:
        paths = run_checkpoints(out.runs[side])
        recs = contents_of(wb, side, paths, trust) if paths else []
        steps = [(r.get("step"), p) for r, p in zip(recs, paths, strict=True) if r.get("step") is not None]
        final = max((s for s, _ in steps), default=None)
        mids = sorted((s, p) for s, p in steps if s != final)
        if not mids:
            out.classes[side], out.points[side] = "untestable", None
            out.notes.append(
                f"the {side}'s run left no checkpoint before its end ({len(paths)} checkpoint(s)); nothing to "
                "resume from"
            )
            continue
        at, path = mids[len(mids) // 2]
        out.points[side] = at
        resumed = wb.run_side(side, train_run, **params[side], resume_from=str(path))
        if not resumed.ok:
            err = str(getattr(resumed.error, "message", resumed.error))
            if "resume_from" not in err:
                out.stop = one_side(side, resumed)
                return out
            out.classes[side] = "unsupported"
            out.notes.append(f"the {side}'s train() does not accept resume_from=: {err[:200]}")
            continue
        full = RunData.from_result(out.runs[side]).table("scalars")
        again = RunData.from_result(resumed).table("scalars")
        out.tables[side] = continuity(full, again).assign(side=side)
        out.classes[side] = resume_class(out.tables[side])
    return out


@check("checkpointing/resume", title="Resume: does a resumed run continue the run?", needs=resumes)
def resume(c: Check, res: Resumes, trust: bool = False) -> Section:
    """A run resumed from a checkpoint continues like the uninterrupted run (losses and metrics)

    Resume each side's dedicated run from a mid-run checkpoint (same seed and steps) and compare the
    recorder's scalars after the resume point with the uninterrupted run's.
    """
    classes, tables = res.classes, res.tables
    table = pd.concat(list(tables.values()), ignore_index=True) if tables else pd.DataFrame()
    worst = {s: float(tables[s]["rel_diff"].max()) if s in tables and len(tables[s]) else None for s in SIDES}

    def describe(side: str) -> str:
        t = tables.get(side)
        if t is None or t.empty:
            return classes[side]
        top = t.sort_values("rel_diff", ascending=False).iloc[0]
        return (
            f"{classes[side]} (resumed at step {step(res.points[side])}; largest difference {top['name']} "
            f"{fmt(top['uninterrupted'], 4)} → {fmt(top['resumed'], 4)}, {pct(top['rel_diff'])} of its scale)"
        )

    sides = {"baseline": describe("baseline"), "candidate": describe("candidate")}
    replay = (
        " An off-policy learner carries its replay buffer too: a checkpoint without it resumes from an empty "
        "buffer (SB3 saves it apart: model.save_replay_buffer and load_replay_buffer)."
        if value_learners(c.wb)
        else ""
    )
    if {"unsupported", "untestable", "unknown"} & set(classes.values()):
        finding = c.finding(
            Status.SKIPPED,
            values=classes,
            summary="; ".join(res.notes) or "the resumed runs share no step with the uninterrupted runs",
            remediation="Accept train(..., resume_from=path) and save checkpoints during the run so resume can be "
            "tested.",
        )
    else:
        if classes["candidate"] == "broken" and classes["baseline"] != "broken":
            decided = Verdict(
                Status.SUSPECT,
                Severity.HIGH,
                f"the candidate's resumed run does not continue its own run: {sides['candidate']}; the "
                f"baseline's continues {classes['baseline']}ly",
                "Restore everything the run carries in resume (weights, optimizer, normalizer statistics, RNG and "
                "step counters) and check it with a resume-equals-uninterrupted test." + replay,
            )
        elif classes["baseline"] != classes["candidate"] or "broken" in classes.values():
            decided = Verdict(
                Status.NOTED,
                Severity.MEDIUM if "broken" in classes.values() else Severity.LOW,
                f"resume continuity: baseline {sides['baseline']}; candidate {sides['candidate']}",
                "Save and restore RNG states with the checkpoint if exact resumes matter." + replay,
            )
        else:
            decided = Verdict(
                Status.CLEARED,
                Severity.INFO,
                f"both resumed runs continue {classes['candidate']}ly: {table['name'].nunique()} metrics after the "
                f"resume point (step {step(res.points['baseline'])} | {step(res.points['candidate'])}) match the "
                f"uninterrupted runs (largest relative difference {fmt(worst['baseline'], 2)} | "
                f"{fmt(worst['candidate'], 2)})",
                "",
            )
        shown = [] if decided.status is Status.CLEARED else ["resume continuity"]
        finding = c.conclude(
            decided,
            values=sides,
            effect=worst["candidate"],
            effect_label="largest relative metric difference after resume",
            figures=shown,
        )
    from rlaudit.checkpointing import plots

    params = dedicated_params(c.wb)["baseline"]
    return c.section(
        finding,
        tables={
            "metrics after the resume point": table.rename(
                columns={
                    "abs_diff": "|resumed − uninterrupted|",
                    "rel_diff": "|resumed − uninterrupted| / scale",
                }
            )
        },
        figures={"resume continuity": plots.resume_figure(table)} if not table.empty else {},
        notes=[
            f"Dedicated run per side ({params['steps']:,} steps, seed 0"
            + (f", overrides {params.get('overrides')}" if params.get("overrides") else "")
            + "), resumed from its middle checkpoint with train(..., resume_from=<checkpoint>) and the same "
            f"seed and steps; timing metrics are left out. Exact: ≤ {EXACT:g} relative; broken: > {BROKEN:.0%}.",
            *res.notes,
        ],
    )
