"""Explorers: controls next to a figure whose artists are updated in place, live in JupyterLab, static elsewhere.

An explorer is built once from a room's evidence (tables already computed, nothing run on a control change):

- ``controls``: what the user can change (:func:`choice`, :func:`slider`, :func:`int_range`, :func:`toggle`,
  :func:`text`), each with its starting value;
- ``setup(fig, values)``: lays out the axes and creates the artists once, and returns them (any object);
- ``update(artists, values)``: puts the data for ``values`` into those artists (``set_data``, limits, labels),
  never creating a figure.

In a live JupyterLab (:func:`rlaudit.display.interactive`) an explorer displays as ipywidgets above an
ipympl canvas: a control change calls ``update`` and lets the canvas send the redrawn image, so nothing
re-renders a figure from scratch. Sliders report on release (``continuous_update=False``). Each redraw reads
every control's *current* value, not the change event's, and the figure records the values it shows
(:attr:`Explorer.drawn`), so whatever order the changes arrive in, and after the tab was closed and reopened
(the widgets' state lives in the kernel), the figure shows what the controls say.

Under papermill, nbval and in the HTML report an explorer displays its static figure: ``static(values)`` when
given (e.g. every metric in its own panel), else the explorer's own figure at the starting values.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlaudit.display import figure_png, interactive

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class Control:
    """One control of an explorer.

    Attributes:
        name: Key in the values dict handed to ``update``.
        kind: ``choice`` (dropdown), ``slider`` (float), ``int_range`` (two ints), ``toggle`` (checkbox) or
            ``text`` (a search box).
        value: Starting value.
        label: Shown beside the control (default: the name).
        options: For ``choice``: the options, or (label, value) pairs.
        low, high, step: For sliders.
    """

    name: str
    kind: str
    value: Any
    label: str = ""
    options: Sequence[Any] = ()
    low: float = 0.0
    high: float = 1.0
    step: float = 0.01

    def __post_init__(self) -> None:
        if self.kind not in {"choice", "slider", "int_range", "toggle", "text"}:
            raise ValueError(f"unknown control kind {self.kind!r} for {self.name!r}")
        self.label = self.label or self.name
        if self.kind == "choice":
            values = self.option_values()
            if not values:
                raise ValueError(f"control {self.name!r} has no options to choose from")
            if self.value not in values:
                self.value = values[0]

    def option_values(self) -> list[Any]:
        return [o[1] if isinstance(o, tuple) else o for o in self.options]

    def check(self, value: Any) -> Any:
        """The value if it is one this control can take; else a ValueError saying what it takes."""
        if self.kind == "choice":
            if value not in self.option_values():
                raise ValueError(f"{self.name}={value!r} is not an option; options: {self.option_values()}")
            return value
        if self.kind == "slider":
            value = float(value)
            if not self.low <= value <= self.high:
                raise ValueError(f"{self.name}={value} is outside [{self.low}, {self.high}]")
            return value
        if self.kind == "int_range":
            low, high = (int(v) for v in value)
            if not self.low <= low <= high <= self.high:
                raise ValueError(f"{self.name}={value} must be low <= high within [{self.low}, {self.high}]")
            return (low, high)
        if self.kind == "toggle":
            return bool(value)
        return str(value)

    def widget(self) -> Any:
        import ipywidgets as w

        style = {"description_width": "initial"}
        if self.kind == "choice":
            return w.Dropdown(
                options=list(self.options), value=self.value, description=self.label, style=style
            )
        if self.kind == "slider":
            return w.FloatSlider(
                value=self.value,
                min=self.low,
                max=self.high,
                step=self.step,
                description=self.label,
                continuous_update=False,
                style=style,
            )
        if self.kind == "int_range":
            return w.IntRangeSlider(
                value=tuple(self.value),
                min=int(self.low),
                max=int(self.high),
                step=max(1, int(self.step)),
                description=self.label,
                continuous_update=False,
                style=style,
            )
        if self.kind == "toggle":
            return w.Checkbox(value=bool(self.value), description=self.label, indent=False)
        return w.Text(value=str(self.value), description=self.label, continuous_update=False, style=style)


def nothing_to_explore(text: str) -> Any:
    """What an explorer cell shows when its room's evidence holds nothing to explore: ``text`` (why, and where
    to look), muted, in the notebook and the report alike."""
    import html

    from rlaudit.display import RichText

    return RichText(f'<p class="rl-muted">{html.escape(text)}</p>', text)


def choice(name: str, options: Sequence[Any], value: Any = None, label: str = "") -> Control:
    """A dropdown; ``options`` are values or (label, value) pairs; the first is the default."""
    return Control(name, "choice", value, label, options=list(options))


def slider(name: str, low: float, high: float, value: float, step: float = 0.01, label: str = "") -> Control:
    """A float slider that reports on release."""
    return Control(name, "slider", float(value), label, low=low, high=high, step=step)


def int_range(name: str, low: int, high: int, value: Sequence[int] | None = None, label: str = "") -> Control:
    """A two-handled integer range slider (a step range, say)."""
    step = max(1, (int(high) - int(low)) // 100)
    start = tuple(value) if value is not None else (int(low), int(high))
    return Control(name, "int_range", start, label, low=int(low), high=int(high), step=step)


def toggle(name: str, value: bool = False, label: str = "") -> Control:
    return Control(name, "toggle", bool(value), label)


def text(name: str, value: str = "", label: str = "") -> Control:
    """A text box (a key search); reports on Enter or when it loses focus."""
    return Control(name, "text", str(value), label)


@dataclass(repr=False)
class Explorer:
    """Controls and a figure kept in step with them (see the module docstring).

    Attributes:
        title: Shown above the figure.
        controls: The controls, in display order.
        setup: ``setup(fig, values) -> artists``: axes and artists, created once.
        update: ``update(artists, values)``: the data for ``values``, set into the artists.
        static: Optional ``static(values) -> Figure`` for batch runs and the HTML report.
        figsize: Inches of the live figure.
        drawn: The values the figure shows now (None before the first draw).
        timings: Seconds each live update took (``update`` and the canvas redraw), newest last.
    """

    title: str
    controls: list[Control]
    setup: Callable[[Any, dict[str, Any]], Any]
    update: Callable[[Any, dict[str, Any]], None]
    static: Callable[[dict[str, Any]], Any] | None = None
    figsize: tuple[float, float] = (8.0, 4.2)
    drawn: dict[str, Any] | None = field(default=None, init=False)
    timings: list[float] = field(default_factory=list, init=False)
    _fig: Any = field(default=None, init=False)
    _artists: Any = field(default=None, init=False)
    _widgets: dict[str, Any] = field(default_factory=dict, init=False)
    _canvas: Any = field(default=None, init=False)
    _status: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        names = [c.name for c in self.controls]
        if len(set(names)) != len(names):
            raise ValueError(f"explorer {self.title!r}: control names repeat: {names}")

    # -- values ---------------------------------------------------------------------------------------------

    @property
    def values(self) -> dict[str, Any]:
        """The controls' current values (the widgets' when live)."""
        out = {}
        for control in self.controls:
            widget = self._widgets.get(control.name)
            value = widget.value if widget is not None else control.value
            out[control.name] = tuple(value) if control.kind == "int_range" else value
        return out

    def control(self, name: str) -> Control:
        for c in self.controls:
            if c.name == name:
                return c
        raise KeyError(
            f"explorer {self.title!r} has no control {name!r}; it has {[c.name for c in self.controls]}"
        )

    def set(self, **values: Any) -> dict[str, Any]:
        """Change controls (as a user would) and redraw; returns the values the figure now shows."""
        for name, value in values.items():
            control = self.control(name)
            control.value = control.check(value)
            widget = self._widgets.get(name)
            if widget is not None:
                with self._quiet():
                    widget.value = control.value
        self.redraw()
        return dict(self.drawn or {})

    # -- drawing --------------------------------------------------------------------------------------------

    def figure(self) -> Figure:
        """The explorer's own figure at the current values (created on first use, then updated in place)."""
        if self._fig is None:
            from matplotlib.figure import Figure

            # A fixed layout: a constrained or tight layout would be solved again on every redraw.
            self._fig = Figure(figsize=self.figsize)
            self._artists = self.setup(self._fig, self.values)
            self._apply()
        return self._fig

    def _apply(self) -> None:
        values = self.values
        self.update(self._artists, values)
        self.drawn = values

    def redraw(self) -> None:
        """Bring the figure to the controls' current values (nothing happens when it already shows them)."""
        started = time.perf_counter()
        if self._fig is None:
            self.figure()
        elif self.values != self.drawn:
            self._apply()
        else:
            return
        if self._canvas is not None:
            self._canvas.draw()  # renders the changed artists; ipympl sends the image diff to the browser
        else:
            self._fig.canvas.draw()
        if self._status is not None:
            self._status.value = self.describe()
        self.timings.append(time.perf_counter() - started)

    def describe(self) -> str:
        """The values the figure shows, as one line (under the live figure)."""
        shown = self.drawn or {}
        parts = []
        for c in self.controls:
            value = shown.get(c.name)
            if c.kind == "choice":
                labels = {o[1]: o[0] for o in c.options if isinstance(o, tuple)}
                value = labels.get(value, value)
            elif c.kind == "slider":
                value = f"{value:.3g}"
            parts.append(f"{c.label}={value}")
        return "showing: " + ", ".join(parts)

    def static_figure(self) -> Any:
        """What batch runs and the HTML report show."""
        if self.static is not None:
            return self.static(self.values)
        fig = self.figure()
        return fig

    # -- live -------------------------------------------------------------------------------------------

    class _Quiet:
        def __init__(self, owner: Explorer) -> None:
            self.owner = owner

        def __enter__(self) -> None:
            self.owner._muted = True

        def __exit__(self, *exc: object) -> None:
            self.owner._muted = False

    _muted: bool = field(default=False, init=False)

    def _quiet(self) -> Explorer._Quiet:
        return Explorer._Quiet(self)

    def widget(self) -> Any:
        """The live view: controls, the ipympl canvas, and a line naming the values shown."""
        import ipywidgets as w
        from ipympl.backend_nbagg import Canvas, FigureManager

        if self._canvas is None:
            fig = self.figure()
            self._canvas = Canvas(fig)
            FigureManager(self._canvas, 0)
            self._canvas.header_visible = False
            self._canvas.toolbar_position = "left"
            for control in self.controls:
                widget = control.widget()
                widget.observe(self._changed, names="value")
                widget.add_class(f"rl-control-{control.name}")
                self._widgets[control.name] = widget
            self._status = w.HTML(self.describe())
            self._status.add_class("rl-explore-status")
        controls = w.HBox(list(self._widgets.values()), layout=w.Layout(flex_flow="row wrap"))
        title = w.HTML(f"<b>{self.title}</b>")
        box = w.VBox([title, controls, self._canvas, self._status])
        box.add_class("rl-explorer")
        return box

    def _changed(self, change: Mapping[str, Any]) -> None:
        if self._muted:
            return
        for control in self.controls:  # keep the plain values in step (what batch code and bench read)
            widget = self._widgets.get(control.name)
            if widget is not None:
                control.value = tuple(widget.value) if control.kind == "int_range" else widget.value
        self.redraw()

    def _ipython_display_(self) -> None:
        from IPython.display import Image, display

        if interactive():
            display(self.widget())
            return
        fig = self.static_figure()
        png = figure_png(fig)
        if png is not None:
            display(Image(data=png))

    def __repr__(self) -> str:
        return f"Explorer({self.title!r}: {', '.join(c.name for c in self.controls)})"


