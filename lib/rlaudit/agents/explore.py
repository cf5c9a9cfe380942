"""The module picker of 01_agents: the picked module's activation histogram at initialization, baseline and
candidate overlaid on common bins, over every torch seed or one.

It reads the network probe's ``histograms.json`` (each layer's output values on the same observations, per
seed; :func:`rlaudit.agents.nets.activation_histogram`) and aligns the modules as ``agents/architecture``
does. The histograms are re-binned for every module, seed and bin count when the explorer is built, so a
control change only swaps arrays into the artists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rlaudit.agents import probes
from rlaudit.agents import trees as tr
from rlaudit.agents.activations import DEAD_JUMP, STD_RATIO
from rlaudit.agents.common import network_params, tree_pair
from rlaudit.explore import Explorer, choice, nothing_to_explore, toggle
from rlaudit.trainer.plots import SIDE_COLORS

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

SIDES = ("baseline", "candidate")
BIN_COUNTS = (20, 40, 80)
ALL_SEEDS = "all"
KINDS = ("activation", "linear", "norm", "other")
"""Module kinds whose outputs the probe histograms (containers have no output of their own here)."""


def rebin(counts: Any, low: float, high: float, zeros: int, edges: np.ndarray) -> np.ndarray:
    """A probe histogram (``counts`` in equal bins over ``[low, high]`` plus ``zeros`` exact zeros) as counts
    on ``edges``: values are spread evenly within their own bin, the zeros go to the bin holding 0.

    Args:
        counts: ``(B,)`` counts of the non-zero values.
        low, high: Their range.
        zeros: Count of exact zeros.
        edges: ``(K+1,)`` increasing bin edges that cover ``[low, high]`` and 0 when ``zeros`` > 0.

    Returns:
        ``(K,)`` counts (floats; they sum to ``sum(counts) + zeros``).
    """
    counts = np.asarray(counts, dtype=float)
    k = len(edges) - 1
    out = np.zeros(k)

    def put(value: float, amount: float) -> None:
        out[int(np.clip(np.searchsorted(edges, value, side="right") - 1, 0, k - 1))] += amount

    if counts.sum() > 0:
        if high > low:
            own = np.linspace(low, high, len(counts) + 1)
            cum = np.concatenate([[0.0], np.cumsum(counts)])
            out += np.diff(np.interp(edges, own, cum, left=0.0, right=cum[-1]))
        else:
            put(low, float(counts.sum()))
    if zeros:
        put(0.0, float(zeros))
    return out


def module_pairs(tree_b: dict[str, Any], tree_c: dict[str, Any]) -> list[tuple[str, str | None, str | None]]:
    """``(label, baseline path, candidate path)`` of the aligned modules whose outputs are histogrammed, in
    network order; a module only one side has gets None on the other."""
    cmp = tr.compare_trees(tree_b, tree_c)
    out = []
    for p in cmp["pairs"]:
        a = cmp["a"][p.a] if p.a is not None else None
        b = cmp["b"][p.b] if p.b is not None else None
        ref = a or b
        if ref is None or ref["kind"] not in KINDS:
            continue
        if a and b:
            name = a["path"] if a["path"] == b["path"] else f"{a['path']} → {b['path']}"
            cls = a["cls"] if a["cls"] == b["cls"] else f"{a['cls']} | {b['cls']}"
        else:
            name = f"{ref['path']} ({'baseline' if a else 'candidate'} only)"
            cls = ref["cls"]
        out.append((f"{name} · {cls}", a["path"] if a else None, b["path"] if b else None))
    return out


def _by_path(
    hist: dict[str, list[Any]], stats: dict[str, list[Any]] | None = None
) -> dict[str, dict[int, dict[str, Any]]]:
    """``{path: {seed: {low, high, zeros, n, counts[, mean, std]}}}`` from the probe's columns
    (``histograms.json``, and ``activations.json`` for the exact mean and std)."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for i, path in enumerate(hist["path"]):
        out.setdefault(path, {})[int(hist["seed"][i])] = {
            k: hist[k][i] for k in ("low", "high", "zeros", "n", "counts")
        }
    for i, path in enumerate((stats or {}).get("path", [])):
        record = out.get(path, {}).get(int(stats["seed"][i]))
        if record is not None:
            record.update({k: stats[k][i] for k in ("mean", "std", "dead", "saturated") if k in stats})
    return out


def _moments(record: dict[str, Any]) -> tuple[float, float, float]:
    """(count, mean, second moment) of a layer's values: exact from the probe's statistics when given
    (``mean``/``std``), else from the histogram with values at their bin centres."""
    if record.get("mean") is not None and record.get("std") is not None:
        return (
            float(record["n"]),
            float(record["mean"]),
            float(record["std"]) ** 2 + float(record["mean"]) ** 2,
        )
    counts = np.asarray(record["counts"], dtype=float)
    centres = np.linspace(record["low"], record["high"], len(counts) + 1)
    centres = (centres[:-1] + centres[1:]) / 2
    n = counts.sum() + record["zeros"]
    if n == 0:
        return 0.0, 0.0, 0.0
    return n, float((counts * centres).sum() / n), float((counts * centres**2).sum() / n)


