"""Spaces probes: the observation and action spaces, observation statistics from seeded random rollouts, what
the network's first layer receives on the training and evaluation paths, and what the input costs.

Run inside the subject's process; numpy at module level, torch inside the probes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlaudit.probe import ProbeContext, probe

INPUT_SAMPLE_VALUES = 2**18
"""Budget of first-layer input values :func:`network_input` keeps per path (1 MiB of float32): every row
for a small observation, fewer for a wide one, none when fewer than :data:`MIN_INPUT_ROWS` rows fit."""
MIN_INPUT_ROWS = 16


@probe(requires=("make_env",), version=2)
def observations(
    ctx: ProbeContext, *, env_seed: int = 0, rollout_steps: int = 2000, keep_rows: int = 1024
) -> dict:
    """Both spaces described, and per-feature statistics of raw observations from a random-policy rollout.

    Args:
        env_seed: ``env.reset(seed=env_seed)``; the actions come from ``default_rng(env_seed + 1)``, so
            subjects with equal action spaces play the same action sequence.
        rollout_steps: Environment steps in total.
        keep_rows: Observation rows kept (evenly spaced) for figures.

    Writes ``spaces.json`` (observation/action space descriptions, num_envs, dtype, bytes per observation)
    and ``moments.npz`` (per feature: mean, var (ddof=1), min, max; n; ``rows`` the kept observations; and,
    when the observation space declares bounds of the observation's shape, ``low``, ``high`` and ``outside``:
    how many observations left them, per feature).
    """
    from rlaudit.agents.probes import build_policy
    from rlaudit.spaces.rollout import describe_row, describe_space, feature_moments, flat_rows, obs_rows

    data = build_policy(ctx, env_seed, rollout_steps, keep_rows)
    obs_space, act_space, rollout = data["obs_space"], data["act_space"], data["rollout"]
    obs = rollout["obs"]
    one = describe_row(obs)  # a Dict or Tuple observation: its arrays side by side, in key order
    info = {
        "observation_space": describe_space(obs_space),
        "action_space": describe_space(act_space),
        "num_envs": rollout["num_envs"],
        "obs_dtype": one["dtype"],
        "obs_shape": one["shape"],
        "obs_bytes": one["nbytes"],
        "obs_bytes_per_vector_step": one["nbytes"] * int(rollout["num_envs"]),
        "samples": obs_rows(obs),
        "episodes_ended": int(rollout["episodes"]),
    }
    moments = feature_moments(flat_rows(obs))
    moments["rows"] = flat_rows(data["obs"])
    moments.update(declared_bounds(obs_space, obs))
    ctx.write_json("spaces", info)
    ctx.write_npz("moments", moments)
    return {"obs_size": int(np.prod(one["shape"])), "num_envs": rollout["num_envs"], "samples": obs_rows(obs)}


def declared_bounds(space: Any, obs: np.ndarray) -> dict[str, np.ndarray]:
    """The space's per-feature bounds and how many observations left them, flattened like the moments.

    Args:
        space: The single-environment observation space.
        obs: (M, *shape) observations.

    Returns:
        ``low``, ``high`` (D,) float64 and ``outside`` (D,) int64 (observations below ``low`` or above
        ``high``, with a relative tolerance of 1e-6 for float rounding); empty when the space declares no
        bounds of the observation's shape (a Discrete, Dict or Tuple space).
    """
    low, high = getattr(space, "low", None), getattr(space, "high", None)
    if low is None or high is None:
        return {}
    flat = np.asarray(obs, dtype=np.float64).reshape(len(obs), -1)
    try:
        lo = np.broadcast_to(np.asarray(low, dtype=np.float64), obs.shape[1:]).reshape(-1)
        hi = np.broadcast_to(np.asarray(high, dtype=np.float64), obs.shape[1:]).reshape(-1)
    except (TypeError, ValueError):
        return {}
    if lo.size != flat.shape[1]:
        return {}
    with np.errstate(invalid="ignore"):
        below = flat < lo - 1e-6 * np.maximum(1.0, np.abs(np.nan_to_num(lo)))
        above = flat > hi + 1e-6 * np.maximum(1.0, np.abs(np.nan_to_num(hi)))
    return {"low": lo, "high": hi, "outside": (below | above).sum(axis=0).astype(np.int64)}


def _count(value: float | None) -> str:
    """A normalizer's sample count for text: ``8,256`` or ``0.0001`` (a pseudo-count: never updated)."""
    if value is None:
        return "unknown"
    return f"{value:,.0f}" if value >= 10 else f"{value:.4g}"


