"""The summary room (notebook 15): attribution experiments, the executive summary, and their figures.

The audits' findings say what differs; the rest of :mod:`rlaudit.attribution` measures which differences
explain the gap. This module turns both into what the report leads with: the primary causes with their measured effect
and interval, secondary issues, red herrings (flagged differences that measurably do not matter), the systems
verified as correct, the order in which to fix things, and how much of the gap fixing them all should recover.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.attribution.arms import DEFAULT_DELTA, Attribution, ci_label
from rlaudit.attribution.echoes import Echo, echo_only, recheck
from rlaudit.attribution.figures import curves_plot, forest_plot, sps_waterfall
from rlaudit.attribution.pair import attribute
from rlaudit.attribution.ranking import Cause, attribution_findings, gap_label, overlap, owner, rank_causes
from rlaudit.display import figure_png
from rlaudit.engine.io import atomic_write_bytes, atomic_write_json
from rlaudit.engine.workbench import Workbench
from rlaudit.evidence import settle_phrase
from rlaudit.findings import SUBSYSTEMS, Finding, Status
from rlaudit.notebook import Section

ATTRIBUTION_FILE = "attribution.json"


def _pct(x: float | None) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.0%}"


def _seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def _ci(e: dict[str, Any]) -> str:
    """``95% CI 12%..40%``, naming the family of arms the interval accounts for (Holm) when it has one."""
    return f"{ci_label(e.get('family'))} {_pct(e['low'])}..{_pct(e['high'])}"


def _effect_text(e: dict[str, Any]) -> str:
    text = f"{_pct(e['point'])} ({_ci(e)}, {_seeds(int(e['n']))})"
    return f"{text}, {e['incomparable']}" if e.get("incomparable") else text


def _value(x: float | None) -> str:
    from rlaudit.display import format_number

    return "n/a" if x is None or not np.isfinite(x) else format_number(x)


@dataclass
class Investigation:
    """Attribution results plus the executive summary built from them and the audits' findings."""

    result: Attribution | None
    causes: list[Cause]
    summary: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def verified(findings: Sequence[Finding]) -> list[str]:
    """Subsystems verified as correct: every one of their findings is CLEARED (a changed config value counts
    for the subsystem that owns it, :func:`~rlaudit.attribution.ranking.owner`). A NOTED finding, even an
    inconclusive comparison, or a SKIPPED or ERROR check leaves a subsystem unverified."""
    by_sub: dict[str, list[Finding]] = {}
    for f in findings:
        by_sub.setdefault(owner(f), []).append(f)
    return sorted(
        (s for s, fs in by_sub.items() if s in SUBSYSTEMS and all(f.status is Status.CLEARED for f in fs)),
        key=SUBSYSTEMS.index,
    )


def _recovery(result: Attribution) -> dict[str, dict[str, Any]]:
    """Per metric, how much of the gap fixing every cause found is expected to recover."""
    recovery: dict[str, dict[str, Any]] = {}
    together = result.together.get("effects") or {}
    composable = [s for s in result.suspects if s.composable]
    whole = next(
        (a for a in result.arms if a.suspects and composable and len(a.suspects) == len(composable)), None
    )
    for m in result.metrics:
        if m in together:
            recovery[m] = {**together[m], "arm": "the causes found, restored together"}
        elif whole is not None and m in result.effects.get(whole.name, {}):
            e = result.effects[whole.name][m]
            recovery[m] = {
                "point": e.point,
                "low": e.low,
                "high": e.high,
                "n": e.n,
                "family": e.family,
                "incomparable": e.incomparable,
                "arm": "every suspect restored together",
            }
    return recovery


def _seeds_to_decide(rows: list[dict[str, Any]]) -> str:
    """``", and about 8 seeds per arm would"``: the most any of ``rows`` needs (``needed``, when known)."""
    needed = [r["needed"] for r in rows if r.get("needed")]
    return f", and {settle_phrase(max(needed), per='arm', verb='')}" if needed else ""


