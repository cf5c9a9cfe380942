"""The tests of :mod:`rlaudit.seeding.power`."""

from __future__ import annotations

import pytest

from rlaudit.seeding import power


def test_power_table_gives_seeds_to_detect_and_to_clear() -> None:
    table = power.seeds_table(1.0, [0.5, 1.0, 2.0], baseline_mean=10.0)
    assert list(table["seeds_to_detect"]) == [64, 17, 6]  # as stats.power_seeds (noncentral t)
    assert list(table["seeds_per_arm"]) == [64, 17, 6]
    # TOST, no true difference: n = 2 (z_0.95 + z_0.90)^2 / (margin / sd)^2 = 17.1 -> 18 at margin 1 SD
    assert table["seeds_to_clear"][1] == 18
    assert list(table["effect (% of baseline mean)"]) == pytest.approx([5.0, 10.0, 20.0])
    assert power.seeds_needed(table, 1.5) == 17  # the 1.0 row: a smaller effect needs more seeds
    assert power.seeds_needed(table.to_dict("records"), 2.0, kind="clear") == table["seeds_to_clear"][2]
    assert power.seeds_needed(table, 0.1) is None
    with pytest.raises(ValueError, match="positive"):
        power.seeds_table(1.0, [0.0])


def test_table_effects_follow_the_baseline_mean_or_the_sd() -> None:
    assert power.table_effects(2.0, -40.0) == pytest.approx([2.0, 4.0, 10.0, 20.0])
    assert power.table_effects(2.0, 0.0) == pytest.approx([1.0, 2.0, 4.0])
