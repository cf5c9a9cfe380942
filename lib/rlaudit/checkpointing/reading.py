"""Probe-side: read a checkpoint without executing it, and find its pieces (weights, optimizer, normalizer,
step counters, config) whatever the subject called them.

Files are read with :func:`rlaudit.engine.safeload.load_checkpoint_safely` (``torch.load(weights_only=True)``,
safetensors, SB3 zips, npz, allow-listed pickles); a file that needs unpickling arbitrary classes is reported
with the classes it would import and never executed unless the caller passes ``trust=True``.

Tensor keys are flattened with ``/`` between nesting levels (``policy/actor.0.weight``,
``optimizer/state/0/exp_avg``, ``obs_rms/mean``); the plain rest of the file is ``metadata`` in its nesting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SEP = "/"

STEP_NAMES: tuple[str, ...] = (
    "global_step",
    "num_timesteps",
    "timesteps",
    "env_steps",
    "total_steps",
    "agent_step",
    "step",
    "update",
    "updates",
    "iteration",
    "epoch",
)
"""Names of step counters, most specific (environment steps) first."""

CONFIG_NAMES: tuple[str, ...] = ("config", "cfg", "args", "hparams", "hyperparameters", "hyper_parameters")
NORMALIZER_RE = re.compile(r"(obs_?rms|obs_?norm|normali[sz]|running_?mean|vec_?norm|rms)", re.IGNORECASE)
OPTIMIZER_RE = re.compile(r"optim", re.IGNORECASE)


def read(path: str, trust: bool = False) -> Any:
    """The file as a :class:`rlaudit.engine.safeload.SafeCheckpoint` (see the module docstring); plain JSON files
    (``.json``: configs, normalizer statistics) are read here, lists of numbers becoming arrays."""
    from rlaudit.engine.safeload import SafeCheckpoint, load_checkpoint_safely

    if str(path).endswith(".json"):
        tensors: dict[str, Any] = {}
        meta = _split_json(json.loads(Path(path).read_text()), tensors, "")
        return SafeCheckpoint(
            path=str(path),
            format="json",
            tensors=tensors,
            metadata=meta if isinstance(meta, dict) else {"": meta},
        )
    return load_checkpoint_safely(path, trust=trust)


def _split_json(value: Any, tensors: dict[str, Any], prefix: str) -> Any:
    """Move numeric lists (arrays) of a JSON document into ``tensors`` under ``/``-joined keys; return the rest."""
    import numpy as np

    if (
        isinstance(value, list)
        and len(value) > 1
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        tensors[prefix] = np.asarray(value, dtype=np.float64)
        return None
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            rest = _split_json(item, tensors, f"{prefix}{SEP}{key}" if prefix else str(key))
            if rest is not None or item is None:
                out[key] = rest
        return out
    return value


def _walk(meta: Any, prefix: str = "", depth: int = 0, max_depth: int = 3):
    if isinstance(meta, Mapping) and depth <= max_depth:
        for key, value in meta.items():
            path = f"{prefix}{SEP}{key}" if prefix else str(key)
            yield path, key, value, depth
            yield from _walk(value, path, depth + 1, max_depth)


def find_counters(meta: Mapping[str, Any]) -> dict[str, int]:
    """Integer step counters in the metadata by path (``global_step``, ``update``, ``data/num_timesteps``),
    top levels first. Run settings nested deeper (``trainer_state/steps``, the run's target) are left out by
    taking only the two shallowest levels that hold any counter."""
    found: list[tuple[int, str, int]] = []
    for path, key, value, depth in _walk(meta, max_depth=2):
        if str(key).lower() in STEP_NAMES and isinstance(value, int) and not isinstance(value, bool):
            found.append((depth, path, int(value)))
    if not found:
        return {}
    top = min(d for d, _, _ in found)
    return {p: v for d, p, v in sorted(found) if d == top}


def checkpoint_step(meta: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """The most specific step counter (see :data:`STEP_NAMES`): ``(path, value)`` or ``(None, None)``."""
    counters = find_counters(meta)
    for name in STEP_NAMES:
        for path, value in counters.items():
            if path.rsplit(SEP, 1)[-1].lower() == name:
                return path, value
    return None, None


def find_config(meta: Mapping[str, Any]) -> tuple[str | None, Any]:
    """The saved config: ``(path, value)`` with JSON strings parsed; ``(None, None)`` when absent."""
    for path, key, value, _depth in _walk(meta, max_depth=1):
        if str(key).lower() in CONFIG_NAMES and value not in (None, "", {}):
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    pass
            return path, value
    return None, None


def find_optimizer(meta: Mapping[str, Any], tensors: Mapping[str, Any]) -> dict[str, Any] | None:
    """The optimizer state: a metadata dict with ``param_groups`` (torch's format), or tensors under a prefix
    named like ``optim``. Returns ``{"path", "n_state_tensors", "param_groups"}`` or None."""
    for path, _key, value, _depth in _walk(meta, max_depth=3):
        if isinstance(value, Mapping) and "param_groups" in value:
            n = sum(1 for k in tensors if k.startswith(path + SEP))
            return {"path": path, "n_state_tensors": n, "param_groups": len(value.get("param_groups") or [])}
    prefixes = {k.split(SEP, 1)[0] for k in tensors if SEP in k}
    for prefix in sorted(prefixes):
        if OPTIMIZER_RE.search(prefix):
            n = sum(1 for k in tensors if k.startswith(prefix + SEP))
            return {"path": prefix, "n_state_tensors": n, "param_groups": None}
    return None


def find_normalizer(meta: Mapping[str, Any], tensors: Mapping[str, Any]) -> dict[str, Any] | None:
    """Observation-normalizer statistics: a prefix with ``mean`` and ``var`` (or ``std``) tensors, preferring
    names like ``obs_rms``. Returns ``{"path", "mean", "var", "count"}`` (numpy arrays; count may be None)."""
    import numpy as np

    groups: dict[str, set[str]] = {}
    for key in tensors:
        prefix, _, leaf = key.rpartition(SEP)
        groups.setdefault(prefix, set()).add(leaf)
    candidates = [p for p, leaves in groups.items() if "mean" in leaves and ({"var", "std"} & leaves)]
    if not candidates:
        return None
    candidates.sort(key=lambda p: (not NORMALIZER_RE.search(p), len(p)))
    prefix = candidates[0]
    head = f"{prefix}{SEP}" if prefix else ""
    mean = _numpy(tensors[f"{head}mean"])
    if f"{head}var" in tensors:
        var = _numpy(tensors[f"{head}var"])
    else:
        var = _numpy(tensors[f"{head}std"]) ** 2
    count = None
    node: Any = meta
    for part in prefix.split(SEP) if prefix else []:
        node = node.get(part) if isinstance(node, Mapping) else None
    if isinstance(node, Mapping) and isinstance(node.get("count"), int | float):
        count = float(node["count"])
    elif f"{head}count" in tensors:
        count = float(_numpy(tensors[f"{head}count"]).reshape(-1)[0])
    return {
        "path": prefix,
        "mean": np.asarray(mean, dtype=np.float64),
        "var": np.asarray(var, dtype=np.float64),
        "count": count,
    }


def _numpy(value: Any) -> Any:
    import numpy as np

    if hasattr(value, "detach"):
        value = value.detach().cpu().double().numpy()
    return np.asarray(value)


def state_groups(tensors: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Tensors grouped by prefix, keeping only leaves without further nesting (state-dict shaped groups)."""
    groups: dict[str, dict[str, Any]] = {}
    for key, value in tensors.items():
        prefix, _, leaf = key.rpartition(SEP)
        groups.setdefault(prefix, {})[leaf] = value
    return groups


def find_state_dict(
    tensors: Mapping[str, Any], target: Mapping[str, Sequence[int]] | None
) -> tuple[str | None, dict[str, Any]]:
    """The group of tensors that holds the policy's weights.

    Args:
        tensors: The checkpoint's flattened tensors.
        target: The policy's state dict as ``{key: shape}`` (None: pick the largest non-optimizer group).

    Returns:
        ``(prefix, {key: tensor})``; ``(None, {})`` when there is no candidate. Groups are scored by keys
        shared with ``target``, then by shapes shared (a checkpoint whose keys were renamed).
    """
    groups = {
        p: g
        for p, g in state_groups(tensors).items()
        if not OPTIMIZER_RE.search(p) and "state" not in p.split(SEP)
    }
    if not groups:
        return None, {}
    if not target:
        prefix = max(groups, key=lambda p: (len(groups[p]), -len(p)))
        return prefix, groups[prefix]

    def score(group: Mapping[str, Any]) -> tuple[int, int, int]:
        names = sum(1 for k in group if k in target)
        wanted = sorted(tuple(s) for s in target.values())
        have = sorted(tuple(getattr(v, "shape", ())) for v in group.values())
        shapes = _multiset_overlap(wanted, have)
        return names, shapes, -abs(len(group) - len(target))

    prefix = max(groups, key=lambda p: score(groups[p]))
    if score(groups[prefix])[:2] == (0, 0):
        return None, {}
    return prefix, groups[prefix]


def _multiset_overlap(a: Sequence[Any], b: Sequence[Any]) -> int:
    counts: dict[Any, int] = {}
    for x in a:
        counts[x] = counts.get(x, 0) + 1
    n = 0
    for x in b:
        if counts.get(x, 0) > 0:
            counts[x] -= 1
            n += 1
    return n


def match_keys(
    policy_keys: Sequence[str], policy_shapes: Mapping[str, Sequence[int]], saved: Mapping[str, Any]
) -> dict[str, str | None]:
    """Map each policy key to its saved counterpart: the same name, else (for names absent from the
    checkpoint) the next unmatched saved key in order with the same shape (a renamed module).

    Returns:
        ``{policy_key: saved_key or None}``.
    """
    mapping: dict[str, str | None] = {}
    used: set[str] = set()
    for key in policy_keys:
        if key in saved:
            mapping[key] = key
            used.add(key)
    rest_saved = [k for k in saved if k not in used and k not in policy_keys]
    for key in policy_keys:
        if key in mapping:
            continue
        shape = tuple(policy_shapes[key])
        found = next((k for k in rest_saved if tuple(getattr(saved[k], "shape", ())) == shape), None)
        mapping[key] = found
        if found is not None:
            rest_saved.remove(found)
    return mapping


def structure(ckpt: Any) -> dict[str, Any]:
    """A JSON summary of a :class:`~rlaudit.engine.safeload.SafeCheckpoint`: format, tensor groups, pieces, step."""
    tensors = ckpt.tensors
    groups: dict[str, int] = {}
    nbytes = 0
    for key, value in tensors.items():
        top = key.split(SEP, 1)[0] if SEP in key else "(root)"
        groups[top] = groups.get(top, 0) + 1
        nbytes += int(
            getattr(value, "nbytes", 0)
            or (value.numel() * value.element_size() if hasattr(value, "numel") else 0)
        )
    meta = ckpt.metadata if isinstance(ckpt.metadata, Mapping) else {}
    step_path, step = checkpoint_step(meta)
    config_path, config = find_config(meta)
    optimizer = find_optimizer(meta, tensors)
    normalizer = find_normalizer(meta, tensors)
    return {
        "format": ckpt.format,
        "loaded": bool(ckpt.loaded),
        "unsafe_globals": list(ckpt.unsafe_globals),
        "message": ckpt.message,
        "n_tensors": len(tensors),
        "tensor_bytes": nbytes,
        "groups": groups,
        "counters": find_counters(meta),
        "step_key": step_path,
        "step": step,
        "config_key": config_path,
        "config_keys": len(config) if isinstance(config, Mapping) else None,
        "optimizer": optimizer,
        "normalizer": None
        if normalizer is None
        else {"path": normalizer["path"], "dim": int(normalizer["mean"].size), "count": normalizer["count"]},
        "rng_state": any(re.search(r"rng|random", k, re.IGNORECASE) for k in tensors)
        or any(re.search(r"rng|random", p, re.IGNORECASE) for p, *_ in _walk(meta, max_depth=2)),
        "metadata_keys": sorted(str(k) for k in meta),
    }
