"""Checkpointing audit, loading: what each side's ``load_checkpoint`` restores from its own newest checkpoint,
whether the loaded policy computes what the saved one did, and whether each side reads the other's files.

Case 002 is the model ("only 58 of 82 pretrained tensors loaded", normalization statistics not carried over),
and case 000's H4.R1 (a DictConfig → AgentConfig change that may break loading old checkpoints).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlaudit.checkpointing.sources import Fidelity, fidelity, own_fidelity
from rlaudit.checks import Check, check
from rlaudit.engine.workbench import SIDES, ProbeResult
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section

FIDELITY = {"needs": own_fidelity}
"""The evidence of the loading checks: each side's loader on its own newest checkpoint."""
ROUND_TRIP_RTOL = 1e-6
"""A loaded policy whose outputs differ from the saved policy's by more than this (relative to the output's
scale) does not reproduce it."""


def _count(v: Any) -> str:
    """A normalizer count: ``28,736`` or ``0.0001`` (the pseudo-count of statistics never updated)."""
    if not isinstance(v, int | float) or v != v:
        return "—"
    return f"{v:,.0f}" if v >= 10 else f"{v:.4g}"


def loading_problems(report: dict[str, Any]) -> dict[str, Any]:
    """What went wrong in one ``fidelity.json``: loader error, tensors not restored, normalizer mismatch."""
    counts = report.get("counts") or {}
    n = int(report.get("n_policy_tensors") or 0)
    loaded = int(counts.get("loaded", 0))
    bad = {k: v for k, v in counts.items() if k != "loaded"}
    norm = report.get("normalizer") or {}
    norm_problem = ""
    if norm.get("saved") and not norm.get("returned"):
        norm_problem = "normalizer statistics are saved but load_checkpoint does not return them"
    elif norm.get("shape_mismatch"):
        norm_problem = f"normalizer statistics have shape {norm['shape_mismatch'][1]} instead of {norm['shape_mismatch'][0]}"
    elif norm.get("features_differ"):
        norm_problem = (
            f"load_checkpoint returns obs_rms with count {_count(norm.get('returned_count'))}, mean |μ| "
            f"{fmt(norm.get('returned_mean_abs', 0))}, mean σ² {fmt(norm.get('returned_var_mean', 0))} instead of "
            f"the saved count {_count(norm.get('saved_count'))}, |μ| {fmt(norm.get('saved_mean_abs', 0))}, σ² "
            f"{fmt(norm.get('saved_var_mean', 0))} ({norm['features_differ']} of {norm.get('dim')} features differ)"
        )
    return {
        "n": n,
        "loaded": loaded,
        "bad": bad,
        "error": report.get("loader_error"),
        "normalizer": norm_problem,
    }


def _tensor_frame(res: ProbeResult) -> pd.DataFrame:
    return pd.DataFrame(res.json("tensors"))


def _not_loaded(res: ProbeResult) -> list[str]:
    df = _tensor_frame(res)
    if df.empty:
        return []
    rows = df[df["status"] != "loaded"]
    return [f"{r['key'] or r['saved_key']} ({r['status']})" for r in rows.to_dict("records")]


def side_status(side: str, has: dict[str, bool]) -> tuple[Status, Severity]:
    """SUSPECT HIGH when only the candidate has the problem; NOTED MEDIUM otherwise (the baseline has it, or
    both do: then it is not the difference between them)."""
    other = "baseline" if side == "candidate" else "candidate"
    if side == "candidate" and not has[other]:
        return Status.SUSPECT, Severity.HIGH
    return Status.NOTED, Severity.MEDIUM


def _suffix(side: str) -> str:
    return "" if side == "candidate" else "-baseline"


