"""The audits' verdicts do not change by accident: findings at the smoke profile against the golden file.

``tests/golden/findings_smoke.json`` holds the id, status and severity of every finding of the built-in pair
and of ``builtin:reference`` against each catalog fault. A change that alters a verdict on purpose rewrites
the file (``.venv/bin/python tests/support/golden.py``) in the same commit and says why. The built-in pair
runs in ``make test`` (its artifacts are shared with the notebooks); every fault runs under ``-m expensive``.
"""

from __future__ import annotations

import pytest

from support import golden


def _compare(name: str) -> None:
    expected = golden.load()
    assert name in expected, f"{name} is not in {golden.GOLDEN}; record it with tests/support/golden.py"
    baseline, candidate = golden.pairs()[name]
    lines = golden.differences(expected[name], golden.audit_pair(baseline, candidate))
    assert not lines, f"{name}: verdicts changed from the golden file\n" + "\n".join(lines)


def test_builtin_pair_matches_the_golden_findings(audit_cache: str) -> None:
    _compare("builtin")


def test_the_golden_file_covers_the_whole_catalog() -> None:
    assert set(golden.load()) == set(golden.pairs())


@pytest.mark.expensive
@pytest.mark.parametrize("fault", sorted(set(golden.pairs()) - {"builtin"}))
def test_fault_pair_matches_the_golden_findings(fault: str, audit_cache: str) -> None:
    _compare(fault)
