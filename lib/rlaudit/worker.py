"""The per-subject worker process (``python -m rlaudit.worker``) and its notebook-side client.

Baseline and candidate are often two versions of one package, or need two virtual environments, so each
subject's probes run in a process of its own, started with the subject's interpreter, cwd and environment.
The worker loads the subject once and serves many probe calls.

Protocol: JSON lines over two private pipes (requests in, responses out), never stdout. At startup the worker
moves the pipes to fresh non-inheritable descriptors and points fd 1 at stderr, so nothing the subject prints
can corrupt the protocol; stderr goes to a log file whose tail is attached to errors. Requests::

    {"id": 1, "op": "load", "spec": {...}}      -> {"id": 1, "ok": true, "capabilities": [...], "pid": ...}
    {"id": 2, "op": "probe", "probe": "m:f", "root": "/x", "params": {...}, "out": "/dir"}
                                                -> {"id": 2, "ok": true, "result": {...}, "seconds": 1.2}
                                                   (progress lines {"id": 2, "progress": [i, n]} may come first)
    {"id": 3, "op": "ping"}                     -> {"id": 3, "ok": true, "pid": ...}
    {"id": 4, "op": "shutdown"}                 -> {"id": 4, "ok": true}, then the worker exits

The client (:class:`WorkerClient`) puts a timeout on every call. A hang is killed (the worker's whole process
group) and reported as ``timeout``; a crash as ``crash`` with the exit code or signal; a MemoryError under the
optional address-space limit (``RLAUDIT_WORKER_MEMORY_MB``) as ``oom``, and so is a SIGKILL that rlaudit did
not send (most likely the kernel's OOM killer). After any failure but an import error the next call starts a
new worker.

Only the standard library is imported at module level: this file runs in subjects' own interpreters.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

ERROR_KINDS = ("exception", "crash", "timeout", "oom", "import", "protocol")
TAIL_BYTES = 4000  # how much of the worker's stderr log an error carries
KEEP_LOGS = 50  # worker logs kept per subject (older ones are deleted when a worker starts)
DEFAULT_LOAD_TIMEOUT = 300.0  # seconds for the worker to start and import the subject (torch alone is ~1.5 s)


class ProbeError(Exception):
    """A probe call that did not produce artifacts.

    Attributes:
        kind: ``"exception"`` (the probe raised), ``"crash"`` (the worker died: segfault, exit, signal),
            ``"timeout"`` (killed after the call's time limit), ``"oom"`` (MemoryError under the memory limit,
            or a SIGKILL that rlaudit did not send), ``"import"`` (the subject or the probe module failed to
            import in the worker), ``"protocol"`` (the worker answered something unreadable).
        message: One or two sentences: what happened and what to do.
        traceback: The Python traceback from the worker, when there is one.
        stderr_tail: The end of what the worker wrote to stderr during the call (prints, warnings,
            faulthandler dumps).
    """

    def __init__(self, kind: str, message: str, traceback: str = "", stderr_tail: str = "") -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"ProbeError kind must be one of {ERROR_KINDS}, got {kind!r}")
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.traceback = traceback
        self.stderr_tail = stderr_tail

    # What crosses a process boundary, in __init__'s order: by pickle (a Ray task) or as JSON (the pipe).
    FIELDS: ClassVar[tuple[str, ...]] = ("kind", "message", "traceback", "stderr_tail")

    def __reduce__(self) -> tuple[Any, ...]:
        return (ProbeError, tuple(getattr(self, name) for name in self.FIELDS))

    def __repr__(self) -> str:
        return f"ProbeError(kind={self.kind!r}, message={self.message!r})"

    def to_dict(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in self.FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeError:
        kind = str(data.get("kind", "protocol"))
        return cls(
            kind if kind in ERROR_KINDS else "protocol",
            str(data.get("message", "")),
            str(data.get("traceback", "")),
            str(data.get("stderr_tail", "")),
        )

    def describe(self) -> str:
        """The error with its traceback and stderr tail, for printing in a notebook."""
        parts = [f"{self.kind}: {self.message}"]
        if self.traceback:
            parts.append(self.traceback.rstrip())
        if self.stderr_tail:
            parts.append("--- worker stderr (tail) ---\n" + self.stderr_tail.rstrip())
        return "\n".join(parts)


# =========================================================================================================
# Worker side (runs in the subject's interpreter)


class _Server:
    """The worker's state: the loaded subject and the response pipe."""

    def __init__(self, responses: int) -> None:
        self.out = os.fdopen(responses, "wb", buffering=0)
        self.write_lock = threading.Lock()
        self.subject: Any = None
        self.spec: Any = None
        self.capabilities: frozenset[str] = frozenset()
        self.load_error: dict[str, str] | None = None
        self._config: dict[str, Any] | None = None
        self._probes: dict[str, Callable[..., Any]] = {}
        self._torch_threads_applied = False

    def send(self, message: Mapping[str, Any]) -> None:
        from rlaudit.findings import jsonable

        line = json.dumps(jsonable(dict(message)), ensure_ascii=False, allow_nan=False) + "\n"
        with self.write_lock:
            self.out.write(line.encode("utf-8"))

    # --- requests -------------------------------------------------------------------------------------

    def handle(self, request: Mapping[str, Any]) -> bool:
        """Serve one request; returns False when the worker should exit."""
        op = request.get("op")
        rid = request.get("id")
        if op == "ping":
            self.send({"id": rid, "ok": True, "pid": os.getpid()})
        elif op == "load":
            self.send({"id": rid, **self.load(request.get("spec") or {})})
        elif op == "probe":
            self.send({"id": rid, **self.run_probe(request, rid)})
        elif op == "shutdown":
            self.send({"id": rid, "ok": True})
            return False
        else:
            self.send({"id": rid, "ok": False, "error": _error("protocol", f"unknown request op {op!r}")})
        return True

    def load(self, spec_data: Mapping[str, Any]) -> dict[str, Any]:
        import platform

        from rlaudit import subjects

        info = {"pid": os.getpid(), "python": platform.python_version(), "executable": sys.executable}
        try:
            self.spec = subjects.SubjectSpec.from_dict(spec_data)
            self.subject = subjects.load_subject(self.spec)
            self.capabilities = frozenset(subjects.capabilities(self.subject))
        except BaseException as exc:  # the subject's import may raise anything, even SystemExit
            kind = "oom" if isinstance(exc, MemoryError) else "import"
            label = spec_data.get("label") or spec_data.get("text")
            self.load_error = _error(
                kind,
                f"subject {label!r} failed to load in {sys.executable}: {type(exc).__name__}: {exc}",
                traceback.format_exc(),
            )
            return {"ok": False, "error": self.load_error, **info}
        self._apply_torch_threads()
        return {"ok": True, "capabilities": sorted(self.capabilities), **info}

    def run_probe(self, request: Mapping[str, Any], rid: Any) -> dict[str, Any]:
        if self.load_error is not None:
            return {"ok": False, "error": self.load_error}
        if self.spec is None:
            return {"ok": False, "error": _error("protocol", "probe request before load")}
        name = str(request.get("probe", ""))
        try:
            fn = self._resolve(name, str(request.get("root") or ""))
        except BaseException as exc:
            return {
                "ok": False,
                "error": _error(
                    "import",
                    f"probe {name} could not be imported in {sys.executable}: {type(exc).__name__}: {exc}",
                    traceback.format_exc(),
                ),
            }
        from rlaudit.probe import probe_info

        info = probe_info(fn)
        missing = [cap for cap in info.requires if cap not in self.capabilities]
        if missing:
            return {"ok": False, "missing": missing}

        from rlaudit.probe import ProbeContext

        out = Path(str(request["out"]))
        out.mkdir(parents=True, exist_ok=True)
        params = dict(request.get("params") or {})
        last = [0.0]

        def heartbeat(i: int, n: int) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.5 or i >= n:  # throttled: a probe may call this every step
                last[0] = now
                with contextlib.suppress(OSError):
                    self.send({"id": rid, "progress": [i, n]})

        start = time.perf_counter()
        try:
            ctx = ProbeContext(
                subject=self.subject,
                config=self._config_copy(),
                out=out,
                spec=self.spec.text,
                capabilities=self.capabilities,
                params=params,
                _progress=heartbeat,
            )
            self._apply_torch_threads()
            returned = fn(ctx, **params)
            seconds = time.perf_counter() - start
            self._apply_torch_threads()
            from rlaudit.findings import jsonable
            from rlaudit.io import atomic_write_json

            result = jsonable({} if returned is None else returned)
            # result.json is written last: its presence marks a complete artifact set.
            atomic_write_json(
                out / "result.json",
                {
                    "probe": info.name,
                    "version": info.version,
                    "params": params,
                    "result": result,
                    "seconds": seconds,
                    "created": time.time(),
                    "spec": self.spec.text,
                    "pid": os.getpid(),
                    "python": sys.executable,
                },
            )
        except BaseException as exc:
            kind = "oom" if isinstance(exc, MemoryError) else "exception"
            hint = (
                " (the worker's address-space limit RLAUDIT_WORKER_MEMORY_MB was hit; raise it or shrink the probe)"
                if kind == "oom"
                else ""
            )
            return {
                "ok": False,
                "error": _error(
                    kind, f"{name} raised {type(exc).__name__}: {exc}{hint}", traceback.format_exc()
                ),
                "seconds": time.perf_counter() - start,
            }
        return {"ok": True, "result": result, "seconds": seconds}

    # --- helpers --------------------------------------------------------------------------------------

    def _resolve(self, name: str, root: str) -> Callable[..., Any]:
        if name in self._probes:
            return self._probes[name]
        import importlib

        module_name, _, qualname = name.partition(":")
        if not module_name or not qualname:
            raise ValueError(f"probe name {name!r} is not 'module:function'")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # The probe lives outside rlaudit (a user's or a test's module): make its root importable, after
            # the subject's own paths so the subject's modules keep precedence.
            missing = exc.name or ""
            if not root or not (module_name == missing or module_name.startswith(missing + ".")):
                raise
            if root not in sys.path:
                sys.path.append(root)
            module = importlib.import_module(module_name)
        obj: Any = module
        for part in qualname.split("."):
            obj = getattr(obj, part)
        self._probes[name] = obj
        return obj

    def _config_copy(self) -> dict[str, Any]:
        if self._config is None:
            fn = getattr(self.subject, "config", None)
            self._config = dict(fn()) if callable(fn) else {}
        # Each probe gets its own copy: one that mutates its config must not change the next probe's.
        return copy.deepcopy(self._config)

    def _apply_torch_threads(self) -> None:
        # torch is imported only if the subject or a probe imports it (it costs ~1.5 s); once it is, pin its
        # thread count so parallel workers do not oversubscribe the cores.
        threads = os.environ.get("RLAUDIT_TORCH_THREADS")
        torch = sys.modules.get("torch")
        if not threads or torch is None or self._torch_threads_applied:
            return
        with contextlib.suppress(Exception):
            torch.set_num_threads(int(threads))
            self._torch_threads_applied = True


