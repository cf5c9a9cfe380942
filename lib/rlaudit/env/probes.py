"""Environment probes: fixed-policy rollouts, two-version equivalence, throughput, Gymnasium's checker.

Run inside the subject's process; import only numpy, gymnasium and light rlaudit modules.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from rlaudit.env.rollout import (
    NUM_ENVS_KEYS,
    Clock,
    EpisodeTracker,
    Policy,
    VecView,
    calibration_workload,
    describe_space,
    digest,
    find_key,
    flat_obs,
    innermost,
    sample_actions,
    with_value,
    wrapper_chain,
)
from rlaudit.probe import ProbeContext, probe

MAX_REWARD_VALUES = 64  # distinct reward values kept as a histogram; beyond this, quantiles only
OBS_STORE_BUDGET = 4_000_000  # observation floats kept per equivalence run (the rest compared by digest)


def _close(env: Any) -> None:
    close = getattr(env, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # a failing close must not lose the measurement
            pass


def _env_facts(view: VecView) -> dict[str, Any]:
    return {
        "is_vector": view.is_vector,
        "num_envs": view.num_envs,
        "autoreset_mode": view.mode,
        "observation_space": describe_space(view.single_observation_space),
        "action_space": describe_space(view.single_action_space),
        "wrappers": wrapper_chain(view.env),
        "env_class": type(innermost(view.env)).__name__,
    }


class _RewardValues:
    """Histogram of distinct per-step reward values (rounded to 1e-7), with quantiles as a fallback."""

    def __init__(self) -> None:
        self.counts: dict[float, int] = {}
        self.overflow = False
        self.sample: list[np.ndarray] = []
        self.kept = 0
        self.low = np.inf
        self.high = -np.inf

    def add(self, rewards: np.ndarray) -> None:
        self.low = min(self.low, float(rewards.min()))
        self.high = max(self.high, float(rewards.max()))
        if self.kept < 200_000:
            self.sample.append(rewards.copy())
            self.kept += len(rewards)
        if self.overflow:
            return
        values, counts = np.unique(np.round(rewards, 7), return_counts=True)
        for v, c in zip(values.tolist(), counts.tolist(), strict=True):
            self.counts[v] = self.counts.get(v, 0) + c
        if len(self.counts) > MAX_REWARD_VALUES:
            self.overflow = True
            self.counts = {}

    def to_json(self) -> dict[str, Any]:
        sample = np.concatenate(self.sample) if self.sample else np.zeros(0)
        q = np.quantile(sample, [0.0, 0.01, 0.25, 0.5, 0.75, 0.99, 1.0]).tolist() if len(sample) else []
        return {
            "min": self.low if np.isfinite(self.low) else None,
            "max": self.high if np.isfinite(self.high) else None,
            "values": None if self.overflow else sorted(self.counts),
            "counts": None if self.overflow else [self.counts[v] for v in sorted(self.counts)],
            "quantiles": q,
            "mean": float(sample.mean()) if len(sample) else None,
        }


@probe(requires=("config", "make_env"), version=3)
def rollout(ctx: ProbeContext, *, seed: int = 0, steps: int = 400, policy: str = "random") -> dict:
    """Play ``steps`` vector steps with a fixed seeded policy, timing every step and logging every episode.

    Args:
        seed: Seeds ``make_env``, the first ``reset`` and the policy's generator.
        steps: Vector steps (each steps all ``num_envs`` environments).
        policy: ``"random"`` or ``"wsls"`` (win-stay, lose-shift), see :class:`rlaudit.env.rollout.Policy`.

    Writes:
        ``episodes`` table (see :meth:`rlaudit.env.rollout.EpisodeLog.columns`, plus ``last_reward``);
        ``steps`` table: ``step``, ``seconds`` (CPU time of ``env.step``; wall time for subprocess envs), ``ended`` (environments whose
        episode ended), ``terminated``, ``truncated``, ``reward_sum``; ``facts.json`` (spaces, autoreset
        mode, wrappers, reward values, reset timing, ``calib_seconds``: the calibration workload timed on the
        same clock after the rollout, so step costs can be set against other probes' in calibration units).
    """
    env = ctx.subject.make_env(ctx.config, seed)
    try:
        view = VecView(env)
        n = view.num_envs
        clock = Clock.for_env(env)
        t0 = clock.now()
        view.reset(seed=seed)
        first_reset = clock.now() - t0
        pol = Policy(policy, view.single_action_space, n, seed)
        tracker = EpisodeTracker(n)
        rewards = _RewardValues()
        secs = np.zeros(steps)
        ended = np.zeros(steps, dtype=np.int64)
        n_term = np.zeros(steps, dtype=np.int64)
        n_trunc = np.zeros(steps, dtype=np.int64)
        rsum = np.zeros(steps)
        last_reward: np.ndarray | None = None
        step_reward = np.zeros(n)
        last_rewards: list[float] = []
        for t in range(steps):
            actions = pol.act(last_reward)
            start = clock.now()
            res = view.step(actions)
            secs[t] = clock.now() - start
            done = tracker.update(t, res)
            live = ~res.reset_step
            step_reward = np.where(live, res.reward, 0.0)
            if live.any():
                rewards.add(res.reward[live])
            ended[t] = int(done.sum())
            n_term[t] = int(res.terminated.sum())
            n_trunc[t] = int(res.truncated.sum())
            rsum[t] = float(step_reward.sum())
            if done.any():
                last_rewards.extend(step_reward[done].tolist())
            last_reward = res.reward
            if t % 50 == 0:
                ctx.progress(t, steps)
        ctx.progress(steps, steps)
        # Explicit resets, timed after the rollout (an autoreset inside step() is timed with the step).
        reset_secs = []
        for i in range(5):
            start = clock.now()
            view.reset(seed=seed + 1000 + i)
            reset_secs.append(clock.now() - start)
        calib = [calibration_workload(clock) for _ in range(5)]
        facts = _env_facts(view)
    finally:
        _close(env)
    cols = tracker.log.columns()
    cols["last_reward"] = np.asarray(last_rewards, dtype=np.float64)
    ctx.write_table("episodes", cols)
    ctx.write_table(
        "steps",
        {
            "step": np.arange(steps),
            "seconds": secs,
            "ended": ended,
            "terminated": n_term,
            "truncated": n_trunc,
            "reward_sum": rsum,
        },
    )
    facts.update(
        rewards=rewards.to_json(),
        first_reset_seconds=first_reset,
        reset_seconds=reset_secs,
        calib_seconds=calib,
        policy=policy,
        clock=clock.kind,
        steps=steps,
        seed=seed,
    )
    ctx.write_json("facts", facts)
    return {"num_envs": n, "episodes": len(tracker.log), "autoreset_mode": facts["autoreset_mode"]}


def _run_sequence(ctx: ProbeContext, seed: int, actions: np.ndarray, store_obs: int) -> dict[str, Any]:
    """One run of a fixed action sequence: per-step digests, and the first ``store_obs`` steps' arrays."""
    env = ctx.subject.make_env(ctx.config, seed)
    try:
        view = VecView(env)
        n = view.num_envs
        obs0 = flat_obs(view.reset(seed=seed), n)
        steps = len(actions)
        obs_store = np.zeros((store_obs + 1, n, obs0.shape[1]), dtype=np.float32)
        obs_store[0] = obs0
        rew = np.zeros((steps, n))
        term = np.zeros((steps, n), dtype=bool)
        trunc = np.zeros((steps, n), dtype=bool)
        ep_r = np.full((steps, n), np.nan)
        digests = {"obs": [digest(obs0)], "reward": [], "terminated": [], "truncated": [], "episode": []}
        for t in range(steps):
            res = view.step(actions[t])
            ob = flat_obs(res.obs, n)
            if t < store_obs:
                obs_store[t + 1] = ob
            rew[t], term[t], trunc[t] = res.reward, res.terminated, res.truncated
            done = res.terminated | res.truncated
            reported = [d.get("r", np.nan) for d in _reported(res, n, done)]
            ep_r[t] = reported
            digests["obs"].append(digest(ob))
            digests["reward"].append(digest(res.reward))
            digests["terminated"].append(digest(res.terminated))
            digests["truncated"].append(digest(res.truncated))
            digests["episode"].append(digest(np.nan_to_num(ep_r[t], nan=-1e30)))
            if t % 50 == 0:
                ctx.progress(t, steps)
        facts = _env_facts(view)
    finally:
        _close(env)
    return {
        "facts": facts,
        "digests": digests,
        "arrays": {
            "obs": obs_store,
            "reward": rew,
            "terminated": term,
            "truncated": trunc,
            "episode_r": ep_r,
        },
    }


def _reported(res: Any, n: int, done: np.ndarray) -> list[dict[str, float]]:
    from rlaudit.env.rollout import reported_episode_stats

    if not done.any():
        return [{} for _ in range(n)]
    return reported_episode_stats(res.info, n, done)


@probe(requires=("config", "make_env"), version=1)
def equivalence(ctx: ProbeContext, *, seed: int = 0, steps: int = 128) -> dict:
    """Step the environment ``steps`` times with an action sequence generated from ``seed``, twice.

    Both subjects generate the same sequence when their action spaces and ``num_envs`` agree (actions come
    from ``np.random.default_rng(seed)`` only). The second run (a fresh ``make_env``) checks that the
    environment is reproducible under a fixed seed, without which a cross-version comparison means nothing.

    Writes:
        ``run.npz`` (``obs`` ``(S+1, N, D)`` for the first ``S`` steps within a memory budget, ``reward``,
        ``terminated``, ``truncated``, ``episode_r`` (the episode return the env reported, NaN elsewhere), all
        ``(steps, N)``, ``actions``); ``digests.json`` (per step and field, for both runs); ``facts.json``.
    """
    env = ctx.subject.make_env(ctx.config, seed)
    try:
        view = VecView(env)
        n, space = view.num_envs, view.single_action_space
        obs_dim = flat_obs(view.reset(seed=seed), n).shape[1]
    finally:
        _close(env)
    actions = sample_actions(space, n, np.random.default_rng(seed), size=steps)
    store = int(min(steps, max(1, OBS_STORE_BUDGET // max(1, n * obs_dim) - 1)))
    first = _run_sequence(ctx, seed, actions, store)
    second = _run_sequence(ctx, seed, actions, 0)
    ctx.write_npz("run", actions=actions, **first["arrays"])
    ctx.write_json(
        "digests",
        {"first": first["digests"], "second": second["digests"], "actions": digest(actions), "stored": store},
    )
    ctx.write_json("facts", first["facts"])
    return {"num_envs": n, "obs_dim": obs_dim, "steps": steps, "stored_obs_steps": store}


@probe(requires=("config", "make_env"), version=2)
def throughput(
    ctx: ProbeContext,
    *,
    seed: int = 0,
    num_envs: list[int] | None = None,
    repeats: int = 5,
    block_seconds: float = 0.05,
    batch: str = "",
) -> dict:
    """Environment steps per second for several ``num_envs``, in interleaved timed blocks.

    ``num_envs`` is set through the first config key named like ``num_envs`` (a copy of the config is passed
    to ``make_env``); 0 means the subject's own configuration, and without such a key only that is measured.
    Blocks are timed with this process's CPU time (wall time for environments that step in subprocesses), so
    other processes competing for the cores do not stretch them; blocks of each size are interleaved
    (round-robin), and each is followed by a fixed calibration workload on the same clock.

    Args:
        num_envs: Requested sizes (default: the subject's own).
        repeats: Timed blocks per size.
        block_seconds: Target duration of one block; its vector steps are set from a warm-up.
        batch: Names the pair this measurement is for (unused here; part of the cache key, so that both sides
            are timed in one batch, see :func:`rlaudit.env.analysis.timing_batch`).

    Writes:
        ``blocks`` table: ``requested``, ``num_envs`` (what ``make_env`` built), ``repeat``, ``vector_steps``,
        ``env_steps``, ``seconds`` (on the clock), ``wall_seconds``, ``calib_seconds``; ``facts.json``
        (config key, clock).
    """
    key = find_key(ctx.config, NUM_ENVS_KEYS)
    sizes = list(dict.fromkeys(int(s) for s in (num_envs or [0])))
    if key is None:
        sizes = [0]
    envs: dict[int, tuple[Any, VecView, np.ndarray]] = {}
    rows: dict[str, list[Any]] = {
        k: []
        for k in (
            "requested",
            "num_envs",
            "repeat",
            "vector_steps",
            "env_steps",
            "seconds",
            "wall_seconds",
            "calib_seconds",
        )
    }
    clock = Clock("cpu")
    try:
        for size in sizes:
            config = ctx.config if size == 0 or key is None else with_value(ctx.config, key, size)
            env = ctx.subject.make_env(config, seed)
            clock = Clock.for_env(env) if clock.kind == "cpu" else clock
            view = VecView(env)
            view.reset(seed=seed)
            n = view.num_envs
            rng = np.random.default_rng(seed)
            warm = sample_actions(view.single_action_space, n, rng, size=20)
            start = clock.now()
            for a in warm:  # warm-up: first-call allocations and caches, and the block length
                view.step(a)
            per_step = max((clock.now() - start) / len(warm), 1e-7)
            vsteps = int(min(200_000, max(8, round(block_seconds / per_step))))
            acts = sample_actions(view.single_action_space, n, rng, size=vsteps)
            envs[size] = (env, view, acts)
        total = repeats * len(sizes)
        done = 0
        for r in range(repeats):
            for size in sizes:
                env, view, acts = envs[size]
                wall0, start = time.perf_counter(), clock.now()
                for a in acts:
                    view.step(a)
                secs, wall = clock.now() - start, time.perf_counter() - wall0
                cal = [calibration_workload(clock) for _ in range(5)]
                rows["requested"].append(size)
                rows["num_envs"].append(view.num_envs)
                rows["repeat"].append(r)
                rows["vector_steps"].append(len(acts))
                rows["env_steps"].append(len(acts) * view.num_envs)
                rows["seconds"].append(secs)
                rows["wall_seconds"].append(wall)
                rows["calib_seconds"].append(float(np.mean(cal)))
                done += 1
                ctx.progress(done, total)
    finally:
        for env, _, _ in envs.values():
            _close(env)
    ctx.write_table("blocks", {k: np.asarray(v) for k, v in rows.items()})
    ctx.write_json("facts", {"num_envs_key": key, "requested": sizes, "clock": clock.kind})
    return {"num_envs_key": key, "sizes": sizes, "clock": clock.kind}


@probe(requires=("config", "make_env"), version=1)
def check_env(ctx: ProbeContext, *, seed: int = 0) -> dict:
    """Gymnasium's ``check_env`` on a single (non-vector) environment, with its warnings.

    Returns:
        ``applicable`` (False for vector envs), ``passed``, ``error`` (the exception text) and ``warnings``.
    """
    from rlaudit.env.rollout import is_vector_env

    env = ctx.subject.make_env(ctx.config, seed)
    try:
        if is_vector_env(env):
            return {"applicable": False, "reason": f"{type(env).__name__} is a vector environment"}
        from gymnasium.utils.env_checker import check_env as gym_check_env

        error = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                gym_check_env(env, skip_render_check=True)
            except Exception as exc:  # the checker raises on a contract violation: that is the result
                error = f"{type(exc).__name__}: {exc}"
        messages = sorted({str(w.message).strip() for w in caught})
    finally:
        _close(env)
    return {"applicable": True, "passed": error is None, "error": error, "warnings": messages}
