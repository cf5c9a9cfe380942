"""Config audit (notebook 14): every config fault of the catalog is flagged; an identical pair is cleared."""

from __future__ import annotations

import pytest

from rlaudit.checks import Check, CheckSpec
from rlaudit.config import audit as config_audit
from rlaudit.demo import faults as catalog
from rlaudit.findings import Severity, Status
from support.invariants import asymmetric_severities

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
    assert implicit[0].subsystem == "optimizer"
    # ... and the config room shows that its configuration changed, pointing to the owner, without a flag
    mirror = [f for s in sections for f in s.findings if f.id == "config/changed-values"]
    assert mirror and mirror[0].subsystem == "config" and mirror[0].status is Status.NOTED
    assert "optimizer.eps" in mirror[0].evidence.summary and "07_optimizer" in mirror[0].evidence.summary


def _values_check() -> Check:
    return Check(CheckSpec(id="config/values", subsystem="config", hypothesis="h"), wb=None)


def test_changed_values_point_to_their_owning_rooms_and_never_to_config_twice():
    a = {"optimizer": {"lr": 1e-3, "eps": 1e-5}, "agents": {"hidden": 64}, "misc": 1}
    b = {"optimizer": {"lr": 1e-3, "eps": None}, "agents": {"hidden": 128}, "misc": 2}
    rules = {"optimizer": ["optimizer.*"], "agents": ["agents.*"]}
    diff = config_audit.diff_configs(a, b, rules)
    finding = config_audit.changed_values(_values_check(), diff)
    assert finding.id == "config/changed-values" and finding.subsystem == "config"
    assert finding.status is Status.NOTED and not finding.status.is_flag
    keys = {k["key"]: k for k in finding.evidence.details["keys"]}
    assert set(keys) == {"agents.hidden", "optimizer.eps"}  # "misc" is the config room's own key
    assert keys["agents.hidden"]["room"] == "01_agents" and keys["optimizer.eps"]["room"] == "07_optimizer"
    assert finding.evidence.details["mirror_of"] == ["config/changed-agents", "config/implicit-optimizer.eps"]
    assert finding.evidence.details["knock_on"] is True
    assert "agents.hidden: 64 → 128 (see 01_agents)" in finding.evidence.summary
    only_own = config_audit.diff_configs({"misc": 1}, {"misc": 2}, rules)
    assert config_audit.changed_values(_values_check(), only_own) is None


DEAF = """
def config(overrides=None):
    return {"optimizer": {"lr": 0.001}, "trainer": {"gamma": 0.99}}
"""


def test_the_same_ignored_overrides_get_the_same_severity_on_both_sides(make_wb, tmp_path):
    paths = []
    for name in ("old", "new"):
        path = tmp_path / name / "subject.py"
        path.parent.mkdir()
        path.write_text(DEAF + f"\nNAME = {name!r}\n")
        paths.append(str(path))
    section = config_audit.overrides(make_wb(paths[1], baseline=paths[0]))
    by_id = {f.id: f for f in section.findings}
    base, cand = by_id["config/override-ignored-baseline"], by_id["config/override-ignored-candidate"]
    assert base.status is cand.status is Status.NOTED  # the same behaviour cannot explain a regression
    assert base.severity is cand.severity is Severity.MEDIUM
    assert not asymmetric_severities(section.findings)


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


def test_diff_keeps_values_as_the_config_has_them():
    diff = config_audit.diff_configs({"a": 64, "b": 1.5}, {"a": 128, "b": None}, rules=None)
    rows = diff.table.set_index("key")
    assert rows.loc["a", "baseline"] == 64 and isinstance(rows.loc["a", "baseline"], int)
    assert rows.loc["b", "candidate"] is None and rows.loc["b", "change"] == "implicit"
