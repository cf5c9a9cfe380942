"""Policy-at-init check: the freshly built policies run on real observations: entropy relative to its
maximum, logit scale and value scale, each scale judged as a ratio with a bootstrap interval over seeds.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.agents import trees as tr
from rlaudit.checks import Check, check
from rlaudit.engine.workbench import SIDES, Pair
from rlaudit.evidence import equivalence_seeds, fmt, judge_ratio, ratio
from rlaudit.findings import Severity, Status
from rlaudit.init.common import FRESH_NETWORKS
from rlaudit.notebook import Section

SCALE_RATIO = 2.0
"""Logit or value scales at init differing by more than this factor (and outside the CI of 1) are SUSPECT."""
ENTROPY_GAP = 0.01
"""Initial entropy (as a fraction of log|A|) differing by more than this is SUSPECT: one policy starts
measurably less uniform."""


def output_stats(outputs: pd.DataFrame) -> dict[str, float]:
    """Means over seeds of the probe's ``outputs`` columns."""
    return {
        col: float(pd.to_numeric(outputs[col], errors="coerce").mean())
        for col in outputs.columns
        if col != "seed"
    }


def _log_spread(a: np.ndarray, b: np.ndarray) -> float:
    """Pooled per-seed standard deviation of ``log(a)`` and ``log(b)`` (positive values only; NaN below two)."""
    la, lb = np.log(a[a > 0]), np.log(b[b > 0])
    if min(len(la), len(lb)) < 2:
        return float("nan")
    return float(np.sqrt((np.var(la, ddof=1) + np.var(lb, ddof=1)) / 2))


