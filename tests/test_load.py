"""A busy machine is not an error: the SB3 example pair at smoke, with twice as many busy processes as cores
competing for the CPU, ends without a single ERROR finding.

The probe limits measure the subject (no progress for the stall limit, or its own CPU time), so a probe that
runs several times slower than on a quiet machine still finishes. Its own cache, so every probe really runs
under the load (the command is the README's, with the cache pointed elsewhere).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.reports import environment, run_command

SB3_PAIR = (
    "BASELINE=sb3:data/examples/sb3/ppo_cartpole.yaml CANDIDATE=sb3:data/examples/sb3/ppo_cartpole_regressed.yaml "
    "PROFILE=smoke"
)


@contextmanager
def busy_processes(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` Python busy loops in processes of their own for the block (killed by their pids after)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait(timeout=10)


@pytest.mark.expensive
def test_sb3_pair_at_smoke_on_a_busy_machine_has_no_error(tmp_path: Path) -> None:
    busy = 2 * (os.cpu_count() or 2)  # 4 on the project's two cores
    with busy_processes(busy) as procs:
        out = tmp_path / "report"
        env = environment(
            tmp_path / "cache",
            OUT=str(out),
            PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        )
        # an hour: a smoke report takes minutes on a quiet machine, several times that under this load
        run = run_command(f"make report {SB3_PAIR}", out, env, timeout=3600)
        assert all(proc.poll() is None for proc in procs), "a busy process ended early: the load was not held"
    assert run.returncode == 0, run.explain()
    assert run.findings, run.explain()
    errors = run.with_status("ERROR")
    assert not errors, f"{len(errors)} ERROR findings with {busy} busy processes:\n{run.explain()}"
