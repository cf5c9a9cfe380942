"""``rlaudit bench explore``: how long an explorer takes to answer a control change, on cached runs.

What it times is the server's whole share of one change in JupyterLab: the explorer puts the new data into its
artists, the figure is drawn by the canvas ipympl uses (matplotlib's WebAgg core) and the image diff the
browser receives is encoded. The runs come from the artifact cache (the first call on a cold cache trains
them, which is not timed). The goal is a median under 0.3 s on a quiet machine; ``cpu_median`` (the process's
CPU seconds per change) is what a change costs whatever else the machine runs.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

GOAL_SECONDS = 0.3


def control_changes(explorer: Any, rounds: int) -> list[dict[str, Any]]:
    """A sequence of single-control changes that visits every option of every control ``rounds`` times."""
    changes: list[dict[str, Any]] = []
    for r in range(rounds):
        for control in explorer.controls:
            if control.kind == "choice":
                values = control.option_values()
                changes += [{control.name: v} for v in values[1:] + values[:1]]
            elif control.kind == "slider":
                changes += [{control.name: v} for v in (control.high * 0.9, control.low, control.value)]
            elif control.kind == "int_range":
                low, high = int(control.low), int(control.high)
                mid = (low + high) // 2
                changes += [
                    {control.name: (low, mid)},
                    {control.name: (mid, high)},
                    {control.name: (low, high)},
                ]
            elif control.kind == "toggle":
                changes += [{control.name: r % 2 == 0}, {control.name: r % 2 == 1}]
    return changes


def time_changes(explorer: Any, changes: list[dict[str, Any]], cpu: list[float] | None = None) -> list[float]:
    """Wall seconds per change: update the artists, draw on a WebAgg canvas, encode the diff image (``cpu``,
    when given, receives each change's CPU seconds of this process: what a quiet machine would take)."""
    from matplotlib.backends.backend_webagg_core import FigureCanvasWebAggCore, FigureManagerWebAgg

    fig = explorer.figure()
    canvas = FigureCanvasWebAggCore(fig)
    FigureManagerWebAgg(canvas, 0)
    canvas.get_diff_image()  # the first full image, as when the widget is first shown
    seconds = []
    for change in changes:
        started, cpu_started = time.perf_counter(), time.process_time()
        explorer.set(**change)
        canvas.get_diff_image()
        seconds.append(time.perf_counter() - started)
        if cpu is not None:
            cpu.append(time.process_time() - cpu_started)
    return seconds


def bench_explore(quick: bool = False) -> list[dict[str, Any]]:
    """The 02_trainer run explorer on the built-in pair at the profile the run options name (smoke when none)."""
    from rlaudit.engine.workbench import Workbench
    from rlaudit.options import RunOptions
    from rlaudit.trainer.explore import run_explorer

    profile = RunOptions.from_env().profile_name("smoke")
    with Workbench(baseline="builtin:reference", candidate="builtin:regressed", profile=profile) as wb:
        started = time.perf_counter()
        explorer = run_explorer(wb)
        build = time.perf_counter() - started
    cpu: list[float] = []
    seconds = time_changes(explorer, control_changes(explorer, 1 if quick else 3), cpu)
    median = statistics.median(seconds)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return [
        {
            "name": "explore.trainer_runs.median_change",
            "value": round(median, 4),
            "unit": "s",
            "goal": GOAL_SECONDS,
            "meets_goal": median < GOAL_SECONDS,
            "changes": len(seconds),
            "p90": round(sorted(seconds)[int(0.9 * (len(seconds) - 1))], 4),
            "cpu_median": round(statistics.median(cpu), 4),
            "profile": profile,
            "load_1min": round(load, 2),
        },
        {"name": "explore.trainer_runs.build", "value": round(build, 3), "unit": "s", "profile": profile},
    ]
