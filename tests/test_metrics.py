"""Metrics are declared, never assumed: parsing declarations, the default, overrides, disagreements."""

from __future__ import annotations

import pytest

from rlaudit import metrics
from rlaudit.metrics import Metric


def test_a_declaration_is_parsed_and_its_first_metric_is_primary_when_none_says_so() -> None:
    parsed = metrics.parse([{"name": "charts/episodic_return", "source": "scalar"}, "length"])
    assert parsed[0] == Metric("charts/episodic_return", "higher", "scalar", True)
    assert parsed[1] == Metric("length")


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ("return", "expected a list"),
        ([{"direction": "higher"}], "expected a name"),
        ([{"name": "x", "direction": "up"}], "'higher' or 'lower'"),
        ([{"name": "x", "source": "tensorboard"}], "'episode'"),
        ([{"name": "a", "primary": True}, {"name": "b", "primary": True}], "exactly one"),
        ([{"name": "a", "goal": 3}], "unknown key"),
    ],
)
def test_a_bad_declaration_says_what_was_expected(declared: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        metrics.parse(declared)


def test_nothing_declared_means_the_episodic_return() -> None:
    metric, notes = metrics.resolve({"baseline": None, "candidate": None})
    assert metric == metrics.DEFAULT and metric.name == "return" and notes


def test_the_override_wins_and_keeps_a_declared_direction() -> None:
    declared = {"baseline": [Metric("heart.get", primary=True), Metric("loss", "lower", "scalar")]}
    metric, _ = metrics.resolve(declared, "loss")
    assert (metric.name, metric.direction, metric.source, metric.origin) == (
        "loss",
        "lower",
        "scalar",
        "override",
    )
    assert metrics.resolve(declared, "steps:lower")[0].direction == "lower"


def test_the_baseline_declaration_wins_a_disagreement() -> None:
    declared = {
        "baseline": [Metric("heart.get", primary=True)],
        "candidate": [Metric("return", primary=True)],
    }
    metric, notes = metrics.resolve(declared)
    assert metric.name == "heart.get" and "different primary metrics" in notes[0]
    assert metric.sign == 1 and Metric("x", "lower").sign == -1
