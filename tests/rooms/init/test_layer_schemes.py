"""The tests of :mod:`rlaudit.init.layer_schemes`: the schemes check on parameters drawn by hand (numpy, seeded)
and summarized as the init probe writes them (``params.json``, ``singular.npz``, ``tree.json``), one case per
verdict, and its helpers (roles, the table matched by structure, the statistics per parameter).

The network is an actor 16→32→3 and a critic 16→32→1 (:func:`support.artifacts.network_tree`): eight parameters,
two hidden weights, two hidden biases, the policy and value heads and their biases. The stand-in workbench's
profile (smoke) gives the check three seeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from rlaudit.init.common import seeds_for
from rlaudit.init.layer_schemes import compare_init, parameter_statistics, roles, schemes
from rlaudit.init.probes import fans, param_stats
from support.artifacts import artifact_pair, lacking, network_tree
from support.runs import bench

TREE = network_tree(obs=16, widths=(32,), n_actions=3)
SEEDS = (0, 1, 2)

Init = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def orthogonal(gain: float) -> Init:
    """Orthogonal rows or columns scaled by ``gain`` (every singular value equals it)."""

    def draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        rows, cols = shape
        q, r = np.linalg.qr(rng.normal(size=(max(rows, cols), min(rows, cols))))
        q = q * np.sign(np.diag(r))
        return gain * (q if rows >= cols else q.T)

    return draw


def torch_default(fan_in: int) -> Init:
    """PyTorch's Linear default: U(±1/√fan_in), for the weight and the bias alike."""
    return lambda rng, shape: rng.uniform(-1.0, 1.0, size=shape) / math.sqrt(fan_in)


def zeros(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape)


PPO = {"hidden": orthogonal(math.sqrt(2)), "policy head": orthogonal(0.01), "value head": orthogonal(1.0)}
DEFAULT = {"hidden": torch_default(16), "policy head": torch_default(32), "value head": torch_default(32)}


def _artifacts(weights: dict[str, Init], biases: dict[str, Init] | None = None) -> dict[str, Any]:
    """What the init probe writes for :data:`TREE` at :data:`SEEDS`: weights drawn by role, biases zero unless
    ``biases`` gives a role its draw."""
    role = roles(TREE)
    cols = "seed name module cls shape ndim numel fan_in fan_out mean std min max frac_zero kurtosis norm".split()
    rows: dict[str, list[Any]] = {c: [] for c in [*cols, "sv_max", "sv_min", "sv_mean", "sv_std"]}
    singular: dict[str, np.ndarray] = {}
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        for m in TREE["modules"]:
            for leaf, shape in m["params"].items():
                draw = (
                    weights[role[m["path"]]]
                    if leaf == "weight"
                    else (biases or {}).get(role[m["path"]], zeros)
                )
                values = draw(rng, tuple(shape))
                name = f"{m['path']}.{leaf}"
                sv = np.linalg.svd(values, compute_uv=False) if values.ndim == 2 else np.full(0, np.nan)
                if sv.size:
                    singular[f"{seed}|{name}"] = sv
                fan_in, fan_out = fans(tuple(shape))
                row = {
                    "seed": seed,
                    "name": name,
                    "module": m["path"],
                    "cls": m["cls"],
                    "shape": "x".join(map(str, shape)),
                    "ndim": len(shape),
                    "numel": int(values.size),
                    "fan_in": fan_in,
                    "fan_out": fan_out,
                    **param_stats(values),
                    "sv_max": float(sv.max()) if sv.size else math.nan,
                    "sv_min": float(sv.min()) if sv.size else math.nan,
                    "sv_mean": float(sv.mean()) if sv.size else math.nan,
                    "sv_std": float(sv.std()) if sv.size else math.nan,
                }
                for key in rows:
                    rows[key].append(row[key])
    return {"tree": TREE, "params": rows, "singular.npz": singular}


