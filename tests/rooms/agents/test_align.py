"""The tests of :mod:`rlaudit.agents.align`."""

from __future__ import annotations

from rlaudit.agents import align as al
from support.toys import mlp


def test_a_rename_alone_is_only_renamed() -> None:
    a = mlp(["fc1", "fc2", "fc3"], [10, 64, 64, 5])
    b = mlp(["encoder.0", "encoder.2", "head"], [10, 64, 64, 5])
    pairs = al.align(a, b)
    assert len(pairs) == len(a)
    assert all(p.a is not None and p.b is not None for p in pairs)
    assert {p.change for p in pairs} == {"renamed"}


def test_resize_and_kind_change_are_labelled() -> None:
    a = mlp(["l1", "l2", "l3"], [10, 64, 64, 5], act="Tanh")
    b = mlp(["l1", "l2", "l3"], [10, 16, 16, 5], act="ReLU")
    changes = [p.change for p in al.align(a, b)]
    assert changes == ["resized", "kind", "resized", "kind", "resized"]


def test_an_added_layer_is_one_insertion_not_a_cascade() -> None:
    a = mlp(["l1", "l2", "l3"], [10, 64, 64, 5])
    b = mlp(["l1", "l2", "lx", "l3"], [10, 64, 64, 64, 5])
    pairs = al.align(a, b)
    added = [p for p in pairs if p.change == "added"]
    assert len(added) == 2  # one Linear and its activation
    assert all(p.change in ("same", "added") for p in pairs)


def test_block_summary_and_hidden_widths() -> None:
    recs = mlp(["actor.0", "actor.2", "actor.4"], [10, 64, 64, 5])
    assert al.block_summary(recs) == {"actor": "10→64→64→5 (Tanh)"}
    assert al.hidden_widths(recs) == [64, 64]
