"""The executor: ordered results, per-item failures captured, backends pluggable."""

from __future__ import annotations

import concurrent.futures as cf
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from rlaudit.engine import backends
from rlaudit.engine import executor as ex
from rlaudit.engine.backends import Backend, JobError
from rlaudit.engine.executor import Executor
from rlaudit.engine.ray_backend import RayBackend


def _slow_identity(x: float) -> float:
    time.sleep(x)
    return x


def test_results_keep_input_order_when_jobs_finish_out_of_order() -> None:
    delays = [0.3, 0.0, 0.2, 0.0, 0.1]
    finished: list[float] = []

    def job(x: float) -> float:
        value = _slow_identity(x)
        finished.append(x)
        return value

    with Executor(jobs=2) as executor:
        assert executor.map(job, delays, progress=False) == delays
    assert finished != delays  # they really did finish in another order


def test_exceptions_are_captured_per_item() -> None:
    with Executor(jobs=2) as executor:
        results = executor.map(lambda x: 10 // x, [5, 0, 2], progress=False)
    assert results[0] == 2 and results[2] == 5
    failure = results[1]
    assert isinstance(failure, JobError)
    assert (failure.index, failure.item) == (1, 0)
    assert isinstance(failure.error, ZeroDivisionError)
    assert "ZeroDivisionError" in failure.traceback and "10 // x" in failure.traceback


def test_process_backend_runs_pure_python_jobs() -> None:
    with Executor(jobs=2, backend="processes") as executor:
        results = executor.map(int, ["1", "x", "3"], progress=False)
    assert results[0] == 1 and results[2] == 3
    assert isinstance(results[1], JobError) and isinstance(results[1].error, ValueError)
    assert "invalid literal" in results[1].traceback


def test_ray_backend_without_ray_installed_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if ray were not installed
    assert ex.BACKENDS["ray"] is RayBackend
    with pytest.raises(ValueError, match=r"'ray'.*--executor ray.*pip install"):
        Executor(jobs=2, backend="ray")


def test_unknown_backend_and_bad_jobs() -> None:
    with pytest.raises(ValueError, match="unknown executor backend 'dask'; expected one of"):
        Executor(backend="dask")
    with pytest.raises(ValueError, match="at least 1"):
        Executor(jobs=0)


def test_a_backend_is_one_class(monkeypatch: pytest.MonkeyPatch) -> None:
    class InlineBackend(Backend):
        """Runs each job at submission: the smallest possible backend."""

        name = "inline"

        def submit(self, fn: Callable[[Any], Any], item: Any) -> cf.Future[Any]:
            future: cf.Future[Any] = cf.Future()
            future.set_result(backends._run_captured(fn, item))
            return future

    monkeypatch.setitem(ex.BACKENDS, "inline", InlineBackend)
    results = Executor(jobs=1, backend="inline").map(lambda x: 1 / x, [1, 0], progress=False)
    assert results[0] == 1.0 and isinstance(results[1], JobError)


def test_progress_bar_follows_the_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RLAUDIT_PROGRESS", "1")
    Executor(jobs=1).map(lambda x: x, [1, 2, 3], desc="toy jobs")
    assert "toy jobs" in capsys.readouterr().err
    monkeypatch.setenv("RLAUDIT_PROGRESS", "0")
    Executor(jobs=1).map(lambda x: x, [1, 2, 3], desc="quiet jobs")
    assert "quiet jobs" not in capsys.readouterr().err
    monkeypatch.delenv("RLAUDIT_PROGRESS")
    assert ex.progress_enabled() is False  # pytest's stderr is not a terminal, and this is not Jupyter


def test_empty_input() -> None:
    assert Executor(jobs=2).map(lambda x: x, []) == []
