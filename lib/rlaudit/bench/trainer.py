"""Speed benchmarks of the demo trainer: its steps per second, against Stable-Baselines3, and with the recorder.

Each function returns a list of result dicts (``name``, ``value``, ``unit``, and for comparisons ``baseline``,
``candidate``, ``ratio``) and prints nothing; ``rlaudit bench trainer|sb3|recorder`` prints them.

Timings on a shared machine are noisy: every comparison interleaves its two arms (A, B, A, B, ...) and reports
medians, and every SPS also comes as ``*_cpu`` (steps per CPU-second of this process), which other processes
competing for the cores disturb much less than wall time.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rlaudit.demo.config import DemoConfig

SPS_GOAL = 40_000.0  # steps/s of the default config on a 2-core machine, torch on one thread
SB3_GOAL = 6.0  # our SPS over SB3's on the same arena, hyperparameters and network
OVERHEAD_GOAL = 3.0  # percent of SPS the recorder may cost with default sampling


def _config(**trainer: Any) -> dict[str, Any]:
    cfg = DemoConfig().to_dict()
    cfg["logging"]["tensorboard"] = False  # measured separately from the trainer: SB3 gets none either
    cfg["trainer"].update(trainer)
    return cfg


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``(result, wall seconds, process CPU seconds)`` of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def _train_ours(
    cfg: dict[str, Any], steps: int, seed: int, recorder: Any
) -> tuple[dict[str, Any], float, float]:
    from rlaudit.demo import ppo

    return _timed(lambda: ppo.train(cfg, steps, seed, recorder))


def _warm_up(cfg: dict[str, Any]) -> None:
    """One short instrumented run, so one-off costs (imports of pyarrow and the parquet writer, allocator
    growth, first calls) land in no measured arm."""
    from rlaudit.recorder import Recorder

    t = cfg["trainer"]
    with tempfile.TemporaryDirectory(prefix="rlaudit-bench-") as tmp:
        rec = Recorder(tmp)
        _train_ours(cfg, 2 * t["num_envs"] * t["num_steps"], 0, rec)
        rec.close()


def _warmed_up(updates: int) -> tuple[dict[str, Any], int]:
    """The default config, after a warm-up run of it, and the steps of ``updates`` rollouts."""
    cfg = _config()
    _warm_up(cfg)
    return cfg, updates * cfg["trainer"]["num_envs"] * cfg["trainer"]["num_steps"]


def _result(name: str, values: list[float], unit: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "value": float(statistics.median(values)),
        "unit": unit,
        "min": float(min(values)),
        "max": float(max(values)),
        "repeats": [float(v) for v in values],
        **extra,
    }


def _comparison(
    name: str, baseline: list[float], candidate: list[float], unit: str, **extra: Any
) -> dict[str, Any]:
    b, c = statistics.median(baseline), statistics.median(candidate)
    return {
        "name": name,
        "value": float(c / b) if b else float("nan"),
        "unit": "x",
        "baseline": float(b),
        "candidate": float(c),
        "ratio": float(c / b) if b else float("nan"),
        "baseline_repeats": [float(v) for v in baseline],
        "candidate_repeats": [float(v) for v in candidate],
        "measured_unit": unit,
        **extra,
    }


def bench_trainer(quick: bool = False) -> list[dict[str, Any]]:
    """SPS of the default config (repeats, with the recorder on) and where the time goes.

    Returns:
        ``trainer.sps`` and ``trainer.sps_cpu`` (median over repeats; SPS counts the training loop, as
        ``perf/sps`` does), then ``trainer.phase.<path>``: microseconds per environment step in each recorder
        phase (``rollout``, ``rollout/env``, ``rollout/inference``, ``update``), median over repeats, with the
        share of the training loop's wall time as ``share``.
    """
    from rlaudit.recorder import Recorder

    cfg, steps = _warmed_up(updates=8 if quick else 40)
    t = cfg["trainer"]
    repeats = 2 if quick else 3
    sps, sps_cpu, phases, loop_seconds = [], [], {}, []
    for i in range(repeats):
        with tempfile.TemporaryDirectory(prefix="rlaudit-bench-") as tmp:
            rec = Recorder(tmp, flush_seconds=3600.0)
            out, _, cpu = _train_ours(cfg, steps, i, rec)
            rec.close()
            totals = rec.phase_totals()
        sps.append(out["sps"])
        sps_cpu.append(out["steps"] / cpu)
        loop_seconds.append(out["seconds"])
        for path, (_, seconds) in totals.items():
            phases.setdefault(path, []).append(seconds / out["steps"] * 1e6)
    config = {k: t[k] for k in ("num_envs", "num_steps", "update_epochs", "num_minibatches", "torch_threads")}
    config["hidden_size"] = cfg["agent"]["hidden_size"]
    results = [
        _result("trainer.sps", sps, "steps/s", steps=steps, config=config, goal=SPS_GOAL),
        _result("trainer.sps_cpu", sps_cpu, "steps/cpu-s", steps=steps),
    ]
    us_per_step = statistics.median(loop_seconds) / steps * 1e6
    for path in sorted(phases):
        value = statistics.median(phases[path])
        results.append(_result(f"trainer.phase.{path}", phases[path], "us/step", share=value / us_per_step))
    return results


# -- Stable-Baselines3 -----------------------------------------------------------------------------------------


def make_sb3_vec_env(config: dict[str, Any], num_envs: int, seed: int) -> Any:
    """The arena behind Stable-Baselines3's ``VecEnv`` interface (imports SB3; it is an optional dependency).

    SB3 expects per-environment info dicts with ``terminal_observation`` and ``TimeLimit.truncated`` on the
    step an episode ends (its own autoreset convention), and ``episode`` stats for its logger; this adapter
    builds them from the arena's SAME_STEP ``info``.
    """
    from stable_baselines3.common.vec_env import VecEnv

    from rlaudit.demo.arena import make_arena

    class ArenaSB3VecEnv(VecEnv):
        def __init__(self) -> None:
            self.arena = make_arena(config, num_envs, seed)
            super().__init__(num_envs, self.arena.single_observation_space, self.arena.single_action_space)
            self._actions: np.ndarray | None = None
            self._seed = seed

        def reset(self) -> np.ndarray:
            obs, _ = self.arena.reset(seed=self._seed)
            return obs

        def step_async(self, actions: np.ndarray) -> None:
            self._actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)

        def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
            obs, reward, terminated, truncated, info = self.arena.step(self._actions)
            dones = terminated | truncated
            infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
            if dones.any():
                final = info["final_obs"]
                ep = info.get("episode", {})
                for i in np.flatnonzero(dones):
                    infos[i]["terminal_observation"] = final[i]
                    infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                    if ep:
                        infos[i]["episode"] = {"r": float(ep["r"][i]), "l": int(ep["l"][i])}
            return obs, reward.astype(np.float32), dones, infos

        def close(self) -> None:
            self.arena.close()

        def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
            return [getattr(self.arena, attr_name)] * len(self._get_indices(indices))

        def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
            setattr(self.arena, attr_name, value)

        def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
            return [getattr(self.arena, method_name)(*args, **kwargs)] * len(self._get_indices(indices))

        def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
            return [False] * len(self._get_indices(indices))

        def seed(self, seed: int | None = None) -> list[int | None]:
            if seed is not None:
                self._seed = seed
            return [self._seed] * self.num_envs

    return ArenaSB3VecEnv()


def make_sb3_ppo(config: dict[str, Any], seed: int) -> Any:
    """SB3's PPO with the demo config's hyperparameters, network and observation normalization."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    t, a, o = config["trainer"], config["agent"], config["optimizer"]
    venv = make_sb3_vec_env(config, t["num_envs"], seed)
    if t["normalize_obs"]:
        venv = VecNormalize(venv, norm_obs=True, norm_reward=False, clip_obs=t["obs_clip"], gamma=t["gamma"])
    batch = t["num_envs"] * t["num_steps"]
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[a["activation"]]
    hidden = [a["hidden_size"]] * a["num_layers"]

    def lr_schedule(progress_remaining: float) -> float:  # SB3 passes 1 -> 0; linear like ours
        frac = progress_remaining if t["anneal_lr"] else 1.0
        return o["lr"] * (t["lr_final_fraction"] + (1.0 - t["lr_final_fraction"]) * frac)

    return PPO(
        "MlpPolicy",
        venv,
        learning_rate=lr_schedule,
        n_steps=t["num_steps"],
        batch_size=batch // t["num_minibatches"],
        n_epochs=t["update_epochs"],
        gamma=t["gamma"],
        gae_lambda=t["gae_lambda"],
        clip_range=t["clip_coef"],
        clip_range_vf=t["clip_coef"] if t["clip_vloss"] else None,
        normalize_advantage=t["norm_adv"],
        ent_coef=t["ent_coef"],
        vf_coef=t["vf_coef"],
        max_grad_norm=t["max_grad_norm"],
        target_kl=t["target_kl"],
        policy_kwargs={
            "net_arch": {"pi": hidden, "vf": hidden},
            "activation_fn": activation,
            "ortho_init": a["ortho_init"],
            "optimizer_kwargs": {
                "eps": o["eps"],
                "betas": tuple(o["betas"]),
                "weight_decay": o["weight_decay"],
            },
        },
        seed=seed,
        device="cpu",
        verbose=0,
    )


