"""Fenced code blocks of a Markdown file, as ``tests/test_readme.py`` and ``tests/test_docs.py`` read them.

A block may be introduced by an HTML comment on the line before its opening fence (blank lines between are
allowed), which the reader never sees rendered:

- ``<!-- excerpt -->``: the block is part of something larger (a fragment with ``...``, code that needs a
  cluster); it must still parse, and its imports from rlaudit must still import;
- ``<!-- excerpt: lib/rlaudit/x.py -->``: the block is quoted from that file; lines that hold only ``...``
  mark what is left out, and every run of lines between them must appear in the file as written, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*excerpt(?::\s*(?P<source>\S+))?\s*-->$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language (``"text"`` when the fence names none), first line and source."""

    path: Path
    line: int
    lang: str
    source: str
    excerpt: bool = False
    quoted_from: str | None = None

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT).as_posix() if self.path.is_relative_to(ROOT) else str(self.path)
        return f"{path}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order, with the excerpt marker before it (if any)."""
    blocks: list[Block] = []
    lines = path.read_text().splitlines()
    opened: tuple[int, str, re.Match[str] | None] | None = None
    body: list[str] = []
    last_text = ""  # the last non-blank line outside a block
    for number, line in enumerate(lines, start=1):
        fence = FENCE.match(line.strip())
        if opened is None:
            if fence:
                opened = (number, fence.group(1) or "text", MARKER.match(last_text.strip()))
                body = []
            elif line.strip():
                last_text = line
            continue
        if fence:
            start, lang, marker = opened
            blocks.append(
                Block(
                    path,
                    start,
                    lang,
                    "\n".join(body) + "\n",
                    excerpt=marker is not None,
                    quoted_from=marker.group("source") if marker else None,
                )
            )
            opened, last_text = None, ""
            continue
        body.append(line)
    return blocks


def unquoted(block: Block, text: str) -> list[str]:
    """The runs of a quoted block's lines (between ``...`` lines) not found, in order, in ``text``."""
    runs: list[list[str]] = [[]]
    for line in block.source.splitlines():
        if line.strip() == "...":
            runs.append([])
        else:
            runs[-1].append(line.rstrip())
    source = [line.rstrip() for line in text.splitlines()]
    missing: list[str] = []
    at = 0
    for run in (r for r in runs if r):
        found = next(
            (i for i in range(at, len(source) - len(run) + 1) if source[i : i + len(run)] == run), None
        )
        if found is None:
            missing.append("\n".join(run))
        else:
            at = found + len(run)
    return missing
