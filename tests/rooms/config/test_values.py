"""The tests of :mod:`rlaudit.config.values`."""

from __future__ import annotations

from rlaudit.checks import Check, CheckSpec
from rlaudit.config import audit as config_audit
from rlaudit.findings import Status


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
