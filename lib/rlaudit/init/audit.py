"""Init audit (notebook 08): how each setup initializes its network, and what the policy looks like at step 0.

Case 000 listed "weight initialization scheme changed (Xavier, He, ...)" and "bias initialization differs" as
hypotheses without a way to test them. Here each side builds its network with several torch seeds; every
parameter's statistics and singular-value spectrum give its scheme and gain (:mod:`rlaudit.init.schemes`),
compared layer by layer (layers matched by structure, as in 01_agents) and against the PPO details
(orthogonal √2 hidden, 0.01 policy head, 1.0 value head, zero biases). Then the freshly built policy is run on
real observations: entropy relative to its maximum, logit scale, value scale.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.agents import align as al
from rlaudit.agents import trees as tr
from rlaudit.agents.audit import network_params
from rlaudit.checks import Check, check, run_checks
from rlaudit.evidence import equivalence_seeds, fmt, judge_ratio, ratio
from rlaudit.findings import Finding, Severity, Status
from rlaudit.init import probes
from rlaudit.init.schemes import Scheme, infer_scheme, matches_ppo
from rlaudit.notebook import Section
from rlaudit.workbench import SIDES, Pair, Workbench

SCALE_RATIO = 2.0
"""Logit or value scales at init differing by more than this factor (and outside the CI of 1) are SUSPECT."""
ENTROPY_GAP = 0.01
"""Initial entropy (as a fraction of log|A|) differing by more than this is SUSPECT: one policy starts
measurably less uniform."""


def init_params(wb: Workbench) -> dict[str, Any]:
    """Parameters of :func:`rlaudit.init.probes.init_stats`: the profile's seed count, at least 3 (schemes of
    one-row layers need 2) and at most 8, on the observations the agents audit uses."""
    return network_params(wb, at_least=3, at_most=8)


FRESH_NETWORKS = {"probe": probes.init_stats, "params": init_params, "desc": "init: fresh networks"}
"""The evidence every init check reads: freshly built networks on both sides (one cached run)."""
PPO_DETAILS = {
    "id": "init/ppo-details",
    "hypothesis": "Both setups use the PPO initialization (orthogonal √2 hidden, 0.01 policy head, 1.0 value head, "
    "zero biases)",
    "remediation": "Not a difference between the setups; consider the PPO scheme if both train poorly.",
}


def seeds_for(wb: Workbench) -> list[int]:
    """Init seeds (see :func:`init_params`)."""
    return init_params(wb)["seeds"]


def roles(tree: dict[str, Any]) -> dict[str, str]:
    """Module path -> ``hidden``, ``policy head`` or ``value head`` for parametrized linear modules."""
    heads = tree.get("heads") or {}
    out = {}
    for r in tree["modules"]:
        if r["kind"] != "linear":
            continue
        if r["path"] == heads.get("policy"):
            out[r["path"]] = "policy head"
        elif r["path"] == heads.get("value"):
            out[r["path"]] = "value head"
        else:
            out[r["path"]] = "hidden"
    return out


def infer_all(params: pd.DataFrame) -> dict[str, Scheme]:
    """Parameter name -> inferred :class:`Scheme`, from the probe's per-seed rows."""
    out: dict[str, Scheme] = {}
    weights_fan = {
        row.module: int(row.fan_in)
        for row in params.drop_duplicates("name").itertuples()
        if row.name.endswith("weight")
    }
    for name, group in params.groupby("name", sort=False):
        recs = group.to_dict("records")
        module = recs[0]["module"]
        fan = weights_fan.get(module) if not name.endswith("weight") else None
        out[name] = infer_scheme(recs, weight_fan_in=fan)
    return out


