"""The README's commands work, exactly as written, from the repository root.

Every ``make report ...`` and ``rlaudit ...`` command in README.md and data/examples/*/README.md (fenced shell
blocks, and inline code that gives a command with its arguments) runs at the smoke profile (``RLAUDIT_PROFILE=smoke`` wins over a ``PROFILE=``) in the
shared test cache, and must exit 0 with no ERROR notebook. Lines that describe a command's syntax rather than
give one (placeholders such as ``<repo>``, alternatives ``a|b``, optional ``[--flag]``) are not runnable and
are left out; a test checks that nothing else is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from support.markdown import FENCE
from support.reports import ROOT, assert_clean, assert_skips_say_what_is_missing, environment, run_command

DOCS = [ROOT / "README.md", *sorted((ROOT / "data" / "examples").glob("*/README.md"))]
COMMAND = re.compile(
    r"^(?:make report\b|(?:\.venv/bin/)?rlaudit (?:report|audit|train|faults|new-subject)\b)"
)
SYNTAX = re.compile(r"<[^>]*>|\[[^\]]*\]|\||…|\.\.\.|\bDIR\b|\bSPEC\b|\bFILE\b|\$\w")
INLINE = re.compile(r"`([^`]+)`")


SETUP = re.compile(r"^(?:python3?|\.venv/bin/python) data/examples/\S+\.py\b")


WHOLE_REPORT = re.compile(
    r"(?:^|&& )(?:make report|(?:\.venv/bin/)?rlaudit report)\b(?!.*--notebooks)(?!.*--help)"
)
"""A command that runs every notebook (``--notebooks`` picks some; ``--help`` runs none)."""

EXPENSIVE = "<!-- expensive -->"
"""A line before a fence whose commands cost more than `make test` can carry; they run under ``-m expensive``."""


def expensive_commands_in(path: Path) -> set[str]:
    """The commands of the fences that follow an :data:`EXPENSIVE` line."""
    marked: set[str] = set()
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip() == EXPENSIVE:
            body = "\n".join(lines[i + 1 :])
            block = body.split("```", 2)[1] if body.lstrip().startswith("```") else ""
            marked.update(
                t.strip().removeprefix("$ ") for t in block.splitlines()[1:] if COMMAND.match(t.strip())
            )
    return marked


def commands_in(path: Path) -> list[str]:
    """Command lines in a Markdown file: shell fences line by line, then inline code spans.

    A fenced command comes with the set-up lines before it in the same block that run one of the examples'
    scripts (``python3 data/examples/<name>/make_history.py ...``), joined with ``&&``: the reader runs them
    first, and so does the test.
    """
    found: list[str] = []
    fenced: str | None = None
    setup: list[str] = []
    for line in path.read_text().splitlines():
        fence = FENCE.match(line.strip())
        if fence:
            fenced = None if fenced is not None else fence.group(1) or "text"
            setup = []
            continue
        if fenced is not None:
            if fenced in ("bash", "sh", "shell", "console"):
                text = line.split(" #", 1)[0].strip().removeprefix("$ ")
                if SETUP.match(text):
                    setup.append(text)
                elif COMMAND.match(text):
                    found.append(" && ".join([*setup, text]))
            continue
        # inline code is a command when it carries arguments; a bare `rlaudit report` is the command's name
        found += [
            span.strip()
            for span in INLINE.findall(line)
            if COMMAND.match(span.strip()) and len(span.split()) > 2
        ]
    return list(dict.fromkeys(found))


def runnable(command: str) -> bool:
    return not SYNTAX.search(command)


ALL = {doc.relative_to(ROOT).as_posix(): commands_in(doc) for doc in DOCS}
RUNNABLE = list(dict.fromkeys(c for commands in ALL.values() for c in commands if runnable(c)))
COSTLY = set().union(*(expensive_commands_in(doc) for doc in DOCS))


def test_the_readmes_give_commands_and_only_syntax_lines_are_left_out() -> None:
    assert RUNNABLE, "no runnable command found in the READMEs"
    assert any(c.startswith("make report BASELINE=data/examples/cartpole") for c in RUNNABLE)
    left_out = [c for commands in ALL.values() for c in commands if not runnable(c)]
    for command in left_out:
        assert SYNTAX.search(command), command


@pytest.mark.parametrize(
    "command", [pytest.param(c, marks=pytest.mark.expensive) if c in COSTLY else c for c in RUNNABLE]
)
def test_a_readme_command_works_as_written(command: str, tmp_path: Path) -> None:
    cache = os.environ.get("RLAUDIT_TEST_CACHE") or str(tmp_path / "cache")
    out = tmp_path / "report"
    bin_dir = str(Path(os.sys.executable).parent)
    env = environment(
        cache,
        OUT=str(out),  # `make report` writes its report here (OUT ?= reports)
        RLAUDIT_REPORTS=str(out),  # `rlaudit report` without --out
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
    )
    run = run_command(command, out, env)
    assert run.returncode == 0, run.explain()
    assert not run.failed_notebooks, run.explain()
    if WHOLE_REPORT.search(command):  # the invariants every whole report keeps, on every shipped example
        assert_clean(run)
        assert_skips_say_what_is_missing(run)
