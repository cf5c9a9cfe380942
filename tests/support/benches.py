"""``bench``: smoke workbenches against ``builtin:reference`` that every test file of one room shares.

A room's ``conftest.py`` imports the fixture (``from support.benches import bench``), which makes it that room
package's own: pytest builds it once per room folder (``scope="package"``; the folder has an ``__init__.py``)
and tears it down after the room's last test. ``make test`` hands a room's folder to one pytest-xdist worker
whole (``support.groups``), so each candidate's workers start once per room, however many of the room's test
files ask for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from rlaudit.engine.workbench import Workbench


@pytest.fixture(scope="package")
def bench(audit_cache: str) -> Iterator[Callable[[object], Workbench]]:
    """``bench(candidate)`` -> a smoke Workbench against builtin:reference, opened on first use and shared by
    the room's tests (its workers start once per candidate); all are closed after the room's last test."""
    opened: dict[object, Workbench] = {}

    def get(candidate: object) -> Workbench:
        if candidate not in opened:
            opened[candidate] = Workbench("builtin:reference", candidate, profile="smoke")
        return opened[candidate]

    yield get
    for wb in opened.values():
        wb.close()
