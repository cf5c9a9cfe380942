"""Reading an SB3 setup file and resolving it: the algorithm, the environment, every hyperparameter (omitted
ones filled in from SB3's own ``__init__`` defaults), the policy's and VecNormalize's settings, the classes
the YAML names (from an allow-list of modules), and the paths it names.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import math
import re
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


NOISE_TYPES = ("normal", "ornstein-uhlenbeck")
"""rl-zoo's ``noise_type`` values: SB3's NormalActionNoise and OrnsteinUhlenbeckActionNoise."""


def require_algorithm(config: dict[str, Any], family: frozenset[str], capability: str, kind: str) -> str:
    """The setup's algorithm, when ``capability`` covers it (one of ``family``, SB3's ``kind`` algorithms).

    Raises:
        TypeError: The setup's algorithm is not in ``family``.
    """
    algo = config["algo"]
    if algo not in family:
        raise TypeError(
            f"{capability} covers SB3's {kind} algorithms ({', '.join(sorted(family))}); "
            f"the setup's algorithm is {algo!r}"
        )
    return algo


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
    "noise_type": "exploration noise added to continuous actions (rl-zoo's; TD3, DDPG, SAC): normal or "
    "ornstein-uhlenbeck",
    "noise_std": "that noise's standard deviation, the same for every action dimension (with noise_type)",
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
POLICY_NOT_KWARGS = frozenset({"self", "observation_space", "action_space", "lr_schedule", "use_sde"})
"""Policy ``__init__`` arguments that are never ``policy_kwargs`` (use_sde is passed by the algorithm itself,
from its own use_sde argument)."""

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


class SB3SetupError(ValueError):
    """The SB3 setup file is malformed: unknown keys, bad values, an algorithm SB3 does not have."""


# ---------------------------------------------------------------------------------------------------------
# Reading and resolving the setup


def algo_class(algo: str) -> type:
    """The Stable-Baselines3 class of ``algo`` (``ppo`` -> ``PPO``).

    Raises:
        SB3SetupError: An unknown algorithm, listing the known ones.
    """
    import stable_baselines3

    try:
        return getattr(stable_baselines3, ALGORITHMS[algo])
    except KeyError:
        raise SB3SetupError(
            f"unknown algorithm {algo!r}; expected one of {', '.join(ALGORITHMS)} (Stable-Baselines3's)"
        ) from None


def signature_defaults(fn: Any, skip: frozenset[str]) -> dict[str, Any]:
    """The keyword defaults of ``fn``'s signature, less the names in ``skip`` and ``*args``/``**kwargs``."""
    out = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name in skip or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        out[name] = None if param.default is inspect.Parameter.empty else param.default
    return out


def hyperparameter_defaults(algo: str) -> dict[str, Any]:
    """The algorithm's ``__init__`` keyword arguments with SB3's defaults (as plain values)."""
    return {
        k: plain_value(v)
        for k, v in signature_defaults(algo_class(algo).__init__, _NOT_HYPERPARAMETERS).items()
    }


def _class_name(cls: Any) -> str:
    """A class's import path, with torch.nn/torch.optim classes under their public module."""
    import torch

    for public, module in (("torch.nn", torch.nn), ("torch.optim", torch.optim)):
        if getattr(module, getattr(cls, "__name__", ""), None) is cls:
            return f"{public}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def plain_value(value: Any) -> Any:
    """JSON-able form of a default or setting (classes become their import path, tuples lists)."""
    if isinstance(value, type):
        return _class_name(value)
    if isinstance(value, tuple | list):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items()}
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


def check_schedule(value: Any, key: str) -> Any:
    """A learning-rate-like setting ``key`` checked: a number (a numeric string is parsed), an rl-zoo linear
    schedule ``lin_<start>``, or any other value as given.

    Raises:
        SB3SetupError: Neither, naming ``key`` and the value.
    """
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