def _tensor_finding(
    c: Check, side: str, probs: dict[str, Any], res: ProbeResult, bad: dict[str, bool]
) -> Finding:
    p = probs[side]
    status, severity = side_status(side, bad)
    listed = _not_loaded(res)
    if p["error"]:
        text = f"the {side}'s load_checkpoint raised {p['error']}"
    else:
        text = (
            f"the {side}'s load_checkpoint restored {p['loaded']} of {p['n']} tensors: "
            + ", ".join(f"{v} {k}" for k, v in p["bad"].items())
            + (
                " (still at their initialization: the loader silently skipped them)"
                if "at-init" in p["bad"]
                else ""
            )
            + ": "
            + ", ".join(listed[:8])
            + (" ..." if len(listed) > 8 else "")
        )
    return c.finding(
        status,
        severity,
        id=f"checkpointing/partial-load{_suffix(side)}",
        hypothesis="load_checkpoint restores every tensor the checkpoint holds",
        baseline=f"{probs['baseline']['loaded']} of {probs['baseline']['n']} loaded",
        candidate=f"{probs['candidate']['loaded']} of {probs['candidate']['n']} loaded",
        effect=float(p["n"] - p["loaded"]),
        effect_label="tensors not restored",
        summary=text + (" — the other side restores all of its own" if status is Status.SUSPECT else ""),
        details={"not_loaded": listed, "counts": res.json("fidelity").get("counts")},
        remediation=f"Fix the {side}'s key mapping in load_checkpoint and load with strict=True so a missing or "
        "renamed key raises instead of leaving a layer at its initialization.",
    )


def _normalizer_finding(
    c: Check, side: str, probs: dict[str, Any], reports: dict[str, Any], bad: dict[str, bool]
) -> Finding:
    status, severity = side_status(side, bad)
    diff = (reports[side].get("normalizer") or {}).get("max_abs_diff_mean")
    return c.finding(
        status,
        severity,
        id=f"checkpointing/normalizer-not-restored{_suffix(side)}",
        hypothesis="load_checkpoint returns the observation-normalizer statistics that were saved",
        baseline=reports["baseline"].get("normalizer"),
        candidate=reports["candidate"].get("normalizer"),
        effect=float(diff) if diff is not None else float("nan"),
        effect_label="largest |Δ mean| per feature",
        summary=f"the {side}: {probs[side]['normalizer']}: evaluation or a resumed run would feed the network "
        "differently scaled observations than it was trained on (case 002)",
        remediation=f"Restore obs_rms from the checkpoint in the {side}'s load_checkpoint (and in resume), and "
        "return it in the extras.",
    )


@check("checkpointing/loading", title="Loading fidelity: what load_checkpoint restores", **FIDELITY)
def loading(c: Check, fid: Fidelity, trust: bool = False) -> Section:
    """load_checkpoint restores every saved tensor and the normalizer statistics.

    After ``load_checkpoint``: every tensor compared with the saved one (loaded, still at init, missing,
    unexpected, shape mismatch), and the returned ``obs_rms`` compared with the saved statistics.
    """
    res = fid.results
    reports = {side: res[side].json("fidelity") for side in SIDES}
    probs = {side: loading_problems(reports[side]) for side in SIDES}
    tensor_bad = {side: bool(probs[side]["bad"] or probs[side]["error"]) for side in SIDES}
    norm_bad = {side: bool(probs[side]["normalizer"]) for side in SIDES}
    findings = [_tensor_finding(c, s, probs, res[s], tensor_bad) for s in SIDES if tensor_bad[s]]
    findings += [_normalizer_finding(c, s, probs, reports, norm_bad) for s in SIDES if norm_bad[s]]
    if not findings:
        norm = reports["baseline"].get("normalizer") or {}
        norm_text = (
            f"; obs_rms returned as saved ({norm.get('dim')} features, count {_count(norm.get('saved_count'))})"
            if norm.get("saved") and norm.get("returned")
            else "; no normalizer statistics saved or returned"
        )
        loaded = {s: f"{probs[s]['loaded']} of {probs[s]['n']} loaded" for s in SIDES}
        findings.append(
            c.finding(
                Status.CLEARED,
                **loaded,
                effect=0.0,
                effect_label="tensors not restored",
                summary=f"{probs['baseline']['loaded']} of {probs['baseline']['n']} | {probs['candidate']['loaded']} "
                f"of {probs['candidate']['n']} tensors restored exactly{norm_text}",
            )
        )
    table = pd.concat([_tensor_frame(res[s]).assign(side=s) for s in SIDES], ignore_index=True)
    return c.section(
        findings,
        tables={
            "tensors after load_checkpoint": table.rename(
                columns={
                    "diff_saved": "max |loaded − saved|",
                    "diff_init": "max |loaded − fresh init|",
                }
            )
        },
        notes=[
            "Each side's newest checkpoint, loaded by its own load_checkpoint under torch seed 0; every tensor is "
            "compared with the one saved in the file (read safely) and with a fresh make_policy under the same "
            "seed (`at-init`: the loader left it at its initialization). Shape mismatches are compared here, "
            "not by torch (load_state_dict raises on them even with strict=False)."
        ],
    )


