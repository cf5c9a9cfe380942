"""Building SB3 objects from a resolved setup and running them: schedules, the VecEnv stack behind the
Gymnasium vector API, the CleanRL-style interface on SB3 policies, the callback that feeds the recorder, and
SB3's logger with the field's scalar names.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlaudit.adapters.sb3.setup import (
    POLICY_NOT_KWARGS,
    SB3SetupError,
    algo_class,
    hyperparameter_defaults,
    plain_value,
    resolve_class,
    signature_defaults,
)

# SB3 logger keys -> the field's conventional names (CleanRL's); the rest keep SB3's names.
SB3_SCALAR_NAMES: dict[str, str] = {
    "train/value_loss": "losses/value_loss",
    "train/policy_gradient_loss": "losses/policy_loss",
    "train/policy_loss": "losses/policy_loss",
    "train/approx_kl": "losses/approx_kl",
    "train/clip_fraction": "losses/clipfrac",
    "train/explained_variance": "losses/explained_variance",
    "train/loss": "losses/loss",
    "train/learning_rate": "charts/learning_rate",
    "train/clip_range": "charts/clip_range",
    "time/fps": "perf/sps",
    "rollout/ep_rew_mean": "charts/episodic_return",
    "rollout/ep_len_mean": "charts/episodic_length",
    "rollout/exploration_rate": "charts/exploration_rate",
}


# ---------------------------------------------------------------------------------------------------------
# Building SB3 objects from a resolved config


def schedule_fn(value: Any) -> Any:
    """rl-zoo's ``lin_<x>`` -> SB3's LinearSchedule (x at the start, 0 at the end); numbers stay numbers."""
    if isinstance(value, str) and value.startswith("lin_"):
        from stable_baselines3.common.utils import LinearSchedule

        return LinearSchedule(start=float(value[4:]), end=0.0, end_fraction=1.0)
    return value


def schedule_value(value: Any, progress_remaining: float) -> float:
    """A hyperparameter that may be a schedule (``lin_0.2``) at SB3's ``progress_remaining`` (1 -> 0)."""
    schedule = schedule_fn(value)
    return float(schedule(progress_remaining)) if callable(schedule) else float(schedule)


def as_schedule(value: Any) -> Any:
    """A callable schedule SB3's policies accept (FloatSchedule in SB3 >= 2.6, get_schedule_fn before)."""
    from stable_baselines3.common import utils

    if hasattr(utils, "FloatSchedule"):
        return utils.FloatSchedule(value)
    return utils.get_schedule_fn(value)


def policy_kwargs_of(config: dict[str, Any]) -> dict[str, Any]:
    """Policy keyword arguments for SB3 (class names -> classes); only those differing from the defaults."""
    cls = algo_class(config["algo"])
    policy_cls = cls.policy_aliases[config["policy"]]
    # compared with the bare __init__ defaults, so SB3's fill-ins shown in the config (A2C's RMSprop, Adam's
    # eps=1e-5, the default net_arch) are passed explicitly: the policy is then the same whether SB3's
    # algorithm builds it or make_policy does
    defaults = {
        k: plain_value(v) for k, v in signature_defaults(policy_cls.__init__, POLICY_NOT_KWARGS).items()
    }
    out = {}
    for key, value in config["policy_kwargs"].items():
        if key in defaults and value == defaults[key]:
            continue
        if key in ("activation_fn", "optimizer_class", "features_extractor_class") and isinstance(value, str):
            value = resolve_class(value, what=f"policy_kwargs.{key}")
        out[key] = copy.deepcopy(value)
    return out


def action_noise_of(config: dict[str, Any], action_space: Any) -> Any:
    """SB3's exploration noise for the setup's ``noise_type`` and ``noise_std`` (rl-zoo's keys): the same σ on
    every dimension of the Box ``action_space``, mean 0; None without ``noise_type``.

    Raises:
        SB3SetupError: The environment's actions are not continuous (a Box).
    """
    kind = config.get("noise_type")
    if not kind:
        return None
    import numpy as np
    from gymnasium import spaces
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    if not isinstance(action_space, spaces.Box):
        raise SB3SetupError(
            f"noise_type: {kind} adds noise to continuous actions, but {config['env_id']} has {action_space}: "
            "remove noise_type and noise_std"
        )
    n_actions = int(np.prod(action_space.shape))
    noise = NormalActionNoise if kind == "normal" else OrnsteinUhlenbeckActionNoise
    return noise(mean=np.zeros(n_actions), sigma=float(config["noise_std"]) * np.ones(n_actions))


