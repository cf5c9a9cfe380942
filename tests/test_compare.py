"""rlaudit.flatdiff: flattening, tolerant diffs, rename matching, and key classification."""

from __future__ import annotations

import math

import pytest

from rlaudit import flatdiff as compare
from rlaudit.findings import SUBSYSTEMS


def test_flatten_nested_dicts_and_lists() -> None:
    nested = {"agent": {"hidden": [128, 64], "act": "tanh"}, "lr": 3e-4, "empty": {}, "none": []}
    assert compare.flatten(nested) == {
        "agent.hidden.0": 128,
        "agent.hidden.1": 64,
        "agent.act": "tanh",
        "lr": 3e-4,
        "empty": {},
        "none": [],
    }
    assert compare.flatten({"a": [{"b": 1}]}, sep="/") == {"a/0/b": 1}
    assert compare.flatten({}) == {}


def test_values_equal_is_tolerant_for_numbers_and_strict_for_kinds() -> None:
    assert compare.values_equal(3, 3.0)
    assert compare.values_equal(3e-4, 3e-4 * (1 + 1e-12))
    assert not compare.values_equal(3e-4, 3.1e-4)
    assert compare.values_equal(float("nan"), float("nan"))
    assert not compare.values_equal("1", 1)  # YAML string vs Python int is a real change
    assert not compare.values_equal(True, 1)
    assert not compare.values_equal(None, 0)
    assert compare.values_equal(1.0, 1.05, rtol=0.1)
    assert compare.values_equal(0.0, 1e-9, atol=1e-8)


def test_diff_values_reports_every_kind_of_change() -> None:
    base = {"a": 1, "b": {"c": 3.0, "d": "x"}, "lr": 1e-4}
    cand = {"a": 1.0, "b": {"c": 3.3, "e": True}, "lr": 1e-4 * (1 + 1e-12)}
    diff = compare.diff_values(base, cand).set_index("key")
    assert list(diff.index) == ["a", "b.c", "b.d", "lr", "b.e"]
    assert diff.loc["a", "change"] == "same"
    assert diff.loc["lr", "change"] == "same"
    assert diff.loc["b.c", "change"] == "changed"
    assert diff.loc["b.c", "relative_change"] == pytest.approx(0.1)
    assert diff.loc["b.d", "change"] == "removed" and diff.loc["b.d", "candidate"] is None
    assert diff.loc["b.e", "change"] == "added" and diff.loc["b.e", "candidate"] is True
    assert math.isnan(diff.loc["b.e", "relative_change"])


def test_diff_values_tolerances() -> None:
    diff = compare.diff_values({"x": 1.0}, {"x": 1.01}, rtol=0.05)
    assert diff["change"].tolist() == ["same"]
    diff = compare.diff_values({"x": 0.0}, {"x": 0.5})
    assert diff["change"].tolist() == ["changed"] and diff["relative_change"].tolist() == [math.inf]


def test_near_names_pair_renames_and_leave_unrelated_names() -> None:
    old = ["charts/episode_return", "losses/value_loss", "perf/sps", "optimizer.lr", "env/heart.get", "gone"]
    new = [
        "charts/episodic_return",
        "losses/vf_loss",
        "perf/sps",
        "optimizer.learning_rate",
        "heart.get/env",
        "fresh",
    ]
    pairs = {(o, n) for o, n, _ in compare.match_near_names(old, new)}
    assert pairs == {
        ("charts/episode_return", "charts/episodic_return"),
        ("losses/value_loss", "losses/vf_loss"),
        ("optimizer.lr", "optimizer.learning_rate"),
        ("env/heart.get", "heart.get/env"),
    }


def test_near_names_keep_siblings_apart() -> None:
    # A metric that disappeared is not "renamed" to a different metric with a shared prefix.
    assert compare.match_near_names(["losses/value_loss"], ["losses/policy_loss"]) == []
    assert compare.match_near_names(["charts/episodic_length"], ["charts/episodic_return"]) == []
    assert compare.match_near_names(["trainer.batch_size"], ["trainer.minibatch_size"]) == []


def test_near_names_are_one_to_one_and_best_first() -> None:
    pairs = compare.match_near_names(
        ["charts/episode_return"], ["charts/episodic_return", "charts/episodic_returns"]
    )
    assert len(pairs) == 1
    scores = [
        s for _, _, s in compare.match_near_names(["a/lossx", "charts/sps"], ["a/loss_x", "charts/sps_"])
    ]
    assert scores == sorted(scores, reverse=True)


def test_name_similarity_reserves_one_for_identical_names() -> None:
    assert compare.name_similarity("perf/SPS", "perf/sps") == 1.0
    assert compare.name_similarity("env/heart.get", "heart.get/env") < 1.0


@pytest.mark.parametrize(
    ("key", "subsystem"),
    [
        ("optimizer.lr", "optimizer"),
        ("trainer.learning_rate", "optimizer"),
        ("trainer.anneal_lr", "optimizer"),
        ("optimizer.type", "optimizer"),
        ("env.width", "env"),
        ("env.game.rewards.heart", "rewards"),
        ("env.seed", "seeding"),
        ("seed", "seeding"),
        ("trainer.checkpoint_interval", "checkpointing"),
        ("agent.hidden_size", "agents"),
        ("model.activation", "agents"),
        ("agent.init.orthogonal_gain", "init"),
        ("ppo.gae_lambda", "loss"),
        ("trainer.ent_coef", "loss"),
        ("trainer.batch_size", "trainer"),
        ("curriculum.num_tasks", "curriculum"),
        ("env.norm_obs", "spaces"),
        ("logging.interval", "logging"),
        ("trainer.replay_buffer_size", "memory"),
        ("something.unrelated", "config"),
    ],
)
def test_classify_key_default_rules(key: str, subsystem: str) -> None:
    assert compare.classify_key(key) == subsystem


def test_classify_key_custom_rules_win_and_fall_back() -> None:
    rules = {"loss": ["agent.*"]}  # a subject may file keys differently from the name rules
    assert compare.classify_key("agent.hidden_size", rules) == "loss"
    assert compare.classify_key("optimizer.lr", rules) == "optimizer"  # defaults still apply
    assert compare.classify_key("optimizer.lr", rules, defaults=False) == "config"
    assert compare.classify_key("x", rules, fallback="unknown") == "unknown"
    assert compare.classify_keys(["seed", "lr"]) == {"seed": "seeding", "lr": "optimizer"}


def test_default_rules_cover_every_subsystem_but_config() -> None:
    assert set(compare.DEFAULT_RULES) == set(SUBSYSTEMS) - {"config"}