def line_data(ax: Any) -> dict[str, tuple[Any, Any]]:
    """The visible lines of an axes as ``{label: (x, y)}`` (tests and the benchmark read figures with this)."""
    out = {}
    for line in ax.get_lines():
        if line.get_visible():
            x, y = line.get_data()
            out[str(line.get_label())] = (x, y)
    return out


# ----------------------------------------------------------------------------------------------------------
# Learning curves of several groups (sides, attribution arms) over seeds
# ----------------------------------------------------------------------------------------------------------

MEAN, EACH = "mean with 95% interval", "each run"
STEPS, WALL = "environment steps", "wall-clock seconds"
_LEVEL = 0.95


def _smooth(values: Any, weight: float) -> Any:
    from rlaudit.curves import ema_smooth

    return ema_smooth(values, weight) if weight > 0 else values


def mean_band(matrix: Any, level: float = _LEVEL) -> tuple[Any, Any, Any]:
    """Column-wise mean over runs (rows) and a Student-t interval; NaN cells are left out; with one run the
    band is empty (NaN), with two it is their range (a one-degree-of-freedom t interval drowns the curve)."""
    import numpy as np
    from scipy.stats import t as student_t

    finite = np.isfinite(matrix)
    n = finite.sum(axis=0)
    safe = np.maximum(n, 1)
    mean = np.where(finite, matrix, 0.0).sum(axis=0) / safe
    sd = np.sqrt((np.where(finite, matrix - mean, 0.0) ** 2).sum(axis=0) / np.maximum(n - 1, 1))
    half = student_t.ppf(0.5 + level / 2, np.maximum(n - 1, 1)) * sd / np.sqrt(safe)
    low = np.where(
        n >= 3, mean - half, np.where(n == 2, np.where(finite, matrix, np.inf).min(axis=0), np.nan)
    )
    high = np.where(
        n >= 3, mean + half, np.where(n == 2, np.where(finite, matrix, -np.inf).max(axis=0), np.nan)
    )
    mean = np.where(n > 0, mean, np.nan)
    return mean, low, high


