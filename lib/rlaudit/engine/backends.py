"""Where jobs run: the :class:`Backend` contract (submit a job, get a future), local threads and local
processes, and :class:`JobError`, what a job that raised leaves in its slot of the results. The Ray backend is
:mod:`rlaudit.engine.ray_backend`; :mod:`rlaudit.engine.executor` picks one by name."""

from __future__ import annotations

import abc
import concurrent.futures as cf
import traceback
from collections.abc import Callable
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

    :class:`RayBackend`, for instance, connects with ``ray.init(address=...)`` in ``__init__``, turns each
    ``submit`` into a Ray task whose ``ref.future()`` settles the returned future, and is registered as
    ``BACKENDS["ray"]``.

    Args:
        jobs: How many jobs may run at once.
        options: Backend-specific settings (e.g. a cluster address).
    """

    name: ClassVar[str] = ""
    shares_memory: ClassVar[bool] = False
    """True when jobs run inside this process (threads). The workbench then lends jobs its pooled worker
    processes; otherwise it ships self-contained, picklable jobs (:func:`rlaudit.engine.jobs.run_probe_job`)
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
