"""Gymnasium's own contract check, side by side (env/check-env)."""

from __future__ import annotations

import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair
from rlaudit.env import probes
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section


@check("env/check-env", title="Gymnasium's check_env", probe=probes.check_env, reads=("spaces",))
def check_env(c: Check, pair: Pair) -> Section:
    """Both environments pass Gymnasium's check_env.

    ``gymnasium.utils.env_checker.check_env`` side by side (single environments only).
    """
    res = {s: pair[s].result for s in SIDES}
    if not res["baseline"].get("applicable") and not res["candidate"].get("applicable"):
        return c.section(
            c.finding(
                Status.SKIPPED,
                summary="both environments are vectorized; check_env applies to single environments (the "
                "equivalence and reset checks above cover the vector API)",
                remediation="Nothing to do; expose a single-environment factory to run Gymnasium's checker.",
            )
        )
    rows = [
        {
            "side": s,
            "applicable": res[s].get("applicable"),
            "passed": res[s].get("passed"),
            "error": res[s].get("error"),
            "warnings": len(res[s].get("warnings") or []),
        }
        for s in SIDES
    ]
    new = sorted(set(res["candidate"].get("warnings") or []) - set(res["baseline"].get("warnings") or []))
    failed = res["candidate"].get("applicable") and not res["candidate"].get("passed")
    if failed and res["baseline"].get("passed", False):
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = f"the candidate fails check_env: {res['candidate'].get('error')}"
    elif new:
        status, severity = Status.NOTED, Severity.LOW
        summary = f"the candidate raises {len(new)} new check_env warning(s): " + "; ".join(new[:3])
    else:
        status, severity = Status.CLEARED, Severity.INFO
        summary = "check_env gives the same result for both environments"
    finding = c.finding(
        status,
        severity,
        baseline=rows[0],
        candidate=rows[1],
        summary=summary,
        details={"warnings": {s: res[s].get("warnings") for s in SIDES}},
        remediation="Fix what check_env reports in the candidate (spaces, seeding, return types)."
        if status.is_flag
        else "Nothing to do.",
    )
    return c.section(finding, tables={"check_env": pd.DataFrame(rows)})
