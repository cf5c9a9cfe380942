"""Learning curves: TensorBoard-style smoothing, a static grid of curves, and the same with widgets to pick the
metric and the smoothing in a live JupyterLab (:func:`rlaudit.display.interactive`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rlaudit.display import interactive

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def ema_smooth(values: Sequence[float], weight: float) -> Any:
    """TensorBoard-style smoothing: an exponential moving average with bias correction.

    Args:
        values: The series, shape (n,).
        weight: 0 (no smoothing) to below 1 (heavy smoothing).

    Returns:
        Array (n,) of smoothed values; NaNs are carried over without poisoning the average.
    """
    import numpy as np

    if not 0.0 <= weight < 1.0:
        raise ValueError(f"smoothing weight must be in [0, 1), got {weight}")
    y = np.asarray(values, dtype=float)
    out = np.empty_like(y)
    last, norm = 0.0, 0.0
    for i, v in enumerate(y):
        if np.isnan(v):
            out[i] = np.nan
            continue
        last = weight * last + (1 - weight) * v
        norm = weight * norm + (1 - weight)
        out[i] = last / norm
    return out


def _check_columns(df: Any, needed: Mapping[str, str | None]) -> None:
    missing = {role: col for role, col in needed.items() if col is not None and col not in df.columns}
    if missing:
        raise KeyError(
            f"explore_curves: columns {missing} not in the table (it has {list(df.columns)}); "
            "pass the column names as x=, y=, hue=, options=, seed="
        )


def curves_figure(
    df: Any,
    x: str = "step",
    y: str = "value",
    hue: str | None = "side",
    options: str | None = "name",
    *,
    seed: str | None = "seed",
    metrics: Sequence[Any] | None = None,
    seeds: Sequence[Any] | None = None,
    smooth: float = 0.0,
    col_wrap: int = 3,
    height: float = 3.0,
    title: str = "",
) -> Figure:
    """Static learning curves: one panel per metric, one line per (hue, seed), EMA-smoothed.

    The figure is built without pyplot, so it is shown once (where it is displayed or embedded) and never
    by the inline backend on its own.

    Args:
        df: Tidy table, one row per (metric, side, seed, step).
        x: Column of the x axis (environment steps).
        y: Column of values.
        hue: Column that colours lines (``"side"``: baseline/candidate), or None.
        options: Column naming the metric (one panel each), or None for a single panel.
        seed: Column of the run's seed (one thin line per seed), or None.
        metrics: Metrics to draw (default: all, in order of appearance).
        seeds: Seeds to draw (default: all).
        smooth: EMA weight in [0, 1) applied per line.
        col_wrap: Panels per row.
        height: Panel height in inches.
        title: Figure title.
    """
    import numpy as np
    import seaborn as sns
    from matplotlib.figure import Figure

    seed = seed if seed is not None and seed in df.columns else None
    _check_columns(df, {"x": x, "y": y, "hue": hue, "options": options})
    data = df
    if seeds is not None and seed is not None:
        data = data[data[seed].isin(list(seeds))]
    names = list(metrics) if metrics is not None else (list(dict.fromkeys(data[options])) if options else [y])
    n = max(1, len(names))
    cols = min(col_wrap, n)
    rows = int(np.ceil(n / cols))
    fig = Figure(figsize=(cols * height * 1.45, rows * height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).reshape(-1)
    group_cols = [c for c in (hue, seed) if c is not None]
    hue_order = list(dict.fromkeys(data[hue])) if hue else None
    for i, (ax, name) in enumerate(zip(axes, names, strict=False)):
        part = data[data[options] == name] if options else data
        if part.empty:
            ax.set_title(f"{name} (no data)")
            continue
        part = part.sort_values([*group_cols, x])
        if smooth > 0:
            part = part.copy()
            if group_cols:
                part[y] = part.groupby(group_cols, sort=False)[y].transform(
                    lambda s: ema_smooth(s.to_numpy(), smooth)
                )
            else:
                part[y] = ema_smooth(part[y].to_numpy(), smooth)
        sns.lineplot(
            data=part,
            x=x,
            y=y,
            hue=hue,
            hue_order=hue_order,
            units=seed,
            estimator=None if seed else "mean",
            errorbar=None,
            linewidth=1.2,
            alpha=0.85,
            ax=ax,
        )
        ax.set_title(str(name))
        ax.set_ylabel("")
        if i > 0 and ax.get_legend() is not None:
            ax.get_legend().remove()  # one legend for the figure is enough
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


def explore_curves(
    df: Any,
    x: str = "step",
    y: str = "value",
    hue: str | None = "side",
    options: str | None = "name",
    *,
    seed: str | None = "seed",
    smooth: float = 0.0,
    title: str = "",
) -> Any:
    """Learning curves to explore: widgets in JupyterLab, a static figure everywhere else.

    Interactive (see :func:`interactive`): the controls of :func:`rlaudit.explore.curves_explorer` (the metric,
    the step range, the mean over seeds with its interval or each run, smoothing, log y) over one panel whose
    lines are updated in place. Otherwise (papermill, nbval, the HTML report): every metric in its
    own panel with every seed, smoothed with ``smooth``, via :func:`curves_figure`.

    Args:
        df: Tidy table with columns ``x``, ``y``, and optionally ``hue``, ``options`` (metric name), ``seed``.
        x, y, hue, options, seed: Column names (see :func:`curves_figure`).
        smooth: Initial EMA weight in [0, 1).
        title: Figure title.

    Returns:
        An ipywidgets container (interactive) or a matplotlib Figure; display it by ending the cell with it.
    """
    if not interactive():
        return curves_figure(df, x, y, hue, options, seed=seed, smooth=smooth, title=title)
    return curves_explorer_of(df, x, y, hue, options, seed=seed, smooth=smooth, title=title).widget()


def curves_explorer_of(
    df: Any,
    x: str = "step",
    y: str = "value",
    hue: str | None = "side",
    options: str | None = "name",
    *,
    seed: str | None = "seed",
    smooth: float = 0.0,
    title: str = "",
) -> Any:
    """The :class:`rlaudit.explore.Explorer` behind :func:`explore_curves`'s live view: a table with any
    column names, as :func:`rlaudit.explore.curves_explorer` reads it."""
    from rlaudit.explore import curves_explorer

    _check_columns(df, {"x": x, "y": y, "hue": hue, "options": options})
    table = df.assign(
        step=df[x],
        value=df[y],
        name=df[options].astype(str) if options else y,
        group=df[hue].astype(str) if hue else "all",
        seed=df[seed] if seed is not None and seed in df.columns else 0,
    )[["name", "group", "seed", "step", "value"]]
    groups = list(dict.fromkeys(table["group"]))
    return curves_explorer(table, title=title or "curves", fixed=groups, group="group", smooth=smooth)
