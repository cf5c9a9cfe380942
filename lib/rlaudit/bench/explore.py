"""``rlaudit bench explore``: how long each notebook explorer takes to answer a control change, on cached runs.

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


EXPLORERS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("01_agents", "rlaudit.agents.explore:activation_explorer", {}),
    ("02_trainer", "rlaudit.trainer.explore:run_explorer", {}),
    ("03_logging", "rlaudit.logging.explore:truth_explorer", {}),
    ("04_checkpointing", "rlaudit.checkpointing.explore:checkpoint_explorer", {"trust": False}),
    ("05_env", "rlaudit.env.explore:scrubber_explorer", {"seed": 0}),
    ("06_curriculum", "rlaudit.curriculum.explore:curriculum_explorer", {"seed": 0}),
    ("07_optimizer", "rlaudit.optimizer.explore:layer_explorer", {}),
    ("08_init", "rlaudit.init.explore:scheme_explorer", {}),
    ("09_loss", "rlaudit.loss.explore:advantages_explorer", {"seed": 0}),
    ("10_spaces", "rlaudit.spaces.explore:feature_explorer", {"trust": False}),
    ("11_rewards", "rlaudit.rewards.explore:component_explorer", {"seed": 0}),
    ("12_memory", "rlaudit.memory.explore:growth_explorer", {"seed": 0}),
)
"""The explorers a workbench alone builds, as their notebooks call them. 13_seeding's power calculator and
15_summary's arm picker are built from a finished check or investigation, 14_config's is a table: not timed."""
OFF_POLICY_PAIR = ("builtin:dqn", "builtin:dqn+loss.done_mask_dropped")
OFF_POLICY_EXPLORERS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("02_trainer", "rlaudit.trainer.explore:run_explorer", {}),
    ("09_loss", "rlaudit.loss.td_explore:td_explorer", {"seed": 0}),
)
"""The explorers that show an off-policy learner what the built-in PPO pair cannot: the run explorer's ε and
replay series, and 09_loss's TD-target case picker; timed on :data:`OFF_POLICY_PAIR`, rows named ``.dqn``."""


def _load(dotted: str) -> Any:
    import importlib

    module, name = dotted.split(":")
    return getattr(importlib.import_module(module), name)


def bench_explore(quick: bool = False, only: str = "") -> list[dict[str, Any]]:
    """Every workbench explorer (:data:`EXPLORERS`) on the built-in pair, and the off-policy ones
    (:data:`OFF_POLICY_EXPLORERS`) on the built-in DQN pair, at the profile the run options name (smoke when
    none): per explorer, the median seconds per control change over a sequence that visits every option of
    every control, its p90 and CPU median, and the build time; then the median over all changes.

    Args:
        quick: Visit every option once instead of three times.
        only: A notebook name (``02_trainer``) to time that explorer alone.
    """
    from rlaudit.engine.workbench import Workbench
    from rlaudit.options import RunOptions

    profile = RunOptions.from_env().profile_name("smoke")
    chosen = [e for e in EXPLORERS if not only or e[0] == only]
    if not chosen:
        raise ValueError(f"no explorer for {only!r}; expected one of {', '.join(e[0] for e in EXPLORERS)}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows: list[dict[str, Any]] = []
    every: list[float] = []
    passes = [(("builtin:reference", "builtin:regressed"), "", chosen)]
    off_policy = [e for e in OFF_POLICY_EXPLORERS if not only or e[0] == only]
    if off_policy:
        passes.append((OFF_POLICY_PAIR, ".dqn", off_policy))
    for (baseline, candidate), tag, explorers in passes:
        with Workbench(baseline=baseline, candidate=candidate, profile=profile) as wb:
            for notebook, dotted, kwargs in explorers:
                started = time.perf_counter()
                explorer = _load(dotted)(wb, **kwargs)
                build = time.perf_counter() - started
                name = f"explore.{notebook}{tag}"
                if not hasattr(explorer, "controls") or not hasattr(explorer, "figure"):
                    rows.append({"name": name, "skipped": "no figure to explore on this pair"})
                    continue
                cpu: list[float] = []
                seconds = time_changes(explorer, control_changes(explorer, 1 if quick else 3), cpu)
                every += seconds
                median = statistics.median(seconds)
                rows.append(
                    {
                        "name": f"{name}.median_change",
                        "value": round(median, 4),
                        "unit": "s",
                        "goal": GOAL_SECONDS,
                        "meets_goal": median < GOAL_SECONDS,
                        "changes": len(seconds),
                        "p90": round(sorted(seconds)[int(0.9 * (len(seconds) - 1))], 4),
                        "cpu_median": round(statistics.median(cpu), 4),
                        "build_s": round(build, 3),
                        "profile": profile,
                        "pair": f"{baseline} vs {candidate}",
                        "load_1min": round(load, 2),
                    }
                )
    if every:
        median = statistics.median(every)
        rows.append(
            {
                "name": "explore.all.median_change",
                "value": round(median, 4),
                "unit": "s",
                "goal": GOAL_SECONDS,
                "meets_goal": median < GOAL_SECONDS,
                "changes": len(every),
                "explorers": sum("value" in r for r in rows),
                "load_1min": round(load, 2),
            }
        )
    return rows
