"""Ranking and wording: audit evidence, echoes of an upstream change, measured causes, attribution's findings.

Without experiments (``rlaudit audit``) subsystems are ranked by the strength of their audit evidence; with
them (the summary) measured causes come first, by the share of a gap they restore, and flagged subsystems that
measurably restore nothing are named red herrings.

The evidence ranking ranks *mechanisms* (a changed layer, term, schedule, reward: what can be a cause), never
*symptoms* (a learning or speed gap that every cause produces; they set the gap attribution explains). A
flagged check whose inputs carry another subsystem's changes (its ``reads``) counts a fifth when that
subsystem holds a flagged mechanism: it may only echo it. Ties are broken by the strength and specificity of
the evidence, never by the order subsystems are listed in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from rlaudit.attribution.arms import DEFAULT_DELTA, OVERLAP_MARGIN, SPS, minor_floor
from rlaudit.evidence import settle_phrase
from rlaudit.findings import SUBSYSTEMS, Evidence, Finding, Severity, Status

if TYPE_CHECKING:
    from rlaudit.attribution.arms import Attribution

STATUS_WEIGHT = {Status.CONFIRMED: 3.0, Status.SUSPECT: 2.0, Status.NOTED: 0.25}
"""What a finding's status counts for as audit evidence (other statuses count nothing)."""
SEVERITY_WEIGHT = {
    Severity.CRITICAL: 2.0,
    Severity.HIGH: 1.5,
    Severity.MEDIUM: 1.0,
    Severity.LOW: 0.5,
    Severity.INFO: 0.25,
}
"""What a finding's severity multiplies its status weight by (:func:`weight`)."""
STRONG_PRIOR = STATUS_WEIGHT[Status.SUSPECT] * SEVERITY_WEIGHT[Severity.LOW]
"""Audit evidence from which the screening tries a suspect on its own rather than in a group: a SUSPECT
mechanism of LOW severity."""
ECHO_WEIGHT = 0.2
"""What a finding that may only echo an upstream change counts for, relative to its own weight."""
OTHERS_WEIGHT = 0.1
"""What a subsystem's findings beyond its strongest add, relative to their weight: one CONFIRMED finding
outranks many weak ones."""

SYMPTOM = "symptom"
MECHANISM = "mechanism"

_CONFIG_CHANGED = re.compile(r"^config/changed-(?P<subsystem>[a-z_]+)$")


def gap_label(metric: str) -> str:
    """What a share of ``metric`` is a share of, for sentences and axes (see
    :func:`~rlaudit.attribution.arms.attribution_scale`)."""
    return "the CPU time per step lost" if metric == SPS else "the gap"


def overlap(result: Attribution, metric: str) -> dict[str, Any] | None:
    """The named single restores of ``metric`` (causes and minor contributors) when they add up to well over
    the whole gap (by more than
    :data:`~rlaudit.attribution.arms.OVERLAP_MARGIN`): they overlap, each one alone also removing part of
    what another costs, so their sum is no total. Returns ``singles`` (their sum), ``arms`` and ``together``
    (the joint restore of the causes, when it was measured, else None); None when they do not overlap."""
    rows = [r for r in result.ranking.get(metric, []) if r["single"] and r["verdict"] in ("cause", "minor")]
    total = sum(r["point"] for r in rows)
    if len(rows) < 2 or not total > 1.0 + OVERLAP_MARGIN:
        return None
    together = (result.together.get("effects") or {}).get(metric)
    return {"singles": total, "arms": [r["arm"] for r in rows], "together": together}


# ------------------------------------------------------------------------------------------------------------
# What a finding is evidence of
# ------------------------------------------------------------------------------------------------------------


def role(f: Finding) -> str:
    """``"symptom"`` or ``"mechanism"``: what the check that made the finding declared
    (:func:`rlaudit.checks.check` stamps it); a finding made without a check is a mechanism."""
    return f.role or MECHANISM


def owner(f: Finding) -> str:
    """The subsystem a finding is evidence against. A changed resolved-config value is the config room's view
    of its owning subsystem's settings: ``config/changed-optimizer`` counts for ``optimizer`` (and never for
    ``config`` as well), whichever subsystem the finding was filed under."""
    match = _CONFIG_CHANGED.match(f.id)
    if match and match["subsystem"] in SUBSYSTEMS:
        return match["subsystem"]
    return f.subsystem


