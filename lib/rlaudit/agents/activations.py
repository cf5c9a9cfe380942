"""Activations check: per-layer activation statistics at initialization (dead and saturated units, scale),
with the std ratio judged over torch seeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.agents import trees as tr
from rlaudit.agents.common import NETWORK, seeds_for, tree_pair
from rlaudit.checks import Check, check
from rlaudit.engine.workbench import SIDES, Pair
from rlaudit.evidence import fmt, judge_ratio, pct, ratio
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section

DEAD_JUMP = 0.10
"""A layer's fraction of dead (or saturated) units differing by at least this much between the sides is
SUSPECT: that many units pass no gradient from the start."""
STD_RATIO = 1.5
"""Activation std differing by more than this factor (either way) is worth a NOTED line; within it on the
whole interval over seeds, the scales are equivalent."""

# Findings the check makes beside its main one, declared once: id, hypothesis and the remedy.
DEAD_UNITS = {
    "id": "agents/dead-units",
    "hypothesis": "No layer has many more dead or saturated units on one side",
    "remediation": "Restore the baseline's activation and initialization (see 08_init), or lower the input scale, "
    "so that units are alive at the start of training.",
    "figures": ["activations"],
}
ACTIVATION_SCALE = {
    "id": "agents/activation-scale",
    "hypothesis": "Per-layer activation scales match",
    "remediation": "Expected when the layers or the activation changed (see the architecture finding); otherwise "
    "compare the initialization in 08_init.",
    "figures": ["activations"],
}


STAT_COLUMNS = ["mean", "std", "unit_std", "dead", "saturated", "units"]


def activation_table(pair: Pair, cmp: dict[str, Any]) -> pd.DataFrame:
    """Per aligned layer, the seed-averaged activation statistics of both sides (``<stat>_b``/``<stat>_c``)."""
    frames = {}
    for side in SIDES:
        df = pd.DataFrame(pair[side].json("activations"))
        frames[side] = df.groupby(["path", "cls", "kind"], sort=False)[STAT_COLUMNS].mean()
    rows = []
    for p in cmp["pairs"]:
        a = cmp["a"][p.a] if p.a is not None else None
        b = cmp["b"][p.b] if p.b is not None else None
        ref = a or b
        if ref is None or ref["kind"] not in ("activation", "linear"):
            continue
        row: dict[str, Any] = {
            "layer": ref["path"],
            "kind": ref["kind"],
            "class": f"{a['cls'] if a else '—'} | {b['cls'] if b else '—'}",
        }
        for side, rec in (("baseline", a), ("candidate", b)):
            key = (rec["path"], rec["cls"], rec["kind"]) if rec is not None else None
            found = frames[side].loc[key] if key is not None and key in frames[side].index else None
            for col in ("mean", "std", "dead", "saturated"):
                row[f"{col}_{side[0]}"] = float(found[col]) if found is not None else None
        rows.append(row)
    return pd.DataFrame(rows)


def std_ratios(pair: Pair, cmp: dict[str, Any], layers: list[str]) -> dict[str, stats.Interval]:
    """Per activation layer (baseline path): candidate/baseline ratio of the activation std, with a bootstrap
    95% interval over the torch seeds (each seed's network gives one std per layer)."""
    per_seed = {side: pd.DataFrame(pair[side].json("activations")) for side in SIDES}
    out: dict[str, stats.Interval] = {}
    for p in cmp["pairs"]:
        if p.a is None or p.b is None:
            continue
        a, b = cmp["a"][p.a], cmp["b"][p.b]
        if a["path"] not in layers:
            continue
        xa = per_seed["baseline"].loc[per_seed["baseline"]["path"] == a["path"], "std"].to_numpy(float)
        xb = per_seed["candidate"].loc[per_seed["candidate"]["path"] == b["path"], "std"].to_numpy(float)
        if not len(xa) or not len(xb) or xa.mean() <= 0 or xb.mean() <= 0:
            continue
        if np.array_equal(xa, xb):
            out[a["path"]] = stats.Interval(1.0, 1.0, 1.0)
        else:
            iv = stats.bootstrap_ratio_ci(xb, xa, np.mean, n_boot=2000, seed=len(out))
            # a percentile interval over very few seeds can miss its own point: the interval holds it
            out[a["path"]] = stats.Interval(iv.point, min(iv.low, iv.point), max(iv.high, iv.point))
    return out


@check(
    "agents/activations", title="Activation statistics at initialization", **NETWORK, reads=("init", "spaces")
)
def activations(c: Check, pair: Pair) -> Section:
    """Both networks' layers respond alike to the same observations at initialization.

    Activation statistics per layer at initialization on observations of a seeded random-policy rollout.
    """
    ta, tb = tree_pair(pair)
    cmp = tr.compare_trees(ta, tb)
    table = activation_table(pair, cmp)
    acts = table[table["kind"] == "activation"]
    if acts.empty:
        acts = table
    n_seeds = len(seeds_for(c.wb))
    flagged: list[str] = []
    shifted: list[str] = []
    for r in acts.to_dict("records"):
        for col in ("dead", "saturated"):
            a, b = r.get(f"{col}_b"), r.get(f"{col}_c")
            if a is not None and b is not None and abs(b - a) >= DEAD_JUMP:
                flagged.append(f"{r['layer']} {col} units {pct(a)} → {pct(b)}")
        sa, sb = r.get("std_b"), r.get("std_c")
        if sa and sb and (sb / sa > STD_RATIO or sa / sb > STD_RATIO):
            shifted.append(f"{r['layer']} std {fmt(sa)} → {fmt(sb)}")
    kind_changes = [tr.describe_change(p, cmp["a"], cmp["b"]) for p in cmp["real"] if "kind" in p.change]
    because = f" (the activation changed: {'; '.join(kind_changes[:2])})" if kind_changes else ""
    findings: list[Finding] = []
    if flagged:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.MEDIUM,
                **DEAD_UNITS,
                effect=max(
                    abs((r[f"{col}_c"] or 0) - (r[f"{col}_b"] or 0))
                    for r in acts.to_dict("records")
                    for col in ("dead", "saturated")
                ),
                effect_label="largest change in dead or saturated fraction",
                summary="units that pass no gradient from the start: " + "; ".join(flagged[:6]) + because,
                baseline={r["layer"]: r["dead_b"] for r in acts.to_dict("records")},
                candidate={r["layer"]: r["dead_c"] for r in acts.to_dict("records")},
            )
        )
    if shifted:
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **ACTIVATION_SCALE,
                summary=f"activation std differs by more than ×{fmt(STD_RATIO)}: "
                + "; ".join(shifted[:6])
                + because,
                baseline={r["layer"]: r["std_b"] for r in acts.to_dict("records")},
                candidate={r["layer"]: r["std_c"] for r in acts.to_dict("records")},
            )
        )
    if not flagged and not shifted:
        findings.append(_activations_agree(c, pair, cmp, acts, n_seeds))
    from rlaudit.agents import plots

    return c.section(
        findings,
        tables={"activations (mean over seeds; b = baseline, c = candidate)": table},
        figures={"activations": plots.activations_figure(table)},
        notes=[
            f"{ta.get('batch')} observations from a seeded random-policy rollout, networks from "
            f"{n_seeds} torch seeds; raw observations (a subject's own observation normalization is "
            "not applied at initialization). Dead: zero on every observation; saturated: a bounded activation "
            "within 1% of its bound on 99% of them. Scales are equivalent when every layer's std ratio has its "
            f"95% interval over seeds inside ×1/{fmt(STD_RATIO)} to ×{fmt(STD_RATIO)}."
        ],
    )


