"""Checkpointing probes: what a checkpoint holds, what ``load_checkpoint`` restores from it, which checkpoint
the subject picks as its latest.

Run inside the subject's process (the loader under test is the subject's own); numpy and torch are imported
inside the probes. Checkpoint files are read without executing them (:mod:`rlaudit.checkpointing.reading`).
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
from pathlib import Path
from typing import Any

from rlaudit.probe import ProbeContext, probe


def _call_with_run_dir(fn: Any, config: dict, run_dir: str | None) -> Any:
    if run_dir is not None and "run_dir" in inspect.signature(fn).parameters:
        return fn(config, run_dir=run_dir)
    return fn(config)


def _relative(path: str, root: str | None) -> str:
    if root is None:
        return str(path)
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


MAX_TENSOR_VALUES = 1 << 18
"""Elements of the largest tensor whose values ``checkpoint_contents`` keeps (1 MiB as float32)."""
MAX_KEPT_VALUES = 1 << 20
"""Elements kept over all files of one ``checkpoint_contents`` call (4 MiB as float32), newest files first."""


def keep_values(tensors: dict[str, Any], file_index: int, arrays: dict[str, Any], budget: list[int]) -> dict:
    """Put the values of a file's tensors into ``arrays`` (``f<file>_t<n>`` -> float32 array) within the
    budgets (:data:`MAX_TENSOR_VALUES` per tensor, ``budget[0]`` elements left over all files).

    Returns:
        ``{"tensors": [{"key", "array", "shape", "dtype"}], "left_out": [{"key", "shape", "reason"}]}``.
    """
    import numpy as np

    kept: list[dict[str, Any]] = []
    left_out: list[dict[str, Any]] = []
    for n, (key, value) in enumerate(tensors.items()):
        shape = [int(d) for d in getattr(value, "shape", ())]
        size = int(np.prod(shape)) if shape else 1
        reason = ""
        if size > MAX_TENSOR_VALUES:
            reason = f"{size:,} elements, over the {MAX_TENSOR_VALUES:,} kept per tensor"
        elif size > budget[0]:
            reason = f"over the {MAX_KEPT_VALUES:,} elements kept per call"
        if reason:
            left_out.append({"key": key, "shape": shape, "reason": reason})
            continue
        if hasattr(value, "detach"):
            dtype = str(value.dtype).removeprefix("torch.")
            array = value.detach().cpu().float().numpy()
        else:
            dtype = str(np.asarray(value).dtype)
            array = np.asarray(value)
            if array.dtype.kind not in "biuf":
                left_out.append({"key": key, "shape": shape, "reason": f"not numeric ({array.dtype})"})
                continue
            array = array.astype(np.float32)
        name = f"f{file_index}_t{n}"
        arrays[name] = array.reshape(shape)
        budget[0] -= size
        kept.append({"key": key, "array": name, "shape": shape, "dtype": dtype})
    return {"tensors": kept, "left_out": left_out}


@probe(requires=(), version=2)
def checkpoint_contents(ctx: ProbeContext, *, paths: list[str], trust: bool = False) -> dict:
    """Read every checkpoint in ``paths`` safely and describe what it holds.

    Args:
        paths: Checkpoint files (absolute).
        trust: Unpickle objects a file holds (runs code from the file; only for files the user made).

    Writes ``contents.json``: one record per file (``index``, ``name``, format, tensor groups, step counters,
    optimizer/normalizer/config pieces, unsafe globals; see :func:`rlaudit.checkpointing.reading.structure`);
    ``values.npz`` and ``values.json``: the tensors' values (float32) within a size budget (see
    :func:`keep_values`), one ``values.json`` record per file (``index``, ``name``, ``tensors``,
    ``left_out``).
    """
    from rlaudit.checkpointing import reading

    records = []
    arrays: dict[str, Any] = {}
    values: list[dict[str, Any]] = []
    budget = [MAX_KEPT_VALUES]
    for i, path in enumerate(paths):
        ctx.progress(i, len(paths))
        rec: dict[str, Any] = {"index": i, "name": Path(path).name, "bytes": None}
        kept: dict[str, Any] = {"tensors": [], "left_out": []}
        try:
            rec["bytes"] = os.path.getsize(path)
            ckpt = reading.read(path, trust=trust)
            rec.update(reading.structure(ckpt))
            kept = keep_values(ckpt.tensors, i, arrays, budget)
        except Exception as exc:
            rec["error"] = f"{type(exc).__name__}: {exc}"
        records.append(rec)
        values.append({"index": i, "name": rec["name"], **kept})
    ctx.write_json("contents", records)
    ctx.write_npz("values", arrays)
    ctx.write_json("values", values)
    return {"n": len(records), "readable": sum(1 for r in records if r.get("loaded"))}


def extras_normalizer(extras: Any) -> dict[str, Any] | None:
    """``obs_rms`` from load_checkpoint's extras: a dict with mean/var (or std) or an object with them."""
    import numpy as np

    if not isinstance(extras, dict):
        return None
    rms = None
    for key in ("obs_rms", "obs_normalizer", "normalizer", "vecnormalize", "obs_norm"):
        if extras.get(key) is not None:
            rms = extras[key]
            break
    if rms is None:
        return None

    def get(name: str) -> Any:
        if isinstance(rms, dict):
            return rms.get(name)
        return getattr(rms, name, None)

    mean, var, std = get("mean"), get("var"), get("std")
    if mean is None or (var is None and std is None):
        return None

    def to_np(v: Any) -> np.ndarray:
        return np.asarray(v.detach().cpu().double().numpy() if hasattr(v, "detach") else v, dtype=np.float64)

    count = get("count")
    return {
        "mean": to_np(mean),
        "var": to_np(var) if var is not None else to_np(std) ** 2,
        "count": float(count) if isinstance(count, int | float) else None,
    }


