"""The run explorer of 02_trainer on an off-policy run: every logged scalar and the recorder's off-policy series
(ε, α, the target entropy, the replay buffer) are offered, the primary metric first; the batch report keeps
the usual scalars."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlaudit.trainer import explore
from support.runs import fake_run

STEPS = 10_000


def _sac_like(tmp: Path, seed: int, alpha_end: float):
    """A run as the SB3 adapter records SAC: SB3's own scalars, α and its target in `exploration` (ε absent),
    and the replay buffer's fill and sampled ages."""
    steps = np.arange(1_000, STEPS + 1, 1_000)
    names = ["charts/episodic_return", "train/critic_loss", "train/ent_coef"]
    scalars = {
        "step": np.repeat(steps, len(names)),
        "name": names * len(steps),
        "value": np.linspace(0.0, 1.0, len(steps) * len(names)),
    }
    exploration = {
        "step": steps,
        "epsilon": np.full(len(steps), np.nan),
        "alpha": np.geomspace(1.0, alpha_end, len(steps)),
        "target_entropy": np.full(len(steps), -1.0),
    }
    replay = {"step": steps, "size": steps, "age_p50": steps / 2.0, "capacity": np.full(len(steps), STEPS)}
    return fake_run(
        tmp,
        seed=seed,
        metric_name="return",
        summary={"steps": STEPS, "seconds": 20.0},
        tables={"scalars": scalars, "exploration": exploration, "replay": replay},
    )


def test_a_run_gives_its_scalars_and_the_off_policy_series_on_its_clock(tmp_path: Path) -> None:
    rows = explore.run_series(_sac_like(tmp_path, 0, 0.1), "baseline")
    assert set(rows["name"]) == {
        "charts/episodic_return",
        "train/critic_loss",
        "train/ent_coef",
        "exploration/alpha",
        "exploration/target_entropy",
        "replay/transitions held",
        "replay/median age of sampled transitions",
    }  # ε was not recorded (all NaN): not offered
    alpha = rows[rows["name"] == "exploration/alpha"]
    assert alpha["value"].iloc[-1] == pytest.approx(0.1) and set(alpha["side"]) == {"baseline"}
    assert rows["seconds"].max() == pytest.approx(20.0)  # the run's clock: its 10,000 steps took 20 s


def test_the_explorer_offers_every_series_metric_first_and_the_report_keeps_the_usual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = {
        "baseline": [_sac_like(tmp_path, s, 0.1) for s in (0, 1)],
        "candidate": [_sac_like(tmp_path, s, 30.0) for s in (0, 1)],
    }
    monkeypatch.setattr(explore, "training_runs", lambda wb: None)
    monkeypatch.setattr(explore, "run_data", lambda pairs: data)
    wb = type("WB", (), {"metric": "episodic_return"})()
    explorer = explore.run_explorer(wb)
    (metric,) = [c for c in explorer.controls if c.name == "metric"]
    assert list(metric.options) == [
        "charts/episodic_return",  # the primary metric (a name ending in /<metric>)
        "exploration/alpha",
        "exploration/target_entropy",
        "replay/median age of sampled transitions",
        "replay/transitions held",
        "train/critic_loss",
        "train/ent_coef",
    ]
    assert metric.value == "charts/episodic_return"
    usual = explore.select_series(explore.scalar_table(wb, every=True), "episodic_return")
    assert set(usual["name"]) == {"charts/episodic_return"}  # what the batch report draws
    assert len(explorer.static_figure().axes) >= 1


def test_a_metric_reported_per_episode_only_is_offered_first_from_the_episodes(tmp_path: Path) -> None:
    """SB3's primary metric is the episode's return, which no logged scalar is named after."""
    run = _sac_like(tmp_path, 0, 0.1)
    rows = explore.run_series(run, "candidate", "return")
    per_episode = rows[rows["name"] == "episode/return"]
    assert len(per_episode) == len(run.table("episodes")) > 0
    ordered = explore.select_series(rows, "return", every=True)
    assert ordered["name"].iloc[0] == "episode/return"
    # the report's figure keeps the logged scalars it always drew
    assert set(explore.select_series(rows, "return")["name"]) == {"charts/episodic_return"}
    assert (
        explore.run_series(run, "candidate", "episodic_return")["name"].str.startswith("episode/").sum() == 0
    )
