"""Shared pytest fixtures.

- ``tmp_cache``: points ``RLAUDIT_CACHE`` at a fresh temporary directory and returns it.
- ``wait_dead``: ``wait_dead(pid, seconds=10) -> bool``, True once the process is gone (or a zombie).
- ``toy_subject`` / ``broken_subject``: copies of the toy subject files in a temporary directory (outside
  any git checkout, so their fingerprints depend on nothing but themselves).

Under pytest-xdist the tests are handed to workers in the groups of ``support.groups``.

A test marked ``gpu`` is skipped where torch sees no CUDA device (the reason names what is missing).

A test that starts worker processes (through a fixture such as ``make_wb``, a helper, or in its body) is marked
``workbench`` at collection, and an unmarked test that starts one fails (``support.workers``):
``make test-fast`` runs the others.

``tests/fixtures`` is put on ``sys.path`` so tests can ``import toy_probes``, and ``tests/`` so that the
helpers the test modules share are importable as ``support`` (never copied into a test module).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
for _path in (FIXTURES, TESTS):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that start workers ``workbench`` (:mod:`support.workers`), then put the longest groups,
    the files of whole reports, first (pytest-xdist hands out groups in this order).

    Marks are applied before ``-m`` deselects: pytest's own deselection hook runs after conftest hooks.
    """
    from support.groups import first_in_line
    from support.workers import mark_items

    # notebooks under nbval start a kernel and the workers it asks for
    nbval = [item for item in items if type(item).__module__.startswith("nbval")]
    for item in nbval:
        item.add_marker(pytest.mark.workbench)
    mark_items(
        (item for item in items if item not in nbval), lambda item: item.add_marker(pytest.mark.workbench)
    )
    _skip_gpu_tests_without_cuda(items)
    items.sort(key=lambda item: not first_in_line(item.nodeid))  # stable: the rest keep their order


def _skip_gpu_tests_without_cuda(items: list[pytest.Item]) -> None:
    """Skip the tests marked ``gpu`` where torch sees no CUDA device, saying why (torch is imported only when
    such a test was collected)."""
    gpu = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu:
        return
    import torch

    if torch.cuda.is_available():
        return
    why = "this torch build has no CUDA" if torch.version.cuda is None else "torch sees no CUDA device"
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {why} (torch {torch.__version__})")
    for item in gpu:
        item.add_marker(skip)


def _guarded(item: pytest.Item) -> bool:
    return item.get_closest_marker("workbench") is None and item.get_closest_marker("expensive") is None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """An unmarked test's fixtures must not start workers either (see :func:`pytest_runtest_call`)."""
    return (yield from _watched(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail a test that started a worker, kernel, report or Ray without the ``workbench`` mark: the static
    reading of :mod:`support.workers` missed it, and ``make test-fast`` would run it."""
    return (yield from _watched(item))


def _watched(item: pytest.Item) -> Iterator[None]:
    from support.workers import GUARD, explain

    if not _guarded(item):
        return (yield)
    GUARD.watch()
    try:
        result = yield
    finally:
        launched = GUARD.stop()
    if launched:
        pytest.fail(explain(item.nodeid, launched), pytrace=False)
    return result


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """With ``--dist loadscope`` (``make test``), hand out whole groups (:func:`xdist_group_of`).

    Any other ``--dist`` keeps pytest-xdist's own scheduler (``-n 2 --dist load`` spreads one file's tests).
    """
    if config.getvalue("dist") != "loadscope":
        return None
    from support.groups import GroupScheduling

    return GroupScheduling(config, log)


@pytest.fixture
def tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private artifact cache for one test (``RLAUDIT_CACHE``)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("RLAUDIT_CACHE", str(cache))
    return cache


def _copy_subject(tmp_path: Path, fixture: str, name: str) -> Path:
    directory = tmp_path / name
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "subject.py"
    shutil.copyfile(FIXTURES / fixture, target)
    return target


@pytest.fixture
def toy_subject(tmp_path: Path) -> Path:
    """Path of a fresh copy of ``fixtures/toy_subject.py`` (as ``<tmp>/toy/subject.py``)."""
    return _copy_subject(tmp_path, "toy_subject.py", "toy")


@pytest.fixture
def broken_subject(tmp_path: Path) -> Path:
    """Path of a fresh copy of ``fixtures/broken_subject.py``, which fails to import."""
    return _copy_subject(tmp_path, "broken_subject.py", "broken")


def _dead(pid: int) -> bool:
    """True when ``pid`` is gone or a zombie (a container's init may not reap orphans at once)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@pytest.fixture
def wait_dead() -> Callable[..., bool]:
    """``wait_dead(pid, seconds=10.0)``: poll until the process has exited; False if it is still running."""

    def wait(pid: int, seconds: float = 10.0) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if _dead(pid):
                return True
            time.sleep(0.05)
        return _dead(pid)

    return wait
