"""What the two replica checks share: the replicas probe on both sides, and where two replicas differ.

A replica records digests of one seeded run (the environment rollout, the initial weights, each optimizer
step's gradient norm, the logged losses and episodes); :func:`compare_replicas` says where two of them part,
and :func:`describe_difference` says it in words. Both :mod:`rlaudit.seeding.determinism` and
:mod:`rlaudit.seeding.generators` read one run of :data:`replicas_pair`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlaudit.checks import SIDES, Check, probe_evidence
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.env.analysis import sizes
from rlaudit.findings import Finding
from rlaudit.seeding import probes


def _compare_env(ea: dict[str, Any], eb: dict[str, Any]) -> dict[str, Any]:
    """``env_step``: the first step whose digest differs (a shorter rollout differs where it stops)."""
    da, db = ea["digests"], eb["digests"]
    first = next((i for i, (x, y) in enumerate(zip(da, db, strict=False)) if x != y), None)
    if first is None and len(da) != len(db):
        first = min(len(da), len(db))
    return {"env_step": first, "recorded": ["environment rollouts"]}


_TRAIN_RECORDS = (
    ("initial weights", "init", None),
    ("gradient norms", "grad_norms", []),
    ("losses", "losses", {}),
    ("episode statistics", "episodes", None),
)
"""What a training replica can record: (name, key, the value when the trainer reported none)."""


def _compare_train(ta: dict[str, Any], tb: dict[str, Any]) -> dict[str, Any]:
    """``init``, ``init_tensors``, ``grad_step`` (1-based), ``losses``, ``episodes`` and ``final`` of two
    training starts; a quantity neither replica recorded compares as None (nothing to say), never as equal."""

    def same(key: str, empty: Any) -> bool | None:
        a, b = ta.get(key, empty), tb.get(key, empty)
        return None if a == empty and b == empty else a == b

    ga, gb = np.asarray(ta["grad_norms"], dtype=float), np.asarray(tb["grad_norms"], dtype=float)
    n = min(len(ga), len(gb))
    diff = ~np.isclose(ga[:n], gb[:n], rtol=1e-9, atol=0.0, equal_nan=True)
    return {
        "init": same("init", None),
        "init_tensors": sorted(
            k for k in ta["init_tensors"] if ta["init_tensors"].get(k) != tb["init_tensors"].get(k)
        ),
        "grad_step": int(np.argmax(diff)) + 1 if diff.any() else (None if len(ga) == len(gb) else n + 1),
        "losses": same("losses", {}),
        "episodes": same("episodes", None),
        "final": same("final", None),
        "recorded": [
            name
            for name, key, empty in _TRAIN_RECORDS
            if ta.get(key, empty) != empty or tb.get(key, empty) != empty
        ],
    }


def compare_replicas(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Where two replicas differ.

    Returns:
        ``env_step`` (first differing step of the environment rollout, 0 = reset; None when identical),
        ``init`` (initial weights identical), ``init_tensors`` (tensors whose initial values differ),
        ``grad_step`` (first optimizer step whose gradient norm differs, 1-based; None when identical),
        ``losses`` (logged losses identical), ``episodes`` (reported episode statistics identical), ``final``
        (final weights identical), each None when neither replica recorded it; ``errors`` (part -> text),
        ``identical`` (everything recorded agrees), ``parts`` (the parts both replicas ran), ``recorded``
        (what the replicas recorded, by name).
    """
    out: dict[str, Any] = {
        "env_step": None,
        "init": None,
        "init_tensors": [],
        "grad_step": None,
        "losses": None,
        "episodes": None,
        "final": None,
        "errors": {},
        "parts": [],
        "recorded": [],
    }
    for part, compare in (("env", _compare_env), ("train", _compare_train)):
        pa, pb = a.get(part), b.get(part)
        if pa is None or pb is None:
            continue
        out["parts"].append(part)
        if "error" in pa or "error" in pb:
            out["errors"][part] = pa.get("error") or pb.get("error")
        else:
            found = compare(pa, pb)
            out["recorded"] += found.pop("recorded")
            out.update(found)
    out["identical"] = (
        not out["errors"]
        and out["env_step"] is None
        and out["grad_step"] is None
        and all(out[k] in (None, True) for k in ("init", "losses", "episodes", "final"))
    )
    return out


