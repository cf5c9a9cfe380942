"""Change sets: the commits and unified-diff hunks between two versions of one source, each hunk mapped to its
enclosing function or class and to a subsystem.

Three kinds of pairs have a change set (:func:`plan`):

- two ``git:`` refs of one repository: the commits between them (first-parent history, oldest first) and,
  per commit, its hunks against its parent;
- two directories holding versions of one package (``v1/subject.py`` and ``v2/subject.py``): one diff, no
  history;
- a subject's directory against a ``git:`` ref: one diff from the ref to the directory's files (or the
  reverse), no history.

Hunks come from ``git diff`` (``-U3``, Myers, no rename detection), file by file, so their ``@@ -a,b +c,d @@``
headers are the ones ``git show`` prints. Documentation files (``*.md``, ``*.rst``, ``docs/``, licenses) are
listed but never searched: they cannot change a training run.

Each hunk is then mapped (:func:`annotate`, :func:`map_config_keys`, :func:`map_trace`, :func:`prioritize`):

- to the innermost function or class enclosing its changed lines, with :mod:`ast` on both sides;
- to a subsystem by the names of its file, class and function (:func:`rlaudit.compare.classify_key`'s rules),
  by the subject's ``config_keys()`` when it changes a key's default, and by which probes executed its function
  (:mod:`rlaudit.changes.trace`);
- to a prior (the audits' evidence against its subsystems), which orders the search and never decides.

Everything here runs in the notebook's process and needs the ``git`` command.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import io
import itertools
import os
import re
import tempfile
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rlaudit.gitcli import failure, have_git, run_git

GIT_TIMEOUT = 120.0  # seconds per git command
DOC_SUFFIXES = (".md", ".rst", ".adoc")
DOC_PREFIXES = ("LICENSE", "LICENCE", "COPYING", "AUTHORS", "CHANGELOG", "NOTICE", "README")
DOC_NAMES = (".gitignore", ".gitattributes")
DOC_DIRS = ("docs", "doc")
# Directories whose contents are environments, caches or run outputs, never the subject's source.
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "wandb", "mlruns", "lightning_logs"})
MAX_FILES = 20_000  # files listed per tree before a change set is refused as too large to search
BINARY_SNIFF = 8000  # bytes looked at for a NUL (git's own test for a binary file)
_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_IDENT = re.compile(r"[A-Za-z_]\w*")


class ChangeSetError(ValueError):
    """A pair of subjects whose change set cannot be computed (no git, a tree that cannot be read)."""


# ------------------------------------------------------------------------------------------------------------
# git
# ------------------------------------------------------------------------------------------------------------


def git(
    cwd: str | Path,
    *args: str,
    input: bytes | None = None,
    check: bool = True,
    extra_env: Mapping[str, str] | None = None,
) -> bytes:
    """Run ``git`` in ``cwd`` (with ``extra_env`` added to the environment); its stdout as bytes.

    Raises:
        ChangeSetError: git is not installed, or (with ``check``) the command failed (its message included).
    """
    if not have_git():
        raise ChangeSetError(
            "searching code changes needs the `git` command, which is not on PATH; install git"
        )
    proc = run_git(cwd, *args, input=input, timeout=GIT_TIMEOUT, extra_env=extra_env)
    if check and proc.returncode != 0:
        raise ChangeSetError(failure(cwd, args, proc))
    return proc.stdout


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def blob_id(data: bytes) -> str:
    """git's object id of a blob with this content (SHA-1), so directory files and commits compare alike."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# ------------------------------------------------------------------------------------------------------------
