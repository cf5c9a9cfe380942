"""The practical thresholds the memory checks judge growth against, and the units they report in."""

from __future__ import annotations

from rlaudit.evidence import fmt

# Practical thresholds. RSS: 64 KiB per 1000 env steps is 64 MiB per million steps, a leak that ends a long
# run. Per-episode growth inside the process: 100 entries or 32 KiB per 1000 episodes, beyond what the
# baseline's counterpart grows.
RSS_PER_1000_STEPS = 64 * 1024
ENTRIES_PER_1000_EPISODES = 100.0
BYTES_PER_1000_EPISODES = 32 * 1024


def mib(b: float) -> str:
    """``b`` bytes in MiB, three significant digits (:func:`rlaudit.evidence.fmt`: ``1,260``, never
    ``1.26e+03``); below 0.01 MiB in KiB, as a rollout buffer of a few floats is."""
    if abs(b) < 2**20 / 100:
        return kib(b)
    return f"{fmt(b / 2**20)} MiB"


def kib(b: float) -> str:
    """``b`` bytes in KiB, three significant digits (:func:`rlaudit.evidence.fmt`)."""
    return f"{fmt(b / 1024)} KiB"
