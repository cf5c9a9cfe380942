"""The feature picker of 10_spaces: one input feature's distribution as the network's first layer receives it
on the training path and on the evaluation path, baseline and candidate side by side (the ``inputs`` artifacts
of the ``spaces/network-input`` check), so a normalization applied in one path and not the other shows as two
histograms that do not overlap."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from rlaudit.display import format_number
from rlaudit.env.plots import SIDE_COLORS
from rlaudit.explore import Explorer, choice, nothing_to_explore, slider, toggle
from rlaudit.spaces.observations import shifted_features

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

SIDES = ("baseline", "candidate")
PATHS = ("training", "evaluation", "raw")
PATH_STYLE = {
    "training": {"fill": True, "alpha": 0.35, "linewidth": 1.2},
    "evaluation": {"fill": False, "alpha": 1.0, "linewidth": 1.8},
    "raw": {"fill": False, "alpha": 0.8, "linewidth": 1.0, "linestyle": ":"},
}
MAX_FEATURES = 200
"""Features offered by the picker: every one of a small input, the most shifted ones of a wide one."""
BINS = 30


def feature_order(arrays: Mapping[str, Mapping[str, np.ndarray]]) -> list[tuple[str, int]]:
    """The features to offer as ``(label, index)``: those shifted (evaluation against training) on both sides,
    then on one, then the rest; within each, features that vary before constant ones, then by the larger
    |standardized mean difference| of the two sides. A label names the sides on which the feature is shifted."""
    width = min(len(a["training|mean"]) for a in arrays.values())
    smd = np.zeros(width)
    marks: dict[int, list[str]] = {}
    live = {}
    for side, a in arrays.items():
        live[side] = np.maximum(a["training|std"][:width], a["evaluation|std"][:width]) > 1e-6
        shifted, d = shifted_features(
            a["training|mean"][:width], a["training|std"][:width],
            a["evaluation|mean"][:width], a["evaluation|std"][:width],
        )  # fmt: skip
        d = np.nan_to_num(np.asarray(d, dtype=float), posinf=1e9, neginf=-1e9)
        smd = np.where(np.abs(d) > np.abs(smd), d, smd)
        for i in np.flatnonzero(shifted):
            marks.setdefault(int(i), []).append(side)

    # shifted first; among them those that vary where shifted (a constant's shift is a moved constant)
    def varies(i: int) -> bool:
        return all(live[side][i] for side in marks.get(i, []))

    order = sorted(range(width), key=lambda i: (-len(marks.get(i, [])), not varies(i), -abs(smd[i]), i))
    order = order[:MAX_FEATURES]
    out = []
    for i in order:
        tag = f" · shifted in {' and '.join(marks[i])}" if i in marks else ""
        out.append((f"input[{i}]{tag}", i))
    return out


def input_explorer(
    arrays: Mapping[str, Mapping[str, np.ndarray]], notes: Mapping[str, Mapping[str, str]] | None = None
) -> Explorer:
    """The feature picker over the ``inputs.npz`` arrays of both sides.

    Args:
        arrays: side -> arrays with ``<path>|rows`` ((rows, features) first-layer inputs), ``<path>|mean`` and
            ``<path>|std`` for the paths ``training`` and ``evaluation`` (``raw`` optional).
        notes: side -> path -> how that path normalized (shown in the panel titles).

    Raises:
        ValueError: A side lacks the training or evaluation rows.
    """
    for side in SIDES:
        missing = [p for p in ("training", "evaluation") if f"{p}|rows" not in arrays.get(side, {})]
        if missing:
            raise ValueError(f"{side}: no first-layer input rows for the {' and '.join(missing)} path")
    notes = notes or {}
    features = feature_order(arrays)
    rows = {
        side: {p: arrays[side][f"{p}|rows"] for p in PATHS if f"{p}|rows" in arrays[side]} for side in SIDES
    }
    has_raw = all("raw" in rows[side] for side in SIDES)
    widths = {side: rows[side]["training"].shape[1] for side in SIDES}  # a stacked input is wider

    def edges_of(values: dict[str, Any], feature: int) -> dict[str, np.ndarray]:
        """Bin edges per side: shared by both sides when ``same_x``, else each side's own range."""
        shown = [p for p in PATHS if p != "raw" or values.get("raw")]
        spans = {}
        for side in SIDES:
            cols = [rows[side][p][:, feature] for p in shown if p in rows[side]]
            col = np.concatenate(cols).astype(float)
            col = col[np.isfinite(col)]
            spans[side] = (float(col.min()), float(col.max())) if col.size else (0.0, 1.0)
        if values["same_x"]:
            lo, hi = min(s[0] for s in spans.values()), max(s[1] for s in spans.values())
            spans = dict.fromkeys(SIDES, (lo, hi))
        bins = round(values["bins"])
        out = {}
        for side, (lo, hi) in spans.items():
            if hi <= lo:
                lo, hi = lo - 0.5, hi + 0.5
            out[side] = np.linspace(lo, hi, bins + 1)
        return out

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        axes = fig.subplots(1, 2, sharey=True)
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.25, top=0.84, wspace=0.08)
        artists: dict[str, Any] = {"axes": dict(zip(SIDES, axes, strict=True)), "steps": {}, "means": {}}
        for side, ax in artists["axes"].items():
            color = SIDE_COLORS[side]
            for path in PATHS:
                style = PATH_STYLE[path]
                artists["steps"][(side, path)] = ax.stairs(
                    [0.0], [0.0, 1.0], edgecolor=color, facecolor=color, label=path, **style
                )
                artists["means"][(side, path)] = ax.axvline(
                    0.0, color=color, linewidth=0.9, linestyle=style.get("linestyle", "--"), alpha=0.7
                )
            ax.set_xlabel("first-layer input value")
            ax.grid(alpha=0.3)
        artists["axes"]["baseline"].set_ylabel("fraction of observations")
        return artists

    def update(artists: dict[str, Any], values: dict[str, Any]) -> None:
        feature = int(values["feature"])
        edges = edges_of(values, feature)
        top = 0.0
        for side in SIDES:
            ax = artists["axes"][side]
            summary = []
            for path in PATHS:
                stairs, mean_line = artists["steps"][(side, path)], artists["means"][(side, path)]
                if path not in rows[side] or (path == "raw" and not values.get("raw")):
                    stairs.set_visible(False)
                    mean_line.set_visible(False)
                    continue
                col = rows[side][path][:, feature].astype(float)
                counts, _ = np.histogram(col, bins=edges[side])
                fractions = counts / max(1, len(col))
                stairs.set_data(fractions, edges[side])
                stairs.set_visible(True)
                mean = float(np.mean(col))
                mean_line.set_xdata([mean, mean])
                mean_line.set_visible(True)
                top = max(top, float(fractions.max()))
                summary.append(f"{path} {format_number(mean)} ± {format_number(float(np.std(col)))}")
            half = (edges[side][1] - edges[side][0]) / 2  # the end bins drawn whole
            ax.set_xlim(edges[side][0] - half, edges[side][-1] + half)
            how = notes.get(side, {})
            detail = "\n".join(
                textwrap.shorten(f"{p}: {how[p]}", 75, placeholder="…")
                for p in ("training", "evaluation")
                if how.get(p)
            )
            ax.set_title(
                f"{side}: input[{feature}] of {widths[side]}\n" + ", ".join(summary),
                fontsize="small",
                color=SIDE_COLORS[side],
            )
            handles = [h for h in (artists["steps"][(side, p)] for p in PATHS) if h.get_visible()]
            ax.legend(handles=handles, loc="upper right", fontsize="x-small", title=None)
            if detail:
                ax.set_xlabel(f"first-layer input value\n{detail}", fontsize="x-small")
        artists["axes"]["baseline"].set_ylim(0.0, max(top * 1.1, 1e-3))

    controls = [
        choice("feature", features, features[0][1], label="feature"),
        slider("bins", 5, 80, BINS, step=1, label="bins"),
        toggle("same_x", True, label="same x range on both sides"),
    ]
    if has_raw:
        controls.append(toggle("raw", False, label="raw observation"))
    return Explorer(
        title="Feature picker: what the first layer receives, training against evaluation",
        controls=controls,
        setup=setup,
        update=update,
        figsize=(9.0, 3.8),
    )


