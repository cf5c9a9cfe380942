"""The practical thresholds the memory checks judge growth against, and the units they report in."""

from __future__ import annotations

# Practical thresholds. RSS: 64 KiB per 1000 env steps is 64 MiB per million steps, a leak that ends a long
# run. Per-episode growth inside the process: 100 entries or 32 KiB per 1000 episodes, beyond what the
# baseline's counterpart grows.
RSS_PER_1000_STEPS = 64 * 1024
ENTRIES_PER_1000_EPISODES = 100.0
BYTES_PER_1000_EPISODES = 32 * 1024


def mib(b: float) -> str:
    """``b`` bytes in MiB, three significant digits."""
    return f"{b / 2**20:.3g} MiB"


def kib(b: float) -> str:
    """``b`` bytes in KiB, three significant digits."""
    return f"{b / 1024:.3g} KiB"
