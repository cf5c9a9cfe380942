"""The tests of :mod:`rlaudit.curriculum.overhead`."""

from __future__ import annotations

from rlaudit.curriculum import overhead
from rlaudit.stats import Interval


def test_overhead_verdict_weighs_the_share_a_costlier_curriculum_adds() -> None:
    # case 004: 150x per episode and three quarters of a step
    assert overhead.overhead_verdict(Interval(150.0, 130.0, 160.0), 0.06, 0.75)[0].value == "CONFIRMED"
    # a label per episode: 1.8x per episode, 4 points of a step more: flagged, but a medium cost
    status, severity, kind = overhead.overhead_verdict(Interval(1.8, 1.7, 1.9), 0.06, 0.10)
    assert (status.value, severity.value, kind) == ("SUSPECT", "MEDIUM", "costlier")
    assert overhead.overhead_verdict(Interval(1.01, 0.95, 1.08), 0.06, 0.06)[2] == "same"
    # 1.8x of a negligible share is the same in practice; a wide interval on a real share is open
    assert overhead.overhead_verdict(Interval(1.8, 1.7, 1.9), 0.001, 0.0018)[2] == "same"
    assert overhead.overhead_verdict(Interval(1.1, 0.8, 1.5), 0.10, 0.11)[2] == "open"
