"""Running whole reports from the tests, as a user would, and reading what they found."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.invariants import asymmetric_severities, estimates_outside_their_interval, uncovered_clearances

ROOT = Path(__file__).resolve().parents[2]
RLAUDIT = Path(sys.executable).parent / "rlaudit"


@dataclass
class ReportRun:
    """A finished ``rlaudit report`` (or ``make report``): exit code, output, and the findings it saved."""

    command: str
    returncode: int
    output: str
    out: Path
    seconds: float
    findings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def failed_notebooks(self) -> list[str]:
        """Notebooks that did not finish cleanly (the report's own summary line names them)."""
        return [line.strip() for line in self.output.splitlines() if "FAILED (" in line]

    def all_findings(self) -> list[dict[str, Any]]:
        return [f for items in self.findings.values() for f in items]

    def with_status(self, status: str) -> list[dict[str, Any]]:
        return [f for f in self.all_findings() if f["status"] == status]

    def explain(self) -> str:
        errors = [f"{f['id']}: {f['evidence'].get('summary', '')[:300]}" for f in self.with_status("ERROR")]
        tail = "\n".join(self.output.splitlines()[-40:])
        return (
            f"$ {self.command}\nexit {self.returncode}\nERROR findings:\n" + "\n".join(errors) + f"\n{tail}"
        )


def environment(cache: str | os.PathLike[str], **extra: str) -> dict[str, str]:
    """The environment of a report run from the tests: smoke profile, the shared test cache."""
    env = dict(os.environ)
    env.update(
        RLAUDIT_PROFILE="smoke",
        RLAUDIT_CACHE=str(cache),
        OMP_NUM_THREADS="1",
        PYTHONUNBUFFERED="1",
    )
    env.pop("RLAUDIT_REPORTS", None)
    env.pop("RLAUDIT_WORKDIR", None)
    env.update(extra)
    return env


def read_findings(out: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((out / "findings").glob("[0-9][0-9]_*.json")):
        found[path.stem] = json.loads(path.read_text())["findings"]
    return found


_DONE: dict[tuple[str, str, str], ReportRun] = {}


def run_command(command: str, out: Path, env: dict[str, str], timeout: float = 900) -> ReportRun:
    """Run a shell command from the repository root (as a user would type it) and read ``out``'s findings.

    A command already run in this process with the same profile and cache is not run again: the first run's
    result (its findings, in the first caller's directory) answers a second caller.
    """
    key = (command, env.get("RLAUDIT_PROFILE", ""), env.get("RLAUDIT_CACHE", ""))
    if key in _DONE:
        return _DONE[key]
    started = time.perf_counter()
    proc = subprocess.run(
        command,
        shell=True,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
    )
    done = ReportRun(
        command,
        proc.returncode,
        proc.stdout,
        out,
        time.perf_counter() - started,
        read_findings(out) if out.exists() else {},
    )
    _DONE[key] = done
    return done


def make_report(arguments: str, out: Path, cache: str | os.PathLike[str]) -> ReportRun:
    """``make report <arguments>`` from the repository root at the smoke profile, writing to ``out``."""
    bin_dir = str(Path(sys.executable).parent)
    env = environment(
        cache,
        OUT=str(out),  # `make report` writes its report here (OUT ?= reports)
        RLAUDIT_REPORTS=str(out),  # `rlaudit report` without --out
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
    )
    return run_command(f"make report {arguments}".strip(), out, env)


def report(baseline: str, candidate: str, out: Path, cache: str | os.PathLike[str], *extra: str) -> ReportRun:
    """``rlaudit report`` on one pair at the smoke profile into ``out``."""
    words = [str(RLAUDIT), "report", "--baseline", baseline, "--candidate", candidate, "--out", str(out)]
    return run_command(shlex.join([*words, *extra]), out, environment(cache))


NOTEBOOKS = 15
"""Notebooks in a whole report, each of which saves its findings."""


def assert_clean(run: ReportRun) -> None:
    """A whole report that finished: exit 0, no failed notebook, no ERROR, findings from every notebook, every
    estimate inside its own interval, symmetric evidence rated alike, and no clearance of a quantity one side
    did not measure."""
    assert not run.failed_notebooks, run.explain()
    assert run.returncode == 0, run.explain()
    assert not run.with_status("ERROR"), run.explain()
    assert len(run.findings) == NOTEBOOKS, (
        f"notebooks that saved findings: {sorted(run.findings)}\n{run.explain()}"
    )
    assert not estimates_outside_their_interval(run.all_findings())
    assert not asymmetric_severities(run.all_findings())
    assert not uncovered_clearances(run.all_findings())


def assert_skips_say_what_is_missing(run: ReportRun) -> None:
    """Every SKIPPED finding says what was missing (or why the check does not apply) and what to do."""
    for finding in run.with_status("SKIPPED"):
        said, todo = finding["evidence"].get("summary", ""), finding.get("remediation", "")
        assert said.strip() and todo.strip(), (
            f"{finding['id']} does not say what is missing: {said!r} {todo!r}"
        )
