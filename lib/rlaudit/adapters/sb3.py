"""``sb3:<file.yaml>``: a Stable-Baselines3 setup, described in rl-zoo style, as an rlaudit subject.

The YAML file names the algorithm, the Gymnasium environment and the hyperparameters the way rl-baselines3-zoo
writes them (``learning_rate: lin_0.001``, ``policy_kwargs: "dict(net_arch=[64, 64])"``), plus optional
artifacts the user already has::

    algo: ppo                       # ppo | a2c | dqn | sac | td3 | ddpg
    env_id: CartPole-v1
    n_envs: 8
    n_timesteps: 100000             # the run length the setup was tuned for
    policy: MlpPolicy
    normalize: false                # true, or {norm_obs: true, norm_reward: false, ...} (VecNormalize)
    n_steps: 32                     # ... any keyword argument of the algorithm's __init__
    learning_rate: lin_0.001
    policy_kwargs: {net_arch: [64, 64], activation_fn: tanh}
    models: [runs/ppo_final.zip]    # existing model zips (checkpoints), optional
    tensorboard_log: runs/tb        # existing TensorBoard directory, optional

An rl-zoo hyperparameter file keyed by the environment id (``CartPole-v1: {...}``) works too, with ``algo:``
beside it (or the algorithm as the file's name, ``ppo.yml``). Unknown keys are an error that lists the known
ones. Relative paths resolve against the YAML file's directory.

:class:`SB3Subject` implements the subject contract with SB3's own code paths: ``config()`` is the setup with
every omitted hyperparameter filled in from the algorithm's (and policy's, and VecNormalize's) ``__init__``
defaults, so a key left out shows SB3's default; ``train`` runs ``model.learn`` with a callback that feeds the
recorder (``recorder.watch(model.policy, optimizer)``, episodes from the Monitor infos, scalars from SB3's
logger); ``make_env`` wraps SB3's VecEnv stack (Monitor, VecNormalize) in the Gymnasium vector API;
``load_checkpoint`` reads model zips without unpickling (:mod:`rlaudit.safeload`). For PPO and A2C,
``compute_advantages`` is SB3's own GAE and ``compute_loss`` re-derives the loss that ``train()`` writes inline
(SB3 has no loss function to call) from ``policy.evaluate_actions`` and the resolved hyperparameters.
"""

from __future__ import annotations

import ast
import copy
import difflib
import inspect
import io
import json
import math
import os
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlaudit.adapters.configs import read_yaml_mapping

ALGORITHMS: dict[str, str] = {
    "ppo": "PPO",
    "a2c": "A2C",
    "dqn": "DQN",
    "sac": "SAC",
    "td3": "TD3",
    "ddpg": "DDPG",
}
"""Algorithm names the YAML may use -> class in ``stable_baselines3``."""

ON_POLICY = frozenset({"ppo", "a2c"})

SETUP_KEYS: dict[str, str] = {
    "algo": "the algorithm: " + ", ".join(ALGORITHMS),
    "env_id": "Gymnasium environment id, e.g. CartPole-v1",
    "policy": "policy name (MlpPolicy, CnnPolicy, MultiInputPolicy); default MlpPolicy",
    "n_envs": "number of parallel environments (default 1)",
    "n_timesteps": "run length the setup was tuned for (rl-zoo); train() takes its own steps",
    "normalize": "VecNormalize: false, true, or a mapping of its arguments",
    "policy_kwargs": "policy keyword arguments (mapping, or rl-zoo's 'dict(...)' string)",
    "env_kwargs": "keyword arguments for gymnasium.make",
    "models": "existing model zips (a path or a list), newest first",
    "tensorboard_log": "existing TensorBoard log directory",
    "seed": "seed of the setup (train() takes its own)",
    "device": "torch device (default cpu)",
    "trust_pickles": "unpickle VecNormalize .pkl files next to models (runs code from them; default false)",
}
"""Keys of the YAML that are not keyword arguments of the algorithm, with what they mean."""

