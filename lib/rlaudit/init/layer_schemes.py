"""Schemes check: every parameter's statistics and singular-value spectrum over several torch seeds give its
scheme and gain (:mod:`rlaudit.init.schemes`), compared layer by layer (layers matched by structure, as in
01_agents) and against the PPO details (orthogonal √2 hidden, 0.01 policy head, 1.0 value head, zero biases).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlaudit.agents import align as al
from rlaudit.agents import trees as tr
from rlaudit.checks import Check, check, value_learners
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Finding, Severity, Status
from rlaudit.init.common import FRESH_NETWORKS, seeds_for
from rlaudit.init.schemes import Scheme, infer_scheme, matches_ppo
from rlaudit.notebook import Section

PPO_DETAILS = {
    "id": "init/ppo-details",
    "hypothesis": "Both setups use the PPO initialization (orthogonal √2 hidden, 0.01 policy head, 1.0 value head, "
    "zero biases)",
    "remediation": "Not a difference between the setups; consider the PPO scheme if both train poorly.",
}


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
    ppo_applies = not value_learners(c.wb)  # PPO's details are no part of a DQN's, SAC's or TD3's design
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
        ppo_lost = ppo_applies and bool(((table["ppo b"] == True) & (table["ppo c"] == False)).any())  # noqa: E712
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
        if len(off) and ppo_applies:
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