def _overlap_sentence(result: Attribution, metric: str) -> str:
    """One sentence when the named singles overlap (:func:`overlap`): they are not added up; the total is their
    joint restore."""
    found = overlap(result, metric)
    if found is None:
        return ""
    head = (
        f" The single restores named add up to {_pct(found['singles'])} of {gap_label(metric)}, more than all "
        "of it: they overlap (undoing one also removes part of what another costs), so they are not added up"
    )
    together = found["together"]
    if together is None:
        return head + "; their joint restore was not measured, so the total is not established."
    return head + f"; restored together they restore {_pct(together['point'])} ({_ci(together)})."


def _undecided_text(rows: list[dict[str, Any]]) -> str:
    """``restore lr 24% (95% CI over 6 arms (Holm) -4%..52%, 1 seed); ...`` for undecided singles."""
    return "; ".join(f"{r['arm']} {_effect_text(r)}" for r in rows)


def _gap_sentence(result: Attribution, metric: str, recovery: dict[str, dict[str, Any]]) -> str:
    """One sentence per metric: the gap, its primary cause, the reverse check, the others, what stays
    undecided, whether the singles overlap, the recovery."""
    gap = result.gaps.get(metric, {})
    label = result.label(metric)
    if not gap.get("measurable"):
        return gap.get("note") or f"No measurable {label} gap between baseline and candidate."
    head = f"{label}: baseline {_value(gap.get('baseline'))}, candidate {_value(gap.get('candidate'))}."
    ranking = result.ranking.get(metric, [])
    singles = [r for r in ranking if r["single"] and r["verdict"] == "cause"]
    # a share timed at too different loads is undecided for a reason more seeds do not settle: said apart
    incomparable = [r for r in ranking if r["single"] and r.get("incomparable")]
    undecided = [
        r for r in ranking if r["single"] and r["verdict"] == "undecided" and not r.get("incomparable")
    ]
    if singles:
        top = singles[0]
        head += (
            f" Primary cause: {top['arm']} ({', '.join(top['subsystems'])}) restores "
            f"{_pct(top['point'])} of {gap_label(metric)} ({_ci(top)})."
        )
        inj = result.injected.get(top["suspects"][0], {}).get(metric)
        if inj is not None:
            head += (
                f" Put alone into the baseline, it reproduces {_pct(inj.point)} of it "
                f"({_pct(inj.low)}..{_pct(inj.high)})."
            )
        if len(singles) > 1:
            head += " Also: " + "; ".join(f"{r['arm']} {_pct(r['point'])}" for r in singles[1:4]) + "."
        minor = [r for r in ranking if r["single"] and r["verdict"] == "minor"]
        if minor:
            head += (
                " Smaller but measurable: "
                + "; ".join(
                    f"{r['arm']} {_pct(r['point'])} ({_pct(r['low'])}..{_pct(r['high'])})" for r in minor[:3]
                )
                + "."
            )
        if undecided:
            head += (
                " Undecided, so not named as causes: "
                + _undecided_text(undecided[:3])
                + "; their intervals, which account for every arm tried, decide neither way"
                + _seeds_to_decide(undecided[:3])
                + "."
            )
    else:
        if undecided:
            head += (
                " No single change is shown to restore a meaningful share at the seeds spent: "
                + _undecided_text(undecided[:3])
                + "; the runs vary too much from seed to seed to decide"
                + _seeds_to_decide(undecided[:3])
                + "."
            )
        elif not incomparable:
            head += " No single change restores a meaningful share on its own."
    if incomparable:
        head += (
            f" Undecided, so not named as causes: {len(incomparable)} "
            f"{'share' if len(incomparable) == 1 else 'shares'} ("
            + ", ".join(f"{r['arm']} {_pct(r['point'])}" for r in incomparable[:3])
            + (", ..." if len(incomparable) > 3 else "")
            + f") measured but {incomparable[0]['incomparable']}."
        )
    head += _overlap_sentence(result, metric)
    if metric in recovery:
        r = recovery[metric]
        where = f"{_pct(r['point'])} of it ({_ci(r)})"
        if r["point"] > 1.0:  # more than the gap is seed noise or overlap: the whole gap, not more
            where = f"all of it (measured {_pct(r['point'])}, {_ci(r)}; more than the gap is within noise)"
        if r.get("incomparable"):
            head += f" What fixing them all recovers is not established: {_pct(r['point'])} measured, {r['incomparable']}."
        elif r["low"] > 0.0:
            head += f" Fixing them all is expected to recover {where}."
        else:
            head += f" What fixing them all recovers is not established: {where}."
    return head