def feature_explorer(wb: Workbench, trust: bool = False) -> Any:
    """The feature picker (JupyterLab: live; the report: the most shifted feature), read from the cached
    ``spaces/network-input`` probe; a muted line saying why when there is nothing to pick."""
    from rlaudit.checks import Missing
    from rlaudit.spaces.inputs import Stopped, input_paths, network_input_pair

    try:
        pair = network_input_pair(wb, trust=trust)
    except Missing as exc:
        return nothing_to_explore(
            f"No feature picker: a subject lacks {exc.what} (see spaces/network-input)."
        )
    if isinstance(pair, Stopped) or not pair.ok:
        return nothing_to_explore(
            "No feature picker: no checkpoint could be fed to the network (see spaces/network-input)."
        )
    data = {side: input_paths(pair[side]) for side in SIDES}
    arrays = {side: data[side]["arrays"] for side in SIDES}
    lacking = [s for s in SIDES if not {"training|rows", "evaluation|rows"} <= set(arrays[s])]
    if lacking:
        widths = ", ".join(f"{s}: {data[s]['features']}" for s in lacking)
        return nothing_to_explore(
            "No feature picker: the first layer's inputs were not kept for "
            f"{' and '.join(lacking)} (too many features to sample, {widths}); see the per-feature std figure "
            "of spaces/network-input."
        )
    notes = {side: {p: s.get("note", "") for p, s in data[side]["summary"].items()} for side in SIDES}
    return input_explorer(arrays, notes)


__all__ = ["Explorer", "feature_explorer", "feature_order", "input_explorer"]
