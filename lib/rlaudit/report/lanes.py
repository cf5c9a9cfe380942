"""Lanes: kernels shared by the notebooks of one report.

``rlaudit report -j N`` runs its notebooks on N lanes (:class:`Lanes`); each lane is one process
(:func:`lane_main`) holding one Jupyter kernel that runs notebook after notebook, its namespace reset in
between, so imports and the idle workers of the previous notebook carry over. The report talks to a lane
with JSON lines over the lane's stdin and stdout.

:attr:`rlaudit.options.RunOptions.report_kernels` (``RLAUDIT_REPORT_KERNELS``):
``shared`` (the default): ``rlaudit report -j N`` runs its notebooks on N lanes, each one papermill process
with one kernel that runs notebook after notebook; ``fresh``: one papermill process and kernel per notebook.

A fresh kernel per notebook costs its start and imports (pandas, matplotlib, scipy: ~1.5 s of CPU), and each
notebook's workbench then starts a worker per subject that imports torch and the subject again (~3 s of CPU
each for the built-ins): over fifteen notebooks, a quarter of a standard report's CPU. On a lane the kernel's
namespace is reset between notebooks (``get_ipython().reset()``, figures closed, the environment set to the
notebook's), so each starts from a clean slate as in a fresh kernel, while imported modules and the idle
workers of the previous notebook's workbench (:func:`rlaudit.engine.jobs.keep_workers`, only for the same
subject fingerprint) carry over. A lane whose kernel dies gets a new kernel for its next notebook.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlaudit.report.execution import KERNEL_STARTS, NO_IRI_CHECKER, NotebookRun, log_tail

_LANE_MAIN = NO_IRI_CHECKER + "from rlaudit.report.lanes import lane_main; sys.exit(lane_main())"

READY_SECONDS = 180
"""How long a started kernel may take to answer (a busy machine); a kernel that died is given up at once."""

# Run in a lane's kernel once, after it started: keep idle workers between the notebooks' workbenches.
_LANE_SETUP = "import rlaudit.engine.jobs as _w\n_w.keep_workers(4)\ndel _w\n"

# Run in a lane's kernel before every notebook but the first: a clean namespace, as a fresh kernel has. The
# collection lets the previous notebook's workbench hand its idle workers to the kept pool now.
_LANE_RESET = (
    "get_ipython().reset(new_session=True)\n"
    "import sys as _sys\n"
    "if 'matplotlib.pyplot' in _sys.modules:\n"
    "    _sys.modules['matplotlib.pyplot'].close('all')\n"
    "del _sys\n"
    "import gc as _gc\n"
    "_gc.collect()\n"
    "del _gc\n"
)


class _Lane:
    """The report's handle on one lane process (``lane_main``): JSON lines over its stdin and stdout."""

    def __init__(self, index: int, cwd: Path, env: Mapping[str, str], log: Path) -> None:
        self.index = index
        self.cwd = cwd
        self.env = dict(env)
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self.proc is not None and self.proc.poll() is None:
            return self.proc
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _LANE_MAIN],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,  # Ctrl-C reaches the report, which stops its lanes itself
            )
        return self.proc

    def run(self, run: NotebookRun, parameters: Mapping[str, Any], env: Mapping[str, str]) -> NotebookRun:
        run.output.parent.mkdir(parents=True, exist_ok=True)
        run.log.parent.mkdir(parents=True, exist_ok=True)
        run.log.write_text(f"# {run.name} on lane {self.index} (shared kernel; lane log {self.log})\n\n")
        request = {
            "source": str(run.source),
            "output": str(run.output),
            "log": str(run.log),
            "parameters": dict(parameters),
            # The kernel started with the lane's environment: what this notebook's differs by, and how to undo it.
            "env": {k: v for k, v in env.items() if self.env.get(k) != v},
            "unset": [k for k in self.env if k not in env],
        }
        request["restore"] = {k: self.env[k] for k in [*request["env"], *request["unset"]] if k in self.env}
        request["drop"] = [k for k in request["env"] if k not in self.env]
        started = time.perf_counter()
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
            line = proc.stdout.readline()
        except OSError:
            line = b""
        run.seconds = time.perf_counter() - started
        if not line:  # the lane process died: its log says why; the next notebook gets a new one
            code = proc.wait()
            with open(run.log, "a") as log:
                log.write(f"\nthe lane process exited with code {code} while running {run.name}:\n")
                log.write(log_tail(self.log, 40) + "\n")
            run.returncode, run.cpu_seconds = code or 1, 0.0
            return run
        reply = json.loads(line)
        run.returncode = int(reply.get("returncode", 1))
        run.cpu_seconds = float(reply.get("cpu_seconds", 0.0))
        return run

    def close(self, kill: bool = False) -> None:
        """Stop the lane (its kernel shuts down, and with it the workers); ``kill``: at once (interrupted)."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            if kill:
                raise OSError("interrupted")
            assert proc.stdin is not None
            proc.stdin.write(b'{"op": "stop"}\n')
            proc.stdin.flush()
            proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            # The kernel (a session of its own) notices its parent is gone and exits, its workers with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class Lanes:
    """The report's lanes: ``execute`` takes a free one (the summary gets whichever is free at the end).

    Args:
        size: Number of lanes (``-j``).
        cwd: Working directory of the lane processes (the notebooks' directory).
        env: Environment the lanes' kernels start with (each notebook's differences are applied and undone).
        log_dir: Where each lane writes ``lane-<i>.log``.
    """

    def __init__(self, size: int, cwd: Path, env: Mapping[str, str], log_dir: Path) -> None:
        import queue

        self._all = [_Lane(i, cwd, env, log_dir / f"lane-{i}.log") for i in range(max(1, size))]
        self._free: queue.SimpleQueue[_Lane] = queue.SimpleQueue()
        for lane in self._all:
            self._free.put(lane)

    def execute(self, run: NotebookRun, parameters: Mapping[str, Any], env: Mapping[str, str]) -> NotebookRun:
        lane = self._free.get()
        try:
            return lane.run(run, parameters, env)
        finally:
            self._free.put(lane)

    def close(self, kill: bool = False) -> None:
        for lane in self._all:
            lane.close(kill=kill)


def _tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and all its descendants, reaped ones included."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


class KernelDied(RuntimeError):
    """A lane's kernel was no longer alive while the lane waited for it to answer."""


