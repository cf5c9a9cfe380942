"""The allocation-site and type picker of 12_memory: one allocation site's traced bytes, one object type's live
count or one container's size at each snapshot of the ``memory/growth-sites`` rollout, against the episodes
finished by then, baseline and candidate side by side with their fitted growth per 1000 episodes, so the item
that grows in the candidate only shows as a line that keeps rising while the baseline's stays flat."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlaudit.display import format_number
from rlaudit.env.plots import SIDE_COLORS
from rlaudit.explore import Explorer, choice, nothing_to_explore, toggle
from rlaudit.memory.common import BYTES_PER_1000_EPISODES, ENTRIES_PER_1000_EPISODES
from rlaudit.memory.growth import compare_growth, growth_per_episode, site_key

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

SIDES = ("baseline", "candidate")
KINDS = {
    # kind: (table, key column, value column, label, unit, scale); in the check's order of evidence strength
    "container": ("containers", "path", "size", "container", "entries", 1.0),
    "site": ("sites", "site", "size", "allocation site", "traced KiB", 1 / 1024),
    "type": ("types", "type", "count", "object type", "live objects", 1.0),
}
PER_KIND = 40
"""Items offered per kind: those whose growth exceeds the baseline's counterpart the most."""
ABSOLUTE, CHANGE = "value at each snapshot", "change since the first snapshot"


@dataclass
class Item:
    """One item's snapshots on both sides (``x``: episodes finished, ``y``: the value, in the kind's unit)."""

    kind: str
    name: str
    x: dict[str, np.ndarray]
    y: dict[str, np.ndarray]
    growth: dict[str, float]  # per 1000 episodes, in the kind's unit
    subject: bool = False  # an allocation site inside the subject's own code
    flagged: bool = False  # the growth check flags it (memory.growth.compare_growth)

    @property
    def key(self) -> str:
        return f"{self.kind}|{self.name}"

    @property
    def excess(self) -> float:
        """The candidate's growth beyond the baseline's, per 1000 episodes."""
        return self.growth["candidate"] - self.growth["baseline"]

    @property
    def unit(self) -> str:
        if self.kind == "container" and self.name.endswith("#bytes"):
            return "bytes"
        return KINDS[self.kind][4]


def signed(value: float) -> str:
    """``+1000``, ``-7.81``, ``0``: a growth for people (:func:`rlaudit.display.format_number`) with its sign."""
    return ("+" if value > 0 else "") + format_number(value)


def _wide(values: pd.DataFrame, points: pd.DataFrame, key: str, value: str) -> pd.DataFrame:
    """Snapshots (rows, in the points' order) by item (columns); an item absent from a snapshot is 0."""
    return (
        values.pivot_table(index="snapshot", columns=key, values=value, aggfunc="sum")
        .reindex(points["snapshot"])
        .fillna(0.0)
    )


def growth_items(tables: Mapping[str, Mapping[str, pd.DataFrame]], per_kind: int = PER_KIND) -> list[Item]:
    """The items to offer, per kind the ``per_kind`` whose growth beats the baseline's counterpart the most.

    Args:
        tables: side -> the probe's tables ``points``, ``sites`` (with ``file`` and ``code``), ``types``,
            ``containers``.
    """
    items: list[Item] = []
    for kind, (table, key, value, _label, _unit, scale) in KINDS.items():
        frames = {s: tables[s][table] for s in SIDES}
        if kind == "site":
            frames = {s: site_key(f) if len(f) else f.assign(site=[]) for s, f in frames.items()}
        if any(key not in f for f in frames.values()):
            continue
        points = {s: tables[s]["points"] for s in SIDES}
        growth = {s: growth_per_episode(frames[s], points[s], key, value) for s in SIDES}
        rates = {s: growth[s].set_index("item")["per_1000_episodes"] for s in SIDES}
        wide = {s: _wide(frames[s], points[s], key, value) for s in SIDES}
        names = list(dict.fromkeys([*wide["candidate"].columns, *wide["baseline"].columns]))
        excess = {
            n: float(rates["candidate"].get(n, 0.0)) - float(rates["baseline"].get(n, 0.0)) for n in names
        }
        threshold = BYTES_PER_1000_EPISODES if kind == "site" else ENTRIES_PER_1000_EPISODES
        flags = compare_growth(growth["baseline"], growth["candidate"], threshold)
        if kind == "container":  # byte-counting containers are held to the byte threshold, as the check does
            is_bytes = flags["item"].astype(str).str.endswith("#bytes")
            flags = flags[~is_bytes | (flags["candidate per 1000 episodes"] > BYTES_PER_1000_EPISODES)]
        flagged = set(flags["item"].astype(str))
        inside = (
            set(frames["candidate"].loc[frames["candidate"]["subject"].astype(bool), key])
            if kind == "site"
            else set()
        )
        fastest = {n: float(rates["candidate"].get(n, 0.0)) for n in names}
        for name in sorted(names, key=lambda n: (str(n) not in flagged, -excess[n], -fastest[n], str(n)))[
            :per_kind
        ]:
            x = {s: points[s]["episodes"].to_numpy(dtype=float) for s in SIDES}
            y = {
                s: (wide[s][name].to_numpy(dtype=float) if name in wide[s] else np.zeros(len(x[s]))) * scale
                for s in SIDES
            }
            rate = {s: float(rates[s].get(name, 0.0)) * scale for s in SIDES}
            items.append(
                Item(kind, str(name), x, y, rate, subject=name in inside, flagged=str(name) in flagged)
            )
    return items


