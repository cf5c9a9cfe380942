"""Two networks' module trees compared: aligned records, the changes between them, and the words for them.

Works on the ``tree.json`` artifacts of :func:`rlaudit.agents.probes.network` (and of the init probe, which
writes the same tree). Shared by the agents and init audits; pandas is used for the tables.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlaudit.agents import align as al


def count(n: Any) -> str:
    """A parameter count with thousands separators (``14,982``); ``—`` when unknown."""
    return f"{int(n):,}" if isinstance(n, int | float) and n == n else "—"


def shape_text(rec: dict[str, Any] | None) -> str:
    """``"64x48"`` for a weight, else the module's settings (``"p=0.1"``); ``""`` for None."""
    if rec is None:
        return ""
    w = rec.get("params", {}).get("weight")
    if w:
        return "x".join(str(s) for s in w)
    return ", ".join(f"{k}={v}" for k, v in rec.get("settings", {}).items() if k != "inplace")


def ordered(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The tree's module records in execution order (never-called modules last)."""
    return al.execution_sorted(tree["modules"], tree.get("order", []))


def _follows_spaces(
    a: dict[str, Any], b: dict[str, Any], tree_a: dict[str, Any], tree_b: dict[str, Any]
) -> str:
    """Why a resized layer only follows the observation or action space (``""`` when it does not)."""
    (ia, oa), (ib, ob) = al.linear_in_out(a), al.linear_in_out(b)
    obs_a, obs_b = tree_a.get("obs_size"), tree_b.get("obs_size")
    act_a, act_b = tree_a.get("n_actions"), tree_b.get("n_actions")
    heads_a = {v: k for k, v in (tree_a.get("heads") or {}).items() if v}
    heads_b = {v: k for k, v in (tree_b.get("heads") or {}).items() if v}
    consumes = a["path"] in set(tree_a.get("obs_consumers", [])) and b["path"] in set(
        tree_b.get("obs_consumers", [])
    )
    if oa == ob and consumes and ia == obs_a and ib == obs_b and obs_a != obs_b:
        return f"input follows the observation size ({obs_a} → {obs_b})"
    is_policy = heads_a.get(a["path"]) == "policy" and heads_b.get(b["path"]) == "policy"
    if ia == ib and is_policy and oa == act_a and ob == act_b and act_a != act_b:
        return f"policy head follows the action count ({act_a} → {act_b})"
    return ""


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
            why = _follows_spaces(a, b, tree_a, tree_b)
            (knock if why else real).append(p)
        else:
            real.append(p)
        rows.append(
            {
                "baseline": a["path"] if a else "—",
                "baseline class": a["cls"] if a else "",
                "baseline shape": shape_text(a),
                "candidate": b["path"] if b else "—",
                "candidate class": b["cls"] if b else "",
                "candidate shape": shape_text(b),
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
        return f"{b['path']} ({b['cls']} {shape_text(b)}) added"
    if b is None and a is not None:
        return f"{a['path']} ({a['cls']} {shape_text(a)}) removed"
    assert a is not None and b is not None
    name = a["path"] if a["path"] == b["path"] else f"{a['path']} (now {b['path']})"
    if "kind" in p.change:
        return f"{name} {a['cls']} → {b['cls']}"
    if "resized" in p.change:
        (ia, oa), (ib, ob) = al.linear_in_out(a), al.linear_in_out(b)
        if ia is not None:
            return f"{name} {a['cls']} {ia}→{oa} became {ib}→{ob}"
        return f"{name} {a['cls']} {shape_text(a)} became {shape_text(b)}"
    if "settings" in p.change:
        changed = p.details.get("settings", {})
        return f"{name} {a['cls']} " + ", ".join(f"{k} {v[0]} → {v[1]}" for k, v in changed.items())
    return f"{name} {p.change}"


def changes(cmp: dict[str, Any], which: str = "real") -> list[str]:
    """:func:`describe_change` of every pair in ``cmp[which]`` (``real`` or ``knock_on``)."""
    return [describe_change(p, cmp["a"], cmp["b"]) for p in cmp[which]]


def _widths_text(widths: list[int]) -> str:
    unique = list(dict.fromkeys(widths))
    return str(unique[0]) if len(unique) == 1 else "/".join(map(str, widths))


def changed_quantities(tree_a: dict[str, Any], tree_b: dict[str, Any]) -> list[str]:
    """The network's changed quantities in words: hidden width, depth, activation, parameter count.

    ``["hidden width 64 → 16", "activation Tanh → ReLU", "parameters 14,982 → 1,750"]``; empty when none of
    these changed (a change elsewhere, e.g. a module's settings, is only in :func:`describe_change`).
    """
    ra, rb = ordered(tree_a), ordered(tree_b)
    out = []
    wa, wb = al.hidden_widths(ra), al.hidden_widths(rb)
    depth_a, depth_b = _depth(ra), _depth(rb)
    if depth_a != depth_b:
        out.append(f"hidden layers per block {depth_a} → {depth_b}")
    if wa != wb and wa and wb:
        out.append(f"hidden width {_widths_text(wa)} → {_widths_text(wb)}")
    acts_a, acts_b = activations(ra), activations(rb)
    if acts_a != acts_b:
        out.append(f"activation {', '.join(acts_a) or 'none'} → {', '.join(acts_b) or 'none'}")
    total_a = (tree_a.get("blocks") or {}).get("total")
    total_b = (tree_b.get("blocks") or {}).get("total")
    if total_a != total_b and out:
        out.append(f"parameters {count(total_a)} → {count(total_b)}")
    return out


def _depth(records: list[dict[str, Any]]) -> int:
    """Hidden linear layers of the deepest block."""
    per_block: dict[str, int] = {}
    for r in records:
        if r["kind"] == "linear":
            block = r.get("block") or "(root)"
            per_block[block] = per_block.get(block, 0) + 1
    return max(per_block.values(), default=1) - 1


def activations(records: list[dict[str, Any]]) -> list[str]:
    """The activation classes of a network, sorted."""
    return sorted({r["cls"] for r in records if r["kind"] == "activation"})


def architecture_phrase(tree: dict[str, Any]) -> str:
    """``"2 hidden layers of 64, Tanh; actor 11,525, critic 11,265 parameters"``."""
    recs = ordered(tree)
    widths = al.hidden_widths(recs)
    blocks = {k: v for k, v in tree["blocks"].items() if k != "total"}
    hidden = ""
    if widths:
        n_hidden = _depth(recs) if blocks else len(widths)
        hidden = f"{n_hidden} hidden layer{'s' if n_hidden != 1 else ''} of {'/'.join(map(str, sorted(set(widths))))}"
    parts = [p for p in (hidden, ", ".join(activations(recs))) if p]
    counts = ", ".join(f"{k} {count(v)}" for k, v in blocks.items())
    return "; ".join([", ".join(parts), f"{counts} parameters"]) if parts else f"{counts} parameters"


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


def calls_frame(tree: dict[str, Any]) -> pd.DataFrame:
    """One row per module call of the traced forward pass: order, module, class, shapes, inputs."""
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