def hyperparameters_of(config: dict[str, Any]) -> dict[str, Any]:
    """The algorithm keyword arguments of a resolved setup ``config``, schedules made callables."""
    known = hyperparameter_defaults(config["algo"])
    hyper = {k: copy.deepcopy(config[k]) for k in known if k in config}
    for key in ("learning_rate", "clip_range", "clip_range_vf"):
        if key in hyper and hyper[key] is not None:
            hyper[key] = schedule_fn(hyper[key])
    for key in ("train_freq",):
        if isinstance(hyper.get(key), list):
            hyper[key] = tuple(hyper[key])
    return hyper


def make_vec_env(config: dict[str, Any], seed: int | None) -> Any:
    """SB3's VecEnv stack for the setup: ``make_vec_env`` (Monitor-wrapped) and VecNormalize when enabled."""
    from stable_baselines3.common.env_util import make_vec_env as sb3_make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    venv = sb3_make_vec_env(
        config["env_id"], n_envs=int(config["n_envs"]), seed=seed, env_kwargs=dict(config["env_kwargs"])
    )
    norm = config["normalize"]
    if norm.get("norm_obs") or norm.get("norm_reward"):
        venv = VecNormalize(venv, **norm)
    return venv


class SB3VectorEnv:
    """An SB3 VecEnv stack seen through the Gymnasium vector API (SAME_STEP autoreset).

    ``reset(seed=...)`` returns ``(obs, info)``; ``step`` returns ``(obs, rewards, terminations, truncations,
    info)`` with truncation read from SB3's ``TimeLimit.truncated`` flag. As in SB3, an env that finishes an
    episode is reset in the same step: ``info["final_obs"]`` (masked by ``info["_final_obs"]``) holds the last
    observation of the finished episode, ``info["episode"]`` its Monitor statistics. With VecNormalize the
    observations and rewards are normalized as the agent sees them; ``info["original_reward"]`` has the raw
    rewards. Built by :meth:`SB3Subject.make_env`.
    """

    def __init__(self, venv: Any) -> None:
        import gymnasium as gym
        from gymnasium.vector.utils import batch_space

        self.venv = venv
        self.num_envs = int(venv.num_envs)
        self.single_observation_space = venv.observation_space
        self.single_action_space = venv.action_space
        self.observation_space = batch_space(venv.observation_space, self.num_envs)
        self.action_space = batch_space(venv.action_space, self.num_envs)
        self.metadata = {"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP, "render_modes": []}
        self.render_mode = None
        self.closed = False
        self.spec = None

    @property
    def unwrapped(self) -> SB3VectorEnv:
        return self

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self.venv.seed(int(seed))
            self.action_space.seed(int(seed))
        obs = self.venv.reset()
        return obs, {}

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        import numpy as np

        obs, rewards, dones, infos = self.venv.step(np.asarray(actions))
        truncations = np.array([bool(i.get("TimeLimit.truncated", False)) for i in infos]) & dones
        terminations = dones & ~truncations
        info: dict[str, Any] = {}
        if dones.any():
            final = np.empty(self.num_envs, dtype=object)
            for i, item in enumerate(infos):
                if dones[i]:
                    final[i] = item.get("terminal_observation")
            info["final_obs"], info["_final_obs"] = final, dones.copy()
            returns = np.array(
                [i["episode"]["r"] if "episode" in i else 0.0 for i in infos], dtype=np.float64
            )
            lengths = np.array([i["episode"]["l"] if "episode" in i else 0 for i in infos], dtype=np.int64)
            mask = np.array(["episode" in i for i in infos])
            info["episode"] = {"r": returns, "l": lengths, "_r": mask, "_l": mask}
            info["_episode"] = mask
        if hasattr(self.venv, "get_original_reward"):
            info["original_reward"] = self.venv.get_original_reward()
        return obs, rewards.astype(np.float64), terminations, truncations, info

    def close(self) -> None:
        if not self.closed:
            self.venv.close()
            self.closed = True

    def __enter__(self) -> SB3VectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def add_cleanrl_interface(policy: Any) -> None:
    """Give an SB3 actor-critic policy CleanRL's ``get_value`` / ``get_action_and_value`` (what rlaudit's loss
    probes call), computed by SB3's own ``predict_values`` / ``get_distribution``; nothing else changes."""
    import types

    def get_value(self: Any, x: Any) -> Any:
        """``x`` (B, *obs_shape) -> values (B,)."""
        return self.predict_values(x).flatten()

    def get_action_and_value(self: Any, x: Any, action: Any = None) -> tuple[Any, Any, Any, Any]:
        """Sample (or score) actions: -> (action (B,), logprob (B,), entropy (B,), value (B,))."""
        distribution = self.get_distribution(x)
        if action is None:
            action = distribution.get_actions(deterministic=False)
        entropy = distribution.entropy()
        return action, distribution.log_prob(action), entropy, self.predict_values(x).flatten()

    # plain attributes on the instance: nn.Module stores non-module values as ordinary attributes
    policy.get_value = types.MethodType(get_value, policy)
    policy.get_action_and_value = types.MethodType(get_action_and_value, policy)


def optimizer_of(policy: Any) -> Any:
    """The optimizer SB3 steps for this policy: ``policy.optimizer``, else the critic's (SAC/TD3/DDPG)."""
    optimizer = getattr(policy, "optimizer", None)
    if optimizer is None and getattr(policy, "critic", None) is not None:
        optimizer = getattr(policy.critic, "optimizer", None)
    return optimizer


def joint_optimizer(policy: Any) -> Any:
    """SAC/TD3/DDPG: the actor's and the critic's optimizers as one of the same class, a param group each.

    A new optimizer over the same parameters with each group's settings, for the audits that read how the
    policy is optimized; SB3 itself keeps stepping its two. Falls back to the critic's optimizer when the
    two are of different classes.
    """
    parts = [policy.actor.optimizer, policy.critic.optimizer]
    cls = type(parts[0])
    if any(type(p) is not cls for p in parts):
        return parts[1]
    groups = [dict(group) for part in parts for group in part.param_groups]
    for group in groups:
        group["params"] = list(group["params"])
    return cls(groups, **parts[0].defaults)


def make_callback(
    recorder: Any, checkpoint_at: int | None = None, save_checkpoint: Callable[[Any], Any] | None = None
) -> Any:
    """The callback feeding ``recorder``; with ``checkpoint_at``, it calls ``save_checkpoint(model)`` once, at the
    end of the first rollout that reaches that many environment steps."""
    from stable_baselines3.common.callbacks import BaseCallback

    class RecorderCallback(BaseCallback):
        """Feeds rlaudit's recorder from SB3's training loop (phases, episodes, the watched optimizer)."""

        def __init__(self) -> None:
            super().__init__(verbose=0)
            self._phase: Any = None
            self._saved_half = False

        def _switch(self, name: str | None) -> None:
            if self._phase is not None:
                self._phase.__exit__(None, None, None)
                self._phase = None
            if name is not None:
                self._phase = recorder.phase(name)
                self._phase.__enter__()

        def _on_training_start(self) -> None:
            optimizer = optimizer_of(self.model.policy)
            if optimizer is not None:
                recorder.watch(self.model.policy, optimizer)

        def _on_rollout_start(self) -> None:
            # SB3 dumps the previous update's train/* values only after the next rollout, under that later
            # step; dump them now, under the step at which they were computed (one row per step and name)
            if self.model.logger.name_to_value:
                # progress.csv has no step column: SB3's own rows carry it as time/total_timesteps
                self.model.logger.record(
                    "time/total_timesteps", int(self.num_timesteps), exclude="tensorboard"
                )
                self.model.logger.dump(int(self.num_timesteps))
            self._switch("rollout")

        def _on_step(self) -> bool:
            for i, info in enumerate(self.locals.get("infos") or ()):
                episode = info.get("episode")
                if episode is not None:
                    recorder.episode(
                        step=int(self.num_timesteps),
                        env=i,
                        **{"return": float(episode["r"]), "length": int(episode["l"])},
                    )
            return True

        def _on_rollout_end(self) -> None:
            self._switch("update")
            if hasattr(recorder, "sample_memory"):
                recorder.sample_memory(int(self.num_timesteps))
            ent_coef = getattr(self.model, "ent_coef", None)
            if isinstance(ent_coef, int | float) and not isinstance(ent_coef, bool):
                # SB3's on-policy algorithms do not log their (constant) entropy coefficient; the optimizer
                # audit reads schedules from the logged scalars, so record it with the rest (log files and
                # recorder alike; SAC logs its own as train/ent_coef)
                self.model.logger.record("charts/ent_coef", float(ent_coef))
            if checkpoint_at is not None and not self._saved_half and self.num_timesteps >= checkpoint_at:
                # a mid-run checkpoint, so that resuming can be tested against the uninterrupted run
                self._saved_half = True
                save_checkpoint(self.model)

        def _on_training_end(self) -> None:
            self._switch(None)
            # the last train() call's values are recorded but SB3 would dump them only at a next iteration
            if self.model.logger.name_to_value:
                self.model.logger.record(
                    "time/total_timesteps", int(self.num_timesteps), exclude="tensorboard"
                )
                self.model.logger.dump(int(self.num_timesteps))

    return RecorderCallback()


def rename_scalars(
    key_values: dict[str, Any], key_excluded: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """SB3's logger keys -> the field's names (:data:`SB3_SCALAR_NAMES`), both dicts alike.

    ``train/entropy_loss`` (SB3 logs minus the entropy) becomes ``losses/entropy`` with the sign flipped.
    """
    values: dict[str, Any] = {}
    excluded: dict[str, Any] = {}
    for key, value in key_values.items():
        name = SB3_SCALAR_NAMES.get(key, key)
        if key == "train/entropy_loss":
            name = "losses/entropy"
            value = -value if isinstance(value, int | float) and not isinstance(value, bool) else value
        values[name] = value
        excluded[name] = key_excluded.get(key)
    return values, excluded


def make_logger(folder: Path, recorder: Any) -> Any:
    """SB3 logger writing TensorBoard events and progress.csv to ``folder`` and every scalar to the recorder.

    All three get the same names (:func:`rename_scalars`), so what the trainer logged and what reached its
    log files can be compared name by name.
    """
    import numpy as np
    from stable_baselines3.common.logger import KVWriter, Logger, make_output_format

    class RenamingWriter(KVWriter):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
            values, excluded = rename_scalars(key_values, key_excluded)
            self.inner.write(values, excluded, step)

        def close(self) -> None:
            self.inner.close()

    class RecorderWriter(KVWriter):
        def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
            values, excluded = rename_scalars(key_values, key_excluded)
            # what SB3 keeps out of TensorBoard (time/total_timesteps: the step itself) stays out of the
            # recorder too, so the recorder and the event files hold the same names
            scalars = {
                k: float(v)
                for k, v in values.items()
                if not isinstance(v, bool)
                and isinstance(v, int | float | np.integer | np.floating)
                and "tensorboard" not in (excluded.get(k) or ())
            }
            if scalars:
                recorder.log(int(step), **scalars)

        def close(self) -> None:
            pass

    folder.mkdir(parents=True, exist_ok=True)
    formats: list[Any] = [RenamingWriter(make_output_format("csv", str(folder)))]
    try:
        formats.append(RenamingWriter(make_output_format("tensorboard", str(folder))))
    except (ImportError, AssertionError):
        pass  # tensorboard is not installed in this environment: CSV only
    formats.append(RecorderWriter())
    return Logger(str(folder), formats)


def step_of(path: Path) -> int:
    """The step number in a checkpoint file's name (``ppo_5000_steps.zip`` -> 5000); -1 when it has none."""
    match = re.search(r"(\d+)", path.stem)
    return int(match.group(1)) if match else -1
