"""The tests of :mod:`rlaudit.agents.architecture`: the architecture check on module trees written by hand
(``tree.json`` of the network probe, :func:`support.artifacts.network_tree`), one case per verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlaudit.agents.architecture import architecture
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from support.artifacts import artifact_pair, lacking, network_tree
from support.runs import bench


def _findings(tmp: Path, baseline: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """The check's findings by id on the two trees."""
    section = architecture(bench(), given=artifact_pair(tmp, {"tree": baseline}, {"tree": candidate}))
    return {f.id: f for f in section.findings}


def _renamed(tree: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The same tree with module ``old`` called ``new`` everywhere the probe names it."""
    return json.loads(json.dumps(tree).replace(f'"{old}"', f'"{new}"'))


def test_the_same_network_is_cleared_naming_depth_width_activation_and_counts(tmp_path: Path) -> None:
    found = _findings(tmp_path, network_tree(), network_tree())
    finding = found.pop("agents/architecture")
    assert not found
    assert finding.status is Status.CLEARED and finding.evidence.effect == 0.0, finding.headline
    # actor 4→8→3: 4·8 + 8 + 8·3 + 3 = 67 parameters; critic 4→8→1: 40 + 9 = 49
    assert (
        finding.evidence.summary
        == "same architecture, 1 hidden layer of 8, Tanh; actor 67, critic 49 parameters"
    )
    assert (
        finding.evidence.baseline
        == finding.evidence.candidate
        == {
            "actor": "4→8→3 (Tanh)",
            "critic": "4→8→1 (Tanh)",
        }
    )


def test_a_narrower_network_is_suspect_naming_the_width_and_the_parameter_counts(tmp_path: Path) -> None:
    found = _findings(tmp_path, network_tree(widths=(64, 64)), network_tree(widths=(16, 16)))
    finding = found["agents/architecture"]
    assert finding.status is Status.SUSPECT and finding.severity is Severity.HIGH, finding.headline
    # 64: actor 320 + 4160 + 195, critic 320 + 4160 + 65 = 9,220; 16: 80 + 272 + 51 and 80 + 272 + 17 = 772
    assert finding.evidence.summary.startswith(
        "hidden width 64 → 16; parameters 9,220 → 772: 6 module(s) resized"
    )
    assert finding.evidence.effect == 6.0  # three linear layers per block
    assert "actor.2 Linear 64→64 became 16→16" in finding.evidence.details["changes"]
    assert finding.remediation.startswith(
        "Make the candidate's make_policy build the baseline's layers again: hidden width 64 → 16"
    )


def test_a_changed_activation_is_suspect_naming_it(tmp_path: Path) -> None:
    finding = _findings(tmp_path, network_tree(), network_tree(act="ReLU"))["agents/architecture"]
    assert finding.status is Status.SUSPECT and finding.severity is Severity.HIGH, finding.headline
    assert finding.evidence.summary == (
        "activation Tanh → ReLU: 2 module(s) changed in kind: actor.0_act Tanh → ReLU; critic.0_act Tanh → ReLU"
    )
    assert finding.evidence.candidate == {"actor": "4→8→3 (ReLU)", "critic": "4→8→1 (ReLU)"}


def test_an_input_layer_that_follows_the_observation_is_a_noted_knock_on_and_cleared(tmp_path: Path) -> None:
    found = _findings(tmp_path, network_tree(obs=4), network_tree(obs=6))
    assert {k: f.status for k, f in found.items()} == {
        "agents/io-follows-spaces": Status.NOTED,
        "agents/architecture": Status.CLEARED,
    }
    knock = found["agents/io-follows-spaces"]
    assert knock.evidence.effect == 2.0  # actor.0 and critic.0
    assert knock.evidence.summary.startswith(
        "input follows the observation size (4 → 6): actor.0 Linear 4→8 became 6→8; critic.0 Linear 4→8 became 6→8"
    )
    assert knock.evidence.baseline == {"observation": 4, "actions": 3}
    assert knock.evidence.candidate == {"observation": 6, "actions": 3}
    assert found["agents/architecture"].evidence.summary.endswith(
        "(the input layer follows the observation size)"
    )


def test_an_input_layer_resized_against_the_observation_is_suspect(tmp_path: Path) -> None:
    # both observations have 4 features, but the candidate's input layers take 5: 2·(5·8 + 8) = 96 against 80
    finding = _findings(tmp_path, network_tree(), network_tree(input_width=5))["agents/architecture"]
    assert finding.status is Status.SUSPECT, finding.headline
    assert finding.evidence.summary == (
        "2 module(s) resized: actor.0 Linear 4→8 became 5→8; critic.0 Linear 4→8 became 5→8 "
        "(parameters 116 → 132)"
    )


def test_a_renamed_module_is_noted_and_the_network_cleared(tmp_path: Path) -> None:
    found = _findings(tmp_path, network_tree(), _renamed(network_tree(), "critic.2", "critic.out"))
    assert {k: f.status for k, f in found.items()} == {
        "agents/renamed": Status.NOTED,
        "agents/architecture": Status.CLEARED,
    }
    renamed = found["agents/renamed"]
    assert renamed.evidence.effect == 1.0
    assert renamed.evidence.summary.startswith(
        "1 module(s) renamed with the same class and shapes: critic.2 → critic.out"
    )


def test_a_side_without_make_policy_is_skipped_naming_it(tmp_path: Path) -> None:
    pair = artifact_pair(tmp_path, {"tree": network_tree()}, {"tree": network_tree()})
    (finding,) = architecture(
        bench(), given=Pair(pair.baseline, lacking("candidate", "make_policy"))
    ).findings
    assert finding.status is Status.SKIPPED, finding.headline
    assert finding.evidence.summary == "candidate lacks `make_policy`"