def budget_sentence(spent: Mapping[str, Any]) -> str:
    """What the search trained against a one-factor sweep, in one sentence (see tests/test_summary.py)."""
    fewest = spent.get("min_sweep_variant_runs")
    at_least = (
        f" ({fewest} at {_seeds(spent.get('seeds_per_arm_min', 1))} per arm)" if fewest is not None else ""
    )
    return (
        f"Attribution trained {spent['variant_runs']} runs on variants, where a one-factor sweep at the "
        f"{_seeds(spent['seeds_per_arm_max'])} the baseline and candidate ran would train "
        f"{spent['full_sweep_variant_runs']}{at_least}. With the baseline and candidate: {spent['runs']} runs, "
        f"{spent['cached_runs']} of them reused from the audits' cache, against the sweep's "
        f"{spent['full_sweep_runs']}."
    )


def executive_summary(
    findings: list[Finding], result: Attribution | None, delta: float, echoes: Sequence[Echo] | None = None
) -> dict[str, Any]:
    """The investigation's conclusions as plain data (rendered in the notebook and in reports/index.html).

    Args:
        findings: Every notebook's findings and attribution's own (``summary/``).
        result: The attribution experiments, or None when they did not run.
        delta: The share of a gap that counts as meaningful.
        echoes: Subsystems flagged only as echoes of a measured cause, rechecked on the runs that restore it
            (:func:`rlaudit.attribution.echoes.recheck`); None: found from the findings alone, not rechecked.

    Returns:
        ``title``, ``summary`` (the sentences joined), ``sentences``, ``causes`` (one row per ranked
        subsystem), ``cleared`` (verified as correct), ``red_herrings``, ``order`` (of fixes), ``recovery``
        (per metric) and ``attribution`` (the experiments as data).
    """
    causes = rank_causes(findings, result, delta)
    label = result.label if result is not None else str
    rows = []
    for rank, c in enumerate(causes, start=1):
        remediation = next(
            (f.remediation for f in sorted(c.findings, key=lambda f: f.status.rank) if f.remediation), ""
        )
        rows.append(
            {
                "rank": rank,
                "subsystem": c.subsystem,
                "verdict": c.verdict,
                **{f"restores {label(m)} gap": _effect_text(e) for m, e in c.effects.items()},
                "audit evidence": "; ".join(f.headline for f in c.findings[:2]),
                "remediation": remediation,
            }
        )
    if echoes is None:
        echoes = [Echo(sub, up, ids, dict.fromkeys(ids)) for sub, (up, ids) in echo_only(causes).items()]
    set_aside = {e.subsystem: e for e in echoes if not e.still_flagged}  # measured, or not yet rechecked
    for r in rows:  # the ranked table says what the sentences say, and the fix order leaves them out
        if (e := set_aside.get(r["subsystem"])) is not None:
            cause = " and ".join(e.upstream)
            r["verdict"] = f"echo of {cause}" if e.cleared else f"flagged (echo of {cause}?)"
    order = [r["subsystem"] for r in rows if r["verdict"] in ("primary", "secondary", "minor")] + [
        r["subsystem"] for r in rows if r["verdict"] in ("flagged (unmeasured)", "undecided")
    ]
    flagged = {c.subsystem for c in causes}
    cleared = [s for s in verified(findings) if s not in flagged]
    recovery = _recovery(result) if result is not None else {}
    sentences = [_gap_sentence(result, m, recovery) for m in result.metrics] if result is not None else []
    red = [r["subsystem"] for r in rows if r["verdict"] == "red herring"]
    if red:
        sentences.append(
            "Red herrings (flagged, but restoring them measurably does not matter): " + ", ".join(red) + "."
        )
    symptoms = [r["subsystem"] for r in rows if r["verdict"] == "symptom"]
    if symptoms:
        sentences.append(
            "Flagged for a gap every cause produces (the symptom attribution explains, not a cause): "
            + ", ".join(symptoms)
            + "."
        )
    if cleared:
        sentences.append("Verified as correct (every check cleared): " + ", ".join(cleared) + ".")
    if order:
        sentences.append("Fix in this order: " + " → ".join(dict.fromkeys(order)) + ".")
    sentences.extend(e.sentence() for e in echoes)
    if result is not None:
        s = result.spent
        sentences.append(budget_sentence(s))
        sentences.extend(result.notes)
        if result.together.get("note"):
            sentences.append(result.together["note"])
    return {
        "title": "Executive summary",
        "summary": " ".join(sentences),
        "sentences": sentences,
        "causes": rows,
        "cleared": cleared,
        "red_herrings": red,
        "order": list(dict.fromkeys(order)),
        "recovery": recovery,
        "attribution": result.to_dict() if result is not None else None,
    }


