"""The logging room as a whole (``rlaudit.logging.audit``, its ``CHECKS``): each of its catalog faults is flagged,
the identical pair stays quiet, and the standard library's ``logging`` is never shadowed by the room.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rlaudit.demo import faults as catalog
from rlaudit.logging import audit as la


def test_stdlib_logging_is_never_shadowed() -> None:
    import logging

    import rlaudit.logging.audit  # noqa: F401

    assert logging.__file__ is not None and "rlaudit" not in logging.__file__
    assert hasattr(logging, "getLogger")
    # Even a script run from inside lib/rlaudit (its directory first on sys.path) gets the standard library.
    lib = Path(la.__file__).resolve().parents[1]
    code = "import logging, logging.handlers; import concurrent.futures; print(logging.getLogger('x').name)"
    out = subprocess.run([sys.executable, "-c", code], cwd=lib, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "x"


# ---------------------------------------------------------------------------------------------------------------
# Detection matrix
# ---------------------------------------------------------------------------------------------------------------

LOGGING_FAULTS = [f.id for f in catalog.CATALOG.values() if f.subsystem == "logging"]


@pytest.mark.parametrize("fault", LOGGING_FAULTS)
def test_logging_fault_is_flagged(make_wb, flagged, describe, fault: str) -> None:
    from rlaudit.logging import audit_all

    sections = audit_all(make_wb(f"builtin:reference+{fault}"))
    found = [f for f in flagged(sections) if f.subsystem == "logging"]
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"


def test_identical_pair_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit.logging import audit_all

    sections = audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]
