"""Attributing one pair: gather its suspects, run the search, and the benchmark of that search.

:func:`attribute` is what the summary notebook calls; :func:`bench_attribution` is ``rlaudit bench
attribution`` (the search on the built-in pair next to a full one-factor sweep).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlaudit.attribution.arms import DEFAULT_DELTA, Attribution
from rlaudit.attribution.search import Search
from rlaudit.attribution.suspects import gather_suspects
from rlaudit.engine.workbench import Workbench
from rlaudit.findings import SUBSYSTEMS, Finding
from rlaudit.metrics import Metric


def attribute(
    wb: Workbench,
    findings: Sequence[Finding],
    *,
    variants: str = "",
    changes: str = "auto",
    metric: Metric | str | None = None,
    delta: float = DEFAULT_DELTA,
    budget: int | None = None,
    seed: int = 0,
) -> Attribution:
    """Gather suspects from the audits' findings, the config diff, named variants and code changes, and run
    the search.

    Args:
        wb: The workbench of the pair.
        findings: Every audit finding (their evidence orders the search).
        variants: Named variant subjects, ``"name=spec, name@subsystem=spec"``.
        changes: ``"auto"`` to search the code changes between two versions of one source, ``"off"`` not to
            (:func:`~rlaudit.attribution.suspects.change_suspects`).
        metric: The primary metric; None (the default) is the workbench's, ``wb.metric``.
        delta: The share of a gap that counts as meaningful.
        budget: Training runs the search may use; None takes the profile's.
        seed: Seeds the bootstrap intervals.
    """
    suspects, notes = gather_suspects(
        wb, findings, variants, changes=changes, delta=delta, budget=budget, seed=seed
    )
    search = Search(wb, suspects, metric=metric, delta=delta, budget=budget, seed=seed)
    result = search.run()
    result.notes = notes + result.notes
    return result


def bench_attribution(quick: bool = False) -> list[dict[str, Any]]:
    """The search on the built-in pair next to the full one-factor sweep: runs used and the top causes."""
    from rlaudit import rooms as audits

    profile = "smoke" if quick else "standard"
    with Workbench("builtin:reference", "builtin:regressed", profile=profile) as wb:
        findings = audits.run_audits(wb, list(SUBSYSTEMS))
        result = attribute(wb, findings)
    top = {m: (rows[0]["arm"] if rows else None) for m, rows in result.ranking.items()}

    def runs_against_full_sweep(kind: str) -> dict[str, Any]:
        """Runs the search spent (candidate) next to what the one-factor sweep would (baseline)."""
        spent, sweep = result.spent[kind], result.spent[f"full_sweep_{kind}"]
        return {
            "name": f"attribution.{kind}",
            "value": spent,
            "unit": "runs",
            "baseline": sweep,
            "candidate": spent,
            "ratio": spent / max(1, sweep),
        }

    return [
        runs_against_full_sweep("runs"),
        runs_against_full_sweep("variant_runs"),
        {"name": "attribution.seconds", "value": result.spent["seconds"], "unit": "s"},
        {"name": "attribution.top_causes", "value": 0, "unit": "", "top": top},
    ]
