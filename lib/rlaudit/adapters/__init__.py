"""Adapters: how rlaudit meets training setups that are not written as rlaudit subjects.

=================  ==========================================================================================
``git``            ``git:<repo>@<ref>[:<subject.py>]``: the subject file at a commit, checked out once into a
                   worktree under the cache (:mod:`rlaudit.adapters.git`)
``venv``           a per-subject interpreter built from a requirements file (:func:`venv.ensure_venv`)
``sb3``            ``sb3:<file.yaml>``: a Stable-Baselines3 setup described in rl-zoo style
                   (:mod:`rlaudit.adapters.sb3`)
``configs``        configs users already have (Hydra trees, YAML/JSON/TOML, pydantic, dataclasses) as dicts
``template``       ``rlaudit new-subject DIR``
=================  ==========================================================================================

Loaders for the spec schemes are registered in :data:`rlaudit.engine.subjects.ADAPTERS` by name
(``"rlaudit.adapters.git:load"``, ``"rlaudit.adapters.sb3:load"``), so importing this package does nothing.
This module holds the one helper the adapters share: an inter-process file lock.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def file_lock(path: str | Path, *, timeout: float = 1800.0, what: str = "resource") -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if needed) across processes.

    Two notebooks or workers building the same worktree or venv wait for each other instead of building it
    twice. The lock is released when the block ends or the process dies (``flock`` semantics).

    Args:
        path: The lock file.
        timeout: Seconds to wait before giving up.
        what: How the timeout message names what is being built.

    Raises:
        TimeoutError: Another process held the lock for longer than ``timeout`` (names the lock file).
    """
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"waited {timeout:.0f} s for the lock {path} on a {what} another process is building; "
                        "if no rlaudit process is running, delete the lock file and retry"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