def scale_comparison(a: np.ndarray, b: np.ndarray, seed: int = 0) -> dict[str, Any]:
    """Ratio of means ``b / a`` with a bootstrap 95% interval, judged against ×``SCALE_RATIO``.

    Args:
        a: Baseline per-seed values, (n,).
        b: Candidate per-seed values, (m,).

    Returns:
        ``{"ratio", "ci", "flag", "kind", "needed"}``: flag when the ratio is beyond ×``SCALE_RATIO`` either way and the
        interval excludes 1; ``kind`` is the :func:`rlaudit.evidence.judge_ratio` verdict (``different``,
        ``equivalent`` when the whole interval lies within ×``SCALE_RATIO``, ``inconclusive``). ``ratio`` is
        None (and ``kind`` inconclusive) when a side has no finite positive values; ``needed``: seeds per side
        that would settle an inconclusive comparison (:func:`rlaudit.evidence.equivalence_seeds` on the log
        scale), when known.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) == 0 or len(b) == 0 or a.mean() <= 0 or b.mean() <= 0:
        return {"ratio": None, "ci": None, "flag": False, "kind": "inconclusive", "needed": None}
    if np.array_equal(a, b):
        return {"ratio": 1.0, "ci": (1.0, 1.0), "flag": False, "kind": "equivalent", "needed": None}
    iv = stats.bootstrap_ratio_ci(b, a, np.mean, n_boot=2000, seed=seed)
    # a percentile interval over very few seeds can miss its own point: the interval holds it
    iv = stats.Interval(iv.point, min(iv.low, iv.point), max(iv.high, iv.point))
    # seeds that would show equivalence on the log scale, from the per-seed spread of both sides
    sd = _log_spread(a, b)
    needed = equivalence_seeds(sd, math.log(SCALE_RATIO), math.log(iv.point)) if iv.point > 0 else None
    verdict = judge_ratio(iv.point, iv.low, iv.high, SCALE_RATIO, needed=needed)
    return {
        "ratio": float(iv.point),
        "ci": (float(iv.low), float(iv.high)),
        "flag": verdict.different,
        "kind": verdict.kind,
        "needed": verdict.needed,
    }


def _knock_on_text(tree_a: dict[str, Any], tree_b: dict[str, Any]) -> str:
    """A clause naming the architecture change when the networks differ (empty when they do not)."""
    cmp = tr.compare_trees(tree_a, tree_b)
    arch = tr.changed_quantities(tree_a, tree_b) or tr.changes(cmp)
    if not arch:
        return ""
    return (
        f" — the networks also differ in architecture ({'; '.join(arch[:2])}{' ...' if len(arch) > 2 else ''}, "
        "see 01_agents), so part of this follows from that"
    )


@check("init/policy-at-init", title="The policy at initialization", **FRESH_NETWORKS, reads=("agents",))
def policy_at_init(c: Check, pair: Pair) -> Section:
    """Both policies start out alike on real observations (entropy, logit scale, value scale)

    Entropy relative to log|A|, logit scale, value output mean and std of freshly built networks.
    """
    oa = pd.DataFrame(pair.baseline.json("outputs")).apply(pd.to_numeric, errors="coerce")
    ob = pd.DataFrame(pair.candidate.json("outputs")).apply(pd.to_numeric, errors="coerce")
    # every side that lacks them is named: a continuous-action pair lacks them on both sides, not just one
    absent = {
        side: [
            col
            for col in ("entropy_ratio", "logit_std", "value_std")
            if col not in frame or not frame[col].notna().any()
        ]
        for side, frame in (("baseline", oa), ("candidate", ob))
    }
    lacking = [side for side in SIDES if absent[side]]
    if lacking:
        columns = list(dict.fromkeys(col for side in lacking for col in absent[side]))
        c.missing(
            f"policy outputs at init ({', '.join(columns)})",
            "rlaudit finds the heads by tracing make_policy's network: a layer with one output per discrete "
            "action (policy head) and a layer with one output (value head); networks without them (e.g. "
            "continuous actions) are compared by their schemes only",
            sides=lacking,
        )
    ma, mb = output_stats(oa), output_stats(ob)
    scales = {
        "logit scale": scale_comparison(oa["logit_std"].to_numpy(), ob["logit_std"].to_numpy(), seed=0),
        "value std": scale_comparison(oa["value_std"].to_numpy(), ob["value_std"].to_numpy(), seed=1),
    }
    ent_gap = (
        (mb["entropy_ratio"] - ma["entropy_ratio"])
        if math.isfinite(ma["entropy_ratio"]) and math.isfinite(mb["entropy_ratio"])
        else float("nan")
    )
    problems = [
        f"{name} {ratio(s['ratio'], *s['ci'])}" for name, s in scales.items() if s["flag"] and s["ci"]
    ]
    if math.isfinite(ent_gap) and abs(ent_gap) > ENTROPY_GAP:
        problems.append(f"entropy {ma['entropy_ratio']:.4f} → {mb['entropy_ratio']:.4f} of log|A|")
    open_scales = [name for name, s in scales.items() if s["kind"] == "inconclusive"]
    n_actions = (pair.baseline.json("tree") or {}).get("n_actions")
    rows = [
        ("entropy / log|A|", "entropy_ratio"),
        ("entropy (nats)", "entropy"),
        ("logit std over actions", "logit_std"),
        ("largest |logit|", "logit_absmax"),
        ("value mean", "value_mean"),
        ("value std", "value_std"),
    ]
    table = pd.DataFrame(
        [{"quantity": label, "baseline": ma.get(key), "candidate": mb.get(key)} for label, key in rows]
    )
    logits = scales["logit scale"]
    common = {
        "baseline": {
            "entropy/log|A|": round(ma["entropy_ratio"], 5),
            "logit std": ma["logit_std"],
            "value std": ma["value_std"],
        },
        "candidate": {
            "entropy/log|A|": round(mb["entropy_ratio"], 5),
            "logit std": mb["logit_std"],
            "value std": mb["value_std"],
        },
        "effect": logits["ratio"],
        "effect_label": "logit-scale ratio (candidate / baseline)",
        "ci": logits["ci"],
    }
    alike = (
        f"entropy {ma['entropy_ratio']:.4f} | {mb['entropy_ratio']:.4f} of log|A|"
        f"{f' (|A| = {n_actions})' if n_actions else ''}, logit std {fmt(ma['logit_std'])} | "
        f"{fmt(mb['logit_std'])}, value std {fmt(ma['value_std'])} | {fmt(mb['value_std'])}"
    )
    if problems:
        finding = c.finding(
            Status.SUSPECT,
            Severity.MEDIUM,
            **common,
            summary="the freshly built policies differ: "
            + "; ".join(problems)
            + f" (mean over {len(oa)} seeds; a 0.01-gain policy head starts near-uniform, entropy ≈ log|A|)"
            + _knock_on_text(pair.baseline.json("tree"), pair.candidate.json("tree")),
            remediation="Restore the baseline's head initialization (policy head gain 0.01, value head 1.0) so "
            "the candidate starts from the same near-uniform policy and value scale.",
            figures=["parameters (b = baseline, c = candidate)"],
        )
    elif open_scales:
        needed = max((scales[name]["needed"] or 0 for name in open_scales), default=0)
        finding = c.finding(
            Status.NOTED,
            Severity.INFO,
            **common,
            summary="inconclusive over "
            + f"{len(oa)} seeds: "
            + "; ".join(
                f"{name} {ratio(scales[name]['ratio'], *(scales[name]['ci'] or (None, None)))}"
                for name in open_scales
            )
            + f" is neither beyond ×{fmt(SCALE_RATIO)} nor shown within it ({alike})"
            + (
                f"; about {needed} seeds per side would settle it"
                if needed
                else "; more seeds would settle it"
            )
            + _knock_on_text(pair.baseline.json("tree"), pair.candidate.json("tree")),
        )
    else:
        finding = c.finding(Status.CLEARED, **common, summary=f"both policies start alike: {alike}")
    return c.section(
        finding,
        tables={"at init (mean over seeds)": table, "per seed (baseline)": oa, "per seed (candidate)": ob},
        notes=[
            "Each fresh network is run on the same raw observations from a seeded random-policy rollout; "
            f"intervals are bootstrap 95% CIs over the {len(oa)} seeds (ratio of means); a scale difference is "
            f"flagged beyond ×{SCALE_RATIO:g} with an interval that excludes 1 and cleared when the whole interval "
            f"lies within ×{SCALE_RATIO:g}; entropy is flagged beyond {ENTROPY_GAP:g} of log|A|."
        ],
    )