def _findings(tmp: Path, baseline: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    return {f.id: f for f in schemes(bench(), given=artifact_pair(tmp, baseline, candidate)).findings}


def test_roles_and_seeds() -> None:
    assert roles(TREE) == {
        "actor.0": "hidden",
        "actor.2": "policy head",
        "critic.0": "hidden",
        "critic.2": "value head",
    }
    assert seeds_for(bench()) == list(SEEDS)


def test_the_table_matches_parameters_by_structure_and_names_each_scheme() -> None:
    import pandas as pd

    ppo = _artifacts(PPO)
    table = compare_init(TREE, TREE, pd.DataFrame(ppo["params"]), pd.DataFrame(_artifacts(DEFAULT)["params"]))
    rows = table.set_index("parameter")
    assert len(table) == 8 and list(rows["candidate"]) == list(rows.index)
    hidden = rows.loc["actor.0.weight"]
    assert (hidden["role"], hidden["scheme b"], hidden["ppo b"]) == (
        "hidden",
        "orthogonal, gain 1.41 (√2)",
        True,
    )
    assert hidden["gain b"] == pytest.approx(math.sqrt(2))
    assert hidden["scheme c"] == "PyTorch default (kaiming_uniform a=√5: U(±1/√fan_in))"
    assert (hidden["ppo c"], hidden["same"]) == (False, False)
    # U(±1/√16) has std 1/√48 = 0.144; an orthogonal 32x16 matrix with gain √2 has std √2·√(16/512) = 0.25
    assert hidden["std b"] == pytest.approx(0.25, rel=1e-3)
    assert hidden["std c"] == pytest.approx(1 / math.sqrt(48), rel=0.1)
    assert rows.loc["actor.0.bias", "role"] == "bias" and rows.loc["actor.0.bias", "scheme b"] == "zeros"
    assert rows.loc["critic.2.weight", "scheme b"] == "orthogonal (unit-norm vector), gain 1"


def test_the_same_ppo_init_on_both_sides_is_cleared_naming_each_role(tmp_path: Path) -> None:
    (finding,) = _findings(tmp_path, _artifacts(PPO), _artifacts(PPO)).values()
    assert finding.status is Status.CLEARED and finding.evidence.effect == 0.0, finding.headline
    assert finding.evidence.summary == (
        "same init: bias zeros; hidden orthogonal, gain 1.41 (√2); policy head orthogonal, gain 0.01; "
        "value head orthogonal (unit-norm vector), gain 1 over 3 seeds (the PPO scheme)"
    )
    assert finding.evidence.baseline == finding.evidence.candidate


def test_a_lost_orthogonal_gain_is_suspect_naming_both_gains_and_the_ppo_scheme(tmp_path: Path) -> None:
    candidate = _artifacts({**PPO, "hidden": orthogonal(1.0)})
    (finding,) = _findings(tmp_path, _artifacts(PPO), candidate).values()
    assert finding.status is Status.SUSPECT and finding.severity is Severity.HIGH, finding.headline
    assert finding.evidence.effect == 2.0  # actor.0.weight and critic.0.weight
    assert finding.evidence.summary == (
        "2 of 8 parameters initialized differently: hidden: orthogonal √2 → orthogonal 1 (2 tensors) — the "
        "candidate lost the PPO initialization (over 3 seeds)"
    )
    assert finding.remediation.startswith(
        "Initialize the candidate like the baseline in make_policy: actor.0.weight: orthogonal, gain 1.41 (√2); "
        "critic.0.weight: orthogonal, gain 1.41 (√2)"
    )


def test_one_head_changed_without_losing_the_ppo_scheme_is_a_medium_suspect(tmp_path: Path) -> None:
    candidate = _artifacts({**DEFAULT, "policy head": orthogonal(0.01)})
    (finding,) = _findings(tmp_path, _artifacts(DEFAULT), candidate).values()
    assert finding.status is Status.SUSPECT and finding.severity is Severity.MEDIUM, finding.headline
    assert finding.evidence.summary == (
        "1 of 8 parameters initialized differently: policy head: PyTorch default → orthogonal 0.01 (1 tensor) "
        "(over 3 seeds)"
    )


def test_the_same_default_init_is_cleared_and_its_distance_from_ppo_noted(tmp_path: Path) -> None:
    side = _artifacts(DEFAULT, biases={"hidden": torch_default(16)})
    found = _findings(tmp_path, side, side)
    assert {k: f.status for k, f in found.items()} == {
        "init/schemes": Status.CLEARED,
        "init/ppo-details": Status.NOTED,
    }
    assert not found["init/schemes"].evidence.summary.endswith("(the PPO scheme)")
    noted = found["init/ppo-details"]
    assert noted.severity is Severity.LOW
    # off the PPO scheme: the two hidden weights, the two hidden biases and both heads; the head biases are zero
    assert noted.evidence.summary.startswith(
        "both sides deviate from the PPO initialization in the same way for 6"
    )
    assert "bias PyTorch default bias U(±1/√fan_in)" in noted.evidence.summary
    assert noted.evidence.baseline == noted.evidence.candidate


def test_a_value_learner_is_not_held_to_the_ppo_initialization(tmp_path: Path) -> None:
    """A DQN, SAC or TD3 (both sides expose compute_td_targets) has no PPO details to deviate from: an SB3 TD3
    pair got "both sides deviate from the PPO initialization in the same way for 36 parameters"."""
    side = _artifacts(DEFAULT, biases={"hidden": torch_default(16)})
    wb = bench()
    wb.capabilities = lambda side, load=True: frozenset({"train", "make_policy", "compute_td_targets"})
    found = {f.id: f for f in schemes(wb, given=artifact_pair(tmp_path, side, side)).findings}
    assert {k: f.status for k, f in found.items()} == {"init/schemes": Status.CLEARED}
    wb.capabilities = lambda side, load=True: frozenset({"train", "make_policy", "compute_loss"})
    found = {f.id: f for f in schemes(wb, given=artifact_pair(tmp_path / "ppo", side, side)).findings}
    assert found["init/ppo-details"].status is Status.NOTED  # an actor-critic is still compared with PPO's


def test_statistics_per_parameter_are_the_means_over_seeds() -> None:
    import pandas as pd

    params = pd.DataFrame(_artifacts(PPO)["params"])
    stats = parameter_statistics(params, params).set_index(["side", "name"])
    assert len(stats) == 16
    # every singular value of an orthogonal 32x16 matrix with gain √2 is √2; zero biases are all zeros
    assert stats.loc[("baseline", "actor.0.weight"), "sv_max"] == pytest.approx(math.sqrt(2))
    assert stats.loc[("candidate", "actor.0.weight"), "sv_min"] == pytest.approx(math.sqrt(2))
    assert stats.loc[("baseline", "critic.0.bias"), "frac_zero"] == 1.0


def test_a_side_without_make_policy_is_skipped_naming_it(tmp_path: Path) -> None:
    pair = artifact_pair(tmp_path, _artifacts(PPO), _artifacts(PPO))
    (finding,) = schemes(bench(), given=Pair(lacking("baseline", "make_policy"), pair.candidate)).findings
    assert finding.status is Status.SKIPPED, finding.headline
    assert finding.evidence.summary == "baseline lacks `make_policy`"
