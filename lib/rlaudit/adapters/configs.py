"""Configs users already have, as plain dicts: Hydra trees, YAML, JSON, TOML, pydantic, dataclasses, OmegaConf.

Two entry points:

* :func:`to_plain` turns a config *object* (an OmegaConf ``DictConfig``, a pydantic model, a dataclass, a
  mapping, an ``argparse.Namespace``) into a JSON-serializable dict with interpolations resolved.
* :func:`load_config` reads a config *file or directory*: a Hydra config directory (composed with overrides,
  like ``python train.py key=value`` would), the ``.hydra/`` directory Hydra writes into a run's output
  directory, or a single YAML, JSON or TOML file.

Overrides are Hydra-style strings: ``key.sub=value`` (value in YAML syntax), ``+key=value`` (add a key),
``++key=value`` (add or replace), ``~key`` (delete). :func:`apply_overrides` applies them to a plain dict, so
a subject whose config is not Hydra can still offer ``config(overrides=...)``.

Hydra, OmegaConf, PyYAML and pydantic are imported only by the functions that need them.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import enum
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HYDRA_RUNTIME_KEY = "hydra"
"""The node Hydra adds for its own runtime settings (output dir, job name, launcher); not training config."""

CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")

_OVERRIDE_RE = re.compile(
    r"^(?P<prefix>\+\+|\+|~)?(?P<key>[A-Za-z0-9_.\-/@\[\]]+)(?:=(?P<value>.*))?$", re.DOTALL
)


# ---------------------------------------------------------------------------------------------------------
# Objects -> plain dicts


def _is_omegaconf(obj: Any) -> bool:
    return type(obj).__module__.startswith("omegaconf")


def _plain_value(obj: Any, _depth: int = 0) -> Any:
    """JSON-able form of one value (recursively)."""
    if _depth > 100:
        raise ValueError(
            "config nests deeper than 100 levels (a reference cycle?); cannot convert it to a dict"
        )
    if obj is None or isinstance(obj, bool | str):
        return obj
    if isinstance(obj, int) and not isinstance(obj, bool):
        return int(obj)
    if isinstance(obj, float):
        # JSON has no NaN/inf; keep them readable and comparable as strings
        return float(obj) if math.isfinite(obj) else str(obj)
    if _is_omegaconf(obj):
        from omegaconf import OmegaConf

        return _plain_value(OmegaConf.to_container(obj, resolve=True, throw_on_missing=False), _depth + 1)
    if isinstance(obj, enum.Enum):
        return _plain_value(obj.value, _depth + 1)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    cls = type(obj)
    if cls.__module__ == "numpy" and hasattr(cls, "tolist"):  # numpy scalars and arrays
        return _plain_value(obj.tolist(), _depth + 1)
    if cls.__module__.startswith("torch") and hasattr(cls, "tolist"):
        return _plain_value(obj.tolist(), _depth + 1)
    if cls.__module__.startswith("torch") and cls.__name__ == "dtype":
        return str(obj)
    if hasattr(cls, "model_dump") and callable(cls.model_dump):  # pydantic v2
        return _plain_value(obj.model_dump(mode="python"), _depth + 1)
    if hasattr(cls, "dict") and hasattr(cls, "__fields__") and callable(cls.dict):  # pydantic v1
        return _plain_value(obj.dict(), _depth + 1)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # not dataclasses.asdict: it deep-copies every value, which fails on locks, modules, generators
        return {f.name: _plain_value(getattr(obj, f.name), _depth + 1) for f in dataclasses.fields(obj)}
    if isinstance(obj, argparse.Namespace):
        return _plain_value(vars(obj), _depth + 1)
    if isinstance(obj, Mapping):
        return {str(k): _plain_value(v, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, set | frozenset):
        return sorted((_plain_value(v, _depth + 1) for v in obj), key=repr)
    if isinstance(obj, Sequence) and not isinstance(obj, bytes | bytearray):
        return [_plain_value(v, _depth + 1) for v in obj]
    if isinstance(obj, bytes | bytearray):
        return obj.hex()
    if isinstance(obj, type) or callable(obj):
        # classes and functions (activation_fn=nn.Tanh, optimizer_class=Adam): their import path
        module = getattr(obj, "__module__", None) or "?"
        return f"{module}.{getattr(obj, '__qualname__', getattr(obj, '__name__', repr(obj)))}"
    if isinstance(obj, complex):
        return str(obj)
    return repr(obj)


def to_plain(obj: Any) -> dict[str, Any]:
    """A config object as a JSON-serializable dict with every interpolation resolved.

    Handles OmegaConf ``DictConfig`` (resolved; Hydra's ``hydra:`` runtime node removed), pydantic models
    (``model_dump``), dataclasses (field by field), ``argparse.Namespace``, mappings, and any nesting of them
    with lists and tuples. Leaves become JSON values: enums their value, paths strings, numpy/torch scalars
    Python numbers, classes and functions their ``module.qualname``, non-finite floats ``"nan"``/``"inf"``.

    Args:
        obj: The config object.

    Returns:
        A new dict (``obj`` is not modified).

    Raises:
        ValueError: ``obj`` is not a mapping-like config (e.g. a list or a number), or an interpolation
            cannot be resolved (the message names it).
    """
    if _is_omegaconf(obj):
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        try:
            container = OmegaConf.to_container(obj, resolve=True, throw_on_missing=False)
        except OmegaConfBaseException as exc:
            raise ValueError(f"cannot resolve the config's interpolations: {exc}") from None
        if isinstance(container, dict):
            container.pop(HYDRA_RUNTIME_KEY, None)
        obj = container
    plain = _plain_value(obj)
    if not isinstance(plain, dict):
        raise ValueError(
            f"expected a config object (mapping, dataclass, pydantic model, OmegaConf DictConfig or argparse "
            f"Namespace), got {type(obj).__name__}; wrap it in a dict"
        )
    plain.pop(HYDRA_RUNTIME_KEY, None)
    return plain


# ---------------------------------------------------------------------------------------------------------
# Overrides on plain dicts


def parse_value(text: str) -> Any:
    """An override's value in YAML syntax (``1e-3``, ``true``, ``[64, 64]``, ``null``, ``tanh``).

    Uses PyYAML when it is installed (subjects' own environments may not have it), else JSON, else Python
    literals, else the string itself. YAML 1.1 reads ``1e-3`` as a string; it is read as a number here, the
    way Hydra does.
    """
    text = text.strip()
    if text == "":
        return ""
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text
        if isinstance(value, str) and value == text:
            try:
                return float(text) if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+", text) else value
            except ValueError:
                return value
        return value
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _split_key(key: str) -> list[str]:
    return [part for part in key.split(".") if part != ""]


def apply_overrides(config: Mapping[str, Any], overrides: Sequence[str] | None) -> dict[str, Any]:
    """A copy of ``config`` with Hydra-style overrides applied.

    ``key.sub=value`` replaces an existing key (an unknown key is an error, as in Hydra), ``+key=value`` adds
    a key that must not exist, ``++key=value`` adds or replaces, ``~key`` deletes. Values are parsed by
    :func:`parse_value`. List items are addressed by index (``net_arch.0=128``).

    Raises:
        ValueError: A malformed override, or a key that does not exist (listing the keys at that level).
    """
    result = copy.deepcopy(dict(config))
    for override in overrides or ():
        match = _OVERRIDE_RE.match(str(override).strip())
        if not match:
            raise ValueError(
                f"malformed override {override!r}; expected key=value, +key=value, ++key=value or ~key "
                "(dotted keys, value in YAML syntax), e.g. trainer.learning_rate=3e-4"
            )
        prefix, key, raw = match.group("prefix") or "", match.group("key"), match.group("value")
        if prefix != "~" and raw is None:
            raise ValueError(f"override {override!r} has no value; expected {key}=<value>")
        parts = _split_key(key)
        node: Any = result
        for i, part in enumerate(parts[:-1]):
            node = _child(
                node, part, create=prefix in ("+", "++"), key=".".join(parts[: i + 1]), override=override
            )
        last = parts[-1]
        exists = _has(node, last)
        if prefix == "~":
            if not exists:
                raise ValueError(f"override {override!r} deletes key {key!r}, which the config does not have")
            if isinstance(node, list):
                node.pop(int(last))
            else:
                del node[last]
            continue
        value = parse_value(raw or "")
        if prefix == "" and not exists:
            keys = (
                ", ".join(sorted(map(str, node))) if isinstance(node, dict) else f"indices 0..{len(node) - 1}"
            )
            raise ValueError(
                f"override {override!r}: key {key!r} is not in the config (keys at that level: {keys}); "
                f"use +{key}=... to add it"
            )
        if prefix == "+" and exists:
            raise ValueError(f"override {override!r} adds key {key!r}, which already exists; use ++{key}=...")
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return result


def _has(node: Any, part: str) -> bool:
    if isinstance(node, dict):
        return part in node
    if isinstance(node, list):
        return part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node)
    return False


def _child(node: Any, part: str, *, create: bool, key: str, override: str) -> Any:
    if isinstance(node, dict):
        if part not in node:
            if not create:
                raise ValueError(
                    f"override {override!r}: key {key!r} is not in the config (keys at that level: "
                    f"{', '.join(sorted(map(str, node)))})"
                )
            node[part] = {}
        return node[part]
    if isinstance(node, list) and _has(node, part):
        return node[int(part)]
    raise ValueError(f"override {override!r}: {key!r} does not name a mapping or a list item in the config")


# ---------------------------------------------------------------------------------------------------------
# Files and directories -> plain dicts


def load_config(
    path_or_dir: str | Path, overrides: Sequence[str] | None = None, config_name: str | None = None
) -> dict[str, Any]:
    """Read a config as a plain, fully resolved dict.

    Args:
        path_or_dir: One of

            * a Hydra config directory (composed with Hydra's ``compose``; ``config_name`` picks the primary
              config, default ``config`` or the only top-level YAML file);
            * a Hydra run output directory, or its ``.hydra/`` directory (``config.yaml`` there is the
              already composed config the run used);
            * a YAML file (a Hydra primary config with a ``defaults:`` list is composed with its directory);
            * a JSON or TOML file.
        overrides: Hydra-style overrides (``trainer.lr=1e-3``, ``+x=1``, ``~y``); for Hydra trees they go
            through Hydra itself (config-group overrides such as ``optimizer=sgd`` work there).
        config_name: Primary config of a Hydra directory (with or without ``.yaml``).

    Returns:
        The config with interpolations resolved and Hydra's ``hydra:`` runtime node removed.

    Raises:
        FileNotFoundError: The path does not exist, or a directory holds no config.
        ValueError: An unsupported file type, a parse error, a bad override, or an interpolation that does
            not resolve (the message says which).
    """
    path = Path(path_or_dir).expanduser()
    if not path.exists():
        raise FileNotFoundError(
            f"config {path} not found; expected a Hydra config directory or a .yaml/.json/.toml file"
        )
    if path.is_dir():
        run_config = _hydra_run_config(path)
        if run_config is not None:
            return _load_yaml_file(run_config, overrides, compose=False)
        return compose_hydra(path, config_name=config_name, overrides=overrides)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return _load_yaml_file(path, overrides, compose=True, config_name=config_name)
    if suffix in (".json", ".toml"):
        return _finish(path, _parse_json_or_toml(path, suffix), overrides)
    raise ValueError(
        f"config {path} has an unsupported type {suffix or '(no suffix)'}; expected a Hydra directory or one of "
        f"{', '.join(CONFIG_SUFFIXES)} (for a Python config object use rlaudit.adapters.configs.to_plain)"
    )


def _parse_json_or_toml(path: Path, suffix: str) -> Any:
    """The content of a ``.json`` or ``.toml`` file; a parse error names the file and its format."""
    import tomllib

    kind, parse, error = {
        ".json": ("JSON", json.loads, json.JSONDecodeError),
        ".toml": ("TOML", tomllib.loads, tomllib.TOMLDecodeError),
    }[suffix]
    try:
        return parse(path.read_text())
    except error as exc:
        raise ValueError(f"config {path} is not valid {kind} ({exc})") from None


def read_yaml_mapping(
    path: Path, what: str, expected: str, error: type[Exception] = ValueError
) -> dict[str, Any]:
    """A YAML file that must hold a mapping (a pair file, an SB3 setup), with errors that name it.

    Args:
        path: The file.
        what: How errors name the file (``"pair file"``).
        expected: What the mapping should hold, as errors say it (``"with baseline: and candidate:"``).
        error: The exception raised for invalid YAML or a top level that is not a mapping.

    Raises:
        FileNotFoundError: ``path`` is not a file.
    """
    import yaml

    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} not found; expected a YAML file {expected}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise error(f"{what} {path} is not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise error(f"{what} {path} must be a mapping {expected}")
    return data


def _finish(path: Path, data: Any, overrides: Sequence[str] | None) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"config {path} must hold a mapping at the top level, found {type(data).__name__}")
    return apply_overrides(to_plain(data), overrides)


def _hydra_run_config(directory: Path) -> Path | None:
    """``config.yaml`` of a Hydra run's ``.hydra`` directory, when ``directory`` is one (or contains one)."""
    for candidate in (directory / ".hydra" / "config.yaml", directory / "config.yaml"):
        if candidate.is_file() and candidate.parent.name == ".hydra":
            return candidate
    return None


def _load_yaml_file(
    path: Path, overrides: Sequence[str] | None, *, compose: bool, config_name: str | None = None
) -> dict[str, Any]:
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        cfg = OmegaConf.load(path)
    except Exception as exc:  # yaml.YAMLError and OmegaConf's wrappers
        raise ValueError(f"config {path} is not valid YAML ({exc})") from None
    if compose and OmegaConf.is_dict(cfg) and "defaults" in cfg:
        # A Hydra primary config: its defaults list pulls in config groups from its directory.
        return compose_hydra(path.parent, config_name=config_name or path.stem, overrides=overrides)
    if not OmegaConf.is_dict(cfg):
        raise ValueError(f"config {path} must hold a mapping at the top level, found a {type(cfg).__name__}")
    raw = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(raw, dict)
    raw.pop(HYDRA_RUNTIME_KEY, None)
    raw = apply_overrides(raw, overrides)
    try:
        return to_plain(_resolve_leniently(OmegaConf.create(raw)))
    except OmegaConfBaseException as exc:
        raise ValueError(f"config {path}: {exc}") from None


def _resolve_leniently(cfg: Any) -> Any:
    """Resolve interpolations; one naming Hydra's runtime (``${hydra:...}``) outside a Hydra app stays text."""
    from omegaconf import OmegaConf
    from omegaconf.errors import (
        InterpolationResolutionError,
        MissingMandatoryValue,
        UnsupportedInterpolationType,
    )

    def walk(node: Any, path: list[str]) -> Any:
        if OmegaConf.is_dict(node):
            # Hydra's own node is dropped anyway, and parts of it are unset outside a running app
            keys = [k for k in node.keys() if path or k != HYDRA_RUNTIME_KEY]
            return {str(k): walk_key(node, k, path) for k in keys}
        if OmegaConf.is_list(node):
            return [walk_key(node, i, path) for i in range(len(node))]
        return node

    def walk_key(node: Any, key: Any, path: list[str]) -> Any:
        try:
            value = node[key]
        except MissingMandatoryValue:
            return "???"  # OmegaConf's marker for a value the user must provide
        except (InterpolationResolutionError, UnsupportedInterpolationType):
            raw = OmegaConf.to_container(node, resolve=False)
            text = raw[key]
            if isinstance(text, str) and "${hydra:" in text:
                return text
            raise
        if OmegaConf.is_config(value):
            return walk(value, [*path, str(key)])
        return value

    return walk(cfg, [])


def compose_hydra(
    config_dir: str | Path, config_name: str | None = None, overrides: Sequence[str] | None = None
) -> dict[str, Any]:
    """Compose a Hydra config tree the way ``@hydra.main`` would, and return it as a plain dict.

    ``${hydra:...}`` interpolations resolve against the composed Hydra config (``hydra.runtime.*`` and the
    job name are whatever compose sets; values it leaves unset stay as their ``${hydra:...}`` text). The
    ``hydra:`` node itself is removed.

    Raises:
        FileNotFoundError: No primary config in ``config_dir`` (lists the YAML files it has).
        ValueError: Hydra rejects an override or a config (its message included).
        RuntimeError: Hydra is already initialized in this process (inside a ``@hydra.main`` app).
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    directory = Path(config_dir).expanduser().resolve()
    yamls = sorted(p.name for p in directory.glob("*.y*ml"))
    name = config_name
    if name is None:
        if "config.yaml" in yamls or "config.yml" in yamls:
            name = "config"
        elif len(yamls) == 1:
            name = Path(yamls[0]).stem
        else:
            raise FileNotFoundError(
                f"Hydra config directory {directory} has no config.yaml and "
                f"{'no' if not yamls else 'several'} top-level YAML files ({', '.join(yamls) or 'none'}); "
                "pass config_name= to pick the primary config"
            )
    name = name[: -len(".yaml")] if name.endswith(".yaml") else name
    if not ((directory / f"{name}.yaml").is_file() or (directory / f"{name}.yml").is_file()):
        raise FileNotFoundError(
            f"Hydra config directory {directory} has no {name}.yaml; top-level YAML files: {', '.join(yamls) or 'none'}"
        )
    if GlobalHydra.instance().is_initialized():
        raise RuntimeError(
            "Hydra is already initialized in this process (inside a @hydra.main app?); call "
            "rlaudit.adapters.configs.to_plain(cfg) on the composed config instead"
        )
    try:
        with initialize_config_dir(config_dir=str(directory), version_base=None):
            cfg = compose(config_name=name, overrides=list(overrides or ()), return_hydra_config=True)
            previous = HydraConfig.instance().cfg
            HydraConfig.instance().set_config(cfg)
            try:
                resolved = _resolve_leniently(cfg)
            finally:
                HydraConfig.instance().cfg = previous
    except (HydraException, OmegaConfBaseException) as exc:
        raise ValueError(f"Hydra could not compose {directory}/{name}.yaml: {exc}") from None
    resolved.pop(HYDRA_RUNTIME_KEY, None)
    return to_plain(resolved)