def bench_sb3(quick: bool = False) -> list[dict[str, Any]]:
    """Our trainer against SB3's PPO on the same arena, hyperparameters and network, interleaved.

    Both train the default config for the same number of steps; SB3 is timed around ``learn()`` (its model
    and environment built beforehand), ours around ``train()`` (which builds its own). Returns
    ``sb3.sps`` (baseline SB3, candidate ours, ratio ours/SB3) and the same per CPU-second as ``sb3.sps_cpu``.
    """
    import torch

    cfg = _config()
    t = cfg["trainer"]
    batch = t["num_envs"] * t["num_steps"]
    steps = batch * (2 if quick else 6)
    repeats = 2 if quick else 3
    prev = torch.get_num_threads()
    torch.set_num_threads(t["torch_threads"])
    try:
        _warm_up(cfg)
        ours, ours_cpu, sb3, sb3_cpu = [], [], [], []
        for i in range(repeats):
            out, wall, cpu = _train_ours(cfg, steps, i, None)
            ours.append(out["steps"] / wall)
            ours_cpu.append(out["steps"] / cpu)
            model = make_sb3_ppo(cfg, i)
            _, wall, cpu = _timed(lambda m=model: m.learn(total_timesteps=steps))
            done = int(model.num_timesteps)
            sb3.append(done / wall)
            sb3_cpu.append(done / cpu)
            model.get_env().close()
    finally:
        torch.set_num_threads(prev)
    return [
        _comparison(
            "sb3.sps",
            sb3,
            ours,
            "steps/s",
            steps=steps,
            baseline_label="sb3",
            candidate_label="rlaudit",
            goal=SB3_GOAL,
        ),
        _comparison(
            "sb3.sps_cpu",
            sb3_cpu,
            ours_cpu,
            "steps/cpu-s",
            steps=steps,
            baseline_label="sb3",
            candidate_label="rlaudit",
        ),
    ]


