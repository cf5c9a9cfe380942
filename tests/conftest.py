"""Shared pytest fixtures.

- ``tmp_cache``: points ``RLAUDIT_CACHE`` at a fresh temporary directory and returns it.
- ``wait_dead``: ``wait_dead(pid, seconds=10) -> bool``, True once the process is gone (or a zombie).
- ``toy_subject`` / ``broken_subject``: copies of the toy subject files in a temporary directory (outside
  any git checkout, so their fingerprints depend on nothing but themselves).

Under pytest-xdist the tests are handed to workers in the groups of ``support.groups``.

``tests/fixtures`` is put on ``sys.path`` so tests can ``import toy_probes``, and ``tests/`` so that the
helpers the test modules share are importable as ``support`` (never copied into a test module).
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
for _path in (FIXTURES, TESTS):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest group, the whole reports, goes first (pytest-xdist hands out groups in this order)."""
    from support.groups import first_in_line

    items.sort(key=lambda item: not first_in_line(item.nodeid))  # stable: the rest keep their order


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
