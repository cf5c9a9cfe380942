"""The declared spaces (spaces/definitions) and whether observations stay inside them
(spaces/observation-bounds), from the shared random-action rollout (:func:`rlaudit.spaces.observations.obs_pair`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair
from rlaudit.evidence import fmt, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.spaces.observations import obs_pair

DECLARED = {"needs": obs_pair, "reads": ("env",)}
"""The evidence of both checks: the spaces each environment declares and the observations of the shared
random-action rollout (:func:`rlaudit.spaces.observations.obs_pair`)."""


def _bound_text(value: Any) -> str:
    """A bounds summary from :func:`rlaudit.spaces.rollout.describe_space`: ``-1``, ``{-1, 0}``, ``0..255``."""
    if isinstance(value, dict):
        if "values" in value:
            return (
                "{" + ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value["values"]) + "}"
            )
        return f"{value.get('min')}..{value.get('max')}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _space_text(desc: dict[str, Any]) -> str:
    parts = [desc.get("class", "?")]
    if desc.get("shape"):
        parts.append("x".join(map(str, desc["shape"])))
    if desc.get("n") is not None:
        parts.append(f"n={desc['n']}")
    if desc.get("dtype"):
        parts.append(desc["dtype"])
    if "low" in desc:
        parts.append(f"bounds {_bound_text(desc.get('low'))} to {_bound_text(desc.get('high'))}")
    return " ".join(str(p) for p in parts)


def _sides_text(info: dict[str, Any]) -> dict[str, str]:
    return {
        "observation": _space_text(info["observation_space"]),
        "action": _space_text(info["action_space"]),
    }


def emitted_mismatch(info: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Where one side's environment emits observations other than its Box space declares.

    Args:
        info: The side's ``spaces.json`` (``observation_space``, and ``obs_shape``/``obs_dtype`` of an
            observation the environment returned).

    Returns:
        ``[(field, emitted, declared), ...]`` for ``shape`` and ``dtype``; empty when they match, or when the
        space is not a Box (a Dict or Discrete observation has no single array shape to compare).
    """
    declared = info.get("observation_space") or {}
    if declared.get("class") != "Box":
        return []
    out = []
    for field, emitted in (("shape", info.get("obs_shape")), ("dtype", info.get("obs_dtype"))):
        want = declared.get(field)
        if (
            emitted is not None
            and want is not None
            and list(np.atleast_1d(emitted)) != list(np.atleast_1d(want))
        ):
            out.append((field, emitted, want))
    return out


def _emitted_text(info: dict[str, Any]) -> str:
    """``"observations of shape [5] int64 against its declared Box [4] float32"``."""
    declared = info["observation_space"]
    shape = info.get("obs_shape") or []
    return (
        f"observations of shape {shape} {info.get('obs_dtype')} against its declared Box "
        f"{declared.get('shape')} {declared.get('dtype')}"
    )


def _emitted_finding(c: Check, infos: dict[str, dict[str, Any]], sides: dict[str, Any]) -> Finding | None:
    """The finding when an environment's observations are not what its own space declares (None when both
    conform). SUSPECT when the candidate's break its declaration and the baseline's do not; NOTED when only the
    baseline's do, or both alike."""
    wrong = {s: emitted_mismatch(infos[s]) for s in SIDES}
    if not wrong["baseline"] and not wrong["candidate"]:
        return None
    details = {"emitted vs declared": {s: [list(map(str, w)) for w in wrong[s]] for s in SIDES}}
    remediation = (
        "Make the environment return what its observation space declares (the shape and dtype of its Box: "
        "cast with .astype(space.dtype), drop the extra feature), or declare what it really returns; Gymnasium's "
        "env checker (gymnasium.utils.env_checker.check_env) reports the same mismatch."
    )
    if wrong["baseline"] and wrong["candidate"] and wrong["baseline"] == wrong["candidate"]:
        return c.finding(
            Status.NOTED,
            Severity.LOW,
            **sides,
            summary=f"both environments emit {_emitted_text(infos['candidate'])}: not a difference between them",
            details=details,
            remediation=remediation,
        )
    side = "candidate" if wrong["candidate"] else "baseline"
    other = "baseline" if side == "candidate" else "candidate"
    fields = " and ".join(f for f, _, _ in wrong[side])
    return c.finding(
        Status.SUSPECT if side == "candidate" else Status.NOTED,
        Severity.HIGH if "shape" in fields else Severity.MEDIUM,
        **sides,
        summary=f"the {side}'s environment emits {_emitted_text(infos[side])}: the {fields} of its observations "
        f"{'differ' if ' and ' in fields else 'differs'} from its declared space"
        + ("" if wrong[other] else f"; the {other}'s match its own"),
        details=details,
        remediation=remediation,
    )


