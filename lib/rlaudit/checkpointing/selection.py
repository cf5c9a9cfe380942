"""Checkpointing audit, selection: which checkpoint each setup picks as its "latest" (case 000, H4.R2).

Two tests per side: the subject's own ordering of a real run's checkpoints (``checkpoints(config,
run_dir=...)``, first = latest) against the step saved in each file, and a digit-boundary test (the run's
oldest and newest checkpoints renamed 9 and 10): a subject that sorts file names as strings picks
``model_9`` over ``model_10`` once a run passes nine saves. A test that could not run never clears anything:
the finding says what was not tested and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rlaudit.checkpointing import probes
from rlaudit.checkpointing.files import step
from rlaudit.checkpointing.sources import capabilities, dedicated_run, one_side, trains
from rlaudit.checks import Check, check
from rlaudit.engine.workbench import SIDES, Pair, Workbench
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section


@dataclass
class Selections:
    """The selection probe on both sides, or why it could not run."""

    pair: Pair | None
    stop: Finding | None = None

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        if self.stop is not None:
            return self.stop
        return self.pair.guard(id, subsystem, hypothesis) if self.pair is not None else None


def selections(wb: Workbench, trust: bool = False) -> Selections:
    """Each side's ordering of its dedicated run's checkpoints (or of ``checkpoints(config)`` without train)."""
    from rlaudit.trainer.probes import RUN_SUBDIR

    hypothesis = "Both setups pick the checkpoint with the highest step as their latest"
    caps = capabilities(wb)
    missing = {side: ["checkpoints"] for side in SIDES if "checkpoints" not in caps[side]}
    if missing:
        return Selections(
            None, Finding.skipped("checkpointing/selection", "checkpointing", hypothesis, missing)
        )
    runs = dedicated_run(wb) if all(trains(caps[s]) for s in SIDES) else {}
    results = {}
    for side in SIDES:
        if runs:
            if not runs[side].ok:
                return Selections(one_side(side, runs[side]))
            run_dir = str(Path(runs[side].dir) / RUN_SUBDIR)
            results[side] = wb.run_side(side, probes.selection, run_dir=run_dir, trust=trust)
        else:
            results[side] = wb.run_side(side, probes.selection, run_dir=None, trust=trust)
    return Selections(Pair(baseline=results["baseline"], candidate=results["candidate"]))


def selection_row(side: str, s: dict[str, Any]) -> dict[str, Any]:
    """One side's row of the selection table: what it picks, the highest step, the digit test."""
    picks = s["picks"]
    highest = s.get("highest_index")
    dt = s.get("digit_test") or {}
    return {
        "side": side,
        "checkpoints": len(picks),
        "picked as latest": picks[0] if picks else None,
        "its step": s["steps"][0] if picks else None,
        "highest-step checkpoint": picks[highest] if highest is not None else None,
        "highest step": s["steps"][highest] if highest is not None else None,
        "9 vs 10 test": dt.get("picked") if dt.get("tested") else "not testable",
        "9 vs 10 correct": dt.get("correct"),
    }


def selection_problems(s: dict[str, Any]) -> list[str]:
    """What one side gets wrong: an older checkpoint picked as latest; the digit boundary sorted as text."""
    picks, highest, dt = s["picks"], s.get("highest_index"), s.get("digit_test") or {}
    problems = []
    if picks and not s.get("latest_is_highest") and highest is not None:
        problems.append(
            f"picks {picks[0]} (step {step(s['steps'][0])}) as latest over {picks[highest]} "
            f"(step {step(s['steps'][highest])})"
        )
    if dt.get("tested") and not dt.get("correct"):
        problems.append(
            f"given {dt['older']} (older) and {dt['newer']} (newer), it picks {dt['picked']}: it sorts file names "
            "as strings, so model_9 beats model_10 once a run passes 9 saves"
        )
    return problems


def untested(s: dict[str, Any]) -> list[str]:
    """What could not be tested on one side, with the reason."""
    out = []
    if not s["picks"]:
        out.append("checkpoints() listed no checkpoint")
    elif s.get("highest_index") is None:
        out.append(
            "no checkpoint holds a step counter, so 'latest' cannot be checked against the highest step"
        )
    dt = s.get("digit_test") or {}
    if not dt.get("tested"):
        out.append(
            f"the model_9 vs model_10 order ({dt.get('reason') or 'no run directory to rename files in'})"
        )
    return out


@check("checkpointing/selection", title="Which checkpoint is 'latest'", needs=selections)
def selection(c: Check, sel: Selections, trust: bool = False) -> Section:
    """Both setups pick the checkpoint with the highest step as their latest.

    The subject's "latest" (first of ``checkpoints(config, run_dir=...)``) vs the highest saved step, plus a
    digit-boundary test (``model_9`` vs ``model_10``).
    """
    assert sel.pair is not None
    data = {side: sel.pair[side].json("selection") for side in SIDES}
    rows = [selection_row(side, data[side]) for side in SIDES]
    wrong = {side: p for side in SIDES if (p := selection_problems(data[side]))}
    gaps = {side: g for side in SIDES if (g := untested(data[side]))}
    latest = {row["side"]: row["picked as latest"] for row in rows}
    findings = []
    for side, problems in wrong.items():
        other = "baseline" if side == "candidate" else "candidate"
        findings.append(
            c.finding(
                Status.SUSPECT if side == "candidate" and other not in wrong else Status.NOTED,
                Severity.HIGH,
                id="checkpointing/selection" if side == "candidate" else "checkpointing/selection-baseline",
                baseline=rows[0]["9 vs 10 test"],
                candidate=rows[1]["9 vs 10 test"],
                summary=f"the {side} "
                + "; ".join(problems)
                + " — resuming or evaluating 'the latest' checkpoint would load an older one (case 000, H4.R2)",
                remediation=f"Sort the {side}'s checkpoints by the step number parsed from the name (int) or by "
                "the step saved inside, not by the file name as a string.",
            )
        )
    if not wrong:
        picked = " | ".join(f"{r['picked as latest']}, step {step(r['its step'])}" for r in rows)
        if gaps:
            findings.append(
                c.finding(
                    Status.NOTED,
                    Severity.INFO,
                    **latest,
                    summary="nothing wrong found, but not everything could be tested: "
                    + "; ".join(f"{side}: {', '.join(g)}" for side, g in gaps.items())
                    + f" (picked as latest: {picked})",
                    remediation="Let train() save at least two checkpoints with a number in their file names, and "
                    "accept checkpoints(config, run_dir=...), so the ordering can be tested.",
                )
            )
        else:
            findings.append(
                c.finding(
                    Status.CLEARED,
                    **latest,
                    summary=f"both pick their highest-step checkpoint as latest ({picked}) and order model_10 "
                    "before model_9",
                )
            )
    return c.section(
        findings,
        tables={"selection": pd.DataFrame(rows)},
        notes=[
            "A dedicated short run per side (saving every update when the subject's config_keys() name a "
            "checkpoint interval), then each subject's own checkpoints(config, run_dir=...) ordering; the "
            "step of each file is read from its contents. The 9-vs-10 test copies the run's oldest and "
            "newest checkpoints under numbers 9 and 10 in a scratch run directory."
        ],
    )