# Trees: one version of the source
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """One version of the source: a commit of a repository (or a directory inside it), or a directory.

    Attributes:
        kind: ``"git"`` (a commit) or ``"dir"`` (files on disk).
        root: The repository's top level (``git``) or the directory (``dir``), absolute.
        commit: For ``git``, the full commit hash.
        prefix: For ``git``, the subdirectory of the repository the tree covers (``""``: all of it).
        subject: The subject file, relative to the tree (``"subject.py"``, ``"tools/subject.py"``).
        label: How reports name it (a spec or a short commit).
    """

    kind: str
    root: str
    commit: str = ""
    prefix: str = ""
    subject: str = "subject.py"
    label: str = ""

    @property
    def identity(self) -> str:
        """What makes this tree's content unique (a commit and prefix, or the directory and its files)."""
        if self.kind == "git":
            return f"git:{self.commit}:{self.prefix}"
        digest = hashlib.sha256()
        for path, oid in sorted(list_files(self).items()):
            digest.update(_encode(path) + b"\0" + oid.encode() + b"\0")
        return f"dir:{digest.hexdigest()}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _skipped(relative: PurePosixPath) -> bool:
    return any(part.startswith(".") or part in SKIP_DIRS for part in relative.parts[:-1]) or (
        "data/cache" in relative.as_posix()
    )


@functools.lru_cache(maxsize=64)
def _git_listing(root: str, commit: str, prefix: str) -> tuple[tuple[str, str], ...]:
    args = ["ls-tree", "-r", "-z", "--full-tree", commit]
    if prefix:
        args += ["--", prefix]
    out = git(root, *args)
    files = []
    for entry in _decode(out).split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        _, kind, oid = meta.split()
        if kind != "blob":
            continue  # submodules are not followed
        rel = path[len(prefix) + 1 :] if prefix else path
        files.append((rel, oid))
    return tuple(sorted(files))


def _dir_listing(root: str) -> list[str]:
    base = Path(root)
    inside = git(base, "rev-parse", "--show-toplevel", check=False).strip() if base.is_dir() else b""
    if inside:
        out = git(base, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
        names = [n for n in _decode(out).split("\0") if n]
        return sorted(n for n in names if (base / n).is_file() and not _skipped(PurePosixPath(n)))
    names = []
    for current, dirnames, filenames in os.walk(base):
        here = Path(current)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".") and d not in SKIP_DIRS and not (here / d / "pyvenv.cfg").exists()
        )
        for name in filenames:
            rel = (here / name).relative_to(base).as_posix()
            if not _skipped(PurePosixPath(rel)) and not name.endswith((".pyc", ".pyo")):
                names.append(rel)
        if len(names) > MAX_FILES:
            break
    return sorted(names)


def list_files(tree: Tree) -> dict[str, str]:
    """Relative path -> git blob id of every file of ``tree`` (untracked and ignored files of a directory in a
    git checkout are left out, as are caches and virtual environments).

    Raises:
        ChangeSetError: More than :data:`MAX_FILES` files (too large to search hunk by hunk).
    """
    if tree.kind == "git":
        files = dict(_git_listing(tree.root, tree.commit, tree.prefix))
    else:
        files = {rel: blob_id((Path(tree.root) / rel).read_bytes()) for rel in _dir_listing(tree.root)}
    if len(files) > MAX_FILES:
        raise ChangeSetError(
            f"{tree.label or tree.root} holds {len(files)} files, more than the {MAX_FILES} a change search "
            "reads; point the subjects at the package's own directory"
        )
    return files


def read_file(tree: Tree, path: str) -> bytes | None:
    """The content of ``path`` in ``tree``, or None when it does not exist there."""
    if tree.kind == "git":
        oid = dict(_git_listing(tree.root, tree.commit, tree.prefix)).get(path)
        return None if oid is None else _read_blob(tree.root, oid)
    target = Path(tree.root) / path
    return target.read_bytes() if target.is_file() else None


@functools.lru_cache(maxsize=512)
def _read_blob(root: str, oid: str) -> bytes:
    return git(root, "cat-file", "blob", oid)


