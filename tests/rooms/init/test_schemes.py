"""The tests of :mod:`rlaudit.init.schemes`."""

from __future__ import annotations

import math

import numpy as np

from rlaudit.init.probes import fans, param_stats
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
