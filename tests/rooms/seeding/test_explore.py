"""The power calculator of 13_seeding (``rlaudit.seeding.explore``): seeds read off the measured spread."""

from __future__ import annotations

import types

import matplotlib

matplotlib.use("Agg")  # tests only: no display here (the library itself never sets a backend)


def variance_section(sd: float, mean: float) -> types.SimpleNamespace:
    from rlaudit.findings import Evidence, Finding, Status

    details = {"metric": "return", "pooled_sd": sd, "variance": {"baseline": {"mean": mean}}}
    finding = Finding(
        id="seeding/variance",
        subsystem="seeding",
        hypothesis="h",
        status=Status.NOTED,
        evidence=Evidence(details=details),
    )
    return types.SimpleNamespace(findings=[finding])


def test_the_power_calculator_reads_seeds_off_the_measured_spread() -> None:
    from rlaudit.evidence import equivalence_seeds
    from rlaudit.seeding.explore import power_explorer
    from rlaudit.stats import power_seeds

    ex = power_explorer(variance_section(sd=10.0, mean=100.0))
    ex.figure()
    art = ex._artists
    # the default: a 10% gap (10 = one SD) at alpha 0.05, power 80%: 17 seeds per side (Cohen)
    assert art["detect"].get_xdata()[0] == power_seeds(10.0, 10.0) == 17
    assert art["clear"].get_xdata()[0] == equivalence_seeds(10.0, 10.0)
    n, power = art["curve"].get_data()
    assert power[list(n).index(17)] >= 0.8 > power[list(n).index(16)]
    ex.set(effect=50.0, alpha=0.01, power=0.95)  # 50% of a mean of 100: five SDs
    assert art["detect"].get_xdata()[0] == power_seeds(10.0, 50.0, alpha=0.01, power=0.95)
    assert art["target"].get_ydata()[0] == 0.95
    assert "alpha 0.01 and power 95%" in art["ax"].get_title()
    # no spread measured: a note instead of a calculator
    assert "No power calculator" in repr(power_explorer(variance_section(sd=0.0, mean=1.0)))
