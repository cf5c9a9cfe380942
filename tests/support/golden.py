"""Golden findings: the verdicts of the built-in pair and of every catalog fault at the smoke profile.

A refactor must not change what the audits conclude. ``record()`` runs every audit on the built-in pair and on
``builtin:reference`` against each ``builtin:reference+<fault>``, and keeps each finding's id, status and
severity; the tests compare a fresh run with the file. A change that alters a finding on purpose updates the
file in the same commit and says why::

    .venv/bin/python tests/support/golden.py            # rewrite tests/golden/findings_smoke.json
    .venv/bin/python tests/support/golden.py --check    # compare without writing

The file holds no numbers, so no estimate is ever compared. The findings of the checks whose verdict rests on
a timing (:data:`TIMING_CHECKS`) are compared leniently: only their verdict class (:func:`verdict_class`)
must match, where CLEARED and NOTED are one class (quiet), SUSPECT and CONFIRMED another (flagged), and their
severity is not compared. A loaded machine may widen a timing's interval and turn a CLEARED speed into a
NOTED one, or a SUSPECT slowdown into a CONFIRMED one; it must never turn a quiet timing into a flag or back,
and SKIPPED and ERROR stay exact. Every other finding is compared exactly: id, status and severity.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "findings_smoke.json"
BUILTIN_PAIR = ("builtin:reference", "builtin:regressed")


def pairs() -> dict[str, tuple[str, str]]:
    """Every pair the golden file covers: the built-in pair and one pair per catalog fault."""
    from rlaudit.demo.faults import CATALOG

    out = {"builtin": BUILTIN_PAIR}
    for fault in sorted(CATALOG):
        out[fault] = ("builtin:reference", f"builtin:reference+{fault}")
    return out


def verdicts(findings: Iterable[Any]) -> list[list[str]]:
    """``[[id, status, severity], ...]`` sorted by id (then status), the part of a finding the file keeps."""
    return sorted([f.id, f.status.value, f.severity.value] for f in findings)


def audit_pair(baseline: str, candidate: str) -> list[list[str]]:
    """Run every audit on one pair at the smoke profile (in this process's cache) and return its verdicts."""
    return verdicts(audit_findings(baseline, candidate))


def audit_findings(baseline: str, candidate: str, sections: list[Any] | None = None) -> list[Any]:
    """Every finding of every audit on one pair at the smoke profile (in this process's cache); ``sections``,
    when given, receives the rooms' Sections (their tables)."""
    from rlaudit.engine.workbench import Workbench
    from rlaudit.rooms import run_audits

    wb = Workbench(baseline, candidate, profile="smoke")
    try:
        return list(run_audits(wb, sections=sections))
    finally:
        wb.close()


_RUNS: dict[tuple[str, str], tuple[list[Any], list[Any]]] = {}


def audit_run(baseline: str, candidate: str) -> tuple[list[Any], list[Any]]:
    """``(findings, sections)`` of every audit on one pair, run once per test process (the golden comparison
    and the tables' headers read the same run)."""
    if (baseline, candidate) not in _RUNS:
        sections: list[Any] = []
        _RUNS[(baseline, candidate)] = (audit_findings(baseline, candidate, sections), sections)
    return _RUNS[(baseline, candidate)]


def load() -> dict[str, list[list[str]]]:
    return json.loads(GOLDEN.read_text())["pairs"]


# Checks whose verdict rests on measured CPU time (rlaudit.timing), which a loaded machine moves. A finding
# belongs to one when its id is the check's or starts with it and a dash (``env/throughput-reset``).
TIMING_CHECKS = (
    "curriculum/overhead",
    "curriculum/scaling",
    "curriculum/trend",
    "env/reset-cost",
    "env/throughput",
    "spaces/preprocessing",
    "trainer/speed",
)
QUIET = ("CLEARED", "NOTED")
FLAGGED = ("SUSPECT", "CONFIRMED")


def is_timing(finding_id: str) -> bool:
    """True for a finding of one of :data:`TIMING_CHECKS`."""
    return any(finding_id == c or finding_id.startswith(c + "-") for c in TIMING_CHECKS)


def verdict_class(status: str) -> str:
    """``"quiet"`` for CLEARED and NOTED, ``"flagged"`` for SUSPECT and CONFIRMED, else the status itself."""
    return "quiet" if status in QUIET else "flagged" if status in FLAGGED else status


def _key(finding: list[str]) -> tuple[str, ...]:
    """What is compared of one finding: everything, or for a timing its id and verdict class."""
    fid, status, severity = finding
    return (fid, verdict_class(status)) if is_timing(fid) else (fid, status, severity)


def differences(expected: list[list[str]], found: list[list[str]]) -> list[str]:
    """Readable lines for every finding whose verdict differs, appeared or disappeared (timings leniently,
    see the module docstring)."""
    want = {_key(f): f for f in expected}
    got = {_key(f): f for f in found}
    lines = [f"missing:    {' '.join(want[k])}" for k in sorted(set(want) - set(got))]
    lines += [f"unexpected: {' '.join(got[k])}" for k in sorted(set(got) - set(want))]
    return lines


def record(names: Iterable[str] | None = None) -> dict[str, list[list[str]]]:
    chosen = pairs()
    if names:
        chosen = {k: v for k, v in chosen.items() if k in set(names)}
    out = {}
    for name, (baseline, candidate) in chosen.items():
        out[name] = audit_pair(baseline, candidate)
        print(f"{name}: {len(out[name])} findings", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    parser.add_argument("--only", default="", help="comma-separated pair names (default: all)")
    args = parser.parse_args(argv)
    found = record([n for n in args.only.split(",") if n] or None)
    if args.check:
        golden = load()
        bad = 0
        for name, verdict in found.items():
            lines = differences(golden.get(name, []), verdict)
            if lines:
                bad += 1
                print(f"--- {name}\n" + "\n".join(lines))
        return 1 if bad else 0
    data = {"pairs": {}}
    if GOLDEN.exists():
        data = json.loads(GOLDEN.read_text())
    data["pairs"].update(found)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
