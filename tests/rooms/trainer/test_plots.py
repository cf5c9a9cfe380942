"""The tests of :mod:`rlaudit.trainer.plots`."""

from __future__ import annotations

import pytest

# ---------------------------------------------------------------------------------------------------------------
# Figure helpers the rooms share
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "grid", "shown"), [(0, (1, 1), 0), (1, (1, 1), 1), (4, (2, 3), 4), (6, (2, 3), 6)]
)
def test_panels_wrap_at_three_and_hide_the_unused_axes(n: int, grid: tuple[int, int], shown: int) -> None:
    from rlaudit.trainer.plots import panels

    fig, axes = panels(n, width=2.0, height=1.0)
    assert len(axes) == shown and all(ax.get_visible() for ax in axes)
    everything = fig.get_axes()
    assert len(everything) == grid[0] * grid[1]
    assert sum(ax.get_visible() for ax in everything) == shown
    assert tuple(fig.get_size_inches()) == (2.0 * grid[1], 1.0 * grid[0])
