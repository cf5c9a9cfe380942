"""The SB3 subject: the rlaudit subject contract on an SB3 setup file, with SB3's own code paths."""

from __future__ import annotations

import copy
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

from rlaudit.adapters.sb3 import loss, offpolicy
from rlaudit.adapters.sb3.runtime import (
    SB3VectorEnv,
    action_noise_of,
    add_cleanrl_interface,
    as_schedule,
    hyperparameters_of,
    joint_optimizer,
    make_callback,
    make_logger,
    make_vec_env,
    optimizer_of,
    policy_kwargs_of,
    schedule_fn,
    step_of,
)
from rlaudit.adapters.sb3.setup import (
    ON_POLICY,
    action_noise_settings,
    algo_class,
    check_schedule,
    normalize_settings,
    policy_settings,
    read_setup,
    resolve_setup,
)
from rlaudit.devices import resolve_device

# ---------------------------------------------------------------------------------------------------------
# The subject


class SB3Subject:
    """The rlaudit subject contract for an SB3 setup file (see the module docstring).

    Args:
        path: The YAML setup file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).resolve()
        self.base_dir = self.path.parent
        self.raw = read_setup(self.path)
        self.config_source = f"sb3:{self.path.name}"
        self._resolved = resolve_setup(self.raw, self.base_dir)
        if self._resolved["algo"] not in ON_POLICY:
            # GAE and the actor-critic loss exist only in the on-policy algorithms; hide the capabilities so
            # audits report SKIPPED
            self.compute_advantages = None
            self.compute_loss = None
        if self._resolved["algo"] not in offpolicy.OFF_POLICY:
            # no replay buffer, TD targets or target networks in PPO and A2C
            self.target_networks = None
            self.compute_td_targets = None
            self.compute_td_loss = None

    def __repr__(self) -> str:
        return f"SB3Subject({str(self.path)!r})"

    # -- config ----------------------------------------------------------------------------------------

    def config(self, overrides: list[str] | None = None) -> dict[str, Any]:
        """The resolved setup (SB3 defaults filled in); overrides are ``key=value`` on its (dotted) keys."""
        from rlaudit.adapters.configs import apply_overrides

        config = copy.deepcopy(self._resolved)
        if overrides:
            config = apply_overrides(config, overrides)
            # re-validate through the same path as the file: a bad value fails here, not mid-training
            for key in ("learning_rate", "clip_range", "clip_range_vf"):
                if config.get(key) is not None:
                    config[key] = check_schedule(config[key], key)
            config["normalize"] = normalize_settings(config["normalize"], float(config.get("gamma", 0.99)))
            if "action_noise" in config:
                config["noise_type"], config["noise_std"] = action_noise_settings(config)
            config["policy_kwargs"] = policy_settings(
                config["algo"], config["policy"], config["policy_kwargs"], config
            )
        return json.loads(json.dumps(config))

    def config_keys(self) -> dict[str, list[str]]:
        return {
            "env": ["env_id", "n_envs", "env_kwargs.*"],
            "spaces": ["normalize.norm_obs", "normalize.clip_obs", "normalize.epsilon"],
            "rewards": ["normalize.norm_reward", "normalize.clip_reward", "normalize.gamma"],
            "optimizer": [
                "learning_rate",
                "max_grad_norm",
                "policy_kwargs.optimizer_*",
                "rms_prop_eps",
                "use_rms_prop",
                # The target network and exploration, as the optimizer room measures them at runtime.
                "tau",
                "target_update_interval",
                "target_entropy",
                "exploration_*",
                "noise_type",
                "noise_std",
                *(
                    ["ent_coef"] if self._resolved["algo"] == "sac" else []
                ),  # α, as optimizer/exploration reads it
            ],
            "loss": [
                "gamma",
                "gae_lambda",
                "clip_range*",
                *([] if self._resolved["algo"] == "sac" else ["ent_coef"]),  # PPO's and A2C's entropy bonus
                "vf_coef",
                "target_policy_noise",  # TD3's target policy smoothing, inside the TD target
                "target_noise_clip",
                "normalize_advantage",
                "target_kl",
            ],
            "trainer": [
                "n_steps",
                "batch_size",
                "n_epochs",
                "n_timesteps",
                "train_freq",
                "gradient_steps",
                "learning_starts",
                "use_sde",
                "sde_sample_freq",
                "policy_delay",  # TD3's delayed actor updates, as trainer/replay-ratio counts them
            ],
            "memory": ["buffer_size", "optimize_memory_usage", "*_buffer_class", "*_buffer_kwargs*"],
            "agents": [
                "policy",
                "policy_kwargs.net_arch*",
                "policy_kwargs.activation_fn",
                "policy_kwargs.features_*",
                "policy_kwargs.share_features_extractor",
                "policy_kwargs.normalize_images",
            ],
            "init": ["policy_kwargs.ortho_init", "policy_kwargs.log_std_init"],
            "seeding": ["seed"],
            "logging": ["tensorboard_log", "stats_window_size"],
            "checkpointing": ["models"],
        }

    def total_steps(self, config: dict[str, Any]) -> int | None:
        """The setup's ``n_timesteps``: the run length its schedules (``lin_`` rates, clip ranges) span."""
        steps = config.get("n_timesteps")
        return int(float(steps)) if steps else None

    # -- environment, policy, optimizer ----------------------------------------------------------------

    def make_env(self, config: dict[str, Any], seed: int) -> SB3VectorEnv:
        """SB3's env stack for the setup (Monitor, VecNormalize) behind the Gymnasium vector API."""
        env = SB3VectorEnv(make_vec_env(config, seed))
        env.reset(seed=seed)
        return env

    def make_policy(self, config: dict[str, Any], observation_space: Any, action_space: Any) -> Any:
        """The algorithm's policy class with the setup's policy_kwargs (its optimizer built inside, as in SB3).

        The policy is on the setup's ``device`` (``auto``: the GPU when there is one), as in training.
        On-policy policies also get ``get_value(obs)`` and ``get_action_and_value(obs, action=None)`` (CleanRL's
        interface, which rlaudit's loss probes use), computed with SB3's own distribution and value head.
        """
        cls = algo_class(config["algo"])
        policy_cls = cls.policy_aliases[config["policy"]]
        lr = schedule_fn(config.get("learning_rate", 3e-4))
        kwargs = policy_kwargs_of(config)
        if config["algo"] in ("ppo", "a2c", "sac"):
            kwargs["use_sde"] = bool(config.get("use_sde", False))  # as the algorithm passes it
        policy = policy_cls(observation_space, action_space, as_schedule(lr), **kwargs)
        policy.to(resolve_device(config.get("device", "cpu")))  # where build_model puts it (SB3's `device`)
        if config["algo"] in ON_POLICY:
            add_cleanrl_interface(policy)
        return policy

    def make_optimizer(self, config: dict[str, Any], policy: Any) -> Any:
        """The optimizer SB3 built into the policy, with a scheduler that replays SB3's learning-rate schedule.

        SB3 sets the learning rate once per rollout from ``progress_remaining`` (1 -> 0 over ``n_timesteps``).
        The returned ``LambdaLR`` replays that curve, one scheduler step per rollout of ``n_steps * n_envs``
        environment steps (on-policy; one environment step off-policy): after ``k`` steps the rate is
        ``schedule(1 - k * rollout / n_timesteps)``. The optimizer as built holds ``schedule(1)``, like SB3's.

        SAC, TD3 and DDPG step an actor optimizer and a critic optimizer, built alike (same class and
        settings): they are returned as one optimizer of that class with two param groups, the actor's and
        the critic's, which for a per-parameter optimizer such as Adam is the same update. DQN's is the
        Q-network's; the target networks are in no param group (see ``target_networks``).
        """
        import torch

        optimizer = (
            joint_optimizer(policy) if config["algo"] in ("sac", "td3", "ddpg") else optimizer_of(policy)
        )
        if optimizer is None:
            raise TypeError(f"{type(policy).__name__} has no optimizer attribute; is it an SB3 policy?")
        schedule = schedule_fn(config.get("learning_rate", 3e-4))
        if not callable(schedule):
            return optimizer
        per_step = int(config.get("n_steps", 1)) * int(config["n_envs"]) if config["algo"] in ON_POLICY else 1
        # the schedule spans the run's length; without n_timesteps in the setup, 100 rollouts
        total = int(config.get("n_timesteps") or 0) or 100 * per_step
        start = float(schedule(1.0))

        def factor(k: int) -> float:
            # after k rollouts SB3 computes schedule(1 - k * per_step / total); it applies that value to the
            # update that follows rollout k, so the optimizer as built holds schedule(1), as SB3's does
            progress_remaining = max(0.0, 1.0 - k * per_step / total)
            return float(schedule(progress_remaining)) / start if start else 0.0

        return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)

    # -- what SB3 computes inline (rlaudit.adapters.sb3.loss) --------------------------------------------

    def compute_advantages(
        self, config: dict[str, Any], rewards: Any, values: Any, dones: Any, next_value: Any
    ) -> Any:
        """GAE by SB3's own rollout buffer (:func:`rlaudit.adapters.sb3.loss.compute_advantages`)."""
        return loss.compute_advantages(config, rewards, values, dones, next_value)

    def compute_loss(
        self, config: dict[str, Any], policy: Any, batch: dict[str, Any], *, progress: float = 0.0
    ) -> dict[str, Any]:
        """The loss of SB3's ``train()`` on one minibatch (:func:`rlaudit.adapters.sb3.loss.compute_loss`)."""
        return loss.compute_loss(config, policy, batch, progress=progress)

    def target_networks(self, config: dict[str, Any], policy: Any) -> dict[str, str]:
        """Target module prefix -> online module prefix (:func:`rlaudit.adapters.sb3.offpolicy.target_networks`)."""
        return offpolicy.target_networks(config, policy)

    def compute_td_targets(
        self, config: dict[str, Any], policy: Any, batch: dict[str, Any]
    ) -> dict[str, Any]:
        """The critic's targets as SB3's ``train()`` computes them
        (:func:`rlaudit.adapters.sb3.offpolicy.compute_td_targets`)."""
        return offpolicy.compute_td_targets(config, policy, batch)

    def compute_td_loss(
        self, config: dict[str, Any], policy: Any, batch: dict[str, Any], targets: Any
    ) -> float:
        """The critic loss SB3's ``train()`` minimises against ``targets``
        (:func:`rlaudit.adapters.sb3.offpolicy.compute_td_loss`)."""
        return offpolicy.compute_td_loss(config, policy, batch, targets)

    # -- training --------------------------------------------------------------------------------------

    def build_model(self, config: dict[str, Any], seed: int, run_dir: str | Path | None = None) -> Any:
        """The SB3 model for the setup on its VecEnv stack (no logger attached)."""
        cls = algo_class(config["algo"])
        venv = make_vec_env(config, seed)
        hyper = hyperparameters_of(config)
        if config.get("noise_type"):
            hyper["action_noise"] = action_noise_of(config, venv.action_space)
        return cls(
            config["policy"],
            venv,
            seed=seed,
            device=config.get("device", "cpu"),
            verbose=0,
            policy_kwargs=policy_kwargs_of(config),
            **hyper,
        )

    def train(
        self, config: dict[str, Any], steps: int, seed: int, recorder: Any, *, resume_from: str | None = None
    ) -> dict[str, Any]:
        """``model.learn`` with the recorder fed by a callback and by SB3's logger.

        Writes TensorBoard events and ``progress.csv`` to ``<run_dir>/tb`` and model zips to
        ``<run_dir>/checkpoints/model_<step>.zip``: one after the first rollout past half the run and one at
        the end (with VecNormalize on, also SB3's ``vecnormalize_<step>.pkl`` and a pickle-free
        ``vecnormalize_<step>.npz`` of its statistics).

        Args:
            steps: Length of the run in environment steps, all environments together; when resuming, the
                length of the whole run (the resumed part trains ``steps`` minus the checkpoint's step).
            resume_from: A model zip of this run to continue from: weights, optimizer state, step counter and
                observation statistics (read without unpickling). Environments and random generators restart,
                so the continuation is close to, not identical with, the uninterrupted run.
        """
        import time

        import numpy as np

        run_dir = Path(recorder.run_dir) if getattr(recorder, "run_dir", None) else None
        model = self.build_model(config, seed, run_dir)
        if run_dir is not None:
            model.set_logger(make_logger(run_dir / "tb", recorder))
        else:
            from stable_baselines3.common.logger import configure

            model.set_logger(configure(None, []))
        saved: list[str] = []

        def save(m: Any) -> None:
            if run_dir is None:
                return
            ckpt_dir = run_dir / "checkpoints"
            ckpt_dir.mkdir(parents=True, exist_ok=True)
            path = ckpt_dir / f"model_{m.num_timesteps}.zip"
            m.save(path)
            saved.append(str(path))
            venv = m.get_env()
            if hasattr(venv, "obs_rms"):
                venv.save(str(ckpt_dir / f"vecnormalize_{m.num_timesteps}.pkl"))
                stats = {
                    "obs_mean": venv.obs_rms.mean,
                    "obs_var": venv.obs_rms.var,
                    "obs_count": venv.obs_rms.count,
                }
                stats.update(
                    ret_mean=venv.ret_rms.mean, ret_var=venv.ret_rms.var, ret_count=venv.ret_rms.count
                )
                np.savez(
                    ckpt_dir / f"vecnormalize_{m.num_timesteps}.npz",
                    **{k: np.asarray(v) for k, v in stats.items()},
                )

        start_step = 0
        if resume_from is not None:
            policy, extras = self.load_checkpoint(config, resume_from)
            model.policy.load_state_dict(policy.state_dict())
            optimizer = optimizer_of(model.policy)
            if extras.get("optimizer") and optimizer is not None:
                optimizer.load_state_dict(extras["optimizer"])
            venv = model.get_env()
            if extras.get("obs_rms") is not None and hasattr(venv, "obs_rms"):
                venv.obs_rms.mean = np.asarray(extras["obs_rms"]["mean"], dtype=np.float64)
                venv.obs_rms.var = np.asarray(extras["obs_rms"]["var"], dtype=np.float64)
                venv.obs_rms.count = float(extras["obs_rms"]["count"])
            start_step = int(extras.get("step", 0))
            model.num_timesteps = start_step
        remaining = int(steps) - start_step
        started = time.perf_counter()
        if remaining > 0:
            half = int(steps) // 2
            callback = make_callback(recorder, half if start_step < half else None, save)
            # with reset_num_timesteps=False SB3 runs to num_timesteps + remaining = steps, and its schedules
            # see the progress of the whole run
            if config["algo"] in offpolicy.OFF_POLICY:
                # gradient steps, target-network updates, epsilon/alpha and replay ages to the recorder
                with offpolicy.OffPolicyInstruments(model, recorder, config, int(steps)):
                    model.learn(
                        total_timesteps=remaining, callback=callback, reset_num_timesteps=resume_from is None
                    )
            else:
                model.learn(
                    total_timesteps=remaining, callback=callback, reset_num_timesteps=resume_from is None
                )
        seconds = time.perf_counter() - started
        if not saved or saved[-1] != str(run_dir / "checkpoints" / f"model_{model.num_timesteps}.zip"):
            save(model)
        model.get_env().close()
        episodes = [float(e["r"]) for e in model.ep_info_buffer] if model.ep_info_buffer else []
        return {
            "steps": int(model.num_timesteps),
            "seconds": seconds,
            "sps": max(remaining, 0) / max(seconds, 1e-9),
            "mean_return_last100": float(np.mean(episodes)) if episodes else float("nan"),
            "checkpoints": saved,
            "run_dir": str(run_dir) if run_dir else "",
        }

    # -- checkpoints and logs ---------------------------------------------------------------------------

    def checkpoints(self, config: dict[str, Any], run_dir: str | Path | None = None) -> list[str]:
        """Model zips: the run's (newest first) with ``run_dir``, else the setup's ``models:`` in order."""
        if run_dir is not None:
            found = sorted((Path(run_dir) / "checkpoints").glob("*.zip"), key=step_of, reverse=True)
            return [str(p) for p in found]
        return [m for m in config.get("models", []) if Path(m).is_file()]

    def _normalizer_for(self, config: dict[str, Any], path: Path) -> dict[str, Any] | None:
        """Observation statistics saved beside a model zip (our .npz, else SB3's .pkl when trusted)."""
        from rlaudit.engine.safeload import load_checkpoint_safely

        step = step_of(path)
        candidates = [path.with_name(f"vecnormalize_{step}.npz"), path.with_name(f"vecnormalize_{step}.pkl")]
        candidates += [path.parent / "vecnormalize.pkl", path.parent / "vec_normalize.pkl"]
        candidates += [path.parent / config["env_id"] / "vecnormalize.pkl"]
        for candidate in candidates:
            if not candidate.is_file():
                continue
            ckpt = load_checkpoint_safely(candidate, trust=bool(config.get("trust_pickles", False)))
            ckpt.raise_if_unloaded()
            arrays = ckpt.arrays()
            if "obs_mean" in arrays:
                return {
                    "mean": arrays["obs_mean"],
                    "var": arrays["obs_var"],
                    "count": float(arrays["obs_count"]),
                }
            if "obs_rms/mean" in arrays:
                count = ckpt.metadata.get("obs_rms", {}).get("count")
                return {"mean": arrays["obs_rms/mean"], "var": arrays["obs_rms/var"], "count": count}
        return None

    def load_checkpoint(self, config: dict[str, Any], path: str | Path) -> tuple[Any, dict[str, Any]]:
        """Rebuild the policy from a model zip without unpickling anything from it.

        Returns:
            ``(policy, extras)``: extras ``optimizer`` (its state dict), ``step`` (``num_timesteps``),
            ``obs_rms`` (when VecNormalize statistics are found beside the zip), ``data`` (the readable part of
            the zip's ``data`` JSON), ``skipped`` (pickled entries not loaded).

        Raises:
            rlaudit.engine.safeload.UnsafeCheckpointError: The zip's tensors cannot be read without unpickling.
        """
        import torch

        from rlaudit.engine.safeload import load_checkpoint_safely

        path = Path(path)
        ckpt = load_checkpoint_safely(path).raise_if_unloaded()
        if ckpt.format != "sb3":
            raise ValueError(f"{path} is a {ckpt.format} file, not a Stable-Baselines3 model zip")
        venv = make_vec_env(config, 0)
        try:
            policy = self.make_policy(config, venv.observation_space, venv.action_space)
        finally:
            venv.close()
        policy.load_state_dict(ckpt.group("policy"))
        optimizer_state = None
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            optimizer_file = (
                "policy.optimizer.pth" if "policy.optimizer.pth" in names else "critic.optimizer.pth"
            )
            if optimizer_file in names:
                optimizer_state = torch.load(
                    io.BytesIO(zf.read(optimizer_file)), map_location="cpu", weights_only=True
                )
            if config["algo"] == "sac" and "pytorch_variables.pth" in names:
                # SAC's temperature lives on the model, not the policy: keep the saved one for compute_td_targets
                variables = torch.load(
                    io.BytesIO(zf.read("pytorch_variables.pth")), map_location="cpu", weights_only=True
                )
                if variables.get("log_ent_coef") is not None:
                    policy.rlaudit_ent_coef = float(variables["log_ent_coef"].detach().exp().item())
                elif variables.get("ent_coef_tensor") is not None:
                    policy.rlaudit_ent_coef = float(variables["ent_coef_tensor"].item())
        data = ckpt.metadata.get("data", {})
        extras: dict[str, Any] = {
            "optimizer": optimizer_state,
            "step": int(data.get("num_timesteps", 0)),
            "data": data,
            "skipped": ckpt.skipped,
            "path": str(path),
        }
        obs_rms = self._normalizer_for(config, path)
        if obs_rms is not None:
            extras["obs_rms"] = obs_rms
        return policy, extras

    def log_dir(self, config: dict[str, Any], run_dir: str | Path | None = None) -> str:
        """``<run_dir>/tb`` (events and progress.csv) for a run; else the setup's ``tensorboard_log``.

        Raises:
            FileNotFoundError: Neither a run directory nor a ``tensorboard_log`` in the setup file.
        """
        if run_dir is not None:
            return str(Path(run_dir) / "tb")
        if config.get("tensorboard_log"):
            return str(config["tensorboard_log"])
        raise FileNotFoundError(
            f"SB3 setup {self.path} has no tensorboard_log: and no run directory was given; add "
            "tensorboard_log: <dir> to the YAML to audit existing logs"
        )


def load(spec: Any) -> SB3Subject:
    """Loader for :data:`rlaudit.engine.subjects.ADAPTERS`: ``sb3:<file.yaml>`` -> :class:`SB3Subject`."""
    target = getattr(spec, "target", spec)
    return SB3Subject(Path(os.fspath(target)))