def compare_init(tree_a: dict, tree_b: dict, params_a: pd.DataFrame, params_b: pd.DataFrame) -> pd.DataFrame:
    """One row per parameter, matched by structure across sides: role, shapes, inferred schemes and gains,
    std (mean over seeds), PPO expectation, and whether the two sides agree.

    Columns: parameter (baseline name), candidate (its name), role, shape b/c, scheme b/c (phrase), gain b/c,
    std b/c, same, ppo b/c (True/False/None).
    """
    ra, rb = tr.ordered(tree_a), tr.ordered(tree_b)
    pairs = al.align(ra, rb)
    sa, sb = infer_all(params_a), infer_all(params_b)
    std_a = params_a.groupby("name")["std"].mean()
    std_b = params_b.groupby("name")["std"].mean()
    shape_a = params_a.drop_duplicates("name").set_index("name")["shape"]
    shape_b = params_b.drop_duplicates("name").set_index("name")["shape"]
    role_a, role_b = roles(tree_a), roles(tree_b)
    rows = []
    for p in pairs:
        a = ra[p.a] if p.a is not None else None
        b = rb[p.b] if p.b is not None else None
        names = sorted(set((a or {}).get("params", {})) | set((b or {}).get("params", {})))
        for leaf in names:
            na = f"{a['path']}.{leaf}" if a and leaf in a["params"] else None
            nb = f"{b['path']}.{leaf}" if b and leaf in b["params"] else None
            if a is not None and not a["path"]:
                na = leaf if leaf in a["params"] else None
            if b is not None and not b["path"]:
                nb = leaf if leaf in b["params"] else None
            role = (
                "bias"
                if leaf == "bias"
                else role_a.get(a["path"])
                if a
                else role_b.get(b["path"])
                if b
                else ""
            )
            role = role or ("norm" if (a or b or {}).get("kind") == "norm" else "other")
            ska, skb = sa.get(na) if na else None, sb.get(nb) if nb else None
            rows.append(
                {
                    "parameter": na or "—",
                    "candidate": nb or "—",
                    "role": role,
                    "shape b": shape_a.get(na, "") if na else "",
                    "shape c": shape_b.get(nb, "") if nb else "",
                    "scheme b": ska.detail if ska else "",
                    "scheme c": skb.detail if skb else "",
                    "gain b": ska.gain if ska else None,
                    "gain c": skb.gain if skb else None,
                    "std b": float(std_a.get(na)) if na else None,
                    "std c": float(std_b.get(nb)) if nb else None,
                    "same": bool(ska and skb and ska.same_as(skb)),
                    "ppo b": matches_ppo(role, ska) if ska else None,
                    "ppo c": matches_ppo(role, skb) if skb else None,
                    "_scheme_b": ska,
                    "_scheme_c": skb,
                }
            )
    return pd.DataFrame(rows)


def _scheme_summary(table: pd.DataFrame, col: str) -> dict[str, str]:
    """Role -> the distinct scheme phrases of that role on one side (``"orthogonal, gain 1.41 (√2)"``)."""
    out: dict[str, str] = {}
    for role, group in table.groupby("role", sort=False):
        phrases = [p for p in dict.fromkeys(group[col]) if p]
        if phrases:
            out[str(role)] = " / ".join(phrases)
    return out


def _short(scheme: Scheme | None) -> str:
    if scheme is None:
        return "absent"
    if scheme.scheme == "orthogonal":
        return f"orthogonal {scheme.gain_name or f'{scheme.gain:.3g}'}"
    if scheme.scheme == "torch-default":
        return "PyTorch default"
    return scheme.detail


