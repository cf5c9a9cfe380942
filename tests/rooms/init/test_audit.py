"""Init room: scheme inference on hand-made weights, the policy at init, and the init detection matrix."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlaudit.init.probes import fans, head_outputs, param_stats
from rlaudit.init.schemes import infer_scheme, matches_ppo, name_gain


def rows_for(mats: list[np.ndarray]) -> list[dict]:
    """What the init probe records per seed for one parameter."""
    out = []
    for w in mats:
        st = param_stats(w)
        fan_in, fan_out = fans(w.shape)
        sv = np.linalg.svd(w.reshape(w.shape[0], -1), compute_uv=False) if w.ndim >= 2 else np.array([np.nan])
        out.append(
            {
                "ndim": w.ndim,
                "numel": w.size,
                "fan_in": fan_in,
                "fan_out": fan_out,
                "shape": "x".join(map(str, w.shape)),
                **st,
                "sv_max": float(sv.max()),
                "sv_min": float(sv.min()),
                "sv_mean": float(sv.mean()),
            }
        )
    return out


def orthogonal(rows: int, cols: int, gain: float, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(max(rows, cols), min(rows, cols))))
    q = q * np.sign(np.diag(r))
    return gain * (q if rows >= cols else q.T)[:rows, :cols]


def test_orthogonal_with_gain_sqrt2_is_recognised() -> None:
    rng = np.random.default_rng(0)
    s = infer_scheme(rows_for([orthogonal(64, 20, math.sqrt(2), rng) for _ in range(3)]))
    assert s.scheme == "orthogonal" and s.gain_name == "√2" and abs(s.gain - math.sqrt(2)) < 1e-9


def test_a_one_row_orthogonal_head_needs_the_same_norm_at_every_seed() -> None:
    rng = np.random.default_rng(1)
    unit = [orthogonal(1, 64, 1.0, rng) for _ in range(3)]
    assert infer_scheme(rows_for(unit)).scheme == "orthogonal"
    bound = 1 / math.sqrt(64)
    default = [rng.uniform(-bound, bound, size=(1, 64)) for _ in range(3)]
    assert infer_scheme(rows_for(default)).scheme != "orthogonal"


def test_pytorch_default_linear_init_is_recognised() -> None:
    rng = np.random.default_rng(2)
    bound = 1 / math.sqrt(110)
    s = infer_scheme(rows_for([rng.uniform(-bound, bound, size=(64, 110)) for _ in range(3)]))
    assert s.scheme == "torch-default"
    bias = [rng.uniform(-bound, bound, size=(64,)) for _ in range(3)]
    assert infer_scheme(rows_for(bias), weight_fan_in=110).scheme == "torch-default"


def test_xavier_and_kaiming_normal_are_told_apart() -> None:
    rng = np.random.default_rng(3)
    fan_in, fan_out = 200, 50
    xb = math.sqrt(6 / (fan_in + fan_out))
    xavier = infer_scheme(rows_for([rng.uniform(-xb, xb, size=(fan_out, fan_in)) for _ in range(3)]))
    assert xavier.scheme == "xavier-uniform" and xavier.gain_name == "1"
    kaiming = infer_scheme(
        rows_for([rng.normal(0, math.sqrt(2 / fan_in), size=(fan_out, fan_in)) for _ in range(3)])
    )
    assert kaiming.scheme == "kaiming-normal" and kaiming.gain_name == "√2"


def test_zero_and_constant_and_single_value_parameters() -> None:
    assert infer_scheme(rows_for([np.zeros(8)] * 2)).scheme == "zeros"
    assert infer_scheme(rows_for([np.full(8, 0.5)] * 2)).scheme == "constant"
    # a one-element bias: the seeds are the sample
    assert infer_scheme(rows_for([np.zeros(1)] * 3)).scheme == "zeros"
    assert infer_scheme(rows_for([np.array([0.1]), np.array([-0.2])])).scheme == "random"


def test_ppo_expectations() -> None:
    rng = np.random.default_rng(4)
    head = infer_scheme(rows_for([orthogonal(5, 64, 0.01, rng) for _ in range(2)]))
    assert matches_ppo("policy head", head) is True
    assert matches_ppo("hidden", head) is False
    assert matches_ppo("norm", head) is None
    assert name_gain(1.4142, 1e-3) == "√2" and name_gain(1.3, 0.01) == ""


def test_head_outputs_entropy_and_scales() -> None:
    uniform = head_outputs(np.zeros((4, 5)), np.array([1.0, 1.0, 3.0, 3.0]), 5)
    assert uniform["entropy_ratio"] == pytest.approx(1.0)
    assert uniform["logit_std"] == 0.0
    assert uniform["value_mean"] == 2.0 and uniform["value_std"] == 1.0
    peaked = head_outputs(np.array([[10.0, 0, 0, 0, 0]]), None, 5)
    assert peaked["entropy_ratio"] < 0.01 and peaked["value_std"] is None


def test_scale_comparison_needs_a_practical_and_certain_difference() -> None:
    from rlaudit.init.audit import scale_comparison

    same = scale_comparison(np.array([1.0, 1.1, 0.9]), np.array([1.0, 1.1, 0.9]))
    assert same["ratio"] == 1.0 and same["ci"] == (1.0, 1.0) and same["kind"] == "equivalent"
    big = scale_comparison(np.array([0.01, 0.011, 0.009]), np.array([0.3, 0.33, 0.27]))
    assert big["flag"] and big["kind"] == "different" and 25 < big["ratio"] < 35
    modest = scale_comparison(np.array([1.0, 1.1, 0.9]), np.array([1.5, 1.6, 1.4]))
    assert not modest["flag"]  # ×1.5: real but below the practical threshold
    assert modest["kind"] == "equivalent"  # and the whole interval lies within ×2


def test_a_scale_near_the_margin_is_inconclusive_and_says_how_many_seeds_would_settle_it() -> None:
    from rlaudit.init.audit import scale_comparison

    # ×1.7 with a wide spread over three seeds: neither beyond ×2 nor shown within it
    near = scale_comparison(np.array([1.0, 1.3, 0.7]), np.array([1.7, 2.4, 1.0]))
    assert not near["flag"] and near["kind"] == "inconclusive"
    assert near["ci"][0] <= near["ratio"] <= near["ci"][1]
    assert near["needed"] is not None and near["needed"] > 3


def test_dropped_orthogonal_init_is_flagged(make_wb, flagged, describe) -> None:
    from rlaudit import init

    sections = init.audit_all(make_wb("builtin:reference+init.orthogonal_dropped"))
    found = flagged(sections, "init")
    ids = {f.id for f in found}
    assert "init/schemes" in ids, describe(f for s in sections for f in s.findings)
    assert "init/policy-at-init" in ids
    schemes = next(f for f in found if f.id == "init/schemes")
    assert "hidden: orthogonal √2 → PyTorch default" in schemes.evidence.summary
    at_init = next(f for f in found if f.id == "init/policy-at-init")
    assert "logit scale ×" in at_init.evidence.summary and at_init.reads == ["agents"]


@pytest.mark.parametrize("seeds", [3, pytest.param(6, marks=pytest.mark.expensive)])
def test_reference_against_itself_is_quiet_over_several_seeds(
    audit_cache: str, flagged, describe, seeds: int
) -> None:
    from rlaudit import init
    from rlaudit.engine.workbench import Workbench
    from rlaudit.profiles import get_profile

    profile = get_profile("smoke").replace(seeds=seeds)
    with Workbench("builtin:reference", "builtin:reference", profile=profile) as wb:
        sections = init.audit_all(wb)
    findings = [f for s in sections for f in s.findings]
    assert not flagged(sections), describe(findings)
    assert all(f.status.value == "CLEARED" for f in findings), describe(findings)


@pytest.mark.expensive  # a knock-on check beyond the detection matrix: one more subject
def test_hidden_size_change_keeps_the_init_cleared(make_wb, flagged, describe) -> None:
    from rlaudit import init

    sections = init.audit_all(make_wb("builtin:reference+agents.hidden_size"))
    assert not flagged(sections), describe(f for s in sections for f in s.findings)


def test_policy_outputs_missing_on_both_sides_name_both(tmp_path) -> None:
    """A continuous-action pair has no discrete policy head on either side: the SKIPPED names both sides (it
    named the baseline only, as if the candidate had them)."""
    import json

    from rlaudit.checks import Check, Missing
    from rlaudit.engine.store import ProbeResult
    from rlaudit.engine.workbench import Pair
    from rlaudit.init.audit import policy_at_init

    results = []
    for side in ("baseline", "candidate"):
        (tmp_path / side).mkdir()
        outputs = {"seed": [0, 1], "value_mean": [0.1, 0.2], "value_std": [0.3, 0.4]}
        (tmp_path / side / "outputs.json").write_text(json.dumps(outputs))
        results.append(ProbeResult(side, "s", "init_stats", {}, True, result={}, dir=tmp_path / side))
    with pytest.raises(Missing) as stopped:
        policy_at_init.__wrapped__(Check(policy_at_init.spec, wb=None), Pair(*results))
    assert stopped.value.sides == ("baseline", "candidate")
    assert "entropy_ratio, logit_std" in stopped.value.what
