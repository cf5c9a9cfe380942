"""Inputs the notebook makes once and hands to both subjects' workers: content-addressed files in the cache.

A probe's parameters are its cache key, so they must be small and portable. Arrays that both sides must see
bit for bit (GAE inputs, a loss batch, shared network weights) are written by the notebook to
``<cache>/inputs/<sha256 prefix>.npz`` and passed as that path *relative to the cache root*: the key then
names the content, not a machine, and a worker (which inherits ``RLAUDIT_CACHE``) resolves it with
:func:`resolve`.

Imports numpy and the standard library only (it runs in subjects' processes).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

INPUTS_DIR = "inputs"


def content_hash(arrays: Mapping[str, Any]) -> str:
    """SHA-256 (first 16 hex digits) over the names, dtypes, shapes and bytes of ``arrays``."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(np.asarray(arrays[name]))
        digest.update(name.encode())
        digest.update(str(a.dtype).encode())
        digest.update(repr(a.shape).encode())
        digest.update(a.tobytes())
    return digest.hexdigest()[:16]


def stage(arrays: Mapping[str, Any], root: str | Path | None = None) -> str:
    """Write ``arrays`` once under the cache's ``inputs/`` directory and return the path relative to the root.

    Args:
        arrays: Name -> array (numbers or bools; no objects, so the file loads without pickles).
        root: The cache root (default :func:`rlaudit.engine.paths.cache_dir`).

    Returns:
        ``"inputs/<hash>.npz"``: pass it as a probe parameter; workers call :func:`load`.
    """
    from rlaudit.engine.io import atomic_path
    from rlaudit.engine.paths import cache_dir

    base = Path(root) if root is not None else cache_dir()
    rel = f"{INPUTS_DIR}/{content_hash(arrays)}.npz"
    target = base / rel
    if not target.exists():
        with atomic_path(target) as tmp:
            np.savez(tmp, **{k: np.asarray(v) for k, v in arrays.items()})
    return rel


def resolve(rel: str, root: str | Path | None = None) -> Path:
    """The absolute path of a file named relative to the cache root (as :func:`stage` returns it).

    Raises:
        FileNotFoundError: The file is not there, saying which cache root was searched.
    """
    from rlaudit.engine.paths import cache_dir

    if os.path.isabs(rel):
        path = Path(rel)
    else:
        path = (Path(root) if root is not None else cache_dir()) / rel
    if not path.exists():
        raise FileNotFoundError(
            f"input file {rel} not found under the cache root {path.parent.parent}; the worker must see the "
            "notebook's cache (same RLAUDIT_CACHE, or the same checkout's data/cache)"
        )
    return path


def load(rel: str, root: str | Path | None = None) -> dict[str, np.ndarray]:
    """The arrays of a staged file (loaded without pickles; a damaged file is named in the error)."""
    from rlaudit.engine.io import read_npz

    return read_npz(resolve(rel, root))


def stage_for(wb: Any, arrays: Mapping[str, Any]) -> str:
    """:func:`stage` in a workbench's cache, named as its workers will resolve it.

    Relative to the cache root when the workers resolve that same root (``RLAUDIT_CACHE`` is inherited), else
    the absolute path (a workbench opened on another cache than the environment's).
    """
    from rlaudit.engine.paths import cache_dir

    root = Path(wb.cache.root)
    rel = stage(arrays, root=root)
    return rel if root.resolve() == cache_dir().resolve() else str(root / rel)


def cache_relative(wb: Any, path: str | Path) -> str:
    """A path inside a workbench's cache as its workers resolve it (relative to the root when they share it)."""
    from rlaudit.engine.paths import cache_dir

    root = Path(wb.cache.root).resolve()
    try:
        rel = str(Path(path).resolve().relative_to(root))
    except ValueError:
        return str(Path(path).resolve())
    return rel if root == cache_dir().resolve() else str(root / rel)
