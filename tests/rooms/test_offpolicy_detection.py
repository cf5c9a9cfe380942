"""The off-policy detection matrix: every fault of the built-in DQN's catalog against ``builtin:dqn`` is flagged
by its own room's off-policy check, the identical pair stays quiet, and the PPO pair skips them all naming the
missing capability or recorder table (smoke profile; the baseline's runs are shared through the cache)."""

from __future__ import annotations

import pytest

from rlaudit.demo.dqn_subject import CATALOG
from rlaudit.findings import Status
from rlaudit.init.policy_at_init import policy_at_init
from rlaudit.loss.targets import td_targets
from rlaudit.loss.tdloss import td_loss_form
from rlaudit.memory.replay import replay_buffer
from rlaudit.optimizer.exploration import exploration
from rlaudit.optimizer.setup import coverage
from rlaudit.optimizer.targets import target_network
from rlaudit.trainer.replay import replay_ratio

OFF_POLICY = (td_targets, td_loss_form, target_network, exploration, replay_ratio, replay_buffer)
ROOM_CHECKS = {
    "loss": (td_targets, td_loss_form),
    "optimizer": (target_network, exploration),
    "trainer": (replay_ratio,),
    "memory": (replay_buffer,),
}


def _errors(sections) -> list:
    return [f for s in sections for f in s.findings if f.status is Status.ERROR]


@pytest.mark.parametrize("fault", sorted(CATALOG))
def test_each_off_policy_fault_is_flagged_by_its_room(make_wb, flagged, describe, fault: str) -> None:
    own = CATALOG[fault].subsystem
    wb = make_wb(f"builtin:dqn+{fault}", baseline="builtin:dqn")
    sections = [check(wb) for check in ROOM_CHECKS[own]]
    found = flagged(sections, own)
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"
    assert not _errors(sections), describe(_errors(sections))


def test_the_identical_dqn_pair_is_quiet_and_a_q_network_is_read_as_what_it_is(
    make_wb, flagged, describe
) -> None:
    wb = make_wb("builtin:dqn", baseline="builtin:dqn")
    sections = [check(wb) for check in (*OFF_POLICY, coverage, policy_at_init)]
    assert not flagged(sections), describe(flagged(sections))
    cleared = [f for s in sections for f in s.findings if f.status is Status.CLEARED]
    assert len(cleared) == len(sections), describe(f for s in sections for f in s.findings)
    assert not _errors(sections)


def test_the_ppo_pair_skips_the_off_policy_checks_naming_what_is_missing(make_wb, describe) -> None:
    wb = make_wb("builtin:reference")
    findings = [f for check in OFF_POLICY for f in check(wb).findings]
    assert all(f.status is Status.SKIPPED for f in findings), describe(findings)
    summaries = " ".join(f.evidence.summary for f in findings)
    for missing in (
        "compute_td_targets",
        "compute_td_loss",
        "`targets` table",
        "`exploration` table",
        "`gradient_steps` table",
    ):
        assert missing in summaries, summaries


def test_on_policy_math_on_a_value_learner_is_skipped_as_not_applicable(make_wb) -> None:
    from rlaudit.loss import audit

    wb = make_wb("builtin:dqn", baseline="builtin:dqn")
    for check in (audit.advantages, audit.loss_terms):
        (finding,) = check(wb).findings
        assert finding.status is Status.SKIPPED
        assert "not applicable to a value learner" in finding.evidence.summary
    (flow,) = audit.gradient_flow(wb).findings  # gradient flow applies to a Q-network: a missing capability
    assert flow.status is Status.SKIPPED and "not applicable" not in flow.evidence.summary
