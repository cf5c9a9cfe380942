"""How ``make test`` splits the tests between pytest-xdist workers (``-n 2 --dist loadgroup``)."""

from __future__ import annotations

# Test files that run whole reports on the same example pairs: under pytest-xdist they share one worker, so
# the later ones find the earlier ones' runs in the shared cache instead of training them again in parallel.
SHARED_REPORTS = ("tests/test_readme.py", "tests/test_subject_matrix.py")


def xdist_group_of(nodeid: str) -> str:
    """The pytest-xdist group of a test: its file, or ``"reports"`` for the files in :data:`SHARED_REPORTS`.

    A file is never split between workers: module fixtures are built once, and nbval runs a notebook's
    cells in order in one kernel.
    """
    path = nodeid.split("::", 1)[0]
    return "reports" if path in SHARED_REPORTS else path
