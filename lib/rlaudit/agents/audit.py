"""Agents audit (notebook 01): the network each setup builds, compared layer by layer.

Case 000 checked hidden sizes, nonlinearities and connectivity by reading configs; here the network itself is
built by each subject's ``make_policy`` in its own process, traced on real observations, and the two module
lists are aligned by structure (:mod:`rlaudit.agents.align`, :mod:`rlaudit.agents.trees`), so a renamed
module is NOTED and only a layer added, removed, resized or changed in kind is SUSPECT, with the changed
quantity named (hidden width, depth, activation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.agents import probes
from rlaudit.agents import trees as tr
from rlaudit.agents.align import block_summary
from rlaudit.checks import Check, check, run_checks
from rlaudit.evidence import fmt, judge_ratio, pct, ratio
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.workbench import SIDES, Pair, Workbench

DEAD_JUMP = 0.10
"""A layer's fraction of dead (or saturated) units differing by at least this much between the sides is
SUSPECT: that many units pass no gradient from the start."""
STD_RATIO = 1.5
"""Activation std differing by more than this factor (either way) is worth a NOTED line; within it on the
whole interval over seeds, the scales are equivalent."""


# Findings a check makes beside its main one, declared once: id, hypothesis and the remedy.
IO_FOLLOWS_SPACES = {
    "id": "agents/io-follows-spaces",
    "hypothesis": "Input and output layers match the environment's spaces on both sides",
    "remediation": "Nothing to change in the network; investigate the space change in 10_spaces.",
    "reads": ("spaces",),
}
RENAMED = {
    "id": "agents/renamed",
    "hypothesis": "Modules keep their names",
    "remediation": "No change needed for training; map the old names when loading older checkpoints "
    "(see 04_checkpointing).",
}
IO_SIZES = {
    "id": "agents/io-sizes",
    "hypothesis": "Each network's input matches the observation size and its policy head the action count",
    "remediation": "Build the network from the environment's spaces (observation size and action count) instead "
    "of hard-coded sizes.",
}
TRUNK = {
    "id": "agents/trunk",
    "hypothesis": "Actor and critic share (or separate) their trunk the same way on both sides",
    "remediation": "Restore the baseline's trunk layout (separate actor and critic networks, or the same shared "
    "encoder) in the candidate's make_policy.",
}
REPEATED_CALLS = {
    "id": "agents/repeated-calls",
    "hypothesis": "Each module runs as many times per forward pass on both sides",
    "remediation": "Check whether the extra calls are intended (weight sharing) or a duplicated forward pass.",
}
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


def network_params(wb: Workbench, *, at_least: int = 2, at_most: int = 5) -> dict[str, Any]:
    """Parameters of the fresh-network probes (agents' and init's): torch seeds (the profile's seed count
    clipped to ``[at_least, at_most]``), the environment seed, the rollout that provides observations, and the
    observation batch."""
    return {
        "seeds": list(range(max(at_least, min(int(wb.profile.seeds), at_most)))),
        "env_seed": 0,
        "rollout_steps": int(wb.profile.rollout_steps),
        "batch": 512,
    }


NETWORK = {"probe": probes.network, "params": network_params, "desc": "agents: networks"}
"""The evidence every agents check reads: the network probe on both sides (one cached run)."""


def seeds_for(wb: Workbench) -> list[int]:
    """Network seeds for the structural audits: the profile's seed count, at least 2 and at most 5."""
    return network_params(wb)["seeds"]


def _trees(pair: Pair) -> tuple[dict[str, Any], dict[str, Any]]:
    return pair.baseline.json("tree"), pair.candidate.json("tree")