@check("init/schemes", title="Initialization schemes, layer by layer", **FRESH_NETWORKS, reads=("agents",))
def schemes(c: Check, pair: Pair) -> Section:
    """Both setups initialize every layer with the same scheme and gain.

    Per parameter over several seeds: statistics, singular values, the inferred scheme and gain.
    """
    pa, pb = pd.DataFrame(pair.baseline.json("params")), pd.DataFrame(pair.candidate.json("params"))
    ta, tb = pair.baseline.json("tree"), pair.candidate.json("tree")
    table = compare_init(ta, tb, pa, pb)
    shown = table.drop(columns=["_scheme_b", "_scheme_c"])
    differ = table[~table["same"]]
    n_seeds = len(seeds_for(c.wb))
    sides = {"baseline": _scheme_summary(table, "scheme b"), "candidate": _scheme_summary(table, "scheme c")}
    findings: list[Finding] = []
    if len(differ):
        by_role: dict[str, list[str]] = {}
        for r in differ.to_dict("records"):
            by_role.setdefault(r["role"], []).append(f"{_short(r['_scheme_b'])} → {_short(r['_scheme_c'])}")
        phrases = [
            f"{role}: {', '.join(sorted(set(items)))} ({len(items)} tensor{'s' if len(items) != 1 else ''})"
            for role, items in by_role.items()
        ]
        ppo_lost = bool(((table["ppo b"] == True) & (table["ppo c"] == False)).any())  # noqa: E712
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH if ppo_lost or len(differ) > 2 else Severity.MEDIUM,
                **sides,
                effect=float(len(differ)),
                effect_label="parameters initialized differently",
                summary=f"{len(differ)} of {len(table)} parameters initialized differently: "
                + "; ".join(phrases)
                + (" — the candidate lost the PPO initialization" if ppo_lost else "")
                + f" (over {n_seeds} seeds)",
                details={"parameters": shown[~shown["same"]].to_dict("records")},
                remediation="Initialize the candidate like the baseline in make_policy: "
                + "; ".join(
                    f"{r['parameter']}: {r['_scheme_b'].detail}"
                    for r in differ.head(3).to_dict("records")
                    if r["_scheme_b"] is not None
                )
                + (
                    " (orthogonal √2 hidden, 0.01 policy head, 1.0 value head, zero biases)"
                    if ppo_lost
                    else ""
                ),
                figures=["per-layer std", "singular values"],
            )
        )
    else:
        both_ppo = all(v is not False for v in table["ppo b"])
        summary = "same init: " + "; ".join(f"{k} {v}" for k, v in sides["baseline"].items())
        summary += f" over {n_seeds} seeds" + (" (the PPO scheme)" if both_ppo else "")
        findings.append(
            c.finding(
                Status.CLEARED,
                **sides,
                effect=0.0,
                effect_label="parameters initialized differently",
                summary=summary,
            )
        )
        off = table[table["ppo b"] == False]  # noqa: E712
        if len(off):
            findings.append(
                c.finding(
                    Status.NOTED,
                    Severity.LOW,
                    **PPO_DETAILS,
                    summary=f"both sides deviate from the PPO initialization in the same way for {len(off)} "
                    "parameters: "
                    + "; ".join(f"{k} {v}" for k, v in _scheme_summary(off, "scheme b").items()),
                    baseline=_scheme_summary(off, "scheme b"),
                    candidate=_scheme_summary(off, "scheme c"),
                )
            )
    from rlaudit.init import plots

    return c.section(
        findings,
        tables={
            "parameters (b = baseline, c = candidate)": shown,
            "statistics per parameter (mean over seeds)": parameter_statistics(pa, pb),
        },
        figures={
            "per-layer std": plots.std_figure(shown),
            "singular values": plots.spectra_figure(
                pair.baseline.npz("singular"), pair.candidate.npz("singular"), shown
            ),
        },
        notes=[
            f"{n_seeds} fresh networks per side (torch seeds {seeds_for(c.wb)}). Orthogonal: every singular value "
            "equals the gain (a one-row layer: the same norm at every seed); uniform vs normal from the kurtosis "
            "(1.8 vs 3); gains from the bound or std relative to the fan-in (Kaiming) or fan-in + fan-out (Xavier)."
        ],
    )


def parameter_statistics(params_a: pd.DataFrame, params_b: pd.DataFrame) -> pd.DataFrame:
    """Per side and parameter: mean, std, min, max, fraction of zeros, largest/smallest singular value (mean
    over seeds; singular values only for 2-D weights)."""
    cols = ["mean", "std", "min", "max", "frac_zero", "sv_max", "sv_min"]
    frames = []
    for side, df in (("baseline", params_a), ("candidate", params_b)):
        num = df[["name", "shape", *cols]].copy()
        for col in cols:
            num[col] = pd.to_numeric(num[col], errors="coerce")
        agg = num.groupby(["name", "shape"], sort=False)[cols].mean().reset_index()
        agg.insert(0, "side", side)
        frames.append(agg)
    return pd.concat(frames, ignore_index=True)


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


CHECKS = (schemes, policy_at_init)
"""Every init check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every init check, in notebook order."""
    return run_checks(wb, CHECKS)