def round_trip_rows(reports: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, float | None]]:
    """Per side and head: max |Δ| of loaded vs saved outputs, their scale and the ratio; the worst ratio per
    side (None when the side's round trip was not comparable)."""
    rows, worst = [], {}
    for side in SIDES:
        rt = reports[side].get("round_trip") or {}
        worst[side] = None
        for head, d in (rt.get("heads") or {}).items():
            rel = d["max_abs_diff"] / max(d["scale"], 1e-12)
            rows.append(
                {
                    "side": side,
                    "head": head,
                    "max |Δ|": d["max_abs_diff"],
                    "mean |output|": d["scale"],
                    "relative": rel,
                    "batch": rt.get("batch"),
                }
            )
            worst[side] = max(worst[side] or 0.0, rel)
        if not rt.get("comparable"):
            rows.append({"side": side, "head": "—", "note": rt.get("reason", "")})
    columns = ["side", "head", "max |Δ|", "mean |output|", "relative", "batch", "note"]
    return pd.DataFrame(rows, columns=columns), worst


@check("checkpointing/round-trip", title="Round trip: loaded vs saved outputs", **FIDELITY)
def round_trip(c: Check, fid: Fidelity, trust: bool = False) -> Section:
    """The policy load_checkpoint returns computes the same outputs as the saved policy.

    Outputs of the loaded policy vs the saved weights on a fixed observation batch.
    """
    reports = {side: fid.results[side].json("fidelity") for side in SIDES}
    table, worst = round_trip_rows(reports)
    bad = {side: worst[side] is not None and worst[side] > ROUND_TRIP_RTOL for side in SIDES}
    findings = []
    for side in (s for s in SIDES if bad[s]):
        heads = table[(table["side"] == side) & (table["relative"].fillna(0) > ROUND_TRIP_RTOL)]
        other = "baseline" if side == "candidate" else "candidate"
        findings.append(
            c.finding(
                Status.SUSPECT if side == "candidate" and not bad[other] else Status.NOTED,
                Severity.HIGH,
                id=f"checkpointing/round-trip{_suffix(side)}",
                values=worst,
                effect=float(worst[side] or 0.0),
                effect_label="largest relative output difference",
                summary=f"the {side}'s loaded policy computes different outputs than the saved weights: "
                + "; ".join(
                    f"{_output_name(r['head'])} max |Δ| {fmt(r['max |Δ|'])} (mean |output| {fmt(r['mean |output|'])})"
                    for r in heads.to_dict("records")
                )
                + f" on {int(heads['batch'].iloc[0])} observations",
                remediation="Make load_checkpoint restore every tensor (see the loading finding); a round trip must "
                "reproduce the saved policy's outputs exactly.",
            )
        )
    if not findings:
        findings.append(_round_trip_agrees(c, table, worst))
    return c.section(
        findings,
        tables={"head outputs, loaded vs saved": table},
        notes=[
            "The saved weights are put into a fresh make_policy network by rlaudit itself (names, then "
            "order and shape) and both networks run on the same observations from a seeded random-policy "
            "rollout; the policy and value heads are compared (a network without them, such as a TD3 actor, by "
            "what its forward pass outputs)."
        ],
    )


def _output_name(head: str) -> str:
    """``policy head``, or an output found without a head role (``output of actor.mu.4``) as it is."""
    return head if head.startswith("output of ") else f"{head} head"


