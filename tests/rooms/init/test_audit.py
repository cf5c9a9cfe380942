"""The init room as a whole (``rlaudit.init.audit``, its ``CHECKS``): each of its catalog faults is flagged, the
identical pair stays quiet; a dropped orthogonal init is flagged, the reference stays quiet over several seeds, and
a hidden-size change keeps the init cleared.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

import pytest


def test_dropped_orthogonal_init_is_flagged(make_wb, flagged, describe) -> None:
    from rlaudit import init

    sections = init.audit_all(make_wb("builtin:reference+init.orthogonal_dropped"))
    found = flagged(sections, "init")
    ids = {f.id for f in found}
    assert "init/schemes" in ids, describe(f for s in sections for f in s.findings)
    assert "init/policy-at-init" in ids
    schemes = next(f for f in found if f.id == "init/schemes")
    assert "hidden: orthogonal √2 → PyTorch default" in schemes.evidence.summary
    at_init = next(f for f in found if f.id == "init/policy-at-init")
    assert "logit scale ×" in at_init.evidence.summary and at_init.reads == ["agents"]


@pytest.mark.parametrize("seeds", [3, pytest.param(6, marks=pytest.mark.expensive)])
def test_reference_against_itself_is_quiet_over_several_seeds(
    audit_cache: str, flagged, describe, seeds: int
) -> None:
    from rlaudit import init
    from rlaudit.engine.workbench import Workbench
    from rlaudit.profiles import get_profile

    profile = get_profile("smoke").replace(seeds=seeds)
    with Workbench("builtin:reference", "builtin:reference", profile=profile) as wb:
        sections = init.audit_all(wb)
    findings = [f for s in sections for f in s.findings]
    assert not flagged(sections), describe(findings)
    assert all(f.status.value == "CLEARED" for f in findings), describe(findings)


@pytest.mark.expensive  # a knock-on check beyond the detection matrix: one more subject
def test_hidden_size_change_keeps_the_init_cleared(make_wb, flagged, describe) -> None:
    from rlaudit import init

    sections = init.audit_all(make_wb("builtin:reference+agents.hidden_size"))
    assert not flagged(sections), describe(f for s in sections for f in s.findings)
