"""The tests of :mod:`rlaudit.checkpointing.files`."""

from __future__ import annotations

from rlaudit.checkpointing.files import interval_of


def test_interval_is_the_median_gap() -> None:
    assert interval_of([20480, 28672]) == 8192
    assert interval_of([100, 200, 300, 500]) == 100
    assert interval_of([7]) is None