@check("spaces/definitions", title="Observation and action spaces", **DECLARED)
def definitions(c: Check, pair: Pair) -> Section:
    """Both setups define the same observation and action spaces.

    Observation and action spaces side by side: class, shape, dtype, bounds, n.
    """
    ia, ib = pair.baseline.json("spaces"), pair.candidate.json("spaces")
    rows, diffs = [], []
    for which in ("observation_space", "action_space"):
        da, db = ia[which], ib[which]
        for field in ("class", "shape", "dtype", "low", "high", "n", "nvec", "size"):
            if field not in da and field not in db:
                continue
            va, vb = da.get(field), db.get(field)
            same = va == vb
            rows.append(
                {
                    "space": which.replace("_", " "),
                    "field": field,
                    "baseline": str(va),
                    "candidate": str(vb),
                    "same": same,
                }
            )
            if not same and field != "size":
                diffs.append((which, field, va, vb))
    rows.append(
        {
            "space": "environment",
            "field": "num_envs",
            "baseline": str(ia["num_envs"]),
            "candidate": str(ib["num_envs"]),
            "same": ia["num_envs"] == ib["num_envs"],
        }
    )
    for field, key in (("shape", "obs_shape"), ("dtype", "obs_dtype")):
        va, vb = ia.get(key), ib.get(key)
        rows.append(
            {
                "space": "observation emitted",
                "field": field,
                "baseline": str(va),
                "candidate": str(vb),
                "same": va == vb,
            }
        )
    sides = {"baseline": _sides_text(ia), "candidate": _sides_text(ib)}
    emitted = _emitted_finding(c, {"baseline": ia, "candidate": ib}, sides)
    if diffs:
        structural = [d for d in diffs if d[1] in ("class", "shape", "n", "nvec", "dtype")]
        size_a, size_b = ia["observation_space"].get("size"), ib["observation_space"].get("size")
        ratio = (size_b / size_a) if size_a and size_b else None
        finding = c.finding(
            Status.SUSPECT,
            Severity.HIGH if structural else Severity.MEDIUM,
            **sides,
            effect=ratio,
            effect_label="observation size ratio (candidate / baseline)" if ratio else "",
            summary="the spaces differ: "
            + "; ".join(f"{w.split('_')[0]} {f}: {va} → {vb}" for w, f, va, vb in diffs),
            details={"differences": [list(map(str, d)) for d in diffs]},
            remediation="Make the candidate's environment produce the baseline's observation and action spaces "
            "(undo the wrapper or setting that changed them), or confirm the change is intended.",
        )
    elif emitted is not None:
        finding = emitted
    else:
        finding = c.finding(
            Status.CLEARED,
            **sides,
            summary=f"same spaces: observation {sides['baseline']['observation']}, action "
            f"{sides['baseline']['action']}",
            measured={
                s: {
                    "emitted observation shape": info.get("obs_shape"),
                    "emitted dtype": info.get("obs_dtype"),
                }
                for s, info in (("baseline", ia), ("candidate", ib))
            },
        )
    if diffs and emitted is not None:  # both: the declared spaces differ, and one side breaks its own
        emitted.id = f"{c.id}-emitted"
    findings = [finding] + ([emitted] if diffs and emitted is not None else [])
    return c.section(findings, tables={"spaces": pd.DataFrame(rows)})


def bounds_violations(moments: Any) -> pd.DataFrame:
    """Features whose observed values left the declared bounds, most out of range first.

    Args:
        moments: One side's ``moments.npz`` (``min``, ``max``, ``n``, and ``low``, ``high``, ``outside``).

    Returns:
        ``feature`` (index), ``declared low``, ``declared high``, ``seen min``, ``seen max``, ``outside``
        (fraction of observations out of bounds), ``excess`` (how far beyond the bounds, in units of the
        declared width when it is finite, else absolute). Empty when every value stayed inside.
    """
    columns = ["feature", "declared low", "declared high", "seen min", "seen max", "outside", "excess"]
    outside = np.asarray(moments["outside"])
    idx = np.flatnonzero(outside > 0)
    if not idx.size:
        return pd.DataFrame(columns=columns)
    low, high = np.asarray(moments["low"])[idx], np.asarray(moments["high"])[idx]
    seen_min, seen_max = np.asarray(moments["min"])[idx], np.asarray(moments["max"])[idx]
    beyond = np.maximum(np.maximum(low - seen_min, 0.0), np.maximum(seen_max - high, 0.0))
    width = high - low
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.where(np.isfinite(width) & (width > 0), beyond / width, beyond)
    table = pd.DataFrame(
        {
            "feature": idx,
            "declared low": low,
            "declared high": high,
            "seen min": seen_min,
            "seen max": seen_max,
            "outside": outside[idx] / max(int(moments["n"]), 1),
            "excess": excess,
        },
        columns=columns,
    )
    return table.sort_values("excess", ascending=False, ignore_index=True)


def _violation_text(table: pd.DataFrame, limit: int = 4) -> str:
    """``obs[3] seen 0..100 (declared 0..1, 12% of observations outside)``, for the worst features."""
    parts = [
        f"obs[{int(r['feature'])}] seen {fmt(r['seen min'])}..{fmt(r['seen max'])} (declared "
        f"{fmt(r['declared low'])}..{fmt(r['declared high'])}, {pct(r['outside'])} of observations outside)"
        for r in table.head(limit).to_dict("records")
    ]
    more = len(table) - limit
    return ", ".join(parts) + (f" and {more} more feature{'s' if more != 1 else ''}" if more > 0 else "")


