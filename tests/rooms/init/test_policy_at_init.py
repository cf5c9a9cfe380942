"""The tests of :mod:`rlaudit.init.policy_at_init`."""

from __future__ import annotations

import numpy as np
import pytest


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