class _LaneRunner:
    """Inside a lane process: one kernel (started on first use, replaced when it dies), notebooks in turn."""

    def __init__(self) -> None:
        self.km: Any = None
        self.ran = 0

    def _alive(self) -> bool:
        from jupyter_core.utils import run_sync

        return self.km is not None and bool(run_sync(self.km.is_alive)())

    def _kernel(self) -> Any:
        if self._alive():
            return self.km
        self._stop_kernel()
        from jupyter_client.manager import AsyncKernelManager
        from jupyter_core.utils import run_sync

        failures = []
        for _ in range(KERNEL_STARTS):
            # The asynchronous manager, as papermill's own client uses: with it nbclient notices a kernel that
            # died in the middle of a cell (with the synchronous one it waits forever).
            km = AsyncKernelManager(kernel_name="python3")
            run_sync(km.start_kernel)()  # this process's cwd and environment: the report's
            self.km, self.ran = km, 0
            try:
                self._run_code(_LANE_SETUP)
                return km
            except KernelDied as exc:  # e.g. a port taken by another kernel starting at once: new ports
                failures.append(str(exc))
                self._stop_kernel()
        raise RuntimeError(f"no kernel started in {KERNEL_STARTS} tries: {'; '.join(failures)}")

    def _wait_ready(self, kc: Any) -> None:
        """Wait for the kernel to answer, up to :data:`READY_SECONDS`; raise :class:`KernelDied` at once when it
        is no longer alive (waiting for a dead kernel would cost the whole timeout)."""
        deadline = time.monotonic() + READY_SECONDS
        while True:
            try:
                kc.wait_for_ready(timeout=5)
                return
            except RuntimeError:
                if not self._alive():
                    raise KernelDied("the kernel died as it started (its log is in the lane log)") from None
                if time.monotonic() > deadline:
                    raise

    def _run_code(self, code: str) -> None:
        kc = self.km.blocking_client()
        kc.start_channels()
        try:
            self._wait_ready(kc)
            reply = kc.execute_interactive(
                code, store_history=False, timeout=120, output_hook=lambda msg: None
            )
        finally:
            kc.stop_channels()
        if reply["content"].get("status") != "ok":
            content = reply["content"]
            raise RuntimeError(f"lane set-up code failed: {content.get('ename')}: {content.get('evalue')}")

    def _stop_kernel(self) -> None:
        if self.km is not None:
            from jupyter_core.utils import run_sync

            with contextlib.suppress(Exception):
                run_sync(self.km.shutdown_kernel)(now=not self._alive())
        self.km = None

    def run(self, request: Mapping[str, Any]) -> dict[str, Any]:
        import logging
        import traceback

        import papermill
        from papermill.exceptions import PapermillExecutionError

        cpu0 = _tree_cpu_seconds()
        handler = logging.FileHandler(request["log"], mode="a")
        handler.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"))
        logger = logging.getLogger("papermill")
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        code = 0
        try:
            km = self._kernel()
            if self.ran:
                self._run_code(_LANE_RESET)
            self._run_code(
                "import os as _os\n"
                f"_os.environ.update({dict(request.get('env') or {})!r})\n"
                f"for _k in {list(request.get('unset') or [])!r}:\n"
                "    _os.environ.pop(_k, None)\n"
                "del _os\n"
            )
            self.ran += 1
            papermill.execute_notebook(
                request["source"],
                request["output"],
                parameters=dict(request["parameters"]),
                kernel_name="python3",
                language="python",
                engine_name=_lane_engine(),
                progress_bar=False,
                log_output=True,
                start_timeout=180,
                km=km,
            )
        except PapermillExecutionError:
            code = 1  # the failing cell is in the output notebook, as with the papermill command
        except Exception:
            code = 1
            logger.error("the notebook could not run on this lane:\n%s", traceback.format_exc())
            self._stop_kernel()  # whatever went wrong, the next notebook gets a new kernel
        finally:
            # Undo this notebook's environment so the next one starts from the report's.
            if self._alive() and (request.get("env") or request.get("unset")):
                with contextlib.suppress(Exception):
                    self._run_code(
                        "import os as _os\n"
                        f"_os.environ.update({dict(request.get('restore') or {})!r})\n"
                        f"for _k in {list(request.get('drop') or [])!r}:\n"
                        "    _os.environ.pop(_k, None)\n"
                        "del _os\n"
                    )
            logger.removeHandler(handler)
            handler.close()
        return {"returncode": code, "cpu_seconds": _tree_cpu_seconds() - cpu0}

    def close(self) -> None:
        self._stop_kernel()


