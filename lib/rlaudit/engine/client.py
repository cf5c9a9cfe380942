"""The notebook side of a worker: :class:`WorkerClient` starts ``python -m rlaudit.engine.worker`` with a subject's
interpreter, cwd and environment, sends it probe calls with a timeout each, and turns every way a call can fail
(a hang, a crash, running out of memory, an import error) into a :class:`~rlaudit.engine.worker.ProbeError`.

The protocol and the worker itself are :mod:`rlaudit.engine.worker`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rlaudit.engine.worker import ProbeError

TAIL_BYTES = 4000  # how much of the worker's stderr log an error carries
KEEP_LOGS = 50  # worker logs kept per subject (older ones are deleted when a worker starts)

_LIVE: weakref.WeakSet[WorkerClient] = weakref.WeakSet()
_ATEXIT_LOCK = threading.Lock()
_ATEXIT_REGISTERED = False


def _register_atexit() -> None:
    global _ATEXIT_REGISTERED
    with _ATEXIT_LOCK:
        if not _ATEXIT_REGISTERED:
            import atexit

            atexit.register(close_all_workers)
            _ATEXIT_REGISTERED = True


def close_all_workers() -> None:
    """Stop every worker this process started (registered at exit; safe to call any time)."""
    for client in list(_LIVE):
        with contextlib.suppress(Exception):
            client.close(wait=0.5)


def _prune_logs(log_dir: Path) -> None:
    """Before a worker starts its log: keep the newest ``KEEP_LOGS - 1`` logs, delete older ones."""
    try:
        logs = sorted(log_dir.glob("worker-*.log"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in logs[max(KEEP_LOGS - 1, 0) :]:
        with contextlib.suppress(OSError):
            old.unlink()


class _Died(Exception):
    """The worker process ended while we waited for it."""


class WorkerClient:
    """Notebook-side handle on one worker process for one subject.

    The worker starts lazily on the first call and is replaced after a failed call (exception, crash, timeout,
    OOM, protocol error; not after an import error, which a new worker would repeat). One client
    serves one call at a time (calls from several threads queue on a lock); use several clients for
    parallelism.

    Args:
        spec: The subject.
        log_dir: Directory for the worker's stderr logs (one file per worker process).
        timeout: Default CPU-seconds a probe call's process tree may use (``call(..., timeout=)`` overrides
            it), scaled by :func:`rlaudit.engine.limits.machine_scale`; never a wall-clock limit.
        stall_timeout: Seconds a probe call may go without progress (:mod:`rlaudit.engine.heartbeat`) before it is
            stopped as hung (``call(..., stall=)`` overrides it); default ``RLAUDIT_STALL_TIMEOUT`` or
            :data:`rlaudit.engine.limits.DEFAULT_STALL_SECONDS`.
        load_timeout: Seconds starting the worker and importing the subject may go without progress (a module
            imported counts); default: the stall limit. Loading also has the probe calls' CPU limit.
        memory_mb: Address-space limit of the worker in MiB (``RLIMIT_AS``); default
            ``RLAUDIT_WORKER_MEMORY_MB`` or none. Note that it caps *virtual* memory: torch alone maps ~1 GB.
        torch_threads: Threads for torch/OpenMP in the worker (``RLAUDIT_TORCH_THREADS``); default inherit.
        env: Extra environment variables on top of the spec's.
    """

    def __init__(
        self,
        spec: Any,
        log_dir: str | Path,
        timeout: float = 600.0,
        *,
        stall_timeout: float | None = None,
        load_timeout: float | None = None,
        memory_mb: float | None = None,
        torch_threads: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        from rlaudit.engine.subjects import SubjectSpec, parse_spec

        self.spec: SubjectSpec = spec if isinstance(spec, SubjectSpec) else parse_spec(str(spec))
        self.log_dir = Path(log_dir)
        from rlaudit.engine import limits

        self.timeout = float(timeout)
        self.stall_timeout = float(stall_timeout or limits.stall_timeout() or limits.DEFAULT_STALL_SECONDS)
        self.load_timeout = float(load_timeout or self.stall_timeout)
        if memory_mb is None:
            from rlaudit.engine.validate import memory_cap

            memory_mb = memory_cap()  # a bad value names RLAUDIT_WORKER_MEMORY_MB
        self.memory_mb = memory_mb
        self.torch_threads = torch_threads
        self.extra_env = dict(env or {})
        self.info: dict[str, Any] = {}
        self.capabilities: frozenset[str] | None = None
        self.load_error: ProbeError | None = None
        self.interpreter: str | None = None  # the python the worker runs under, once chosen
        # Building the subject's environment (spec.requirements) failed: kept, since rebuilding would fail
        # the same way (like an import error, which a new worker would repeat).
        self._env_error: ProbeError | None = None
        self.log_path: Path | None = None
        self.starts = 0  # how many worker processes this client has started
        self._proc: subprocess.Popen[bytes] | None = None
        self._req_fd = -1
        self._resp_fd = -1
        self._buf = b""
        self._next_id = 0
        self._lock = threading.RLock()
        self._killed_by_us = False
        self.busy = False

    # --- lifecycle ------------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The worker's pid while it runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def alive(self) -> bool:
        return self.pid is not None

    def _environment(self) -> dict[str, str]:
        from rlaudit.engine.paths import LIB_DIR

        env = dict(os.environ)
        env.pop("PYTHONHOME", None)  # would point another interpreter at the wrong standard library
        env.update(self.spec.env)
        env.update(self.extra_env)
        # rlaudit must import in the subject's interpreter even if its venv does not have it installed.
        existing = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = str(LIB_DIR) + (os.pathsep + existing if existing else "")
        env["PYTHONUNBUFFERED"] = "1"  # so the log tail attached to an error is up to date
        if self.torch_threads:
            env["RLAUDIT_TORCH_THREADS"] = str(int(self.torch_threads))
        if self.memory_mb:
            env["RLAUDIT_WORKER_MEMORY_MB"] = str(self.memory_mb)
        else:
            env.pop("RLAUDIT_WORKER_MEMORY_MB", None)
        return env

    def start(self) -> dict[str, Any]:
        """Start the worker and load the subject (no-op when running); returns the load info.

        Raises:
            ProbeError: The worker could not start or died or hung while loading. A subject that fails to
                import, or whose virtual environment (``requirements``) cannot be built, does *not* raise
                here: it is kept in :attr:`load_error` and raised by every call.
        """
        with self._lock:
            if self.alive:
                return self.info
            self._reset()
            interpreter = self._choose_interpreter()
            if interpreter is None:
                return self.info
            self.log_dir.mkdir(parents=True, exist_ok=True)
            _prune_logs(self.log_dir)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            req_r, req_w = os.pipe()
            resp_r, resp_w = os.pipe()
            self.log_path = (
                self.log_dir / f"worker-{stamp}-{os.getpid()}-{id(self) & 0xFFFF:04x}-{self.starts}.log"
            )
            command = [
                interpreter,
                "-m",
                "rlaudit.engine.worker",
                "--requests",
                str(req_r),
                "--responses",
                str(resp_w),
                "--parent",
                str(os.getpid()),
            ]
            try:
                with open(self.log_path, "ab") as log:
                    # start_new_session: the worker leads its own process group, so a timeout kills the
                    # subject's children too, and Ctrl-C in the notebook does not reach it.
                    self._proc = subprocess.Popen(
                        command,
                        cwd=self.spec.cwd or None,
                        env=self._environment(),
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                        pass_fds=(req_r, resp_w),
                        start_new_session=True,
                        close_fds=True,
                    )
            except OSError as exc:
                for fd in (req_r, req_w, resp_r, resp_w):
                    os.close(fd)
                raise ProbeError(
                    "crash",
                    f"could not start a worker for {self.spec.display!r} with {interpreter}: {exc}; "
                    "check the subject's python and cwd",
                ) from exc
            finally:
                if self._proc is not None:
                    os.close(req_r)
                    os.close(resp_w)
            self._req_fd, self._resp_fd = req_w, resp_r
            self._killed_by_us = False
            self.starts += 1
            _LIVE.add(self)
            _register_atexit()
            from rlaudit.engine.limits import ProbeLimits

            # Like a probe call, loading is stopped for no progress or for CPU time, never for wall time: on
            # a busy machine importing torch alone can take minutes of wall time (the worker beats per import).
            limits = ProbeLimits(stall=self.load_timeout, cpu=self.timeout)
            request = {"op": "load", "spec": self.spec.to_dict()}
            response = self._request(request, self.load_timeout, None, 0, limits=limits)
            self.info = {k: v for k, v in response.items() if k not in ("id", "ok", "error")}
            if response.get("ok"):
                self.capabilities = frozenset(response.get("capabilities") or ())
                self.load_error = None
            else:
                error = ProbeError.from_dict(response.get("error") or {})
                error.stderr_tail = self._tail(0)
                self.load_error = error
            return self.info

    def _choose_interpreter(self) -> str | None:
        """The subject's interpreter (building its virtual environment if it names requirements); None when
        that failed, with the failure in :attr:`load_error`."""
        from rlaudit.adapters.venv import interpreter_for

        if self._env_error is None and self.interpreter is None:
            try:
                self.interpreter = interpreter_for(self.spec)
            except Exception as exc:  # any failure to build the environment is this subject's error only
                self._env_error = ProbeError(
                    "import",
                    f"could not prepare the Python environment of subject {self.spec.display!r} from the "
                    f"requirements file {self.spec.requirements} (base interpreter {self.spec.interpreter}"
                    f"{', system_site_packages' if self.spec.system_site_packages else ''}): "
                    f"{type(exc).__name__}: {exc}",
                    traceback.format_exc(),
                )
        if self._env_error is not None:
            self.load_error = ProbeError.from_dict(self._env_error.to_dict())
            return None
        return self.interpreter

    def ping(self, timeout: float = 10.0) -> int:
        """Round-trip to the worker (starting it if needed); returns its pid."""
        with self._lock:
            self.start()
            if self._env_error is not None:  # no worker to ask: its environment could not be built
                raise ProbeError.from_dict(self._env_error.to_dict())
            return int(self._request({"op": "ping"}, timeout, None, self._log_size())["pid"])

    def close(self, wait: float = 3.0) -> None:
        """Ask the worker to exit; kill its process group if it does not within ``wait`` seconds."""
        if not self._lock.acquire(timeout=max(wait, 0.1)):
            self.kill()  # a call is running: do not wait for it
            return
        try:
            if self._proc is not None and self._proc.poll() is None:
                with contextlib.suppress(ProbeError, OSError):
                    self._request({"op": "shutdown"}, wait, None, self._log_size())
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=wait)
            self.kill()
        finally:
            self._lock.release()

    def kill(self) -> None:
        """Kill the worker's whole process group now (safe from any thread, and when not running).

        From another thread while a call is running, only the processes are killed: the calling thread
        sees the worker die, reports it, and closes the pipes itself (closing them under its feet could
        hand their descriptor numbers to some other file while it still reads them).
        """
        proc = self._proc
        if proc is not None:
            self._killed_by_us = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        if self._lock.acquire(blocking=False):
            try:
                self._close_fds()
            finally:
                self._lock.release()
        _LIVE.discard(self)

    def __enter__(self) -> WorkerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if self._proc is not None and self._proc.poll() is None:
                self.kill()

    # --- calls ----------------------------------------------------------------------------------------

    def call(
        self,
        probe_name: str,
        params: Mapping[str, Any],
        out_dir: str | Path,
        timeout: float | None = None,
        *,
        root: str = "",
        on_progress: Callable[[int, int], None] | None = None,
        stall: float | None = None,
    ) -> dict[str, Any]:
        """Run one probe in the worker (starting it if needed).

        Args:
            probe_name: ``"module:function"`` of a :func:`rlaudit.probe.probe`.
            params: The probe's keyword arguments (JSON-serializable).
            out_dir: Directory the probe writes its artifacts and ``result.json`` into.
            timeout: CPU-seconds the call's process tree may use before it is killed (default: the client's
                ``timeout``), scaled by this machine's calibration. Worker start-up and subject loading have
                their own ``load_timeout``.
            root: ``sys.path`` entry the worker adds if the probe's module is not importable otherwise.
            on_progress: Called with ``(i, n)`` for the probe's heartbeats.
            stall: Seconds without progress before the call is killed as hung (default: the client's
                ``stall_timeout``).

        Returns:
            ``{"ok": True, "result": {...}, "seconds": s}``, or ``{"ok": False, "missing": [caps]}`` when the
            subject lacks a capability the probe requires (the probe did not run).

        Raises:
            ProbeError: The probe raised, the worker crashed, hung, ran out of memory, the subject failed to
                import, or the protocol broke. After any of these but ``import`` the worker is gone and the
                next call starts a fresh one.
        """
        with self._lock:
            self.busy = True
            try:
                self.start()
                if self.load_error is not None:
                    # A fresh copy per call: the same subject error is reported by every call.
                    raise ProbeError.from_dict(self.load_error.to_dict())
                since = self._log_size()
                request = {
                    "op": "probe",
                    "probe": probe_name,
                    "root": root,
                    "params": dict(params),
                    "out": str(out_dir),
                }
                from rlaudit.engine.limits import ProbeLimits

                limits = ProbeLimits(
                    stall=self.stall_timeout if stall is None else float(stall),
                    cpu=self.timeout if timeout is None else float(timeout),
                )
                response = self._request(
                    request, limits.stall, on_progress, since, what=probe_name, limits=limits
                )
                if response.get("ok") or "missing" in response:
                    return {k: v for k, v in response.items() if k != "id"}
                error = ProbeError.from_dict(response.get("error") or {})
                error.stderr_tail = self._tail(since)
                if error.kind in ("exception", "oom"):
                    # A probe that failed halfway may have left the subject's state (globals, torch
                    # settings, half-built objects) changed: the next call gets a fresh worker. An import
                    # error keeps the worker, since a new one would fail the same way.
                    self.close(wait=2.0)
                raise error
            finally:
                self.busy = False

    def _request(
        self,
        request: dict[str, Any],
        timeout: float,
        on_progress: Callable[[int, int], None] | None,
        since: int,
        what: str = "",
        limits: Any = None,
    ) -> dict[str, Any]:
        """Send one request and wait for its reply: within ``timeout`` wall seconds, or, for a probe call with
        ``limits`` (:class:`rlaudit.engine.limits.ProbeLimits`), for as long as it makes progress within its limits."""
        self._next_id += 1
        rid = self._next_id
        what = what or request["op"]
        from rlaudit.findings import jsonable

        line = (json.dumps(jsonable({"id": rid, **request}), ensure_ascii=False) + "\n").encode("utf-8")
        deadline = time.monotonic() + timeout
        watch = _Watch(self, limits) if limits is not None else None
        try:
            self._write(line, deadline)
            while True:
                if watch is None:
                    message = self._read_message(deadline)
                else:
                    try:
                        # wake up every second to look at the CPU time, even while nothing arrives
                        message = self._read_message(min(watch.stall_deadline, time.monotonic() + 1.0))
                    except TimeoutError:
                        watch.check()  # raises _LimitHit when a limit is reached
                        continue
                    watch.check(every=1.0)  # a probe that beats often is looked at too
                    if "beat" in message and "ok" not in message and message.get("id") == rid:
                        watch.progressed(message.get("beat"))
                        continue
                    if message.get("progress") is not None and "ok" not in message:
                        watch.progressed(None)
                if message.get("id") != rid:
                    raise self._fail(
                        "protocol",
                        f"worker answered request {message.get('id')!r} while {rid} was pending; restarted it",
                        since,
                    )
                progress = message.get("progress")
                if progress is not None and "ok" not in message:
                    if on_progress is not None:
                        with contextlib.suppress(Exception):
                            on_progress(int(progress[0]), int(progress[1]))
                    continue
                return message
        except _LimitHit as hit:
            self._dump_stacks()
            tail = self._tail(since)
            where = _stuck_at(tail)
            raise self._fail(
                "timeout",
                f"{what} on {self.spec.display!r} {hit.reason}; the worker (pid "
                f"{self._proc.pid if self._proc else '?'}) and its children were killed. "
                + (f"It was stuck at: {where}. " if where else "The stderr tail shows where it was stuck. ")
                + hit.advice,
                since,
            ) from None
        except TimeoutError:
            self._dump_stacks()
            raise self._fail(
                "timeout",
                f"{what} on {self.spec.display!r} did not finish within {timeout:g} s; the worker (pid "
                f"{self._proc.pid if self._proc else '?'}) and its children were killed. Starting the worker and "
                "the stderr tail shows where it was stuck",
                since,
            ) from None
        except _Died:
            raise self._died(what, since) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self._fail(
                "protocol", f"unreadable reply from the worker during {what}: {exc}", since
            ) from None

    def _write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            _, ready, _ = select.select([], [self._req_fd], [], min(remaining, 0.5))
            if not ready:
                if self._proc is None or self._proc.poll() is not None:
                    raise _Died
                continue
            try:
                written = os.write(self._req_fd, view)
            except (BrokenPipeError, OSError):
                raise _Died from None
            view = view[written:]

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while True:
            newline = self._buf.find(b"\n")
            if newline >= 0:
                line, self._buf = self._buf[:newline], self._buf[newline + 1 :]
                if line.strip():
                    message = json.loads(line.decode("utf-8"))
                    if not isinstance(message, dict):
                        raise json.JSONDecodeError(
                            "expected a JSON object", line.decode("utf-8", "replace"), 0
                        )
                    return message
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._resp_fd], [], [], min(remaining, 0.25))
            if ready:
                chunk = os.read(self._resp_fd, 1 << 16)
                if not chunk:
                    raise _Died  # EOF: the worker closed its end, i.e. it exited
                self._buf += chunk
            elif self._proc is None or self._proc.poll() is not None:
                # Dead, though the pipe may still be open in a forked child it left behind.
                raise _Died

    # --- failures -------------------------------------------------------------------------------------

    def _died(self, what: str, since: int) -> ProbeError:
        proc = self._proc
        code: int | None = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=5)
        killed_by_us = self._killed_by_us
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            if -code == signal.SIGKILL and not killed_by_us:
                return self._fail(
                    "oom",
                    f"the worker for {self.spec.display!r} was killed by SIGKILL during {what}, not by rlaudit: "
                    "suspected out of memory (the kernel's OOM killer). Check `dmesg`, use fewer parallel jobs "
                    "(-j 1) or a smaller profile",
                    since,
                )
            return self._fail(
                "crash",
                f"the worker for {self.spec.display!r} died with {name} during {what} (exit code {code}); "
                "the stderr tail may hold a faulthandler traceback",
                since,
            )
        return self._fail(
            "crash",
            f"the worker for {self.spec.display!r} exited with code {code} during {what} (subject code called "
            "os._exit/sys.exit in a thread, or the interpreter aborted); see the stderr tail",
            since,
        )

    def _fail(self, kind: str, message: str, since: int) -> ProbeError:
        """Stop the worker (the next call starts a fresh one) and build the error."""
        from rlaudit.engine.validate import memory_cap_hint

        self.kill()
        tail = self._tail(since)
        # A worker that died under the memory cap ("failed to map segment", bad_alloc) names the cap.
        hint = "" if kind == "timeout" else memory_cap_hint(tail, self.memory_mb or 0.0)
        return ProbeError(kind, message + hint, "", tail)

    def _dump_stacks(self) -> None:
        # Ask faulthandler (registered on SIGUSR1 in the worker) for every thread's stack before the kill,
        # so a timeout says where the probe was stuck.
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(proc.pid, signal.SIGUSR1)
            time.sleep(0.3)

    def _log_size(self) -> int:
        try:
            return self.log_path.stat().st_size if self.log_path else 0
        except OSError:
            return 0

    def _tail(self, since: int) -> str:
        """What the worker wrote to its log since byte ``since`` (at most the last TAIL_BYTES)."""
        if self.log_path is None:
            return ""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                end = f.tell()
                start = max(since, end - TAIL_BYTES)
                f.seek(start)
                data = f.read(end - start)
        except OSError:
            return ""
        text = data.decode("utf-8", "replace")
        return ("…" + text) if start > since else text

    def _close_fds(self) -> None:
        for fd in (self._req_fd, self._resp_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._req_fd = self._resp_fd = -1
        self._buf = b""

    def _reset(self) -> None:
        if self._proc is not None:
            self.kill()
        self._proc = None
        self.capabilities = None
        self.load_error = None
        self.info = {}


class _LimitHit(Exception):
    """A probe call reached one of its :mod:`rlaudit.engine.limits`."""

    def __init__(self, reason: str, advice: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.advice = advice


class _Watch:
    """The limits of one probe call as it runs: when it last made progress, and its CPU time so far."""

    def __init__(self, client: WorkerClient, limits: Any) -> None:
        from rlaudit.engine.limits import tree_cpu_seconds

        self.limits = limits
        self.pid = client.pid
        self.started = time.monotonic()
        self.last_progress = self.started
        self.progress: dict[str, Any] | None = None
        self.cpu_limit = limits.cpu_scaled
        self._cpu = tree_cpu_seconds
        self.cpu0 = (self._cpu(self.pid) if self.pid is not None else None) or 0.0
        self.cpu_used = 0.0
        self.checked = self.started

    @property
    def stall_deadline(self) -> float:
        return self.last_progress + self.limits.stall

    def progressed(self, counters: dict[str, Any] | None) -> None:
        self.last_progress = time.monotonic()
        if counters:
            self.progress = counters

    def check(self, every: float = 0.0) -> None:
        """Raise :class:`_LimitHit` when the call made no progress for the stall limit, or used more CPU time
        than its limit; else return. With ``every``, only look if that many seconds passed since the last look
        (reading the process tree's CPU time costs a few /proc reads)."""
        from rlaudit.engine import heartbeat, limits

        now = time.monotonic()
        if now - self.checked < every:
            return
        self.checked = now
        if self.pid is not None:
            cpu = self._cpu(self.pid)
            if cpu is not None:
                self.cpu_used = max(cpu - self.cpu0, 0.0)
        last = heartbeat.describe(self.progress)
        if now >= self.stall_deadline:
            since = (
                f"its last progress ({last}) came {self.last_progress - self.started:.0f} s into the call"
                if self.progress
                else "it reported no progress at all"
            )
            raise _LimitHit(
                f"made no progress for {self.limits.stall:g} s (stall limit: no environment step, optimizer "
                f"update, finished episode or progress report; {since}, {now - self.started:.0f} s and "
                f"{self.cpu_used:.1f} CPU-seconds in all)",
                limits.advice("stall"),
            )
        if self.cpu_limit is not None and self.cpu_used > self.cpu_limit:
            scale = limits.machine_scale()
            scaled = (
                f" ({self.limits.cpu:g} s x {scale:.2f} for this machine's core speed)" if scale > 1 else ""
            )
            raise _LimitHit(
                f"used {self.cpu_used:.1f} CPU-seconds, more than its CPU time limit of {self.cpu_limit:g} s"
                f"{scaled}, after {now - self.started:.0f} s (last progress: {last})",
                limits.advice("cpu"),
            )


def _stuck_at(tail: str, frames: int = 3) -> str:
    """The innermost frames of the probe's thread in a faulthandler dump in ``tail`` (the one running the
    probe: its stack passes through the worker's ``run_probe``), as ``"f (file:line) < g (file:line)"``."""
    blocks = tail.split("(most recent call first):")
    for block in reversed(blocks[1:]):
        lines = [line.strip() for line in block.splitlines() if line.strip().startswith("File ")]
        if not any(" in run_probe" in line for line in lines):
            continue
        shown = []
        for line in lines[:frames]:
            # 'File "/x/y.py", line 12 in hang'
            head, _, func = line.partition(" in ")
            path, _, lineno = head.removeprefix("File ").partition(", line ")
            name = Path(path.strip().strip('"')).name
            shown.append(f"{func} ({name}:{lineno.strip()})")
        return " < ".join(shown)
    return ""
