"""The registry of audits: which function audits each subsystem, and running them without notebooks.

Each room ``rlaudit.<subsystem>`` exposes ``audit_all(wb) -> list[Section]``: every check its notebook
runs, in the notebook's order. ``rlaudit audit`` (and the tests' fault matrix) call them through
:func:`run_audits`, which turns a missing room, a failed import or a crashing audit into an ERROR finding so
that one broken room never hides the others' verdicts.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rlaudit.findings import SUBSYSTEMS, Finding, notebook_name

AUDITS: dict[str, str] = {subsystem: f"rlaudit.{subsystem}:audit_all" for subsystem in SUBSYSTEMS}
"""Subsystem -> ``"module:function"`` of the function that runs all of its audits."""


def _unavailable(subsystem: str, message: str, error: BaseException | None = None) -> Finding:
    finding = Finding.error(
        id=f"{subsystem}/audit-unavailable",
        subsystem=subsystem,
        hypothesis=f"The {subsystem} audits can run",
        side="audit",
        error=error if error is not None else RuntimeError(message),
    )
    finding.evidence.summary = message
    if error is not None:
        finding.evidence.details["traceback"] = "".join(traceback.format_exception(error))
    finding.remediation = (
        f"Implement `audit_all(wb) -> list[Section]` in rlaudit/{subsystem}/ (see docs/ARCHITECTURE.md, "
        "section 5), or fix the import error in the traceback."
    )
    return finding


def load_audit(subsystem: str) -> Callable[[Any], Any] | Finding:
    """The ``audit_all`` function of a subsystem, or an ERROR finding saying why it is not available.

    Raises:
        ValueError: ``subsystem`` is not one of the fourteen.
    """
    if subsystem not in AUDITS:
        raise ValueError(f"unknown subsystem {subsystem!r}; expected one of {', '.join(AUDITS)}")
    module_name, func_name = AUDITS[subsystem].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name in (module_name, "rlaudit"):
            return _unavailable(subsystem, f"audit not available: module {module_name} has no {func_name}")
        return _unavailable(subsystem, f"audit not available: importing {module_name} failed: {exc}", exc)
    except Exception as exc:  # a room with a bug must not stop the other rooms
        return _unavailable(subsystem, f"audit not available: importing {module_name} failed: {exc}", exc)
    func = getattr(module, func_name, None)
    if not callable(func):
        return _unavailable(subsystem, f"audit not available: module {module_name} has no {func_name}")
    return func


def _collect(result: Any, subsystem: str, sections: list[Any] | None = None) -> list[Finding]:
    from rlaudit.notebook import Section

    items: Iterable[Any] = [result] if isinstance(result, Section | Finding) else (result or [])
    findings: list[Finding] = []
    for item in items:
        if isinstance(item, Section):
            findings.extend(item.findings)
            if sections is not None:
                sections.append(item)
        elif isinstance(item, Finding):
            findings.append(item)
        else:
            raise TypeError(
                f"rlaudit.{subsystem}.audit_all returned a {type(item).__name__}; expected Sections or Findings"
            )
    return findings


def run_audits(
    wb: Any,
    subsystems: Sequence[str] | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    sections: list[Any] | None = None,
) -> list[Finding]:
    """Run every audit of the given subsystems on one workbench and return all findings.

    Args:
        wb: The workbench (``rlaudit.engine.workbench.Workbench``) of the pair under investigation.
        subsystems: Which rooms to run, in order (default: all fourteen).
        progress: Called with one line of text after each room (e.g. ``print``).
        sections: When given, receives every room's Sections (their tables and figures), in order.

    Returns:
        The findings of all rooms, each tagged with its notebook name (``07_optimizer``); a room that is
        missing, fails to import, or raises yields one ERROR finding instead.
    """
    import time

    chosen = list(subsystems) if subsystems else list(SUBSYSTEMS)
    unknown = [s for s in chosen if s not in AUDITS]
    if unknown:
        raise ValueError(f"unknown subsystem(s) {', '.join(unknown)}; expected any of {', '.join(AUDITS)}")
    findings: list[Finding] = []
    for subsystem in chosen:
        started = time.perf_counter()
        audit = load_audit(subsystem)
        if isinstance(audit, Finding):
            found = [audit]
        else:
            try:
                found = _collect(audit(wb), subsystem, sections)
            except Exception as exc:
                error = Finding.error(
                    f"{subsystem}/audit-failed",
                    subsystem,
                    f"The {subsystem} audits run to the end",
                    "audit",
                    exc,
                )
                error.evidence.details["traceback"] = traceback.format_exc()
                found = [error]
        for finding in found:
            finding.notebook = finding.notebook or notebook_name(subsystem)
        findings.extend(found)
        if progress is not None:
            worst = min((f.status for f in found), key=lambda s: s.rank, default=None)
            mark = f"{worst.mark} {worst.value}" if worst else "no findings"
            progress(
                f"{subsystem:<14} {len(found):>3} findings, worst {mark} ({time.perf_counter() - started:.1f} s)"
            )
    return findings