def _lane_engine() -> str:
    """Register (once) and name the papermill engine that runs a notebook on a given, running kernel."""
    from papermill.engines import papermill_engines

    name = "rlaudit-lane"
    if name in papermill_engines._engines:
        return name
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine
    from papermill.log import logger
    from papermill.utils import remove_args

    class LaneEngine(NBClientEngine):
        """papermill's nbclient engine on the lane's kernel: the kernel is left running, the client closed."""

        @classmethod
        def execute_managed_notebook(
            cls,
            nb_man: Any,
            kernel_name: str,
            log_output: bool = False,
            stdout_file: Any = None,
            stderr_file: Any = None,
            start_timeout: float = 60,
            execution_timeout: float | None = None,
            **kwargs: Any,
        ) -> Any:
            km = kwargs.pop("km")
            kwargs = remove_args(["input_path", "timeout", "startup_timeout"], **kwargs)
            client = PapermillNotebookClient(
                nb_man,
                km=km,
                timeout=execution_timeout,
                startup_timeout=start_timeout,
                kernel_name=kernel_name,
                log=logger,
                log_output=log_output,
                stdout_file=stdout_file,
                stderr_file=stderr_file,
                **kwargs,
            )
            try:
                return client.execute()
            finally:
                if client.kc is not None:
                    with contextlib.suppress(Exception):
                        client.kc.stop_channels()

    papermill_engines.register(name, LaneEngine)
    return name


def lane_main() -> int:
    """A lane process: read notebook requests (JSON lines) from stdin, run each on the lane's kernel, answer
    ``{"returncode", "cpu_seconds"}`` on stdout; ``{"op": "stop"}`` or end of input stops it."""
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed (papermill, the kernel's own output) goes to the lane's log
    parent = os.getppid()

    def watch_parent() -> None:
        # The report was killed (not interrupted, which stops its lanes): go too, whatever the notebook is
        # doing. The kernel notices its parent is gone and exits, and its workers with it.
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(70)

    threading.Thread(target=watch_parent, name="rlaudit-lane-parent", daemon=True).start()
    runner = _LaneRunner()
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            request = json.loads(line)
            if request.get("op") == "stop":
                break
            replies.write(json.dumps(runner.run(request)) + "\n")
            replies.flush()
    finally:
        runner.close()
    return 0