def normalize(x: np.ndarray, mean: np.ndarray, var: np.ndarray, clip: float) -> np.ndarray:
    """``clip((x - mean) / sqrt(var + 1e-8), -clip, clip)`` as float32 (SB3 VecNormalize's convention).

    Args:
        x: (B, D) observations; mean, var: (D,).
    """
    out = (np.asarray(x, dtype=np.float64) - mean) / np.sqrt(var + 1e-8)
    return np.clip(out, -clip, clip).astype(np.float32)


def input_sample(values: np.ndarray) -> np.ndarray | None:
    """The first rows of ``values`` (rows, features) that fit :data:`INPUT_SAMPLE_VALUES`, as float32; None
    when fewer than :data:`MIN_INPUT_ROWS` fit (too wide an input to sample)."""
    keep = min(len(values), INPUT_SAMPLE_VALUES // max(1, values.shape[1]))
    return values[:keep].astype(np.float32) if keep >= MIN_INPUT_ROWS else None


def first_layer_inputs(policy: Any, obs: Any) -> dict[str, np.ndarray]:
    """What the input layers of ``policy`` receive for ``obs``, captured by forward pre-hooks.

    Returns:
        ``{module path: (B, D) float64 array}`` for each module that consumed the observation.
    """
    import torch

    from rlaudit.agents.nets import call_policy, trace_forward

    consumers = trace_forward(policy, obs, keep_tensors=False).input_layers()
    modules = dict(policy.named_modules())
    seen: dict[str, np.ndarray] = {}
    handles = []

    def make(path: str) -> Any:
        def pre_hook(_mod: Any, args: tuple[Any, ...]) -> None:
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            if first is not None and path not in seen:
                seen[path] = first.detach().double().reshape(first.shape[0], -1).cpu().numpy()

        return pre_hook

    try:
        for path in dict.fromkeys(consumers):
            handles.append(modules[path].register_forward_pre_hook(make(path)))
        with torch.no_grad():
            call_policy(policy, obs)
    finally:
        for h in handles:
            h.remove()
    return seen


@probe(requires=("make_env", "load_checkpoint"), version=4)
def network_input(
    ctx: ProbeContext,
    *,
    path: str,
    env_seed: int = 0,
    rollout_steps: int = 2000,
    batch: int = 1024,
    clip: float = 10.0,
    trust: bool = False,
) -> dict:
    """The first layer's input statistics of a trained policy on three paths, within this subject.

    - ``training``: observations normalized with the statistics saved in the checkpoint file (what the
      trainer fed the network while it learned; raw observations when the file holds no normalizer);
    - ``evaluation``: normalized with the ``obs_rms`` that ``load_checkpoint`` returns in its extras (what an
      evaluation or a resumed run built from the loader would feed); raw when the extras hold none;
    - ``raw``: the environment's observations as they are.

    Args:
        path: A checkpoint of this subject (absolute).
        env_seed: Seed of the environment and the random actions.
        rollout_steps: Environment steps of the random-policy rollout.
        batch: Observations fed per path.
        clip: Clip of normalized observations (SB3 VecNormalize's default 10).
        trust: Let rlaudit unpickle objects in the file.

    Writes ``inputs.npz`` (``<path>|mean``, ``<path>|std`` per feature, and ``<path>|rows``: the first
    inputs themselves, (rows, features) float32, as many rows as :data:`INPUT_SAMPLE_VALUES` allows) and
    ``inputs.json``.
    """
    import torch

    from rlaudit.agents.nets import as_tensors
    from rlaudit.agents.probes import build_policy
    from rlaudit.checkpointing import reading
    from rlaudit.checkpointing.probes import extras_normalizer
    from rlaudit.devices import module_device, to_device
    from rlaudit.spaces.rollout import flat_rows

    data = build_policy(ctx, env_seed, rollout_steps, batch)
    # a Dict or Tuple observation goes to the network as the environment returns it, on every path: rlaudit
    # normalizes only array observations (a normalizer's statistics are per feature of one array)
    tree = not isinstance(data["obs"], np.ndarray)
    raw = flat_rows(data["obs"]).astype(np.float64)
    policy, extras = ctx.subject.load_checkpoint(ctx.config, path)
    policy.eval()
    ckpt = reading.read(path, trust=trust)
    saved = reading.find_normalizer(ckpt.metadata if isinstance(ckpt.metadata, dict) else {}, ckpt.tensors)
    returned = extras_normalizer(extras)
    feeds: dict[str, np.ndarray] = {"raw": raw.astype(np.float32)}
    notes: dict[str, str] = {}
    if saved is not None and saved["mean"].size == raw.shape[1] and not tree:
        feeds["training"] = normalize(raw, saved["mean"], saved["var"], clip)
        notes["training"] = f"normalized with the file's {saved['path']} (count {_count(saved['count'])})"
    else:
        feeds["training"] = raw.astype(np.float32)
        notes["training"] = "raw: the checkpoint holds no normalizer statistics"
    if returned is not None and returned["mean"].size == raw.shape[1] and not tree:
        feeds["evaluation"] = normalize(raw, returned["mean"], returned["var"], clip)
        notes["evaluation"] = (
            f"normalized with load_checkpoint's extras obs_rms (count {_count(returned['count'])})"
        )
    else:
        feeds["evaluation"] = raw.astype(np.float32)
        notes["evaluation"] = "raw: load_checkpoint returns no normalizer statistics"
    shape = raw.shape[1:] if tree else data["obs"].shape[1:]
    arrays: dict[str, np.ndarray] = {}
    summary: dict[str, Any] = {}
    for name, x in feeds.items():
        fed = (
            as_tensors(data["obs"], module_device(policy))
            if tree
            else to_device(x.reshape(len(x), *shape), module_device(policy), torch.float32)
        )
        seen = first_layer_inputs(policy, fed)
        if not seen:
            continue
        layer, values = next(iter(seen.items()))
        arrays[f"{name}|mean"] = values.mean(axis=0)
        arrays[f"{name}|std"] = values.std(axis=0)
        kept = input_sample(values)
        if kept is not None:
            arrays[f"{name}|rows"] = kept
        summary[name] = {
            "layer": layer,
            "mean": float(values.mean()),
            "std": float(values.std()),
            "abs_max": float(np.abs(values).max()),
            "clipped_fraction": float(np.mean(np.abs(values) >= clip * (1 - 1e-6))),
            "note": notes.get(name, ""),
        }
    ctx.write_npz("inputs", arrays)
    ctx.write_json("inputs", {"paths": summary, "n": len(raw), "features": int(raw.shape[1]), "clip": clip})
    return {"paths": sorted(summary)}


def _repeat_to(x: Any, rows: int) -> Any:
    """A (B, ...) tensor repeated along its first axis to at least ``rows`` rows, then cut to ``rows``; as it
    is when it already has them."""
    if len(x) >= rows:
        return x
    return x.repeat((rows + len(x) - 1) // len(x), *([1] * (x.dim() - 1)))[:rows]


def first_layer_flops(
    records: list[dict[str, Any]], calls: list[dict[str, Any]], consumers: list[str]
) -> int:
    """Multiply-adds x 2 per observation in the modules that consume the observation (Linear: 2 * in * out;
    convolutions: 2 * weight elements * output positions)."""
    by_path = {r["path"]: r for r in records}
    out_shape = {c["path"]: c["out_shape"] for c in calls}
    total = 0
    for path in dict.fromkeys(consumers):
        rec = by_path.get(path)
        w = (rec or {}).get("params", {}).get("weight")
        if not w:
            continue
        weight_elems = int(np.prod(w))
        if len(w) == 2:
            total += 2 * weight_elems
        else:
            spatial = out_shape.get(path, [])[2:]
            total += 2 * weight_elems * int(np.prod(spatial)) if spatial else 2 * weight_elems
    return int(total)


@probe(requires=("make_env", "make_policy"), version=3)
def forward_timing(
    ctx: ProbeContext,
    *,
    round: int = 0,
    pair: str = "",
    batch: int = 64,
    blocks: int = 20,
    calls: int = 10,
    env_seed: int = 0,
    rollout_steps: int = 512,
) -> dict:
    """Time the network's forward pass on a batch of real observations (one round of a side-by-side A/B).

    The time is this process's CPU time (:class:`rlaudit.env.rollout.Clock`; for a network on a GPU, wall time
    up to a ``torch.cuda.synchronize``), in ``blocks`` blocks of ``calls`` forward calls, each followed by the
    fixed calibration workload
    (:func:`rlaudit.env.rollout.calibration_workload`): a block's cost in calibration units does not depend on
    how busy the machine was, so rounds measured at different moments compare.

    Args:
        round: Which round of the side-by-side measurement (part of the cache key only).
        pair: Identifies the (baseline, candidate) pair being measured (cache key only), so rounds cached for
            one pair are never compared with rounds measured for another pair.
        batch: Observations per forward call (the subject's number of environments is a natural choice).
        blocks: Timed blocks after 5 warm-up calls.
        calls: Forward calls per block.
        env_seed: Seed of the environment and random actions.
        rollout_steps: Steps of the rollout that gives the batch.

    Returns:
        ``block_s`` and ``calib_s`` (per block: CPU seconds of its calls, of the calibration beside it),
        ``per_call_s`` (median CPU seconds per call), ``first_layer_flops`` (per observation), ``obs_bytes``
        (one observation as the env returns it), ``input_bytes`` (as the network receives it, float32),
        ``obs_dtype``, ``param_dtype``, ``n_params``, ``batch``, ``calls``, ``torch_threads``.
    """
    import torch

    from rlaudit.agents.nets import as_tensors, call_policy, describe_modules, trace_forward
    from rlaudit.agents.probes import build_policy
    from rlaudit.devices import is_cuda, module_device, synchronize
    from rlaudit.env.rollout import Clock, calibration_workload
    from rlaudit.spaces.rollout import describe_row, map_leaves

    data = build_policy(ctx, env_seed, rollout_steps, batch)
    torch.manual_seed(0)
    policy = ctx.subject.make_policy(ctx.config, data["obs_space"], data["act_space"])
    policy.eval()
    raw_one = describe_row(data["rollout"]["obs"])
    device = module_device(policy)
    obs = map_leaves(lambda x: _repeat_to(x, batch), as_tensors(data["obs"], device))
    trace = trace_forward(policy, obs, keep_tensors=False)
    records = describe_modules(policy)
    flops = first_layer_flops(records, trace.calls, trace.input_layers())
    # a GPU runs the calls asynchronously: wall time up to a synchronize, not this process's CPU time
    clock = Clock("wall" if is_cuda(device) else "cpu")
    block_s, calib_s = [], []
    with torch.no_grad():
        for _ in range(5):
            call_policy(policy, obs)
        calibration_workload(clock)  # its first call builds its data
        for _ in range(int(blocks)):
            t0 = clock.now()
            for _ in range(int(calls)):
                call_policy(policy, obs)
            synchronize(device)
            block_s.append(clock.now() - t0)
            calib_s.append(calibration_workload(clock))
    param = next(policy.parameters(), None)
    return {
        "block_s": [float(t) for t in block_s],
        "calib_s": [float(t) for t in calib_s],
        "per_call_s": float(np.median(block_s)) / max(1, int(calls)),
        "first_layer_flops": flops,
        "obs_bytes": raw_one["nbytes"],
        "input_bytes": int(np.prod(raw_one["shape"])) * 4,
        "obs_dtype": raw_one["dtype"],
        "param_dtype": str(param.dtype).replace("torch.", "") if param is not None else None,
        "n_params": int(sum(p.numel() for p in policy.parameters())),
        "batch": int(batch),
        "calls": int(calls),
        "torch_threads": int(torch.get_num_threads()),
    }