def is_doc(path: str) -> bool:
    """True for documentation files, which cannot change a training run and are never searched."""
    p = PurePosixPath(path)
    return (
        p.suffix.lower() in DOC_SUFFIXES
        or p.name.upper().startswith(DOC_PREFIXES)
        or p.name in DOC_NAMES
        or (len(p.parts) > 1 and p.parts[0].lower() in DOC_DIRS)
    )


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
        h.update(_encode(f"{self.path}\0{self.status}\0{self.header}\0"))
        for line in self.lines:
            h.update(_encode(line) + b"\0")
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
        for i, (a, b, c, d, lines) in enumerate(parse_diff(_decode(out)), start=1)
    ]


# ------------------------------------------------------------------------------------------------------------
# Change sets
# ------------------------------------------------------------------------------------------------------------


@dataclass
class Commit:
    """One commit of the history between the two refs.

    Attributes:
        sha: Full hash.
        parent: Its first parent (the previous commit of the history).
        subject: The first line of its message.
        author, date: As git records them (ISO date).
        hunks: Its hunks against its parent (documentation files left out).
        excluded: Documentation files it changes (not searched).
        prior: Sum of its hunks' priors.
    """

    sha: str
    parent: str
    subject: str
    author: str = ""
    date: str = ""
    hunks: list[Hunk] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    prior: float = 0.0

    @property
    def short(self) -> str:
        return self.sha[:7]

    def to_dict(self, *, text: bool = True) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "parent": self.parent,
            "subject": self.subject,
            "author": self.author,
            "date": self.date,
            "prior": self.prior,
            "excluded": list(self.excluded),
            "hunks": [h.to_dict(text=text) for h in self.hunks],
        }


@dataclass
class ChangeSet:
    """What changed between two versions of one source.

    Attributes:
        kind: ``"commits"`` (two refs of one repository), ``"directories"`` (two versions of a package),
            ``"directory-vs-ref"`` (a subject's directory against a ``git:`` ref).
        baseline, candidate: The two trees.
        commits: The history from baseline to candidate, oldest first (empty without one, or when the
            baseline is not a first-parent ancestor of the candidate; ``notes`` says which).
        diff: The hunks of the whole diff, baseline to candidate (documentation files left out).
        excluded: Documentation files the whole diff changes (not searched).
        notes: What the reader should know (no history, files left out).
    """

    kind: str
    baseline: Tree
    candidate: Tree
    commits: list[Commit] = field(default_factory=list)
    diff: list[Hunk] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def has_history(self) -> bool:
        return len(self.commits) >= 1

    @property
    def searched(self) -> list[Hunk]:
        """The hunks a per-hunk search covers: every commit's hunks with a history, else the whole diff's."""
        return [h for c in self.commits for h in c.hunks] if self.commits else list(self.diff)

    def hunks(self) -> dict[str, Hunk]:
        """Every hunk by id (the commits' and the whole diff's)."""
        return {h.id: h for h in [*self.diff, *(h for c in self.commits for h in c.hunks)]}

    def commit_of(self, hunk: Hunk) -> Commit | None:
        return next((c for c in self.commits if c.sha == hunk.commit), None) if hunk.commit else None

    def to_dict(self, *, text: bool = True) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "commits": [c.to_dict(text=text) for c in self.commits],
            "diff": [h.to_dict(text=text) for h in self.diff],
            "excluded": list(self.excluded),
            "notes": list(self.notes),
        }


def tree_diff(old: Tree, new: Tree, *, commit: str = "") -> tuple[list[Hunk], list[str]]:
    """Hunks turning tree ``old`` into tree ``new`` (file by file, in path order), and the documentation files
    that differ (left out)."""
    a, b = list_files(old), list_files(new)
    hunks: list[Hunk] = []
    excluded: list[str] = []
    for path in sorted(set(a) | set(b)):
        if a.get(path) == b.get(path):
            continue
        old_data, new_data = read_file(old, path), read_file(new, path)
        if old_data == new_data:
            continue
        if is_doc(path):
            excluded.append(path)
            continue
        hunks.extend(diff_hunks(path, old_data, new_data, commit=commit))
    return hunks, excluded


