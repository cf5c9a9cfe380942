"""Fixtures of the rooms' tests (``tests/rooms/``): one artifact cache for the whole session, so the reference's
probes and training runs are computed once and shared by every fault's detection test (as notebooks share
them), ``make_wb`` for a workbench per test, and ``flagged``/``describe`` to read sections.

A room whose test files share workbenches imports the package-scoped ``bench`` fixture in its own
``conftest.py`` (``support.benches``), so they are built once per room folder."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

import pytest

from rlaudit.findings import Finding


@pytest.fixture(scope="session")
def audit_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # `make test` points RLAUDIT_TEST_CACHE at one cache for the notebooks and these tests, so the reference's
    # artifacts are computed once; fingerprints keep it correct across runs. Otherwise: a fresh one.
    shared = os.environ.get("RLAUDIT_TEST_CACHE")
    path = shared or str(tmp_path_factory.mktemp("rlaudit-cache"))
    mp = pytest.MonkeyPatch()
    mp.setenv("RLAUDIT_CACHE", str(path))
    mp.setenv("RLAUDIT_PROFILE", "smoke")
    yield str(path)
    mp.undo()


@pytest.fixture
def make_wb(audit_cache: str) -> Iterator[Callable[..., object]]:
    """``make_wb(candidate, baseline="builtin:reference")`` -> a smoke-profile Workbench, closed after the test."""
    from rlaudit.engine.workbench import Workbench

    opened: list[Workbench] = []

    def make(candidate: str, baseline: str = "builtin:reference", profile: str = "smoke") -> Workbench:
        wb = Workbench(baseline, candidate, profile=profile)
        opened.append(wb)
        return wb

    yield make
    for wb in opened:
        wb.close()


def _flagged(sections: Iterable[object], subsystem: str | None = None) -> list[Finding]:
    return [
        f
        for s in sections
        for f in s.findings
        if f.status.is_flag and (subsystem is None or f.subsystem == subsystem)
    ]


def _describe(findings: Iterable[Finding]) -> str:
    return "\n".join(f"{f.id}: {f.headline}" for f in findings)


@pytest.fixture
def flagged() -> Callable[[Iterable[object]], list[Finding]]:
    """``flagged(sections, subsystem=None)``: the SUSPECT/CONFIRMED findings of a list of Sections (of one
    subsystem when given)."""
    return _flagged


@pytest.fixture
def describe() -> Callable[[Iterable[Finding]], str]:
    """``describe(findings)``: one line per finding, for assertion messages."""
    return _describe
