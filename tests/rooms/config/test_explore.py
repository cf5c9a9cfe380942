"""The config explorer of 14_config (``rlaudit.config.explore``): the diff filtered, live and in batch."""

from __future__ import annotations

import matplotlib
import pandas as pd
import pytest

from rlaudit import explore

matplotlib.use("Agg")  # tests only: no display here (the library itself never sets a backend)


def config_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "key": ["optimizer.lr", "loss.vf_coef", "loss.ent_coef", "env.num_envs"],
            "subsystem": ["optimizer", "loss", "loss", "env"],
            "baseline": [3e-4, 0.5, 0.01, 8],
            "candidate": [3e-4, 5.0, 0.01, None],
            "change": ["same", "changed", "same", "removed"],
        }
    )


def test_the_config_explorer_filters_diff_only_by_key_and_by_subsystem() -> None:
    from rlaudit.config.explore import ALL, diff_explorer

    ex = diff_explorer(config_table())
    assert list(ex.table()["key"]) == ["loss.vf_coef", "env.num_envs"]  # diff only, at first
    assert ex.table()["candidate"].tolist() == ["5.0", "—"]
    ex.set(diff_only=False)
    assert len(ex.table()) == 4
    ex.set(search="COEF")
    assert list(ex.table()["key"]) == ["loss.vf_coef", "loss.ent_coef"]
    ex.set(search="", subsystem="env")
    assert list(ex.table()["key"]) == ["env.num_envs"] and ex.table()["room"].tolist() == ["05_env"]
    ex.set(subsystem=ALL, search="nothing like it")
    assert ex.table().empty and "no rows match" in ex._markup()


def test_the_config_explorer_live_follows_its_widgets_and_batch_shows_the_diff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rlaudit.config.explore import diff_explorer

    ex = diff_explorer(config_table())
    ex.widget()
    ex._widgets["diff_only"].value = False
    ex._widgets["search"].value = "lr"
    assert ex.drawn == ex.values and list(ex.shown["key"]) == ["optimizer.lr"]
    assert "optimizer.lr" in ex._html.value and "(1 rows)" in ex._status.value
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setattr(explore, "interactive", lambda: False)
    batch = diff_explorer(config_table())
    batch._ipython_display_()
    assert "loss.vf_coef" in shown[0].data and "optimizer.lr" not in shown[0].data
