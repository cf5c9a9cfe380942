"""Checkpointing audit, the files: how many checkpoints each setup writes and at which steps, and what the
newest one holds (policy weights, optimizer state, normalizer statistics, step counter, config).

Every file is read without executing it (:mod:`rlaudit.checkpointing.reading`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checkpointing.sources import Checkpoints, contents_of, newest, sources
from rlaudit.checks import Check, check
from rlaudit.engine.workbench import SIDES
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section

PIECES = ("policy weights", "optimizer state", "normalizer statistics", "step counter", "config")
PIECE_COST = {
    "policy weights": "the checkpoint cannot restore the policy",
    "optimizer state": "a resumed run restarts Adam's moments and step count (a jolt in the updates)",
    "normalizer statistics": "evaluation and resumed runs feed differently scaled observations (SB3 users meet "
    "this as VecNormalize statistics living outside the model zip)",
    "step counter": "selection and resume cannot tell how far the run got (schedules restart)",
    "config": "the network cannot be rebuilt from the checkpoint alone",
}


def step(value: Any) -> str:
    """An environment step with thousands separators (``8,192``); ``—`` when unknown."""
    return f"{int(value):,}" if isinstance(value, int | float) and value == value else "—"


UNSAFE = {
    "hypothesis": "Checkpoints can be read without executing code",
    "remediation": "Save plain state dicts (tensors, numbers, strings) instead of pickled objects, or rerun this "
    "notebook with trust=True for files you made yourself.",
}


def steps_text(steps: list[int]) -> str:
    """``"20,480, 40,960, …, 999,424"``: every step when there are few, else the first two and the last."""
    if len(steps) <= 4:
        return ", ".join(step(s) for s in steps)
    return f"{step(steps[0])}, {step(steps[1])}, …, {step(steps[-1])}"


def interval_of(steps: list[int]) -> int | None:
    """The typical gap between consecutive saved steps (median), None with fewer than two."""
    s = sorted(set(steps))
    if len(s) < 2:
        return None
    return int(np.median(np.diff(s)))


def _file_table(recs: dict[str, list[dict[str, Any]]]) -> pd.DataFrame:
    rows = [
        {
            "side": side,
            "file": r["name"],
            "step": r.get("step"),
            "format": r.get("format"),
            "bytes": r.get("bytes"),
            "counters": r.get("counters"),
        }
        for side in SIDES
        for r in recs[side]
    ]
    return pd.DataFrame(rows, columns=["side", "file", "step", "format", "bytes", "counters"])


@check(
    "checkpointing/written",
    title="Checkpoints written",
    needs=lambda wb: sources(wb, shared=True),
    reads=("trainer",),
)
def written(c: Check, src: Checkpoints, trust: bool = False) -> Section:
    """Both setups write checkpoints at the same points of the same run.

    How many checkpoints each setup writes over the same run, and at which steps.
    """
    recs = {side: contents_of(c.wb, side, src[side]["paths"], trust) for side in SIDES}
    steps = {side: sorted(r["step"] for r in recs[side] if r.get("step") is not None) for side in SIDES}
    counters = {side: sorted({k for r in recs[side] for k in (r.get("counters") or {})}) for side in SIDES}
    sizes = {
        side: float(np.mean([r["bytes"] for r in recs[side] if r.get("bytes")] or [0])) for side in SIDES
    }
    na, nb = len(src["baseline"]["paths"]), len(src["candidate"]["paths"])
    ia, ib = interval_of(steps["baseline"]), interval_of(steps["candidate"])
    same_runs = src["baseline"]["run"] is not None and src["candidate"]["run"] is not None
    run_steps = int(c.wb.train_steps)
    # the evidence every verdict below shows: per side, how many checkpoints and at which steps
    counts = {side: {"count": len(src[side]["paths"]), "steps": steps[side]} for side in SIDES}
    extra = {"effect": float(nb - na), "effect_label": "extra checkpoints per run"}
    if not same_runs:
        finding = c.finding(
            Status.NOTED,
            Severity.INFO,
            summary=f"{na} | {nb} existing checkpoints ({src['baseline']['origin']} | "
            f"{src['candidate']['origin']}); not from the same run, so their counts are not compared",
            remediation="Give both subjects a train() so that rlaudit can produce comparable runs.",
            **counts,
        )
    elif na != nb:
        extra_bytes = (nb - na) * sizes["candidate"]
        finding = c.finding(
            Status.NOTED,
            Severity.LOW,
            id="checkpointing/interval",
            summary=f"over the same {run_steps:,}-step run the baseline writes {na} checkpoint(s) (steps "
            f"{steps_text(steps['baseline'])}) and the candidate {nb} (steps {steps_text(steps['candidate'])}); "
            f"the interval changed ({step(ia) if ia else 'final only'} → {step(ib) if ib else 'final only'} steps). "
            f"It costs little: {abs(extra_bytes) / 1e6:.2f} MB of disk per run and a save every few updates; "
            "it does not change what is learned",
            remediation="Nothing to fix for learning; restore the baseline's checkpoint interval only if disk or "
            "save time matters.",
            baseline={**counts["baseline"], "interval": ia},
            candidate={**counts["candidate"], "interval": ib},
            **extra,
        )
    elif steps["baseline"] != steps["candidate"]:
        finding = c.finding(
            Status.NOTED,
            Severity.INFO,
            summary=f"the same number of checkpoints ({na}) but at different steps "
            f"({steps_text(steps['baseline'])} | {steps_text(steps['candidate'])}): the runs count steps per "
            "update differently (a batch-size change, see 02_trainer), not a checkpointing change",
            remediation="Nothing to fix in checkpointing; see the trainer's batch geometry.",
            **counts,
            **extra,
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            summary=f"same checkpoints over the same {run_steps:,}-step run: {na} file(s) at step(s) "
            f"{steps_text(steps['baseline'])}, {sizes['baseline'] / 1e3:.0f} kB each",
            **counts,
            **extra,
        )
    return c.section(
        finding,
        tables={"checkpoint files": _file_table(recs)},
        notes=[
            f"Checkpoints of {src['baseline']['origin'] or 'the baseline'} | "
            f"{src['candidate']['origin'] or 'the candidate'}; steps read from each file's own step counter "
            f"(counters found: {', '.join(counters['baseline']) or 'none'} | "
            f"{', '.join(counters['candidate']) or 'none'})."
        ],
    )


def _count(v: Any) -> str:
    """A tensor or sample count, ``—`` when unknown."""
    return fmt(v) if isinstance(v, int | float) and not (isinstance(v, float) and math.isnan(v)) else "—"


def piece_table(record: dict[str, Any], fidelity: dict[str, Any] | None) -> dict[str, str]:
    """Piece -> where it is in the file (``""`` when absent), from a contents record."""
    out = {}
    groups = record.get("groups") or {}
    policy = (fidelity or {}).get("saved_prefix")
    if policy is None and groups:
        policy = next(
            (g for g in groups if re.search(r"policy|model|state_dict|actor|net", g, re.IGNORECASE)), None
        )
    out["policy weights"] = (
        f"{policy or '(root)'} ({groups.get(policy, groups.get('(root)', 0))} tensors)"
        if (policy is not None or groups)
        else ""
    )
    opt = record.get("optimizer")
    out["optimizer state"] = f"{opt['path']} ({opt['n_state_tensors']} tensors)" if opt else ""
    norm = record.get("normalizer")
    out["normalizer statistics"] = (
        f"{norm['path']} ({norm['dim']} features, count {_count(norm['count'])})" if norm else ""
    )
    out["step counter"] = ", ".join(f"{k}={_count(v)}" for k, v in (record.get("counters") or {}).items())
    out["config"] = (
        f"{record['config_key']} ({record.get('config_keys')} sections)" if record.get("config_key") else ""
    )
    out["RNG state (exact resume)"] = "yes" if record.get("rng_state") else ""
    return out


def _absent_severity(items: list[str]) -> Severity:
    return Severity.MEDIUM if "optimizer state" in items or "normalizer statistics" in items else Severity.LOW


@check("checkpointing/contents", title="What a checkpoint holds", needs=lambda wb: sources(wb))
def contents(c: Check, src: Checkpoints, trust: bool = False) -> Section:
    """Each setup's checkpoints hold policy weights, optimizer state, normalizer statistics, a step counter
    and the config.

    Policy weights, optimizer state, normalizer statistics, step counters and config in each side's newest
    checkpoint, read safely (``weights_only``; unsafe files are reported with the classes they would import).
    """
    recs = {side: contents_of(c.wb, side, src[side]["paths"], trust) for side in SIDES}
    latest = {
        side: next(r for r in recs[side] if r["name"] == Path(newest(recs[side], src[side]["paths"])).name)
        for side in SIDES
    }
    findings: list[Finding] = []
    for side in SIDES:
        if latest[side].get("loaded", False):
            continue
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.MEDIUM,
                id=f"checkpointing/unsafe-{side}",
                **UNSAFE,
                summary=latest[side].get("message") or latest[side].get("error") or "unreadable",
                baseline=latest["baseline"].get("unsafe_globals"),
                candidate=latest["candidate"].get("unsafe_globals"),
            )
        )
    pieces = {side: piece_table(latest[side], None) for side in SIDES}
    rows = [
        {
            "piece": p,
            "baseline": pieces["baseline"].get(p) or "—",
            "candidate": pieces["candidate"].get(p) or "—",
        }
        for p in pieces["baseline"]
    ]
    missing_c = [p for p in PIECES if pieces["baseline"].get(p) and not pieces["candidate"].get(p)]
    missing_b = [p for p in PIECES if pieces["candidate"].get(p) and not pieces["baseline"].get(p)]
    missing_both = [p for p in PIECES if not pieces["baseline"].get(p) and not pieces["candidate"].get(p)]
    if missing_c:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH,
                id="checkpointing/missing-pieces",
                baseline={p: pieces["baseline"][p] for p in missing_c},
                candidate=dict.fromkeys(missing_c, "absent"),
                effect=float(len(missing_c)),
                effect_label="pieces missing",
                summary="the candidate's checkpoints lack "
                + ", ".join(missing_c)
                + ": "
                + "; ".join(PIECE_COST[p] for p in missing_c),
                remediation="Save "
                + ", ".join(missing_c)
                + " in the candidate's checkpoint dict, as the baseline does.",
            )
        )
    if missing_b or missing_both:
        items = missing_b + missing_both
        said = []
        if missing_both:
            said.append("absent from both setups' checkpoints: " + ", ".join(missing_both))
        if missing_b:
            said.append("absent from the baseline's only: " + ", ".join(missing_b))
        findings.append(
            c.finding(
                Status.NOTED,
                _absent_severity(items),
                id="checkpointing/pieces-absent",
                baseline={p: pieces["baseline"].get(p) or "absent" for p in items},
                candidate={p: pieces["candidate"].get(p) or "absent" for p in items},
                summary="; ".join(said)
                + " (not a difference that explains a regression; "
                + "; ".join(PIECE_COST[p] for p in items)
                + ")",
                remediation="Consider saving "
                + ", ".join(items)
                + " too (not needed to match the baseline).",
            )
        )
    if not missing_c:
        present = [p for p in PIECES if pieces["baseline"].get(p)]
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline={p: pieces["baseline"][p] for p in present},
                candidate={p: pieces["candidate"].get(p) for p in present},
                summary=f"both checkpoints hold {', '.join(present) or 'no recognised piece'} "
                f"({latest['baseline'].get('format')} files read with weights_only, "
                f"{latest['baseline'].get('n_tensors')} | {latest['candidate'].get('n_tensors')} tensors)",
            )
        )
    return c.section(
        findings,
        tables={
            "pieces of the newest checkpoint": pd.DataFrame(rows),
            "tensor groups": pd.DataFrame([{"side": s, **(latest[s].get("groups") or {})} for s in SIDES]),
        },
        notes=[
            f"Newest checkpoint of each side ({latest['baseline']['name']} | {latest['candidate']['name']}), read "
            "with rlaudit.engine.safeload (torch weights_only, safetensors, JSON): nothing in the file is executed."
        ],
    )
