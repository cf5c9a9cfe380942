"""The tests of :mod:`rlaudit.spaces.observations`."""

from __future__ import annotations

import numpy as np
import pytest

from rlaudit import stats
from rlaudit.spaces.observations import shifted_features, smd_from_moments, stack_alignment
from rlaudit.spaces.rollout import feature_moments


def test_smd_from_moments_matches_the_sample_version() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(0.0, 1.0, size=(200, 3))
    b = rng.normal([0.0, 0.5, 2.0], [1.0, 1.0, 2.0], size=(300, 3))
    ma, mb = feature_moments(a), feature_moments(b)
    ours = smd_from_moments(ma["mean"], ma["var"], mb["mean"], mb["var"])
    np.testing.assert_allclose(ours, stats.standardized_mean_difference(b, a))
    assert smd_from_moments(np.array([1.0]), np.array([0.0]), np.array([1.0]), np.array([0.0]))[0] == 0.0
    assert np.isinf(smd_from_moments(np.array([1.0]), np.array([0.0]), np.array([2.0]), np.array([0.0]))[0])


def test_shifted_features_by_mean_or_spread_but_not_constants() -> None:
    mean_a, std_a = np.array([0.0, 0.0, 0.0, 5.0]), np.array([1.0, 1.0, 1.0, 0.0])
    mean_b, std_b = np.array([0.5, 0.0, 0.05, 5.0]), np.array([1.0, 0.3, 1.0, 0.0])
    shifted, smd = shifted_features(mean_a, std_a, mean_b, std_b)
    assert shifted.tolist() == [True, True, False, False]  # mean shift, spread ×0.3, small, constant
    assert smd[0] == pytest.approx(0.5)


def test_stack_alignment_recognises_k_copies() -> None:
    rng = np.random.default_rng(1)
    frame = rng.normal(size=(500, 6))
    stacked = np.concatenate([frame, frame, frame], axis=1)
    align = stack_alignment(feature_moments(frame), feature_moments(stacked))
    assert align["k"] == 3 and align["matches"] and max(align["block_max_smd"]) == 0.0
    other = np.concatenate([frame, frame + 3.0], axis=1)
    assert not stack_alignment(feature_moments(frame), feature_moments(other))["matches"]
    assert stack_alignment(feature_moments(frame), feature_moments(rng.normal(size=(10, 7)))) is None
