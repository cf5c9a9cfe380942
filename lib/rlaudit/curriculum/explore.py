"""The pool-size and task picker of 06_curriculum: what one curriculum call costs at the picked task-pool size,
and how often both curricula draw the picked task after the same synthetic scores.

Left, the CPU time per ``sample()`` or ``update()`` against the pool size (log-log, every timed block and the
median), the picked size marked; middle, the picked task's share of the draws in each open-loop phase; right,
how often it was played over the closed-loop episodes. It reads the cached runs of ``curriculum/scaling`` and
``curriculum/sampling``; a control change only indexes prepared arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, probe_evidence
from rlaudit.curriculum import probes
from rlaudit.curriculum.cost import CALLS, scaling_params
from rlaudit.curriculum.sampling import sampling_params
from rlaudit.explore import Explorer, choice, nothing_to_explore, toggle
from rlaudit.trainer.plots import SIDE_COLORS

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

STYLE = {
    "baseline": {"linestyle": "-", "marker": "o", "markersize": 6},
    "candidate": {"linestyle": "--", "marker": "s", "markersize": 4},
}
"""Baseline solid, candidate dashed with smaller markers: where both draw the same, both stay visible."""


@dataclass
class CurriculumEvidence:
    """What the picker draws, per side.

    Attributes:
        timings: ``curriculum/scaling``'s ``timings`` table (size, repeat, sample_seconds, update_seconds,
            calib_seconds); absent for a side whose pool size could not be varied.
        phases: The open-loop draws: per phase, counts per task key.
        sequence: The closed-loop task sequence (one key per episode).
    """

    timings: dict[str, pd.DataFrame] = field(default_factory=dict)
    phases: dict[str, list[dict[str, int]]] = field(default_factory=dict)
    sequence: dict[str, list[str]] = field(default_factory=dict)


def evidence(wb: Workbench, seed: int = 0) -> CurriculumEvidence:
    """The cached scaling and sampling runs of both sides (a side without a curriculum contributes nothing)."""
    out = CurriculumEvidence()
    scaling = probe_evidence(probes.scaling, scaling_params, "curriculum cost scaling")(wb, seed=seed)
    sampling = probe_evidence(probes.sampling, sampling_params, "curriculum sampling")(wb, seed=seed)
    for side in SIDES:
        result = scaling[side]
        if result.ok and result.result.get("pool_key") and result.result.get("has_curriculum", True):
            out.timings[side] = result.table("timings")
        result = sampling[side]
        if result.ok and result.result.get("has_curriculum", False):
            out.phases[side] = result.json("open_loop")["phases"]
            out.sequence[side] = list(result.json("closed_loop")["sequence"])
    return out


def _task_order(keys: set[str]) -> list[str]:
    return sorted(keys, key=lambda k: (len(k), k))


def curriculum_explorer(wb: Workbench, seed: int = 0) -> Any:
    """The pool-size and task picker (JupyterLab: live; the report: the largest pool and the first task)."""
    return curriculum_picker(evidence(wb, seed=seed))


def curriculum_picker(ev: CurriculumEvidence) -> Any:
    """The explorer over prepared evidence (see :func:`curriculum_explorer`), or a line saying why there is none."""

    sizes = (
        sorted(int(n) for n in set.intersection(*(set(ev.timings[s]["size"]) for s in SIDES)))
        if len(ev.timings) == 2
        else []
    )
    tasks = _task_order({k for s in ev.phases for phase in ev.phases[s] for k in phase})
    if not sizes and not tasks:
        text = (
            "No pool-size or task picker: neither side's make_curriculum(config) gave timings over pool sizes or "
            "task draws (see curriculum/scaling and curriculum/sampling)."
        )
        return nothing_to_explore(text)

    # prepared once: per (side, call) the sizes, seconds and calibration seconds of every timed block
    blocks: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for side, table in ev.timings.items():
        part = table[table["size"].isin(sizes)]
        for call in CALLS:
            blocks[(side, call)] = (
                part["size"].to_numpy(dtype=float),
                part[f"{call}_seconds"].to_numpy(dtype=float),
                part["calib_seconds"].to_numpy(dtype=float),
            )
    share: dict[tuple[str, str], np.ndarray] = {}
    plays: dict[tuple[str, str], np.ndarray] = {}
    pooled: dict[tuple[str, str], float] = {}
    for side, phases in ev.phases.items():
        totals = np.array([max(1, sum(p.values())) for p in phases], dtype=float)
        later = float(totals[1:].sum()) if len(totals) > 1 else float(totals.sum())
        sequence = np.asarray(ev.sequence.get(side, []), dtype=object)
        for task in tasks:
            counts = np.array([p.get(task, 0) for p in phases], dtype=float)
            share[(side, task)] = counts / totals
            pooled[(side, task)] = float(counts[1:].sum() if len(counts) > 1 else counts.sum()) / later
            plays[(side, task)] = np.cumsum(sequence == task).astype(float)

    def seconds(side: str, call: str, calibrated: bool) -> tuple[np.ndarray, np.ndarray]:
        size, secs, calib = blocks[(side, call)]
        return size, (secs / calib if calibrated else 1e6 * secs)

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        ax_cost, ax_share, ax_plays = fig.subplots(1, 3)
        fig.subplots_adjust(left=0.07, right=0.99, bottom=0.14, top=0.84, wspace=0.4)
        art: dict[str, Any] = {"ax_cost": ax_cost, "ax_share": ax_share, "ax_plays": ax_plays}
        art["blocks"] = {s: ax_cost.scatter([], [], s=10, alpha=0.35, color=SIDE_COLORS[s]) for s in SIDES}
        art["medians"] = {
            s: ax_cost.plot([], [], color=SIDE_COLORS[s], label=f"{s} (median)", **STYLE[s])[0] for s in SIDES
        }
        art["picked"] = {
            s: ax_cost.plot([], [], "D", color=SIDE_COLORS[s], markersize=9, markeredgecolor="black")[0]
            for s in SIDES
        }
        art["size_line"] = ax_cost.axvline(np.nan, color="grey", linestyle=":", linewidth=1)
        ax_cost.set_xscale("log", base=2)
        ax_cost.set_yscale("log")
        ax_cost.set_xlabel("task-pool size (tasks)")
        ax_cost.grid(alpha=0.3, which="both")
        if sizes:
            ax_cost.legend(loc="upper left", fontsize="small")
        else:
            ax_cost.text(0.5, 0.5, "no pool sizes timed on both sides", transform=ax_cost.transAxes,
                         ha="center", va="center", color="grey", fontsize=9)  # fmt: skip
            ax_cost.set_xscale("linear")
            ax_cost.set_yscale("linear")
        art["share"] = {s: ax_share.plot([], [], color=SIDE_COLORS[s], label=s, **STYLE[s])[0] for s in SIDES}
        art["uniform"] = ax_share.axhline(
            1.0 / max(len(tasks), 1), color="grey", linestyle=":", linewidth=1, label="uniform over tasks"
        )
        ax_share.set_xlabel("open-loop phase (scores given before it)")
        ax_share.set_ylabel("share of the draws")
        ax_share.grid(alpha=0.3)
        ax_share.legend(loc="upper left", fontsize="x-small")
        art["plays"] = {
            s: ax_plays.plot([], [], color=SIDE_COLORS[s], label=s, linestyle=STYLE[s]["linestyle"])[0]
            for s in SIDES
        }
        ax_plays.set_xlabel("closed-loop episode")
        ax_plays.set_ylabel("times played so far")
        ax_plays.grid(alpha=0.3)
        ax_plays.legend(loc="upper left", fontsize="x-small")
        if not tasks:
            ax_share.text(0.5, 0.5, "no task draws", transform=ax_share.transAxes, ha="center", color="grey")
        return art

    def update(art: dict[str, Any], values: dict[str, Any]) -> None:
        if sizes:
            size, call, calibrated = int(values["size"]), values["call"], bool(values["calibrated"])
            at: dict[str, float] = {}
            ys = []
            for side in SIDES:
                x, y = seconds(side, call, calibrated)
                art["blocks"][side].set_offsets(np.column_stack([x, y]))
                med = pd.Series(y).groupby(x).median()
                art["medians"][side].set_data(med.index.to_numpy(), med.to_numpy())
                here = y[x == size]
                art["picked"][side].set_data(np.full(here.size, float(size)), here)
                at[side] = float(np.median(here)) if here.size else np.nan
                ys.append(y[np.isfinite(y) & (y > 0)])
            art["size_line"].set_xdata([size, size])
            ax = art["ax_cost"]
            ax.set_xlim(min(sizes) / 1.5, max(sizes) * 1.5)
            allv = np.concatenate(ys)
            if allv.size:
                ax.set_ylim(allv.min() / 1.6, allv.max() * 1.6)
            unit = "calibration units" if calibrated else "µs"
            ax.set_ylabel(f"CPU per {call}() call ({unit})")
            ratio = at["candidate"] / at["baseline"] if at["baseline"] > 0 else np.nan
            fmt = (lambda v: f"{v:.3g}") if calibrated else (lambda v: f"{v:.3g} µs")
            ax.set_title(
                f"{call}() at {size} tasks: candidate ×{ratio:.2g}\n"
                f"baseline {fmt(at['baseline'])}, candidate {fmt(at['candidate'])} (median)",
                fontsize="small",
                color="#c0392b" if np.isfinite(ratio) and (ratio > 1.5 or ratio < 1 / 1.5) else "black",
            )
        if tasks:
            task = values["task"]
            top, longest, episodes = 0.0, 0, 0
            for side in SIDES:
                y = share.get((side, task), np.zeros(0))
                art["share"][side].set_data(np.arange(len(y)), y)
                top = max(top, float(y.max()) if y.size else 0.0)
                longest = max(longest, len(y))
                p = plays.get((side, task), np.zeros(0))
                art["plays"][side].set_data(np.arange(1, len(p) + 1), p)
                episodes = max(episodes, len(p))
            ax = art["ax_share"]
            ax.set_xlim(-0.3, max(longest - 1, 1) + 0.3)
            ax.set_ylim(0.0, max(top, 1.0 / max(len(tasks), 1)) * 1.2 or 1.0)
            pb, pc = (pooled.get((s, task), np.nan) for s in SIDES)
            ax.set_title(
                f"task {task}\n{pb:.1%} of the baseline's draws, {pc:.1%} of the candidate's",
                fontsize="small",
                color="#c0392b" if abs(pb - pc) > 0.05 else "black",
            )
            ax = art["ax_plays"]
            final = {
                s: (plays[(s, task)][-1] if plays.get((s, task), np.zeros(0)).size else 0) for s in SIDES
            }
            ax.set_xlim(0, max(episodes, 1))
            ax.set_ylim(0, max(max(final.values()), 1) * 1.15)
            ax.set_title(
                f"task {task} in {episodes} closed-loop episodes\nplayed {int(final['baseline'])} vs {int(final['candidate'])} times",
                fontsize="small",
            )

    controls = []
    if sizes:
        controls += [
            choice("size", sizes, value=sizes[-1], label="task-pool size"),
            choice("call", list(CALLS), label="call"),
            toggle("calibrated", False, label="in calibration units (sides timed apart)"),
        ]
    if tasks:
        controls.append(choice("task", tasks, label="task"))
    return Explorer(
        title="Pool-size and task picker: what a curriculum call costs, and what it draws",
        controls=controls,
        setup=setup,
        update=update,
        figsize=(11.0, 4.0),
    )


__all__ = ["CurriculumEvidence", "curriculum_explorer", "curriculum_picker", "evidence"]
