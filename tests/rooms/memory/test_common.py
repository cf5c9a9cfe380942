"""The tests of :mod:`rlaudit.memory.common`: the units memory findings speak in."""

from __future__ import annotations

from rlaudit.memory.common import kib, mib


def test_sizes_read_as_plain_numbers_never_in_e_notation() -> None:
    # an SB3 TD3 report said "2.72e+03 KiB per 1000 env steps" and "rollout buffers of 3.43e-05 MiB"
    assert kib(2_723.6 * 1024) == "2,724 KiB"
    assert kib(792 * 1024) == "792 KiB"
    assert mib(38.1 * 2**20) == "38.1 MiB"
    assert mib(36) == "0.0352 KiB"  # a few floats: in KiB, not 3.43e-05 MiB
    assert mib(12_000 * 2**20) == "12,000 MiB"
