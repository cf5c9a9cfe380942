"""Init probes: every parameter of freshly built networks over several seeds, and the policy at init.

Runs inside the subject's process; imports numpy at module level, torch inside the probe.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rlaudit.probe import ProbeContext, probe


def param_stats(values: np.ndarray) -> dict[str, float]:
    """Summary of one parameter tensor: mean, std, min, max, fraction of exact zeros, excess-free kurtosis,
    L2 norm. ``values`` is any shape; statistics are over all entries (float64)."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    std = float(v.std())
    if std > 0:
        kurt = float(np.mean(((v - v.mean()) / std) ** 4))
    else:
        kurt = float("nan")
    return {
        "mean": float(v.mean()),
        "std": std,
        "min": float(v.min()),
        "max": float(v.max()),
        "frac_zero": float(np.mean(v == 0.0)),
        "kurtosis": kurt,
        "norm": float(np.sqrt(np.sum(v**2))),
    }


def fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """``(fan_in, fan_out)`` as ``torch.nn.init`` computes them: (out, in, *kernel) weights."""
    if len(shape) < 2:
        return int(shape[0]) if shape else 1, int(shape[0]) if shape else 1
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return int(shape[1]) * receptive, int(shape[0]) * receptive


def head_outputs(
    logits: np.ndarray | None, values: np.ndarray | None, n_actions: int | None
) -> dict[str, Any]:
    """The policy at init from its head outputs.

    Args:
        logits: (B, A) policy-head outputs (unnormalized log-probabilities), or None.
        values: (B,) or (B, 1) value-head outputs, or None.
        n_actions: A (for the maximum entropy ``log A``).

    Returns:
        ``entropy`` (mean over the batch, nats), ``entropy_ratio`` (entropy / log A), ``logit_std`` (std of
        the logits over actions, averaged over the batch), ``logit_absmax``, ``value_mean``, ``value_std``;
        None where a head is missing.
    """
    out: dict[str, Any] = dict.fromkeys(
        ("entropy", "entropy_ratio", "logit_std", "logit_absmax", "value_mean", "value_std")
    )
    if logits is not None and n_actions and n_actions > 1:
        z = np.asarray(logits, dtype=np.float64).reshape(len(logits), -1)
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        ent = -(np.exp(logp) * logp).sum(axis=1)
        out["entropy"] = float(ent.mean())
        out["entropy_ratio"] = float(ent.mean() / math.log(n_actions))
        raw = np.asarray(logits, dtype=np.float64).reshape(len(logits), -1)
        out["logit_std"] = float(raw.std(axis=1).mean())
        out["logit_absmax"] = float(np.abs(raw).max())
    if values is not None:
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        out["value_mean"] = float(v.mean())
        out["value_std"] = float(v.std())
    return out


