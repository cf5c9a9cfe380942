"""Agents audit (notebook 01): the network each setup builds, compared layer by layer.

Case 000 checked hidden sizes, nonlinearities and connectivity by reading configs; here the network itself is
built by each subject's ``make_policy`` in its own process, traced on real observations, and the two module
lists are aligned by structure (:mod:`rlaudit.agents.align`), so a renamed module is NOTED and only a layer
added, removed, resized or changed in kind is SUSPECT.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlaudit.agents import align as al
from rlaudit.agents import probes
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, audit_section
from rlaudit.workbench import Pair, Workbench

SUBSYSTEM = "agents"
DEAD_JUMP = 0.10
"""A layer's fraction of dead (or saturated) units differing by at least this much between the sides is
SUSPECT: that many units pass no gradient from the start."""
STD_RATIO = 1.5
"""Activation std differing by more than this factor (either way) is worth a NOTED line."""


def seeds_for(wb: Workbench) -> list[int]:
    """Network seeds for the structural audits: the profile's seed count, at least 2 and at most 5."""
    return list(range(max(2, min(int(wb.profile.seeds), 5))))


def network_pair(wb: Workbench) -> Pair:
    """The :func:`rlaudit.agents.probes.network` probe on both sides (cached; shared by every agents check)."""
    return wb.run(
        probes.network,
        seeds=seeds_for(wb),
        env_seed=0,
        rollout_steps=int(wb.profile.rollout_steps),
        batch=512,
    )


def _fmt_int(n: Any) -> str:
    return f"{int(n):,}" if n is not None else "—"


