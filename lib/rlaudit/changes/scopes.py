"""What code a hunk touches: the innermost function or class enclosing its changed lines (with :mod:`ast` on
both sides), whether it changes code or only comments and docstrings, the names it binds, and which hunks name
each other (and so must be applied together)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlaudit.changes.hunks import Hunk, apply_hunks
from rlaudit.changes.trees import Tree, decode_text, read_file

if TYPE_CHECKING:
    from rlaudit.changes.changeset import ChangeSet

_IDENT = re.compile(r"[A-Za-z_]\w*")

# ------------------------------------------------------------------------------------------------------------
# Functions and classes
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """A function or class of a Python file: its qualified name and first and last lines (decorators included)."""

    qualname: str
    start: int
    end: int


def scopes(source: str) -> list[Scope] | None:
    """Every function and class of a module, outermost first; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    out: list[Scope] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out.append(Scope(name, start, child.end_lineno or child.lineno))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def enclosing(found: Sequence[Scope], line: int) -> str:
    """The innermost scope holding ``line`` (``""`` at module level)."""
    best = ""
    for s in found:
        if s.start <= line <= s.end and len(s.qualname) >= len(best):
            best = s.qualname
    return best


def _common(names: Iterable[str]) -> str:
    parts = [n.split(".") if n else [] for n in names]
    if not parts:
        return ""
    out = []
    for group in zip(*parts, strict=False):
        if len(set(group)) != 1:
            break
        out.append(group[0])
    return ".".join(out)


def changed_lines(hunk: Hunk) -> tuple[list[int], list[int]]:
    """Line numbers of the removed lines (old file) and of the added lines (new file)."""
    old_no, new_no = hunk.old_start, hunk.new_start
    if hunk.old_len == 0:
        old_no += 1
    if hunk.new_len == 0:
        new_no += 1
    removed, added = [], []
    for line in hunk.lines:
        tag = line[:1]
        if tag == " ":
            old_no += 1
            new_no += 1
        elif tag == "-":
            removed.append(old_no)
            old_no += 1
        elif tag == "+":
            added.append(new_no)
            new_no += 1
    return removed, added


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(getattr(body[0], "value", None), ast.Constant)
            ):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def _same_code(a: str, b: str) -> bool:
    try:
        ta, tb = ast.parse(a), ast.parse(b)
    except (SyntaxError, ValueError):
        return False
    return ast.dump(_strip_docstrings(ta)) == ast.dump(_strip_docstrings(tb))


def _code_identifiers(lines: Sequence[str]) -> set[str]:
    """Identifiers in code (comments and strings left out) of some lines of Python; plain words otherwise."""
    text = "".join(lines)
    out: set[str] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                out.add(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        stripped = re.sub(r"#.*", "", text)
        out = set(_IDENT.findall(stripped))
    return out


def annotate(cs: ChangeSet) -> None:
    """Fill in every hunk's functions, changed names and whether it is cosmetic, parsing each Python file of
    each side once."""
    for commit in cs.commits:
        old = Tree(cs.candidate.kind, cs.candidate.root, commit.parent, cs.candidate.prefix)
        new = Tree(cs.candidate.kind, cs.candidate.root, commit.sha, cs.candidate.prefix)
        _annotate_hunks(commit.hunks, old, new)
    _annotate_hunks(cs.diff, cs.baseline, cs.candidate)


_BINDS = (
    re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)"),
    re.compile(r"^\s*class\s+([A-Za-z_]\w*)"),
    re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)"),
    re.compile(r"^\s*self\.([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)"),
)


def bound_names(lines: Sequence[str]) -> set[str]:
    """Names some lines of Python bind for other code to use: ``def``/``class`` names, imported names,
    module-level assignment targets (``NAME = ...``) and attributes (``self.name = ...``); locals are left
    out (another function never sees them)."""
    out: set[str] = set()
    for line in lines:
        for pattern in _BINDS:
            m = pattern.match(line)
            if m:
                out.add(m.group(1))
        m = re.match(r"^\s*(?:from\s+\S+\s+)?import\s+(.+)", line)
        if m:
            for part in m.group(1).strip("()\\\n ").split(","):
                words = part.split()
                if words:
                    out.add(words[-1].split(".")[0])
    return out


def _meaningful(hunk: Hunk) -> tuple[list[int], list[int]]:
    """Changed line numbers (removed, added) of lines that hold more than whitespace."""
    removed, added = changed_lines(hunk)
    old = [line for line in hunk.lines if line[:1] in ("-",)]
    new = [line for line in hunk.lines if line[:1] in ("+",)]
    keep_old = [n for n, line in zip(removed, old, strict=True) if line[1:].strip()]
    keep_new = [n for n, line in zip(added, new, strict=True) if line[1:].strip()]
    return keep_old or removed, keep_new or added


def _annotate_hunks(hunks: Sequence[Hunk], old: Tree, new: Tree) -> None:
    by_path: dict[str, list[Hunk]] = {}
    for h in hunks:
        by_path.setdefault(h.path, []).append(h)
    binds: dict[str, set[str]] = {}
    uses: dict[str, set[str]] = {}
    for path, group in by_path.items():
        if not path.endswith(".py") or group[0].status == "binary":
            continue
        old_text = decode_text(read_file(old, path) or b"")
        new_text = decode_text(read_file(new, path) or b"")
        old_scopes, new_scopes = scopes(old_text) or [], scopes(new_text) or []
        for h in group:
            removed, added = _meaningful(h)
            new_names = [enclosing(new_scopes, n) for n in added]
            old_names = [enclosing(old_scopes, n) for n in removed]
            h.function = _common(new_names) if new_names else _common(old_names)
            h.functions = tuple(sorted({n for n in [*new_names, *old_names] if n}))
            changed = [line[1:] for line in h.lines if line[:1] in ("-", "+")]
            binds[h.id] = bound_names(changed)
            uses[h.id] = _code_identifiers(
                [line[1:] for line in h.lines if line[:1] == "-"]
            ) | _code_identifiers([line[1:] for line in h.lines if line[:1] == "+"])
            patched = apply_hunks(old_text, [h])
            h.cosmetic = patched is not None and _same_code(old_text, patched)
    # a name one hunk binds (a function renamed, an attribute set up) and another uses links the two: reverting
    # one without the other may not import or run
    every = set().union(*binds.values()) if binds else set()
    for h in hunks:
        if h.id in binds:
            h.names = tuple(sorted(binds[h.id] | (uses[h.id] & (every - _only_own(h.id, binds)))))


def _only_own(hunk_id: str, binds: Mapping[str, set[str]]) -> set[str]:
    """Names only this hunk binds (using them itself links it to nothing)."""
    others = set().union(*(b for k, b in binds.items() if k != hunk_id)) if len(binds) > 1 else set()
    return binds[hunk_id] - others


def linked(a: Hunk, b: Hunk) -> bool:
    """True when one hunk binds a name the other binds or uses (a function renamed in one, its callers in the
    other): reverting one without the other may not import or run."""
    return bool(set(a.names) & set(b.names))