def weight(f: Finding) -> float:
    """Strength of one finding: status weight (CONFIRMED 3, SUSPECT 2, NOTED 0.25) x severity weight
    (CRITICAL 2 .. INFO 0.25); 0 for CLEARED, SKIPPED and ERROR."""
    return STATUS_WEIGHT.get(f.status, 0.0) * SEVERITY_WEIGHT.get(f.severity, 1.0)


def names_change(f: Finding) -> bool:
    """The finding names the quantity that changed: both sides' values, and they differ."""
    e = f.evidence
    return e.baseline is not None and e.candidate is not None and e.baseline != e.candidate


def _ranked(f: Finding) -> bool:
    """Audit findings the ranking reads: not attribution's own ``summary/`` findings (measurements), and not a
    room's mirror of another room's finding (``details["mirror_of"]``: the config room listing a changed value
    whose owner judges it), which would count one change twice."""
    mirrored = bool((f.evidence.details or {}).get("mirror_of"))
    return owner(f) in SUBSYSTEMS and not f.id.startswith("summary/") and not mirrored


# ------------------------------------------------------------------------------------------------------------
# Echoes of an upstream change
# ------------------------------------------------------------------------------------------------------------


def knock_on(findings: Sequence[Finding]) -> set[str]:
    """Ids of flagged findings that may only echo a flagged mechanism upstream. They count a fifth
    (:data:`ECHO_WEIGHT`) in the evidence ranking; a measured restore is never discounted.

    A flagged finding is an echo when

    1. its audit marked it so (``evidence.details["knock_on"]``), or
    2. its ``reads`` name a subsystem that holds a flagged mechanism finding, unless that finding reads this
       finding's subsystem back (two subsystems that each read the other's changes cannot be told apart, so
       both count in full).

    Each check declares its ``reads`` next to itself (:func:`rlaudit.checks.check`); there is no central table.
    """
    flagged = [f for f in findings if f.status.is_flag and _ranked(f)]
    mechanisms = [g for g in flagged if role(g) == MECHANISM]
    out = set()
    for f in flagged:
        sub = owner(f)
        if (f.evidence.details or {}).get("knock_on") or any(
            owner(g) in f.reads and owner(g) != sub and sub not in g.reads for g in mechanisms if g is not f
        ):
            out.add(f.id)
    return out


# ------------------------------------------------------------------------------------------------------------
# The evidence against a subsystem
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Strength:
    """The audit evidence against one subsystem, as the ranking weighs it.

    Attributes:
        score: Its strongest mechanism finding's :func:`weight` plus a tenth of the others' (an echo counts a
            fifth of its weight; a changed config value and the subsystem's own check of it count once).
        status: Rank of its strongest status among mechanisms that echo nothing (0 = CONFIRMED; 9: none).
        severity: Rank of its highest severity among them (0 = CRITICAL; 9: none).
        independent: How many of its flagged mechanism findings echo nothing (the config room's view of its
            settings merged with its own checks).
        specific: One of those names the changed quantity (both sides' values).
        symptoms: Weight of its strongest flagged symptom (a gap, not a cause: never ranked above a mechanism).
    """

    score: float = 0.0
    status: int = 9
    severity: int = 9
    independent: int = 0
    specific: bool = False
    symptoms: float = 0.0

    def key(self) -> tuple[float, int, int, int, bool]:
        """Sort key, strongest first: score, then CONFIRMED over SUSPECT, severity, independent findings, and
        a finding that names what changed."""
        return (-self.score, self.status, self.severity, -self.independent, not self.specific)


def _combine(weights: Sequence[float]) -> float:
    return max(weights) + OTHERS_WEIGHT * (sum(weights) - max(weights)) if weights else 0.0


def strengths(findings: Sequence[Finding], *, noted: bool = False) -> dict[str, Strength]:
    """Per subsystem (by :func:`owner`), the audit evidence against it.

    Args:
        findings: Audit findings (``summary/`` findings are left out).
        noted: Count NOTED findings too, at their small weight (the search's order); otherwise only
            CONFIRMED and SUSPECT (the ranking).
    """
    echoes = knock_on(findings)
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        if _ranked(f) and weight(f) and (f.status.is_flag or noted):
            groups.setdefault(owner(f), []).append(f)
    out = {}
    for sub, fs in groups.items():
        mechanisms = [f for f in fs if role(f) == MECHANISM]

        def w(f: Finding) -> float:
            return weight(f) * (ECHO_WEIGHT if f.id in echoes else 1.0)

        own = [w(f) for f in mechanisms if not _CONFIG_CHANGED.match(f.id)]
        for f in (f for f in mechanisms if _CONFIG_CHANGED.match(f.id)):
            # one change seen twice (the config room's diff, the subsystem's own check): counted once
            if own:
                i = own.index(max(own))
                own[i] = max(own[i], w(f))
            else:
                own.append(w(f))
        real = [f for f in mechanisms if f.id not in echoes and f.status.is_flag]
        own_real = [f for f in real if not _CONFIG_CHANGED.match(f.id)]
        out[sub] = Strength(
            score=_combine(own),
            status=min((f.status.rank for f in real), default=9),
            severity=min((f.severity.rank for f in real), default=9),
            independent=len(own_real) or int(bool(real)),
            specific=any(names_change(f) for f in real),
            symptoms=max((weight(f) for f in fs if role(f) == SYMPTOM and f.status.is_flag), default=0.0),
        )
    return out