@dataclass
class _Series:
    seed: Any
    step: Any
    seconds: Any
    value: Any


def _index_runs(table: Any, group: str) -> dict[str, dict[str, list[_Series]]]:
    """``{metric: {group: [series per seed, sorted by step]}}`` (built once; updates only slice it)."""
    import numpy as np

    out: dict[str, dict[str, list[_Series]]] = {}
    has_seconds = "seconds" in table.columns
    for (name, grp, seed), part in table.groupby(["name", group, "seed"], sort=False):
        part = part.sort_values("step")
        step = part["step"].to_numpy(dtype=float)
        seconds = part["seconds"].to_numpy(dtype=float) if has_seconds else np.full(len(step), np.nan)
        series = _Series(seed, step, seconds, part["value"].to_numpy(dtype=float))
        out.setdefault(str(name), {}).setdefault(str(grp), []).append(series)
    return out


def curves_explorer(
    table: Any,
    *,
    title: str,
    fixed: Sequence[str] = ("baseline", "candidate"),
    group: str = "side",
    pick: Sequence[str] = (),
    overlay: str = "",
    overlay_options: Sequence[Any] = (),
    smooth: float = 0.6,
    extra: Sequence[Control] = (),
    annotate: Callable[[Any, dict[str, Any]], None] | None = None,
    static: Callable[[dict[str, Any]], Any] | None = None,
    grid: int = 60,
) -> Explorer:
    """Learning curves to explore, TensorBoard-style, with the baseline and the candidate side by side.

    Controls: the metric (when there are several), an overlay (an extra group such as an attribution arm,
    when ``overlay`` names the control), x as environment steps or wall-clock seconds (when the table has
    ``seconds``), the step range, the mean over seeds with its 95% interval or each run, the smoothing
    (EMA, per run, before averaging), and a log y axis (symlog when the values cross zero).

    Args:
        table: Tidy rows ``name, <group>, seed, step, value`` and optionally ``seconds``.
        title: Explorer title.
        fixed: Groups always drawn, in order (their colours stay put).
        group: Column naming the group of a row.
        pick: Columns that each get a dropdown and together name a curve (a layer and a quantity, say);
            default ``("name",)``, offered as the ``metric`` control.
        overlay: Label of the overlay picker; "" for none.
        overlay_options: The overlay's options (values of ``group``, or (label, value) pairs); "none" is added.
        smooth: Starting EMA weight.
        extra: Further controls; ``annotate(artists, values)`` draws what they change.
        static: Batch figure (default: the explorer's figure at its starting values).
        grid: Points of the common step grid the mean is taken on.
    """
    import numpy as np

    if table is None or len(table) == 0:
        raise ValueError(f"{title}: no curves to explore (the table is empty)")
    pick = tuple(pick) or ("name",)
    if pick != ("name",):
        table = table.assign(name=table[list(pick)].astype(str).agg(" · ".join, axis=1))
    runs = _index_runs(table, group)
    pickers = {col: list(dict.fromkeys(table[col].astype(str))) for col in pick}
    control_of = {col: "metric" if col == "name" else col for col in pick}

    def name_of(values: dict[str, Any]) -> str:
        return " · ".join(str(values.get(control_of[c], pickers[c][0])) for c in pick)

    has_wall = "seconds" in table.columns and bool(np.isfinite(table["seconds"].to_numpy(dtype=float)).any())
    top = int(np.ceil(float(table["step"].max())))
    seeds_max = max(len(s) for m in runs.values() for s in m.values())
    slots = list(fixed) + (["overlay"] if overlay else [])
    controls: list[Control] = []
    for col in pick:
        if len(pickers[col]) > 1:
            controls.append(choice(control_of[col], pickers[col], label=control_of[col]))
    if overlay:
        controls.append(choice("overlay", [("none", ""), *overlay_options], "", label=overlay))
    if has_wall:
        controls.append(choice("x", [STEPS, WALL], STEPS, label="x"))
    controls += [
        int_range("steps", 0, max(top, 1), label="steps"),
        choice("show", [MEAN, EACH], MEAN, label="show"),
        slider("smooth", 0.0, 0.99, smooth, label="smoothing"),
        toggle("log_y", False, label="log y"),
        *extra,
    ]

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.12, top=0.92)
        colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
        artists: dict[str, Any] = {"ax": ax, "lines": {}, "runs": {}, "bands": {}}
        for i, slot in enumerate(slots):
            color = colors[i % len(colors)]
            (artists["lines"][slot],) = ax.plot([], [], color=color, linewidth=2.0, label=slot)
            artists["runs"][slot] = [
                ax.plot([], [], color=color, linewidth=0.9, alpha=0.7, label="_nolegend_")[0]
                for _ in range(seeds_max)
            ]
            artists["bands"][slot] = ax.fill_between(
                [0.0], [0.0], [0.0], color=color, alpha=0.18, linewidth=0
            )
        ax.grid(alpha=0.3)
        return artists

    def curves_of(values: dict[str, Any], slot: str) -> list[_Series]:
        name = name_of(values)
        key = values.get("overlay", "") if slot == "overlay" else slot
        return runs.get(name, {}).get(str(key), []) if key else []

    def update(artists: dict[str, Any], values: dict[str, Any]) -> None:
        ax = artists["ax"]
        lo, hi = values["steps"]
        wall = values.get("x") == WALL
        each = values["show"] == EACH
        grid_steps = np.linspace(lo, hi, grid) if hi > lo else np.array([float(lo)])
        ys: list[Any] = []
        xs: list[Any] = []
        for slot in slots:
            series = curves_of(values, slot)
            line, band, seed_lines = artists["lines"][slot], artists["bands"][slot], artists["runs"][slot]
            label = values.get("overlay", "") if slot == "overlay" else slot
            smoothed = [(s, _smooth(s.value, values["smooth"])) for s in series]
            for i, seed_line in enumerate(seed_lines):
                if each and i < len(smoothed):
                    s, y = smoothed[i]
                    keep = (s.step >= lo) & (s.step <= hi)
                    x = s.seconds[keep] if wall else s.step[keep]
                    seed_line.set_data(x, y[keep])
                    seed_line.set_visible(True)
                    xs.append(x)
                    ys.append(y[keep])
                else:
                    seed_line.set_data([], [])
                    seed_line.set_visible(False)
            if each or not smoothed:
                line.set_data([], [])
                line.set_label("_nolegend_")
                band.set_verts([])
                if each and smoothed:
                    seed_lines[0].set_label(f"{label} ({len(smoothed)} runs)")
                continue
            seed_lines[0].set_label("_nolegend_")
            matrix = np.array(
                [np.interp(grid_steps, s.step, y, left=np.nan, right=np.nan) for s, y in smoothed]
            ).reshape(len(smoothed), -1)
            mean, low, high = mean_band(matrix)
            if wall:
                seconds = np.array(
                    [np.interp(grid_steps, s.step, s.seconds, left=np.nan, right=np.nan) for s in series]
                )
                counted = np.isfinite(seconds).sum(axis=0)
                total = np.where(np.isfinite(seconds), seconds, 0.0).sum(axis=0)
                x = np.where(counted > 0, total / np.maximum(counted, 1), np.nan)
            else:
                x = grid_steps
            ok = np.isfinite(mean) & np.isfinite(x)
            line.set_data(x[ok], mean[ok])
            line.set_label(f"{label} (mean of {len(smoothed)})")
            banded = ok & np.isfinite(low) & np.isfinite(high)
            if banded.any():
                verts = np.concatenate(
                    [
                        np.column_stack([x[banded], low[banded]]),
                        np.column_stack([x[banded], high[banded]])[::-1],
                    ]
                )
                band.set_verts([verts])
                ys += [low[banded], high[banded]]
            else:
                band.set_verts([])
            xs.append(x[ok])
            ys.append(mean[ok])
        finite_y = np.concatenate([np.asarray(y, dtype=float) for y in ys]) if ys else np.array([])
        finite_y = finite_y[np.isfinite(finite_y)]
        finite_x = np.concatenate([np.asarray(x, dtype=float) for x in xs]) if xs else np.array([])
        finite_x = finite_x[np.isfinite(finite_x)]
        if values["log_y"]:
            if finite_y.size and finite_y.min() > 0:
                ax.set_yscale("log")
            else:
                scale = float(np.percentile(np.abs(finite_y[finite_y != 0]), 10)) if finite_y.any() else 1.0
                ax.set_yscale("symlog", linthresh=max(scale, 1e-12))
        else:
            ax.set_yscale("linear")
        if finite_y.size:
            y0, y1 = float(finite_y.min()), float(finite_y.max())
            pad = 0.05 * (y1 - y0) if y1 > y0 else max(abs(y0) * 0.05, 1e-9)
            if values["log_y"] and y0 > 0:
                ax.set_ylim(y0 / 1.1, y1 * 1.1)
            else:
                ax.set_ylim(y0 - pad, y1 + pad)
        if finite_x.size:
            x0, x1 = float(finite_x.min()), float(finite_x.max())
            ax.set_xlim(x0, x1 if x1 > x0 else x0 + 1)
        name = name_of(values)
        ax.set_xlabel(WALL if wall else STEPS)
        ax.set_ylabel(name)
        ax.set_title(f"{name}: {values['show']}, smoothing {values['smooth']:.2f}", fontsize="medium")
        handles = [h for h in ax.get_lines() if h.get_visible() and not h.get_label().startswith("_")]
        ax.legend(handles=handles, loc="upper right", fontsize="small", framealpha=0.7)
        if annotate is not None:
            annotate(artists, values)

    return Explorer(title=title, controls=controls, setup=setup, update=update, static=static)