def bench_recorder(quick: bool = False) -> list[dict[str, Any]]:
    """Training with the :class:`~rlaudit.recorder.Recorder` (default sampling) against a ``NullRecorder``.

    Interleaved repeats of the default config. Returns ``recorder.sps`` (baseline: null, candidate: recorder),
    the same per CPU-second, and ``recorder.overhead``: ``1 - candidate / baseline`` of the CPU-time SPS, in
    percent (the goal is <= 3).
    """
    from rlaudit.recorder import NullRecorder, Recorder

    cfg, steps = _warmed_up(updates=6 if quick else 25)
    repeats = 3 if quick else 5
    null, null_cpu, rec, rec_cpu = [], [], [], []
    for i in range(repeats):
        arms = [("null", NullRecorder), ("rec", Recorder)]
        if i % 2:
            arms.reverse()  # alternate which arm goes first, so drift in machine load cancels
        for arm, cls in arms:
            with tempfile.TemporaryDirectory(prefix="rlaudit-bench-") as tmp:
                recorder = cls(tmp)
                out, wall, cpu = _train_ours(cfg, steps, 0, recorder)
                recorder.close()
            (null if arm == "null" else rec).append(out["steps"] / wall)
            (null_cpu if arm == "null" else rec_cpu).append(out["steps"] / cpu)
    wall_cmp = _comparison("recorder.sps", null, rec, "steps/s", steps=steps)
    cpu_cmp = _comparison("recorder.sps_cpu", null_cpu, rec_cpu, "steps/cpu-s", steps=steps)
    # paired by repeat: each recorder run against the null run next to it
    paired = [100.0 * (1.0 - r / n) for r, n in zip(rec_cpu, null_cpu, strict=True)]
    overhead = {
        "name": "recorder.overhead",
        "value": float(statistics.median(paired)),
        "unit": "%",
        "repeats": paired,
        "wall_overhead": 100.0 * (1.0 - wall_cmp["ratio"]),
        "goal": OVERHEAD_GOAL,
    }
    return [wall_cmp, cpu_cmp, overhead]