def audit_priors(findings: Sequence[Finding]) -> dict[str, float]:
    """Per subsystem, the strength of the audit evidence against it (orders the search, never decides).

    The :attr:`Strength.score` of its mechanism findings, NOTED ones included at their small weight: the
    strongest counts in full and the others a tenth, so one CONFIRMED finding outranks many weak ones; echoes
    of an upstream change (:func:`knock_on`) count a fifth; symptoms not at all (they point at no subsystem).
    """
    return {sub: s.score for sub, s in strengths(findings, noted=True).items() if s.score > 0}


def evidence_order(findings: Sequence[Finding]) -> list[str]:
    """The flagged subsystems in the order of the evidence ranking (:func:`rank_causes` without experiments)."""
    return [c.subsystem for c in rank_causes(findings)]


@dataclass
class Cause:
    """One subsystem in the ranked list: its measured effect (if any) and the audit evidence behind it.

    Attributes:
        subsystem: The subsystem.
        rank_score: What it is ranked by: ``10 + share`` for a measured cause, the squashed audit evidence
            ``s / (1 + s)`` (plus a minor share) otherwise, 0 for a subsystem flagged only for symptoms, below
            zero for a red herring.
        effects: Metric -> the share of its gap the subsystem's restore closes (``point``, ``low``, ``high``,
            ``n``).
        findings: Its flagged audit findings, strongest first (mechanisms that echo nothing, then echoes, then
            symptoms).
        verdict: ``primary``, ``secondary``, ``minor``, ``undecided``, ``flagged (unmeasured)``, ``symptom``
            (flagged only for a gap every cause produces) or ``red herring``.
        strength: The audit evidence against it (:class:`Strength`).
    """

    subsystem: str
    rank_score: float
    effects: dict[str, dict[str, float]]
    findings: list[Finding]
    verdict: str
    strength: Strength = Strength()


_SHARE_KEYS = ("point", "low", "high", "n", "family", "incomparable")


def _measured(result: Attribution) -> dict[str, dict[str, dict[str, float]]]:
    """Subsystem -> metric -> the share its single restore closes (the largest when it has several); a group
    restored together with no effect clears each member it holds (group testing drops it whole), unless a
    member was measured on its own."""
    measured: dict[str, dict[str, dict[str, float]]] = {}
    for m, rows in result.ranking.items():
        for r in rows:
            if r["single"] and len(r["subsystems"]) == 1:
                sub = r["subsystems"][0]
                prev = measured.setdefault(sub, {}).get(m)
                if prev is None or r["point"] > prev["point"]:
                    measured[sub][m] = {k: r[k] for k in _SHARE_KEYS if k in r}
        for r in rows:
            if not r["single"] and r["verdict"] == "no effect":
                for sub in r["subsystems"]:
                    measured.setdefault(sub, {}).setdefault(m, {k: r[k] for k in _SHARE_KEYS if k in r})
    return measured


