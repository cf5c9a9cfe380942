"""Align two networks' module lists by structure, not by name.

Refactors rename modules (``fc1`` becomes ``encoder.0``) without changing the network; comparing names alone
would call every layer removed and re-added. :func:`align` pairs modules by an edit-distance alignment of
the two sequences (in execution order) where matching two modules of the same class and shapes costs
nothing, a resize or a change of settings costs 1, a change of class within one role (``Tanh`` to ``ReLU``)
costs 1.2, and adding or removing a module costs 1. Names only break ties. Each aligned pair is then labelled
``same``, ``renamed``, ``resized``, ``kind`` (changed in kind), ``settings``, ``added`` or ``removed``.

Pure Python: used by the agents, init and checkpointing audits and testable without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Settings that do not change what a module computes.
IGNORED_SETTINGS = frozenset({"inplace"})
GAP = 1.0
RESIZE = 1.0
KIND = 1.2
FORBIDDEN = 1e9


def _settings(rec: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in rec.get("settings", {}).items() if k not in IGNORED_SETTINGS}


def _shapes(rec: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v) for k, v in rec.get("params", {}).items()}


def _name_cost(a: str, b: str) -> float:
    if a == b:
        return 0.0
    if a.rsplit(".", 1)[-1] == b.rsplit(".", 1)[-1]:
        return 0.02
    return 0.05


def match_cost(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Cost of pairing module record ``a`` with ``b`` (see the module docstring)."""
    if a["kind"] != b["kind"]:
        return FORBIDDEN
    base = 0.0
    if a["cls"] != b["cls"]:
        base = KIND
    elif _shapes(a) != _shapes(b) or _settings(a) != _settings(b):
        base = RESIZE
    return base + _name_cost(a["path"], b["path"])


@dataclass
class Pair:
    """One row of an alignment.

    Attributes:
        a: Index into the first sequence, or None (added in the second).
        b: Index into the second sequence, or None (removed from the first).
        change: ``same``, ``renamed``, ``resized``, ``kind``, ``settings``, ``added``, ``removed``; a renamed
            module that also changed carries both, e.g. ``resized+renamed``.
        details: What changed, e.g. ``{"weight": [[64, 110], [16, 110]]}`` or ``{"cls": ["Tanh", "ReLU"]}``.
    """

    a: int | None
    b: int | None
    change: str
    details: dict[str, Any] = field(default_factory=dict)


def _label(a: dict[str, Any], b: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    parts: list[str] = []
    details: dict[str, Any] = {}
    if a["cls"] != b["cls"]:
        parts.append("kind")
        details["cls"] = [a["cls"], b["cls"]]
    else:
        sa, sb = _shapes(a), _shapes(b)
        if sa != sb:
            parts.append("resized")
            details["shapes"] = {
                k: [list(sa[k]) if k in sa else None, list(sb[k]) if k in sb else None]
                for k in sorted(set(sa) | set(sb))
                if sa.get(k) != sb.get(k)
            }
        ta, tb = _settings(a), _settings(b)
        changed = {k: [ta.get(k), tb.get(k)] for k in sorted(set(ta) | set(tb)) if ta.get(k) != tb.get(k)}
        # in/out sizes already show as a resize; keep only the settings a resize does not explain
        if "resized" in parts:
            changed = {
                k: v for k, v in changed.items() if not k.endswith(("_features", "channels", "arg0", "arg1"))
            }
        if changed:
            parts.append("settings")
            details["settings"] = changed
    if a["path"] != b["path"]:
        parts.append("renamed")
        details["path"] = [a["path"], b["path"]]
    return ("+".join(parts) if parts else "same"), details


def align(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> list[Pair]:
    """Align two module-record sequences (see :func:`rlaudit.agents.nets.describe_modules`).

    Each record needs ``path``, ``cls``, ``kind``, ``params`` (name -> shape) and ``settings``.

    Returns:
        Pairs in sequence order; every index of ``a`` and of ``b`` appears exactly once.
    """
    n, m = len(a), len(b)
    cost = [[0.0] * (m + 1) for _ in range(n + 1)]
    move = [[""] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        cost[i][0], move[i][0] = i * GAP, "del"
    for j in range(1, m + 1):
        cost[0][j], move[0][j] = j * GAP, "ins"
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            options = (
                (cost[i - 1][j - 1] + match_cost(a[i - 1], b[j - 1]), "match"),
                (cost[i - 1][j] + GAP, "del"),
                (cost[i][j - 1] + GAP, "ins"),
            )
            cost[i][j], move[i][j] = min(options, key=lambda o: o[0])
    pairs: list[Pair] = []
    i, j = n, m
    while i > 0 or j > 0:
        step = move[i][j]
        if step == "match":
            change, details = _label(a[i - 1], b[j - 1])
            pairs.append(Pair(i - 1, j - 1, change, details))
            i, j = i - 1, j - 1
        elif step == "del":
            pairs.append(Pair(i - 1, None, "removed"))
            i -= 1
        else:
            pairs.append(Pair(None, j - 1, "added"))
            j -= 1
    pairs.reverse()
    return pairs


def execution_sorted(records: Sequence[dict[str, Any]], order: Sequence[str]) -> list[dict[str, Any]]:
    """Records in execution order (paths in ``order`` first, as called), then the never-called ones in
    registration order."""
    by_path = {r["path"]: r for r in records}
    called = [by_path[p] for p in order if p in by_path]
    seen = {r["path"] for r in called}
    rest = sorted((r for r in records if r["path"] not in seen), key=lambda r: r.get("order", 0))
    return called + rest


def linear_in_out(rec: dict[str, Any]) -> tuple[int | None, int | None]:
    """``(in, out)`` widths of a linear or convolution record, from its weight shape (out, in, ...)."""
    w = rec.get("params", {}).get("weight")
    if rec.get("kind") != "linear" or not w or len(w) < 2:
        return None, None
    return int(w[1]), int(w[0])


def block_summary(records: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Per top-level block, the chain of widths and the activations: ``{"actor": "110→64→64→5 (Tanh)"}``."""
    blocks: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        blocks.setdefault(r.get("block") or "(root)", []).append(r)
    out: dict[str, str] = {}
    for block, recs in blocks.items():
        widths: list[int] = []
        acts: list[str] = []
        for r in recs:
            i, o = linear_in_out(r)
            if i is not None:
                if not widths:
                    widths.append(i)
                widths.append(int(o))  # type: ignore[arg-type]
            elif r["kind"] == "activation" and r["cls"] not in acts:
                acts.append(r["cls"])
            elif r["kind"] not in ("linear", "activation"):
                acts.append(r["cls"])
        chain = "→".join(str(w) for w in widths) if widths else "no linear layers"
        out[block] = chain + (f" ({', '.join(acts)})" if acts else "")
    return out


def hidden_widths(records: Sequence[dict[str, Any]]) -> list[int]:
    """Output widths of the linear layers that are not the last one of their block (the hidden layers)."""
    blocks: dict[str, list[int]] = {}
    for r in records:
        _, o = linear_in_out(r)
        if o is not None:
            blocks.setdefault(r.get("block") or "(root)", []).append(o)
    widths: list[int] = []
    for outs in blocks.values():
        widths.extend(outs[:-1])
    return widths
