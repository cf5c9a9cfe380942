"""The tests of :mod:`rlaudit.agents.execution`: the execution check on traced forward passes written by hand
(``tree.json`` of the network probe, :func:`support.artifacts.network_tree`), one case per verdict, and its
input/head-size helper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlaudit.agents import trees as tr
from rlaudit.agents.execution import _io_problems, execution
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from support.artifacts import artifact_pair, lacking, network_tree
from support.runs import bench


def _findings(tmp: Path, baseline: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """The check's findings by id on the two trees."""
    section = execution(bench(), given=artifact_pair(tmp, {"tree": baseline}, {"tree": candidate}))
    return {f.id: f for f in section.findings}


def test_the_same_flow_is_cleared_naming_calls_trunks_inputs_and_heads(tmp_path: Path) -> None:
    (finding,) = _findings(tmp_path, network_tree(), network_tree()).values()
    assert finding.status is Status.CLEARED, finding.headline
    # per block: Linear, Tanh, Linear = 3 calls; two blocks
    assert finding.evidence.summary == (
        "same flow: 6 | 6 module calls via `get_action_and_value`, separate actor and critic trunks; "
        "input 4, 4 = observation 4; policy head 3 = 3 actions; value head 1"
    )
    assert finding.evidence.baseline == {"calls": 6, "trunk": "separate", "entry": "get_action_and_value"}
    assert finding.evidence.candidate == finding.evidence.baseline


def test_inputs_that_follow_a_wider_observation_are_cleared_naming_both(tmp_path: Path) -> None:
    (finding,) = _findings(tmp_path, network_tree(obs=4), network_tree(obs=6)).values()
    assert finding.status is Status.CLEARED, finding.headline
    assert "input 4, 4 = observation 4 | 6, 6 = 6;" in finding.evidence.summary


def test_an_input_wider_than_the_observation_is_suspect_naming_both_widths(tmp_path: Path) -> None:
    found = _findings(tmp_path, network_tree(), network_tree(input_width=5))
    assert set(found) == {"agents/io-sizes"}
    finding = found["agents/io-sizes"]
    assert finding.status is Status.SUSPECT and finding.severity is Severity.HIGH, finding.headline
    assert finding.evidence.summary == (
        "the candidate's input layer(s) take {'actor.0': 5, 'critic.0': 5} but the observation has 4 features"
    )
    assert finding.evidence.baseline == {"actor.0": 4, "critic.0": 4}


def test_a_policy_head_not_as_wide_as_the_actions_is_named_per_side() -> None:
    facts = tr.io_facts({**network_tree(n_actions=3), "n_actions": 4})  # the head has 3 outputs, 4 actions
    assert (facts["policy_width"], facts["value_width"], facts["inputs_ok"]) == (3, 1, True)
    assert _io_problems({"baseline": tr.io_facts(network_tree()), "candidate": facts}) == [
        "the candidate's policy head has 3 outputs for 4 actions"
    ]


def test_a_shared_trunk_is_suspect_and_a_repeated_call_noted(tmp_path: Path) -> None:
    candidate = network_tree(shared_trunk=("actor.0", "actor.0_act"), calls_twice=("actor.0",))
    found = _findings(tmp_path, network_tree(), candidate)
    assert {k: f.status for k, f in found.items()} == {
        "agents/trunk": Status.SUSPECT,
        "agents/repeated-calls": Status.NOTED,
    }
    trunk = found["agents/trunk"]
    assert trunk.severity is Severity.HIGH
    assert (trunk.evidence.baseline, trunk.evidence.candidate) == ("separate", "shared: actor.0, actor.0_act")
    assert trunk.evidence.summary.startswith(
        "actor and critic trunks are separate in the baseline but shared: actor.0, actor.0_act in the candidate"
    )
    repeated = found["agents/repeated-calls"]
    assert repeated.evidence.summary == "modules called more than once per pass: none vs {'actor.0': 2}"
    assert (repeated.evidence.baseline, repeated.evidence.candidate) == ("each module once", {"actor.0": 2})


def test_a_side_without_make_env_is_skipped_naming_it(tmp_path: Path) -> None:
    pair = artifact_pair(tmp_path, {"tree": network_tree()}, {"tree": network_tree()})
    (finding,) = execution(bench(), given=Pair(lacking("baseline", "make_env"), pair.candidate)).findings
    assert finding.status is Status.SKIPPED, finding.headline
    assert finding.evidence.summary == "baseline lacks `make_env`"


def test_a_network_with_continuous_actions_and_no_value_head_says_so(tmp_path: Path) -> None:
    """A TD3 policy's forward runs its actor alone, on continuous actions: the summary read "policy head None
    = None actions; value head None"."""
    tree = network_tree()
    tree["n_actions"] = None
    tree["heads"] = {"policy": None, "value": None}
    (finding,) = _findings(tmp_path, tree, tree).values()
    assert finding.status is Status.CLEARED, finding.headline
    assert finding.evidence.summary.endswith(
        "continuous actions (no action count for a head to match); no value head in the forward pass"
    )
    assert "None" not in finding.evidence.summary