def _shape(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return ""
    w = rec.get("params", {}).get("weight")
    if w:
        return "x".join(str(s) for s in w)
    return ", ".join(f"{k}={v}" for k, v in rec.get("settings", {}).items() if k != "inplace")


def ordered(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The tree's module records in execution order (never-called modules last)."""
    return al.execution_sorted(tree["modules"], tree.get("order", []))


def compare_trees(tree_a: dict[str, Any], tree_b: dict[str, Any]) -> dict[str, Any]:
    """Align two ``tree.json`` artifacts and classify every difference.

    Returns:
        ``pairs`` (aligned :class:`~rlaudit.agents.align.Pair`), ``a``/``b`` (ordered records), ``table``
        (DataFrame, one row per pair), ``real`` (pairs that change the network), ``knock_on`` (pairs whose
        only change follows the observation or action space: input width = observation size, head width =
        action count on both sides), ``renamed`` (pairs that differ only by name).
    """
    ra, rb = ordered(tree_a), ordered(tree_b)
    pairs = al.align(ra, rb)
    consumers_a, consumers_b = set(tree_a.get("obs_consumers", [])), set(tree_b.get("obs_consumers", []))
    heads_a = {v: k for k, v in (tree_a.get("heads") or {}).items() if v}
    heads_b = {v: k for k, v in (tree_b.get("heads") or {}).items() if v}
    obs_a, obs_b = tree_a.get("obs_size"), tree_b.get("obs_size")
    act_a, act_b = tree_a.get("n_actions"), tree_b.get("n_actions")
    real, knock, renamed, rows = [], [], [], []
    for p in pairs:
        a = ra[p.a] if p.a is not None else None
        b = rb[p.b] if p.b is not None else None
        why = ""
        parts = set(p.change.split("+"))
        if parts <= {"same", "renamed"}:
            if "renamed" in parts:
                renamed.append(p)
        elif parts <= {"resized", "renamed"} and a is not None and b is not None:
            (ia, oa), (ib, ob) = al.linear_in_out(a), al.linear_in_out(b)
            if (
                oa == ob
                and a["path"] in consumers_a
                and b["path"] in consumers_b
                and ia == obs_a
                and ib == obs_b
                and obs_a != obs_b
            ):
                why = f"input follows the observation size ({obs_a} → {obs_b})"
            elif (
                ia == ib
                and heads_a.get(a["path"]) == "policy"
                and heads_b.get(b["path"]) == "policy"
                and oa == act_a
                and ob == act_b
                and act_a != act_b
            ):
                why = f"policy head follows the action count ({act_a} → {act_b})"
            (knock if why else real).append(p)
        else:
            real.append(p)
        rows.append(
            {
                "baseline": a["path"] if a else "—",
                "baseline class": a["cls"] if a else "",
                "baseline shape": _shape(a),
                "candidate": b["path"] if b else "—",
                "candidate class": b["cls"] if b else "",
                "candidate shape": _shape(b),
                "change": p.change,
                "note": why,
            }
        )
    return {
        "pairs": pairs,
        "a": ra,
        "b": rb,
        "table": pd.DataFrame(rows),
        "real": real,
        "knock_on": knock,
        "renamed": renamed,
    }


def describe_change(p: al.Pair, ra: list[dict[str, Any]], rb: list[dict[str, Any]]) -> str:
    """One phrase per structural change: ``"actor.0 Linear 109→64 became 109→16"``."""
    a = ra[p.a] if p.a is not None else None
    b = rb[p.b] if p.b is not None else None
    if a is None and b is not None:
        return f"{b['path']} ({b['cls']} {_shape(b)}) added"
    if b is None and a is not None:
        return f"{a['path']} ({a['cls']} {_shape(a)}) removed"
    assert a is not None and b is not None
    name = a["path"] if a["path"] == b["path"] else f"{a['path']} (now {b['path']})"
    if "kind" in p.change:
        return f"{name} {a['cls']} → {b['cls']}"
    if "resized" in p.change:
        (ia, oa), (ib, ob) = al.linear_in_out(a), al.linear_in_out(b)
        if ia is not None:
            return f"{name} {a['cls']} {ia}→{oa} became {ib}→{ob}"
        return f"{name} {a['cls']} {_shape(a)} became {_shape(b)}"
    if "settings" in p.change:
        changed = p.details.get("settings", {})
        return f"{name} {a['cls']} " + ", ".join(f"{k} {v[0]} → {v[1]}" for k, v in changed.items())
    return f"{name} {p.change}"


def architecture_phrase(tree: dict[str, Any]) -> str:
    """``"2 hidden layers of 64, Tanh; actor 11,525, critic 11,265 parameters"``."""
    recs = ordered(tree)
    widths = al.hidden_widths(recs)
    acts = sorted({r["cls"] for r in recs if r["kind"] == "activation"})
    blocks = {k: v for k, v in tree["blocks"].items() if k != "total"}
    per_block = sorted(
        {len([r for r in recs if r.get("block") == blk and r["kind"] == "linear"]) for blk in blocks}
    )
    hidden = ""
    if widths:
        uniq = sorted(set(widths))
        n_hidden = max(per_block) - 1 if per_block else len(widths)
        hidden = f"{n_hidden} hidden layer{'s' if n_hidden != 1 else ''} of {'/'.join(map(str, uniq))}"
    parts = [p for p in (hidden, ", ".join(acts)) if p]
    counts = ", ".join(f"{k} {_fmt_int(v)}" for k, v in blocks.items())
    return "; ".join([", ".join(parts), f"{counts} parameters"]) if parts else f"{counts} parameters"


@audit_section("agents/architecture", SUBSYSTEM, "The two networks have the same layers")
def architecture(wb: Workbench) -> Section:
    """Module trees side by side, aligned by structure: layers added, removed, resized or changed in kind."""
    hypothesis = "The two networks have the same layers, sizes and activations"
    pair = network_pair(wb)
    if (f := pair.guard("agents/architecture", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f, "Architecture")
    ta, tb = pair.baseline.json("tree"), pair.candidate.json("tree")
    cmp = compare_trees(ta, tb)
    sum_a, sum_b = al.block_summary(cmp["a"]), al.block_summary(cmp["b"])
    findings: list[Finding] = []
    total_a, total_b = ta["blocks"]["total"], tb["blocks"]["total"]
    if cmp["real"]:
        phrases = [describe_change(p, cmp["a"], cmp["b"]) for p in cmp["real"]]
        kinds = {part for p in cmp["real"] for part in p.change.split("+")}
        severity = Severity.HIGH if kinds & {"kind", "added", "removed", "resized"} else Severity.MEDIUM
        what = []
        if "resized" in kinds:
            what.append("resized")
        if "kind" in kinds:
            what.append("changed in kind")
        if kinds & {"added", "removed"}:
            what.append("added/removed")
        if "settings" in kinds:
            what.append("with changed settings")
        findings.append(
            Finding(
                id="agents/architecture",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=severity,
                evidence=Evidence(
                    baseline=sum_a,
                    candidate=sum_b,
                    effect=float(len(cmp["real"])),
                    effect_label="modules changed",
                    summary=f"{len(cmp['real'])} module(s) {' and '.join(what)}: "
                    + "; ".join(phrases[:6])
                    + (" ..." if len(phrases) > 6 else "")
                    + f" (parameters {_fmt_int(total_a)} → {_fmt_int(total_b)})",
                    details={
                        "changes": phrases,
                        "blocks": {"baseline": ta["blocks"], "candidate": tb["blocks"]},
                    },
                ),
                remediation="Make the candidate's make_policy build the baseline's layers again: "
                + "; ".join(phrases[:3])
                + " (restore the config key or code that sets them, then rerun this notebook).",
                figures=["aligned modules"],
            )
        )
    if cmp["knock_on"]:
        phrases = [f"{describe_change(p, cmp['a'], cmp['b'])}" for p in cmp["knock_on"]]
        notes = sorted({row for row in cmp["table"]["note"] if row})
        findings.append(
            Finding(
                id="agents/io-follows-spaces",
                subsystem=SUBSYSTEM,
                hypothesis="Input and output layers match the environment's spaces on both sides",
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    baseline={"observation": ta.get("obs_size"), "actions": ta.get("n_actions")},
                    candidate={"observation": tb.get("obs_size"), "actions": tb.get("n_actions")},
                    effect=float(len(cmp["knock_on"])),
                    effect_label="layers resized by the spaces",
                    summary="; ".join(notes)
                    + ": "
                    + "; ".join(phrases)
                    + " — a knock-on of a change in the observation or action space (see 10_spaces), not of "
                    "the network code",
                ),
                remediation="Nothing to change in the network; investigate the space change in 10_spaces.",
            )
        )
    if cmp["renamed"]:
        names = [f"{cmp['a'][p.a]['path']} → {cmp['b'][p.b]['path']}" for p in cmp["renamed"]]  # type: ignore[index]
        findings.append(
            Finding(
                id="agents/renamed",
                subsystem=SUBSYSTEM,
                hypothesis="Modules keep their names",
                status=Status.NOTED,
                severity=Severity.INFO,
                evidence=Evidence(
                    baseline=len(cmp["a"]),
                    candidate=len(cmp["b"]),
                    effect=float(len(names)),
                    effect_label="modules renamed",
                    summary=f"{len(names)} module(s) renamed with the same class and shapes: "
                    + ", ".join(names[:6])
                    + (" ..." if len(names) > 6 else "")
                    + "; a rename changes checkpoint keys, not the network",
                ),
                remediation="No change needed for training; map the old names when loading older checkpoints "
                "(see 04_checkpointing).",
            )
        )
    if not cmp["real"]:
        findings.append(
            Finding(
                id="agents/architecture",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=sum_a,
                    candidate=sum_b,
                    effect=0.0,
                    effect_label="modules changed",
                    summary="same architecture, "
                    + architecture_phrase(ta)
                    + ("" if not cmp["knock_on"] else " (the input layer follows the observation size)"),
                ),
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
    return Section(
        title="Architecture: module trees aligned by structure",
        findings=findings,
        tables={
            "aligned modules": cmp["table"],
            "parameters per block": counts,
            "module settings (baseline)": module_table(cmp["a"]),
            "module settings (candidate)": module_table(cmp["b"]),
        },
        notes=[
            f"Networks built by each subject's `make_policy` (policy class {ta.get('policy_class')} | "
            f"{tb.get('policy_class')}), modules in execution order; aligned by class and shape, names only "
            "break ties."
        ],
    )


def module_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per module: path, class, parameter shapes, settings (activation, bias, dropout), count."""
    rows = []
    for r in records:
        rows.append(
            {
                "path": r["path"] or "(root)",
                "class": r["cls"],
                "params": ", ".join(f"{k} {'x'.join(map(str, v))}" for k, v in r["params"].items()),
                "settings": ", ".join(f"{k}={v}" for k, v in r["settings"].items() if k != "inplace"),
                "bias": "bias" in r["params"] if r["kind"] == "linear" else None,
                "n_params": r["n_params"],
            }
        )
    return pd.DataFrame(rows)


def _calls_frame(tree: dict[str, Any]) -> pd.DataFrame:
    rows = [
        {
            "#": c["index"],
            "module": c["path"],
            "class": c["cls"],
            "input": "x".join(map(str, c["in_shape"])),
            "output": "x".join(map(str, c["out_shape"])),
            "fed by": ", ".join(c["sources"]),
        }
        for c in tree["calls"]
    ]
    return pd.DataFrame(rows)


def io_facts(tree: dict[str, Any]) -> dict[str, Any]:
    """Per side: input width(s) vs observation size, head widths vs action count, trunk, call counts."""
    by_path = {r["path"]: r for r in tree["modules"]}
    inputs = {
        p: al.linear_in_out(by_path[p])[0]
        for p in dict.fromkeys(tree.get("obs_consumers", []))
        if p in by_path
    }
    heads = tree.get("heads") or {}
    width = {c["path"]: (c["out_shape"][-1] if c["out_shape"] else None) for c in tree["calls"]}
    calls: dict[str, int] = {}
    for c in tree["calls"]:
        calls[c["path"]] = calls.get(c["path"], 0) + 1
    return {
        "obs_size": tree.get("obs_size"),
        "inputs": inputs,
        "inputs_ok": all(v is None or v == tree.get("obs_size") for v in inputs.values()),
        "n_actions": tree.get("n_actions"),
        "policy_head": heads.get("policy"),
        "policy_width": width.get(heads.get("policy")) if heads.get("policy") else None,
        "value_head": heads.get("value"),
        "value_width": width.get(heads.get("value")) if heads.get("value") else None,
        "shared_trunk": list(tree.get("shared_trunk") or []),
        "repeated_calls": {p: n for p, n in calls.items() if n > 1},
        "entry": tree.get("entry"),
    }


@audit_section("agents/execution", SUBSYSTEM, "Observations flow through both networks the same way")
def execution(wb: Workbench) -> Section:
    """Execution order and shapes on real observations, shared vs separate trunks, input and head sizes."""
    hypothesis = (
        "Observations flow through both networks the same way (order, shapes, trunks, input and heads)"
    )
    pair = network_pair(wb)
    if (f := pair.guard("agents/execution", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f, "Execution")
    ta, tb = pair.baseline.json("tree"), pair.candidate.json("tree")
    fa, fb = io_facts(ta), io_facts(tb)
    findings: list[Finding] = []
    problems: list[str] = []
    for side, facts in (("baseline", fa), ("candidate", fb)):
        if not facts["inputs_ok"]:
            problems.append(
                f"the {side}'s input layer(s) take {facts['inputs']} but the observation has "
                f"{facts['obs_size']} features"
            )
        if (
            facts["n_actions"] is not None
            and facts["policy_width"] is not None
            and facts["policy_width"] != facts["n_actions"]
        ):
            problems.append(
                f"the {side}'s policy head has {facts['policy_width']} outputs for {facts['n_actions']} actions"
            )
    if problems:
        findings.append(
            Finding(
                id="agents/io-sizes",
                subsystem=SUBSYSTEM,
                hypothesis="Each network's input matches the observation size and its policy head the action count",
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(baseline=fa["inputs"], candidate=fb["inputs"], summary="; ".join(problems)),
                remediation="Build the network from the environment's spaces (observation size and action count) "
                "instead of hard-coded sizes.",
            )
        )
    trunk_a = "shared: " + ", ".join(fa["shared_trunk"]) if fa["shared_trunk"] else "separate"
    trunk_b = "shared: " + ", ".join(fb["shared_trunk"]) if fb["shared_trunk"] else "separate"
    if bool(fa["shared_trunk"]) != bool(fb["shared_trunk"]):
        findings.append(
            Finding(
                id="agents/trunk",
                subsystem=SUBSYSTEM,
                hypothesis="Actor and critic share (or separate) their trunk the same way on both sides",
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline=trunk_a,
                    candidate=trunk_b,
                    summary=f"actor and critic trunks are {trunk_a} in the baseline but {trunk_b} in the candidate: "
                    "a shared trunk lets the value loss shape the policy's features",
                ),
                remediation="Restore the baseline's trunk layout (separate actor and critic networks, or the same "
                "shared encoder) in the candidate's make_policy.",
            )
        )
    rep_a, rep_b = fa["repeated_calls"], fb["repeated_calls"]
    if rep_a != rep_b:
        findings.append(
            Finding(
                id="agents/repeated-calls",
                subsystem=SUBSYSTEM,
                hypothesis="Each module runs as many times per forward pass on both sides",
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    baseline=rep_a or "each module once",
                    candidate=rep_b or "each module once",
                    summary=f"modules called more than once per pass: {rep_a or 'none'} vs {rep_b or 'none'}",
                ),
                remediation="Check whether the extra calls are intended (weight sharing) or a duplicated forward pass.",
            )
        )
    if not findings:
        inputs = f"input {', '.join(str(v) for v in fa['inputs'].values())} = observation {fa['obs_size']}"
        if fa["obs_size"] != fb["obs_size"]:
            inputs += f" | {', '.join(str(v) for v in fb['inputs'].values())} = {fb['obs_size']}"
        heads = (
            f"policy head {fa['policy_width']} = {fa['n_actions']} actions; value head {fa['value_width']}"
        )
        findings.append(
            Finding(
                id="agents/execution",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline={"calls": len(ta["calls"]), "trunk": trunk_a, "entry": fa["entry"]},
                    candidate={"calls": len(tb["calls"]), "trunk": trunk_b, "entry": fb["entry"]},
                    summary=f"same flow: {len(ta['calls'])} | {len(tb['calls'])} module calls via "
                    f"`{fa['entry']}`, {trunk_a} actor and critic trunks; {inputs}; {heads}",
                ),
            )
        )
    return Section(
        title="Execution order and shapes on real observations",
        findings=findings,
        tables={"forward pass (baseline)": _calls_frame(ta), "forward pass (candidate)": _calls_frame(tb)},
        notes=[
            f"One forward pass on {ta.get('batch')} observations from a seeded random-policy rollout, traced with "
            "forward hooks on every leaf module; `fed by` names the module (or `obs`) whose output each call "
            "received."
        ],
    )


def activation_table(pair: Pair, cmp: dict[str, Any]) -> pd.DataFrame:
    """Per aligned layer, the seed-averaged activation statistics of both sides."""
    frames = {}
    for side in ("baseline", "candidate"):
        df = pd.DataFrame(pair[side].json("activations"))
        frames[side] = df.groupby(["path", "cls", "kind"], sort=False)[
            ["mean", "std", "unit_std", "dead", "saturated", "units"]
        ].mean()
    rows = []
    for p in cmp["pairs"]:
        a = cmp["a"][p.a] if p.a is not None else None
        b = cmp["b"][p.b] if p.b is not None else None
        ref = a or b
        if ref is None or ref["kind"] not in ("activation", "linear"):
            continue
        row: dict[str, Any] = {
            "layer": (a or b)["path"],
            "kind": ref["kind"],
            "class": f"{a['cls'] if a else '—'} | {b['cls'] if b else '—'}",
        }
        for side, rec in (("baseline", a), ("candidate", b)):
            stats = None
            if rec is not None:
                idx = frames[side].index
                key = (rec["path"], rec["cls"], rec["kind"])
                if key in idx:
                    stats = frames[side].loc[key]
            for col in ("mean", "std", "dead", "saturated"):
                row[f"{col}_{side[0]}"] = float(stats[col]) if stats is not None else None
        rows.append(row)
    return pd.DataFrame(rows)


@audit_section(
    "agents/activations", SUBSYSTEM, "Both networks' layers respond alike to the same observations"
)
def activations(wb: Workbench) -> Section:
    """Activation statistics per layer at initialization on observations of a seeded random-policy rollout."""
    hypothesis = "Both networks' layers respond alike to the same observations at initialization"
    pair = network_pair(wb)
    if (f := pair.guard("agents/activations", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f, "Activations")
    ta, tb = pair.baseline.json("tree"), pair.candidate.json("tree")
    cmp = compare_trees(ta, tb)
    table = activation_table(pair, cmp)
    acts = table[table["kind"] == "activation"]
    if acts.empty:
        acts = table
    findings: list[Finding] = []
    flagged: list[str] = []
    shifted: list[str] = []
    for r in acts.itertuples(index=False):
        d = r._asdict()
        for col in ("dead", "saturated"):
            a, b = d.get(f"{col}_b"), d.get(f"{col}_c")
            if a is not None and b is not None and abs(b - a) >= DEAD_JUMP:
                flagged.append(f"{r.layer} {col} units {a:.0%} → {b:.0%}")
        sa, sb = d.get("std_b"), d.get("std_c")
        if sa and sb and (sb / sa > STD_RATIO or sa / sb > STD_RATIO):
            shifted.append(f"{r.layer} std {sa:.3g} → {sb:.3g}")
    kind_changes = [describe_change(p, cmp["a"], cmp["b"]) for p in cmp["real"] if "kind" in p.change]
    because = f" (the activation changed: {'; '.join(kind_changes[:2])})" if kind_changes else ""
    if flagged:
        findings.append(
            Finding(
                id="agents/dead-units",
                subsystem=SUBSYSTEM,
                hypothesis="No layer has many more dead or saturated units on one side",
                status=Status.SUSPECT,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline={r.layer: r.dead_b for r in acts.itertuples()},
                    candidate={r.layer: r.dead_c for r in acts.itertuples()},
                    effect=max(abs((r.dead_c or 0) - (r.dead_b or 0)) for r in acts.itertuples()),
                    effect_label="largest change in dead fraction",
                    summary="units that pass no gradient from the start: " + "; ".join(flagged[:6]) + because,
                ),
                remediation="Restore the baseline's activation and initialization (see 08_init), or lower the "
                "input scale, so that units are alive at the start of training.",
                figures=["activations"],
            )
        )
    if shifted:
        findings.append(
            Finding(
                id="agents/activation-scale",
                subsystem=SUBSYSTEM,
                hypothesis="Per-layer activation scales match",
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    baseline={r.layer: r.std_b for r in acts.itertuples()},
                    candidate={r.layer: r.std_c for r in acts.itertuples()},
                    summary="activation std differs by more than ×1.5: " + "; ".join(shifted[:6]) + because,
                ),
                remediation="Expected when the layers or the activation changed (see the architecture finding); "
                "otherwise compare the initialization in 08_init.",
                figures=["activations"],
            )
        )
    if not flagged and not shifted:
        lo, hi = acts[["std_b", "std_c"]].min().min(), acts[["std_b", "std_c"]].max().max()
        dead = acts[["dead_b", "dead_c"]].max().max()
        findings.append(
            Finding(
                id="agents/activations",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=acts.set_index("layer")["std_b"].round(4).to_dict(),
                    candidate=acts.set_index("layer")["std_c"].round(4).to_dict(),
                    summary=f"activation statistics agree: per-layer std {lo:.2g}–{hi:.2g} on both sides, "
                    f"at most {dead:.0%} dead units, over {len(seeds_for(wb))} seeds",
                ),
            )
        )
    from rlaudit.agents import plots

    return Section(
        title="Activation statistics at initialization",
        findings=findings,
        tables={"activations (mean over seeds; b = baseline, c = candidate)": table},
        figures={"activations": plots.activations_figure(table)},
        notes=[
            f"{ta.get('batch')} observations from a seeded random-policy rollout, networks from "
            f"{len(seeds_for(wb))} torch seeds; raw observations (a subject's own observation normalization is "
            "not applied at initialization). Dead: zero on every observation; saturated: a bounded activation "
            "within 1% of its bound on 99% of them."
        ],
    )


def audit_all(wb: Workbench) -> list[Section]:
    """Every agents check, in notebook order."""
    return [architecture(wb), execution(wb), activations(wb)]
