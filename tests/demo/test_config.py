"""Tests of the demo's sectioned config: round trips, strictness, validation."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from rlaudit.demo import config as config_module
from rlaudit.demo.config import AgentConfig, DemoConfig, LoggingConfig, OptimizerConfig, TrainerConfig


def test_round_trip_and_json() -> None:
    d = DemoConfig().to_dict()
    assert set(d) == {"env", "curriculum", "agent", "trainer", "optimizer", "logging"}
    assert json.loads(json.dumps(d)) == d
    assert DemoConfig.from_dict(d).to_dict() == d
    assert DemoConfig.from_dict({}).to_dict() == d  # missing sections and keys keep their defaults


def test_partial_overrides_keep_other_defaults() -> None:
    cfg = DemoConfig.from_dict({"trainer": {"num_envs": 8}, "optimizer": {"lr": 1e-3}})
    assert cfg.trainer.num_envs == 8 and cfg.trainer.num_steps == TrainerConfig().num_steps
    assert cfg.optimizer.lr == 1e-3 and cfg.optimizer.eps == 1e-5


@pytest.mark.parametrize(
    ("d", "names"),
    [
        ({"trainer": {"num_env": 8}}, ["num_env"]),
        ({"optimizer": {"learning_rate": 1e-3, "beta": 0.9}}, ["beta", "learning_rate"]),
        ({"agents": {}}, ["agents"]),
    ],
)
def test_unknown_keys_are_rejected_by_name(d: dict, names: list[str]) -> None:
    with pytest.raises(ValueError) as err:
        DemoConfig.from_dict(d)
    for name in names:
        assert repr(name) in str(err.value)


@pytest.mark.parametrize(
    "d",
    [
        {"trainer": {"lr_schedule": "exponential"}},
        {"trainer": {"num_minibatches": 0}},
        {"trainer": {"num_envs": 1, "num_steps": 2, "num_minibatches": 4}},
        {"optimizer": {"name": "sgd"}},
        {"optimizer": {"betas": [0.9]}},
        {"agent": {"activation": "gelu"}},
    ],
)
def test_invalid_values_are_rejected(d: dict) -> None:
    with pytest.raises(ValueError):
        DemoConfig.from_dict(d)


def test_every_field_has_a_one_line_comment() -> None:
    source = Path(config_module.__file__).read_text()
    for cls in (AgentConfig, TrainerConfig, OptimizerConfig, LoggingConfig, DemoConfig):
        for f in dataclasses.fields(cls):
            line = re.search(rf"^\s+{f.name}: .*$", source, flags=re.M)
            assert line and "  # " in line.group(0), f"{cls.__name__}.{f.name} has no comment"