def rank_causes(
    findings: Sequence[Finding], result: Attribution | None = None, delta: float = DEFAULT_DELTA
) -> list[Cause]:
    """Subsystems ranked: measured causes by the share of a gap they restore, then subsystems with flagged
    mechanism findings by audit evidence (:class:`Strength`: its score, then CONFIRMED over SUSPECT, severity,
    independent findings, a finding that names what changed), then subsystems flagged only for symptoms, then
    red herrings. Echoes of an upstream change (:func:`knock_on`) count a fifth.

    Args:
        findings: Every audit finding (attribution's own ``summary/`` findings are left out).
        result: The attribution experiments, if they ran.
        delta: The share of a gap that counts as meaningful.
    """
    echoes = knock_on(findings)
    flagged: dict[str, list[Finding]] = {}
    for f in findings:
        if f.status.is_flag and _ranked(f):
            flagged.setdefault(owner(f), []).append(f)
    for fs in flagged.values():
        fs.sort(key=lambda f: (role(f) == SYMPTOM, f.id in echoes, -weight(f), f.id))
    measured = _measured(result) if result is not None else {}
    # clearing needs every gap: a metric whose gap could not be measured can never be ruled out (one where the
    # candidate is measurably better has nothing to rule out)
    every_gap = {m for m, g in result.gaps.items() if not g.get("better")} if result is not None else set()
    strength = strengths(findings)
    causes = []
    for sub in set(flagged) | set(measured):
        st = strength.get(sub, Strength())
        evidence = st.score
        eff = measured.get(sub, {})
        # a share timed at too different loads decides nothing (Effect.incomparable): never a cause, never clears
        decided = {m: e for m, e in eff.items() if not e.get("incomparable")}
        best = max((e["point"] for e in decided.values() if e["low"] > 0), default=None)
        if best is not None and best >= delta:
            verdict, score = "primary" if best >= 0.5 else "secondary", 10.0 + best
        elif (
            decided == eff
            and any(e["low"] > minor_floor(delta) for e in eff.values())
            and all(e["high"] < delta for e in eff.values())
        ):
            # a small share that is surely there: real, below what counts as meaningful, never a red herring
            verdict, score = "minor", evidence / (1.0 + evidence) + (best or 0.0)
        elif (
            eff and decided == eff and set(eff) >= every_gap and all(e["high"] < delta for e in eff.values())
        ):
            # measurably no share of any gap there is; with a gap too small to measure (a learning gap at the
            # smoke profile), "no effect on SPS" does not clear a subsystem flagged for correctness
            verdict, score = "red herring", -1.0 + 0.01 * evidence
        elif not eff and evidence == 0.0:
            verdict, score = "symptom", 0.0
        else:
            verdict, score = "flagged (unmeasured)" if not eff else "undecided", evidence / (1.0 + evidence)
        causes.append(Cause(sub, score, eff, flagged.get(sub, []), verdict, st))
    # identical evidence (rare) falls back to the name, for a stable order; never to the notebook order
    causes.sort(key=lambda c: (-c.rank_score, *c.strength.key(), -c.strength.symptoms, c.subsystem))
    return causes


# ------------------------------------------------------------------------------------------------------------
# From measurements to findings
# ------------------------------------------------------------------------------------------------------------


def attribution_findings(result: Attribution, delta: float = DEFAULT_DELTA) -> list[Finding]:
    """One finding per single suspect measured: CONFIRMED when its restore closes a meaningful share of a
    gap, NOTED when it measurably does not (a red herring if the audits flagged it), SUSPECT while it is
    undecided (with the seeds per arm that would likely decide it). Intervals account for every arm the
    search tried (Holm), so a share that excludes zero by the luck of one arm among many is undecided, never
    CONFIRMED."""
    out = []
    by_name = {s.name: s for s in result.suspects}
    for name, per in result.effects.items():
        arm = next(a for a in result.arms if a.name == name)
        if len(arm.suspects) != 1:
            continue
        s = by_name[arm.suspects[0]]
        parts, matters, none, some, needed = [], False, True, False, []
        for m, e in per.items():
            if not result.gaps.get(m, {}).get("measurable"):
                continue
            seeds = "1 seed" if e.n == 1 else f"{e.n} seeds"
            if e.incomparable:  # timed at too different loads: a number, never a verdict
                parts.append(
                    f"{result.label(m)}: {e.point:.0%} of {gap_label(m)} measured but {e.incomparable}"
                )
                none = False
                continue
            parts.append(
                f"{result.label(m)}: restores {e.point:.0%} of {gap_label(m)} "
                f"({e.ci_text()} {e.low:.0%}..{e.high:.0%}, {seeds})"
            )
            matters |= e.matters(delta)
            none &= e.below(delta)
            some |= e.contributes(delta)
            if not e.decided(delta) and (n := e.seeds_to_decide(delta)):
                needed.append(n)
        if not parts:
            continue
        status = Status.CONFIRMED if matters else (Status.NOTED if none else Status.SUSPECT)
        comparable = [e for e in per.values() if not e.incomparable] or list(per.values())
        best = max(comparable, key=lambda e: e.point)
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
                            else " — undecided"
                            + (
                                f": {settle_phrase(max(needed), per='arm', verb='decide it')}"
                                if needed
                                else ""
                            )
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
