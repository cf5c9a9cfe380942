"""Every catalog fault alone: its own subsystem is first in "suspects by audit evidence" for at least 90% of
the catalog, at the smoke and at the standard profile (``-m expensive``; ``tests/support/ranking.py`` prints
the table the README's figures come from)."""

from __future__ import annotations

import pytest

from support import ranking

TOP1 = 0.9


@pytest.mark.expensive
@pytest.mark.parametrize("profile", ["smoke", "standard"])
def test_each_fault_ranks_its_own_subsystem_first(profile: str, audit_cache: str, monkeypatch) -> None:
    monkeypatch.setenv("RLAUDIT_PROFILE", profile)
    placements = ranking.matrix(profile)
    summary = ranking.rates(placements)
    misses = "\n".join(
        f"{p.fault}: {p.subsystem} ranked {p.rank or 'unflagged'}; first {p.ranked[:3]} {p.top}"
        for p in placements
        if p.rank != 1
    )
    assert summary["top1"] >= TOP1, f"top-1 {summary['top1']:.0%} at {profile}:\n{misses}"


@pytest.mark.expensive
def test_each_off_policy_fault_ranks_its_own_subsystem_first(audit_cache: str, monkeypatch) -> None:
    """The DQN catalog against ``builtin:dqn`` at smoke: every fault's own subsystem first."""
    monkeypatch.setenv("RLAUDIT_PROFILE", "smoke")
    placements = ranking.matrix("smoke", learner="dqn")
    misses = [
        f"{p.fault}: {p.subsystem} ranked {p.rank or 'unflagged'}; first {p.ranked[:3]}"
        for p in placements
        if p.rank != 1
    ]
    assert not misses, "\n".join(misses)
