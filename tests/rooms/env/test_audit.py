"""The env room as a whole (``rlaudit.env.audit``, its ``CHECKS``): each of its catalog faults is flagged, the
identical pair stays quiet; the statistical and timing checks stay quiet on other seeds and with a busy core, and a
subject without an environment gets a finding per check.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

from typing import Any

import pytest

from rlaudit.demo.faults import CATALOG
from rlaudit.env import audit
from support.invariants import SUBJECTS_WITHOUT_AN_ENVIRONMENT, audited_without_an_environment
from support.load import aa_spec, busy_core

ENV_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "env")


# ---------------------------------------------------------------------------------------------------------
# Detection matrix and A/A (smoke profile, shared artifact cache)
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ENV_FAULTS)
def test_env_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "env")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    sections = audit.audit_all(bench(aa_spec()))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]


def test_statistical_and_timing_checks_stay_quiet_on_other_seeds(
    bench: Any, flagged: Any, describe: Any
) -> None:
    wb = bench(aa_spec())
    for seed in (1,):
        sections = [
            audit.distributions(wb, seed=seed),
            audit.reset_cost(wb, seed=seed),
            audit.throughput(wb, seed=seed),
        ]
        assert not flagged(sections), f"seed {seed}: " + describe(flagged(sections))


def test_timing_checks_stay_quiet_with_a_busy_core(bench: Any, flagged: Any, describe: Any) -> None:
    # A fresh seed so that every timing probe is measured now, while the busy loop competes for the cores.
    wb = bench(aa_spec())
    with busy_core() as proc:
        sections = [audit.throughput(wb, seed=7), audit.reset_cost(wb, seed=7)]
        assert proc.poll() is None
    assert not flagged(sections), describe(flagged(sections))


@pytest.mark.parametrize("subject", SUBJECTS_WITHOUT_AN_ENVIRONMENT)
def test_a_subject_without_an_environment_gets_a_finding_per_check_naming_what_is_missing(
    make_wb: Any, subject: str
) -> None:
    audited_without_an_environment(audit.audit_all, make_wb, subject)
