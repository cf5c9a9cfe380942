"""The config room as a whole (``rlaudit.config.audit``, its ``CHECKS``): each of its catalog faults is flagged,
the identical pair stays quiet; a dropped Adam eps is an implicit default, an ignored override is confirmed, and
the regressed pair shows its differences.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

import pytest

from rlaudit.config import audit as config_audit
from rlaudit.demo import faults as catalog
from rlaudit.findings import Status

CONFIG_FAULTS = [f for f in catalog.CATALOG.values() if f.kind == "config"]


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
