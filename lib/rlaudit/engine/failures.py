"""Failed probe calls, remembered beside the artifact cache so that a failure costs its time once.

A probe that hangs in the subject's ``train`` used to be run again by every check that needed it: twelve
timeouts in one notebook. Now the first failure (``exception``, ``crash``, ``timeout``, ``oom``) is written to
``<cache>/<fingerprint>/failures/<probe>-v<version>-<params hash>.json``, and every later call with the same
subject fingerprint, probe, version and parameters gets the same error at once, saying it was remembered.
The record lives in the subject's fingerprint directory, so an edit to the subject (a new fingerprint)
forgets it; ``--fresh`` and ``--retry-failed`` run it again once (records older than the report's start are
ignored), and a success deletes it.

A remembered ``timeout`` stands only while the limits are no larger than those it hit: raising
``--stall-timeout`` or ``--cpu-limit`` runs the probe again. A remembered ``oom`` stands only under the same
memory cap. Import and protocol errors are not remembered here (the subject's load error is kept per
worker pool; a protocol error is rlaudit's, not the probe's).

Notebook side, standard library only.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlaudit.engine.io import atomic_write_json
from rlaudit.engine.store import params_hash, probe_dirname
from rlaudit.engine.worker import ProbeError

REMEMBERED_KINDS = ("exception", "crash", "timeout", "oom")
RETRY_ADVICE = (
    "Run it again with `rlaudit report --retry-failed` (`make report RETRY_FAILED=1`) or `--fresh`; an edit to "
    "the subject (a new fingerprint) forgets it too"
)


def record_path(
    root: str | Path, fingerprint: str, probe: str, version: int, params: Mapping[str, Any]
) -> Path:
    """Where the failure of one probe call is remembered."""
    name = f"{probe_dirname(probe)}-v{int(version)}-{params_hash(params)}.json"
    return Path(root) / fingerprint / "failures" / name


def remember(path: Path, error: ProbeError, limits: Mapping[str, Any]) -> None:
    """Write the failure record (errors of other kinds are not remembered; a failed write is not fatal).

    Args:
        path: :func:`record_path`.
        error: What the call raised.
        limits: ``{"stall": s, "cpu": s or None, "memory_mb": MiB or None}`` the call ran under.
    """
    if error.kind not in REMEMBERED_KINDS:
        return
    with contextlib.suppress(OSError, TypeError, ValueError):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, {"error": error.to_dict(), "limits": dict(limits), "created": time.time()})


def forget(path: Path) -> None:
    """Delete the record (the call succeeded)."""
    with contextlib.suppress(OSError):
        path.unlink()


def recall(path: Path, limits: Mapping[str, Any], since: float | None = None) -> ProbeError | None:
    """The remembered error of this call, or None when it should run.

    Args:
        path: :func:`record_path`.
        limits: The limits the call would run under now (as for :func:`remember`).
        since: Records created before this Unix time are ignored (``--fresh``, ``--retry-failed``).
    """
    try:
        record = json.loads(path.read_text())
        error = ProbeError.from_dict(record["error"])
        created = float(record["created"])
        then = dict(record.get("limits") or {})
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or unreadable: run the probe
    if since is not None and created < since:
        return None
    if error.kind == "timeout" and (
        _larger(limits.get("stall"), then.get("stall")) or _larger(limits.get("cpu"), then.get("cpu"))
    ):
        return None  # a larger limit may be enough now
    if error.kind == "oom" and limits.get("memory_mb") != then.get("memory_mb"):
        return None
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(created))
    error.message = (
        f"remembered failure, not run again: this probe failed with the same parameters on the same subject "
        f"at {stamp}. {RETRY_ADVICE}. The failure: {error.message}"
    )
    return error


def _larger(now: Any, then: Any) -> bool:
    """True when limit ``now`` exceeds ``then`` (None is no limit, i.e. infinite)."""
    a = math.inf if now is None else float(now)
    b = math.inf if then is None else float(then)
    return a > b