def judged_different(records: dict[str, dict[int, dict[str, Any]]]) -> bool:
    """Whether a module's activations differ as ``agents/activations`` judges them: the seed-averaged dead
    (or saturated) fraction moves by :data:`DEAD_JUMP` or more, or the seed-averaged std by more than a factor
    :data:`STD_RATIO`. Without the probe's statistics, the share of exact zeros stands in for the dead
    fraction and the histogram's std for the std.

    Args:
        records: Per side, ``{seed: record}`` of :func:`_by_path`.
    """

    def averaged(side: str, key: str) -> float:
        values = []
        for record in records[side].values():
            if key in record:
                values.append(float(record[key]))
            elif key == "dead":
                values.append(record["zeros"] / max(record["n"], 1))
            elif key == "std":
                _count, mean, second = _moments(record)
                values.append(float(np.sqrt(max(second - mean**2, 0.0))))
        return float(np.mean(values)) if values else 0.0

    for key in ("dead", "saturated"):
        if abs(averaged("candidate", key) - averaged("baseline", key)) >= DEAD_JUMP:
            return True
    sb, sc = averaged("baseline", "std"), averaged("candidate", "std")
    return sb > 0 and sc > 0 and not (1 / STD_RATIO <= sc / sb <= STD_RATIO)


def histogram_explorer(
    modules: list[tuple[str, str | None, str | None]],
    hist_b: dict[str, list[Any]],
    hist_c: dict[str, list[Any]],
    stats_b: dict[str, list[Any]] | None = None,
    stats_c: dict[str, list[Any]] | None = None,
) -> Explorer:
    """The module picker over two sides' probe histograms.

    Args:
        modules: ``(label, baseline path, candidate path)`` per module (:func:`module_pairs`).
        hist_b: The baseline's ``histograms.json`` columns (seed, path, low, high, zeros, n, counts).
        hist_c: The candidate's.
        stats_b, stats_c: The sides' ``activations.json`` columns (exact mean and std per seed and path);
            without them the mean and std are read off the histograms.

    Raises:
        ValueError: No module has a histogram on either side.
    """
    found = {"baseline": _by_path(hist_b, stats_b), "candidate": _by_path(hist_c, stats_c)}
    modules = [
        m for m in modules if (m[1] in found["baseline"]) or (m[2] in found["candidate"])
    ]  # a module the probe saw no output of has nothing to show
    if not modules:
        raise ValueError("no module has an activation histogram on either side")
    seeds = sorted({s for side in SIDES for per in found[side].values() for s in per})
    # prepared[(module, seed option, bins)] = (edges, {side: fraction per bin or None}, summary per side)
    prepared: dict[tuple[int, Any, int], tuple[np.ndarray, dict[str, Any], dict[str, Any]]] = {}
    distance: dict[int, float] = {}
    flagged: dict[int, bool] = {}
    for m, (_label, path_b, path_c) in enumerate(modules):
        records = {
            "baseline": found["baseline"].get(path_b, {}) if path_b else {},
            "candidate": found["candidate"].get(path_c, {}) if path_c else {},
        }
        every = [r for side in SIDES for r in records[side].values()]
        low = min([r["low"] for r in every if sum(r["counts"])] + [0.0])
        high = max([r["high"] for r in every if sum(r["counts"])] + [0.0])
        if high <= low:
            low, high = low - 0.5, high + 0.5
        pad = 1e-9 * max(abs(low), abs(high), 1.0)
        for option in [ALL_SEEDS, *seeds]:
            for bins in BIN_COUNTS:
                edges = np.linspace(low - pad, high + pad, bins + 1)
                fractions: dict[str, Any] = {}
                summary: dict[str, Any] = {}
                for side in SIDES:
                    use = [r for s, r in records[side].items() if option == ALL_SEEDS or s == option]
                    if not use:
                        fractions[side], summary[side] = None, None
                        continue
                    total = sum(rebin(r["counts"], r["low"], r["high"], r["zeros"], edges) for r in use)
                    n = float(sum(r["n"] for r in use))
                    fractions[side] = total / max(n, 1.0)
                    moments = [_moments(r) for r in use]
                    count = sum(c for c, _, _ in moments)
                    mean = sum(c * mu for c, mu, _ in moments) / max(count, 1.0)
                    second = sum(c * m2 for c, _, m2 in moments) / max(count, 1.0)
                    summary[side] = {
                        "zeros": sum(r["zeros"] for r in use) / max(n, 1.0),
                        "mean": mean,
                        "std": float(np.sqrt(max(second - mean**2, 0.0))),
                        "n": int(n),
                        "seeds": len(use),
                    }
                prepared[(m, option, bins)] = (edges, fractions, summary)
        _, fractions, summary = prepared[(m, ALL_SEEDS, BIN_COUNTS[1])]
        if fractions["baseline"] is not None and fractions["candidate"] is not None:
            distance[m] = 0.5 * float(np.abs(fractions["baseline"] - fractions["candidate"]).sum())
            flagged[m] = judged_different(records)
        else:
            distance[m], flagged[m] = 1.0, True
    options = [
        (f"{label}{'  ◆ differs' if flagged[m] else ''}", m) for m, (label, _, _) in enumerate(modules)
    ]
    start = max(distance, key=lambda m: distance[m])
    seed_options = [("all seeds", ALL_SEEDS), *((f"seed {s}", s) for s in seeds)]

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.13, top=0.86)
        zero = np.zeros(1)
        steps = {
            "baseline": ax.stairs(
                zero,
                [0.0, 1.0],
                fill=True,
                alpha=0.45,
                color=SIDE_COLORS["baseline"],
                label="baseline",
            ),
            "candidate": ax.stairs(
                zero, [0.0, 1.0], fill=False, linewidth=2.0, color=SIDE_COLORS["candidate"], label="candidate"
            ),
        }
        ax.set_xlabel("activation value (module output)")
        ax.set_ylabel("fraction of values per bin")
        ax.grid(alpha=0.3)
        legend = ax.legend(loc="upper right", fontsize="small")
        note = ax.text(0.01, 0.97, "", transform=ax.transAxes, va="top", fontsize="small")
        return {"ax": ax, "steps": steps, "legend": legend, "note": note}

    def update(artists: dict[str, Any], values: dict[str, Any]) -> None:
        ax = artists["ax"]
        m = int(values["module"])
        edges, fractions, summary = prepared[(m, values["seed"], int(values["bins"]))]
        top = 0.0
        for side in SIDES:
            patch = artists["steps"][side]
            values_side = fractions[side]
            if values_side is None:
                patch.set_data(np.zeros(len(edges) - 1), edges)
                patch.set_visible(False)
                continue
            patch.set_data(values_side, edges)
            patch.set_visible(True)
            top = max(top, float(values_side.max()))
        ax.set_xlim(float(edges[0]), float(edges[-1]))
        if values["log_y"]:
            positive = [f[f > 0].min() for f in fractions.values() if f is not None and (f > 0).any()]
            ax.set_yscale("log")
            ax.set_ylim(min(positive, default=1e-4) / 2, max(top, 1e-3) * 2)
        else:
            ax.set_yscale("linear")
            ax.set_ylim(0, max(top, 1e-3) * 1.3)  # room for the note above the bars
        lines = []
        for side in SIDES:
            s = summary[side]
            if s is None:
                lines.append(f"{side}: no such module")
                continue
            lines.append(
                f"{side}: mean {s['mean']:.3g}, std {s['std']:.3g}, exact zeros {100 * s['zeros']:.1f}% "
                f"({s['n']:,} values, {s['seeds']} seed{'s' if s['seeds'] != 1 else ''})"
            )
        artists["note"].set_text("\n".join(lines))
        ax.set_title(
            f"{modules[m][0]}: activations at initialization "
            f"(distributions differ by {100 * distance[m]:.0f}% total variation, all seeds)",
            fontsize="small",
        )

    controls = [
        choice("module", options, start, label="module"),
        choice("seed", seed_options, ALL_SEEDS, label="torch seed"),
        choice("bins", list(BIN_COUNTS), BIN_COUNTS[1], label="bins"),
        toggle("log_y", False, label="log y"),
    ]
    return Explorer(
        title="Module picker: activation histograms at initialization, baseline and candidate",
        controls=controls,
        setup=setup,
        update=update,
    )


def activation_explorer(wb: Workbench) -> Any:
    """The module picker over ``wb``'s network probe (JupyterLab: live; the report: the module whose
    distributions differ most, all seeds pooled).

    Returns:
        An :class:`~rlaudit.explore.Explorer`, or a muted line saying why there is nothing to pick.
    """

    pair = wb.run(probes.network, **network_params(wb))
    failed = [side for side in SIDES if not pair[side].ok]
    if failed:
        return nothing_to_explore(
            f"No module picker: the network probe failed or could not run on the {' and '.join(failed)} "
            "(see agents/architecture)."
        )
    tree_b, tree_c = tree_pair(pair)
    try:
        hists = [pair[side].json("histograms") for side in SIDES]
        stats = [pair[side].json("activations") for side in SIDES]
    except FileNotFoundError:
        return nothing_to_explore(
            "No module picker: the network probe's artifacts predate its histograms; rerun with --fresh."
        )
    try:
        return histogram_explorer(module_pairs(tree_b, tree_c), hists[0], hists[1], stats[0], stats[1])
    except ValueError:
        return nothing_to_explore(
            "No module picker: the network probe traced no module output on either side."
        )


__all__ = ["Explorer", "activation_explorer", "histogram_explorer", "module_pairs", "rebin"]