def _commit_info(root: str, sha: str) -> tuple[str, str, str, str]:
    out = _decode(git(root, "log", "-1", "--format=%P%x00%an%x00%aI%x00%s", sha)).rstrip("\n")
    parents, author, date, subject = out.split("\0", 3)
    return (parents.split() or [""])[0], author, date, subject


def history(root: str, base: str, head: str) -> tuple[list[str], str]:
    """The first-parent commits from ``base`` (excluded) to ``head`` (included), oldest first.

    Returns:
        ``(shas, note)``: an empty list and a note saying why when there is no such history (``base`` is not
        an ancestor of ``head``, or is reached only through a merge's second parent).
    """
    if base == head:
        return [], "both sides are the same commit"
    is_ancestor = run_git(root, "merge-base", "--is-ancestor", base, head, timeout=GIT_TIMEOUT)
    if is_ancestor.returncode != 0:
        return [], (
            f"{base[:7]} is not an ancestor of {head[:7]}: searched as one diff without history "
            "(no commit-level bisection)"
        )
    shas = _decode(git(root, "rev-list", "--first-parent", "--reverse", f"{base}..{head}")).split()
    if not shas or _commit_info(root, shas[0])[0] != base:
        return [], (
            f"{base[:7]} is reached from {head[:7]} only through a merge: searched as one diff without history"
        )
    return shas, ""


def commits_between(root: str, base: str, head: str, prefix: str = "") -> tuple[list[Commit], str]:
    """The commits from ``base`` to ``head`` with their hunks against their first parents."""
    shas, note = history(root, base, head)
    commits = []
    for sha in shas:
        parent, author, date, subject = _commit_info(root, sha)
        hunks, excluded = tree_diff(
            Tree("git", root, parent, prefix), Tree("git", root, sha, prefix), commit=sha
        )
        commits.append(Commit(sha, parent, subject, author, date, hunks, excluded))
    return commits, note


# ------------------------------------------------------------------------------------------------------------
# Which pairs have a change set
# ------------------------------------------------------------------------------------------------------------


def _repo_top(path: Path) -> str:
    out = git(path, "rev-parse", "--show-toplevel", check=False).strip()
    return str(Path(_decode(out)).resolve()) if out else ""


def plan(baseline: Any, candidate: Any) -> tuple[Tree, Tree, str] | str:
    """The two trees to compare for a pair of subject specs, or why the pair has no change set.

    Args:
        baseline, candidate: :class:`rlaudit.subjects.SubjectSpec` (or spec strings).

    Returns:
        ``(baseline tree, candidate tree, kind)``, or a sentence saying why there is nothing to search (a
        built-in subject, two unrelated projects, two repositories).
    """
    from rlaudit.subjects import SubjectSpec, parse_spec

    specs = [s if isinstance(s, SubjectSpec) else parse_spec(s) for s in (baseline, candidate)]
    schemes = {s.scheme for s in specs}
    if not schemes <= {"git", "file"}:
        return (
            "the change search needs two versions of one source (git: refs of one repository, or two directories "
            f"of one package); this pair is {specs[0].scheme} vs {specs[1].scheme}"
        )
    if schemes == {"git"}:
        from rlaudit.adapters.git import resolve

        base, cand = resolve(specs[0]), resolve(specs[1])
        if str(base.repo) != str(cand.repo):
            return f"the two git: subjects live in different repositories ({base.repo} and {cand.repo})"
        return (
            Tree("git", str(base.repo), base.commit, "", base.path, f"{specs[0].ref} ({base.commit[:7]})"),
            Tree("git", str(cand.repo), cand.commit, "", cand.path, f"{specs[1].ref} ({cand.commit[:7]})"),
            "commits",
        )
    if schemes == {"file"}:
        a, b = Path(specs[0].target), Path(specs[1].target)
        if a.parent == b.parent:
            return "both subjects live in one directory: their source is the same"
        common = {p for p in _dir_listing(str(a.parent)) if p.endswith(".py")} & {
            p for p in _dir_listing(str(b.parent)) if p.endswith(".py")
        }
        if a.name != b.name or not (common - {a.name}):
            return (
                f"{a.parent} and {b.parent} do not hold versions of one package (no Python module path in common "
                "besides the subject file)"
            )
        return (
            Tree("dir", str(a.parent), subject=a.name, label=specs[0].display),
            Tree("dir", str(b.parent), subject=b.name, label=specs[1].display),
            "directories",
        )
    # one git ref, one directory
    from rlaudit.adapters.git import resolve

    git_side = 0 if specs[0].scheme == "git" else 1
    checkout = resolve(specs[git_side])
    path = Path(specs[1 - git_side].target)
    top = _repo_top(path.parent)
    if top == str(checkout.repo):
        directory = Tree(
            "dir", top, subject=path.relative_to(top).as_posix(), label=specs[1 - git_side].display
        )
        ref = Tree("git", str(checkout.repo), checkout.commit, "", checkout.path, specs[git_side].display)
    else:
        prefix = PurePosixPath(checkout.path).parent.as_posix()
        prefix = "" if prefix == "." else prefix
        directory = Tree("dir", str(path.parent), subject=path.name, label=specs[1 - git_side].display)
        ref = Tree(
            "git",
            str(checkout.repo),
            checkout.commit,
            prefix,
            PurePosixPath(checkout.path).name,
            specs[git_side].display,
        )
    trees = (ref, directory) if git_side == 0 else (directory, ref)
    return trees[0], trees[1], "directory-vs-ref"