def investigate(
    wb: Workbench,
    findings: list[Finding],
    *,
    variants: str = "",
    changes: str = "auto",
    delta: float = DEFAULT_DELTA,
    budget: int = 0,
    seed: int = 0,
) -> Investigation:
    """Run the attribution experiments on the pair's primary metric (``wb.metric``) and steps per second,
    and build the executive summary.

    Args:
        wb: The workbench of the pair (its primary metric and profile size the experiments).
        findings: Every notebook's findings (the audits' evidence orders the search).
        variants: Named variant subjects, ``"name=spec, ..."`` (``name@subsystem=spec`` to tag a subsystem).
        changes: ``"auto"`` to search the code changes between two versions of one source, ``"off"`` not to.
        delta: The share of a gap that counts as meaningful.
        budget: Training runs attribution may use; 0 takes the profile's.
        seed: Seeds the bootstrap intervals.
    """
    result = attribute(
        wb, findings, variants=variants, changes=changes, delta=delta, budget=budget or None, seed=seed
    )
    own = attribution_findings(result, delta)
    causes = rank_causes([*findings, *own], result, delta)
    summary = executive_summary([*findings, *own], result, delta, echoes=recheck(wb, result, causes))
    _add_code_changes(summary, wb, result)
    return Investigation(result=result, causes=causes, summary=summary, findings=own)


def _add_code_changes(summary: dict[str, Any], wb: Workbench, result: Attribution) -> None:
    """The change search's culprits in the executive summary: its sentences (commit, file, function, hunk,
    shares, the reverse check, what it spent), its payload (``summary["changes"]``, with each culprit's diff),
    and each ranked cause's ``changes``, the ``{commit, path, hunk, function}`` of the hunks behind it."""
    from rlaudit.attribution import code_changes as change_search
    from rlaudit.attribution import culprit_report as change_report

    code = change_search.last_result(wb)
    if code is None:
        return
    summary["sentences"] = [*summary["sentences"], *change_report.summary_sentences(code)]
    summary["summary"] = " ".join(summary["sentences"])
    summary["changes"] = change_report.payload(code)
    by_subsystem = change_search.causes_changes(result)
    for row in summary["causes"]:
        row["changes"] = by_subsystem.get(row["subsystem"], [])


# ------------------------------------------------------------------------------------------------------------
# Sections and the saved file
# ------------------------------------------------------------------------------------------------------------


