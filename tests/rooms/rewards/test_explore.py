"""11_rewards' component picker: the points drawn are the picked component's events or fitted reward per
episode, per side and policy; the changed component comes first; nothing to pick gives a muted line."""

from __future__ import annotations

import types

import matplotlib
import numpy as np
import pandas as pd
import pytest

from rlaudit.display import RichText
from rlaudit.engine.workbench import Pair
from rlaudit.rewards import explore
from rlaudit.rewards.components import PER_STEP

matplotlib.use("Agg")  # tests only: no display here

PAYS = {"baseline": {"ore.get": 1.0, "battery.get": 0.8}, "candidate": {"ore.get": 1.0, "battery.get": 0.0}}
PENALTY = -0.01


def episodes(side: str, seed: int, n: int = 60) -> pd.DataFrame:
    """Episodes whose return is exactly the components' pay plus a per-step penalty (the fit is exact)."""
    rng = np.random.default_rng(seed)
    ore, battery = rng.integers(0, 6, n), rng.integers(0, 4, n)
    length = rng.integers(20, 200, n)
    ret = PAYS[side]["ore.get"] * ore + PAYS[side]["battery.get"] * battery + PENALTY * length
    return pd.DataFrame(
        {"return": ret, "length": length, "reported.ore.get": ore, "reported.battery.get": battery}
    )


def tables() -> dict[str, dict[str, pd.DataFrame]]:
    return {
        "random": {"baseline": episodes("baseline", 1), "candidate": episodes("candidate", 2)},
        "wsls": {"baseline": episodes("baseline", 3, 40), "candidate": episodes("candidate", 4, 40)},
    }


def points(ex, side: str) -> np.ndarray:
    return np.asarray(ex._artists["points"][side].get_offsets())


def test_the_vanished_component_comes_first_and_every_control_moves_the_points() -> None:
    data = tables()
    ex = explore.components_explorer(data, n_boot=50)
    ex.figure()
    options = ex.control("component").options
    assert options[0] == ("battery.get (vanished)", "battery.get")
    assert [v for _, v in options] == ["battery.get", "ore.get", PER_STEP]
    for policy in ("random", "wsls"):
        for comp in ("battery.get", "ore.get", PER_STEP):
            for quantity in (explore.PAID, explore.EVENTS):
                ex.set(policy=policy, component=comp, quantity=quantity)
                for side in explore.SIDES:
                    eps = data[policy][side]
                    events = eps["length" if comp == PER_STEP else f"reported.{comp}"].to_numpy(dtype=float)
                    pay = PENALTY if comp == PER_STEP else PAYS[side][comp]
                    expected = events * pay if quantity == explore.PAID else events
                    got = points(ex, side)
                    np.testing.assert_allclose(got[:, 0], np.arange(1, len(eps) + 1))
                    np.testing.assert_allclose(got[:, 1], expected, atol=1e-9)
                    _, mean_y = ex._artists["means"][side].get_data()
                    assert mean_y[-1] == pytest.approx(expected.mean(), abs=1e-9)
                    weight = ex._artists["weights"][side].get_ydata()[0]
                    assert weight == pytest.approx(pay, abs=1e-9)  # the fitted reward per event
                assert ex._artists["left"].get_title().startswith(f"{comp} under the {policy} policy")
    ex.set(policy="random", component="battery.get", quantity=explore.PAID)
    assert ex._artists["right"].get_title().startswith("per event: vanished")
    assert np.allclose(points(ex, "candidate")[:, 1], 0.0) and points(ex, "baseline")[:, 1].max() > 0
    ex.set(running_mean=False)
    assert len(ex._artists["means"]["baseline"].get_xdata()) == 0
    assert ex.drawn == ex.values


def test_nothing_to_pick_is_refused_and_the_workbench_reader_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    empty = {"random": {"baseline": episodes("baseline", 1).iloc[:0], "candidate": episodes("candidate", 2)}}
    with pytest.raises(ValueError, match="no fixed-policy rollout finished an episode on both sides"):
        explore.components_explorer(empty)

    from rlaudit.env import analysis, probes

    def result(table: pd.DataFrame) -> types.SimpleNamespace:
        return types.SimpleNamespace(ok=True, table=lambda name: table)

    def workbench(by_policy: dict[str, Pair]) -> types.SimpleNamespace:
        def run(probe, **params):
            assert probe is probes.rollout
            return by_policy[params["policy"]]

        return types.SimpleNamespace(run=run, profile=None)

    monkeypatch.setattr(
        analysis, "rollout_params", lambda profile, seed, policy: {"seed": seed, "policy": policy}
    )
    none = Pair(baseline=result(episodes("baseline", 1).iloc[:0]), candidate=result(episodes("candidate", 2)))
    got = explore.component_explorer(workbench({"random": none, "wsls": none}))
    assert (
        isinstance(got, RichText) and "no fixed-policy rollout finished an episode on both sides" in got.text
    )

    some = Pair(baseline=result(episodes("baseline", 1)), candidate=result(episodes("candidate", 2)))
    got = explore.component_explorer(workbench({"random": some, "wsls": none}))
    assert got.control("policy").option_values() == ["random"]