def change_set(baseline: Any, candidate: Any) -> ChangeSet | str:
    """The change set of a pair of subject specs (see :func:`plan`), with every hunk annotated
    (:func:`annotate`), or why there is none."""
    planned = plan(baseline, candidate)
    if isinstance(planned, str):
        return planned
    base, cand, kind = planned
    return build(base, cand, kind)


def build(base: Tree, cand: Tree, kind: str = "") -> ChangeSet:
    """The change set between two trees: the history (when both are commits of one repository) and the whole
    diff, every hunk annotated with its functions."""
    kind = kind or ("commits" if base.kind == cand.kind == "git" else "directories")
    notes: list[str] = []
    commits: list[Commit] = []
    if base.kind == cand.kind == "git" and base.root == cand.root and base.prefix == cand.prefix:
        commits, note = commits_between(base.root, base.commit, cand.commit, base.prefix)
        if note:
            notes.append(note)
    diff, excluded = tree_diff(base, cand)
    cs = ChangeSet(kind, base, cand, commits, diff, excluded, notes)
    if excluded:
        notes.append(f"documentation files changed but not searched: {', '.join(excluded)}")
    annotate(cs)
    return cs


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
        old_text = _decode(read_file(old, path) or b"")
        new_text = _decode(read_file(new, path) or b"")
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


# ------------------------------------------------------------------------------------------------------------
# Subsystems and priors
# ------------------------------------------------------------------------------------------------------------

NAME_WEIGHT = 0.5  # a subsystem named by the file, class or function
KEY_WEIGHT = 1.0  # a config key's default changed by the hunk, filed under a subsystem by config_keys()
TRACE_WEIGHT = 0.7  # the function was executed by probes of a subsystem


def _link(h: Hunk, subsystem: str, weight: float, reason: str) -> None:
    if not subsystem:
        return
    if weight > h.affinity.get(subsystem, 0.0):
        h.affinity[subsystem] = weight
    if reason not in h.reasons:
        h.reasons.append(reason)
    h.subsystem = max(h.affinity, key=lambda s: (h.affinity[s], -_order(s)))


def _order(subsystem: str) -> int:
    from rlaudit.findings import SUBSYSTEMS

    return SUBSYSTEMS.index(subsystem) if subsystem in SUBSYSTEMS else len(SUBSYSTEMS)