@probe(requires=("load_checkpoint",), version=2)
def load_fidelity(
    ctx: ProbeContext,
    *,
    path: str,
    seed: int = 0,
    env_seed: int = 0,
    rollout_steps: int = 2000,
    batch: int = 256,
    trust: bool = False,
) -> dict:
    """Load ``path`` with the subject's ``load_checkpoint`` and compare what it restored with what was saved.

    Per tensor of the loaded policy: ``loaded`` (equal to the saved tensor), ``at-init`` (equal to a fresh
    ``make_policy`` built from the same torch seed, not to the saved one), ``differs``, ``missing`` (no
    saved counterpart), ``shape-mismatch``; saved tensors no policy key took are ``unexpected``. The saved
    weights come from the file itself (read safely), matched by name, then by order and shape (renames).
    Also: the loaded policy's outputs vs the saved weights' outputs on a fixed observation batch (round trip),
    and the normalizer statistics in the returned extras vs those saved in the file.

    Args:
        path: The checkpoint (absolute; may be another subject's, for cross-version loading).
        seed: torch seed set before the loader and before the fresh reference network (the "init" both use).
        env_seed: Seed of the environment and random actions that give the observation batch.
        rollout_steps: Environment steps of that rollout.
        batch: Observations in the batch.
        trust: Let rlaudit unpickle objects in the file (never needed for weights-only checkpoints).

    Writes ``tensors.json`` (columns: key, saved_key, shape, saved_shape, status, diff_saved, diff_init) and
    ``fidelity.json``.
    """
    import numpy as np
    import torch

    from rlaudit.agents.nets import as_tensors, describe_modules, find_heads, n_actions_of, trace_forward
    from rlaudit.checkpointing import reading
    from rlaudit.spaces.rollout import obs_rows

    report: dict[str, Any] = {"path_name": Path(path).name}
    ckpt = reading.read(path, trust=trust)
    report["file"] = {
        "format": ckpt.format,
        "loaded": bool(ckpt.loaded),
        "unsafe_globals": list(ckpt.unsafe_globals),
        "message": ckpt.message,
    }

    # the subject's loader
    policy, extras, loader_error = None, None, None
    torch.manual_seed(int(seed))
    try:
        policy, extras = ctx.subject.load_checkpoint(ctx.config, path)
    except Exception as exc:
        loader_error = f"{type(exc).__name__}: {exc}"
    report["loader_error"] = loader_error

    # a fresh network from the same seed: what "still at its initialization" looks like
    fresh, spaces, obs = None, None, None
    if ctx.has("make_env") and ctx.has("make_policy"):
        from rlaudit.agents.probes import build_policy

        spaces = build_policy(ctx, env_seed, rollout_steps, batch)
        obs = as_tensors(spaces["obs"])
        torch.manual_seed(int(seed))
        fresh = ctx.subject.make_policy(ctx.config, spaces["obs_space"], spaces["act_space"])
        fresh.eval()
    subject_net = policy if policy is not None else fresh
    rows: dict[str, list[Any]] = {
        c: [] for c in ("key", "saved_key", "shape", "saved_shape", "status", "diff_saved", "diff_init")
    }
    counts: dict[str, int] = {}
    saved_prefix = None
    if subject_net is not None and ckpt.loaded:
        state = {k: v.cpu() for k, v in subject_net.state_dict().items() if isinstance(v, torch.Tensor)}
        shapes = {k: list(v.shape) for k, v in state.items()}
        saved_prefix, saved = reading.find_state_dict(ckpt.tensors, shapes)
        mapping = reading.match_keys(list(state), shapes, saved)
        fresh_state = {k: v.cpu() for k, v in fresh.state_dict().items()} if fresh is not None else {}
        for key, value in state.items():
            skey = mapping.get(key)
            saved_t = saved.get(skey) if skey is not None else None
            diff_saved = diff_init = None
            if policy is None:
                status = "not-loaded"  # the loader raised: nothing was restored
            elif saved_t is None:
                status = "missing"
            elif tuple(saved_t.shape) != tuple(value.shape):
                status = "shape-mismatch"
            else:
                diff_saved = float((value.double() - saved_t.double()).abs().max()) if value.numel() else 0.0
                init_t = fresh_state.get(key)
                if init_t is not None and tuple(init_t.shape) == tuple(value.shape) and value.numel():
                    diff_init = float((value.double() - init_t.double()).abs().max())
                if diff_saved == 0.0:
                    status = "loaded"
                elif diff_init == 0.0:
                    status = "at-init"
                else:
                    status = "differs"
            if policy is None and saved_t is not None and tuple(saved_t.shape) != tuple(value.shape):
                status = "shape-mismatch"
            elif policy is None and saved_t is None:
                status = "missing"
            counts[status] = counts.get(status, 0) + 1
            rows["key"].append(key)
            rows["saved_key"].append(skey or "")
            rows["shape"].append("x".join(map(str, value.shape)))
            rows["saved_shape"].append("x".join(map(str, saved_t.shape)) if saved_t is not None else "")
            rows["status"].append(status)
            rows["diff_saved"].append(np.nan if diff_saved is None else diff_saved)
            rows["diff_init"].append(np.nan if diff_init is None else diff_init)
        taken = {v for v in mapping.values() if v is not None}
        for skey, saved_t in saved.items():
            if skey not in taken:
                counts["unexpected"] = counts.get("unexpected", 0) + 1
                rows["key"].append("")
                rows["saved_key"].append(skey)
                rows["shape"].append("")
                rows["saved_shape"].append("x".join(map(str, saved_t.shape)))
                rows["status"].append("unexpected")
                rows["diff_saved"].append(np.nan)
                rows["diff_init"].append(np.nan)
        report["n_policy_tensors"] = len(state)
        report["n_saved_tensors"] = len(saved)
    report["saved_prefix"] = saved_prefix
    report["counts"] = counts

    # round trip: the loaded network vs the saved weights put into a fresh network by rlaudit itself
    round_trip: dict[str, Any] = {"comparable": False}
    if policy is not None and fresh is not None and obs is not None and ckpt.loaded:
        reference_state = {}
        ok = True
        state = fresh.state_dict()
        _, saved = reading.find_state_dict(ckpt.tensors, {k: list(v.shape) for k, v in state.items()})
        mapping = reading.match_keys(list(state), {k: list(v.shape) for k, v in state.items()}, saved)
        for key, value in state.items():
            skey = mapping.get(key)
            if skey is None or tuple(saved[skey].shape) != tuple(value.shape):
                ok = False
                break
            reference_state[key] = saved[skey].to(value.dtype)
        if ok:
            reference = fresh
            reference.load_state_dict(reference_state, strict=True)
            policy.eval()
            records = describe_modules(policy)
            n_actions = n_actions_of(spaces["act_space"])
            t_loaded = trace_forward(policy, obs)
            t_saved = trace_forward(reference, obs)
            heads = find_heads(t_saved, describe_modules(reference), n_actions)
            heads_loaded = find_heads(t_loaded, records, n_actions)
            # the policy and value heads; without them (a TD3 actor's forward gives actions only) what the
            # network outputs, the leaf modules whose output nothing else consumed
            pairs = {role: (heads_loaded.get(role), heads.get(role)) for role in ("policy", "value")}
            pairs = {r: p for r, p in pairs.items() if p[0] and p[1]} or {
                f"output of {path}": (path, path) for path in t_saved.terminal
            }
            diffs = {}
            for name, (a, b) in pairs.items():
                x, y = t_loaded.outputs.get(a), t_saved.outputs.get(b)
                if x is not None and y is not None and tuple(x.shape) == tuple(y.shape):
                    diffs[name] = {
                        "max_abs_diff": float((x.double() - y.double()).abs().max()),
                        "scale": float(y.double().abs().mean()),
                    }
            round_trip = {"comparable": bool(diffs), "heads": diffs, "batch": obs_rows(obs)}
            if not diffs:
                round_trip["reason"] = (
                    "the loaded and saved networks' forward passes share no output of one shape"
                )
        else:
            round_trip["reason"] = (
                "the saved weights do not fit this subject's network (missing keys or shapes)"
            )
    elif policy is None:
        round_trip["reason"] = "load_checkpoint raised"
    elif fresh is None:
        round_trip["reason"] = "the subject has no make_env/make_policy to build a reference network"
    report["round_trip"] = round_trip

    # normalizer: saved in the file vs returned by the loader
    saved_norm = (
        reading.find_normalizer(ckpt.metadata if isinstance(ckpt.metadata, dict) else {}, ckpt.tensors)
        if ckpt.loaded
        else None
    )
    returned = extras_normalizer(extras) if extras is not None else None
    norm: dict[str, Any] = {"saved": saved_norm is not None, "returned": returned is not None}
    if saved_norm is not None:
        norm["saved_count"] = saved_norm["count"]
        norm["saved_mean_abs"] = float(np.abs(saved_norm["mean"]).mean())
        norm["saved_var_mean"] = float(saved_norm["var"].mean())
    if returned is not None:
        norm["returned_count"] = returned["count"]
        norm["returned_mean_abs"] = float(np.abs(returned["mean"]).mean())
        norm["returned_var_mean"] = float(returned["var"].mean())
    if saved_norm is not None and returned is not None:
        if saved_norm["mean"].shape == returned["mean"].shape:
            norm["max_abs_diff_mean"] = float(np.abs(saved_norm["mean"] - returned["mean"]).max())
            norm["max_abs_diff_var"] = float(np.abs(saved_norm["var"] - returned["var"]).max())
            norm["features_differ"] = int(
                np.sum((saved_norm["mean"] != returned["mean"]) | (saved_norm["var"] != returned["var"]))
            )
            norm["dim"] = int(saved_norm["mean"].size)
        else:
            norm["shape_mismatch"] = [list(saved_norm["mean"].shape), list(returned["mean"].shape)]
    report["normalizer"] = norm
    report["extras"] = sorted(str(k) for k in extras) if isinstance(extras, dict) else None
    ctx.write_json("tensors", rows)  # columns; JSON keeps pandas out of the worker
    ctx.write_json("fidelity", report)
    return {
        "counts": counts,
        "loader_error": loader_error,
        "round_trip": round_trip.get("comparable"),
        "normalizer": {k: v for k, v in norm.items() if k in ("saved", "returned", "features_differ")},
    }