@probe(requires=("make_env", "make_policy"), version=1)
def init_stats(
    ctx: ProbeContext,
    *,
    seeds: list[int] | None = None,
    env_seed: int = 0,
    rollout_steps: int = 2000,
    batch: int = 512,
    max_singular: int = 512,
) -> dict:
    """Per seed and parameter: statistics and singular values; per seed: the policy's outputs at init.

    Args:
        seeds: torch seeds for ``make_policy`` (one fresh network each).
        env_seed: Seed of the environment and of the random-action generator for the observation batch.
        rollout_steps: Environment steps of the random-policy rollout.
        batch: Observations fed to each network.
        max_singular: Singular values kept per matrix (the largest ones; all for the demo's layers).

    Writes ``params.json`` (columns: seed, name, module, cls, shape, ndim, numel, fan_in, fan_out, mean, std, min, max,
    frac_zero, kurtosis, norm, sv_max, sv_min, sv_mean, sv_std), ``singular.npz`` (``"<seed>|<name>"`` ->
    singular values, descending), ``outputs.json`` (columns, one row per seed: entropy, entropy_ratio, logit_std,
    logit_absmax, value_mean, value_std), ``tree.json`` (module records, heads, n_actions).
    """
    import torch

    from rlaudit.agents.nets import as_tensors, describe_modules, find_heads, n_actions_of, trace_forward
    from rlaudit.agents.probes import build_policy
    from rlaudit.devices import to_numpy

    seeds = list(seeds) if seeds else [0, 1, 2]
    data = build_policy(ctx, env_seed, rollout_steps, batch)
    obs = as_tensors(data["obs"])
    n_actions = n_actions_of(data["act_space"])
    cols = (
        "seed name module cls shape ndim numel fan_in fan_out mean std min max frac_zero kurtosis norm "
        "sv_max sv_min sv_mean sv_std"
    ).split()
    rows: dict[str, list[Any]] = {c: [] for c in cols}
    out_rows: dict[str, list[Any]] = {
        c: []
        for c in ("seed", "entropy", "entropy_ratio", "logit_std", "logit_absmax", "value_mean", "value_std")
    }
    singular: dict[str, np.ndarray] = {}
    tree: dict[str, Any] = {}
    for i, seed in enumerate(seeds):
        ctx.progress(i, len(seeds))
        torch.manual_seed(int(seed))
        policy = ctx.subject.make_policy(ctx.config, data["obs_space"], data["act_space"])
        policy.eval()
        modules = dict(policy.named_modules())
        for name, param in policy.named_parameters():
            module_path, _, _ = name.rpartition(".")
            values = param.detach().cpu().double().numpy()
            st = param_stats(values)
            fan_in, fan_out = fans(tuple(values.shape))
            sv = np.full(0, np.nan)
            if values.ndim >= 2:
                mat = values.reshape(values.shape[0], -1)
                sv = np.linalg.svd(mat, compute_uv=False)[:max_singular]
                singular[f"{seed}|{name}"] = sv
            rows["seed"].append(int(seed))
            rows["name"].append(name)
            rows["module"].append(module_path)
            rows["cls"].append(type(modules.get(module_path, policy)).__name__)
            rows["shape"].append("x".join(str(s) for s in values.shape))
            rows["ndim"].append(int(values.ndim))
            rows["numel"].append(int(values.size))
            rows["fan_in"].append(fan_in)
            rows["fan_out"].append(fan_out)
            for key in ("mean", "std", "min", "max", "frac_zero", "kurtosis", "norm"):
                rows[key].append(st[key])
            rows["sv_max"].append(float(sv.max()) if sv.size else float("nan"))
            rows["sv_min"].append(float(sv.min()) if sv.size else float("nan"))
            rows["sv_mean"].append(float(sv.mean()) if sv.size else float("nan"))
            rows["sv_std"].append(float(sv.std()) if sv.size else float("nan"))
        records = describe_modules(policy)
        trace = trace_forward(policy, obs)
        heads = find_heads(trace, records, n_actions)
        logits = trace.outputs.get(heads["policy"]) if heads["policy"] else None
        values_out = trace.outputs.get(heads["value"]) if heads["value"] else None
        res = head_outputs(
            to_numpy(logits) if logits is not None else None,
            to_numpy(values_out) if values_out is not None else None,
            n_actions,
        )
        out_rows["seed"].append(int(seed))
        for key in ("entropy", "entropy_ratio", "logit_std", "logit_absmax", "value_mean", "value_std"):
            out_rows[key].append(float("nan") if res[key] is None else res[key])
        if i == 0:
            tree = {
                "modules": records,
                "heads": heads,
                "n_actions": n_actions,
                "order": trace.order(),
                "obs_consumers": trace.obs_consumers(),
            }
    ctx.write_json("params", rows)  # columns; JSON keeps pandas out of the worker
    ctx.write_json("outputs", out_rows)
    ctx.write_npz("singular", singular)
    ctx.write_json("tree", tree)
    return {"seeds": seeds, "n_params": len(set(rows["name"])), "heads": tree.get("heads")}
