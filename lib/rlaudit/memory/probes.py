"""Memory probes: resident memory over a long rollout, where allocations grow, and the buffers a config implies.

Runs inside the subject's process; imports only numpy, the standard library and light rlaudit modules.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import os
import sys
import tracemalloc
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rlaudit.env.rollout import (
    NUM_ENVS_KEYS,
    NUM_STEPS_KEYS,
    Policy,
    VecView,
    describe_space,
    find_key,
    flat_obs,
    get_path,
)
from rlaudit.probe import ProbeContext, probe
from rlaudit.recorder import rss_bytes

_RLAUDIT_DIR = str(Path(__file__).resolve().parents[1])  # .../rlaudit
MAX_WALK_OBJECTS = 20_000  # objects visited per container walk
TOP_SITES = 200  # allocation sites kept per snapshot (largest first)
TOP_TYPES = 60  # object types kept per snapshot (most numerous first)


def subject_root(subject: Any) -> str:
    """The directory of the subject's own code: its module's folder (``rlaudit/demo`` for built-ins)."""
    module = subject if inspect.ismodule(subject) else sys.modules.get(type(subject).__module__)
    file = getattr(module, "__file__", None)
    return str(Path(file).resolve().parent) if file else ""


def _is_apparatus(filename: str, root: str) -> bool:
    """rlaudit's own files (the probe machinery), unless they are the subject's code (the built-ins)."""
    path = os.path.abspath(filename)
    if root and path.startswith(root + os.sep):
        return False
    return path.startswith(_RLAUDIT_DIR + os.sep) or filename.startswith("<")


def _play(view: VecView, policy: Policy, steps: int, state: dict[str, Any]) -> None:
    """Advance a rollout by ``steps`` vector steps, counting finished episodes in ``state["episodes"]``."""
    for _ in range(steps):
        res = view.step(policy.act(state.get("last")))
        state["last"] = res.reward
        state["episodes"] += int(np.count_nonzero(res.terminated | res.truncated))
        state["steps"] += 1


@contextlib.contextmanager
def _frozen_heap() -> Iterator[bool]:
    """Move every object alive now into the collector's permanent generation for the block.

    A full ``gc.collect()`` before each memory sample scans the whole heap: with torch and a trainer loaded,
    200,000 objects or more, half the CPU time of a rollout probe (profiled on the built-in and SB3 pairs).
    Objects that existed before the rollout are not what it measures, so frozen they are left out of each
    collection, which then costs what the rollout allocated. A subject that froze objects itself is left as
    it is. Yields whether it froze.
    """
    if gc.get_freeze_count():
        yield False
        return
    gc.collect()
    gc.freeze()
    try:
        yield True
    finally:
        gc.unfreeze()


def _checkpoints(steps: int, snapshots: int) -> list[int]:
    points = np.unique(np.linspace(0, steps, snapshots + 1).round().astype(int))
    return [int(p) for p in points]


@probe(requires=("config", "make_env"), version=1)
def rss_rollout(ctx: ProbeContext, *, seed: int = 0, steps: int = 400, samples: int = 12) -> dict:
    """Resident memory of this process over a long random-policy rollout (after a collection each sample).

    Writes:
        ``rss`` table: ``vector_step``, ``env_steps``, ``episodes``, ``rss_bytes``.
    """
    env = ctx.subject.make_env(ctx.config, seed)
    try:
        view = VecView(env)
        view.reset(seed=seed)
        policy = Policy("random", view.single_action_space, view.num_envs, seed)
        state: dict[str, Any] = {"episodes": 0, "steps": 0}
        rows: dict[str, list[int]] = {"vector_step": [], "env_steps": [], "episodes": [], "rss_bytes": []}
        points = _checkpoints(steps, samples)
        with _frozen_heap():
            for i, point in enumerate(points):
                _play(view, policy, point - state["steps"], state)
                gc.collect()
                rows["vector_step"].append(state["steps"])
                rows["env_steps"].append(state["steps"] * view.num_envs)
                rows["episodes"].append(state["episodes"])
                rows["rss_bytes"].append(rss_bytes())
                ctx.progress(i + 1, len(points))
        num_envs = view.num_envs
    finally:
        getattr(env, "close", lambda: None)()
    ctx.write_table("rss", {k: np.asarray(v, dtype=np.int64) for k, v in rows.items()})
    return {"num_envs": num_envs, "episodes": rows["episodes"][-1]}


def container_sizes(root: Any, name: str = "env", max_depth: int = 5) -> dict[str, int]:
    """Sizes of the containers reachable from ``root`` through attributes, dict values and list items.

    Returns:
        ``{path: size}``: ``len()`` of dicts, lists, sets, deques and tuples (``env.curriculum._labels``) and
        ``nbytes`` of numpy arrays (``env._table#bytes``). Each object is visited once (by its first path);
        the walk stops at ``max_depth`` and :data:`MAX_WALK_OBJECTS`.
    """
    out: dict[str, int] = {}
    seen: set[int] = set()
    stack: list[tuple[Any, str, int]] = [(root, name, 0)]
    visited = 0
    while stack and visited < MAX_WALK_OBJECTS:
        obj, path, depth = stack.pop()
        if id(obj) in seen or inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj):
            continue
        seen.add(id(obj))
        visited += 1
        if isinstance(obj, np.ndarray):
            out[f"{path}#bytes"] = int(obj.nbytes)
            continue
        if isinstance(obj, str | bytes | int | float | bool | complex) or obj is None:
            continue
        children: Iterator[tuple[str, Any]]
        if isinstance(obj, Mapping):
            out[path] = len(obj)
            items = list(obj.items())[:64]  # a sample of a big dict's values: its size is what matters
            children = ((f"{path}[{k!r}]"[:160], v) for k, v in items)
        elif isinstance(obj, list | tuple | set | frozenset | deque):
            out[path] = len(obj)
            children = ((f"{path}[{i}]", v) for i, v in enumerate(list(obj)[:16]))
        else:
            attrs = getattr(obj, "__dict__", None)
            slots = [s for c in type(obj).__mro__ for s in getattr(c, "__slots__", ()) if isinstance(s, str)]
            pairs = list(attrs.items()) if isinstance(attrs, dict) else []
            pairs += [(s, getattr(obj, s)) for s in slots if hasattr(obj, s)]
            children = ((f"{path}.{k}", v) for k, v in pairs)
        if depth < max_depth:
            for child_path, child in children:
                stack.append((child, child_path, depth + 1))
    return out


@probe(requires=("config", "make_env"), version=2)
def growth_sites(ctx: ProbeContext, *, seed: int = 0, steps: int = 400, snapshots: int = 6) -> dict:
    """Where memory grows over a random-policy rollout: tracemalloc sites, object types, containers.

    At each of ``snapshots + 1`` points (after a garbage collection): the traced size and count of blocks
    per allocation site (file, line) outside rlaudit's own probe machinery, the number of live objects per
    type (``gc.get_objects``), and the sizes of the containers reachable from the environment object.

    Writes:
        ``sites`` table: ``snapshot``, ``file`` (relative to the subject's directory when inside it),
        ``line``, ``code`` (the source line), ``subject`` (inside the subject's code), ``size``, ``count``;
        ``types`` table: ``snapshot``, ``type``, ``count``; ``containers`` table: ``snapshot``, ``path``,
        ``size``; ``points`` table: ``snapshot``, ``vector_step``, ``env_steps``, ``episodes``,
        ``traced_bytes``.
    """
    import linecache

    root = subject_root(ctx.subject)
    env = ctx.subject.make_env(ctx.config, seed)
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start(1)
    # Each snapshot's rows become numpy arrays at once: a few objects per snapshot, the same on both sides,
    # so the probe's own bookkeeping does not show up in the object counts it takes.
    chunks: dict[str, list[dict[str, np.ndarray]]] = {
        "sites": [],
        "types": [],
        "containers": [],
        "points": [],
    }
    state: dict[str, Any] = {"episodes": 0, "steps": 0}
    marks = _checkpoints(steps, snapshots)
    frozen = _frozen_heap()
    refreeze = frozen.__enter__()
    try:
        view = VecView(env)
        view.reset(seed=seed)
        policy = Policy("random", view.single_action_space, view.num_envs, seed)
        for i, mark in enumerate(marks):
            _play(view, policy, mark - state["steps"], state)
            gc.collect()  # the rollout's garbage only: what existed before is frozen (_frozen_heap)
            # Live objects by type first: the snapshot below creates Trace objects of its own. Every object
            # counts, the frozen ones too, and they are frozen again (with what the rollout added) after.
            if refreeze:
                gc.unfreeze()
            by_type = Counter(map(type, gc.get_objects()))
            if refreeze:
                gc.freeze()
            counts: Counter[str] = Counter()
            for cls, n in by_type.items():
                counts[cls.__name__] += n
            del by_type
            top = counts.most_common(TOP_TYPES)
            chunks["types"].append(
                {
                    "snapshot": np.full(len(top), i),
                    "type": np.asarray([t for t, _ in top], dtype=str),
                    "count": np.asarray([n for _, n in top], dtype=np.int64),
                }
            )
            del counts, top
            snap = tracemalloc.take_snapshot()
            stats = snap.statistics("lineno")
            kept = [s for s in stats if not _is_apparatus(s.traceback[0].filename, root)][:TOP_SITES]
            del snap, stats
            files, lines, codes, inside, sizes, nblocks = [], [], [], [], [], []
            for st in kept:
                frame = st.traceback[0]
                path = os.path.abspath(frame.filename)
                ours = bool(root) and path.startswith(root + os.sep)
                files.append(os.path.relpath(path, root) if ours else _short(path))
                lines.append(int(frame.lineno))
                codes.append(linecache.getline(frame.filename, frame.lineno).strip()[:120])
                inside.append(ours)
                sizes.append(int(st.size))
                nblocks.append(int(st.count))
            chunks["sites"].append(
                {
                    "snapshot": np.full(len(kept), i),
                    "file": np.asarray(files, dtype=str),
                    "line": np.asarray(lines, dtype=np.int64),
                    "code": np.asarray(codes, dtype=str),
                    "subject": np.asarray(inside, dtype=bool),
                    "size": np.asarray(sizes, dtype=np.int64),
                    "count": np.asarray(nblocks, dtype=np.int64),
                }
            )
            del kept, files, lines, codes, inside, sizes, nblocks
            found = container_sizes(env)
            chunks["containers"].append(
                {
                    "snapshot": np.full(len(found), i),
                    "path": np.asarray(list(found), dtype=str),
                    "size": np.asarray(list(found.values()), dtype=np.int64),
                }
            )
            del found
            chunks["points"].append(
                {
                    "snapshot": np.asarray([i]),
                    "vector_step": np.asarray([state["steps"]]),
                    "env_steps": np.asarray([state["steps"] * view.num_envs]),
                    "episodes": np.asarray([state["episodes"]]),
                    "traced_bytes": np.asarray([tracemalloc.get_traced_memory()[0]]),
                }
            )
            ctx.progress(i + 1, len(marks))
    finally:
        frozen.__exit__(None, None, None)
        if not was_tracing:
            tracemalloc.stop()
        getattr(env, "close", lambda: None)()
    for name, parts in chunks.items():
        ctx.write_table(name, {k: np.concatenate([p[k] for p in parts]) for k in parts[0]})
    return {
        "subject_root": Path(root).name if root else "",
        "episodes": state["episodes"],
        "snapshots": len(marks),
    }


def _short(path: str) -> str:
    """The last three components of a path outside the subject (``numpy/core/numeric.py``)."""
    parts = Path(path).parts
    return str(Path(*parts[-3:])) if len(parts) >= 3 else path


@probe(requires=("config", "make_env"), version=1)
def buffer_sizes(ctx: ProbeContext, *, seed: int = 0) -> dict:
    """The rollout buffers the config implies: ``num_envs x num_steps x`` observation size, and the rest.

    ``num_envs``/``num_steps`` come from the first config keys named like them (``num_envs`` also from the
    environment ``make_env`` builds, which wins when they disagree); the observation size from the env.

    Returns:
        ``num_envs`` (config and built), ``num_steps``, ``obs_size``, ``obs_dtype_bytes``, and ``buffers``:
        name -> bytes for observations (float32, as trainers store them), actions, log-probabilities,
        rewards, dones and values.
    """
    key_envs = find_key(ctx.config, NUM_ENVS_KEYS)
    key_steps = find_key(ctx.config, NUM_STEPS_KEYS)
    env = ctx.subject.make_env(ctx.config, seed)
    try:
        view = VecView(env)
        obs = flat_obs(view.reset(seed=seed), view.num_envs)
        built = view.num_envs
        obs_space = describe_space(view.single_observation_space)
        act_space = describe_space(view.single_action_space)
    finally:
        getattr(env, "close", lambda: None)()
    cfg_envs = int(get_path(ctx.config, key_envs)) if key_envs else None
    num_steps = int(get_path(ctx.config, key_steps)) if key_steps else None
    obs_size = int(obs.shape[1])
    act_size = int(np.prod(act_space["shape"])) if act_space.get("shape") else 1
    result: dict[str, Any] = {
        "num_envs_key": key_envs,
        "num_steps_key": key_steps,
        "num_envs_config": cfg_envs,
        "num_envs_built": built,
        "num_steps": num_steps,
        "obs_size": obs_size,
        "observation_space": obs_space,
        "buffers": {},
    }
    if num_steps:
        cells = built * num_steps
        result["buffers"] = {
            "observations (float32)": cells * obs_size * 4,
            "actions": cells * act_size * 8,
            "log-probabilities": cells * 4,
            "rewards": cells * 4,
            "dones": cells * 4,
            "values": cells * 4,
        }
    return result
