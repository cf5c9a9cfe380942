"""The change search's worked example, measured: build the example history, search it, print the figures.

``python data/examples/tinyrl/worked_example.py [--profile standard] [--dest DIR]`` writes the repository of
``make_history.py`` (to a temporary directory unless ``--dest``), runs the change search on
``git:DIR@baseline`` vs ``git:DIR@main`` with the profile's seeds, steps and budget (the runs go through a
workbench, its cache and its executor, as in ``make report``), and prints the culprits with their diffs,
the shares of each gap with intervals, the runs spent against a per-commit and a per-hunk sweep, and the wall
time. ``--json FILE`` also writes the whole result.

The full investigation of the same pair is ``make report BASELINE=git:DIR@baseline CANDIDATE=git:DIR@main``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _make_history():  # the builder beside this file
    spec = importlib.util.spec_from_file_location("tinyrl_make_history", HERE / "make_history.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="standard", help="smoke | standard | thorough")
    parser.add_argument("--dest", default="", help="where to write the repository (default: a temporary one)")
    parser.add_argument("--jobs", type=int, default=2, help="runs trained side by side")
    parser.add_argument("--json", default="", help="write the whole result to this file")
    args = parser.parse_args(argv)

    from rlaudit.changes import report, search
    from rlaudit.workbench import Workbench

    dest = Path(args.dest) if args.dest else Path(tempfile.mkdtemp(prefix="tinyrl-example-")) / "repo"
    made = _make_history().build(dest)
    started = time.perf_counter()
    with Workbench(f"git:{dest}@baseline", f"git:{dest}@main", profile=args.profile, jobs=args.jobs) as wb:
        result, notes = search.find_culprits(wb, {})
    seconds = time.perf_counter() - started
    if result is None:
        print("\n".join(notes))
        return 1
    print(f"repository: {dest} (baseline {made['commits'][0][:7]}, candidate {made['commits'][-1][:7]})")
    for line in report.summary_sentences(result):
        print("-", line)
    for c in result.culprits:
        print()
        print(c.diff(), end="")
    print()
    print(f"wall time of the change search: {seconds:.0f} s (profile {args.profile}, {args.jobs} jobs)")
    if args.json:
        Path(args.json).write_text(json.dumps({**result.to_dict(), "wall_seconds": seconds}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
