"""Run many jobs with a progress bar: local threads (default), local processes, or a Ray cluster.

The heavy work of a probe happens in worker *processes*, so the local default dispatches with threads: each
thread just waits on a worker's pipe. Pure-Python CPU jobs (bootstrap resamples, say) can use
``backend="processes"``; users with a cluster use ``backend="ray"`` (:class:`~rlaudit.engine.ray_backend.RayBackend`:
one Ray task per job, results back as artifacts in the shared cache; see ``docs/RAY.md``). A backend is one
small class (:class:`~rlaudit.engine.backends.Backend`); registering it in :data:`BACKENDS` makes
``Executor(backend=name)`` and ``rlaudit report --executor name`` use it.

``map`` never aborts a batch: a job that raises, or whose remote worker or node dies, yields a
:class:`JobError` in its slot of the results.
"""

from __future__ import annotations

import concurrent.futures as cf
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from rlaudit.engine.backends import Backend, JobError, ProcessBackend, ThreadBackend, _Failure
from rlaudit.engine.ray_backend import RayBackend

BACKENDS: dict[str, type[Backend]] = {
    "local": ThreadBackend,
    "threads": ThreadBackend,
    "processes": ProcessBackend,
    "ray": RayBackend,
}
"""Backend name -> class."""


def make_backend(name: str, jobs: int, **options: Any) -> Backend:
    """Instantiate the backend called ``name``.

    Raises:
        ValueError: Unknown name; for ``"ray"``, a :class:`RaySetupError` (ray missing, no cluster).
    """
    cls = BACKENDS.get(name)
    if cls is not None:
        return cls(jobs, **options)
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
    from rlaudit.engine.validate import env_flag

    setting = env_flag("RLAUDIT_PROGRESS")  # a value other than 0/1 names the variable
    if setting is not None:
        return setting
    return _in_jupyter() or bool(getattr(sys.stderr, "isatty", lambda: False)())


class Executor:
    """Map a function over items on a backend, in order, with one progress bar.

    Args:
        jobs: Jobs that run at once (>= 1).
        backend: ``"local"`` (threads; the default), ``"processes"``, ``"ray"`` (:class:`RayBackend`), or a
            name registered in :data:`BACKENDS`.
        desc: Default progress-bar label.
        options: Passed to the backend (e.g. ``address=`` for a Ray cluster).

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
