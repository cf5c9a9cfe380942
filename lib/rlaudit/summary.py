"""The summary room (notebook 15): attribution experiments, the executive summary, and their figures.

The audits' findings say what differs; :mod:`rlaudit.attribution` measures which differences explain the
gap. This module turns both into what the report leads with: the primary causes with their measured effect
and interval, secondary issues, red herrings (flagged differences that measurably do not matter), the systems
verified as correct, the order in which to fix things, and how much of the gap fixing them all should recover.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.attribution.arms import DEFAULT_DELTA, DEFAULT_METRIC, Attribution
from rlaudit.attribution.figures import curves_plot, forest_plot, sps_waterfall
from rlaudit.attribution.ranking import METRIC_LABEL, Cause, attribution_findings, gap_label, rank_causes
from rlaudit.attribution.search import attribute
from rlaudit.findings import SUBSYSTEMS, Finding, Status
from rlaudit.io import atomic_write_bytes, atomic_write_json
from rlaudit.notebook import Section, figure_png
from rlaudit.workbench import Workbench

ATTRIBUTION_FILE = "attribution.json"


def _pct(x: float | None) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.0%}"


def _seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def _effect_text(e: dict[str, float]) -> str:
    return f"{_pct(e['point'])} (95% CI {_pct(e['low'])}..{_pct(e['high'])}, {int(e['n'])} seeds)"


@dataclass
class Investigation:
    """Attribution results plus the executive summary built from them and the audits' findings."""

    result: Attribution | None
    causes: list[Cause]
    summary: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def executive_summary(findings: list[Finding], result: Attribution | None, delta: float) -> dict[str, Any]:
    """The investigation's conclusions as plain data (rendered in the notebook and in reports/index.html)."""
    causes = rank_causes(findings, result, delta)
    by_sub: dict[str, list[Finding]] = {}
    for f in findings:
        by_sub.setdefault(f.subsystem, []).append(f)
    flagged_subs = {c.subsystem for c in causes}
    cleared = sorted(
        (
            s
            for s, fs in by_sub.items()
            if s in SUBSYSTEMS
            and s not in flagged_subs
            and any(f.status is Status.CLEARED for f in fs)
            and not any(f.status is Status.ERROR for f in fs)
        ),
        key=SUBSYSTEMS.index,
    )
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
                **{f"restores {METRIC_LABEL.get(m, m)} gap": _effect_text(e) for m, e in c.effects.items()},
                "audit evidence": "; ".join(f.headline for f in c.findings[:2]),
                "remediation": remediation,
            }
        )
    order = [r["subsystem"] for r in rows if r["verdict"] in ("primary", "secondary", "minor")] + [
        r["subsystem"] for r in rows if r["verdict"] in ("flagged (unmeasured)", "unclear")
    ]
    recovery = {}
    if result is not None:
        together = result.together.get("effects") or {}
        whole_arm = next(
            (
                a
                for a in result.arms
                if a.suspects and len(a.suspects) == len([s for s in result.suspects if s.composable])
            ),
            None,
        )
        for m in result.metrics:
            if m in together:
                recovery[m] = {**together[m], "arm": "the causes found, restored together"}
            elif whole_arm is not None and m in result.effects.get(whole_arm.name, {}):
                e = result.effects[whole_arm.name][m]
                recovery[m] = {
                    "point": e.point,
                    "low": e.low,
                    "high": e.high,
                    "n": e.n,
                    "arm": "every suspect restored together",
                }
    sentences = []
    for metric in result.metrics if result else []:
        gap = result.gaps.get(metric, {})
        label = METRIC_LABEL.get(metric, metric)
        if not gap.get("measurable"):
            sentences.append(f"No measurable {label} gap between baseline and candidate.")
            continue
        singles = [r for r in result.ranking.get(metric, []) if r["single"] and r["verdict"] == "cause"]
        head = f"{label}: baseline {gap['baseline']:.3g}, candidate {gap['candidate']:.3g}."
        if singles:
            top = singles[0]
            head += (
                f" Primary cause: {top['arm']} ({', '.join(top['subsystems'])}) restores "
                f"{_pct(top['point'])} of {gap_label(metric)} (95% CI {_pct(top['low'])}..{_pct(top['high'])})."
            )
            inj = result.injected.get(top["suspects"][0], {}).get(metric)
            if inj is not None:
                head += (
                    f" Put alone into the baseline, it reproduces {_pct(inj.point)} of it "
                    f"({_pct(inj.low)}..{_pct(inj.high)})."
                )
            if len(singles) > 1:
                head += " Also: " + "; ".join(f"{r['arm']} {_pct(r['point'])}" for r in singles[1:4]) + "."
            minor = [r for r in result.ranking.get(metric, []) if r["single"] and r["verdict"] == "minor"]
            if minor:
                head += (
                    " Smaller but measurable: "
                    + "; ".join(
                        f"{r['arm']} {_pct(r['point'])} ({_pct(r['low'])}..{_pct(r['high'])})"
                        for r in minor[:3]
                    )
                    + "."
                )
        else:
            head += " No single change restores a meaningful share on its own."
        if metric in recovery:
            head += f" Fixing them all is expected to recover {_pct(recovery[metric]['point'])} of it."
        sentences.append(head)
    red = [r["subsystem"] for r in rows if r["verdict"] == "red herring"]
    if red:
        sentences.append(
            "Red herrings (flagged, but restoring them measurably does not matter): " + ", ".join(red) + "."
        )
    if cleared:
        sentences.append("Verified as correct: " + ", ".join(cleared) + ".")
    if order:
        sentences.append("Fix in this order: " + " → ".join(dict.fromkeys(order)) + ".")
    if result is not None:
        s = result.spent
        sentences.append(
            f"Attribution trained {s['variant_runs']} runs on variants where a one-factor sweep at "
            f"{s['seeds_per_arm_max']} seeds (the baseline's and candidate's) would train "
            f"{s['full_sweep_variant_runs']}, and one at {_seeds(s.get('seeds_per_arm_min', 1))} each "
            f"{s.get('min_sweep_variant_runs', '?')}; with the baseline and candidate, {s['runs']} runs in all "
            f"({s['cached_runs']} of them reused from the audits' cache) against {s['full_sweep_runs']}."
        )
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
    metric: str = DEFAULT_METRIC,
    variants: str = "",
    delta: float = DEFAULT_DELTA,
    budget: int = 0,
    seed: int = 0,
) -> Investigation:
    """Run the attribution experiments and build the executive summary.

    Args:
        findings: Every notebook's findings (the audits' evidence orders the search).
        metric: The primary metric, an episode statistic (``heart.get``).
        variants: Named variant subjects, ``"name=spec, ..."`` (``name@subsystem=spec`` to tag a subsystem).
        delta: The share of a gap that counts as meaningful.
        budget: Training runs attribution may use; 0 takes the profile's.
        seed: Seeds the bootstrap intervals.
    """
    result = attribute(
        wb, findings, variants=variants, metric=metric, delta=delta, budget=budget or None, seed=seed
    )
    own = attribution_findings(result, delta)
    summary = executive_summary([*findings, *own], result, delta)
    return Investigation(
        result=result,
        causes=rank_causes([*findings, *own], result, delta),
        summary=summary,
        findings=own,
    )


# ------------------------------------------------------------------------------------------------------------
# Sections and the saved file
# ------------------------------------------------------------------------------------------------------------


def attribution_section(inv: Investigation, metric: str, delta: float = DEFAULT_DELTA) -> Section:
    """The experiments: arms, what each restores, the figures."""
    result = inv.result
    if result is None:
        return Section(title="Attribution", notes=["attribution did not run"])
    tables = {}
    for m, rows in result.ranking.items():
        tables[f"gap restored: {METRIC_LABEL.get(m, m)}"] = pd.DataFrame(rows)
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
                    "low": e.low,
                    "high": e.high,
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
        "learning curves": curves_plot(result, metric),
        "SPS waterfall": sps_waterfall(result),
    }
    return Section(
        title="Which changes explain the gap?",
        findings=inv.findings,
        tables=tables,
        figures=figures,
        notes=result.notes,
    )


def executive_section(inv: Investigation) -> Section:
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
