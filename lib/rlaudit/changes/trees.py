"""The two versions of a source that a change set compares: git commits (or a directory inside one) and
plain directories, their file listings and contents, and the ``git`` command that reads them."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from rlaudit.engine.git import failure, have_git, run_git

GIT_TIMEOUT = 120.0  # seconds per git command
DOC_SUFFIXES = (".md", ".rst", ".adoc")
DOC_PREFIXES = ("LICENSE", "LICENCE", "COPYING", "AUTHORS", "CHANGELOG", "NOTICE", "README")
DOC_NAMES = (".gitignore", ".gitattributes")
DOC_DIRS = ("docs", "doc")
# Directories whose contents are environments, caches or run outputs, never the subject's source.
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "wandb", "mlruns", "lightning_logs"})
MAX_FILES = 20_000  # files listed per tree before a change set is refused as too large to search


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


def decode_text(data: bytes) -> str:
    """File bytes as text, undecodable bytes kept as surrogates (so :func:`encode_text` gives them back)."""
    return data.decode("utf-8", "surrogateescape")


def encode_text(text: str) -> bytes:
    """Text back to the file's bytes (the inverse of :func:`decode_text`)."""
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
            digest.update(encode_text(path) + b"\0" + oid.encode() + b"\0")
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
    for entry in decode_text(out).split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        _, kind, oid = meta.split()
        if kind != "blob":
            continue  # submodules are not followed
        rel = path[len(prefix) + 1 :] if prefix else path
        files.append((rel, oid))
    return tuple(sorted(files))


def dir_listing(root: str) -> list[str]:
    """The files of a directory version, relative to ``root``: git's listing inside a work tree, else a walk."""
    base = Path(root)
    inside = git(base, "rev-parse", "--show-toplevel", check=False).strip() if base.is_dir() else b""
    if inside:
        out = git(base, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
        names = [n for n in decode_text(out).split("\0") if n]
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
        files = {rel: blob_id((Path(tree.root) / rel).read_bytes()) for rel in dir_listing(tree.root)}
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
