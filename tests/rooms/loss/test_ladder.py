"""The tests of :mod:`rlaudit.loss.ladder`: the probe-environment ladder judged on results written by hand (what
:func:`rlaudit.loss.probes.probe_env_run` returns per probe and side), one case per verdict.

A stand-in workbench hands the check those results from ``run_many``, as the real one does from its workers.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rlaudit.engine.store import ProbeResult
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from rlaudit.loss.ladder import ladder_table, probe_envs, probe_names
from support.runs import bench

PASS = {"supported": True, "passed": True, "value_error": 0.02, "p_good": 0.97, "reason": "learned"}


def _fail(value_error: float, reason: str) -> dict[str, Any]:
    return {"supported": True, "passed": False, "value_error": value_error, "p_good": 0.5, "reason": reason}


def _pairs(baseline: dict[str, dict[str, Any]], candidate: dict[str, dict[str, Any]]) -> list[Pair]:
    """One Pair per probe of the ladder: each side's result, :data:`PASS` unless given by probe name."""
    return [
        Pair(
            *(
                ProbeResult(
                    side, f"{side}.py", "probe_env_run", {"probe": name}, True, result=given.get(name, PASS)
                )
                for side, given in (("baseline", baseline), ("candidate", candidate))
            )
        )
        for name in probe_names()
    ]


def _run(pairs: list[Pair], **kwargs: Any) -> dict[str, Any]:
    """The check's findings by id, its evidence handed over by the stand-in workbench's ``run_many``."""
    asked: list[list[dict[str, Any]]] = []

    def run_many(probe: Any, params: list[dict[str, Any]], desc: str = "") -> list[Pair]:
        asked.append(params)
        return pairs

    wb = SimpleNamespace(**vars(bench()), run_many=run_many)
    found = {f.id: f for f in probe_envs(wb, **kwargs).findings}
    assert [p["probe"] for p in asked[0]] == list(probe_names())
    return found


def test_the_ladder_has_five_rungs_in_order_and_one_row_per_side() -> None:
    assert probe_names() == ("constant", "observation", "discount", "action", "observation_action")
    table = ladder_table(_pairs({}, {"discount": _fail(0.7, "V(1) 0.3, target 1")}))
    assert len(table) == 10 and list(table["probe"][:2]) == ["1. constant", "1. constant"]
    row = table[(table["name"] == "discount") & (table["side"] == "candidate")].iloc[0]
    assert (row["passed"], row["value_error"], row["isolates"]) == (
        False,
        0.7,
        "discounting / bootstrapping (returns, GAE, done masks)",
    )


def test_both_learning_every_probe_is_cleared_naming_the_largest_value_error() -> None:
    found = _run(
        _pairs({"discount": {**PASS, "value_error": 0.08}}, {"action": {**PASS, "value_error": 0.2}})
    )
    (finding,) = found.values()
    assert finding.status is Status.CLEARED, finding.headline
    assert finding.evidence.summary == "both learn all five probes in 32,768 steps (largest value error 0.2)"
    assert (finding.evidence.baseline, finding.evidence.candidate) == ("5/5 passed", "5/5 passed")


def test_one_rung_failed_by_a_little_is_suspect_naming_what_it_isolates() -> None:
    reason = "P(good action) 0.62 < 0.9"
    (finding,) = _run(_pairs({}, {"action": _fail(0.3, reason)})).values()
    assert finding.status is Status.SUSPECT and finding.severity is Severity.HIGH, finding.headline
    assert finding.evidence.effect == 1.0 and finding.evidence.candidate == "4/5 passed"
    assert finding.evidence.summary == (
        "the candidate fails action (the baseline passes it); the first failing rung, 4. action, isolates the "
        f"policy loss (advantage sign, log-probabilities): {reason}"
    )
    assert "make_probe_env('action', num_envs, seed)" in finding.remediation


@pytest.mark.parametrize(
    ("failed", "first"),
    [
        ({"discount": _fail(0.6, "V(0) 1.39, target 1.99")}, "3. discount"),  # one rung, value off by > 0.5
        (
            {"observation_action": _fail(0.1, "p 0.5"), "observation": _fail(0.2, "V(-1) -0.8")},
            "2. observation",
        ),
    ],
)
def test_a_rung_missed_by_far_or_two_rungs_failed_are_confirmed_naming_the_first(
    failed: dict[str, dict[str, Any]], first: str
) -> None:
    (finding,) = _run(_pairs({}, failed)).values()
    assert finding.status is Status.CONFIRMED, finding.headline
    assert finding.evidence.effect == float(len(failed))
    assert f"the first failing rung, {first}," in finding.evidence.summary


def test_probes_both_sides_fail_are_noted_with_the_steps_and_the_rest_cleared() -> None:
    both = {"observation_action": _fail(0.1, "p 0.5")}
    found = _run(_pairs(both, both), steps=4096)
    assert {k: f.status for k, f in found.items()} == {"loss/probe-envs-both": Status.NOTED}
    noted = found["loss/probe-envs-both"]
    assert noted.severity is Severity.LOW
    assert noted.evidence.summary == (
        "both sides fail observation_action in 4,096 steps: either a shared bug or too short a run for these settings"
    )


def test_a_side_whose_train_takes_no_env_fn_is_skipped_naming_the_argument() -> None:
    unsupported = {"supported": False, "passed": False, "reason": "train() takes no env_fn argument"}
    found = _run(_pairs({}, dict.fromkeys(probe_names(), unsupported)))
    (finding,) = found.values()
    assert finding.status is Status.SKIPPED, finding.headline
    assert (
        finding.evidence.summary == "candidate: no probe-environment runs (train() takes no env_fn argument)"
    )
    assert "give train() an env_fn=(num_envs, seed) -> VectorEnv argument" in finding.remediation
