"""Agents probes: the network ``make_policy`` builds, traced on real observations.

Runs inside the subject's process; imports numpy at module level, torch inside the probe.
"""

from __future__ import annotations

from typing import Any

from rlaudit.probe import ProbeContext, probe


def build_policy(ctx: ProbeContext, env_seed: int, rollout_steps: int, batch: int) -> dict[str, Any]:
    """Make the env, play a seeded random rollout, and return spaces and a fixed observation batch.

    Returns:
        ``{"obs_space", "act_space", "obs" (B, *shape) float32 numpy, "rollout" (the raw rollout dict)}``;
        for a Dict or Tuple observation space ``obs`` is a dict or tuple of such arrays, one per subspace.
    """
    from rlaudit.agents.nets import single_spaces
    from rlaudit.spaces.rollout import close_env, policy_batch, random_rollout

    env = ctx.subject.make_env(ctx.config, env_seed)
    try:
        obs_space, act_space = single_spaces(env)
        rollout = random_rollout(env, steps=rollout_steps, seed=env_seed, action_seed=env_seed + 1)
    finally:
        close_env(env)
    return {
        "obs_space": obs_space,
        "act_space": act_space,
        "obs": policy_batch(rollout["obs"], batch),
        "rollout": rollout,
    }


@probe(requires=("make_env", "make_policy"), version=2)
def network(
    ctx: ProbeContext,
    *,
    seeds: list[int] | None = None,
    env_seed: int = 0,
    rollout_steps: int = 2000,
    batch: int = 512,
) -> dict:
    """The module tree, one traced forward pass, and per-layer activation statistics at initialization.

    Args:
        seeds: torch seeds for ``make_policy`` (activation statistics per seed; the tree comes from the first).
        env_seed: Seed of the environment and of the random-action generator (``env_seed + 1``).
        rollout_steps: Environment steps of the random-policy rollout that provides the observations.
        batch: Observations fed to the network, spread evenly over the rollout.

    Writes ``tree.json`` (modules, parameter counts per block, execution calls with shapes, heads, spaces)
    ``activations.json`` (columns: seed, path, cls, kind, mean, std, unit_std, dead, saturated, units) and
    ``histograms.json`` (columns: seed, path, low, high, zeros, n, counts: each layer's output values, see
    :func:`rlaudit.agents.nets.activation_histogram`).
    """
    import torch

    from rlaudit.agents.nets import (
        activation_histogram,
        activation_stats,
        as_tensors,
        block_param_counts,
        describe_modules,
        find_heads,
        n_actions_of,
        trace_forward,
    )
    from rlaudit.spaces.rollout import describe_space, flat_rows, obs_rows

    seeds = list(seeds) if seeds else [0]
    data = build_policy(ctx, env_seed, rollout_steps, batch)
    obs = as_tensors(data["obs"])
    n_actions = n_actions_of(data["act_space"])
    rows: dict[str, list[Any]] = {
        k: []
        for k in ("seed", "path", "cls", "kind", "mean", "std", "unit_std", "dead", "saturated", "units")
    }
    hists: dict[str, list[Any]] = {k: [] for k in ("seed", "path", "low", "high", "zeros", "n", "counts")}
    tree: dict[str, Any] = {}
    for i, seed in enumerate(seeds):
        torch.manual_seed(int(seed))
        policy = ctx.subject.make_policy(ctx.config, data["obs_space"], data["act_space"])
        policy.eval()
        records = describe_modules(policy)
        trace = trace_forward(policy, obs)
        if i == 0:
            heads = find_heads(trace, records, n_actions)
            shared = (
                sorted(trace.upstream(heads["policy"]) & trace.upstream(heads["value"]))
                if (heads["policy"] and heads["value"])
                else []
            )
            tree = {
                "policy_class": type(policy).__name__,
                "modules": records,
                "blocks": block_param_counts(policy),
                "calls": trace.calls,
                "order": trace.order(),
                "terminal": trace.terminal,
                "entry": trace.entry,
                "heads": heads,
                "shared_trunk": shared,
                "obs_consumers": trace.obs_consumers(),
                "observation_space": describe_space(data["obs_space"]),
                "action_space": describe_space(data["act_space"]),
                "obs_size": int(flat_rows(data["obs"]).shape[1]),
                "n_actions": n_actions,
                "batch": obs_rows(data["obs"]),
            }
        kinds = {r["path"]: r for r in records}
        for path, out in trace.outputs.items():
            rec = kinds.get(path)
            if rec is None or rec["kind"] not in ("activation", "linear", "norm", "other"):
                continue
            st = activation_stats(out, rec["cls"])
            for key, value in (
                ("seed", int(seed)),
                ("path", path),
                ("cls", rec["cls"]),
                ("kind", rec["kind"]),
            ):
                rows[key].append(value)
            for key in ("mean", "std", "unit_std", "dead", "saturated", "units"):
                rows[key].append(st[key])
            hist = activation_histogram(out)
            hists["seed"].append(int(seed))
            hists["path"].append(path)
            for key in ("low", "high", "zeros", "n", "counts"):
                hists[key].append(hist[key])
    ctx.write_json("tree", tree)
    ctx.write_json("activations", rows)  # columns; JSON keeps pandas out of the worker
    ctx.write_json("histograms", hists)
    return {
        "n_params": tree["blocks"]["total"],
        "n_modules": len(tree["modules"]),
        "entry": tree["entry"],
        "seeds": seeds,
    }