def _activations_agree(
    c: Check, pair: Pair, cmp: dict[str, Any], acts: pd.DataFrame, n_seeds: int
) -> Finding:
    """CLEARED when every layer's std ratio is equivalent within :data:`STD_RATIO` over seeds, else NOTED
    inconclusive (no layer differs by more than the factor, but the seeds do not show they agree)."""
    lo, hi = acts[["std_b", "std_c"]].min().min(), acts[["std_b", "std_c"]].max().max()
    dead = acts[["dead_b", "dead_c"]].max().max()
    ratios = std_ratios(pair, cmp, list(acts["layer"]))
    verdicts = {k: judge_ratio(iv.point, iv.low, iv.high, STD_RATIO) for k, iv in ratios.items()}
    open_layers = [k for k, j in verdicts.items() if not j.equivalent]
    common = {
        "baseline": acts.set_index("layer")["std_b"].round(4).to_dict(),
        "candidate": acts.set_index("layer")["std_c"].round(4).to_dict(),
    }
    if open_layers:
        worst = max(open_layers, key=lambda k: abs(np.log(ratios[k].point)))
        iv = ratios[worst]
        return c.finding(
            Status.NOTED,
            Severity.INFO,
            **common,
            effect=iv.point,
            effect_label=f"activation-std ratio of {worst} (candidate / baseline)",
            ci=(iv.low, iv.high),
            summary=f"no layer's activations differ by more than ×{fmt(STD_RATIO)}, but the {n_seeds} seeds "
            f"do not show they agree: {worst} std {ratio(iv.point, iv.low, iv.high)} "
            f"({len(open_layers)} layer(s) inconclusive); more seeds would settle it",
        )
    return c.finding(
        Status.CLEARED,
        **common,
        summary=f"activation statistics agree: per-layer std {fmt(lo, 2)}–{fmt(hi, 2)} on both sides, "
        f"at most {pct(dead)} dead units, over {n_seeds} seeds",
    )
