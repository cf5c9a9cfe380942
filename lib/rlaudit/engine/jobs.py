"""Running one probe on one subject: the subject's pool of worker clients, a self-contained job that any
executor backend can run (here, in a process pool, or on a Ray node sharing the cache), and the idle workers kept
from one workbench to the next (the next notebook of a report lane reuses them).

The notebook's handle on a pair, which plans these jobs and reads their results, is :mod:`rlaudit.engine.workbench`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlaudit.engine import failures
from rlaudit.engine.client import WorkerClient
from rlaudit.engine.store import ArtifactStore, ProbeResult, fingerprint_details, subject_fingerprint
from rlaudit.engine.subjects import SubjectSpec
from rlaudit.engine.worker import ProbeError


class _Missing(Exception):
    """The worker reported missing capabilities: abort the artifact commit."""

    def __init__(self, capabilities: Sequence[str]) -> None:
        super().__init__(", ".join(capabilities))
        self.capabilities = list(capabilities)


class _Subject:
    """One subject: its fingerprint, known capabilities, and a pool of worker clients.

    Args:
        spec: The subject.
        side: How results name it (``"baseline"``, ``"candidate"``, or an extra arm's label).
        store: The artifact store (capabilities are remembered there).
        fingerprint: Known fingerprint (a shipped job has it already); computed when None.
        client_options: Keyword arguments for each :class:`WorkerClient` (timeout, memory_mb, ...).
        on_release: Called after a client is returned to the pool (the workbench evicts idle workers).
    """

    def __init__(
        self,
        spec: SubjectSpec,
        side: str,
        store: ArtifactStore,
        *,
        fingerprint: str | None = None,
        client_options: Mapping[str, Any] | None = None,
        on_release: Callable[[], None] | None = None,
    ) -> None:
        self.spec = spec
        self.side = side
        self.store = store
        self.details = fingerprint_details(spec) if fingerprint is None else None
        self.fingerprint = (
            fingerprint
            if fingerprint is not None
            else subject_fingerprint(spec, details=self.details, cache_root=store.root)
        )
        self.client_options = dict(client_options or {})
        self.on_release = on_release
        self.lock = threading.Lock()
        self.clients: list[WorkerClient] = []
        self.idle: list[WorkerClient] = []
        self.last_used: dict[int, float] = {}
        self.load_error: ProbeError | None = None
        self.reads_recorded: set[int] = set()  # clients whose reads were recorded (once per load)
        self._capabilities: frozenset[str] | None = None

    @property
    def capabilities(self) -> frozenset[str] | None:
        if self._capabilities is None:
            self._capabilities = self.store.capabilities(self.fingerprint)
        return self._capabilities

    def missing(self, requires: Sequence[str]) -> list[str]:
        """The required capabilities the subject is known to lack ([] when unknown)."""
        caps = self.capabilities
        return [] if caps is None else [cap for cap in requires if cap not in caps]

    def learn(self, client: WorkerClient) -> None:
        """Remember what a freshly loaded worker told us (capabilities, or an import failure)."""
        if client.load_error is not None:
            self.load_error = client.load_error
            return
        reads = client.info.get("reads")
        if isinstance(reads, list) and id(client) not in self.reads_recorded:
            # The files the subject opened while loading: its next fingerprint checks them (fingerprint.py).
            self.reads_recorded.add(id(client))
            with contextlib.suppress(OSError):
                self.store.record_reads(self.fingerprint, reads)
        if client.capabilities is not None and self._capabilities != client.capabilities:
            self._capabilities = client.capabilities
            with contextlib.suppress(OSError):
                load_info = {k: v for k, v in client.info.items() if k != "reads"}  # recorded apart
                self.store.save_subject(
                    self.fingerprint, self.spec, client.capabilities, load_info, self.details
                )

    @property
    def pool_key(self) -> tuple[str, ...]:
        """What a kept worker must match to serve this subject (see :func:`keep_workers`)."""
        return (
            str(self.store.root),
            self.fingerprint,
            json.dumps(self.spec.to_dict(), sort_keys=True, default=str),
            json.dumps(self.client_options, sort_keys=True, default=str),
        )

    def acquire(self) -> WorkerClient:
        """An idle client (a running one first), a worker kept from an earlier workbench, or a new one."""
        with self.lock:
            self.idle.sort(key=lambda c: c.alive)
            if self.idle:
                return self.idle.pop()
            client = _adopt(self.pool_key)
            if client is None:
                client = WorkerClient(self.spec, self.store.log_dir(self.fingerprint), **self.client_options)
            self.clients.append(client)
            return client

    def release(self, client: WorkerClient) -> None:
        with self.lock:
            self.last_used[id(client)] = time.monotonic()
            self.idle.append(client)
        if self.on_release is not None:
            self.on_release()


@dataclass(frozen=True)
class ProbeJob:
    """One probe call on one subject, self-contained and picklable.

    This is what a non-local executor backend (one whose jobs do not run as threads of the notebook)
    ships to where it runs :func:`run_probe_job`; the cache directory must be the same path there.

    Attributes:
        spec: The subject's :meth:`SubjectSpec.to_dict`.
        side: How the result names the subject.
        fingerprint: The subject's fingerprint (computed once, in the notebook).
        probe: ``"module:function"``.
        version: The probe's version.
        requires: Capabilities the probe needs.
        root: ``sys.path`` entry for the probe's module (see :func:`rlaudit.probe.probe_import_root`).
        params: The probe's parameters, defaults filled in.
        cache_root: The artifact store's directory.
        timeout: CPU-seconds the call may take (:mod:`rlaudit.engine.limits`; never a wall-clock limit).
        newer_than: Ignore artifacts older than this Unix time (``fresh``).
        client_options: Extra :class:`WorkerClient` options (memory_mb, torch_threads, load_timeout,
            stall_timeout).
        failures_since: Run the call again even if it failed before this Unix time (``--retry-failed``);
            remembered failures (:mod:`rlaudit.engine.failures`) older than ``newer_than`` are ignored too.
    """

    spec: dict[str, Any]
    side: str
    fingerprint: str
    probe: str
    version: int
    requires: tuple[str, ...]
    root: str
    params: dict[str, Any]
    cache_root: str
    timeout: float
    newer_than: float | None = None
    client_options: dict[str, Any] = field(default_factory=dict)
    failures_since: float | None = None


def run_probe_job(job: ProbeJob) -> ProbeResult:
    """Run one :class:`ProbeJob` from scratch: cache lookup, a worker of its own, commit, worker stopped.

    Module-level and free of notebook state, so any executor backend can run it (in a process pool, on a
    Ray node). Failures come back as a :class:`ProbeResult` with ``error`` set, never as an exception.
    """
    store = ArtifactStore(job.cache_root)
    subject = _Subject(
        SubjectSpec.from_dict(job.spec),
        job.side,
        store,
        fingerprint=job.fingerprint,
        client_options={"timeout": job.timeout, **job.client_options},
    )
    try:
        return _execute(job, subject)
    finally:
        _shutdown([subject])


def _answer_locally(job: ProbeJob, subject: _Subject) -> ProbeResult | None:
    """The result when no worker is needed: a cache hit or a capability known to be missing; else None."""
    hit = subject.store.get(
        job.fingerprint,
        job.probe,
        job.version,
        job.params,
        newer_than=job.newer_than,
        side=job.side,
        spec=subject.spec.text,
    )
    if hit is not None:
        return hit
    missing = subject.missing(job.requires)
    return _failed(job, subject, missing=missing) if missing else None


def _execute(job: ProbeJob, subject: _Subject) -> ProbeResult:
    """One probe call: a cache hit, a capability known to be missing, or computed in a worker."""
    store = subject.store
    key_args = (job.fingerprint, job.probe, job.version, job.params)
    known = _answer_locally(job, subject)
    if known is not None:
        return known
    if subject.load_error is not None:
        return _failed(job, subject, error=ProbeError.from_dict(subject.load_error.to_dict()))
    # A call that failed before (a hang, a crash) is not run again by every check that needs it.
    record = failures.record_path(store.root, *key_args)
    limits = _limits(job)
    since = max((t for t in (job.newer_than, job.failures_since) if t is not None), default=None)
    remembered = failures.recall(record, limits, since)
    if remembered is not None:
        return _failed(job, subject, error=remembered)

    def produce(out: Any) -> None:
        again = failures.recall(record, limits, since)
        if again is not None:
            raise again  # it failed in another job while this one waited for the lock
        client = subject.acquire()
        try:
            client.start()
            subject.learn(client)
            missing_now = subject.missing(job.requires)
            if missing_now:
                raise _Missing(missing_now)
            try:
                reply = client.call(job.probe, job.params, out, timeout=job.timeout, root=job.root)
            except ProbeError as exc:
                failures.remember(record, exc, limits)  # under the artifact's lock: waiting jobs see it
                raise
        finally:
            subject.release(client)
        if not reply.get("ok"):
            raise _Missing(reply.get("missing") or ["(unknown)"])
        if reply.get("reads"):
            # Files the subject's make_env opened: part of its fingerprint from now on (fingerprint.py).
            with contextlib.suppress(OSError):
                store.record_reads(job.fingerprint, reply["reads"])
        failures.forget(record)

    start = time.perf_counter()
    try:
        return store.compute(
            *key_args, produce, newer_than=job.newer_than, side=job.side, spec=subject.spec.text
        )
    except _Missing as exc:
        return _failed(job, subject, missing=exc.capabilities)
    except ProbeError as exc:
        return _failed(job, subject, error=exc, seconds=time.perf_counter() - start)


def _limits(job: ProbeJob) -> dict[str, Any]:
    """The limits a job's call runs under, as :mod:`rlaudit.engine.failures` compares them."""
    from rlaudit.engine import limits

    options = job.client_options
    return {
        "stall": options.get("stall_timeout") or limits.stall_timeout() or limits.DEFAULT_STALL_SECONDS,
        "cpu": job.timeout,
        "memory_mb": options.get("memory_mb"),
    }


def _failed(
    job: ProbeJob,
    subject: _Subject,
    *,
    missing: Sequence[str] = (),
    error: ProbeError | None = None,
    seconds: float = 0.0,
) -> ProbeResult:
    return ProbeResult(
        side=job.side,
        spec=subject.spec.text,
        probe=job.probe,
        params=job.params,
        ok=False,
        error=error,
        missing=list(missing),
        seconds=seconds,
        version=job.version,
        fingerprint=job.fingerprint,
    )


def _shutdown(subjects: list[_Subject]) -> None:
    """Stop the subjects' workers, or keep the idle running ones for the next workbench (see
    :func:`keep_workers`)."""
    held: list[tuple[tuple[str, ...], WorkerClient]] = []
    for subject in list(subjects):
        with subject.lock:
            key = subject.pool_key
            held.extend((key, client) for client in subject.clients)
            subject.clients.clear()
            subject.idle.clear()
    _close_all(_park(held))


def _close_all(clients: Sequence[WorkerClient]) -> None:
    def close(client: WorkerClient) -> None:
        with contextlib.suppress(Exception):
            client.close(wait=1.0)

    # In parallel: each worker takes a moment to exit its interpreter.
    threads = [threading.Thread(target=close, args=(client,), daemon=True) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)


# --- workers kept from one workbench to the next ------------------------------------------------------------

_KEEP_LOCK = threading.Lock()
_KEPT: list[tuple[tuple[str, ...], WorkerClient]] = []  # oldest first
_KEEP_LIMIT = 0


def keep_workers(limit: int = 4) -> None:
    """Keep up to ``limit`` idle workers running when a workbench is closed or garbage-collected, for the next
    workbench of this process that asks for the same subject; ``limit=0`` (the default state) stops them.

    ``rlaudit report`` turns this on in the kernels it shares between notebooks (``rlaudit.report`` lanes):
    the notebooks of a report ask for the same two subjects, and a worker that has already imported torch and
    the subject (about 3 s of CPU for the built-ins) serves the next notebook's probes as it served the
    previous ones'. A kept worker is reused only for the same subject fingerprint (so never after its code
    changed), artifact cache and worker options; kept workers stop at exit like any other.
    """
    global _KEEP_LIMIT
    with _KEEP_LOCK:
        _KEEP_LIMIT = max(0, int(limit))
        excess = _trim()
    _close_all(excess)


def kept_workers() -> list[int]:
    """The pids of the workers kept for reuse (diagnostics and tests)."""
    with _KEEP_LOCK:
        return [client.pid for _, client in _KEPT if client.pid is not None]


def _park(held: Sequence[tuple[tuple[str, ...], WorkerClient]]) -> list[WorkerClient]:
    """Keep the idle running clients (up to the limit); returns the clients to stop."""
    stop = []
    with _KEEP_LOCK:
        for key, client in held:
            if _KEEP_LIMIT and client.alive and not client.busy:
                _KEPT.append((key, client))
            else:
                stop.append(client)
        stop.extend(_trim())
    return stop


def _trim() -> list[WorkerClient]:
    """Under the lock: drop dead kept workers and the oldest beyond the limit; returns those to stop."""
    _KEPT[:] = [(key, client) for key, client in _KEPT if client.alive]
    excess = len(_KEPT) - _KEEP_LIMIT
    if excess <= 0:
        return []
    dropped = [client for _, client in _KEPT[:excess]]
    del _KEPT[:excess]
    return dropped


def _adopt(key: tuple[str, ...]) -> WorkerClient | None:
    """A kept running worker for ``key`` (the most recently kept), or None."""
    with _KEEP_LOCK:
        for i in range(len(_KEPT) - 1, -1, -1):
            kept_key, client = _KEPT[i]
            if kept_key == key and client.alive:
                del _KEPT[i]
                return client
    return None
