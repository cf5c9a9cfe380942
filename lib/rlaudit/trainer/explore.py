"""The run explorer of 02_trainer: every logged scalar of every run, baseline and candidate side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlaudit.curves import curves_figure
from rlaudit.explore import Explorer, curves_explorer, nothing_to_explore
from rlaudit.trainer.learning import wall_clock
from rlaudit.trainer.runs import CURVE_SCALARS, RunData, run_data
from rlaudit.trainer.runs import runs as training_runs

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

COLUMNS = ["name", "side", "seed", "step", "seconds", "value"]
EPISODE_PREFIX = "episode/"
"""Names the primary metric's per-episode values when no logged scalar carries it."""


RECORDER_SERIES: dict[str, dict[str, str]] = {
    "exploration": {
        "epsilon": "exploration/epsilon",
        "alpha": "exploration/alpha",
        "target_entropy": "exploration/target_entropy",
        "action_noise": "exploration/action_noise",
    },
    "replay": {"size": "replay/transitions held", "age_p50": "replay/median age of sampled transitions"},
}
"""Columns of the recorder's off-policy tables offered as curves beside the logged scalars: ε, SAC's α and its
target entropy, and TD3's or DDPG's action-noise σ as they ran, and the replay buffer's fill and the age (env
steps) of what training sampled."""


def run_series(run: RunData, side: str, metric: str = "") -> pd.DataFrame:
    """One run's logged scalars and :data:`RECORDER_SERIES` as rows ``name, side, seed, step, seconds, value``,
    ``seconds`` interpolated from the run's own clock (:func:`rlaudit.trainer.learning.wall_clock`).

    When no scalar carries the primary ``metric`` (a trainer that reports it per episode only), its per-episode
    values come as ``episode/<metric>``."""
    frames = []
    scalars = run.table("scalars")
    if not scalars.empty:
        frames.append(scalars[["name", "step", "value"]])
    names = scalars["name"].astype(str) if not scalars.empty else pd.Series(dtype=str)
    if metric and not names_metric(names, metric).any():  # only then are the episodes read
        episodes = run.table("episodes")
        if metric in episodes and "step" in episodes:
            per_episode = episodes[["step", metric]].rename(columns={metric: "value"}).dropna()
            frames.append(per_episode.assign(name=EPISODE_PREFIX + metric))
    for table_name, columns in RECORDER_SERIES.items():
        table = run.table(table_name)
        present = [c for c in columns if c in table]
        if table.empty or "step" not in table or not present:
            continue
        long = table.melt(id_vars=["step"], value_vars=present, var_name="name", value_name="value")
        frames.append(long.assign(name=long["name"].map(columns)).dropna(subset=["value"]))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    rows = pd.concat(frames, ignore_index=True)
    ws, wt = wall_clock(run)
    seconds = np.interp(rows["step"].to_numpy(dtype=float), ws, wt)
    return rows.assign(side=side, seed=run.seed, seconds=seconds)[COLUMNS]


def scalar_table(wb: Workbench, names: Any = CURVE_SCALARS, *, every: bool = False) -> pd.DataFrame:
    """The logged scalars of the shared training runs with each point's wall-clock second.

    Args:
        names: Scalars to keep besides the primary metric (the usual PPO ones); when no run logged any of
            them, every logged scalar is kept.
        every: Keep every logged scalar and the recorder's off-policy series (:data:`RECORDER_SERIES`), the
            primary metric first, then ``names``, the off-policy series and the rest by name.

    Returns:
        ``name, side, seed, step, seconds, value`` (see :func:`run_series`).
    """
    metric = str(getattr(wb.metric, "name", wb.metric))
    data = run_data(training_runs(wb))
    frames = [run_series(run, side, metric) for side, runs in data.items() for run in runs]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return select_series(pd.concat(frames, ignore_index=True), metric, names, every=every)


def select_series(
    table: pd.DataFrame, metric: str, names: Any = CURVE_SCALARS, *, every: bool = False
) -> pd.DataFrame:
    """The rows :func:`scalar_table` keeps from every run's series (see there), in the order they are offered."""
    label = table["name"].astype(str)
    is_metric = names_metric(label, metric)
    if not every:  # the logged scalars alone, as the report has always drawn them
        logged = ~(label.isin(_recorder_names()) | label.str.startswith(EPISODE_PREFIX))
        wanted = logged & (label.isin(list(names)) | is_metric)
        return table[wanted if wanted.any() else logged][COLUMNS].reset_index(drop=True)
    usual = {name: i for i, name in enumerate(names)}
    recorder = set(_recorder_names())
    rank = [
        0 if m else 1 + usual[n] if n in usual else 100 if n in recorder else 200
        for n, m in zip(label, is_metric, strict=True)
    ]
    ordered = table.assign(_rank=rank, _name=label).sort_values(["_rank", "_name"], kind="stable")
    return ordered[COLUMNS].reset_index(drop=True)


def names_metric(names: pd.Series, metric: str) -> pd.Series:
    """Which of ``names`` carry the primary ``metric``: its own name, or one ending in ``/<metric>``."""
    return (names == metric) | names.str.endswith("/" + metric)


def _recorder_names() -> list[str]:
    return [name for columns in RECORDER_SERIES.values() for name in columns.values()]


def run_explorer(wb: Workbench, smooth: float = 0.6) -> Any:
    """The run explorer (JupyterLab: controls over one live panel; the report: the usual scalars, every seed).

    Controls: the scalar (every one a run logged, and the recorder's off-policy series: ε, α, the target
    entropy, the replay buffer's fill and the age of sampled transitions), x as environment steps or wall-clock
    seconds, the step range, the mean over seeds with its 95% interval or each run, the smoothing and a log y
    axis.
    """
    table = scalar_table(wb, every=True)
    if table.empty:
        text = "No logged scalars to explore: neither side's training runs logged any (see 03_logging)."
        return nothing_to_explore(text)
    usual = select_series(table, str(getattr(wb.metric, "name", wb.metric)))

    def static(values: dict[str, Any]) -> Any:
        shown = usual if len(usual) else table
        return curves_figure(
            shown, hue="side", options="name", smooth=values["smooth"], title="logged scalars"
        )

    return curves_explorer(table, title="Run explorer: logged scalars", smooth=smooth, static=static)


__all__ = ["RECORDER_SERIES", "Explorer", "run_explorer", "run_series", "scalar_table", "select_series"]
