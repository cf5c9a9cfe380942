"""Limits on a probe that measure the subject, not the machine.

A probe is stopped for one of two reasons, never for wall time alone:

* **stall**: it made no progress for ``stall`` seconds. Progress is what :mod:`rlaudit.engine.heartbeat` counts in
  the worker: environment steps, optimizer updates and finished episodes seen by the recorder, and the
  probe's own ``ctx.progress`` calls. A probe that sleeps or spins is stopped; a slow one keeps counting.
* **CPU time**: the worker's process tree used more than ``cpu`` CPU-seconds on this call, scaled by how
  slow this machine's cores are (:func:`machine_scale`). CPU time does not grow when other jobs take the
  cores, so a loaded machine does not reach it sooner.

Both are set from the command line (``rlaudit report --stall-timeout S --cpu-limit S``; ``make report
STALL_TIMEOUT=S CPU_LIMIT=S``), which passes them on as :data:`STALL_VARIABLE` and :data:`CPU_VARIABLE`
to the notebooks and their workers, as the other settings travel. ``--retry-failed`` sets
:data:`RETRY_VARIABLE`: failures remembered before it (:mod:`rlaudit.engine.failures`) are run again.

Notebook side (the client); the worker side only counts (:mod:`rlaudit.engine.heartbeat`).
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from typing import Any

STALL_VARIABLE = "RLAUDIT_STALL_TIMEOUT"
CPU_VARIABLE = "RLAUDIT_CPU_LIMIT"
LEGACY_CPU_VARIABLE = "RLAUDIT_PROBE_TIMEOUT"  # the older name of the CPU limit, still read
RETRY_VARIABLE = "RLAUDIT_RETRY_FAILED_SINCE"

DEFAULT_STALL_SECONDS = 300.0
"""Seconds without a step, update, episode or progress report before a probe counts as hung. The slowest
gap between two beats of the built-in trainer and the SB3 examples is one PPO update (well under 10 s of
CPU at the standard profile), so this leaves room for a machine 30 times oversubscribed."""

REFERENCE_CALIBRATION_SECONDS = 0.001
"""CPU seconds :func:`rlaudit.env.rollout.calibration_workload` takes on one core of the machine the
profiles' CPU limits were sized on (its fastest run there: 0.85 ms); a slower core gets proportionally more
CPU time."""

MAX_MACHINE_SCALE = 8.0  # a calibration that reads slower than this is noise (an interrupted measurement)


@dataclass(frozen=True)
class ProbeLimits:
    """The two limits of one probe call.

    Attributes:
        stall: Seconds without progress before the call is stopped.
        cpu: CPU-seconds of the worker's process tree for this call, before scaling by :func:`machine_scale`;
            None: no CPU limit.
    """

    stall: float = DEFAULT_STALL_SECONDS
    cpu: float | None = None

    @property
    def cpu_scaled(self) -> float | None:
        """The CPU limit on this machine (``cpu`` times :func:`machine_scale`)."""
        return None if self.cpu is None else self.cpu * machine_scale()


def env_seconds(name: str) -> float | None:
    """A positive number of seconds from the environment variable ``name``; None when unset or empty.

    Raises:
        ValueError: The value is not a number of at least one second (the message names the variable).
    """
    from rlaudit.engine.validate import env_number

    return env_number(name)


def stall_timeout() -> float | None:
    """The stall limit the user set (``--stall-timeout``, :data:`STALL_VARIABLE`), else None."""
    return env_seconds(STALL_VARIABLE)


def cpu_limit() -> float | None:
    """The CPU limit the user set (``--cpu-limit``, :data:`CPU_VARIABLE`, or the older
    :data:`LEGACY_CPU_VARIABLE`), else None (the profile's ``probe_timeout`` applies)."""
    return env_seconds(CPU_VARIABLE) or env_seconds(LEGACY_CPU_VARIABLE)


def retry_failed_since() -> float | None:
    """With ``--retry-failed``: the Unix time before which remembered failures are run again."""
    from rlaudit.engine.validate import env_number

    return env_number(RETRY_VARIABLE)


def export_cli_limits(args: Any) -> None:
    """Pass ``--stall-timeout``, ``--cpu-limit`` and ``--retry-failed`` on as environment variables, which
    the notebooks of ``rlaudit report`` (and ``rlaudit audit``'s workbench) read, as their workers do."""
    stall = getattr(args, "stall_timeout", None)
    cpu = getattr(args, "cpu_limit", None)
    for name, flag, value in ((STALL_VARIABLE, "--stall-timeout", stall), (CPU_VARIABLE, "--cpu-limit", cpu)):
        if value is None:
            continue
        if not value > 0:
            raise ValueError(f"{flag} {value:g}: expected a positive number of seconds, e.g. {flag} 600")
        os.environ[name] = repr(float(value))
    if getattr(args, "retry_failed", False):
        os.environ[RETRY_VARIABLE] = repr(time.time())


@functools.cache
def machine_scale() -> float:
    """How much slower this machine's cores run the calibration workload than the reference core (>= 1).

    CPU time, not wall time: a busy machine does not change it, a slower CPU does. Measured once per process
    (a few milliseconds of CPU), as the fastest of seven runs so that an interruption does not inflate it.
    """
    try:
        from rlaudit.env.rollout import calibration_workload

        calibration_workload()  # the first run pays for allocations and imports
        fastest = min(calibration_workload() for _ in range(7))
    except Exception:  # no numpy in this interpreter, say: judge the machine as the reference
        return 1.0
    return min(max(fastest / REFERENCE_CALIBRATION_SECONDS, 1.0), MAX_MACHINE_SCALE)


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by process ``pid``, its reaped children and its live
    descendants; None when it cannot be read (the process is gone, or no psutil)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        root = psutil.Process(pid)
        times = root.cpu_times()
        total = times.user + times.system + times.children_user + times.children_system
        for child in root.children(recursive=True):
            try:
                ct = child.cpu_times()
            except psutil.Error:
                continue  # exited between the listing and the read
            total += ct.user + ct.system
    except psutil.Error:
        return None
    return float(total)


def advice(which: str) -> str:
    """How to raise a limit from the command line (``which``: ``"stall"`` or ``"cpu"``)."""
    if which == "stall":
        return (
            "If the probe is only slow between progress reports, raise the limit: `rlaudit report "
            "--stall-timeout SECONDS` (`make report STALL_TIMEOUT=SECONDS`, or the environment variable "
            f"{STALL_VARIABLE})"
        )
    return (
        "If the probe needs more CPU time, raise the limit: `rlaudit report --cpu-limit SECONDS` "
        f"(`make report CPU_LIMIT=SECONDS`, or the environment variable {CPU_VARIABLE}), or use a smaller "
        "profile"
    )