def _name_forms(h: Hunk) -> list[tuple[str, str]]:
    """(name as a dotted key, what it is) for the file and every function/class the hunk touches."""
    module = PurePosixPath(h.path).with_suffix("").as_posix().replace("/", ".")
    stem = PurePosixPath(h.path).stem
    if stem.startswith("__") and stem.endswith("__"):  # a package's __init__.py: the package's name speaks
        module = module.rpartition(".")[0]
        stem = PurePosixPath(h.path).parent.name
    forms = [(stem, f"file {h.path}"), (module, f"file {h.path}")]
    for full in h.functions or ((h.function,) if h.function else ()):
        # special methods say nothing about a subsystem (``__init__`` is a constructor, not initialization)
        name = ".".join(p for p in full.split(".") if not (p.startswith("__") and p.endswith("__")))
        if not name:
            continue
        last = name.split(".")[-1]
        forms += [
            (name, f"function {full}"),
            (last, f"function {full}"),
            (f"{stem}.{name}", f"function {full}"),
        ]
    return forms


def map_names(cs: ChangeSet, rules: Mapping[str, Sequence[str]] | None = None) -> None:
    """Link each hunk to subsystems named by its file, class and function (the subject's ``config_keys()``
    patterns first, then :data:`rlaudit.compare.DEFAULT_RULES`)."""
    from rlaudit.compare import classify_key

    for h in cs.hunks().values():
        for name, what in _name_forms(h):
            subsystem = classify_key(name, rules, fallback="")
            if subsystem:
                weight = NAME_WEIGHT if what.startswith("function") else NAME_WEIGHT * 0.6
                _link(h, subsystem, weight, f"{what} ({subsystem})")


def _flat_keys(config: Mapping[str, Any] | None) -> dict[str, Any]:
    from rlaudit.compare import flatten

    return dict(flatten(config)) if config else {}


def map_config_keys(
    cs: ChangeSet,
    config_keys: Mapping[str, Sequence[str]] | None,
    baseline_config: Mapping[str, Any] | None = None,
    candidate_config: Mapping[str, Any] | None = None,
) -> None:
    """Link hunks that change a config key's default (``name = value``, ``name: type = value``, ``name=value``
    or ``"name": value`` on a changed line) to the subsystem ``config_keys()`` files the key under.

    Keys come from the resolved configs (flattened) or, without them, from the literal patterns of
    ``config_keys``. A key whose value differs between the two resolved configs is named with both values.
    """
    from rlaudit.compare import classify_key

    base, cand = _flat_keys(baseline_config), _flat_keys(candidate_config)
    keys = set(base) | set(cand)
    if not keys and config_keys:
        keys = {p for patterns in config_keys.values() for p in patterns if not any(c in p for c in "*?[")}
    leaves: dict[str, list[str]] = {}
    for key in keys:
        leaf = key.split(".")[-1]
        if len(leaf) >= 2:
            leaves.setdefault(leaf, []).append(key)
    for h in cs.hunks().values():
        changed = "".join(line[1:] for line in h.lines if line[:1] in ("-", "+"))
        if not changed:
            continue
        for leaf, full in leaves.items():
            pattern = (
                rf"(?<![\w.]){re.escape(leaf)}\s*(?::[^=\n]*)?=(?!=)|['\"]{re.escape(leaf)}['\"]\s*:|"
                rf"^\s*{re.escape(leaf)}\s*:"
            )
            if not re.search(pattern, changed, flags=re.MULTILINE):
                continue
            for key in full:
                subsystem = classify_key(key, config_keys, fallback="config")
                values = ""
                if key in base and key in cand and base[key] != cand[key]:
                    values = f": {base[key]!r} -> {cand[key]!r}"
                weight = KEY_WEIGHT if values or not base else KEY_WEIGHT * 0.6
                _link(h, subsystem, weight, f"changes the default of {key}{values} ({subsystem})")


