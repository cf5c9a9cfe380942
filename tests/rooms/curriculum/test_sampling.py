"""The tests of :mod:`rlaudit.curriculum.sampling`."""

from __future__ import annotations

import pytest

from rlaudit.curriculum import audit, common, sampling


def test_tvd_interval_of_two_samples_of_one_distribution_stays_below_the_margin() -> None:
    counts = {str(k): 625 for k in range(16)}  # 10,000 draws over 16 tasks
    point, low, high = sampling.tvd_interval(counts, dict(counts), seed=0)
    assert point == 0.0 and low == 0.0 and 0 < high < sampling.TVD_MARGIN
    skewed = {**counts, "0": 2625}
    assert sampling.tvd_interval(skewed, counts, seed=0)[1] > sampling.TVD_MARGIN


def test_a_subject_without_a_curriculum_is_skipped_naming_it() -> None:
    from types import SimpleNamespace

    from rlaudit.checks import Check, Missing

    none = SimpleNamespace(result={"has_curriculum": False})
    c = Check(audit.sampling.spec, SimpleNamespace(profile=None, metric=None))
    with pytest.raises(Missing, match="make_curriculum"):
        common.no_curriculum(c, {"baseline": none, "candidate": none})
    one = common.no_curriculum(c, {"baseline": SimpleNamespace(result={}), "candidate": none})
    assert one is not None and one.findings[0].status.value == "SUSPECT"
