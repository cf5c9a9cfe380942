"""Where rlaudit keeps things: the artifact cache, run directories, reports.

Nothing here creates directories at import time; callers create what they write into.
Environment variables override the defaults (useful in tests and CI):

- ``RLAUDIT_HOME``: the project root (default: the checkout that contains this package, else the cwd);
- ``RLAUDIT_CACHE``: the artifact cache (default ``<home>/data/cache``);
- ``RLAUDIT_REPORTS``: where reports and findings go (default ``<home>/reports``);
- ``RLAUDIT_WORKDIR``: the directory the user ran the command from, against which relative subject paths
  resolve (``rlaudit`` sets it for the notebooks it starts; default: the current directory).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
LIB_DIR = PACKAGE_DIR.parent
"""The directory that must be on ``sys.path`` for ``import rlaudit`` (the worker adds it for subjects)."""


def home() -> Path:
    env = os.environ.get("RLAUDIT_HOME")
    if env:
        return Path(env).resolve()
    checkout = LIB_DIR.parent
    if (checkout / "pyproject.toml").exists() and (checkout / "notebooks").exists():
        return checkout
    return Path.cwd()


def cache_dir() -> Path:
    env = os.environ.get("RLAUDIT_CACHE")
    return Path(env).resolve() if env else home() / "data" / "cache"


def reports_dir() -> Path:
    env = os.environ.get("RLAUDIT_REPORTS")
    return Path(env).resolve() if env else home() / "reports"


def user_dir() -> Path:
    """The directory relative subject paths are resolved against: where the user typed the command.

    ``rlaudit report`` runs its notebooks in ``notebooks/``; the paths the user gave (a ``subject.py``, an
    ``sb3:`` file, a pair file, a ``git:`` repository) are meant relative to where they ran ``make`` or
    ``rlaudit``, which the CLI passes on as ``RLAUDIT_WORKDIR``.
    """
    env = os.environ.get("RLAUDIT_WORKDIR")
    return Path(env).expanduser().absolute() if env else Path.cwd()


def notebooks_dir() -> Path:
    return home() / "notebooks"