def _round_trip_agrees(c: Check, table: pd.DataFrame, worst: dict[str, float | None]) -> Finding:
    """CLEARED when both sides were compared and agree; NOTED (what could not be compared, and why) else."""
    if all(worst[s] is not None for s in SIDES):
        return c.finding(
            Status.CLEARED,
            values=worst,
            effect=0.0,
            effect_label="largest relative output difference",
            summary="the loaded policies reproduce the saved policies' outputs exactly ("
            + " and ".join(dict.fromkeys(_output_name(h) for h in table["head"] if h != "—"))
            + ", "
            f"max |Δ| ≤ {ROUND_TRIP_RTOL:g} relative, {int(table['batch'].dropna().iloc[0])} observations)",
        )
    reasons = "; ".join(f"{r['side']}: {r['note']}" for r in table.to_dict("records") if r["head"] == "—")
    return c.finding(
        Status.NOTED,
        Severity.INFO,
        summary=f"round trip not comparable: {reasons}",
        remediation="Give the subject make_env and make_policy so rlaudit can rebuild the saved policy.",
    )


@check("checkpointing/cross-version", title="Cross-version loading", **FIDELITY, reads=("agents",))
def cross_version(c: Check, fid: Fidelity, trust: bool = False) -> Section:
    """Each setup's load_checkpoint reads the other's checkpoints completely.

    The candidate's loader on the baseline's checkpoint and the reverse, each in its own subject's process
    (case 000, H4.R1: a DictConfig → AgentConfig change that may break loading old checkpoints).
    """
    cross = {
        "candidate reads baseline's": fidelity(c.wb, "candidate", fid.newest["baseline"], trust),
        "baseline reads candidate's": fidelity(c.wb, "baseline", fid.newest["candidate"], trust),
    }
    rows, problems, shape_only = [], {}, {}
    for label, r in cross.items():
        if not r.ok:
            problems[label] = f"the probe failed: {r.error or r.missing}"
            shape_only[label] = False
            continue
        p = loading_problems(r.json("fidelity"))
        rows.append(
            {
                "direction": label,
                "loaded": p["loaded"],
                "tensors": p["n"],
                "problems": ", ".join(f"{v} {k}" for k, v in p["bad"].items()) or "—",
                "loader error": p["error"] or "—",
                "normalizer": p["normalizer"] or "as saved",
            }
        )
        if p["bad"] or p["error"]:
            shape_only[label] = set(p["bad"]) <= {
                "shape-mismatch",
                "not-loaded",
                "missing",
                "unexpected",
            } and ("shape-mismatch" in p["bad"] or "size mismatch" in str(p["error"]))
            problems[label] = (
                f"load_checkpoint raised {p['error']}"
                if p["error"]
                else f"{p['loaded']} of {p['n']} tensors restored ("
                + ", ".join(f"{v} {k}" for k, v in p["bad"].items())
                + ")"
            )
    common = {"baseline": rows[1] if len(rows) > 1 else None, "candidate": rows[0] if rows else None}
    if problems:
        only_shapes = all(shape_only.values())
        finding = c.finding(
            Status.NOTED if only_shapes else Status.SUSPECT,
            Severity.MEDIUM if only_shapes else Severity.HIGH,
            **common,
            effect=float(len(problems)),
            effect_label="directions that fail",
            summary="; ".join(f"{k} checkpoint: {v}" for k, v in problems.items())
            + (
                " — the networks differ in shape (see 01_agents), so checkpoints are not interchangeable"
                if only_shapes
                else " — old checkpoints would resume or evaluate with layers left at init"
            ),
            remediation=(
                "Expected while the architectures differ; convert checkpoints explicitly if they must be shared."
                if only_shapes
                else "Make the loaders map the other version's keys (and config type) explicitly and load with "
                "strict=True; add a test that loads a checkpoint written by the previous version."
            ),
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            **common,
            effect=0.0,
            effect_label="directions that fail",
            summary="each loader reads the other's checkpoint completely: "
            + "; ".join(f"{r['direction']} {r['loaded']} of {r['tensors']} tensors" for r in rows),
        )
    return c.section(
        finding,
        tables={"cross loading": pd.DataFrame(rows)},
        notes="Each direction runs in the loading subject's own process (its own code and interpreter), on the "
        "other's newest checkpoint; normalizer differences are reported under loading fidelity.",
    )