# ----------------------------------------------------------------------------------------------------------
# Tables: rows filtered by controls, rendered by the browser
# ----------------------------------------------------------------------------------------------------------


@dataclass(repr=False)
class TableExplorer:
    """Controls over a table: ``rows(values)`` gives the rows to show; live, the browser renders the HTML of
    the rows (an ipywidgets HTML widget) whenever a control changes; in batch runs it is the table at the
    starting values. Like :class:`Explorer`, each redraw reads every control's current value and records
    what it shows (:attr:`drawn`).
    """

    title: str
    controls: list[Control]
    rows: Callable[[dict[str, Any]], Any]
    max_rows: int = 200
    drawn: dict[str, Any] | None = field(default=None, init=False)
    shown: Any = field(default=None, init=False)
    _widgets: dict[str, Any] = field(default_factory=dict, init=False)
    _html: Any = field(default=None, init=False)
    _status: Any = field(default=None, init=False)

    values = Explorer.values
    control = Explorer.control
    describe = Explorer.describe

    def set(self, **values: Any) -> dict[str, Any]:
        for name, value in values.items():
            control = self.control(name)
            control.value = control.check(value)
            widget = self._widgets.get(name)
            if widget is not None:
                widget.unobserve(self._changed, names="value")
                widget.value = control.value
                widget.observe(self._changed, names="value")
        self.redraw()
        return dict(self.drawn or {})

    def table(self) -> Any:
        """The rows for the current values (computed once per change)."""
        self.redraw()
        return self.shown

    def redraw(self) -> None:
        values = self.values
        if values == self.drawn and self.shown is not None:
            return
        self.shown = self.rows(values)
        self.drawn = values
        if self._html is not None:
            self._html.value = self._markup()
            self._status.value = self.describe() + f" ({len(self.shown)} rows)"

    def _markup(self) -> str:
        frame = self.shown
        if frame is None or len(frame) == 0:
            return '<p class="rl-muted">no rows match</p>'
        body = frame.head(self.max_rows).to_html(index=False, border=0, classes="rl-table", na_rep="—")
        more = len(frame) - self.max_rows
        note = f'<p class="rl-muted">{more} more rows: narrow the search</p>' if more > 0 else ""
        return f'<div style="max-height: 480px; overflow: auto">{body}</div>{note}'

    def _changed(self, change: Mapping[str, Any]) -> None:
        for control in self.controls:
            widget = self._widgets.get(control.name)
            if widget is not None:
                control.value = widget.value
        self.redraw()

    def widget(self) -> Any:
        import ipywidgets as w

        if self._html is None:
            for control in self.controls:
                widget = control.widget()
                widget.observe(self._changed, names="value")
                widget.add_class(f"rl-control-{control.name}")
                self._widgets[control.name] = widget
            self._html = w.HTML()
            self._status = w.HTML()
            self._status.add_class("rl-explore-status")
            self.drawn = None
            self.redraw()
        controls = w.HBox(list(self._widgets.values()), layout=w.Layout(flex_flow="row wrap"))
        box = w.VBox([w.HTML(f"<b>{self.title}</b>"), controls, self._status, self._html])
        box.add_class("rl-explorer")
        return box

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, display

        if interactive():
            display(self.widget())
            return
        self.redraw()
        display(HTML(f"<p><b>{self.title}</b> ({self.describe()})</p>" + self._markup()))

    def __repr__(self) -> str:
        self.redraw()
        return f"{self.title} ({self.describe()}):\n{self.shown}"