@check("agents/architecture", title="Architecture: module trees aligned by structure", **NETWORK)
def architecture(c: Check, pair: Pair) -> Section:
    """The two networks have the same layers, sizes and activations.

    Module trees side by side, aligned by structure: layers added, removed, resized or changed in kind.
    """
    ta, tb = _trees(pair)
    cmp = tr.compare_trees(ta, tb)
    sum_a, sum_b = block_summary(cmp["a"]), block_summary(cmp["b"])
    total_a, total_b = ta["blocks"]["total"], tb["blocks"]["total"]
    findings: list[Finding] = []
    if cmp["real"]:
        phrases = tr.changes(cmp)
        kinds = {part for p in cmp["real"] for part in p.change.split("+")}
        quantities = tr.changed_quantities(ta, tb)
        what = [
            word
            for word, present in (
                ("resized", "resized" in kinds),
                ("changed in kind", "kind" in kinds),
                ("added/removed", bool(kinds & {"added", "removed"})),
                ("with changed settings", "settings" in kinds),
            )
            if present
        ]
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH if kinds & {"kind", "added", "removed", "resized"} else Severity.MEDIUM,
                baseline=sum_a,
                candidate=sum_b,
                effect=float(len(cmp["real"])),
                effect_label="modules changed",
                summary=(f"{'; '.join(quantities)}: " if quantities else "")
                + f"{len(cmp['real'])} module(s) {' and '.join(what)}: "
                + "; ".join(phrases[:6])
                + (" ..." if len(phrases) > 6 else "")
                + ("" if quantities else f" (parameters {tr.count(total_a)} → {tr.count(total_b)})"),
                details={
                    "changes": phrases,
                    "quantities": quantities,
                    "blocks": {"baseline": ta["blocks"], "candidate": tb["blocks"]},
                },
                remediation="Make the candidate's make_policy build the baseline's layers again: "
                + "; ".join(quantities or phrases[:3])
                + " (restore the config key or code that sets them, then rerun this notebook).",
                figures=["aligned modules"],
            )
        )
    if cmp["knock_on"]:
        notes = sorted({row for row in cmp["table"]["note"] if row})
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **IO_FOLLOWS_SPACES,
                baseline={"observation": ta.get("obs_size"), "actions": ta.get("n_actions")},
                candidate={"observation": tb.get("obs_size"), "actions": tb.get("n_actions")},
                effect=float(len(cmp["knock_on"])),
                effect_label="layers resized by the spaces",
                summary="; ".join(notes)
                + ": "
                + "; ".join(tr.changes(cmp, "knock_on"))
                + " — a knock-on of a change in the observation or action space (see 10_spaces), not of "
                "the network code",
            )
        )
    if cmp["renamed"]:
        names = [f"{cmp['a'][p.a]['path']} → {cmp['b'][p.b]['path']}" for p in cmp["renamed"]]  # type: ignore[index]
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.INFO,
                **RENAMED,
                baseline=len(cmp["a"]),
                candidate=len(cmp["b"]),
                effect=float(len(names)),
                effect_label="modules renamed",
                summary=f"{len(names)} module(s) renamed with the same class and shapes: "
                + ", ".join(names[:6])
                + (" ..." if len(names) > 6 else "")
                + "; a rename changes checkpoint keys, not the network",
            )
        )
    if not cmp["real"]:
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline=sum_a,
                candidate=sum_b,
                effect=0.0,
                effect_label="modules changed",
                summary="same architecture, "
                + tr.architecture_phrase(ta)
                + ("" if not cmp["knock_on"] else " (the input layer follows the observation size)"),
            )
        )
    blocks = sorted(set(ta["blocks"]) | set(tb["blocks"]), key=lambda k: (k == "total", k))
    counts = pd.DataFrame(
        [
            {
                "block": k,
                "baseline": ta["blocks"].get(k),
                "candidate": tb["blocks"].get(k),
                "ratio": (tb["blocks"].get(k) or 0) / ta["blocks"][k] if ta["blocks"].get(k) else None,
            }
            for k in blocks
        ]
    )
    return c.section(
        findings,
        tables={
            "aligned modules": cmp["table"],
            "parameters per block": counts,
            "module settings (baseline)": tr.module_table(cmp["a"]),
            "module settings (candidate)": tr.module_table(cmp["b"]),
        },
        notes=[
            f"Networks built by each subject's `make_policy` (policy class {ta.get('policy_class')} | "
            f"{tb.get('policy_class')}), modules in execution order; aligned by class and shape, names only "
            "break ties."
        ],
    )


