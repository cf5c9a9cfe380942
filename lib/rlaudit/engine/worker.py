"""The per-subject worker process (``python -m rlaudit.engine.worker``), and the error every failed probe call becomes.

Baseline and candidate are often two versions of one package, or need two virtual environments, so each
subject's probes run in a process of its own, started with the subject's interpreter, cwd and environment.
The worker loads the subject once and serves many probe calls.

Protocol: JSON lines over two private pipes (requests in, responses out), never stdout. At startup the worker
moves the pipes to fresh non-inheritable descriptors and points fd 1 at stderr, so nothing the subject prints
can corrupt the protocol; stderr goes to a log file whose tail is attached to errors. Requests::

    {"id": 1, "op": "load", "spec": {...}}      -> {"id": 1, "ok": true, "capabilities": [...], "pid": ...,
                                                    "reads": [files opened while loading, see _recording_reads]}
    {"id": 2, "op": "probe", "probe": "m:f", "root": "/x", "params": {...}, "out": "/dir"}
                                                -> {"id": 2, "ok": true, "result": {...}, "seconds": 1.2}
                                                   (progress lines {"id": 2, "progress": [i, n]} and
                                                    heartbeats {"id": 2, "beat": {...}} may come first;
                                                    "reads": files make_env opened, the first time only)
    {"id": 3, "op": "ping"}                     -> {"id": 3, "ok": true, "pid": ...}
    {"id": 4, "op": "shutdown"}                 -> {"id": 4, "ok": true}, then the worker exits

The client (:class:`rlaudit.engine.client.WorkerClient`, in the notebook) puts limits on every call
(:mod:`rlaudit.engine.limits`: no progress for the stall limit, or too much CPU time). A hang is killed (the
worker's whole process group) and reported as ``timeout``; a crash as ``crash`` with the
exit code or signal; a MemoryError under the optional address-space limit (``RLAUDIT_WORKER_MEMORY_MB``) as
``oom``, and so is a SIGKILL that rlaudit did not send (most likely the kernel's OOM killer). After any failure
but an import error the next call starts a new worker.

Only the standard library is imported at module level: this file runs in subjects' own interpreters.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

ERROR_KINDS = ("exception", "crash", "timeout", "oom", "import", "protocol")


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
        # Files the subject's make_env opened (its environment's inputs), and those already reported.
        self._env_reads: set[str] = set()
        self._env_reads_sent: set[str] = set()
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
            # Importing the subject beats per module imported, so a slow import on a busy machine finishes.
            with _BeatSender(self, rid):
                reply = self.load(request.get("spec") or {})
            self.send({"id": rid, **reply})
        elif op == "probe":
            # Beats from the request on: importing the probe's module is progress too. Stopped before the
            # reply, so no beat of this call follows it on the pipe.
            with _BeatSender(self, rid):
                reply = self.run_probe(request, rid)
            self.send({"id": rid, **reply})
        elif op == "shutdown":
            self.send({"id": rid, "ok": True})
            return False
        else:
            self.send({"id": rid, "ok": False, "error": _error("protocol", f"unknown request op {op!r}")})
        return True

    def load(self, spec_data: Mapping[str, Any]) -> dict[str, Any]:
        import platform

        from rlaudit.engine import subjects

        info = {"pid": os.getpid(), "python": platform.python_version(), "executable": sys.executable}
        try:
            # The files opened while loading and resolving the config are part of the subject's fingerprint
            # (a gitignored local.yaml that config() reads): the client records them with the cache entry.
            with _recording_reads() as reads:
                self.spec = subjects.SubjectSpec.from_dict(spec_data)
                self.subject = subjects.load_subject(self.spec)
                self.capabilities = frozenset(subjects.capabilities(self.subject))
                with contextlib.suppress(Exception):  # a failing config() fails the probes that ask for it
                    self._config_copy()
            info["reads"] = reads.files()
            _record_make_env(self.subject, self._env_reads)
        except BaseException as exc:  # the subject's import may raise anything, even SystemExit
            from rlaudit.engine.validate import memory_cap_hint

            # A cap too low for torch to load shows as "libtorch_cpu.so: failed to map segment": name the cap.
            hint = memory_cap_hint(f"{type(exc).__name__}: {exc}", always=isinstance(exc, MemoryError))
            kind = "oom" if isinstance(exc, MemoryError) or hint else "import"
            label = spec_data.get("label") or spec_data.get("text")
            self.load_error = _error(
                kind,
                f"subject {label!r} failed to load in {sys.executable}: {type(exc).__name__}: {exc}{hint}",
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

        from rlaudit.engine import heartbeat as beats

        def heartbeat(i: int, n: int) -> None:
            beats.report()
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
            from rlaudit.engine.io import atomic_write_json
            from rlaudit.findings import jsonable

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
            from rlaudit.engine.validate import memory_cap_hint

            # torch's allocator raises RuntimeError, not MemoryError: under a cap, either is the cap's doing.
            hint = memory_cap_hint(f"{type(exc).__name__}: {exc}", always=isinstance(exc, MemoryError))
            kind = "oom" if isinstance(exc, MemoryError) or hint else "exception"
            return {
                "ok": False,
                "error": _error(
                    kind, f"{name} raised {type(exc).__name__}: {exc}{hint}", traceback.format_exc()
                ),
                "seconds": time.perf_counter() - start,
            }
        reply: dict[str, Any] = {"ok": True, "result": result, "seconds": seconds}
        new_reads = self._env_reads - self._env_reads_sent
        if new_reads:
            # Reported once: the client records them with the subject's fingerprint, as it does the load's.
            reply["reads"] = sorted(new_reads)
            self._env_reads_sent |= new_reads
        return reply

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


class _Reads:
    """Files opened for reading while recording (see :func:`_recording_reads`)."""

    def __init__(self) -> None:
        self.read: set[str] = set()
        self.written: set[str] = set()

    def files(self) -> list[str]:
        """The files read, less what the process wrote itself and what is not the subject's: the
        interpreter's and installed packages' files, rlaudit's own, the artifact cache, the kernel's virtual
        files and regenerable user caches."""
        roots = _not_the_subjects()
        kept = []
        for path in sorted(self.read - self.written):
            real = os.path.realpath(path)
            if path.endswith(".pyc") or "/__pycache__/" in path:
                continue
            if any(p.startswith(roots) for p in (path + os.sep, real + os.sep)):
                continue
            kept.append(path)
        return kept


def _not_the_subjects() -> tuple[str, ...]:
    """Directories whose files are never the subject's inputs (each ending in a separator)."""
    global _SKIP_ROOTS
    if _SKIP_ROOTS is None:
        import site
        import sysconfig

        skip = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, "/proc", "/sys", "/dev"}
        skip.update(p for p in sysconfig.get_paths().values() if p)
        with contextlib.suppress(Exception):
            skip.update(site.getsitepackages())
            skip.add(site.getusersitepackages())
        skip.add(str(Path(__file__).resolve().parent))  # rlaudit (a scheme's own code is hashed by name)
        skip.add(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"))
        cache = os.environ.get("RLAUDIT_CACHE")
        if cache:
            skip.add(os.path.realpath(cache))
        skip.update([os.path.realpath(root) for root in skip if root])
        _SKIP_ROOTS = tuple(root.rstrip(os.sep) + os.sep for root in skip if root and root != os.sep)
    return _SKIP_ROOTS


_SKIP_ROOTS: tuple[str, ...] | None = None
_READS: _Reads | None = None  # the recording in progress, if any
_HOOKED = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Runs on every audited operation of the process: cheap, and never raises (that would fail the open).
    if event != "open" or _READS is None:
        return
    try:
        path, mode, flags = args
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return  # a file descriptor
        path = os.path.abspath(path)
        writing = (mode is not None and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        )
        (_READS.written if writing else _READS.read).add(path)
    except Exception:
        return


@contextlib.contextmanager
def _recording_reads() -> Iterator[_Reads]:
    """Record the files this process opens inside the block (``sys.addaudithook`` on ``open``).

    The hook stays installed for the life of the process (audit hooks cannot be removed) and does nothing
    outside a recording.
    """
    global _READS, _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    reads = _Reads()
    _READS = reads
    try:
        yield reads
    finally:
        _READS = None


def _record_make_env(subject: Any, sink: set[str]) -> None:
    """Make the subject's ``make_env`` record the files it opens into ``sink``.

    Building the environment reads the subject's inputs too (a level file, a map): they belong in its
    fingerprint like its config files. The attribute is replaced on the subject object itself, so the
    subject's own calls (its ``train`` building envs) are recorded as the probes' are, and the object keeps
    its type. A subject whose attribute cannot be replaced is left as it is.
    """
    import functools

    fn = getattr(subject, "make_env", None)
    if not callable(fn) or getattr(fn, "_rlaudit_records_reads", False):
        return

    @functools.wraps(fn)
    def make_env(*args: Any, **kwargs: Any) -> Any:
        if _READS is not None:  # already recording (make_env called while loading): that recording has it
            return fn(*args, **kwargs)
        with _recording_reads() as reads:
            env = fn(*args, **kwargs)
        sink.update(reads.files())
        return env

    make_env._rlaudit_records_reads = True  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        subject.make_env = make_env


class _BeatSender:
    """While a probe runs: send ``{"id": rid, "beat": counters}`` about once a second when the progress counters
    (:data:`rlaudit.engine.heartbeat.PROGRESS`) changed, so the client can tell a slow probe from a stuck one."""

    PERIOD = 1.0  # seconds between looks at the counters

    def __init__(self, server: _Server, rid: Any) -> None:
        from rlaudit.engine.heartbeat import PROGRESS

        self._server = server
        self._rid = rid
        self._progress = PROGRESS
        self._last = PROGRESS.beats
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rlaudit-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(self.PERIOD):
            beats = self._progress.beats
            if beats != self._last:
                self._last = beats
                with contextlib.suppress(OSError, ValueError):
                    self._server.send({"id": self._rid, "beat": self._progress.as_dict()})

    def __enter__(self) -> _BeatSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


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

    from rlaudit.engine.validate import env_number, memory_cap

    threads = env_number("RLAUDIT_TORCH_THREADS")  # a bad value names its variable
    # An import is progress too (torch alone takes seconds before a probe's first step): counted for the
    # stall limit, so a probe that is still loading libraries on a busy machine is not taken for a hung one.
    from rlaudit.engine import heartbeat

    sys.addaudithook(heartbeat.audit_hook)

    threads = os.environ.get("RLAUDIT_TORCH_THREADS")
    if threads:
        # Read by OpenMP/MKL/OpenBLAS when torch or numpy load, so they must be set before either imports.
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[name] = str(int(threads))

    memory_mb = memory_cap()  # a bad value names RLAUDIT_WORKER_MEMORY_MB
    if memory_mb:
        import resource

        limit = int(memory_mb * 2**20)
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
    parser = argparse.ArgumentParser(
        prog="python -m rlaudit.engine.worker", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--requests", type=int, required=True, help="fd to read JSON-line requests from")
    parser.add_argument("--responses", type=int, required=True, help="fd to write JSON-line responses to")
    parser.add_argument("--parent", type=int, default=0, help="pid of the notebook; exit when it is gone")
    args = parser.parse_args(list(argv) if argv is not None else None)
    return serve(args.requests, args.responses, args.parent or None)


if __name__ == "__main__":
    sys.exit(main())
