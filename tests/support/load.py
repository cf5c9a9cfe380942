"""A/A pairs and a busy machine: what timing checks are tested against.

An A/A pair is the reference against itself under another fingerprint, so every probe really runs twice and
any flag it raises is noise. :func:`busy_core` keeps the other core busy while a test measures, as a loaded
shared machine would.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def aa_spec(tag: str = "1") -> Any:
    """``builtin:reference`` under another fingerprint (an extra environment variable nothing reads)."""
    from rlaudit.engine.subjects import parse_spec

    return parse_spec("builtin:reference", env={"RLAUDIT_AA_REPLICA": tag})


@contextmanager
def busy_core() -> Iterator[subprocess.Popen[bytes]]:
    """A Python busy loop in its own process for the duration of the block (killed by its pid at the end)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)