def _io_problems(facts: dict[str, dict[str, Any]]) -> list[str]:
    """Per side, an input narrower or wider than the observation, or a policy head not as wide as the actions."""
    problems = []
    for side, f in facts.items():
        if not f["inputs_ok"]:
            problems.append(
                f"the {side}'s input layer(s) take {f['inputs']} but the observation has {f['obs_size']} features"
            )
        if (
            f["n_actions"] is not None
            and f["policy_width"] is not None
            and f["policy_width"] != f["n_actions"]
        ):
            problems.append(
                f"the {side}'s policy head has {f['policy_width']} outputs for {f['n_actions']} actions"
            )
    return problems


def _trunk(facts: dict[str, Any]) -> str:
    return "shared: " + ", ".join(facts["shared_trunk"]) if facts["shared_trunk"] else "separate"


@check("agents/execution", title="Execution order and shapes on real observations", **NETWORK)
def execution(c: Check, pair: Pair) -> Section:
    """Observations flow through both networks the same way (order, shapes, trunks, input and heads)

    Execution order and shapes on real observations, shared vs separate trunks, input and head sizes.
    """
    ta, tb = _trees(pair)
    fa, fb = tr.io_facts(ta), tr.io_facts(tb)
    findings: list[Finding] = []
    problems = _io_problems({"baseline": fa, "candidate": fb})
    if problems:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH,
                **IO_SIZES,
                baseline=fa["inputs"],
                candidate=fb["inputs"],
                summary="; ".join(problems),
            )
        )
    trunk_a, trunk_b = _trunk(fa), _trunk(fb)
    if bool(fa["shared_trunk"]) != bool(fb["shared_trunk"]):
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH,
                **TRUNK,
                summary=f"actor and critic trunks are {trunk_a} in the baseline but {trunk_b} in the candidate: "
                "a shared trunk lets the value loss shape the policy's features",
                baseline=trunk_a,
                candidate=trunk_b,
            )
        )
    rep_a, rep_b = fa["repeated_calls"], fb["repeated_calls"]
    if rep_a != rep_b:
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **REPEATED_CALLS,
                summary=f"modules called more than once per pass: {rep_a or 'none'} vs {rep_b or 'none'}",
                baseline=rep_a or "each module once",
                candidate=rep_b or "each module once",
            )
        )
    if not findings:
        widths = {
            side: ", ".join(str(v) for v in f["inputs"].values() if v is not None)
            for side, f in (("a", fa), ("b", fb))
        }
        inputs = f"input {widths['a'] or '—'} = observation {fa['obs_size']}"
        if fa["obs_size"] != fb["obs_size"]:
            inputs += f" | {widths['b'] or '—'} = {fb['obs_size']}"
        heads = (
            f"policy head {fa['policy_width']} = {fa['n_actions']} actions; value head {fa['value_width']}"
        )
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline={"calls": len(ta["calls"]), "trunk": trunk_a, "entry": fa["entry"]},
                candidate={"calls": len(tb["calls"]), "trunk": trunk_b, "entry": fb["entry"]},
                summary=f"same flow: {len(ta['calls'])} | {len(tb['calls'])} module calls via "
                f"`{fa['entry']}`, {trunk_a} actor and critic trunks; {inputs}; {heads}",
            )
        )
    return c.section(
        findings,
        tables={
            "forward pass (baseline)": tr.calls_frame(ta),
            "forward pass (candidate)": tr.calls_frame(tb),
        },
        notes=[
            f"One forward pass on {ta.get('batch')} observations from a seeded random-policy rollout, traced with "
            "forward hooks on every leaf module; `fed by` names the module (or `obs`) whose output each call "
            "received."
        ],
    )


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
    ta, tb = _trees(pair)
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
                effect=max(abs((r["dead_c"] or 0) - (r["dead_b"] or 0)) for r in acts.to_dict("records")),
                effect_label="largest change in dead fraction",
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


CHECKS = (architecture, execution, activations)
"""Every agents check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every agents check, in notebook order."""
    return run_checks(wb, CHECKS)
