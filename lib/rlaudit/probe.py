"""Probes: functions that run inside a subject's worker process and write artifacts.

::

    from rlaudit.probe import probe, ProbeContext

    @probe(requires=("make_policy", "make_env"), version=1)
    def module_tree(ctx: ProbeContext, *, seed: int = 0) -> dict:
        ...
        ctx.write_json("tree", {...})      # -> ctx.out / "tree.json"
        return {"n_params": n}             # small JSON summary, saved in result.json

A probe is referred to by its name ``"module:function"`` (:func:`probe_name`), which the worker imports. The
worker checks ``requires`` against the subject's capabilities before calling it. ``version`` is part of the
cache key: bump it whenever the probe's output changes.

This module runs in subjects' own interpreters: it imports only the standard library at import time (numpy
is imported by the writers that need it, torch only by :meth:`ProbeContext.save_torch`).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROBE_ATTR = "__rlaudit_probe__"


@dataclass(frozen=True)
class ProbeInfo:
    """What :func:`probe` records on the function.

    Attributes:
        name: ``"module:qualname"``, how the worker finds the function.
        requires: Capabilities the subject must have (checked before the probe runs).
        version: Bumped when the probe's output changes; part of the cache key.
    """

    name: str
    requires: tuple[str, ...]
    version: int


def probe(
    *, requires: Sequence[str] = (), version: int = 1
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function ``fn(ctx: ProbeContext, **params) -> dict`` as a probe.

    Args:
        requires: Capability names (see :data:`rlaudit.engine.subjects.CAPABILITIES`) the probe calls.
        version: Output version; bump it when what the probe writes changes so stale artifacts are not reused.

    Raises:
        ValueError: An unknown capability name or a version below 1.
    """
    from rlaudit.engine.subjects import CAPABILITIES

    if isinstance(requires, str):
        requires = (requires,)
    unknown = [r for r in requires if r not in CAPABILITIES]
    if unknown:
        raise ValueError(
            f"probe requires unknown capability {', '.join(map(repr, unknown))}; expected names from "
            f"{', '.join(CAPABILITIES)}"
        )
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"probe version must be an integer >= 1, got {version!r}")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        info = ProbeInfo(name=_name_of(fn), requires=tuple(requires), version=version)
        setattr(fn, PROBE_ATTR, info)
        return fn

    return decorate


def _name_of(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}:{fn.__qualname__}"


def probe_info(fn: Callable[..., Any]) -> ProbeInfo:
    """The :class:`ProbeInfo` of a decorated probe.

    Raises:
        TypeError: ``fn`` is not decorated with :func:`probe`, or lives where a worker cannot import it.
    """
    info = getattr(fn, PROBE_ATTR, None)
    if not isinstance(info, ProbeInfo):
        raise TypeError(
            f"{getattr(fn, '__qualname__', fn)!r} is not a probe; decorate it with "
            "@rlaudit.probe.probe(requires=..., version=...)"
        )
    if "<locals>" in info.name or info.name.startswith("__main__:"):
        raise TypeError(
            f"probe {info.name} cannot be imported by a worker process; define probes at module level in an "
            "importable module (e.g. rlaudit/<room>/probes.py), not in __main__, a notebook or a function"
        )
    return info


def probe_name(fn: Callable[..., Any]) -> str:
    """``"module:function"`` of a probe."""
    return probe_info(fn).name


def probe_import_root(fn: Callable[..., Any]) -> str:
    """The ``sys.path`` entry from which the probe's module imports (the worker adds it if needed).

    For a module ``a.b.probes`` at ``/x/a/b/probes.py`` this is ``/x``; ``""`` when unknown.
    """
    module = sys.modules.get(fn.__module__)
    file = getattr(module, "__file__", None)
    if not file:
        return ""
    path = Path(file).resolve()
    depth = fn.__module__.count(".") + 1
    if path.name == "__init__.py":
        depth += 1
    return str(path.parents[depth - 1])


