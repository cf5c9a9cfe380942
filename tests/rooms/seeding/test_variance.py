"""The tests of :mod:`rlaudit.seeding.variance`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlaudit.seeding import audit


def test_variance_table_pools_the_sds() -> None:
    out = audit.variance_table({"baseline": [1.0, 3.0], "candidate": [2.0, 2.0, 5.0]}, seed=0)
    assert out["baseline"]["sd"] == pytest.approx(np.sqrt(2.0))
    assert out["candidate"]["sd"] == pytest.approx(np.std([2.0, 2.0, 5.0], ddof=1))
    assert out["pooled_sd"] == pytest.approx(np.sqrt((1 * 2.0 + 2 * 3.0) / 3))


def test_variance_reads_the_primary_metric_from_recorder_episodes(make_wb: Any) -> None:
    # The minimal subject reports returns through recorder.episode only: no logged scalar at all.
    subject = str(Path(__file__).resolve().parents[2] / "fixtures" / "minimal_train_subject.py")
    section = audit.variance(make_wb(subject, baseline=subject))
    (finding,) = section.findings
    assert finding.status.value == "NOTED", finding.headline
    details = finding.evidence.details
    assert details["metric"] == "return" and details["power_table"]
    assert {"seeds_to_detect", "seeds_to_clear"} <= set(details["power_table"][0])
    assert len(section.table(audit.POWER_TABLE)) == len(details["power_table"])
