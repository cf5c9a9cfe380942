"""Running the ``git`` command: one environment for every caller (the cache's fingerprints, git subjects, the
change search).

git never prompts for credentials (a remote that needs them fails at once), never takes ``index.lock`` in a
checkout others may be using, answers in the C locale (messages and dates parse the same everywhere), and works
on the directory it is given rather than on an inherited ``GIT_DIR``/``GIT_WORK_TREE``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def have_git() -> bool:
    """True when the ``git`` command is on PATH."""
    return shutil.which("git") is not None


def git_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment as git should see it, with ``extra`` added last."""
    env = dict(os.environ)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    env.update(extra or {})
    return env


def run_git(
    cwd: str | Path,
    *args: str,
    timeout: float,
    input: bytes | None = None,
    text: bool = False,
    extra_env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[Any]:
    """Run ``git -C cwd args...`` and return what it did (never raises on a non-zero exit).

    Args:
        cwd: The repository or directory git works in.
        args: git's arguments (``"rev-parse", "HEAD"``).
        timeout: Seconds before the command is killed (``subprocess.TimeoutExpired``).
        input: Bytes for git's standard input.
        text: Decode stdout and stderr as text (bytes otherwise).
        extra_env: Variables added to :func:`git_environment`.
    """
    return subprocess.run(
        ["git", "-C", str(cwd), *args],
        input=input,
        capture_output=True,
        text=text,
        timeout=timeout,
        env=git_environment(extra_env),
        check=False,
    )


def failure(cwd: str | Path, args: tuple[str, ...], proc: subprocess.CompletedProcess[Any]) -> str:
    """The sentence an error states for a failed git command: the command, where, and what git said."""
    said = [
        part.decode("utf-8", "replace") if isinstance(part, bytes) else part
        for part in (proc.stderr, proc.stdout)
    ]
    message = said[0].strip() or said[1].strip()
    return f"`git {' '.join(args)}` failed in {cwd}: {message}"
