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


class _Declares:
    def __init__(self, value: object) -> None:
        self.value = value

    def total_steps(self, config: dict) -> object:
        return self.value


def test_a_declared_run_length_is_read_and_a_bad_one_says_what_was_expected() -> None:
    assert metrics.total_steps_of(_Declares(50_000), {}, "s") == 50_000
    assert metrics.total_steps_of(_Declares(1e5), {}, "s") == 100_000
    assert metrics.total_steps_of(_Declares(None), {}, "s") is None
    assert metrics.total_steps_of(object(), {}, "s") is None
    for bad in (0, -5, 2.5, "100", True):
        with pytest.raises(ValueError, match="positive whole number of environment steps"):
            metrics.total_steps_of(_Declares(bad), {}, "s")


def test_runs_shorten_to_the_longer_declared_length_and_never_grow_past_the_profile() -> None:
    assert metrics.run_length({"baseline": None, "candidate": None}, 300_000) == (300_000, "")
    steps, note = metrics.run_length({"baseline": 50_000, "candidate": 80_000}, 300_000)
    assert steps == 80_000 and "80,000" in note and "baseline 50,000" in note
    assert metrics.run_length({"baseline": 50_000, "candidate": None}, 30_000) == (30_000, "")


def test_the_workbench_trains_for_the_subjects_own_run_length(tmp_path, monkeypatch) -> None:
    from rlaudit.engine.workbench import Workbench
    from rlaudit.trainer.runs import runs

    subject = tmp_path / "short_subject.py"
    subject.write_text(
        "def config():\n    return {'total': 400}\n\n"
        "def total_steps(config):\n    return config['total']\n\n"
        "def train(config, steps, seed, recorder, **_):\n"
        "    for step in range(40, steps + 1, 40):\n"
        "        recorder.episode(step=step, env=0, **{'return': float(step)})\n"
        "    return {'steps': steps}\n"
    )
    monkeypatch.setenv("RLAUDIT_CACHE", str(tmp_path / "cache"))
    with Workbench(str(subject), str(subject), profile="smoke", jobs=1) as wb:
        assert wb.train_steps == 400 and wb.short_train_steps == 400
        assert any("400 steps" in note for note in wb.metric_notes)
        (pair,) = runs(wb, seeds=[0])
        assert pair["baseline"].ok and pair["baseline"].result["steps"] == 400