def bind_params(fn: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """The probe's full keyword arguments: ``params`` plus the defaults of the ones not given.

    Filling defaults makes ``run(p)`` and ``run(p, seed=0)`` (when 0 is the default) share one cache key.

    Raises:
        TypeError: A parameter the probe does not take, naming the ones it does.
    """
    signature = inspect.signature(fn)
    names = list(signature.parameters)[1:]  # the first parameter is ctx
    try:
        bound = signature.bind_partial(None, **params)
    except TypeError as exc:
        raise TypeError(
            f"probe {_name_of(fn)}: {exc}; it takes {', '.join(names) or 'no parameters'}"
        ) from None
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    arguments.pop(next(iter(signature.parameters)), None)
    for name, parameter in signature.parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD and name in arguments:
            arguments.update(arguments.pop(name))
    return arguments


@dataclass
class ProbeContext:
    """What a probe gets: the loaded subject, its config, and a directory to write artifacts into.

    Attributes:
        subject: The loaded subject object (module or adapter object).
        config: The subject's resolved ``config()`` dict (a private copy), or ``{}`` when it has no config.
        out: The artifact directory; files written here are committed atomically with ``result.json``.
        spec: The subject's spec string.
        capabilities: The capability names the subject has.
        params: The probe's parameters (after defaults were filled in).
    """

    subject: Any
    config: dict[str, Any]
    out: Path
    spec: str
    capabilities: frozenset[str] = frozenset()
    params: dict[str, Any] = field(default_factory=dict)
    _progress: Callable[[int, int], None] | None = field(default=None, repr=False)

    def has(self, capability: str) -> bool:
        """True when the subject exposes ``capability`` (e.g. ``ctx.has("make_curriculum")``)."""
        return capability in self.capabilities

    def path(self, name: str) -> Path:
        """``out / name`` for writers of their own (e.g. ``recorder`` run dirs); checks the name stays inside."""
        relative = Path(name)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise ValueError(f"artifact name {name!r} must be a relative path inside the artifact directory")
        target = self.out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def write_json(self, name: str, value: Any) -> Path:
        """Write ``value`` (numpy/tuples/NaN made JSON-safe) to ``out/<name>.json``, atomically."""
        from rlaudit.engine.io import atomic_write_json

        return atomic_write_json(self.path(_with_suffix(name, ".json")), value)

    def write_table(self, name: str, columns: Mapping[str, Any]) -> Path:
        """Write equal-length 1-D columns to ``out/<name>.parquet`` (or ``.npz`` without pyarrow)."""
        from rlaudit.engine.io import write_table

        return write_table(self.path(name), columns)

    def write_npz(self, name: str, arrays: Mapping[str, Any] | None = None, **more: Any) -> Path:
        """Write named arrays to ``out/<name>.npz`` (uncompressed, no pickles), atomically."""
        import numpy as np

        from rlaudit.engine.io import atomic_path

        data = {**(arrays or {}), **more}
        with atomic_path(self.path(_with_suffix(name, ".npz"))) as tmp:
            np.savez(tmp, **{k: np.asarray(v) for k, v in data.items()})
        return self.out / _with_suffix(name, ".npz")

    def save_torch(self, name: str, obj: Any) -> Path:
        """``torch.save(obj)`` to ``out/<name>.pt``, atomically (torch is imported here, not before)."""
        import torch

        from rlaudit.engine.io import atomic_path

        target = self.path(_with_suffix(name, ".pt"))
        with atomic_path(target) as tmp:
            torch.save(obj, tmp)
        return target

    def progress(self, i: int, n: int) -> None:
        """Heartbeat for long probes: step ``i`` of ``n`` (shown by the notebook; cheap to call often)."""
        if self._progress is not None:
            self._progress(int(i), int(n))


def _with_suffix(name: str, suffix: str) -> str:
    return name if name.endswith(suffix) else name + suffix
