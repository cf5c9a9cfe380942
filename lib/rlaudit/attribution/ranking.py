"""Ranking and wording: audit evidence, knock-on echoes, measured causes, and the findings attribution writes.

Without experiments (``rlaudit audit``) subsystems are ranked by the strength of their audit evidence; with
them (the summary) measured causes come first, by the share of a gap they restore, and flagged subsystems that
measurably restore nothing are named red herrings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from rlaudit.attribution.arms import DEFAULT_DELTA, SPS, minor_floor
from rlaudit.findings import SUBSYSTEMS, Evidence, Finding, Severity, Status

if TYPE_CHECKING:
    from rlaudit.attribution.arms import Attribution

_STATUS_WEIGHT = {Status.CONFIRMED: 3.0, Status.SUSPECT: 2.0, Status.NOTED: 0.25}
_SEVERITY_WEIGHT = {
    Severity.CRITICAL: 2.0,
    Severity.HIGH: 1.5,
    Severity.MEDIUM: 1.0,
    Severity.LOW: 0.5,
    Severity.INFO: 0.25,
}


METRIC_LABEL = {SPS: "steps per CPU-second"}
"""How a metric is named in sentences, tables and figures (when not by its own name)."""


def gap_label(metric: str) -> str:
    """What a share of ``metric`` is a share of, for sentences and axes (see :func:`attribution_scale`)."""
    return "the CPU time per step lost" if metric == SPS else "the gap"


KNOCK_ON: dict[str, tuple[str, ...]] = {
    # A flagged upstream check (id prefix) -> the downstream checks (id prefixes) that measure through it. The
    # batch geometry (envs, rollout length, minibatches) shapes environment throughput and episode statistics,
    # observation statistics and preprocessing cost, buffer memory, and the size of every update; the
    # curriculum runs inside env.reset(), so its cost shows up as a slower reset.
    "trainer/geometry": (
        "env/throughput",
        "env/equivalence",
        "env/episode-distributions",
        "spaces/",
        "memory/",
        "optimizer/clip-fraction",
        "optimizer/update-ratios",
    ),
    # a different network computes a different loss on the same batch, learns the probe environments
    # differently, and starts from a different policy
    "agents/": ("loss/terms", "loss/probe-envs", "init/policy-at-init"),
    # rewards are paid by the environment: a reward component that changed shows in its step-by-step and
    # episode comparisons too
    "rewards/": ("env/equivalence", "env/episode-distributions"),
    "curriculum/overhead": ("env/reset-cost", "env/throughput"),
    "curriculum/scaling": ("env/reset-cost", "env/throughput"),
}


def knock_on(findings: Sequence[Finding]) -> set[str]:
    """Ids of flagged findings that may only echo a flagged upstream check (:data:`KNOCK_ON`) or that their
    audit marked as a knock-on (``evidence.details["knock_on"]``). Such findings count a fifth in the evidence
    ranking; a measured restore is never discounted."""
    flagged = [f for f in findings if f.status.is_flag]
    upstream = [up for up in KNOCK_ON if any(f.id.startswith(up) for f in flagged)]
    out = set()
    for f in flagged:
        if (f.evidence.details or {}).get("knock_on"):
            out.add(f.id)
        elif any(
            f.id.startswith(down) and not f.id.startswith(up) for up in upstream for down in KNOCK_ON[up]
        ):
            out.add(f.id)
    return out


def audit_priors(findings: Sequence[Finding]) -> dict[str, float]:
    """Per subsystem, the strength of the audit evidence against it (orders the search, never decides).

    The strongest flagged finding counts in full (status x severity weight) and the others a tenth, so one
    CONFIRMED finding outranks many weak ones; knock-on findings (``evidence.details["knock_on"]``, effects
    of another subsystem's fault) count a fifth.
    """
    weights: dict[str, list[float]] = {}
    echoes = knock_on(findings)
    for f in findings:
        w = _STATUS_WEIGHT.get(f.status, 0.0) * _SEVERITY_WEIGHT.get(f.severity, 1.0)
        if f.id in echoes:
            w *= 0.2
        if w:
            weights.setdefault(f.subsystem, []).append(w)
    return {sub: max(ws) + 0.1 * (sum(ws) - max(ws)) for sub, ws in weights.items()}


def attribution_findings(result: Attribution, delta: float = DEFAULT_DELTA) -> list[Finding]:
    """One finding per single suspect measured: CONFIRMED when its restore closes a meaningful share of a
    gap, NOTED when it measurably does not (a red herring if the audits flagged it)."""
    out = []
    by_name = {s.name: s for s in result.suspects}
    for name, per in result.effects.items():
        arm = next(a for a in result.arms if a.name == name)
        if len(arm.suspects) != 1:
            continue
        s = by_name[arm.suspects[0]]
        parts, matters, none, some = [], False, True, False
        for m, e in per.items():
            if not result.gaps.get(m, {}).get("measurable"):
                continue
            seeds = "1 seed" if e.n == 1 else f"{e.n} seeds"
            parts.append(
                f"{m}: restores {e.point:.0%} of {gap_label(m)} (95% CI {e.low:.0%}..{e.high:.0%}, {seeds})"
            )
            matters |= e.matters(delta)
            none &= e.high < delta
            some |= e.contributes(delta)
        if not parts:
            continue
        status = Status.CONFIRMED if matters else (Status.NOTED if none else Status.SUSPECT)
        best = max(per.values(), key=lambda e: e.point)
        out.append(
            Finding(
                id=f"summary/attribution-{s.name.replace(' ', '-')}",
                subsystem=s.subsystem if s.subsystem in SUBSYSTEMS else "trainer",
                hypothesis=f"Undoing '{s.name}' in the candidate closes part of the gap",
                status=status,
                severity=Severity.CRITICAL
                if best.point >= 0.5 and matters
                else (Severity.HIGH if matters else Severity.LOW),
                evidence=Evidence(
                    effect=best.point,
                    effect_label="fraction of gap restored",
                    ci=(best.low, best.high),
                    ci_level=0.95,
                    summary=(
                        "; ".join(parts)
                        + (
                            ""
                            if matters
                            else " — a small share, below what counts as a cause"
                            if none and some
                            else " — measurably no cause"
                            if none
                            else " — unclear"
                        )
                    ),
                    details={
                        "arm": name,
                        "overrides": list(arm.overrides),
                        "target": arm.target,
                        "effects": {m: asdict(e) for m, e in per.items()},
                    },
                ),
                remediation=(
                    f"Apply '{s.name}' ({', '.join(arm.overrides) or arm.target})"
                    if matters
                    else "No measurable effect on the gap: leave for later (a red herring if audits flagged it)."
                ),
            )
        )
    return out


@dataclass
class Cause:
    """One subsystem in the ranked list: its measured effect (if any) and the audit evidence behind it."""

    subsystem: str
    rank_score: float
    effects: dict[str, dict[str, float]]
    findings: list[Finding]
    verdict: str  # "primary", "secondary", "red herring", "flagged (unmeasured)"


def rank_causes(
    findings: Sequence[Finding], result: Attribution | None = None, delta: float = DEFAULT_DELTA
) -> list[Cause]:
    """Subsystems ranked: measured causes by the share of a gap they restore, then subsystems with flagged
    findings by audit evidence. Knock-on findings (:func:`knock_on`) count a fifth."""
    flagged: dict[str, list[Finding]] = {}
    for f in findings:
        if f.status.is_flag and f.subsystem in SUBSYSTEMS and not f.id.startswith("summary/"):
            flagged.setdefault(f.subsystem, []).append(f)
    measured: dict[str, dict[str, dict[str, float]]] = {}
    if result is not None:
        for m, rows in result.ranking.items():
            for r in rows:
                if r["single"] and len(r["subsystems"]) == 1:
                    sub = r["subsystems"][0]
                    prev = measured.setdefault(sub, {}).get(m)
                    if prev is None or r["point"] > prev["point"]:
                        measured[sub][m] = {k: r[k] for k in ("point", "low", "high", "n")}
            # a group restored together with no effect clears each member it holds (group testing drops it
            # whole), unless a member was measured on its own
            for r in rows:
                if not r["single"] and r["verdict"] == "no effect":
                    for sub in r["subsystems"]:
                        measured.setdefault(sub, {}).setdefault(
                            m, {k: r[k] for k in ("point", "low", "high", "n")}
                        )
    # clearing needs every gap: a metric whose gap could not be measured can never be ruled out
    every_gap = set(result.gaps) if result is not None else set()
    echoes = knock_on(findings)
    causes = []
    for sub in sorted(set(flagged) | set(measured), key=SUBSYSTEMS.index):
        evidence = sum(
            _STATUS_WEIGHT.get(f.status, 0)
            * _SEVERITY_WEIGHT.get(f.severity, 1)
            * (0.2 if f.id in echoes else 1.0)
            for f in flagged.get(sub, [])
        )
        eff = measured.get(sub, {})
        best = max((e["point"] for e in eff.values() if e["low"] > 0), default=None)
        if best is not None and best >= delta:
            verdict, score = "primary" if best >= 0.5 else "secondary", 10.0 + best
        elif any(e["low"] > minor_floor(delta) for e in eff.values()) and all(
            e["high"] < delta for e in eff.values()
        ):
            # a small share that is surely there: real, below what counts as meaningful, never a red herring
            verdict, score = "minor", evidence / (1.0 + evidence) + best
        elif eff and set(eff) >= every_gap and all(e["high"] < delta for e in eff.values()):
            # measurably no share of any gap there is (nor an interval above zero); with a gap too small to measure (a learning gap at
            # the smoke profile), "no effect on SPS" does not clear a subsystem flagged for correctness
            verdict, score = "red herring", -1.0 + 0.01 * evidence
        else:
            verdict, score = "flagged (unmeasured)" if not eff else "unclear", evidence / (1.0 + evidence)
        causes.append(Cause(sub, score, eff, flagged.get(sub, []), verdict))
    causes.sort(key=lambda c: -c.rank_score)
    return causes
