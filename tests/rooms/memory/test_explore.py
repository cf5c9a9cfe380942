"""12_memory's site and type picker: the lines drawn are the picked site's, type's or container's snapshots
on both sides, in the kind's unit; the item that grows in the candidate only comes first; nothing to pick
gives a muted line."""

from __future__ import annotations

import types

import matplotlib
import numpy as np
import pandas as pd
import pytest

from rlaudit.display import RichText
from rlaudit.engine.workbench import Pair
from rlaudit.memory import explore

matplotlib.use("Agg")  # tests only: no display here

EPISODES = np.array([0, 10, 20, 30, 40, 50, 60])


def side_tables(leaks: bool) -> dict[str, pd.DataFrame]:
    """Seven snapshots; the candidate's label dict gains an entry per episode, its site 512 bytes per episode
    and its dicts one per episode; a cache of 5 entries is the same on both sides."""
    snaps = np.arange(len(EPISODES))
    grow = EPISODES if leaks else np.zeros_like(EPISODES)
    points = pd.DataFrame({"snapshot": snaps, "episodes": EPISODES, "env_steps": EPISODES * 100})
    containers = pd.DataFrame(
        {
            "snapshot": np.concatenate([snaps, snaps]),
            "path": ["env.curriculum._labels"] * len(snaps) + ["env._cache"] * len(snaps),
            "size": np.concatenate([3 + grow, np.full(len(snaps), 5)]),
        }
    )
    sites = pd.DataFrame(
        {
            "snapshot": np.concatenate([snaps, snaps]),
            "file": ["curriculum.py"] * len(snaps) + ["env.py"] * len(snaps),
            "line": [41] * len(snaps) + [12] * len(snaps),
            "code": ["self._labels[key] = label"] * len(snaps) + ["self.obs = np.zeros(4)"] * len(snaps),
            "subject": [True] * (2 * len(snaps)),
            "size": np.concatenate([1024 + 512 * grow, np.full(len(snaps), 4096)]),
            "count": np.concatenate([1 + grow, np.ones(len(snaps))]),
        }
    )
    types_ = pd.DataFrame({"snapshot": snaps, "type": ["dict"] * len(snaps), "count": 100 + grow})
    return {"points": points, "sites": sites, "types": types_, "containers": containers}


def both() -> dict[str, dict[str, pd.DataFrame]]:
    return {"baseline": side_tables(False), "candidate": side_tables(True)}


def test_the_leaking_items_come_first_in_their_kind_with_their_growth_in_units() -> None:
    items = explore.growth_items(both())
    by = {(it.kind, it.name): it for it in items}
    labels = by[("container", "env.curriculum._labels")]
    assert labels.growth["candidate"] == pytest.approx(1000.0) and labels.growth["baseline"] == pytest.approx(
        0.0
    )
    site = by[("site", "curriculum.py: self._labels[key] = label")]
    assert site.growth["candidate"] == pytest.approx(500.0)  # 512 bytes per episode = 500 KiB per 1000
    np.testing.assert_allclose(site.y["candidate"], (1024 + 512 * EPISODES) / 1024)
    assert by[("type", "dict")].unit == "live objects" and site.unit == "traced KiB"
    assert [it.kind for it in items] == ["container", "container", "site", "site", "type"]
    assert items[0].name == "env.curriculum._labels" and items[2].name.startswith("curriculum.py")
    # flagged as the growth check flags: the leaking container, site and type, not the steady cache
    assert {it.key for it in items if it.flagged} == {
        "container|env.curriculum._labels",
        "site|curriculum.py: self._labels[key] = label",
        "type|dict",
    }
    ex = explore.items_explorer(items)
    labels = {v: k for k, v in ex.control("item").options}
    assert (
        labels["container|env.curriculum._labels"]
        == "container · env.curriculum._labels (+1000 entries/1000 ep, flagged)"
    )


