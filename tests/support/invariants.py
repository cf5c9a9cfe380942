"""Properties every finding must have, whatever audit made it (checked on the findings real reports produce)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rlaudit.evidence import measured

SIDES = ("baseline", "candidate")


def _get(finding: Any, key: str) -> Any:
    return finding.get(key) if isinstance(finding, Mapping) else getattr(finding, key)


def _evidence(finding: Any) -> Mapping[str, Any]:
    ev = _get(finding, "evidence")
    return ev if isinstance(ev, Mapping) else vars(ev)


def estimates_outside_their_interval(findings: Iterable[Any]) -> list[str]:
    """Findings whose effect lies outside its own confidence interval (beyond rounding)."""
    bad = []
    for f in findings:
        ev = _evidence(f)
        effect, ci = ev.get("effect"), ev.get("ci")
        if effect is None or ci is None or None in ci:
            continue
        low, high = float(ci[0]), float(ci[1])
        if not all(math.isfinite(v) for v in (float(effect), low, high)):
            continue
        slack = 1e-9 + 1e-6 * max(abs(low), abs(high), abs(float(effect)))
        if not low - slack <= float(effect) <= high + slack:
            bad.append(f"{_get(f, 'id')}: effect {effect} outside [{low}, {high}]")
    return bad


def _side_of(finding_id: str) -> tuple[str, str] | None:
    for side in SIDES:
        if finding_id.endswith(f"-{side}"):
            return finding_id[: -len(side) - 1], side
    return None


def asymmetric_severities(findings: Iterable[Any]) -> list[str]:
    """Per-side findings (``<id>-baseline`` / ``<id>-candidate``) that say the same of each side but were
    given different severities."""
    by_check: dict[str, dict[str, Any]] = {}
    for f in findings:
        split = _side_of(str(_get(f, "id")))
        if split:
            by_check.setdefault(split[0], {})[split[1]] = f
    bad = []
    for check, sides in by_check.items():
        if len(sides) < 2:
            continue
        a, b = sides["baseline"], sides["candidate"]
        ea, eb = _evidence(a), _evidence(b)
        same_status = _get(a, "status") == _get(b, "status")
        mirrored = ea.get("baseline") == eb.get("candidate") and ea.get("candidate") == eb.get("baseline")
        if same_status and mirrored and _get(a, "severity") != _get(b, "severity"):
            bad.append(
                f"{check}: {_get(a, 'severity')} for the baseline, {_get(b, 'severity')} for the candidate"
            )
    return bad


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SUBJECTS_WITHOUT_AN_ENVIRONMENT = ("minimal_train_subject.py", "config_only_subject.py")
"""Fixture subjects with only ``config`` and ``train``, and with only ``config``."""


def audited_without_an_environment(audit_all: Any, make_wb: Any, subject: str) -> list[Any]:
    """Every finding of a room's ``audit_all`` on a fixture subject against itself, checked to hold at least
    one finding per section, no ERROR, only SKIPPED or NOTED, and every SKIPPED naming what is missing (a
    capability such as ``make_env``, or a config setting) with how to add it."""
    path = str(FIXTURES / subject)
    sections = audit_all(make_wb(path, baseline=path))
    findings = [f for s in sections for f in s.findings]
    assert len(findings) >= len(sections) and not [f for f in findings if f.status.value == "ERROR"]
    for f in findings:
        assert f.status.value in ("SKIPPED", "NOTED"), (f.id, f.status, f.evidence.summary)
        if f.status.value == "SKIPPED":
            assert f.evidence.details.get("missing") and f.remediation, f.evidence.summary
    return findings


def uncovered_clearances(findings: Iterable[Any]) -> list[str]:
    """CLEARED findings that compared something one side did not measure: a value shown for one side only, a
    quantity of both sides' ``{quantity: value}`` evidence measured on one side only (None or NaN on the
    other), or quantities the coverage rule (:func:`rlaudit.evidence.coverage`) listed as unmeasured. A
    clearance covers only what was measured on both sides, so each is a false clearance."""
    bad = []
    for f in findings:
        status = _get(f, "status")
        if getattr(status, "value", status) != "CLEARED":
            continue
        ev = _evidence(f)
        shown = [side for side in SIDES if ev.get(side) is not None]
        if len(shown) == 1:
            bad.append(f"{_get(f, 'id')}: CLEARED showing the {shown[0]}'s value only")
        base, cand = ev.get("baseline"), ev.get("candidate")
        if isinstance(base, Mapping) and isinstance(cand, Mapping):
            one = [k for k in {**base, **cand} if measured(base.get(k)) != measured(cand.get(k))]
            if one:
                bad.append(
                    f"{_get(f, 'id')}: CLEARED with {', '.join(map(str, one))} measured on one side only"
                )
        unmeasured = (ev.get("details") or {}).get("unmeasured")
        if unmeasured:
            bad.append(f"{_get(f, 'id')}: CLEARED with unmeasured {', '.join(map(str, unmeasured))}")
    return bad