def _unbounded_reason(info: dict[str, Any]) -> str:
    """Why a side's observations could not be held against declared bounds."""
    wrong = emitted_mismatch(info)
    if any(f == "shape" for f, _, _ in wrong):
        return f"{_emitted_text(info)}: no bound per feature to hold them to"
    return (
        f"a {info.get('observation_space', {}).get('class', 'non-Box')} observation space declares no bounds"
    )


@check("spaces/observation-bounds", title="Observations inside their declared space", **DECLARED)
def observation_bounds(c: Check, pair: Pair) -> Section:
    """Every observation stays inside its declared observation space, on both sides.

    Per feature, the range of values seen in the seeded random-policy rollout against the declared Box
    bounds: a network (or a normalizer, a clip) sized for the declared range misreads values outside it.
    """
    moments = {s: pair[s].npz("moments") for s in SIDES}
    lacking = [s for s in SIDES if "outside" not in moments[s]]
    if len(lacking) == len(SIDES):
        c.missing(
            "declared observation bounds (a Box observation space)",
            "Nothing to add for Dict, Tuple or Discrete observations; a Box space's low/high are what this check "
            "compares observations with.",
            lacking,
        )
    seen = {
        s: bounds_violations(moments[s]) if s not in lacking else pd.DataFrame(columns=["feature", "excess"])
        for s in SIDES
    }
    found = {s: set(seen[s]["feature"].astype(int)) for s in SIDES}
    worst = max((float(seen[s]["excess"].max()) for s in SIDES if len(seen[s])), default=0.0)
    sides = {
        s: (_violation_text(seen[s]) if len(seen[s]) else "inside its bounds")
        if s not in lacking
        else "no bounds"
        for s in SIDES
    }
    n_obs = {s: int(moments[s]["n"]) for s in SIDES}
    tables = {f"out of bounds ({s})": seen[s] for s in SIDES if len(seen[s])}
    if not found["baseline"] and not found["candidate"]:
        infos = {s: pair[s].json("spaces") for s in SIDES}
        finding = c.finding(
            Status.CLEARED,
            values=sides,
            effect=0.0,
            effect_label="features seen outside their declared bounds",
            summary=f"every observation stayed inside its declared bounds ({n_obs['baseline']} | "
            f"{n_obs['candidate']} observations under the same random actions)",
            # bounds checked on one side only are no agreement: say why the other side's could not be
            measured={
                s: {"observations inside the declared bounds": s not in lacking or None} for s in SIDES
            },
            measured_words={
                s: {"observations inside the declared bounds": _unbounded_reason(infos[s])} for s in lacking
            },
        )
        return c.section(finding, tables=tables)
    # Severity rests on the evidence alone (how far outside), whichever side it is on.
    severity = Severity.HIGH if worst > 1.0 else Severity.MEDIUM
    excess = {s: dict(zip(seen[s]["feature"].astype(int), seen[s]["excess"], strict=True)) for s in SIDES}
    worse = {
        s: {f for f, e in excess[s].items() if e > 2 * excess[o].get(f, 0.0) + 0.5 or f not in excess[o]}
        for s, o in (("baseline", "candidate"), ("candidate", "baseline"))
    }
    differ = bool(worse["baseline"] or worse["candidate"])
    flagged_side = "candidate" if worse["candidate"] else "baseline"
    if differ:
        status = Status.SUSPECT if flagged_side == "candidate" else Status.NOTED
        other = "baseline" if flagged_side == "candidate" else "candidate"
        summary = (
            f"the {flagged_side}'s observations leave the declared space: {sides[flagged_side]}; the {other}'s "
            + (f"leave it elsewhere: {sides[other]}" if found[other] else "stay inside")
        )
        remediation = (
            f"Find what changed the scale of these features in the {flagged_side}'s environment (a reward or "
            "count fed into the observation, a missing normalization or clip) and restore the baseline's, or "
            "declare the bounds the values really take."
        )
    else:
        status = Status.NOTED
        summary = f"both setups' observations leave the declared space alike: {sides['candidate']}"
        remediation = "Not a difference between the setups; declare the bounds the values really take."
    finding = c.finding(
        status,
        severity,
        values=sides,
        effect=float(len(worse[flagged_side]) if differ else len(found["candidate"])),
        effect_label=f"features further out of bounds in the {flagged_side}"
        if differ
        else "features out of bounds",
        summary=summary,
        details={s: seen[s].to_dict("records") for s in SIDES},
        remediation=remediation,
    )
    return c.section(
        finding,
        tables=tables,
        notes=[
            "Values seen in the seeded random-policy rollout (the same actions on both sides) against the Box "
            "bounds each environment declares; excess is the distance beyond the bounds in units of the declared "
            "width."
        ],
    )
