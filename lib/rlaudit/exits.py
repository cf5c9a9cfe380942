"""Exit codes of ``rlaudit report`` and ``rlaudit audit``: one per outcome, so that a CI job can act on them.

The codes, most urgent first (when several apply, the first one listed wins):

- 0: success (nothing at or above the ``--fail-on`` level);
- 2: bad input (an unknown option, subsystem or profile, a missing pair file): nothing ran;
- 3: a notebook failed to execute or saved no findings (``rlaudit report`` only): the report is incomplete;
- 4: a check ended in ERROR: it could not run on this pair (a candidate that never trains gets here);
- 5: a confirmed regression: a CONFIRMED finding, an audit's or a cause the summary decided (with
  ``--fail-on confirmed`` or ``suspect``);
- 6: a suspected regression: a SUSPECT finding and nothing CONFIRMED (with ``--fail-on suspect``).

``--fail-on`` chooses how far the exit code looks: ``none`` (only 2 and 3), ``error`` (the default: 4 too),
``confirmed`` (5 too: "fail this job when the candidate regresses"), ``suspect`` (6 too). An unexpected crash
of rlaudit itself exits 1, as any Python program does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlaudit.findings import Finding

OK = 0
BAD_INPUT = 2
NOTEBOOK_FAILED = 3
ERROR_FINDINGS = 4
CONFIRMED_REGRESSION = 5
SUSPECTED_REGRESSION = 6

FAIL_ON = ("none", "error", "confirmed", "suspect")
"""The levels ``--fail-on`` takes, each failing on everything the one before it does, and more."""
DEFAULT_FAIL_ON = "error"

HELP = """exit codes:
  0  success: nothing at or above the --fail-on level
  2  bad input (unknown option, subsystem or profile; missing pair file): nothing ran
  3  a notebook failed to execute or saved no findings (report only)
  4  a check ended in ERROR (it could not run on this pair); not with --fail-on none
  5  a confirmed regression: a CONFIRMED finding or decided cause (--fail-on confirmed or suspect)
  6  a suspected regression: SUSPECT findings, nothing CONFIRMED (--fail-on suspect)
when several apply, the lowest non-zero code above wins; a crash of rlaudit itself exits 1"""


def exit_code(
    findings: Iterable[Finding], *, fail_on: str = DEFAULT_FAIL_ON, notebooks_failed: int = 0
) -> int:
    """The exit code of a report or an audit (see the module docstring for the table).

    Args:
        findings: Every finding of the run (the summary's own included: a decided cause is CONFIRMED).
        fail_on: ``none``, ``error``, ``confirmed`` or ``suspect`` (:data:`FAIL_ON`).
        notebooks_failed: Notebooks that did not execute or saved no findings.

    Raises:
        ValueError: ``fail_on`` is not one of :data:`FAIL_ON`.
    """
    if fail_on not in FAIL_ON:
        raise ValueError(f"--fail-on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    if notebooks_failed:
        return NOTEBOOK_FAILED
    level = FAIL_ON.index(fail_on)
    statuses = {f.status.value for f in findings}
    if level >= FAIL_ON.index("error") and "ERROR" in statuses:
        return ERROR_FINDINGS
    if level >= FAIL_ON.index("confirmed") and "CONFIRMED" in statuses:
        return CONFIRMED_REGRESSION
    if level >= FAIL_ON.index("suspect") and "SUSPECT" in statuses:
        return SUSPECTED_REGRESSION
    return OK


def describe(code: int) -> str:
    """One line saying what an exit code means, for the last line a command prints."""
    return {
        OK: "exit 0: success",
        BAD_INPUT: "exit 2: bad input",
        NOTEBOOK_FAILED: "exit 3: a notebook failed to execute or saved no findings",
        ERROR_FINDINGS: "exit 4: a check ended in ERROR",
        CONFIRMED_REGRESSION: "exit 5: a confirmed regression (CONFIRMED findings)",
        SUSPECTED_REGRESSION: "exit 6: a suspected regression (SUSPECT findings)",
    }.get(code, f"exit {code}")
