"""The audits' verdicts do not change by accident: findings at the smoke profile against the golden file.

``tests/golden/findings_smoke.json`` holds the id, status and severity of every finding of the built-in pair
and of ``builtin:reference`` against each catalog fault. A change that alters a verdict on purpose rewrites
the file (``.venv/bin/python tests/support/golden.py``) in the same commit and says why. The built-in pair
runs in ``make test`` (its artifacts are shared with the notebooks); every fault runs under ``-m expensive``.
"""

from __future__ import annotations

import pytest

from support import golden
from support.invariants import uncovered_clearances


def _compare(name: str) -> None:
    expected = golden.load()
    assert name in expected, f"{name} is not in {golden.GOLDEN}; record it with tests/support/golden.py"
    baseline, candidate = golden.pairs()[name]
    findings, _ = golden.audit_run(baseline, candidate)
    lines = golden.differences(expected[name], golden.verdicts(findings))
    assert not lines, f"{name}: verdicts changed from the golden file\n" + "\n".join(lines)
    # every check on every pair: no clearance of a quantity one side did not measure
    assert not uncovered_clearances(findings), f"{name}: " + "\n".join(uncovered_clearances(findings))


def test_builtin_pair_matches_the_golden_findings(audit_cache: str) -> None:
    _compare("builtin")


def test_every_table_of_the_builtin_pair_names_its_units(audit_cache: str) -> None:
    # "ratio", "ci low", "first", "value" ... mean something only with the table's title or the finding beside
    # them: every header a room shows must say of what, in what unit, which way (rlaudit.display.bare_header)
    import pandas as pd

    from rlaudit.display import bare_header, column_label

    _, sections = golden.audit_run(*golden.pairs()["builtin"])
    assert sections, "the built-in pair's audits returned no sections"
    bare = []
    for section in sections:
        for name, table in section.tables.items():
            frame = table if isinstance(table, pd.DataFrame) else None
            if frame is None and isinstance(table, list | dict):
                frame = pd.DataFrame(table)
            if frame is None:
                continue
            columns = [*(n for n in frame.index.names if n is not None), *frame.columns]
            bare += [f"{section.title} / {name}: {column_label(c)!r}" for c in columns if bare_header(c)]
    assert not bare, "headers with no unit or meaning of their own:\n" + "\n".join(bare)


def test_the_golden_file_covers_the_whole_catalog() -> None:
    assert set(golden.load()) == set(golden.pairs())


@pytest.mark.expensive
@pytest.mark.parametrize("fault", sorted(set(golden.pairs()) - {"builtin"}))
def test_fault_pair_matches_the_golden_findings(fault: str, audit_cache: str) -> None:
    _compare(fault)


def test_a_timing_finding_may_move_only_within_its_verdict_class() -> None:
    speed = ["trainer/speed", "CLEARED", "INFO"]
    assert golden.is_timing("trainer/speed") and golden.is_timing("env/throughput-reset")
    # a loaded machine widens the interval: CLEARED -> NOTED, SUSPECT -> CONFIRMED are tolerated
    assert golden.differences([speed], [["trainer/speed", "NOTED", "LOW"]]) == []
    assert (
        golden.differences(
            [["env/reset-cost", "SUSPECT", "MEDIUM"]], [["env/reset-cost", "CONFIRMED", "HIGH"]]
        )
        == []
    )
    # a quiet timing that becomes a flag, or one that is skipped or fails, is a change
    assert golden.differences([speed], [["trainer/speed", "SUSPECT", "MEDIUM"]]) == [
        "missing:    trainer/speed CLEARED INFO",
        "unexpected: trainer/speed SUSPECT MEDIUM",
    ]
    assert golden.differences([speed], [["trainer/speed", "ERROR", "HIGH"]])
    assert golden.differences([speed], [["trainer/speed", "SKIPPED", "INFO"]])


def test_every_other_finding_is_compared_exactly() -> None:
    learning = ["trainer/learning", "CLEARED", "INFO"]
    assert not golden.is_timing("trainer/learning") and not golden.is_timing("trainer/speedy")
    assert golden.differences([learning], [["trainer/learning", "NOTED", "LOW"]])
    assert golden.differences([learning], [["trainer/learning", "CLEARED", "LOW"]])
    assert golden.differences([learning], []) == ["missing:    trainer/learning CLEARED INFO"]


def test_every_timing_check_has_findings_in_the_golden_file() -> None:
    ids = {finding[0] for findings in golden.load().values() for finding in findings}
    for check in golden.TIMING_CHECKS:
        assert any(i == check or i.startswith(check + "-") for i in ids), f"{check} is in no golden pair"