def map_trace(
    cs: ChangeSet, executed: Mapping[str, Mapping[str, Sequence[str]]], side: str = "candidate"
) -> None:
    """Link hunks to the subsystems whose probes executed their function.

    Args:
        cs: The change set.
        executed: Per side (``"baseline"``, ``"candidate"``): ``"<path>::<qualname>"`` -> subsystems whose
            probes executed it (:func:`rlaudit.changes.trace.functions_by_subsystem`). Paths are relative to
            each side's tree.
        side: Used for hunks of the whole diff (the side whose functions the hunk names).
    """
    for h in cs.hunks().values():
        names = list(h.functions) or ([h.function] if h.function else [])
        if not names or not h.path.endswith(".py"):
            continue
        hits: dict[str, str] = {}
        traced = False
        for which in ("candidate", "baseline") if side == "candidate" else ("baseline", "candidate"):
            table = executed.get(which) or {}
            traced |= any(k.startswith(f"{h.path}::") for k in table)
            for name in names:
                for sub in table.get(f"{h.path}::{name}", ()):
                    hits.setdefault(sub, name)
        if traced:
            h.executed = bool(hits)
        for sub, name in hits.items():
            if sub != "training":  # a training run executes nearly everything: it tells *whether* code runs
                _link(h, sub, TRACE_WEIGHT, f"{name} runs in the {sub} probes ({sub})")


COSMETIC_FACTOR = 0.1  # only comments/docstrings/formatting: can hardly matter
UNEXECUTED_FACTOR = 0.3  # no traced probe ran its function
PRIOR_FLOOR = 0.05  # every hunk keeps a chance: priors order the search, they never rule anything out


def prioritize(cs: ChangeSet, audit_priors: Mapping[str, float] | None = None) -> None:
    """Set every hunk's and commit's prior from the audits' evidence against the subsystems it is linked to.

    A hunk's prior is ``PRIOR_FLOOR + sum(affinity[s] * audit_prior[s])`` (plus a hundredth of its linked
    subsystems' affinities, so that among equals a hunk that touches a known subsystem comes first), scaled
    down for cosmetic hunks and for hunks whose function no traced probe ran, and nudged by size (more changed
    lines, a little more likely). A commit's prior is the sum of its hunks'.
    """
    audit_priors = audit_priors or {}
    for h in cs.hunks().values():
        score = PRIOR_FLOOR + sum(w * float(audit_priors.get(s, 0.0)) for s, w in h.affinity.items())
        score += 0.01 * sum(h.affinity.values())
        if h.cosmetic:
            score *= COSMETIC_FACTOR
        if h.executed is False:
            score *= UNEXECUTED_FACTOR
        score *= 1.0 + 0.02 * min(h.changed, 25)
        h.prior = round(score, 6)
    for c in cs.commits:
        c.prior = round(sum(h.prior for h in c.hunks), 6)


def map_all(
    cs: ChangeSet,
    *,
    config_keys: Mapping[str, Sequence[str]] | None = None,
    baseline_config: Mapping[str, Any] | None = None,
    candidate_config: Mapping[str, Any] | None = None,
    executed: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    audit_priors: Mapping[str, float] | None = None,
) -> ChangeSet:
    """Every mapping in order (names, config keys, trace), then the priors; returns ``cs``."""
    map_names(cs, config_keys)
    map_config_keys(cs, config_keys, baseline_config, candidate_config)
    if executed:
        map_trace(cs, executed)
    prioritize(cs, audit_priors)
    return cs


def hunk_table(hunks: Iterable[Hunk]) -> list[dict[str, Any]]:
    """One row per hunk (no diff text), for tables."""
    return [
        {
            "hunk": h.id,
            "commit": h.short_commit,
            "path": h.path,
            "header": h.header,
            "function": h.where,
            "subsystem": h.subsystem,
            "why": "; ".join(h.reasons),
            "ran in the traced probes": h.executed,
            "prior": round(h.prior, 4),
            "cosmetic": h.cosmetic,
            "changed lines": h.changed,
        }
        for h in hunks
    ]
