"""Exit codes of ``rlaudit report`` and ``rlaudit audit``: one per outcome, documented in ``--help``."""

from __future__ import annotations

import subprocess

import pytest

from rlaudit import exits
from rlaudit.cli import build_parser
from rlaudit.findings import Finding
from support.reports import ROOT


def _findings(*statuses: str) -> list[Finding]:
    return [
        Finding(id=f"env/c{i}", subsystem="env", hypothesis="h", status=s) for i, s in enumerate(statuses)
    ]


@pytest.mark.parametrize(
    ("statuses", "fail_on", "failed", "code"),
    [
        ((), "error", 0, 0),
        (("CLEARED", "NOTED", "SKIPPED"), "suspect", 0, 0),
        (("CLEARED",), "error", 1, 3),
        (("CLEARED",), "none", 2, 3),  # a failed notebook fails even --fail-on none
        (("ERROR", "CLEARED"), "error", 0, 4),
        (("ERROR",), "none", 0, 0),
        (("ERROR", "CONFIRMED"), "suspect", 0, 4),  # a check that could not run comes first
        (("CONFIRMED",), "error", 0, 0),
        (("CONFIRMED", "SUSPECT"), "confirmed", 0, 5),
        (("SUSPECT",), "confirmed", 0, 0),
        (("SUSPECT", "NOTED"), "suspect", 0, 6),
    ],
)
def test_each_outcome_has_its_own_exit_code(
    statuses: tuple[str, ...], fail_on: str, failed: int, code: int
) -> None:
    assert exits.exit_code(_findings(*statuses), fail_on=fail_on, notebooks_failed=failed) == code


def test_the_codes_are_distinct_and_an_unknown_level_is_refused() -> None:
    codes = [
        exits.OK,
        exits.BAD_INPUT,
        exits.NOTEBOOK_FAILED,
        exits.ERROR_FINDINGS,
        exits.CONFIRMED_REGRESSION,
        exits.SUSPECTED_REGRESSION,
    ]
    assert len(set(codes)) == len(codes) and 1 not in codes  # 1 stays Python's own crash
    with pytest.raises(ValueError, match="--fail-on must be one of none, error, confirmed, suspect"):
        exits.exit_code([], fail_on="regressed")


@pytest.mark.parametrize("verb", ["report", "audit"])
def test_help_documents_every_exit_code_and_fail_on(verb: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([verb, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "--fail-on {none,error,confirmed,suspect}" in text and "exit codes:" in text
    for code in (0, 2, 3, 4, 5, 6):
        assert f"\n  {code}  " in text, code
    args = build_parser().parse_args(
        [verb, "--fail-on", "confirmed", *(["--json", "x.json"] * (verb == "audit"))]
    )
    assert args.fail_on == "confirmed"
    assert build_parser().parse_args(["report"]).fail_on == "error"
    with pytest.raises(SystemExit) as bad:
        build_parser().parse_args([verb, "--fail-on", "sometimes"])
    assert bad.value.code == exits.BAD_INPUT


def test_make_report_passes_fail_on_through() -> None:
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "report", "FAIL_ON=confirmed"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert dry.returncode == 0, dry.stderr
    assert "--fail-on confirmed" in dry.stdout
    plain = subprocess.run(
        ["make", "-n", "--no-print-directory", "report"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "--fail-on" not in plain.stdout  # rlaudit's own default (error) applies