_DIGITS = re.compile(r"\d+")


def renamed(name: str, number: int) -> str | None:
    """``name`` with its last run of digits replaced by ``number`` (zero-padded to the same width when the
    original was padded); None when the name has no digits."""
    matches = list(_DIGITS.finditer(name))
    if not matches:
        return None
    m = matches[-1]
    token = m.group(0)
    text = str(number)
    if len(token) > 1 and token.startswith("0"):
        text = text.zfill(len(token))
    return name[: m.start()] + text + name[m.end() :]


def _untestable(checkpoints: Any, run_dir: str | None, picks: list[str]) -> str:
    """Why the digit-boundary test cannot run (``""`` when it can)."""
    if run_dir is None:
        return "no run of the subject's own to rename files in (it has no train())"
    if not picks:
        return "checkpoints() listed no checkpoint"
    if "run_dir" not in inspect.signature(checkpoints).parameters:
        return "checkpoints() takes no run_dir=, so a scratch directory cannot be listed"
    return ""


@probe(requires=("checkpoints",), version=2)
def selection(ctx: ProbeContext, *, run_dir: str | None = None, trust: bool = False) -> dict:
    """Which checkpoint the subject picks as its latest, against the step each file holds.

    Two tests: (1) ``checkpoints(config, run_dir=run_dir)`` on the real run, the first path being the
    subject's "latest", compared with the file whose saved step counter is highest; (2) a digit-boundary
    test: the run's oldest and newest checkpoints copied into a scratch run directory under the same layout,
    renamed so their numbers are 9 and 10 (``model_9.pt``, ``model_10.pt``), with modification times in the
    same order; a subject that sorts names as strings picks the older one.

    Args:
        run_dir: The run directory (absolute; None: the subject's own ``checkpoints(config)``).
        trust: Let rlaudit unpickle objects when reading step counters.

    Writes ``selection.json`` (paths relative to the run directory); ``digit_test.reason`` says why the
    digit test did not run when it did not.
    """
    from rlaudit.checkpointing import reading

    picks = [str(p) for p in _call_with_run_dir(ctx.subject.checkpoints, ctx.config, run_dir)]
    steps: list[int | None] = []
    for p in picks:
        try:
            steps.append(reading.checkpoint_step(reading.read(p, trust=trust).metadata)[1])
        except Exception:
            steps.append(None)
    known = [(s, i) for i, s in enumerate(steps) if s is not None]
    highest = max(known)[1] if known else None
    out: dict[str, Any] = {
        "picks": [_relative(p, run_dir) for p in picks],
        "steps": steps,
        "latest_index": 0 if picks else None,
        "highest_index": highest,
        "latest_is_highest": (highest is not None and picks and steps[0] == steps[highest]),
    }
    digits: dict[str, Any] = {"tested": False, "reason": _untestable(ctx.subject.checkpoints, run_dir, picks)}
    if not digits["reason"]:
        order = sorted(known) if known else [(0, 0)]
        old_i, new_i = order[0][1], order[-1][1]
        old_rel, new_rel = Path(_relative(picks[old_i], run_dir)), Path(_relative(picks[new_i], run_dir))
        if old_rel.is_absolute():
            digits["reason"] = "the checkpoints lie outside the run directory"
        elif not (renamed(old_rel.name, 9) and renamed(new_rel.name, 10)):
            digits["reason"] = f"the file names ({old_rel.name}) hold no number to rename"
        else:
            scratch = ctx.path("digit_test/run")
            scratch.mkdir(parents=True, exist_ok=True)
            older = scratch / old_rel.parent / renamed(old_rel.name, 9)
            newer = scratch / new_rel.parent / renamed(new_rel.name, 10)
            for src, dst, mtime in (
                (picks[old_i], older, 1_600_000_000),
                (picks[new_i], newer, 1_600_000_100),
            ):
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                os.utime(dst, (mtime, mtime))
            got = [str(p) for p in _call_with_run_dir(ctx.subject.checkpoints, ctx.config, str(scratch))]
            first = _relative(got[0], str(scratch)) if got else None
            digits = {
                "tested": True,
                "older": str(older.relative_to(scratch)),
                "newer": str(newer.relative_to(scratch)),
                "picked": first,
                "order": [_relative(g, str(scratch)) for g in got],
                "correct": first == str(newer.relative_to(scratch)),
                "same_file_twice": old_i == new_i,
            }
            shutil.rmtree(ctx.out / "digit_test", ignore_errors=True)  # the copies are not evidence
    out["digit_test"] = digits
    ctx.write_json("selection", out)
    return {"latest_is_highest": out["latest_is_highest"], "digit_test": digits.get("correct")}


@probe(requires=("checkpoints",), version=1)
def existing_checkpoints(ctx: ProbeContext) -> dict:
    """The checkpoints a subject already has: ``checkpoints(config)`` (absolute paths, outside the cache)."""
    paths = [str(Path(p).resolve()) for p in ctx.subject.checkpoints(ctx.config)]
    return {"paths": paths}


@probe(requires=(), version=1)
def capabilities(ctx: ProbeContext) -> dict:
    """The subject's capabilities as its worker sees them (a cheap, cached way to ask before planning runs)."""
    return {"capabilities": sorted(ctx.capabilities)}
