"""The invariant checks themselves catch what they are named after."""

from __future__ import annotations

from support.invariants import asymmetric_severities, estimates_outside_their_interval, uncovered_clearances


def _f(id: str, severity: str = "LOW", **evidence: object) -> dict:
    return {"id": id, "status": "NOTED", "severity": severity, "evidence": evidence}


def test_an_effect_outside_its_own_interval_is_caught() -> None:
    bad = _f("memory/growth", effect=-1.03e4, ci=[2.42e4, 1.1e5])
    good = _f("memory/growth", effect=5e4, ci=[2.42e4, 1.1e5])
    assert estimates_outside_their_interval([bad, good]) == [
        "memory/growth: effect -10300.0 outside [24200.0, 110000.0]"
    ]


def test_the_same_behaviour_on_both_sides_gets_the_same_severity() -> None:
    a = _f("config/overrides-baseline", "LOW", baseline="ignored", candidate="landed")
    b = _f("config/overrides-candidate", "HIGH", baseline="landed", candidate="ignored")
    assert asymmetric_severities([a, b]) == ["config/overrides: LOW for the baseline, HIGH for the candidate"]
    b["severity"] = "LOW"
    assert asymmetric_severities([a, b]) == []


def test_a_clearance_of_what_one_side_did_not_measure_is_caught() -> None:
    one = {"id": "loss/terms", "status": "CLEARED", "severity": "INFO", "evidence": {"baseline": 0.5}}
    listed = _f("spaces/definitions", details={"unmeasured": {"shape": "baseline"}})
    listed["status"] = "CLEARED"
    both = {**one, "evidence": {"baseline": 0.5, "candidate": 0.5}}
    flagged = {**one, "status": "SUSPECT"}
    keyed = {
        **one,
        "evidence": {"baseline": {"scale": 0.5, "clip": 0.2}, "candidate": {"scale": None, "clip": 0.2}},
    }
    assert uncovered_clearances([one, listed, both, flagged, keyed]) == [
        "loss/terms: CLEARED showing the baseline's value only",
        "spaces/definitions: CLEARED with unmeasured shape",
        "loss/terms: CLEARED with scale measured on one side only",
    ]
