"""The built-in subjects: spec grammar, config systems, and the catalog's config-level faults."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import yaml

from rlaudit.demo import faults as catalog
from rlaudit.demo.config import DemoConfig
from rlaudit.demo.subject import CONFIG_KEYS, compose_hydra, load, parse
from rlaudit.findings import SUBSYSTEMS


def test_hydra_tree_resolves_to_the_dataclass_defaults():
    assert compose_hydra() == DemoConfig().to_dict()


def test_python_recipe_resolves_to_the_same_values_as_hydra():
    # the "dehydration" was meant to change nothing: without faults the two config systems agree key for key
    assert load("regressed-" + ",".join(catalog.REGRESSED)).config() == load("reference").config()


def test_both_config_systems_apply_the_same_overrides():
    overrides = ["trainer.ent_coef=0.02", "env.rewards.ore=0.2", "optimizer.betas=[0.8, 0.99]"]
    ref = load("reference").config(overrides=overrides)
    py = load("regressed-" + ",".join(catalog.REGRESSED)).config(overrides=overrides)
    assert ref == py
    assert ref["trainer"]["ent_coef"] == 0.02 and ref["env"]["rewards"]["ore"] == 0.2


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("2e-05", 2e-05),
        ("null", None),
        ("[0.9, 0.99]", [0.9, 0.99]),
        ("relu", "relu"),
        ("true", True),
        ("3", 3),
    ],
)
def test_recipe_parses_override_values_like_hydra(raw, value):
    from rlaudit.demo.pyconfig import parse_value

    assert parse_value(raw) == value and type(parse_value(raw)) is type(value)


def test_recipe_rejects_unknown_override_keys():
    with pytest.raises(ValueError, match="no key 'ent_cof'"):
        load("regressed").config(overrides=["trainer.ent_cof=0.02"])


@pytest.mark.parametrize(
    ("rest", "base", "faults"),
    [
        ("reference", "reference", []),
        ("reference+loss.gae_bootstrap", "reference", ["loss.gae_bootstrap"]),
        (
            "reference+loss.gae_bootstrap,env.desync_truncates",
            "reference",
            ["loss.gae_bootstrap", "env.desync_truncates"],
        ),
        ("regressed", "regressed", list(catalog.REGRESSED)),
        (
            "regressed-loss.gae_bootstrap",
            "regressed",
            [f for f in catalog.REGRESSED if f != "loss.gae_bootstrap"],
        ),
        (
            "regressed-loss.gae_bootstrap+seeding.torch_unseeded",
            "regressed",
            [f for f in catalog.REGRESSED if f != "loss.gae_bootstrap"] + ["seeding.torch_unseeded"],
        ),
    ],
)
def test_spec_grammar(rest, base, faults):
    assert parse(rest) == (base, faults)


@pytest.mark.parametrize(
    ("rest", "message"),
    [
        ("referense", "expected builtin:reference or builtin:regressed"),
        ("reference+loss.gae_bootstrp", "Did you mean loss.gae_bootstrap"),
        ("reference-loss.gae_bootstrap", "does not have it"),
    ],
)
def test_spec_errors_say_what_is_expected(rest, message):
    with pytest.raises(ValueError, match=message):
        parse(rest)


def test_catalog_covers_every_subsystem_with_twenty_faults():
    assert len(catalog.CATALOG) >= 20
    assert {f.subsystem for f in catalog.CATALOG.values()} == set(SUBSYSTEMS)
    for fault in catalog.CATALOG.values():
        assert fault.id.split(".", 1)[0] == fault.subsystem
        assert fault.description.endswith(".") and fault.case
        assert fault.kind in ("config", "code") and fault.effect in (
            "learning",
            "throughput",
            "both",
            "observability",
            "reproducibility",
            "none",
        )
        # a config fault changes config; a code fault never does (audits must not be able to read it there)
        assert bool(fault.overrides) == (fault.kind == "config") or fault.id == "config.override_ignored"


def test_code_faults_name_real_code_paths():
    from rlaudit.demo.arena import ArenaImpl
    from rlaudit.demo.ppo import PPOImpl

    arena_fields = {f.name for f in dataclasses.fields(ArenaImpl)}
    ppo_fields = {f.name for f in dataclasses.fields(PPOImpl)}
    for fault in catalog.CATALOG.values():
        assert set(fault.arena) <= arena_fields, fault.id
        assert set(fault.ppo) <= ppo_fields, fault.id
    from rlaudit.demo.ppo import VALUE_LOSS_FLOOR

    assert catalog.CATALOG["loss.value_floor"].ppo["value_loss_floor"] == VALUE_LOSS_FLOOR


def test_regressed_mixes_subsystems_a_red_herring_and_a_throughput_fault():
    faults = catalog.get(catalog.REGRESSED)
    assert len(faults) >= 5 and len({f.subsystem for f in faults}) >= 4
    assert any(f.effect == "none" for f in faults)
    assert any(f.effect in ("throughput", "both") for f in faults)


@pytest.mark.parametrize(
    "fault", [f for f in catalog.CATALOG.values() if f.kind == "config"], ids=lambda f: f.id
)
def test_config_faults_change_the_resolved_config(fault):
    reference = load("reference").config()
    faulty = load(f"reference+{fault.id}").config()
    key, value = fault.overrides[0].split("=", 1)
    node_ref, node_bad = reference, faulty
    for part in key.split("."):
        node_ref, node_bad = node_ref[part], node_bad[part]
    assert node_ref != node_bad
    assert node_bad == yaml.safe_load(value)


def test_config_faults_are_applied_before_user_overrides():
    # an attribution experiment restores a key through the subject's own overrides: the restore must win
    subject = load("reference+optimizer.adam_eps_default")
    assert subject.config()["optimizer"]["eps"] is None
    assert subject.config(overrides=["optimizer.eps=1e-5"])["optimizer"]["eps"] == 1e-5


def test_override_ignored_fault_drops_trainer_overrides_only():
    good, bad = load("reference"), load("reference+config.override_ignored")
    overrides = ["trainer.ent_coef=0.02", "optimizer.lr=0.001"]
    assert good.config(overrides=overrides)["trainer"]["ent_coef"] == 0.02
    resolved = bad.config(overrides=overrides)
    assert resolved["trainer"]["ent_coef"] == DemoConfig().trainer.ent_coef  # silently lost
    assert resolved["optimizer"]["lr"] == 0.001  # other sections still land
    assert bad.config() == good.config()  # invisible without overrides


def test_adam_eps_fault_falls_back_to_torch_default_at_runtime():
    import torch

    subject = load("reference+optimizer.adam_eps_default")
    config = subject.config()
    policy = torch.nn.Linear(3, 2)
    opt = subject.make_optimizer(config, policy)
    assert opt.param_groups[0]["eps"] == 1e-8
    assert load("reference").make_optimizer(load("reference").config(), policy).param_groups[0]["eps"] == 1e-5


def test_config_keys_cover_every_key_of_the_config():
    from rlaudit.flatdiff import classify_key, flatten

    keys = flatten(load("reference").config())
    rules = load("reference").config_keys()
    assert set(rules) <= set(SUBSYSTEMS) and rules == CONFIG_KEYS
    assert classify_key("env.rewards.battery", rules) == "rewards"
    assert classify_key("env.frame_stack", rules) == "spaces"
    assert classify_key("trainer.checkpoint_interval", rules) == "checkpointing"
    assert classify_key("optimizer.eps", rules) == "optimizer"
    assert all(classify_key(k, rules) in SUBSYSTEMS for k in keys)


def test_faults_command_prints_the_catalog_as_json():
    out = subprocess.run(
        [sys.executable, "-m", "rlaudit.cli", "faults", "--json"], capture_output=True, text=True, check=True
    ).stdout
    rows = json.loads(out)
    assert {r["id"] for r in rows} == set(catalog.CATALOG)
    assert set(rows[0]) >= {"id", "subsystem", "description", "case"}
