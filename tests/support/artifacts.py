"""Probe results written by hand: what a check reads from a probe run on both sides, without a worker.

- ``probe_result`` / ``artifact_pair``: a :class:`~rlaudit.engine.store.ProbeResult` per side whose artifact
  directory holds the JSON (and npz) files given, as the probe would have written them.
- ``lacking``: a side that was not run because the subject lacks a capability (the guard's SKIPPED).
- ``network_tree``: a ``tree.json`` of :func:`rlaudit.agents.probes.network` for an actor-critic MLP (agents'
  architecture, execution, activations; init's schemes).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from rlaudit.engine.store import ProbeResult
from rlaudit.engine.workbench import Pair
from support.toys import mlp


def probe_result(directory: Path, side: str, artifacts: dict[str, Any], result: Any = None) -> ProbeResult:
    """One side's result whose directory holds ``artifacts``: ``{"tree": {...}}`` -> ``tree.json``; a value that
    is a dict of numpy arrays under a name ending ``.npz`` -> that npz file."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, value in artifacts.items():
        if name.endswith(".npz"):
            np.savez(directory / name, **value)
        else:
            (directory / f"{name}.json").write_text(json.dumps(value))
    return ProbeResult(side, f"{side}.py", "hand:built", {}, True, result=result or {}, dir=directory)


def artifact_pair(tmp: Path, baseline: dict[str, Any], candidate: dict[str, Any]) -> Pair:
    """Both sides' artifacts written under ``tmp`` (one folder per side) as one probe's :class:`Pair`."""
    return Pair(
        baseline=probe_result(tmp / "baseline", "baseline", baseline),
        candidate=probe_result(tmp / "candidate", "candidate", candidate),
    )


def lacking(side: str, *capabilities: str) -> ProbeResult:
    """A side the probe was not run on: the subject lacks ``capabilities``."""
    return ProbeResult(side, f"{side}.py", "hand:built", {}, False, missing=list(capabilities))


def network_tree(
    obs: int = 4,
    widths: tuple[int, ...] = (8,),
    act: str = "Tanh",
    n_actions: int = 3,
    *,
    input_width: int | None = None,
    shared_trunk: tuple[str, ...] = (),
    calls_twice: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``tree.json`` of separate ``actor`` and ``critic`` MLPs, obs -> widths... -> n_actions (and -> 1).

    Args:
        obs: The observation size the probe saw.
        widths: Hidden widths of each block.
        act: The activation class between linear layers.
        n_actions: The action count (the policy head's width).
        input_width: The first layers' input width (default ``obs``: a network built from the spaces).
        shared_trunk: What the probe found upstream of both heads (empty: separate trunks).
        calls_twice: Modules the traced forward pass called twice.
    """
    first = obs if input_width is None else input_width
    records: list[dict[str, Any]] = []
    blocks: dict[str, int] = {}
    for block, out in (("actor", n_actions), ("critic", 1)):
        names = [f"{block}.{2 * i}" for i in range(len(widths) + 1)]
        recs = mlp(names, [first, *widths, out], act=act)
        for r in recs:
            r["n_params"] = sum(math.prod(shape) for shape in r["params"].values())
        blocks[block] = sum(r["n_params"] for r in recs)
        records.extend(recs)
    for i, r in enumerate(records):
        r["order"] = i
    blocks["total"] = sum(blocks.values())
    calls = []
    previous = "obs"
    for r in records:
        if r["path"].endswith(".0"):
            previous = "obs"
        width_in = int(r["params"]["weight"][1]) if r["kind"] == "linear" else calls[-1]["out_shape"][-1]
        width_out = int(r["params"]["weight"][0]) if r["kind"] == "linear" else width_in
        for _ in range(2 if r["path"] in calls_twice else 1):
            calls.append(
                {
                    "index": len(calls),
                    "path": r["path"],
                    "cls": r["cls"],
                    "in_shape": [16, width_in],
                    "out_shape": [16, width_out],
                    "sources": [previous],
                }
            )
        previous = r["path"]
    heads = {"policy": f"actor.{2 * len(widths)}", "value": f"critic.{2 * len(widths)}"}
    return {
        "policy_class": "Agent",
        "modules": records,
        "blocks": blocks,
        "calls": calls,
        "order": list(dict.fromkeys(c["path"] for c in calls)),
        "terminal": list(heads.values()),
        "entry": "get_action_and_value",
        "heads": heads,
        "shared_trunk": list(shared_trunk),
        "obs_consumers": ["actor.0", "critic.0"],
        "obs_size": obs,
        "n_actions": n_actions,
        "batch": 16,
    }
