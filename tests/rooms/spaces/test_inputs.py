"""The tests of :mod:`rlaudit.spaces.inputs`: the count of shifted features, and the knock-on of a normalizer
not restored."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rlaudit.spaces.inputs import SHIFTED_FRACTION, input_shift


def test_the_shifted_count_and_its_denominator_are_one_population() -> None:
    # 48 features: 40 varying ones of which 38 shift (normalized on one path, raw on the other), 2 constants
    # that are 0 after normalization and 3 raw, and 6 zero padding features equal on both paths
    train_mean = np.r_[np.zeros(40), np.zeros(2), np.zeros(6)]
    train_std = np.r_[np.ones(40), np.zeros(2), np.zeros(6)]
    eval_mean = np.r_[np.full(38, 4.0), np.zeros(2), np.full(2, 3.0), np.zeros(6)]
    eval_std = np.r_[np.full(38, 9.0), np.ones(2), np.zeros(2), np.zeros(6)]
    v = input_shift(train_mean, train_std, eval_mean, eval_std)
    assert (v["shifted"], v["compared"], v["varying"], v["features"]) == (40, 42, 40, 48)
    assert v["shifted"] <= v["compared"] and v["fraction"] == pytest.approx(40 / 42)
    assert v["sentence"] == (
        "40 of 42 features shifted (40 vary, 2 constant and differ, 6 identical constants left out)"
    )
    # padding never dilutes a shift below the threshold: 2 of 2 varying features shifted among 100 zeros
    padded = input_shift(
        np.zeros(102),
        np.r_[np.ones(2), np.zeros(100)],
        np.r_[5.0, 5.0, np.zeros(100)],
        np.r_[np.ones(2), np.zeros(100)],
    )
    assert padded["fraction"] == 1.0 > SHIFTED_FRACTION
    assert padded["sentence"] == "2 of 2 features shifted (2 vary, 100 identical constants left out)"
    same = input_shift(np.zeros(4), np.ones(4), np.zeros(4), np.ones(4))
    assert (same["shifted"], same["fraction"], same["sentence"]) == (
        0,
        0.0,
        "0 of 4 features shifted (4 vary)",
    )
    nothing = input_shift(np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3))
    assert nothing["fraction"] == 0.0 and nothing["compared"] == 0


@pytest.mark.expensive  # a knock-on check beyond the detection matrix: one more training run
def test_normalizer_not_restored_shows_as_a_labelled_knock_on(make_wb, describe) -> None:
    from rlaudit.spaces import audit

    section = audit.network_input(make_wb("builtin:reference+checkpointing.normalizer_not_restored"))
    finding = next(f for f in section.findings if f.id == "spaces/network-input")
    assert finding.status.value == "SUSPECT", describe(section.findings)
    assert "04_checkpointing" in finding.evidence.summary and "case 002" in finding.evidence.summary
    shifted, compared = map(
        int, re.search(r"(\d+) of (\d+) features shifted", finding.evidence.summary).groups()
    )
    assert 0 < shifted <= compared
