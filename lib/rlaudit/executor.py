"""Run many jobs with a progress bar: local threads (default), local processes, or (later) a Ray cluster.

The heavy work of a probe happens in worker *processes*, so the local default dispatches with threads: each
thread just waits on a worker's pipe. Pure-Python CPU jobs (bootstrap resamples, say) can use
``backend="processes"``. A backend is one small class (:class:`Backend`); registering it in
:data:`BACKENDS` makes ``Executor(backend=name)`` and ``rlaudit report --executor name`` use it.

``map`` never aborts a batch: a job that raises yields a :class:`JobError` in its slot of the results.
"""

from __future__ import annotations

import abc
import concurrent.futures as cf
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import Any, ClassVar


class JobError(Exception):
    """A job that raised: stands in its slot of :meth:`Executor.map`'s results.

    Attributes:
        index: The job's position in the input.
        item: The input item.
        error: The exception it raised.
        traceback: The formatted traceback (from the process that ran it).
    """

    def __init__(self, index: int, item: Any, error: BaseException, tb: str = "") -> None:
        super().__init__(f"job {index} ({_short(item)}) failed: {type(error).__name__}: {error}")
        self.index = index
        self.item = item
        self.error = error
        self.traceback = tb

    def __reduce__(self) -> tuple[Any, ...]:
        return (JobError, (self.index, self.item, self.error, self.traceback))


def _short(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 60 else text[:57] + "..."


class _Failure:
    """A job's exception, made picklable (a process backend sends it back to the parent)."""

    def __init__(self, error: BaseException, tb: str) -> None:
        self.tb = tb
        try:
            import pickle

            pickle.dumps(error)
            self.error: BaseException = error
        except Exception:
            self.error = RuntimeError(f"{type(error).__name__}: {error}")


def _run_captured(fn: Callable[[Any], Any], item: Any) -> Any:
    try:
        return fn(item)
    except Exception as exc:
        return _Failure(exc, traceback.format_exc())


class Backend(abc.ABC):
    """Where jobs run. Subclasses implement :meth:`submit` (returning a ``concurrent.futures.Future``).

    A Ray backend, for instance, would start ``ray.init(address=...)`` in ``__init__``, wrap
    ``ray.remote(fn).remote(item)`` refs with ``ref.future()`` in ``submit``, and register itself as
    ``BACKENDS["ray"]``.

    Args:
        jobs: How many jobs may run at once.
        options: Backend-specific settings (e.g. a cluster address).
    """

    name: ClassVar[str] = ""
    shares_memory: ClassVar[bool] = False
    """True when jobs run inside this process (threads). The workbench then lends jobs its pooled worker
    processes; otherwise it ships self-contained, picklable jobs (:func:`rlaudit.workbench.run_probe_job`)
    that start their own worker wherever they run (the cache directory must be shared)."""

    def __init__(self, jobs: int, **options: Any) -> None:
        self.jobs = jobs
        self.options = options

    @abc.abstractmethod
    def submit(self, fn: Callable[[Any], Any], item: Any) -> cf.Future[Any]:
        """Start ``fn(item)``; the future's result is the return value (exceptions are captured before)."""

    def shutdown(self, wait: bool = True) -> None:  # noqa: B027 (optional hook: most backends need it)
        """Release the backend's resources (threads, processes, cluster connections)."""


class ThreadBackend(Backend):
    """Jobs on a local thread pool: right when each job mostly waits on a subprocess (a probe worker)."""

    name = "local"
    shares_memory = True

    def __init__(self, jobs: int, **options: Any) -> None:
        super().__init__(jobs, **options)
        self._pool = cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="rlaudit-job")

    def submit(self, fn: Callable[[Any], Any], item: Any) -> cf.Future[Any]:
        return self._pool.submit(_run_captured, fn, item)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)


class ProcessBackend(Backend):
    """Jobs on a local process pool, for pure-Python CPU work (``fn`` and items must pickle by reference).

    Processes are spawned, not forked: the notebook runs threads (dispatch, progress), and forking a
    threaded process can copy a lock in its held state. ``start_method=`` overrides.
    """

    name = "processes"

    def __init__(self, jobs: int, **options: Any) -> None:
        import multiprocessing

        super().__init__(jobs, **options)
        context = multiprocessing.get_context(options.get("start_method", "spawn"))
        self._pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=context)

    def submit(self, fn: Callable[[Any], Any], item: Any) -> cf.Future[Any]:
        return self._pool.submit(_run_captured, fn, item)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=True)


