"""Seeding probes: seeded replicas of the subject in fresh processes and in its worker, with and without
the global generators perturbed.

Runs inside the subject's process; imports only the standard library, numpy and light rlaudit modules (the
replicas import torch and the subject as the subject itself does).
"""

from __future__ import annotations

import shutil
from typing import Any

from rlaudit.probe import ProbeContext, probe
from rlaudit.seeding.replica import GLOBAL_GENERATORS, collect, run, spawn


def same_replica(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when two replicas' recorded parts (env digests, weights, traces) are identical."""
    for part in ("env", "train"):
        pa, pb = a.get(part), b.get(part)
        if pa is None and pb is None:
            continue
        if pa is None or pb is None or "error" in pa or "error" in pb:
            return False
        keys = ("final",) if part == "env" else ("init", "grad_norms", "losses", "episodes", "final")
        if any(pa.get(k) != pb.get(k) for k in keys):
            return False
    return True


@probe(requires=("config",), version=4)
def replicas(
    ctx: ProbeContext,
    *,
    seed: int = 0,
    other_seed: int = 1,
    env_steps: int = 32,
    train_steps: int = 1,
    fresh: int = 2,
    timeout: float = 900.0,
) -> dict:
    """Seeded replicas of the environment rollout and the start of training.

    * ``fresh`` replicas with ``seed``, each in a new interpreter (hash randomization, process-level state);
    * in this worker, each starting from the same (canonical) states of Python's, NumPy's and torch's global
      generators: one with ``seed``, one with ``other_seed``, and one with ``seed`` after all three were moved;
      when that one differs, a repeat with ``seed`` (is the subject deterministic in one process at all?)
      and, if it is, one replica per moved generator to name the one that leaks in.

    ``env_steps`` and ``train_steps`` size the parts (a part is skipped when the subject lacks ``make_env`` or
    ``train``). Writes ``replicas.json``: ``fresh`` (list), ``in_process`` (name -> replica), ``parts``.
    """
    workdir = ctx.path("work")
    workdir.mkdir(parents=True, exist_ok=True)
    args: dict[str, Any] = {
        "spec": ctx.spec,
        "seed": int(seed),
        "env_steps": int(env_steps) if ctx.has("make_env") else 0,
        "train_steps": int(train_steps) if ctx.has("train") else 0,
        "workdir": str(workdir),
    }
    parts = [p for p, k in (("env", "env_steps"), ("train", "train_steps")) if args[k]]
    if not parts:
        return {"parts": [], "reason": "the subject has neither make_env nor train"}
    if args["train_steps"]:
        # The children run torch with this worker's thread count (spawn reads it), so a replica in a fresh
        # process and one in this worker reduce floating-point sums in the same order.
        try:
            import torch  # noqa: F401 - imported for its thread count; the subject's train imports it anyway
        except ImportError:  # a subject that trains without torch
            pass
    children: list[Any] = []
    try:
        children.extend(spawn(args, str(workdir)) for _ in range(fresh))
        total = fresh + 6
        canon = dict.fromkeys(GLOBAL_GENERATORS, 0)
        same = {**args, "globals": canon}
        inproc: dict[str, Any] = {"same": run(same, ctx.subject)}
        ctx.progress(1, total)
        inproc["other_seed"] = run({**same, "seed": int(other_seed)}, ctx.subject)
        ctx.progress(2, total)
        inproc["perturbed"] = run({**args, "globals": dict.fromkeys(GLOBAL_GENERATORS, 1)}, ctx.subject)
        ctx.progress(3, total)
        if not same_replica(inproc["same"], inproc["perturbed"]):
            inproc["repeat"] = run(same, ctx.subject)
            if same_replica(inproc["same"], inproc["repeat"]):
                for i, gen in enumerate(GLOBAL_GENERATORS):
                    inproc[f"perturbed_{gen}"] = run({**args, "globals": {**canon, gen: 1}}, ctx.subject)
                    ctx.progress(4 + i, total)
        results = []
        for i, (proc, out) in enumerate(children):
            results.append(collect(proc, out, timeout))
            ctx.progress(7 + i, total)
    finally:
        for proc, _ in children:
            if proc.poll() is None:
                proc.kill()
    shutil.rmtree(workdir, ignore_errors=True)
    ctx.write_json("replicas", {"fresh": results, "in_process": inproc, "parts": parts})
    return {
        "parts": parts,
        "fresh_identical": all(same_replica(results[0], r) for r in results[1:]) if results else None,
        "hashseed": inproc["same"].get("hashseed"),
    }


@probe(requires=("config", "make_env"), version=1)
def subenv_trajectories(ctx: ProbeContext, *, seed: int = 0, steps: int = 16) -> dict:
    """Each vectorized environment's trajectory under one shared action sequence, for two seeds.

    Every sub-environment gets the same actions (drawn from ``seed``), so sub-environments whose observations
    still differ were started from different seeds; identical ones replay one trajectory. The same is done for
    ``seed + 1``, so a side whose trajectories do not change with the seed is seen too.

    Writes:
        ``trajectories.json``: per seed, a digest of each sub-environment's observations after the reset and
        after each step, and the number of sub-environments.
    """
    import hashlib

    import numpy as np

    from rlaudit.env.rollout import VecView, flat_obs, sample_actions

    result: dict[str, Any] = {}
    for run_seed in (seed, seed + 1):
        env = ctx.subject.make_env(ctx.config, run_seed)
        try:
            view = VecView(env)
            n = view.num_envs
            digests = [hashlib.blake2b(digest_size=8) for _ in range(n)]
            start = [hashlib.blake2b(digest_size=8) for _ in range(n)]
            obs = flat_obs(view.reset(seed=run_seed), n)
            for i in range(n):
                start[i].update(np.ascontiguousarray(obs[i]).tobytes())
                digests[i].update(np.ascontiguousarray(obs[i]).tobytes())
            one = sample_actions(view.single_action_space, 1, np.random.default_rng(seed), size=steps)
            for t in range(steps):
                obs = flat_obs(view.step(np.repeat(one[t], n, axis=0)).obs, n)
                for i in range(n):
                    digests[i].update(np.ascontiguousarray(obs[i]).tobytes())
                ctx.progress(t + 1, steps)
        finally:
            close = getattr(env, "close", None)
            if callable(close):
                close()
        result[str(run_seed)] = {
            "num_envs": n,
            "starts": [d.hexdigest() for d in start],
            "trajectories": [d.hexdigest() for d in digests],
        }
    ctx.write_json("trajectories", result)
    return {"seeds": [seed, seed + 1], "num_envs": result[str(seed)]["num_envs"]}
