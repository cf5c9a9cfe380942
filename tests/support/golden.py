"""Golden findings: the verdicts of the built-in pair and of every catalog fault at the smoke profile.

A refactor must not change what the audits conclude. ``record()`` runs every audit on the built-in pair and on
``builtin:reference`` against each ``builtin:reference+<fault>``, and keeps each finding's id, status and
severity; the tests compare a fresh run with the file. A change that alters a finding on purpose updates the
file in the same commit and says why::

    .venv/bin/python tests/support/golden.py            # rewrite tests/golden/findings_smoke.json
    .venv/bin/python tests/support/golden.py --check    # compare without writing

Checks whose verdict rests on a timing are listed per pair under ``"timing"``: their status is compared only
as flagged or not (a loaded machine may turn a NOTED timing into CLEARED), never ignored.
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
    from rlaudit.audits import run_audits
    from rlaudit.workbench import Workbench

    wb = Workbench(baseline, candidate, profile="smoke")
    try:
        return verdicts(run_audits(wb))
    finally:
        wb.close()


def load() -> dict[str, list[list[str]]]:
    return json.loads(GOLDEN.read_text())["pairs"]


def differences(expected: list[list[str]], found: list[list[str]]) -> list[str]:
    """Readable lines for every finding whose verdict differs, appeared or disappeared."""
    want = {(i, s, v) for i, s, v in expected}
    got = {(i, s, v) for i, s, v in found}
    lines = [f"missing:    {' '.join(x)}" for x in sorted(want - got)]
    lines += [f"unexpected: {' '.join(x)}" for x in sorted(got - want)]
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