BACKENDS: dict[str, type[Backend]] = {
    "local": ThreadBackend,
    "threads": ThreadBackend,
    "processes": ProcessBackend,
}
"""Backend name -> class. ``"ray"`` joins here when its class is written."""


def make_backend(name: str, jobs: int, **options: Any) -> Backend:
    """Instantiate the backend called ``name``.

    Raises:
        ValueError: Unknown name (the Ray case says how it is selected and what it needs).
    """
    cls = BACKENDS.get(name)
    if cls is not None:
        return cls(jobs, **options)
    if name == "ray":
        raise ValueError(
            "executor backend 'ray' (chosen with `--executor ray` or Executor(backend='ray')) is not part of "
            "this rlaudit version: no Backend class is registered for it in rlaudit.executor.BACKENDS. Run "
            "with `--executor local` (the default); a Ray backend will also need `pip install 'ray[default]'` "
            "and a cluster address (--ray-address)"
        )
    raise ValueError(f"unknown executor backend {name!r}; expected one of {', '.join(sorted(BACKENDS))}")


def _in_jupyter() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()  # type: ignore[attr-defined]
    except Exception:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress_enabled() -> bool:
    """Show progress bars? ``RLAUDIT_PROGRESS=0/1`` decides; else only in Jupyter or on a terminal."""
    setting = os.environ.get("RLAUDIT_PROGRESS", "").strip().lower()
    if setting in ("0", "false", "no", "off"):
        return False
    if setting in ("1", "true", "yes", "on"):
        return True
    return _in_jupyter() or bool(getattr(sys.stderr, "isatty", lambda: False)())


class Executor:
    """Map a function over items on a backend, in order, with one progress bar.

    Args:
        jobs: Jobs that run at once (>= 1).
        backend: ``"local"`` (threads; the default), ``"processes"``, or a name registered in
            :data:`BACKENDS`.
        desc: Default progress-bar label.
        options: Passed to the backend (e.g. ``address=`` for a cluster).

    Example::

        with Executor(jobs=2) as ex:
            results = ex.map(train_one, seeds, desc="training")
        failed = [r for r in results if isinstance(r, JobError)]
    """

    def __init__(self, jobs: int = 2, backend: str = "local", desc: str = "", **options: Any) -> None:
        if int(jobs) < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        self.jobs = int(jobs)
        self.backend_name = backend
        self.desc = desc
        self._backend = make_backend(backend, self.jobs, **options)

    def __repr__(self) -> str:
        return f"Executor(jobs={self.jobs}, backend={self.backend_name!r})"

    @property
    def shares_memory(self) -> bool:
        """True when jobs run as threads of this process (see :attr:`Backend.shares_memory`)."""
        return self._backend.shares_memory

    def map(
        self,
        fn: Callable[[Any], Any],
        items: Iterable[Any],
        desc: str | None = None,
        *,
        progress: bool | None = None,
    ) -> list[Any]:
        """``[fn(item) for item in items]``, run in parallel; a job that raises yields a :class:`JobError`.

        Args:
            fn: The job (for the process backend: a picklable module-level function).
            items: Inputs, one job each.
            desc: Progress-bar label (default: the executor's ``desc``).
            progress: Force the bar on or off (default: :func:`progress_enabled`).

        Returns:
            Results in the order of ``items``.

        Raises:
            KeyboardInterrupt: Re-raised after cancelling the jobs that had not started.
        """
        items = list(items)
        results: list[Any] = [None] * len(items)
        if not items:
            return results
        show = progress_enabled() if progress is None else progress
        bar = None
        if show:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(items), desc=desc if desc is not None else self.desc, leave=True)
        futures = {self._backend.submit(fn, item): i for i, item in enumerate(items)}
        try:
            for future in cf.as_completed(futures):
                i = futures[future]
                try:
                    value = future.result()
                except Exception as exc:  # the backend itself failed (e.g. a pool process died)
                    value = _Failure(exc, traceback.format_exc())
                if isinstance(value, _Failure):
                    value = JobError(i, items[i], value.error, value.tb)
                results[i] = value
                if bar is not None:
                    bar.update(1)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        finally:
            if bar is not None:
                bar.close()
        return results

    def shutdown(self, wait: bool = True) -> None:
        self._backend.shutdown(wait=wait)

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
