"""Hunks: the unified-diff hunks between two versions of a file (as ``git diff -U3`` prints them), and applying
a set of them to a file's text, forwards or in reverse, where the surrounding lines have moved."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlaudit.changes.trees import decode_text, encode_text, git

BINARY_SNIFF = 8000  # bytes looked at for a NUL (git's own test for a binary file)
_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

# ------------------------------------------------------------------------------------------------------------
# Hunks
# ------------------------------------------------------------------------------------------------------------


@dataclass
class Hunk:
    """One unified-diff hunk of one file, with what the mapping learned about it.

    Attributes:
        id: Unique within the change set: ``"<short commit>:<path>#<n>"`` (``"diff:<path>#<n>"`` without history).
        path: The file, relative to the tree.
        old_start, old_len, new_start, new_len: The ``@@ -a,b +c,d @@`` numbers (1-based; a zero length
            means the lines go after line ``a`` or ``c``).
        lines: The hunk body, each line starting with ``" "``, ``"-"`` or ``"+"`` and keeping its newline
            (a file's last line may have none).
        commit: The full hash of the commit that made it (``""`` without history).
        status: ``"modified"``, ``"added"`` (a new file), ``"deleted"`` or ``"binary"`` (a whole-file change).
        old_data, new_data: For ``binary``, both contents (None where the file does not exist).
        function: The innermost function or class enclosing every changed line (``"Agent.update"``; ``""`` at
            module level or outside Python).
        functions: Every function or class a changed line falls in, on either side.
        names: Defined names the hunk changes (a renamed function, an import): how hunks that only work
            together are found.
        cosmetic: Only comments, docstrings or formatting change (the code's syntax tree is the same).
        subsystem: The subsystem it most likely belongs to (``""`` when nothing points anywhere).
        affinity: Subsystem -> strength of the link (0..1).
        reasons: Why, one phrase per link (``"function name compute_gae"``, ``"changes the default of vf_coef"``).
        executed: Whether a traced probe ran its function (None: not traced).
        prior: Audit evidence against it (orders the search, never decides).
    """

    id: str
    path: str
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[str, ...]
    commit: str = ""
    status: str = "modified"
    old_data: bytes | None = field(default=None, repr=False)
    new_data: bytes | None = field(default=None, repr=False)
    function: str = ""
    functions: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    cosmetic: bool = False
    subsystem: str = ""
    affinity: dict[str, float] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    executed: bool | None = None
    prior: float = 0.0

    @property
    def where(self) -> str:
        """The enclosing function or class, else the functions and classes it touches (``""``: module level)."""
        return self.function or ", ".join(self.functions)

    @property
    def header(self) -> str:
        """``@@ -a,b +c,d @@`` (counts always written, also where git omits a count of 1)."""
        if self.status == "binary":
            return f"Binary file {self.path}"
        return f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@"

    @property
    def old_block(self) -> list[str]:
        """The lines the hunk expects in the old file (context and removed), newlines kept."""
        return [line[1:] for line in self.lines if line[:1] in (" ", "-")]

    @property
    def new_block(self) -> list[str]:
        """The lines the hunk leaves in the new file (context and added), newlines kept."""
        return [line[1:] for line in self.lines if line[:1] in (" ", "+")]

    @property
    def changed(self) -> int:
        """Lines removed plus lines added."""
        return sum(1 for line in self.lines if line[:1] in ("-", "+")) if self.lines else 1

    @property
    def short_commit(self) -> str:
        return self.commit[:7]

    def text(self) -> str:
        """The hunk as ``git diff`` prints it: the header, then its lines (with "\\ No newline" markers)."""
        out = [f"--- a/{self.path}", f"+++ b/{self.path}", self.header]
        for line in self.lines:
            if line.endswith("\n"):
                out.append(line[:-1])
            else:
                out.extend([line, "\\ No newline at end of file"])
        return "\n".join(out) + "\n"

    def digest(self) -> str:
        """Content identity (path, numbers, lines, binary contents): two equal hunks have equal digests."""
        h = hashlib.sha256()
        h.update(encode_text(f"{self.path}\0{self.status}\0{self.header}\0"))
        for line in self.lines:
            h.update(encode_text(line) + b"\0")
        for data in (self.old_data, self.new_data):
            h.update(b"-" if data is None else hashlib.sha256(data).digest())
        return h.hexdigest()

    def to_dict(self, *, text: bool = True) -> dict[str, Any]:
        """JSON-able description (binary contents left out)."""
        out = {
            "id": self.id,
            "commit": self.commit,
            "path": self.path,
            "hunk": self.header,
            "function": self.function,
            "functions": list(self.functions),
            "status": self.status,
            "changed_lines": self.changed,
            "cosmetic": self.cosmetic,
            "subsystem": self.subsystem,
            "affinity": dict(self.affinity),
            "reasons": list(self.reasons),
            "executed": self.executed,
            "prior": self.prior,
        }
        if text:
            out["diff"] = self.text()
        return out


def split_lines(text: str) -> list[str]:
    """Lines of ``text`` split on ``\\n`` only (as git does), each keeping its newline."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _is_binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:BINARY_SNIFF]


def parse_diff(text: str) -> list[tuple[int, int, int, int, tuple[str, ...]]]:
    """The hunks of one file's unified diff: ``(old_start, old_len, new_start, new_len, lines)`` each."""
    hunks: list[tuple[int, int, int, int, list[str]]] = []
    current: list[str] | None = None
    for raw in split_lines(text):
        match = _HEADER.match(raw)
        if match:
            a, b, c, d = match.groups()
            current = []
            hunks.append(
                (int(a), int(b if b is not None else 1), int(c), int(d if d is not None else 1), current)
            )
            continue
        if current is None:
            continue  # file headers before the first hunk
        if raw.startswith("\\"):
            if current:  # "\ No newline at end of file": the line before has no newline
                current[-1] = current[-1].rstrip("\n")
            continue
        if raw[:1] in (" ", "-", "+"):
            current.append(raw if raw.endswith("\n") else raw + "\n")
    return [(a, b, c, d, tuple(lines)) for a, b, c, d, lines in hunks]


def diff_hunks(
    path: str, old: bytes | None, new: bytes | None, *, commit: str = "", prefix: str = ""
) -> list[Hunk]:
    """The hunks turning ``old`` into ``new`` (None: the file does not exist on that side), as ``git diff``
    computes them (``-U3``, Myers)."""
    if old == new:
        return []
    ident = f"{commit[:7] or prefix or 'diff'}:{path}"
    if _is_binary(old) or _is_binary(new):
        return [Hunk(f"{ident}#1", path, 0, 0, 0, 0, (), commit, "binary", old, new)]
    with tempfile.TemporaryDirectory(prefix="rlaudit-diff-") as tmp:
        files = []
        for name, data in (("old", old), ("new", new)):
            if data is None:
                files.append(os.devnull)
            else:
                target = Path(tmp) / name
                target.write_bytes(data)
                files.append(str(target))
        out = git(
            tmp,
            "-c",
            "core.quotepath=off",
            "diff",
            "--no-index",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--diff-algorithm=myers",
            "-U3",
            "--",
            *files,
            check=False,
        )
    status = "added" if old is None else "deleted" if new is None else "modified"
    return [
        Hunk(f"{ident}#{i}", path, a, b, c, d, lines, commit, status)
        for i, (a, b, c, d, lines) in enumerate(parse_diff(decode_text(out)), start=1)
    ]


def apply_hunks(text: str, hunks: Sequence[Hunk], *, reverse: bool = False) -> str | None:
    """``text`` with ``hunks`` applied (or reverted), each located at its line number or the nearest place
    where its context matches exactly; None when one does not apply or two overlap."""
    lines = split_lines(text)
    edits = []
    for h in hunks:
        find, put = (h.new_block, h.old_block) if reverse else (h.old_block, h.new_block)
        start, length = (h.new_start, h.new_len) if reverse else (h.old_start, h.old_len)
        expected = start if length == 0 else start - 1
        pos = locate(lines, find, expected)
        if pos is None:
            return None
        edits.append((pos, len(find), put))
    edits.sort(key=lambda e: e[0])
    for (p1, n1, _), (p2, _, _) in itertools.pairwise(edits):
        if p1 + n1 > p2:
            return None
    for pos, n, put in reversed(edits):
        lines[pos : pos + n] = put
    return "".join(lines)


def locate(lines: Sequence[str], block: Sequence[str], expected: int) -> int | None:
    """Index where ``block`` starts in ``lines``, the match nearest to ``expected``; None if nowhere.

    A last line without newline matches the same line with one (a later commit may have added lines below).
    """
    n = len(block)
    if n == 0:
        return max(0, min(expected, len(lines)))
    block = list(block)

    def matches(p: int) -> bool:
        window = lines[p : p + n]
        if len(window) != n:
            return False
        if window[:-1] != block[:-1]:
            return False
        return window[-1] == block[-1] or window[-1].rstrip("\n") == block[-1].rstrip("\n")

    limit = max(len(lines), expected + 1)
    for delta in range(limit + 1):
        for p in (expected - delta, expected + delta) if delta else (expected,):
            if 0 <= p <= len(lines) - n and matches(p):
                return p
    return None
