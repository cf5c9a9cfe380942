"""Config probes: the subject's resolved configuration, its subsystem map, and whether overrides land.

Runs inside the subject's process; imports only the standard library.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from rlaudit.probe import ProbeContext, probe


def _jsonable(value: Any) -> Any:
    """Round-trip through JSON so the artifact holds exactly what a reader will see."""
    return json.loads(json.dumps(value, default=repr))


@probe(requires=("config",), version=1)
def resolved_config(ctx: ProbeContext) -> dict:
    """Write the subject's resolved config (``config.json``) and its ``config_keys()`` map, if any.

    Also records whether ``config()`` accepts ``overrides=`` (the subject's own override mechanism).
    """
    ctx.write_json("config", _jsonable(ctx.config))
    keys = ctx.subject.config_keys() if ctx.has("config_keys") else None
    if keys is not None:
        ctx.write_json("config_keys", _jsonable(keys))
    params = inspect.signature(ctx.subject.config).parameters
    return {
        "has_config_keys": keys is not None,
        "accepts_overrides": "overrides" in params,
        "source": getattr(ctx.subject, "config_source", None) or type(ctx.subject).__name__,
    }


@probe(requires=("config",), version=1)
def config_with_overrides(ctx: ProbeContext, *, overrides: list[str]) -> dict:
    """Resolve the config again through the subject's own mechanism with ``overrides`` applied.

    Args:
        overrides: Hydra-style ``dotted.key=value`` strings (values in YAML/JSON syntax).

    Writes ``config.json`` (the config resolved with the overrides). Returns ``{"supported": False}``
    when ``config()`` takes no ``overrides`` argument.
    """
    fn = ctx.subject.config
    if "overrides" not in inspect.signature(fn).parameters:
        return {"supported": False}
    ctx.write_json("config", _jsonable(fn(overrides=list(overrides))))
    return {"supported": True, "overrides": list(overrides)}
