"""How a run executes: one typed :class:`RunOptions`, built once and passed down.

The command line (:mod:`rlaudit.cli`) builds it from its arguments (:meth:`RunOptions.from_cli`); a notebook
kernel, which papermill starts as a separate process, builds it from its environment
(:meth:`RunOptions.from_env`, called by :class:`rlaudit.notebook.Session`, or by a
:class:`rlaudit.engine.workbench.Workbench` made by hand in a kernel or script). From there it travels as an
argument: Session -> Workbench -> Executor, worker clients and probe jobs; the report runner
(:mod:`rlaudit.report`) hands it to each notebook's kernel as environment variables
(:meth:`RunOptions.environment`), the one channel papermill offers.

These are the only places that read ``RLAUDIT_*`` execution settings: this module, the worker's start
(:func:`rlaudit.engine.worker.WorkerSettings.from_env`) and the CLI. A bad value fails here with an error that names
its variable (:mod:`rlaudit.engine.validate`). Where the project's files live (``RLAUDIT_HOME``, ``RLAUDIT_CACHE``,
``RLAUDIT_REPORTS``, ``RLAUDIT_WORKDIR``) is resolved by :mod:`rlaudit.engine.paths`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlaudit.engine.validate import InputError, env_choice, env_flag, env_number

JOBS = "RLAUDIT_JOBS"
EXECUTOR = "RLAUDIT_EXECUTOR"
RAY_ADDRESS = "RLAUDIT_RAY_ADDRESS"
FRESH_SINCE = "RLAUDIT_FRESH_SINCE"
TORCH_THREADS = "RLAUDIT_TORCH_THREADS"
STALL_TIMEOUT = "RLAUDIT_STALL_TIMEOUT"
CPU_LIMIT = "RLAUDIT_CPU_LIMIT"
LEGACY_CPU_LIMIT = "RLAUDIT_PROBE_TIMEOUT"  # the older name of the CPU limit, still read
RETRY_FAILED_SINCE = "RLAUDIT_RETRY_FAILED_SINCE"
WORKER_MEMORY_MB = "RLAUDIT_WORKER_MEMORY_MB"
PROGRESS = "RLAUDIT_PROGRESS"
INTERACTIVE = "RLAUDIT_INTERACTIVE"
PROFILE = "RLAUDIT_PROFILE"
REPORT_KERNELS = "RLAUDIT_REPORT_KERNELS"
FINGERPRINT_EXCLUDE = "RLAUDIT_FINGERPRINT_EXCLUDE"
CACHE = "RLAUDIT_CACHE"

EXECUTORS = ("local", "processes", "ray")
KERNEL_MODES = ("shared", "fresh")


@dataclass(frozen=True)
class RunOptions:
    """How probes, workers and notebooks run; none of it changes what a check concludes.

    Every field has the environment variable that carries it into a notebook's kernel (:meth:`environment`,
    read back by :meth:`from_env`). None means "not set": the default applies where it is used.

    Attributes:
        jobs: Probe calls each workbench runs at once (``RLAUDIT_JOBS``); None: the profile's ``jobs``.
        executor: Where probe jobs run: ``local``, ``processes`` or ``ray`` (``RLAUDIT_EXECUTOR``).
        ray_address: The Ray cluster for ``executor="ray"`` (``RLAUDIT_RAY_ADDRESS``); ``""``: Ray's default.
        fresh_since: Cached artifacts older than this Unix time are recomputed (``RLAUDIT_FRESH_SINCE``;
            ``rlaudit report --fresh`` sets the report's start, shared by its notebooks).
        torch_threads: torch/OpenMP threads in each worker (``RLAUDIT_TORCH_THREADS``); None: one when
            several probe calls run at once, else torch's own choice.
        stall_timeout: Seconds a probe may go without progress (``RLAUDIT_STALL_TIMEOUT``, ``--stall-timeout``);
            None: :data:`rlaudit.engine.limits.DEFAULT_STALL_SECONDS`.
        cpu_limit: CPU-seconds a probe call may use (``RLAUDIT_CPU_LIMIT`` or the older
            ``RLAUDIT_PROBE_TIMEOUT``, ``--cpu-limit``); None: the profile's ``probe_timeout``.
        retry_failed_since: Remembered probe failures older than this Unix time run again
            (``RLAUDIT_RETRY_FAILED_SINCE``; ``--retry-failed`` sets the command's start).
        memory_mb: Address-space cap of each worker in MiB (``RLAUDIT_WORKER_MEMORY_MB``); None: no cap.
        progress: Show progress bars (``RLAUDIT_PROGRESS``); None: only in Jupyter or on a terminal.
        interactive: Draw interactive widgets (``RLAUDIT_INTERACTIVE``); None: decided by the frontend
            (:func:`rlaudit.display.interactive`).
        profile: A profile name that wins over every notebook's ``profile`` parameter and the CLI's
            ``--profile`` (``RLAUDIT_PROFILE``; ``make test`` sets ``smoke``).
        report_kernels: ``shared`` (notebooks of a report reuse kernels) or ``fresh``
            (``RLAUDIT_REPORT_KERNELS``).
        fingerprint_exclude: Paths never hashed into a subject's fingerprint, such as the report being written
            (``RLAUDIT_FINGERPRINT_EXCLUDE``, ``os.pathsep``-separated).
        cache_dir: The artifact cache (``RLAUDIT_CACHE``); None: :func:`rlaudit.engine.paths.cache_dir`.
    """

    jobs: int | None = None
    executor: str = "local"
    ray_address: str = ""
    fresh_since: float | None = None
    torch_threads: int | None = None
    stall_timeout: float | None = None
    cpu_limit: float | None = None
    retry_failed_since: float | None = None
    memory_mb: float | None = None
    progress: bool | None = None
    interactive: bool | None = None
    profile: str | None = None
    report_kernels: str = "shared"
    fingerprint_exclude: tuple[str, ...] = ()
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise InputError(
                f"executor {self.executor!r}: expected one of {', '.join(EXECUTORS)} (--executor, {EXECUTOR})"
            )
        if self.report_kernels not in KERNEL_MODES:
            raise InputError(
                f"report kernels {self.report_kernels!r}: expected one of {', '.join(KERNEL_MODES)} "
                f"({REPORT_KERNELS})"
            )
        if self.jobs is not None and self.jobs < 1:
            raise InputError(f"jobs {self.jobs}: expected at least 1")
        for flag, value in (("--stall-timeout", self.stall_timeout), ("--cpu-limit", self.cpu_limit)):
            if value is not None and not value > 0:
                raise InputError(f"{flag} {value:g}: expected a positive number of seconds, e.g. {flag} 600")

    def replace(self, **changes: Any) -> RunOptions:
        """A copy with ``changes`` applied (the fields are checked again)."""
        return dataclasses.replace(self, **changes)

    @property
    def ray_options(self) -> dict[str, Any]:
        """What :class:`rlaudit.engine.executor.Executor` passes to its backend (``address=`` for Ray)."""
        return {"address": self.ray_address} if self.ray_address else {}

    def profile_name(self, requested: str | None) -> str:
        """The profile that runs: :attr:`profile` when set, else ``requested``, else ``standard``."""
        return self.profile or requested or "standard"

    # --- the environment: a notebook kernel's boundary --------------------------------------------------

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RunOptions:
        """The options a process was started with, from its ``RLAUDIT_*`` environment variables.

        Args:
            environ: The environment (default ``os.environ``).

        Raises:
            InputError: A bad value; the message names the variable, what it expects and an example.
        """
        env = os.environ if environ is None else environ
        jobs = env_number(JOBS, env)
        threads = env_number(TORCH_THREADS, env)
        cpu = env_number(CPU_LIMIT, env)
        if cpu is None:
            cpu = env_number(LEGACY_CPU_LIMIT, env)
        memory = env_number(WORKER_MEMORY_MB, env)
        excluded = tuple(p.strip() for p in env.get(FINGERPRINT_EXCLUDE, "").split(os.pathsep) if p.strip())
        return cls(
            jobs=None if jobs is None else int(jobs),
            executor=env_choice(EXECUTOR, env) or "local",
            ray_address=(env.get(RAY_ADDRESS) or "").strip(),
            fresh_since=env_number(FRESH_SINCE, env),
            torch_threads=None if threads is None else int(threads),
            stall_timeout=env_number(STALL_TIMEOUT, env),
            cpu_limit=cpu,
            retry_failed_since=env_number(RETRY_FAILED_SINCE, env),
            memory_mb=memory or None,
            progress=env_flag(PROGRESS, env),
            interactive=env_flag(INTERACTIVE, env),
            profile=env_choice(PROFILE, env),
            report_kernels=env_choice(REPORT_KERNELS, env) or "shared",
            fingerprint_exclude=excluded,
            cache_dir=(env.get(CACHE) or "").strip() or None,
        )

    def environment(self) -> dict[str, str]:
        """The ``RLAUDIT_*`` variables that carry these options into a child process (a notebook kernel).

        Only what is set: :meth:`from_env` of the result gives these options back.
        """
        values: dict[str, Any] = {
            JOBS: self.jobs,
            RAY_ADDRESS: self.ray_address or None,
            FRESH_SINCE: self.fresh_since,
            TORCH_THREADS: self.torch_threads,
            STALL_TIMEOUT: self.stall_timeout,
            CPU_LIMIT: self.cpu_limit,
            RETRY_FAILED_SINCE: self.retry_failed_since,
            WORKER_MEMORY_MB: self.memory_mb,
            PROFILE: self.profile,
            CACHE: self.cache_dir,
            EXECUTOR: self.executor if self.executor != "local" else None,
            REPORT_KERNELS: self.report_kernels if self.report_kernels != "shared" else None,
            FINGERPRINT_EXCLUDE: os.pathsep.join(self.fingerprint_exclude) or None,
            PROGRESS: None if self.progress is None else str(int(self.progress)),
            INTERACTIVE: None if self.interactive is None else str(int(self.interactive)),
        }
        out = {}
        for name, value in values.items():
            if value is None:
                continue
            out[name] = repr(float(value)) if isinstance(value, float) else str(value)
        return out

    def child_environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default ``os.environ``) without any ``RLAUDIT_*`` execution setting, plus
        :meth:`environment`: what a notebook kernel started with these options must see."""
        env = dict(os.environ if base is None else base)
        for name in _ALL:
            env.pop(name, None)
        env.update(self.environment())
        return env

    # --- the command line ---------------------------------------------------------------------------------

    @classmethod
    def from_cli(cls, args: Any, environ: Mapping[str, str] | None = None) -> RunOptions:
        """The options of ``rlaudit report`` or ``rlaudit audit``: the environment's, then the flags.

        Args:
            args: The parsed command (:class:`rlaudit.cli.PairArgs`): ``executor``, ``ray_address``,
                ``fresh``, ``retry_failed``, ``stall_timeout``, ``cpu_limit``.
            environ: The environment (default ``os.environ``); a setting there the flags do not override
                stays (``RLAUDIT_PROFILE`` wins over ``--profile``, as in every notebook).

        Raises:
            InputError: A bad flag or environment value, naming it.
        """
        base = cls.from_env(environ)
        now = time.time()
        changes: dict[str, Any] = {}
        if args.executor != "local":
            changes["executor"] = args.executor
            changes["ray_address"] = args.ray_address or "auto"
        if args.fresh:
            changes["fresh_since"] = now
        if args.retry_failed:
            changes["retry_failed_since"] = now
        if args.stall_timeout is not None:
            changes["stall_timeout"] = float(args.stall_timeout)
        if args.cpu_limit is not None:
            changes["cpu_limit"] = float(args.cpu_limit)
        return base.replace(**changes)


_ALL = (
    JOBS,
    EXECUTOR,
    RAY_ADDRESS,
    FRESH_SINCE,
    TORCH_THREADS,
    STALL_TIMEOUT,
    CPU_LIMIT,
    LEGACY_CPU_LIMIT,
    RETRY_FAILED_SINCE,
    WORKER_MEMORY_MB,
    PROGRESS,
    INTERACTIVE,
    PROFILE,
    REPORT_KERNELS,
    FINGERPRINT_EXCLUDE,
)
"""Every execution setting :meth:`RunOptions.environment` may write (not the project's locations)."""