# Algorithm __init__ parameters that the setup keys (or the adapter) provide.
_NOT_HYPERPARAMETERS = frozenset(
    {
        "self",
        "policy",
        "env",
        "tensorboard_log",
        "policy_kwargs",
        "verbose",
        "seed",
        "device",
        "_init_setup_model",
    }
)
_NORMALIZE_NOT_KWARGS = frozenset({"self", "venv", "training", "norm_obs_keys"})
# use_sde is passed by the algorithm itself (from its own use_sde argument), never through policy_kwargs
_POLICY_NOT_KWARGS = frozenset({"self", "observation_space", "action_space", "lr_schedule", "use_sde"})

# Modules a class named in the YAML (activation_fn, optimizer_class, ...) may come from: importing a name from
# a YAML file must not become a way to run arbitrary code.
_CLASS_MODULES = (
    "torch.nn",
    "torch.optim",
    "stable_baselines3.common.torch_layers",
    "stable_baselines3.common.sb2_compat.rmsprop_tf_like",
    "stable_baselines3.common.noise",
)
_SHORT_ACTIVATIONS = {
    "tanh": "Tanh",
    "relu": "ReLU",
    "elu": "ELU",
    "leaky_relu": "LeakyReLU",
    "gelu": "GELU",
    "silu": "SiLU",
    "sigmoid": "Sigmoid",
}

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


class SB3SetupError(ValueError):
    """The SB3 setup file is malformed: unknown keys, bad values, an algorithm SB3 does not have."""


# ---------------------------------------------------------------------------------------------------------
# Reading and resolving the setup


def _algo_class(algo: str) -> type:
    import stable_baselines3

    try:
        return getattr(stable_baselines3, ALGORITHMS[algo])
    except KeyError:
        raise SB3SetupError(
            f"unknown algorithm {algo!r}; expected one of {', '.join(ALGORITHMS)} (Stable-Baselines3's)"
        ) from None


def _signature_defaults(fn: Any, skip: frozenset[str]) -> dict[str, Any]:
    out = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name in skip or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        out[name] = None if param.default is inspect.Parameter.empty else param.default
    return out


def hyperparameter_defaults(algo: str) -> dict[str, Any]:
    """The algorithm's ``__init__`` keyword arguments with SB3's defaults (as plain values)."""
    return {
        k: _plain(v) for k, v in _signature_defaults(_algo_class(algo).__init__, _NOT_HYPERPARAMETERS).items()
    }