def default_item(items: list[Item]) -> Item:
    """What the report shows: the first item the growth check flags (containers, then sites, then types, its
    order of evidence); else the allocation site in the subject's code that grows fastest in the candidate
    (what the check names when it clears); else the first item."""
    flagged = [it for it in items if it.flagged]
    if flagged:
        return flagged[0]
    own = [it for it in items if it.subject]
    return max(own, key=lambda it: it.growth["candidate"]) if own else items[0]


def items_explorer(items: list[Item]) -> Explorer:
    """The site and type picker over prepared items (see :func:`growth_items`).

    Raises:
        ValueError: No item to pick.
    """
    if not items:
        raise ValueError("no allocation site, object type or container was snapshotted")
    by_key = {it.key: it for it in items}
    options = [
        (
            f"{KINDS[it.kind][3]} · {it.name[:90]} ({signed(it.excess)} {it.unit}/1000 ep{', flagged' * it.flagged})",
            it.key,
        )
        for it in items
    ]

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.98, bottom=0.13, top=0.86)
        artists: dict[str, Any] = {"ax": ax, "lines": {}, "fits": {}}
        for side in SIDES:
            color = SIDE_COLORS[side]
            (artists["lines"][side],) = ax.plot(
                [], [], "o-", color=color, linewidth=1.8, markersize=4, label=side
            )
            (artists["fits"][side],) = ax.plot([], [], "--", color=color, linewidth=1.0, alpha=0.8)
        ax.set_xlabel("episodes finished (random-policy rollout)")
        ax.grid(alpha=0.3)
        return artists

    def update(artists: dict[str, Any], values: dict[str, Any]) -> None:
        it = by_key[values["item"]]
        ax = artists["ax"]
        change = values["show"] == CHANGE
        ys, xs = [], []
        for side in SIDES:
            x, y = it.x[side], it.y[side]
            shown = y - y[0] if change and len(y) else y
            artists["lines"][side].set_data(x, shown)
            artists["lines"][side].set_label(f"{side}: {signed(it.growth[side])} {it.unit} per 1000 episodes")
            fit = artists["fits"][side]
            if values["fit"] and len(x) >= 2:
                # the fitted slope through the snapshots' centre (the intercept leaves the fit's growth alone)
                used = slice(1, None) if len(x) >= 4 else slice(None)
                x0, y0 = float(np.mean(x[used])), float(np.mean(shown[used]))
                slope = it.growth[side] / 1000.0
                ends = np.array([float(x[0]), float(x[-1])])
                fit.set_data(ends, y0 + slope * (ends - x0))
                ys.append(y0 + slope * (ends - x0))
            else:
                fit.set_data([], [])
            xs.append(x)
            ys.append(shown)
        finite_y = np.concatenate(ys) if ys else np.array([0.0])
        finite_x = np.concatenate(xs) if xs else np.array([0.0])
        y0, y1 = float(finite_y.min()), float(finite_y.max())
        pad = 0.08 * (y1 - y0) if y1 > y0 else max(abs(y1) * 0.1, 1.0)
        ax.set_ylim(y0 - pad, y1 + pad)
        ax.set_xlim(float(finite_x.min()), max(float(finite_x.max()), float(finite_x.min()) + 1.0))
        ax.set_ylabel(f"{it.unit}{' (change)' if change else ''}")
        ax.set_title(f"{KINDS[it.kind][3]}: {it.name[:110]}", fontsize="small")
        ax.legend(handles=list(artists["lines"].values()), loc="upper left", fontsize="x-small")

    controls = [
        choice("item", options, default_item(items).key, label="site, type or container"),
        choice("show", [ABSOLUTE, CHANGE], ABSOLUTE, label="show"),
        toggle("fit", True, label="fitted growth"),
    ]
    return Explorer(
        title="Allocation-site and type picker: what grows per episode",
        controls=controls,
        setup=setup,
        update=update,
        figsize=(9.0, 3.8),
    )


def growth_explorer(wb: Workbench, seed: int = 0) -> Any:
    """The site and type picker (JupyterLab: live; the report: the item with the most extra growth), read
    from the cached ``memory/growth-sites`` probe; a muted line saying why when there is nothing to pick."""
    from rlaudit.memory import probes
    from rlaudit.memory.growth import growth_params

    pair = wb.run(probes.growth_sites, **growth_params(wb, seed))  # the check's cache entry, no progress bar
    if not pair.ok:
        text = "No site or type picker: the growth probe did not run on both sides (see memory/growth-sites)."
        return nothing_to_explore(text)
    tables = {s: {t: pair[s].table(t) for t in ("points", "sites", "types", "containers")} for s in SIDES}
    if any(len(tables[s]["points"]) < 3 for s in SIDES):
        text = "No site or type picker: fewer than 3 memory snapshots on a side (see memory/growth-sites)."
        return nothing_to_explore(text)
    items = growth_items(tables)
    if not items:
        text = "No site or type picker: no allocation site, object type or container was snapshotted."
        return nothing_to_explore(text)
    return items_explorer(items)


__all__ = ["Explorer", "growth_explorer", "growth_items", "items_explorer"]