def describe_difference(cmp: dict[str, Any]) -> str:
    """The differences of :func:`compare_replicas` as a phrase: ``initial weights (6 tensors), ...``."""
    parts = []
    if cmp["errors"]:
        parts.append("failed: " + "; ".join(f"{k}: {v}" for k, v in cmp["errors"].items()))
    if cmp["env_step"] is not None:
        parts.append(f"environment rollout from step {cmp['env_step']}")
    if cmp["init"] is False:
        parts.append(f"initial weights ({len(cmp['init_tensors'])} tensors)")
    if cmp["grad_step"] is not None:
        parts.append(f"gradient norms from optimizer step {cmp['grad_step']}")
    if cmp["losses"] is False:
        parts.append("logged losses")
    if cmp["episodes"] is False:
        parts.append("episode statistics")
    if cmp["final"] is False and cmp["init"] is not False:
        parts.append("final weights")
    return ", ".join(parts) if parts else "nothing"


def replica_errors(rep: dict[str, Any]) -> list[str]:
    """Every failure recorded in one side's replicas, as ``"<replica> <part>: <error>"``."""
    out = [f"fresh process {i + 1}: {r['error']}" for i, r in enumerate(rep["fresh"]) if "error" in r]
    named = [(f"fresh process {i + 1}", r) for i, r in enumerate(rep["fresh"]) if "error" not in r]
    named += [(f"worker ({name})", r) for name, r in rep["in_process"].items()]
    for name, r in named:
        for part in ("env", "train"):
            if isinstance(r.get(part), dict) and "error" in r[part]:
                out.append(f"{name} {part}: {r[part]['error']}")
    return out


def errors_finding(c: Check, reps: dict[str, dict[str, Any]]) -> Finding | None:
    """ERROR naming the first failed replica (the subject itself broke), or None when every replica ran."""
    errors = {s: replica_errors(reps[s]) for s in SIDES}
    if not any(errors.values()):
        return None
    first = next(e for s in SIDES for e in errors[s])
    finding = Finding.error(
        c.id,
        c.subsystem,
        c.hypothesis,
        " and ".join(s for s in SIDES if errors[s]),
        RuntimeError(f"a seeded replica failed: {first}"),
    )
    finding.evidence.details["replica_errors"] = errors
    finding.remediation = (
        "The subject's make_env or train raised inside a replica (see the evidence); fix it and "
        "rerun this notebook."
    )
    return finding


def replicas_params(wb: Workbench, seed: int = 0) -> dict[str, Any]:
    """Parameters of :func:`rlaudit.seeding.probes.replicas` at the workbench's profile."""
    sz = sizes(wb.profile)
    return {
        "seed": seed,
        "other_seed": seed + 1,
        "env_steps": sz.seeding_env_steps,
        "train_steps": sz.seeding_train_steps,
    }


replicas_pair = probe_evidence(probes.replicas, replicas_params, "seeding: replicas")
"""The replicas probe on both sides, ``replicas_pair(wb, seed=0) -> Pair`` (one run for two checks)."""


def side_replicas(c: Check, pair: Pair) -> dict[str, dict[str, Any]]:
    """Both sides' replicas; stops the check with SKIPPED when a side has nothing to replicate."""
    lacking = [s for s in SIDES if not pair[s].result.get("parts")]
    if lacking:
        c.missing(
            "make_env or train to replicate",
            "Expose make_env(config, seed) or train(config, steps, seed, recorder) in the subject.",
            lacking,
        )
    return {s: pair[s].json("replicas") for s in SIDES}
