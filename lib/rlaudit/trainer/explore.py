"""The run explorer of 02_trainer: every logged scalar of every run, baseline and candidate side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlaudit.curves import curves_figure
from rlaudit.explore import Explorer, curves_explorer, nothing_to_explore
from rlaudit.trainer.learning import wall_clock
from rlaudit.trainer.runs import CURVE_SCALARS, run_data
from rlaudit.trainer.runs import runs as training_runs

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench


def scalar_table(wb: Workbench, names: Any = CURVE_SCALARS) -> pd.DataFrame:
    """The logged scalars of the shared training runs with each point's wall-clock second.

    Returns:
        ``name, side, seed, step, seconds, value``: the scalars :func:`rlaudit.trainer.runs.scalar_curves`
        keeps (the primary metric and the usual PPO ones, else every one), ``seconds`` interpolated from the
        run's own clock (:func:`rlaudit.trainer.learning.wall_clock`).
    """
    metric = str(getattr(wb.metric, "name", wb.metric))
    frames = []
    for side, data in run_data(training_runs(wb)).items():
        for run in data:
            scalars = run.table("scalars")
            if scalars.empty:
                continue
            ws, wt = wall_clock(run)
            seconds = np.interp(scalars["step"].to_numpy(dtype=float), ws, wt)
            frames.append(scalars.assign(side=side, seed=run.seed, seconds=seconds))
    columns = ["name", "side", "seed", "step", "seconds", "value"]
    if not frames:
        return pd.DataFrame(columns=columns)
    every = pd.concat(frames, ignore_index=True)
    label = every["name"].astype(str)
    wanted = label.isin(list(names)) | (label == metric) | label.str.endswith("/" + metric)
    return (every[wanted] if wanted.any() else every)[columns].reset_index(drop=True)


def run_explorer(wb: Workbench, smooth: float = 0.6) -> Any:
    """The run explorer (JupyterLab: controls over one live panel; the report: every scalar, every seed).

    Controls: the scalar, x as environment steps or wall-clock seconds, the step range, the mean over seeds
    with its 95% interval or each run, the smoothing and a log y axis.
    """
    table = scalar_table(wb)
    if table.empty:
        text = "No logged scalars to explore: neither side's training runs logged any (see 03_logging)."
        return nothing_to_explore(text)

    def static(values: dict[str, Any]) -> Any:
        return curves_figure(
            table, hue="side", options="name", smooth=values["smooth"], title="logged scalars"
        )

    return curves_explorer(table, title="Run explorer: logged scalars", smooth=smooth, static=static)


__all__ = ["Explorer", "run_explorer", "scalar_table"]
