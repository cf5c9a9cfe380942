"""``rlaudit bench``: print benchmark figures as JSON lines, one per figure.

Each benchmark is a function returning a list of dicts (``name``, ``value``, ``unit``, and for comparisons
``baseline``, ``candidate`` and ``ratio``), measured side by side in one run so that a loaded machine slows
both sides alike. Speed goals live here, never in timed tests.

- :mod:`rlaudit.bench.env`: the arena and its curriculum (``rlaudit bench env``);
- :mod:`rlaudit.bench.trainer`: the demo trainer, against Stable-Baselines3, and with the recorder
  (``rlaudit bench trainer|sb3|recorder``);
- :mod:`rlaudit.bench.explore`: a notebook explorer's time per control change (``rlaudit bench explore``);
- ``report`` and ``attribution``: benchmarks that live beside what they measure.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time

BENCHMARKS: dict[str, str] = {
    "env": "rlaudit.bench.env:bench_env",
    "trainer": "rlaudit.bench.trainer:bench_trainer",
    "recorder": "rlaudit.bench.trainer:bench_recorder",
    "sb3": "rlaudit.bench.trainer:bench_sb3",
    "report": "rlaudit.report:bench_report",
    "attribution": "rlaudit.attribution:bench_attribution",
    "explore": "rlaudit.bench.explore:bench_explore",
}


def load_benchmark(name: str):  # -> Callable[[bool], list[dict]]
    try:
        target = BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; expected one of {', '.join(BENCHMARKS)}") from None
    module_name, func = target.split(":")
    return getattr(importlib.import_module(module_name), func)


def run_bench(args: argparse.Namespace) -> int:
    fn = load_benchmark(args.what)
    context = {"python": platform.python_version(), "machine": platform.machine(), "cpus": _cpus()}
    start = time.perf_counter()
    for figure in fn(quick=args.quick):
        print(json.dumps({**figure, "context": context}), flush=True)
    print(
        json.dumps(
            {
                "name": f"{args.what}.bench_seconds",
                "value": round(time.perf_counter() - start, 2),
                "unit": "s",
            }
        ),
        file=sys.stderr,
    )
    return 0


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
