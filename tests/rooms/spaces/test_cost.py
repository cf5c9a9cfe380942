"""The tests of :mod:`rlaudit.spaces.cost`."""

from __future__ import annotations

from support.load import aa_spec, busy_core


def test_forward_timing_stays_quiet_on_an_aa_pair_with_a_busy_core(audit_cache, describe) -> None:
    from rlaudit.engine.workbench import Workbench
    from rlaudit.spaces import cost

    # fresh: every timing round is measured now, while the busy loop competes for the cores
    wb = Workbench("builtin:reference", aa_spec("spaces-timing"), profile="smoke", fresh=True)
    try:
        with busy_core() as proc:
            section = cost.preprocessing(wb)
            assert proc.poll() is None
    finally:
        wb.close()
    (finding,) = section.findings
    assert not finding.status.is_flag and finding.status.value != "ERROR", describe(section.findings)
    low, high = finding.evidence.ci
    assert low <= finding.evidence.effect <= high
