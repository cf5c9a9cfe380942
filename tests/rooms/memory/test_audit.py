"""The memory room as a whole (``rlaudit.memory.audit``, its ``CHECKS``): each of its catalog faults is flagged,
the identical pair stays quiet.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

from typing import Any

import pytest

from rlaudit.demo.faults import CATALOG
from rlaudit.engine.subjects import parse_spec
from rlaudit.memory import audit

MEMORY_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "memory")


@pytest.mark.parametrize("fault", MEMORY_FAULTS)
def test_memory_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "memory")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    wb = bench(parse_spec("builtin:reference", env={"RLAUDIT_AA_REPLICA": "1"}))
    for seed in (0, 1):
        sections = audit.audit_all(wb, seed=seed)
        assert not flagged(sections), f"seed {seed}: " + describe(flagged(sections))
