"""How ``make test`` splits the tests between pytest-xdist workers (``-n 2``).

Groups come from node ids alone (a test's file or room folder), not from ``xdist_group`` marks: pytest 9 computes node ids
in a way that pytest-xdist 3.8's ``--dist loadgroup`` cannot rename, so its marks are silently ignored and a
notebook's cells would be spread over both workers.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

# The files that run whole reports, the longest groups by far: each starts first on a worker of its own. Two
# reports that need the same artifact never train it twice: the cache's file lock makes the second wait for it.
LONGEST = ("tests/test_readme.py", "tests/test_subject_matrix.py")


# Folders whose sub-folders are packages with package-scoped fixtures (a room's ``bench``): one group each.
PACKAGE_ROOTS = ("tests/rooms/",)


def xdist_group_of(nodeid: str) -> str:
    """The pytest-xdist group of a test: the room's folder for a test under ``tests/rooms/<room>/``, else its
    file.

    A group is never split between workers: a room's package fixtures and a file's module fixtures are built
    once, and nbval runs a notebook's cells in order in one kernel. The tests across rooms, directly in
    ``tests/rooms/``, stay one group per file.
    """
    path = nodeid.split("::", 1)[0]
    for root in PACKAGE_ROOTS:
        folder, sep, _ = path.removeprefix(root).partition("/")
        if path.startswith(root) and sep:
            return root + folder + "/"
    return path


def first_in_line(nodeid: str) -> bool:
    """True for the tests of the longest groups (:data:`LONGEST`), which start first so as not to finish last."""
    return xdist_group_of(nodeid) in LONGEST


class GroupScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling (largest groups first, a group whole on one worker), by :func:`xdist_group_of`."""

    def _split_scope(self, nodeid: str) -> str:
        return xdist_group_of(nodeid)
