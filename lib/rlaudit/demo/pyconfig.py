"""The regressed subject's config system: the Hydra tree rewritten as a Python recipe ("dehydration").

Case 000's refactor replaced YAML files and Hydra's compose with Python dataclasses and a recipe function.
This is that recipe: it starts from :class:`rlaudit.demo.config.DemoConfig`'s defaults, applies overrides of
the same ``dotted.key=value`` form Hydra takes (values parsed as YAML, so ``null``, ``1e-5`` and ``[1, 2]``
mean what they mean on the command line), and returns the same nested dict the reference's Hydra tree
resolves to. Without faults the two agree key for key (a test holds them to it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from rlaudit.demo.config import DemoConfig


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"trainer.ent_coef=0.02"`` -> ``(["trainer", "ent_coef"], 0.02)``.

    Raises:
        ValueError: Not of the form ``dotted.key=value``.
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ValueError(
            f"override {text!r} is not of the form dotted.key=value (e.g. trainer.ent_coef=0.02)"
        )
    return key.split("."), parse_value(raw)


def parse_value(raw: str) -> Any:
    """An override's value as Hydra reads it: ``2e-05`` is a float (PyYAML alone would return the string
    "2e-05", since YAML 1.1 floats need a dot), ``null`` is None, ``[1, 2]`` a list, ``relu`` a string."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return yaml.safe_load(raw)


def apply_overrides(config: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Set each override's key in a nested dict (in place, and returned).

    Raises:
        ValueError: An override names a key the config does not have, listing the keys that level has.
    """
    for text in overrides:
        path, value = parse_override(text)
        node = config
        for depth, part in enumerate(path):
            if not isinstance(node, dict) or part not in node:
                where = ".".join(path[:depth]) or "the top level"
                known = sorted(node) if isinstance(node, dict) else []
                raise ValueError(f"override {text!r}: no key {part!r} at {where}; known keys there: {known}")
            if depth == len(path) - 1:
                node[part] = value
            else:
                node = node[part]
    return config


def arena_recipe(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The arena training recipe as a resolved, JSON-serializable nested dict.

    Args:
        overrides: ``dotted.key=value`` strings, applied in order.

    Returns:
        The same structure as ``DemoConfig().to_dict()``, validated by ``DemoConfig.from_dict``.
    """
    config = apply_overrides(DemoConfig().to_dict(), overrides)
    DemoConfig.from_dict(config)  # validation: types, allowed values, batch geometry
    return config
