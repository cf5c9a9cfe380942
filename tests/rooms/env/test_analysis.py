"""The tests of :mod:`rlaudit.env.analysis`."""

from __future__ import annotations


def test_repeats_to_settle_scales_with_the_squared_width() -> None:
    from rlaudit.env.analysis import repeats_to_settle

    # half-width ln(1.25/0.8)/2 against room ln 1.15: 5 * (0.2231 / 0.1398)^2 = 12.7
    assert repeats_to_settle(5, 1.0, 0.8, 1.25, 1.15) == 13
    assert repeats_to_settle(5, 1.2, 1.0, 1.4, 1.15) is None  # the estimate is beyond the margin already


def test_probe_sizes_come_from_the_profiles_column_with_floors_from_the_profile() -> None:
    from rlaudit.env.analysis import sizes
    from rlaudit.profiles import PROFILES

    smoke, standard = sizes(PROFILES["smoke"]), sizes(PROFILES["standard"])
    assert (smoke.equivalence_steps, standard.equivalence_steps) == (96, 512)
    assert sizes(PROFILES["standard"].replace(name="custom")) == standard  # another name: the standard column
    # rollout_steps: at least the column's floor, a twentieth of the profile's rollout steps when more
    assert sizes(PROFILES["standard"].replace(rollout_steps=100_000)).rollout_steps == 5_000
    assert sizes(PROFILES["smoke"].replace(rollout_steps=100)).rollout_steps == 1_000
    assert sizes(PROFILES["smoke"].replace(timing_repeats=12)).timing_repeats == 12