def _error(kind: str, message: str, tb: str = "") -> dict[str, str]:
    return {"kind": kind, "message": message, "traceback": tb}


def _prepare_process() -> None:
    """Process-wide settings made before any subject code runs."""
    import faulthandler

    # A segfault or a hang (SIGUSR1 from the client before it kills a timed-out call) dumps every thread's
    # Python stack to stderr, which the client attaches to the error.
    faulthandler.enable(file=sys.stderr, all_threads=True)
    if hasattr(faulthandler, "register"):
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)

    threads = os.environ.get("RLAUDIT_TORCH_THREADS")
    if threads:
        # Read by OpenMP/MKL/OpenBLAS when torch or numpy load, so they must be set before either imports.
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[name] = threads

    memory_mb = os.environ.get("RLAUDIT_WORKER_MEMORY_MB")
    if memory_mb:
        import resource

        limit = int(float(memory_mb) * 2**20)
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _watch_parent(parent: int) -> None:
    """Die with the notebook: if it is killed (no atexit, no EOF while a probe runs), stop at once."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:  # re-parented: the process that started us is gone
            if os.getpgrp() == os.getpid():
                # We lead our own process group (the client starts us so): take the subject's children along.
                os.killpg(os.getpid(), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)


def serve(requests: int, responses: int, parent: int | None = None) -> int:
    """The worker main loop over the two protocol descriptors; returns the exit code.

    Args:
        requests: Descriptor to read JSON-line requests from.
        responses: Descriptor to write JSON-line responses to.
        parent: The notebook's pid; the worker kills itself when that process goes away.
    """
    # Fresh descriptors are non-inheritable, so processes the subject starts do not hold the protocol open.
    req_fd = os.dup(requests)
    resp_fd = os.dup(responses)
    os.close(requests)
    os.close(responses)
    # From here on fd 1 is stderr: prints of the subject (even os.write(1, ...)) land in the log.
    sys.stdout.flush()
    os.dup2(2, 1)
    _prepare_process()
    if parent:
        threading.Thread(
            target=_watch_parent, args=(parent,), name="rlaudit-parent-watch", daemon=True
        ).start()

    server = _Server(resp_fd)
    with os.fdopen(req_fd, "rb") as requests_in:
        for raw in requests_in:
            try:
                request = json.loads(raw)
            except json.JSONDecodeError:
                server.send(
                    {"id": None, "ok": False, "error": _error("protocol", f"unreadable request {raw!r}")}
                )
                continue
            try:
                keep_going = server.handle(request)
            except OSError:
                return 1  # the client went away mid-reply
            if not keep_going:
                break
    return 0  # EOF: the notebook closed the pipe (or exited); nothing is left to serve


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlaudit.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, required=True, help="fd to read JSON-line requests from")
    parser.add_argument("--responses", type=int, required=True, help="fd to write JSON-line responses to")
    parser.add_argument("--parent", type=int, default=0, help="pid of the notebook; exit when it is gone")
    args = parser.parse_args(list(argv) if argv is not None else None)
    return serve(args.requests, args.responses, args.parent or None)


# =========================================================================================================
# Client side (runs in the notebook)

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
        timeout: Default seconds a probe call may take (``call(..., timeout=)`` overrides it).
        load_timeout: Seconds the worker may take to start and import the subject.
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
        load_timeout: float = DEFAULT_LOAD_TIMEOUT,
        memory_mb: float | None = None,
        torch_threads: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        from rlaudit.subjects import SubjectSpec, parse_spec

        self.spec: SubjectSpec = spec if isinstance(spec, SubjectSpec) else parse_spec(str(spec))
        self.log_dir = Path(log_dir)
        self.timeout = float(timeout)
        self.load_timeout = float(load_timeout)
        if memory_mb is None and os.environ.get("RLAUDIT_WORKER_MEMORY_MB"):
            memory_mb = float(os.environ["RLAUDIT_WORKER_MEMORY_MB"])
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
        from rlaudit.paths import LIB_DIR

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
                "rlaudit.worker",
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
            response = self._request({"op": "load", "spec": self.spec.to_dict()}, self.load_timeout, None, 0)
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
    ) -> dict[str, Any]:
        """Run one probe in the worker (starting it if needed).

        Args:
            probe_name: ``"module:function"`` of a :func:`rlaudit.probe.probe`.
            params: The probe's keyword arguments (JSON-serializable).
            out_dir: Directory the probe writes its artifacts and ``result.json`` into.
            timeout: Seconds before the call is killed (default: the client's ``timeout``). Worker start-up
                and subject loading have their own ``load_timeout``.
            root: ``sys.path`` entry the worker adds if the probe's module is not importable otherwise.
            on_progress: Called with ``(i, n)`` for the probe's heartbeats.

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
                limit = self.timeout if timeout is None else float(timeout)
                response = self._request(request, limit, on_progress, since, what=probe_name)
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
    ) -> dict[str, Any]:
        self._next_id += 1
        rid = self._next_id
        what = what or request["op"]
        from rlaudit.findings import jsonable

        line = (json.dumps(jsonable({"id": rid, **request}), ensure_ascii=False) + "\n").encode("utf-8")
        deadline = time.monotonic() + timeout
        try:
            self._write(line, deadline)
            while True:
                message = self._read_message(deadline)
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
        except TimeoutError:
            self._dump_stacks()
            raise self._fail(
                "timeout",
                f"{what} on {self.spec.display!r} did not finish within {timeout:g} s; the worker (pid "
                f"{self._proc.pid if self._proc else '?'}) and its children were killed. Raise the timeout "
                "(profile probe_timeout, Workbench(timeout=...)) if the probe is just slow; the stderr tail "
                "shows where it was stuck",
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
        self.kill()
        return ProbeError(kind, message, "", self._tail(since))

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


if __name__ == "__main__":
    sys.exit(main())
