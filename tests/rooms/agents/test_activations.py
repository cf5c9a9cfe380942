"""The tests of :mod:`rlaudit.agents.activations`: the activations check on per-layer statistics written by hand
(``tree.json`` and ``activations.json`` of the network probe), one case per verdict.

The stand-in workbench's profile (smoke) gives the check two torch seeds, so every layer has two rows per side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlaudit.agents.activations import activations
from rlaudit.agents.common import seeds_for
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from support.artifacts import artifact_pair, lacking, network_tree
from support.runs import bench

TREE = network_tree()  # actor 4→8→3 and critic 4→8→1, each with one Tanh: actor.0_act and critic.0_act

Layer = tuple[list[float], float, float]
"""A layer's activation std at each seed, its dead fraction and its saturated fraction (the same at every seed)."""


def _stats(**layers: Layer) -> dict[str, list[Any]]:
    """``activations.json`` (columns) for :data:`TREE`: the layers given by path (``actor_0_act`` for
    ``actor.0_act``), every other linear or activation layer with std 1 and no dead or saturated units."""
    given = {k.replace("_", ".", 1): v for k, v in layers.items()}
    cols: dict[str, list[Any]] = {
        k: []
        for k in ("seed", "path", "cls", "kind", "mean", "std", "unit_std", "dead", "saturated", "units")
    }
    for r in TREE["modules"]:
        stds, dead, saturated = given.get(r["path"], ([1.0, 1.0], 0.0, 0.0))
        for seed, std in enumerate(stds):
            row = (seed, r["path"], r["cls"], r["kind"], 0.0, std, std, dead, saturated, 8)
            for key, value in zip(cols, row, strict=True):
                cols[key].append(value)
    return cols


def _findings(tmp: Path, baseline: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    pair = artifact_pair(
        tmp, {"tree": TREE, "activations": baseline}, {"tree": TREE, "activations": candidate}
    )
    return {f.id: f for f in activations(bench(), given=pair).findings}


def test_the_stand_in_bench_gives_two_seeds() -> None:
    assert seeds_for(bench()) == [0, 1]


def test_close_scales_over_both_seeds_are_cleared_naming_the_range_and_dead_units(tmp_path: Path) -> None:
    # seed means: actor.0_act 0.81 | 0.82, critic.0_act 0.6 | 0.6 with 5% dead units on both sides; the ratio's
    # bootstrap interval over the two seeds lies within 0.80/0.83 … 0.83/0.80, inside ×1/1.5 to ×1.5
    baseline = _stats(actor_0_act=([0.8, 0.82], 0.0, 0.0), critic_0_act=([0.6, 0.6], 0.05, 0.0))
    candidate = _stats(actor_0_act=([0.81, 0.83], 0.0, 0.0), critic_0_act=([0.6, 0.6], 0.05, 0.0))
    (finding,) = _findings(tmp_path, baseline, candidate).values()
    assert finding.status is Status.CLEARED, finding.headline
    assert finding.evidence.summary == (
        "activation statistics agree: per-layer std 0.6–0.82 on both sides, at most 5% dead units, over 2 seeds"
    )
    assert finding.evidence.baseline == {"actor.0_act": 0.81, "critic.0_act": 0.6}
    assert finding.evidence.candidate == {"actor.0_act": 0.82, "critic.0_act": 0.6}


def test_scales_within_the_factor_but_spread_over_seeds_are_inconclusive(tmp_path: Path) -> None:
    # means 0.75 → 1.05: ×1.4, under ×1.5; resampling the two seeds reaches 0.9/1.0 = 0.9 and 1.2/0.5 = 2.4
    baseline = _stats(actor_0_act=([0.5, 1.0], 0.0, 0.0))
    candidate = _stats(actor_0_act=([0.9, 1.2], 0.0, 0.0))
    (finding,) = _findings(tmp_path, baseline, candidate).values()
    assert finding.status is Status.NOTED and finding.severity is Severity.INFO, finding.headline
    assert finding.evidence.effect == pytest.approx(1.4)
    assert finding.evidence.ci == pytest.approx((0.9, 2.4))
    assert finding.evidence.summary == (
        "no layer's activations differ by more than ×1.5, but the 2 seeds do not show they agree: actor.0_act std "
        "×1.4 [0.9, 2.4] (1 layer(s) inconclusive); more seeds would settle it"
    )


def test_a_halved_scale_is_noted_naming_the_layer_and_both_stds(tmp_path: Path) -> None:
    candidate = _stats(actor_0_act=([0.5, 0.5], 0.0, 0.0))
    found = _findings(tmp_path, _stats(), candidate)
    assert set(found) == {"agents/activation-scale"}
    finding = found["agents/activation-scale"]
    assert finding.status is Status.NOTED and finding.severity is Severity.LOW, finding.headline
    assert finding.evidence.summary == "activation std differs by more than ×1.5: actor.0_act std 1 → 0.5"
    assert finding.evidence.candidate == {"actor.0_act": 0.5, "critic.0_act": 1.0}


def test_dead_units_are_suspect_naming_the_layer_and_the_fractions(tmp_path: Path) -> None:
    found = _findings(tmp_path, _stats(), _stats(actor_0_act=([1.0, 1.0], 0.3, 0.0)))
    assert set(found) == {"agents/dead-units"}
    finding = found["agents/dead-units"]
    assert finding.status is Status.SUSPECT and finding.severity is Severity.MEDIUM, finding.headline
    assert (
        finding.evidence.summary
        == "units that pass no gradient from the start: actor.0_act dead units 0% → 30%"
    )
    assert finding.evidence.effect == pytest.approx(0.3)
    assert finding.evidence.candidate == {"actor.0_act": 0.3, "critic.0_act": 0.0}


def test_saturated_units_are_suspect_with_their_change_as_the_effect(tmp_path: Path) -> None:
    found = _findings(tmp_path, _stats(), _stats(critic_0_act=([1.0, 1.0], 0.0, 0.5)))
    finding = found["agents/dead-units"]
    assert finding.status is Status.SUSPECT, finding.headline
    assert finding.evidence.summary == (
        "units that pass no gradient from the start: critic.0_act saturated units 0% → 50%"
    )
    assert finding.evidence.effect == pytest.approx(0.5)
    assert finding.evidence.effect_label == "largest change in dead or saturated fraction"


def test_a_changed_activation_is_named_beside_the_dead_units(tmp_path: Path) -> None:
    relu = network_tree(act="ReLU")
    candidate = _stats(actor_0_act=([1.0, 1.0], 0.4, 0.0))
    candidate["cls"] = ["ReLU" if c == "Tanh" else c for c in candidate["cls"]]
    pair = artifact_pair(
        tmp_path, {"tree": TREE, "activations": _stats()}, {"tree": relu, "activations": candidate}
    )
    finding = {f.id: f for f in activations(bench(), given=pair).findings}["agents/dead-units"]
    assert finding.evidence.summary == (
        "units that pass no gradient from the start: actor.0_act dead units 0% → 40% (the activation changed: "
        "actor.0_act Tanh → ReLU; critic.0_act Tanh → ReLU)"
    )


def test_a_side_without_make_policy_is_skipped_naming_it(tmp_path: Path) -> None:
    pair = artifact_pair(
        tmp_path, {"tree": TREE, "activations": _stats()}, {"tree": TREE, "activations": _stats()}
    )
    (finding,) = activations(bench(), given=Pair(pair.baseline, lacking("candidate", "make_policy"))).findings
    assert finding.status is Status.SKIPPED, finding.headline
    assert finding.evidence.summary == "candidate lacks `make_policy`"
