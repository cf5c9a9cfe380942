"""The tests of :mod:`rlaudit.memory.probes`."""

from __future__ import annotations

import numpy as np

from rlaudit.memory import probes


def test_container_sizes_walk_attributes_and_arrays() -> None:
    class Inner:
        def __init__(self) -> None:
            self.labels = {i: str(i) for i in range(5)}

    class Outer:
        __slots__ = ("buf", "inner", "items")

        def __init__(self) -> None:
            self.inner = Inner()
            self.items = [1, 2, 3]
            self.buf = np.zeros(10, dtype=np.float32)

    sizes = probes.container_sizes(Outer(), "env")
    assert sizes["env.inner.labels"] == 5 and sizes["env.items"] == 3 and sizes["env.buf#bytes"] == 40
