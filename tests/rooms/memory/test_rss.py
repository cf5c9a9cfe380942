"""The tests of :mod:`rlaudit.memory.rss`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from rlaudit.memory import audit
from rlaudit.stats import Interval


def test_leak_verdicts_judge_the_extra_growth() -> None:
    thr = audit.RSS_PER_1000_STEPS
    flat = Interval(100.0, -500.0, 700.0)
    leak = Interval(10 * thr, 8 * thr, 12 * thr)
    assert audit.leak_verdict(flat, leak, thr).different  # 10 thr more, interval far from 0
    assert audit.leak_verdict(leak, leak, thr).inconclusive  # the same slope, each known to ±2 thr
    tight = Interval(10 * thr, 9.9 * thr, 10.1 * thr)
    assert audit.leak_verdict(tight, tight, thr).equivalent  # both grow alike: no extra growth
    assert audit.leak_verdict(flat, flat, thr).equivalent
    noisy = Interval(0.0, -3 * thr, 3 * thr)
    assert audit.leak_verdict(flat, noisy, thr).inconclusive  # neither within ±thr nor beyond it
    assert audit.leak_verdict(None, None, thr).inconclusive


def test_extra_growth_lies_inside_its_own_interval() -> None:
    # The report that printed effect -1.03e+04 with interval [2.42e+04, 1.1e+05] (the candidate's own interval).
    base = Interval(7.0e4, 3.0e4, 1.2e5)
    cand = Interval(5.97e4, 2.42e4, 1.1e5)
    diff = audit.growth_difference(base, cand)
    assert diff.point == pytest.approx(-1.03e4)
    assert diff.low < diff.point < diff.high
    half = 1.959963984540054
    se = np.hypot((1.1e5 - 2.42e4) / (2 * half), (1.2e5 - 3.0e4) / (2 * half))
    assert diff.high - diff.point == pytest.approx(half * se)
    assert audit.growth_difference(None, cand) == cand and audit.growth_difference(base, None) is None


def test_training_runs_without_a_memory_table_are_skipped_by_name(
    bench: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlaudit.trainer.runs import RunData

    table = RunData.table
    monkeypatch.setattr(
        RunData, "table", lambda self, name: pd.DataFrame() if name == "memory" else table(self, name)
    )
    section = audit.rss_training(bench("builtin:reference"))
    (finding,) = section.findings
    assert finding.status.value == "SKIPPED", finding.headline
    assert "memory table" in finding.evidence.summary and "recorder" in finding.remediation


def test_rss_slope_skips_the_warm_up() -> None:
    x = np.arange(0, 11) * 1000
    rss = np.where(x < 2000, 1e8 + 5e6 * (x > 0), 1.05e8 + 2048 * (x - 2000) / 1000)
    iv = audit.rss_slope(pd.DataFrame({"env_steps": x, "rss_bytes": rss}), "env_steps", seed=0)
    assert iv.point == pytest.approx(2048.0, rel=1e-6)
