"""Config audit (notebook 14): every config fault of the catalog is flagged; an identical pair is cleared."""

from __future__ import annotations

import pytest

from rlaudit.config import audit as config_audit
from rlaudit.demo import faults as catalog
from rlaudit.findings import Status

CONFIG_FAULTS = [f for f in catalog.CATALOG.values() if f.kind == "config"]


def test_diff_classifies_changes_and_implicit_defaults():
    a = {"optimizer": {"lr": 1e-3, "eps": 1e-5}, "env": {"rewards": {"battery": 0.8}}, "old": 1}
    b = {"optimizer": {"lr": 2e-3, "eps": None}, "env": {"rewards": {"battery": 0.8}}, "new": 2}
    diff = config_audit.diff_configs(a, b, rules={"rewards": ["env.rewards.*"], "optimizer": ["optimizer.*"]})
    change = dict(zip(diff.table["key"], diff.table["change"], strict=True))
    assert change == {
        "optimizer.lr": "changed",
        "optimizer.eps": "implicit",
        "env.rewards.battery": "same",
        "old": "removed",
        "new": "added",
    }
    rel = diff.table.set_index("key").loc["optimizer.lr", "relative"]
    assert rel == pytest.approx(1.0)
    assert diff.keys_by_subsystem()["optimizer"] == ["optimizer.eps", "optimizer.lr"]
    assert diff.keys_by_subsystem()["config"] == ["new", "old"]


def test_library_default_names_the_fallback():
    assert "1e-08" in config_audit.library_default("optimizer.eps")
    assert "constant" in config_audit.library_default("trainer.lr_schedule")


def test_pick_overrides_prefers_floats_and_skips_list_items():
    cfg = {"optimizer": {"lr": 0.001, "betas": [0.9, 0.99], "steps": 4}, "trainer": {"num_envs": 8}}
    assert config_audit.pick_overrides(cfg, cfg) == {"optimizer.lr": 0.002, "trainer.num_envs": 9}


def test_identical_pair_is_cleared(make_wb, flagged, describe):
    sections = config_audit.audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    statuses = {f.id: f.status for s in sections for f in s.findings}
    assert statuses["config/unchanged"] is Status.CLEARED
    assert statuses["config/overrides"] is Status.CLEARED


@pytest.mark.parametrize("fault", CONFIG_FAULTS, ids=lambda f: f.id)
def test_config_faults_are_flagged_in_their_subsystem(make_wb, fault, flagged, describe):
    sections = config_audit.audit_all(make_wb(f"builtin:reference+{fault.id}"))
    hits = [f for f in flagged(sections) if f.subsystem == fault.subsystem]
    assert hits, f"{fault.id} not flagged in {fault.subsystem}:\n{describe(flagged(sections))}"
    key = fault.overrides[0].split("=", 1)[0]
    assert any(key in str(f.evidence.details) or key in f.evidence.summary for f in hits)


def test_dropped_adam_eps_is_an_implicit_default(make_wb, flagged, describe):
    sections = config_audit.audit_all(make_wb("builtin:reference+optimizer.adam_eps_default"))
    implicit = [f for f in flagged(sections) if f.id == "config/implicit-optimizer.eps"]
    assert implicit and "1e-08" in implicit[0].evidence.summary


def test_ignored_override_is_confirmed(make_wb, flagged, describe):
    sections = config_audit.audit_all(make_wb("builtin:reference+config.override_ignored"))
    hits = [f for f in flagged(sections) if f.id == "config/override-ignored-candidate"]
    assert hits and hits[0].status is Status.CONFIRMED
    assert "trainer." in hits[0].evidence.summary


def test_regressed_pair_shows_the_dehydration_differences(make_wb, flagged, describe):
    sections = config_audit.audit_all(make_wb("builtin:regressed"))
    ids = {f.id for f in flagged(sections)}
    assert {"config/changed-rewards", "config/changed-checkpointing"} <= ids
    # the regressed recipe applies overrides correctly: no override finding
    assert not any(i.startswith("config/override-ignored") for i in ids)