def normalize_settings(value: Any, gamma: float) -> dict[str, Any]:
    """The ``VecNormalize`` keyword arguments a setup's ``normalize:`` asks for (rl-zoo's syntax), over its
    defaults, with the algorithm's ``gamma`` as rl-zoo passes it."""
    from stable_baselines3.common.vec_env import VecNormalize

    defaults = {
        k: plain_value(v) for k, v in signature_defaults(VecNormalize.__init__, _NORMALIZE_NOT_KWARGS).items()
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


def policy_settings(
    algo: str, policy: str, value: Any, hyper: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The policy's keyword arguments: the user's over the policy class's ``__init__`` defaults, plus the
    optimizer settings SB3 fills in when none are given (so the config shows what SB3 actually builds)."""
    cls = algo_class(algo)
    policy_cls = cls.policy_aliases.get(policy)
    if policy_cls is None:
        raise SB3SetupError(
            f"policy {policy!r} is not one of {ALGORITHMS[algo]}'s: {', '.join(cls.policy_aliases)}"
        )
    defaults = {
        k: plain_value(v) for k, v in signature_defaults(policy_cls.__init__, POLICY_NOT_KWARGS).items()
    }
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
        # A2C.__init__: torch's RMSprop unless the user chose an optimizer (SB3's TF-like RMSprop, with eps
        # inside the square root, only when policy_kwargs name it, as rl-zoo's Atari entries do)
        settings["optimizer_class"] = "torch.optim.RMSprop"
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


def action_noise_settings(values: dict[str, Any]) -> tuple[str | None, float | None]:
    """The exploration noise on actions a setup asks for, as rl-zoo writes it: ``(noise_type, noise_std)``,
    ``(None, None)`` for none. ``values`` holds ``algo`` and the setup's keys (a file's, or a resolved config).

    Raises:
        SB3SetupError: ``action_noise`` given as a value (a setup file cannot build SB3's noise object), noise
            for an algorithm that takes none, an unknown kind, or a kind without its standard deviation.
    """
    algo = values["algo"]
    if values.get("action_noise") is not None:
        raise SB3SetupError(
            f"action_noise is SB3's noise object, which a setup file cannot build (got {values['action_noise']!r}); "
            "write rl-zoo's keys instead: noise_type: normal (or ornstein-uhlenbeck) and noise_std: 0.1"
        )
    kind, std = values.get("noise_type"), values.get("noise_std")
    if kind is None and std is None:
        return None, None
    if "action_noise" not in hyperparameter_defaults(algo):
        raise SB3SetupError(
            f"noise_type and noise_std add exploration noise to continuous actions; {ALGORITHMS[algo]} takes none "
            "(TD3, DDPG and SAC do): remove them"
        )
    if kind is None:
        raise SB3SetupError(
            f"noise_std: {std} is given without noise_type: add noise_type: {' or '.join(NOISE_TYPES)}"
        )
    kind = str(kind).strip().lower()
    if kind not in NOISE_TYPES:
        raise SB3SetupError(f"noise_type must be {' or '.join(NOISE_TYPES)} (rl-zoo's), got {kind!r}")
    if std is None:
        raise SB3SetupError(
            f"noise_type: {kind} needs noise_std, the noise's standard deviation (rl-zoo's TD3 entries use 0.1)"
        )
    try:
        sigma = float(std)
    except (TypeError, ValueError):
        sigma = math.nan
    if not math.isfinite(sigma) or sigma < 0:
        raise SB3SetupError(f"noise_std must be a number of at least 0, got {std!r}")
    return kind, sigma


def resolve_setup(data: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """The fully resolved config: every hyperparameter (SB3 defaults filled in), policy and normalize settings.

    Raises:
        SB3SetupError: A value SB3 would not accept in that place.
    """
    algo = data["algo"]
    noise_type, noise_std = action_noise_settings(data)
    hyper = hyperparameter_defaults(algo)
    for key in hyper:
        if key in data:
            hyper[key] = plain_value(data[key])
    for key in ("learning_rate", "clip_range", "clip_range_vf"):
        if key in hyper and hyper[key] is not None:
            hyper[key] = check_schedule(hyper[key], key)
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
        "env_kwargs": plain_value(dict(data.get("env_kwargs") or {})),
        "normalize": normalize_settings(data.get("normalize", False), gamma),
        "policy_kwargs": policy_settings(algo, policy, data.get("policy_kwargs"), hyper),
        **hyper,
        # rl-zoo's action noise, for the algorithms that take noise (PPO, A2C and DQN do not)
        **({"noise_type": noise_type, "noise_std": noise_std} if "action_noise" in hyper else {}),
        "models": [location(m) for m in models],
        "tensorboard_log": location(data["tensorboard_log"]) if data.get("tensorboard_log") else "",
        "trust_pickles": bool(data.get("trust_pickles", False)),
    }
    if config["n_envs"] < 1:
        raise SB3SetupError(f"n_envs must be at least 1, got {config['n_envs']}")
    return config