def _class_name(cls: Any) -> str:
    """A class's import path, with torch.nn/torch.optim classes under their public module."""
    import torch

    for public, module in (("torch.nn", torch.nn), ("torch.optim", torch.optim)):
        if getattr(module, getattr(cls, "__name__", ""), None) is cls:
            return f"{public}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _plain(value: Any) -> Any:
    """JSON-able form of a default or setting (classes become their import path, tuples lists)."""
    if isinstance(value, type):
        return _class_name(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if callable(value):
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', repr(value))}"
    return repr(value)


def resolve_class(name: str, *, what: str) -> type:
    """A class named in the YAML (``tanh``, ``nn.ReLU``, ``torch.optim.AdamW``, ``NatureCNN``).

    Only classes from torch.nn, torch.optim and SB3's layer/optimizer/noise modules are resolved.

    Raises:
        SB3SetupError: The name is not found in those modules.
    """
    import importlib

    text = str(name).strip()
    short = _SHORT_ACTIVATIONS.get(text.lower())
    if short:
        text = short
    for prefix in ("th.nn.", "torch.nn.", "nn.", "th.optim.", "torch.optim.", "optim."):
        if text.startswith(prefix):
            text_module = "torch.optim" if "optim" in prefix else "torch.nn"
            cls = getattr(importlib.import_module(text_module), text[len(prefix) :], None)
            if isinstance(cls, type):
                return cls
    module_name, _, attr = text.rpartition(".")
    if module_name:
        # a full import path: only inside the allowed modules (importing one of their submodules is safe)
        if any(module_name == m or module_name.startswith(m + ".") for m in _CLASS_MODULES):
            try:
                cls = getattr(importlib.import_module(module_name), attr, None)
            except ImportError:
                cls = None
            if isinstance(cls, type):
                return cls
    else:
        for candidate in _CLASS_MODULES:
            cls = getattr(importlib.import_module(candidate), attr, None)
            if isinstance(cls, type):
                return cls
    raise SB3SetupError(
        f"{what}: cannot resolve class {name!r}; rlaudit resolves classes only from {', '.join(_CLASS_MODULES)} "
        "(e.g. tanh, nn.ReLU, torch.optim.AdamW, NatureCNN)"
    )


def _parse_zoo_expression(text: str, *, what: str) -> Any:
    """rl-zoo's Python-literal strings (``"dict(net_arch=[64, 64], activation_fn=nn.ReLU)"``) without eval."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise SB3SetupError(f"{what}: cannot parse {text!r} ({exc.msg})") from None

    def convert(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple):
            return [convert(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            return {convert(k): convert(v) for k, v in zip(node.keys, node.values, strict=True)}
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "dict"
            and not node.args
        ):
            return {kw.arg: convert(kw.value) for kw in node.keywords}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -convert(node.operand)
        if isinstance(node, ast.Attribute | ast.Name):
            return _class_name(resolve_class(ast.unparse(node), what=what))
        raise SB3SetupError(
            f"{what}: {ast.unparse(node)!r} in {text!r} is not a literal, dict(...) or a class name; rlaudit "
            "does not evaluate code from setup files"
        )

    return convert(tree.body)


def _check_schedule(value: Any, key: str) -> Any:
    if isinstance(value, str):
        if re.fullmatch(r"lin_[-+0-9.eE]+", value.strip()):
            float(value.strip()[4:])
            return value.strip()
        try:
            return float(value)
        except ValueError:
            raise SB3SetupError(
                f"{key}: {value!r} is neither a number nor an rl-zoo linear schedule like lin_0.001"
            ) from None
    return value


def read_setup(path: str | Path) -> dict[str, Any]:
    """The YAML file as a flat rl-zoo-style mapping (env-keyed rl-zoo files unwrapped), keys checked.

    Raises:
        FileNotFoundError: The file does not exist.
        SB3SetupError: Not a mapping, no algorithm, unknown keys (listing the known ones).
    """
    path = Path(path)
    data = read_yaml_mapping(
        path, "SB3 setup file", "(algo:, env_id:, hyperparameters; see rlaudit.adapters.sb3)", SB3SetupError
    )
    data = {str(k): v for k, v in data.items()}
    if "env_id" not in data:
        # rl-zoo's layout: {<env id>: {hyperparameters}}, the algorithm from algo: or the file name
        nested = [
            k for k, v in data.items() if isinstance(v, dict) and k not in SETUP_KEYS and k != "policy_kwargs"
        ]
        if len(nested) == 1:
            env_id = nested[0]
            data = {**{k: v for k, v in data.items() if k != env_id}, **data[env_id], "env_id": env_id}
    if "algo" not in data and path.stem.lower() in ALGORITHMS:
        data["algo"] = path.stem.lower()
    if "algo" not in data:
        raise SB3SetupError(
            f"SB3 setup file {path} does not say which algorithm: add algo: (one of {', '.join(ALGORITHMS)})"
        )
    algo = str(data["algo"]).lower()
    data["algo"] = algo
    if "env_id" not in data:
        raise SB3SetupError(
            f"SB3 setup file {path} has no env_id: (a Gymnasium environment id, e.g. CartPole-v1)"
        )
    known_hyper = hyperparameter_defaults(algo)
    unknown = [k for k in data if k not in SETUP_KEYS and k not in known_hyper]
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(key, [*SETUP_KEYS, *known_hyper], n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise SB3SetupError(
            f"SB3 setup file {path} has unknown key(s) {', '.join(hints)}. Known keys: setup: "
            f"{', '.join(SETUP_KEYS)}; {ALGORITHMS[algo]} hyperparameters: {', '.join(known_hyper)}"
        )
    return data


def _normalize_settings(value: Any, gamma: float) -> dict[str, Any]:
    from stable_baselines3.common.vec_env import VecNormalize

    defaults = {
        k: _plain(v) for k, v in _signature_defaults(VecNormalize.__init__, _NORMALIZE_NOT_KWARGS).items()
    }
    # rl-zoo passes the algorithm's gamma to VecNormalize (the return it normalizes rewards by)
    defaults["gamma"] = gamma
    if isinstance(value, str):
        parsed = _parse_zoo_expression(value, what="normalize")
        value = parsed
    if value is None or value is False:
        return {**defaults, "norm_obs": False, "norm_reward": False}
    if value is True:
        return defaults
    if isinstance(value, dict):
        bad = sorted(set(value) - set(defaults))
        if bad:
            raise SB3SetupError(
                f"normalize has unknown key(s) {', '.join(bad)}; known: {', '.join(defaults)}"
            )
        return {**defaults, **value}
    raise SB3SetupError(
        f"normalize must be true, false or a mapping of VecNormalize arguments, got {value!r}"
    )


def _policy_settings(
    algo: str, policy: str, value: Any, hyper: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The policy's keyword arguments: the user's over the policy class's ``__init__`` defaults, plus the
    optimizer settings SB3 fills in when none are given (so the config shows what SB3 actually builds)."""
    cls = _algo_class(algo)
    policy_cls = cls.policy_aliases.get(policy)
    if policy_cls is None:
        raise SB3SetupError(
            f"policy {policy!r} is not one of {ALGORITHMS[algo]}'s: {', '.join(cls.policy_aliases)}"
        )
    defaults = {k: _plain(v) for k, v in _signature_defaults(policy_cls.__init__, _POLICY_NOT_KWARGS).items()}
    if isinstance(value, str):
        value = _parse_zoo_expression(value, what="policy_kwargs")
    value = dict(value or {})
    bad = sorted(set(value) - set(defaults))
    if bad:
        raise SB3SetupError(
            f"policy_kwargs has unknown key(s) {', '.join(bad)} for {policy_cls.__name__}; known: {', '.join(defaults)}"
        )
    settings = {**defaults, **value}
    for key in ("activation_fn", "optimizer_class", "features_extractor_class"):
        if isinstance(settings.get(key), str):
            settings[key] = _class_name(resolve_class(settings[key], what=f"policy_kwargs.{key}"))
    if settings.get("net_arch") is None:
        # the architecture each policy builds when net_arch is left out (SB3's policies.py of each algorithm)
        if algo in ON_POLICY:
            cnn = str(settings.get("features_extractor_class", "")).endswith("NatureCNN")
            settings["net_arch"] = [] if cnn else {"pi": [64, 64], "vf": [64, 64]}
        elif algo == "dqn":
            settings["net_arch"] = [64, 64]
        elif algo == "sac":
            settings["net_arch"] = [256, 256]
        elif algo in ("td3", "ddpg"):
            settings["net_arch"] = [400, 300]
    hyper = hyper or {}
    if algo == "a2c" and hyper.get("use_rms_prop", True) and "optimizer_class" not in value:
        # A2C.__init__: RMSprop with TF's epsilon placement unless the user chose an optimizer
        settings["optimizer_class"] = "stable_baselines3.common.sb2_compat.rmsprop_tf_like.RMSpropTFLike"
        settings["optimizer_kwargs"] = {
            "alpha": 0.99,
            "eps": hyper.get("rms_prop_eps", 1e-5),
            "weight_decay": 0,
        }
    elif (
        algo in ON_POLICY
        and settings.get("optimizer_kwargs") is None
        and settings.get("optimizer_class") == "torch.optim.Adam"
    ):
        # ActorCriticPolicy.__init__ sets Adam's eps to 1e-5 when no optimizer_kwargs are given
        settings["optimizer_kwargs"] = {"eps": 1e-5}
    return settings


def resolve_setup(data: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """The fully resolved config: every hyperparameter (SB3 defaults filled in), policy and normalize settings.

    Raises:
        SB3SetupError: A value SB3 would not accept in that place.
    """
    algo = data["algo"]
    hyper = hyperparameter_defaults(algo)
    for key in hyper:
        if key in data:
            hyper[key] = _plain(data[key])
    for key in ("learning_rate", "clip_range", "clip_range_vf"):
        if key in hyper and hyper[key] is not None:
            hyper[key] = _check_schedule(hyper[key], key)
    policy = str(data.get("policy", "MlpPolicy"))
    gamma = float(hyper.get("gamma", 0.99))

    def location(value: Any) -> str:
        p = Path(str(value)).expanduser()
        return str(p if p.is_absolute() else (base_dir / p).resolve())

    models = data.get("models") or []
    models = [models] if isinstance(models, str) else list(models)
    config = {
        "algo": algo,
        "env_id": str(data["env_id"]),
        "policy": policy,
        "n_envs": int(data.get("n_envs", 1)),
        "n_timesteps": int(float(data.get("n_timesteps", 0))),
        "seed": None if data.get("seed") is None else int(data["seed"]),
        "device": str(data.get("device", "cpu")),
        "env_kwargs": _plain(dict(data.get("env_kwargs") or {})),
        "normalize": _normalize_settings(data.get("normalize", False), gamma),
        "policy_kwargs": _policy_settings(algo, policy, data.get("policy_kwargs"), hyper),
        **hyper,
        "models": [location(m) for m in models],
        "tensorboard_log": location(data["tensorboard_log"]) if data.get("tensorboard_log") else "",
        "trust_pickles": bool(data.get("trust_pickles", False)),
    }
    if config["n_envs"] < 1:
        raise SB3SetupError(f"n_envs must be at least 1, got {config['n_envs']}")
    return config


# ---------------------------------------------------------------------------------------------------------
# Building SB3 objects from a resolved config


def _schedule_fn(value: Any) -> Any:
    """rl-zoo's ``lin_<x>`` -> SB3's LinearSchedule (x at the start, 0 at the end); numbers stay numbers."""
    if isinstance(value, str) and value.startswith("lin_"):
        from stable_baselines3.common.utils import LinearSchedule

        return LinearSchedule(start=float(value[4:]), end=0.0, end_fraction=1.0)
    return value


def _schedule_value(value: Any, progress_remaining: float) -> float:
    """A hyperparameter that may be a schedule (``lin_0.2``) at SB3's ``progress_remaining`` (1 -> 0)."""
    schedule = _schedule_fn(value)
    return float(schedule(progress_remaining)) if callable(schedule) else float(schedule)


def _as_schedule(value: Any) -> Any:
    """A callable schedule SB3's policies accept (FloatSchedule in SB3 >= 2.6, get_schedule_fn before)."""
    from stable_baselines3.common import utils

    if hasattr(utils, "FloatSchedule"):
        return utils.FloatSchedule(value)
    return utils.get_schedule_fn(value)


def _policy_kwargs(config: dict[str, Any]) -> dict[str, Any]:
    """Policy keyword arguments for SB3 (class names -> classes); only those differing from the defaults."""
    cls = _algo_class(config["algo"])
    policy_cls = cls.policy_aliases[config["policy"]]
    # compared with the bare __init__ defaults, so SB3's fill-ins shown in the config (A2C's RMSprop, Adam's
    # eps=1e-5, the default net_arch) are passed explicitly: the policy is then the same whether SB3's
    # algorithm builds it or make_policy does
    defaults = {k: _plain(v) for k, v in _signature_defaults(policy_cls.__init__, _POLICY_NOT_KWARGS).items()}
    out = {}
    for key, value in config["policy_kwargs"].items():
        if key in defaults and value == defaults[key]:
            continue
        if key in ("activation_fn", "optimizer_class", "features_extractor_class") and isinstance(value, str):
            value = resolve_class(value, what=f"policy_kwargs.{key}")
        out[key] = copy.deepcopy(value)
    return out


def _hyperparameters(config: dict[str, Any]) -> dict[str, Any]:
    known = hyperparameter_defaults(config["algo"])
    hyper = {k: copy.deepcopy(config[k]) for k in known if k in config}
    for key in ("learning_rate", "clip_range", "clip_range_vf"):
        if key in hyper and hyper[key] is not None:
            hyper[key] = _schedule_fn(hyper[key])
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


def _add_cleanrl_interface(policy: Any) -> None:
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


def _optimizer_of(policy: Any) -> Any:
    """The optimizer SB3 steps for this policy: ``policy.optimizer``, else the critic's (SAC/TD3/DDPG)."""
    optimizer = getattr(policy, "optimizer", None)
    if optimizer is None and getattr(policy, "critic", None) is not None:
        optimizer = getattr(policy.critic, "optimizer", None)
    return optimizer


def _make_callback(
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
            optimizer = _optimizer_of(self.model.policy)
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


def _make_logger(folder: Path, recorder: Any) -> Any:
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


def _step_of(path: Path) -> int:
    match = re.search(r"(\d+)", path.stem)
    return int(match.group(1)) if match else -1


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
                    config[key] = _check_schedule(config[key], key)
            config["normalize"] = _normalize_settings(config["normalize"], float(config.get("gamma", 0.99)))
            config["policy_kwargs"] = _policy_settings(
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
            ],
            "loss": [
                "gamma",
                "gae_lambda",
                "clip_range*",
                "ent_coef",
                "vf_coef",
                "normalize_advantage",
                "target_kl",
                "tau",
                "target_update_interval",
                "target_entropy",
            ],
            "trainer": [
                "n_steps",
                "batch_size",
                "n_epochs",
                "n_timesteps",
                "train_freq",
                "gradient_steps",
                "learning_starts",
                "exploration_*",
                "use_sde",
                "sde_sample_freq",
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

    # -- environment, policy, optimizer ----------------------------------------------------------------

    def make_env(self, config: dict[str, Any], seed: int) -> SB3VectorEnv:
        """SB3's env stack for the setup (Monitor, VecNormalize) behind the Gymnasium vector API."""
        env = SB3VectorEnv(make_vec_env(config, seed))
        env.reset(seed=seed)
        return env

    def make_policy(self, config: dict[str, Any], observation_space: Any, action_space: Any) -> Any:
        """The algorithm's policy class with the setup's policy_kwargs (its optimizer built inside, as in SB3).

        On-policy policies also get ``get_value(obs)`` and ``get_action_and_value(obs, action=None)`` (CleanRL's
        interface, which rlaudit's loss probes use), computed with SB3's own distribution and value head.
        """
        cls = _algo_class(config["algo"])
        policy_cls = cls.policy_aliases[config["policy"]]
        lr = _schedule_fn(config.get("learning_rate", 3e-4))
        kwargs = _policy_kwargs(config)
        if config["algo"] in ("ppo", "a2c", "sac"):
            kwargs["use_sde"] = bool(config.get("use_sde", False))  # as the algorithm passes it
        policy = policy_cls(observation_space, action_space, _as_schedule(lr), **kwargs)
        if config["algo"] in ON_POLICY:
            _add_cleanrl_interface(policy)
        return policy

    def make_optimizer(self, config: dict[str, Any], policy: Any) -> Any:
        """The optimizer SB3 built into the policy, with a scheduler that replays SB3's learning-rate schedule.

        SB3 sets the learning rate once per rollout from ``progress_remaining`` (1 -> 0 over ``n_timesteps``).
        The returned ``LambdaLR`` replays that curve, one scheduler step per rollout of ``n_steps * n_envs``
        environment steps (on-policy; one environment step off-policy): after ``k`` steps the rate is
        ``schedule(1 - k * rollout / n_timesteps)``. The optimizer as built holds ``schedule(1)``, like SB3's.
        """
        import torch

        optimizer = _optimizer_of(policy)
        if optimizer is None:
            raise TypeError(f"{type(policy).__name__} has no optimizer attribute; is it an SB3 policy?")
        schedule = _schedule_fn(config.get("learning_rate", 3e-4))
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

    def compute_advantages(
        self, config: dict[str, Any], rewards: Any, values: Any, dones: Any, next_value: Any
    ) -> Any:
        """GAE computed by SB3's own ``RolloutBuffer.compute_returns_and_advantage``.

        ``dones[t]`` is 1 where the episode ended at step t (the contract's convention); SB3's buffer wants
        episode starts, which are the dones shifted by one step. Shapes (T, N); ``next_value`` (N,).
        """
        import numpy as np
        import torch
        from gymnasium import spaces
        from stable_baselines3.common.buffers import RolloutBuffer

        as_torch = isinstance(rewards, torch.Tensor)
        r = np.asarray(rewards.detach().cpu() if as_torch else rewards, dtype=np.float32)
        v = np.asarray(values.detach().cpu() if hasattr(values, "detach") else values, dtype=np.float32)
        d = np.asarray(dones.detach().cpu() if hasattr(dones, "detach") else dones, dtype=np.float32)
        nv = np.asarray(
            next_value.detach().cpu() if hasattr(next_value, "detach") else next_value, dtype=np.float32
        )
        steps, n_envs = r.shape
        buffer = RolloutBuffer(
            steps,
            spaces.Box(-np.inf, np.inf, (1,), np.float32),
            spaces.Discrete(2),
            device="cpu",
            gae_lambda=float(config["gae_lambda"]),
            gamma=float(config["gamma"]),
            n_envs=n_envs,
        )
        buffer.rewards[:] = r
        buffer.values[:] = v
        buffer.episode_starts[:] = 0.0
        buffer.episode_starts[1:] = d[:-1]
        buffer.compute_returns_and_advantage(last_values=torch.as_tensor(nv), dones=d[-1])
        adv, ret = buffer.advantages.copy(), buffer.returns.copy()
        if as_torch:
            return torch.as_tensor(adv), torch.as_tensor(ret)
        return adv, ret

    def compute_loss(
        self, config: dict[str, Any], policy: Any, batch: dict[str, Any], *, progress: float = 0.0
    ) -> dict[str, Any]:
        """The loss SB3's ``PPO.train`` / ``A2C.train`` minimizes on one minibatch, re-derived from its pieces.

        SB3 has no loss function to call: the loss is written inline in each algorithm's ``train()``. This
        method recomputes it with the policy's own ``evaluate_actions(obs, actions)`` and the setup's resolved
        hyperparameters, following the formulas of SB3's ``train()`` (stable-baselines3 2.x) term by term:

        - advantages normalized per minibatch when ``normalize_advantage`` (PPO: only for more than one
          sample), ``(A - mean) / (std + 1e-8)`` with the unbiased std;
        - PPO: ``policy_loss = -mean(min(A * r, A * clamp(r, 1 - clip, 1 + clip)))`` with
          ``r = exp(logp - logp_old)`` and ``clip = clip_range(progress_remaining)``; the value prediction
          clipped to ``old_value +- clip_range_vf(progress_remaining)`` when ``clip_range_vf`` is set;
        - A2C: ``policy_loss = -mean(A * logp)``;
        - ``value_loss = mse(returns, value)`` (no factor 1/2, unlike CleanRL);
        - ``entropy_loss = -mean(entropy)`` (``-mean(-logp)`` where the distribution has no closed form);
        - ``loss = policy_loss + ent_coef * entropy_loss + vf_coef * value_loss``.

        The policy is put in training mode for the forward pass, as ``train()`` does, and put back.

        Args:
            config: The resolved setup (:meth:`config`).
            policy: An SB3 actor-critic policy (:meth:`make_policy`, :meth:`load_checkpoint`).
            batch: ``obs`` (B, *obs_shape), ``actions`` (B,) for Discrete (else (B, action_dim)),
                ``logprobs`` (B,) behaviour log-probabilities, ``advantages`` (B,), ``returns`` (B,),
                ``values`` (B,) behaviour values (what ``clip_range_vf`` clips around).
            progress: Fraction of the run done, 0 at the start and 1 at the end; schedules (``lin_0.2``) are
                evaluated at SB3's ``progress_remaining = 1 - progress``.

        Returns:
            Scalar tensors: ``loss``, ``policy_loss``, ``value_loss``, ``entropy`` (the mean entropy, positive),
            ``entropy_loss`` (SB3's sign: ``-entropy``); PPO adds the detached diagnostics ``approx_kl``
            (``mean((r - 1) - log r)``, as SB3 logs it) and ``clipfrac`` (fraction with ``|r - 1| > clip``).
            These are what SB3 logs as ``train/loss``, ``train/policy_gradient_loss`` (A2C:
            ``train/policy_loss``), ``train/value_loss``, ``train/entropy_loss``, ``train/approx_kl`` and
            ``train/clip_fraction`` for a single minibatch.

        Raises:
            TypeError: The setup's algorithm is not an on-policy actor-critic (PPO or A2C).
        """
        import torch
        import torch.nn.functional as F
        from gymnasium import spaces

        algo = config["algo"]
        if algo not in ON_POLICY:
            raise TypeError(
                f"compute_loss covers SB3's on-policy algorithms ({', '.join(sorted(ON_POLICY))}); "
                f"the setup's algorithm is {algo!r}"
            )
        device = getattr(policy, "device", torch.device("cpu"))

        def column(name: str) -> Any:
            return torch.as_tensor(batch[name], dtype=torch.float32, device=device).flatten()

        raw_obs = batch["obs"]
        if isinstance(raw_obs, dict):
            obs: Any = {k: torch.as_tensor(v, device=device) for k, v in raw_obs.items()}
        else:
            obs = torch.as_tensor(raw_obs, device=device)
        actions = torch.as_tensor(batch["actions"], device=device)
        if isinstance(policy.action_space, spaces.Discrete):
            actions = actions.long().flatten()  # as train() converts the buffer's float actions
        else:
            # the rollout buffer stores every other action space as float32 (B, action_dim)
            actions = actions.to(torch.float32).reshape(actions.shape[0], -1)
        old_logprob, advantages = column("logprobs"), column("advantages")
        returns, old_values = column("returns"), column("values")

        was_training = bool(policy.training)
        policy.set_training_mode(True)
        try:
            values, log_prob, entropy = policy.evaluate_actions(obs, actions)
        finally:
            policy.set_training_mode(was_training)
        values = values.flatten()

        # PPO skips the normalization of a one-sample minibatch (SB3 issue #325); A2C always normalizes.
        if config["normalize_advantage"] and (algo == "a2c" or len(advantages) > 1):
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)

        out: dict[str, Any] = {}
        progress_remaining = 1.0 - float(progress)
        if algo == "ppo":
            clip_range = _schedule_value(config["clip_range"], progress_remaining)
            ratio = torch.exp(log_prob - old_logprob)
            surrogate = advantages * ratio
            clipped = advantages * torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
            policy_loss = -torch.min(surrogate, clipped).mean()
            if config.get("clip_range_vf") is None:
                values_pred = values
            else:
                clip_vf = _schedule_value(config["clip_range_vf"], progress_remaining)
                values_pred = old_values + torch.clamp(values - old_values, -clip_vf, clip_vf)
            with torch.no_grad():
                log_ratio = log_prob - old_logprob
                out["approx_kl"] = torch.mean((torch.exp(log_ratio) - 1) - log_ratio)
                out["clipfrac"] = torch.mean((torch.abs(ratio - 1) > clip_range).float())
        else:
            policy_loss = -(advantages * log_prob).mean()
            values_pred = values
        value_loss = F.mse_loss(returns, values_pred)
        entropy_loss = torch.mean(log_prob) if entropy is None else -torch.mean(entropy)
        loss = policy_loss + float(config["ent_coef"]) * entropy_loss + float(config["vf_coef"]) * value_loss
        return {
            "loss": loss,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": -entropy_loss,
            "entropy_loss": entropy_loss,
            **out,
        }

    # -- training --------------------------------------------------------------------------------------

    def build_model(self, config: dict[str, Any], seed: int, run_dir: str | Path | None = None) -> Any:
        """The SB3 model for the setup on its VecEnv stack (no logger attached)."""
        cls = _algo_class(config["algo"])
        venv = make_vec_env(config, seed)
        return cls(
            config["policy"],
            venv,
            seed=seed,
            device=config.get("device", "cpu"),
            verbose=0,
            policy_kwargs=_policy_kwargs(config),
            **_hyperparameters(config),
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
            model.set_logger(_make_logger(run_dir / "tb", recorder))
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
            optimizer = _optimizer_of(model.policy)
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
            callback = _make_callback(recorder, half if start_step < half else None, save)
            # with reset_num_timesteps=False SB3 runs to num_timesteps + remaining = steps, and its schedules
            # see the progress of the whole run
            model.learn(total_timesteps=remaining, callback=callback, reset_num_timesteps=resume_from is None)
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
            found = sorted((Path(run_dir) / "checkpoints").glob("*.zip"), key=_step_of, reverse=True)
            return [str(p) for p in found]
        return [m for m in config.get("models", []) if Path(m).is_file()]

    def _normalizer_for(self, config: dict[str, Any], path: Path) -> dict[str, Any] | None:
        """Observation statistics saved beside a model zip (our .npz, else SB3's .pkl when trusted)."""
        from rlaudit.safeload import load_checkpoint_safely

        step = _step_of(path)
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
            rlaudit.safeload.UnsafeCheckpointError: The zip's tensors cannot be read without unpickling.
        """
        import torch

        from rlaudit.safeload import load_checkpoint_safely

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
            if "policy.optimizer.pth" in zf.namelist():
                optimizer_state = torch.load(
                    io.BytesIO(zf.read("policy.optimizer.pth")), map_location="cpu", weights_only=True
                )
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
    """Loader for :data:`rlaudit.subjects.ADAPTERS`: ``sb3:<file.yaml>`` -> :class:`SB3Subject`."""
    target = getattr(spec, "target", spec)
    return SB3Subject(Path(os.fspath(target)))
