"""The tests of :mod:`rlaudit.seeding.common`."""

from __future__ import annotations

from rlaudit.seeding import audit


def test_replica_errors_are_listed_per_replica() -> None:
    rep = {
        "fresh": [{"error": "replica timed out"}, {"env": {"error": "ValueError: x"}}],
        "in_process": {"same": {"train": {"error": "TypeError: y"}}},
    }
    errs = audit.replica_errors(rep)
    assert errs == [
        "fresh process 1: replica timed out",
        "fresh process 2 env: ValueError: x",
        "worker (same) train: TypeError: y",
    ]
