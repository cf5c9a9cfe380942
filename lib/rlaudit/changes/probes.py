"""Change-search probes: which of the subject's functions other probes execute.

Runs inside the subject's process: standard library and light rlaudit modules only.
"""

from __future__ import annotations

import copy
import importlib
from pathlib import Path
from typing import Any

from rlaudit.probe import ProbeContext, bind_params, probe, probe_info


@probe(requires=(), version=1)
def trace(ctx: ProbeContext, *, probes: list[dict[str, Any]], up: int = 0) -> dict:
    """Run other probes under :class:`rlaudit.changes.trace.FunctionTrace` and record the functions of the
    subject's source tree each one executed.

    Args:
        probes: One entry per probe: ``label``, ``subsystem`` (whose evidence it is; ``"training"`` for a
            training run), ``probe`` (``"module:function"``) and ``params``.
        up: Directory levels from the subject file's directory up to the root of its source tree (the paths
            recorded are relative to that root, like the change set's).

    Writes ``functions.json``: per label, ``subsystem``, ``probe``, ``functions``
    (``"<path>::<qualname>"`` -> calls), and ``error`` or ``missing`` where the probe could not run.
    Returns the root and, per label, how many functions ran.
    """
    from rlaudit.changes.trace import FunctionTrace

    source = getattr(ctx.subject, "__file__", None)
    if not source:
        return {"root": None, "counts": {}, "why": "the subject is not loaded from a file"}
    root = Path(source).resolve().parent
    for _ in range(int(up)):
        root = root.parent
    out: dict[str, dict[str, Any]] = {}
    for entry in probes:
        label = str(entry["label"])
        row: dict[str, Any] = {
            "subsystem": entry.get("subsystem", ""),
            "probe": entry["probe"],
            "functions": {},
        }
        out[label] = row
        module_name, _, name = str(entry["probe"]).partition(":")
        try:
            fn = getattr(importlib.import_module(module_name), name)
            info = probe_info(fn)
        except (ImportError, AttributeError, TypeError) as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
            continue
        missing = [c for c in info.requires if not ctx.has(c)]
        if missing:
            row["missing"] = missing
            continue
        params = bind_params(fn, dict(entry.get("params") or {}))
        inner = ctx.out / "inner" / label
        inner.mkdir(parents=True, exist_ok=True)
        child = ProbeContext(
            subject=ctx.subject,
            config=copy.deepcopy(ctx.config),
            out=inner,
            spec=ctx.spec,
            capabilities=ctx.capabilities,
            params=params,
        )
        tracer = FunctionTrace([root])
        try:
            with tracer:
                fn(child, **params)
        except Exception as exc:  # a probe that fails still tells which functions it reached
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        row["functions"] = tracer.functions
    ctx.write_json("functions", out)
    return {"root": str(root), "counts": {k: len(v["functions"]) for k, v in out.items()}}