def test_every_control_moves_the_lines_to_the_picked_item() -> None:
    items = explore.growth_items(both())
    ex = explore.items_explorer(items)
    ex.figure()
    ax = ex._artists["ax"]
    assert ex.values["item"] == "container|env.curriculum._labels"
    for key in [opt[1] for opt in ex.control("item").options]:
        it = next(i for i in items if f"{i.kind}|{i.name}" == key)
        for show in (explore.ABSOLUTE, explore.CHANGE):
            for fit in (True, False):
                ex.set(item=key, show=show, fit=fit)
                for side in explore.SIDES:
                    x, y = ex._artists["lines"][side].get_data()
                    expected = it.y[side] - it.y[side][0] if show == explore.CHANGE else it.y[side]
                    np.testing.assert_allclose(x, EPISODES)
                    np.testing.assert_allclose(y, expected)
                    fx, fy = ex._artists["fits"][side].get_data()
                    if fit:
                        slope = (fy[1] - fy[0]) / (fx[1] - fx[0])
                        assert slope * 1000 == pytest.approx(it.growth[side], abs=1e-9)
                    else:
                        assert len(fx) == 0
                    assert (
                        ex._artists["lines"][side]
                        .get_label()
                        .startswith(f"{side}: {explore.signed(it.growth[side])} {it.unit}")
                    )
                assert it.name[:40] in ax.get_title()
                assert ax.get_ylabel().startswith(it.unit)
                lo, hi = ax.get_ylim()
                assert (
                    lo <= min(expected.min(), 0 if show == explore.CHANGE else expected.min())
                    and hi >= expected.max()
                )
    assert ex.drawn == ex.values


def test_nothing_to_pick_is_refused_and_the_workbench_reader_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match="no allocation site, object type or container"):
        explore.items_explorer([])

    from rlaudit.memory import probes

    def result(tables: dict[str, pd.DataFrame]) -> types.SimpleNamespace:
        return types.SimpleNamespace(ok=True, table=lambda name: tables[name])

    asked = []

    def workbench(baseline: dict, candidate: dict) -> types.SimpleNamespace:
        def run(probe, **params):
            asked.append((probe, params))
            return Pair(result(baseline), result(candidate))

        return types.SimpleNamespace(run=run)

    monkeypatch.setattr("rlaudit.memory.growth.growth_params", lambda wb, seed=0: {"seed": seed, "steps": 8})
    few = {k: v[v["snapshot"] < 2] for k, v in side_tables(True).items()}
    got = explore.growth_explorer(workbench(few, few), seed=3)
    assert isinstance(got, RichText) and "fewer than 3 memory snapshots" in got.text
    assert asked == [(probes.growth_sites, {"seed": 3, "steps": 8})]  # the check's probe and parameters

    full = both()
    got = explore.growth_explorer(workbench(full["baseline"], full["candidate"]))
    assert got.values["item"] == "container|env.curriculum._labels"


def test_with_nothing_beyond_the_threshold_the_report_shows_the_subjects_fastest_site() -> None:
    tables = {"baseline": side_tables(False), "candidate": side_tables(False)}
    sites = tables["candidate"]["sites"]
    slow = sites["file"] == "env.py"
    sites.loc[slow, "size"] = 4096 + 8 * EPISODES  # 8 bytes per episode: under 32 KiB per 1000
    sites.loc[~slow, "subject"] = False
    items = explore.growth_items(tables)
    assert not any(it.flagged for it in items)  # 7.8 KiB per 1000 episodes is under the check's 32
    pick = explore.default_item(items)
    assert (pick.kind, pick.name, pick.subject) == ("site", "env.py: self.obs = np.zeros(4)", True)
    assert pick.growth["candidate"] == pytest.approx(8 * 1000 / 1024)
    ex = explore.items_explorer(items)
    assert ex.values["item"] == pick.key
    labels = dict((v, k) for k, v in ex.control("item").options)
    assert labels[pick.key].endswith("(+7.81 traced KiB/1000 ep)")