def attribution_section(inv: Investigation, delta: float = DEFAULT_DELTA) -> Section:
    """The experiments: the gaps, the arms, what each restores, the search log and the figures (the forest
    plot, the learning curves of the primary metric, the throughput waterfall)."""
    result = inv.result
    if result is None:
        return Section(title="Attribution", notes=["attribution did not run"])
    tables = {
        "gaps": pd.DataFrame(
            [
                {
                    "metric": result.label(m),
                    "baseline (mean over seeds)": g.get("baseline"),
                    "candidate (mean over seeds)": g.get("candidate"),
                    "candidate worse by": g.get("worse_by"),
                    "95% CI low (candidate worse by)": g.get("low"),
                    "95% CI high (candidate worse by)": g.get("high"),
                    "attributed": bool(g.get("measurable")),
                }
                for m, g in result.gaps.items()
            ]
        )
    }
    for m, rows in result.ranking.items():
        tables[f"gap restored: {result.label(m)}"] = pd.DataFrame(
            [
                {
                    "arm": r["arm"],
                    "subsystems": ", ".join(r.get("subsystems") or []),
                    "verdict": r["verdict"],
                    "share of the gap restored": r["point"],
                    "95% CI low (share of the gap)": r["low"],
                    "95% CI high (share of the gap)": r["high"],
                    "seeds": r.get("n"),
                    "seeds that would decide": r.get("needed") if r["verdict"] == "undecided" else None,
                    "not comparable": r.get("incomparable") or "",
                }
                for r in rows
            ]
        )
    tables["arms"] = pd.DataFrame(
        [
            {
                "arm": a.name,
                "runs": a.n,
                "target": str(a.target),
                "overrides": ", ".join(a.overrides),
                "errors": "; ".join(a.errors()),
            }
            for a in result.arms
        ]
    )
    if result.injected:
        tables["reverse check: the change alone, injected into the baseline"] = pd.DataFrame(
            [
                {
                    "suspect": name,
                    "metric": m,
                    "share of the gap reproduced": e.point,
                    "95% CI low (share of the gap)": e.low,
                    "95% CI high (share of the gap)": e.high,
                    "seeds": e.n,
                }
                for name, per in result.injected.items()
                for m, e in per.items()
            ]
        )
    tables["spent"] = pd.DataFrame([result.spent])
    if result.log:
        tables["search log"] = pd.DataFrame(
            {"step": range(1, len(result.log) + 1), "what ran and why": result.log}
        )
    figures = {
        "gap restored (forest plot)": forest_plot(result, delta),
        "learning curves": curves_plot(result),
        "SPS waterfall": sps_waterfall(result),
    }
    return Section(
        title="Which changes explain the gap?",
        findings=inv.findings,
        tables=tables,
        figures=figures,
        notes=[g["note"] for g in result.gaps.values() if g.get("note")] + result.notes,
    )


def executive_section(inv: Investigation) -> Section:
    """The executive summary's sentences, above the ranked subsystems (one row each: verdict, measured
    shares, the two strongest audit findings, one remediation)."""
    rows = pd.DataFrame(inv.summary.get("causes", []))
    return Section(
        title="Executive summary",
        findings=[],
        tables={"ranked causes": rows} if len(rows) else {},
        notes=inv.summary.get("sentences", []),
    )


def save(inv: Investigation, findings_dir: str | Path, sections: list[Section]) -> Path:
    """Write ``attribution.json`` (and the figures as PNG beside it) for ``reports/index.html``."""
    directory = Path(findings_dir)
    figures = []
    for section in sections:
        for name, fig in (section.figures or {}).items():
            png = figure_png(fig)
            if png:
                file = f"summary-{''.join(ch if ch.isalnum() else '-' for ch in name).strip('-')}.png"
                atomic_write_bytes(directory / file, png)
                figures.append({"name": name, "file": file})
    payload = {**inv.summary, "figures": figures}
    return atomic_write_json(directory / ATTRIBUTION_FILE, json.loads(json.dumps(payload, default=str)))
