"""The tests of :mod:`rlaudit.init.probes`."""

from __future__ import annotations

import numpy as np
import pytest

from rlaudit.init.probes import head_outputs


def test_head_outputs_entropy_and_scales() -> None:
    uniform = head_outputs(np.zeros((4, 5)), np.array([1.0, 1.0, 3.0, 3.0]), 5)
    assert uniform["entropy_ratio"] == pytest.approx(1.0)
    assert uniform["logit_std"] == 0.0
    assert uniform["value_mean"] == 2.0 and uniform["value_std"] == 1.0
    peaked = head_outputs(np.array([[10.0, 0, 0, 0, 0]]), None, 5)
    assert peaked["entropy_ratio"] < 0.01 and peaked["value_std"] is None
