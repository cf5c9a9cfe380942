"""The tests of :mod:`rlaudit.checkpointing.resume`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rlaudit.checkpointing.resume import continuity, resume_class


def test_resume_continuity_classes() -> None:
    full = pd.DataFrame(
        {
            "step": [1, 2, 3, 1, 2, 3, 2],
            "name": ["loss"] * 3 + ["kl"] * 3 + ["perf/sps"],
            "value": [1.0, 0.8, 0.6, 0.01, 0.02, 0.03, 5000.0],
        }
    )
    exact = full[full["step"] > 1]
    table = continuity(full, exact)
    assert set(table["name"]) == {"loss", "kl"}  # timing metrics are left out
    assert resume_class(table) == "exact"
    off = exact.assign(value=exact["value"] * np.where(exact["name"] == "loss", 1.5, 1.0))
    assert resume_class(continuity(full, off)) == "broken"
    slight = exact.assign(value=exact["value"] * (1 + 1e-3))
    assert resume_class(continuity(full, slight)) == "approximate"
    assert resume_class(continuity(full, full.iloc[:0])) == "unknown"
