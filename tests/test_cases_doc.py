"""Every "case 00N" a finding, remediation, docstring or catalog fault cites is summarized in docs/CASES.md.

The case files are not in the repository; a citation in a report only means something to a user if it can be
looked up there.
"""

from __future__ import annotations

import re

from rlaudit.demo.faults import CATALOG
from support.reports import ROOT

CITATION = re.compile(r"\bcases? (\d{3})\b", re.IGNORECASE)
ROW = re.compile(r"^\| (\d{3}) \|", re.MULTILINE)


def documented() -> set[str]:
    return set(ROW.findall((ROOT / "docs" / "CASES.md").read_text()))


def cited() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    sources = [*(ROOT / "lib" / "rlaudit").rglob("*.py"), *(ROOT / "notebooks").glob("*.ipynb")]
    sources += [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")]
    for path in sources:
        for number in CITATION.findall(path.read_text()):
            found.setdefault(number, set()).add(path.relative_to(ROOT).as_posix())
    for fault in CATALOG.values():
        for number in re.findall(r"\d+", fault.case):  # "001", "000/001", or "-" for none
            found.setdefault(number, set()).add(f"fault {fault.id}")
    return found


def test_every_cited_case_is_summarized() -> None:
    cases = documented()
    assert cases == {"000", "001", "002", "003", "004"}, cases
    missing = {number: sorted(where) for number, where in cited().items() if number not in cases}
    assert not missing, f"cited but not in docs/CASES.md: {missing}"


def test_an_undocumented_citation_is_caught() -> None:
    assert "007" not in documented()
    assert CITATION.findall("the env rebuilt on reset (case 007)") == ["007"]
