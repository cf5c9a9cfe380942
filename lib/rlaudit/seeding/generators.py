"""Hidden dependence on global generators: a seeded run that changes when Python's, NumPy's or torch's
global generator is moved draws from global state instead of its seed."""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.seeding.common import (
    compare_replicas,
    describe_difference,
    errors_finding,
    replicas_pair,
    side_replicas,
)


def rng_verdict(inproc: dict[str, Any]) -> tuple[str, list[str], dict[str, Any]]:
    """One side's dependence on global generators from its in-worker replicas.

    Returns:
        ``(verdict, leaks, perturbed)``: ``independent`` (moving every global generator changes nothing),
        ``nondeterministic`` (two same-seed calls already differ), or ``depends`` with the generators that
        leak in; and the comparison of the perturbed replica with the canonical one.
    """
    base = inproc["same"]
    pert = compare_replicas(base, inproc["perturbed"])
    if pert["identical"]:
        return "independent", [], pert
    if "repeat" in inproc and not compare_replicas(base, inproc["repeat"])["identical"]:
        return "nondeterministic", [], pert
    leaks = [
        g
        for g in ("python", "numpy", "torch")
        if f"perturbed_{g}" in inproc and not compare_replicas(base, inproc[f"perturbed_{g}"])["identical"]
    ]
    return "depends", leaks, pert


@check("seeding/global-rng", title="Hidden dependence on global generators", needs=replicas_pair)
def global_rng(c: Check, pair: Pair) -> Section:
    """Seeded calls do not depend on Python's, NumPy's or torch's global generator state.

    Perturb the global generators before a seeded replica in the worker; name the generator that leaks in.
    """
    reps = side_replicas(c, pair)
    if (f := errors_finding(c, reps)) is not None:
        return c.section(f)
    verdicts = {s: rng_verdict(reps[s]["in_process"]) for s in SIDES}
    table = pd.DataFrame(
        [
            {
                "side": s,
                "verdict": verdicts[s][0],
                "generators that leak in": ", ".join(verdicts[s][1]) or "—",
                "what changed when perturbed": describe_difference(verdicts[s][2]),
            }
            for s in SIDES
        ]
    )
    (vb, lb, _), (vc, lc, pc) = verdicts["baseline"], verdicts["candidate"]
    if vc == "depends" and (vb != "depends" or set(lc) - set(lb)):
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = (
            f"the candidate's seeded run changes when the global {', '.join(lc) or 'generators'} "
            f"generator{'s' if len(lc) != 1 else ''} are moved ({describe_difference(pc)}): it draws from "
            "global state instead of its seed"
        )
        remediation = "Draw from generators created from the run's seed (np.random.default_rng(seed), a torch.Generator)."
    elif vc == "nondeterministic" and vb != "nondeterministic":
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = (
            "the candidate's seeded run differs between two calls with the same seed in one process even "
            "without touching the global generators: it reseeds from entropy (e.g. torch.seed()) or reads "
            "other hidden state"
        )
        remediation = "Replace entropy-based reseeding with seeding from the run's seed."
    elif vc == vb == "independent":
        status, severity = Status.CLEARED, Severity.INFO
        summary = (
            "moving Python's, NumPy's and torch's global generators changes nothing in either seeded run"
        )
        remediation = "Nothing to do."
    else:
        status, severity = Status.NOTED, Severity.LOW
        summary = f"baseline: {vb}; candidate: {vc} (no new dependence in the candidate)"
        remediation = "Consider seeding the baseline's hidden generators too."
    finding = c.finding(
        status,
        severity,
        baseline=vb if not lb else f"{vb}: {', '.join(lb)}",
        candidate=vc if not lc else f"{vc}: {', '.join(lc)}",
        summary=summary,
        details={"table": table.to_dict("records")},
        remediation=remediation,
    )
    return c.section(finding, tables={"global generators": table})
