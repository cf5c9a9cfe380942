"""Hybrid subjects: one version of the source with some hunks of the other applied or reverted.

A hybrid is materialized once in the cache, as a directory holding the whole tree with the patched files
(``<cache>/hybrids/<key>/``), and run like any ``path/to/subject.py`` subject: the worker loads the same
subject file inside it, with the interpreter, environment and requirements of the subject it derives from.
Its key is a content address (the base tree's identity and the hunks' contents), so asking twice for the
same hybrid reuses the directory, and a changed hunk gives a new one. The directory is its own small git
repository with one commit made at a fixed date by a fixed author, so the cache fingerprints it exactly like a
checkout (:func:`rlaudit.engine.store.subject_fingerprint`: commit plus diff), and the same content always gets the
same fingerprint.

A hybrid that cannot be built is *unresolved* (as in delta debugging), never an error: a hunk whose context is
not found (a later commit rewrote those lines), two hunks that overlap, or a Python file that no longer parses.
A hybrid that builds but fails to import, crashes or produces NaN is unresolved too; the search finds that out
when it runs (:mod:`rlaudit.attribution.bisection`).

Hunks are applied the way ``patch`` does without fuzz: each where its line numbers say, or at the nearest
place where its context and removed lines match exactly. Hunks of several commits are applied commit by
commit (reverted newest first), so that a later commit's hunk applies on top of an earlier one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlaudit.changes.changeset import ChangeSet
from rlaudit.changes.hunks import Hunk, apply_hunks
from rlaudit.changes.trees import Tree, decode_text, encode_text, git, list_files, read_file

HYBRID_SCHEMA = 1
FIXED_DATE = "2000-01-01T00:00:00+00:00"  # the hybrid's own commit: same content, same commit hash

Stage = tuple[Sequence[Hunk], bool]
"""Hunks applied together, and whether they are reverted (True) or applied (False)."""


@dataclass
class Hybrid:
    """A tree with hunks applied or reverted, materialized (or why not).

    Attributes:
        key: The content address (16 hex digits).
        base: The tree it starts from.
        reverted: Ids of the hunks reverted.
        applied: Ids of the hunks applied.
        directory: Where it lives in the cache (None when unresolved).
        subject_file: The subject file inside it (None when unresolved).
        unresolved: Why it could not be built (``""`` when it was).
    """

    key: str
    base: Tree
    reverted: tuple[str, ...] = ()
    applied: tuple[str, ...] = ()
    directory: Path | None = None
    subject_file: Path | None = None
    unresolved: str = ""
    files: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.unresolved

    def spec(self, like: Any = None, label: str = "") -> Any:
        """The hybrid as a :class:`rlaudit.engine.subjects.SubjectSpec`, run like ``like`` (its interpreter,
        requirements and environment; its working directory only if it lies outside the base tree).

        Raises:
            ValueError: The hybrid is unresolved (there is nothing to run).
        """
        from rlaudit.engine.subjects import parse_spec

        if self.subject_file is None:
            raise ValueError(
                f"hybrid {self.key} is unresolved ({self.unresolved}); there is no subject to run"
            )
        spec = parse_spec(str(self.subject_file), label=label or f"hybrid {self.key}")
        if like is None:
            return spec
        cwd = like.cwd if like.cwd and not _inside(like.cwd, self.base.root) else spec.cwd
        return spec.replace(
            python=like.python,
            requirements=like.requirements,
            system_site_packages=like.system_site_packages,
            env=dict(like.env),
            cwd=cwd,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "base": self.base.to_dict(),
            "reverted": list(self.reverted),
            "applied": list(self.applied),
            "directory": str(self.directory) if self.directory else None,
            "unresolved": self.unresolved,
            "files": self.files,
        }


def _inside(path: str, root: str) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True


def hybrids_dir() -> Path:
    from rlaudit.engine.paths import cache_dir

    return cache_dir() / "hybrids"


def key_of(base: Tree, stages: Sequence[Stage]) -> str:
    """The content address of a hybrid: the base tree's identity and, per stage, the hunks' contents."""
    h = hashlib.sha256(f"hybrid-v{HYBRID_SCHEMA}\0{base.identity}\0{base.subject}\0".encode())
    for hunks, reverse in stages:
        h.update(b"R" if reverse else b"A")
        for digest in sorted(x.digest() for x in hunks):
            h.update(digest.encode())
    return h.hexdigest()[:16]


def patch_files(base: Tree, stages: Sequence[Stage]) -> dict[str, bytes | None] | str:
    """The files a hybrid changes: path -> new content (None: deleted), or why it cannot be built.

    Each stage's hunks are applied to the result of the previous stages, file by file.
    """
    files: dict[str, bytes | None] = {}

    def current(path: str) -> bytes | None:
        return files[path] if path in files else read_file(base, path)

    for hunks, reverse in stages:
        by_path: dict[str, list[Hunk]] = {}
        for h in hunks:
            by_path.setdefault(h.path, []).append(h)
        for path, group in sorted(by_path.items()):
            data = current(path)
            result = _patch_one(path, data, group, reverse)
            if isinstance(result, str):
                return result
            files[path] = result
    for path, data in files.items():
        if path.endswith(".py") and data is not None:
            try:
                compile(decode_text(data), path, "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as exc:
                line = getattr(exc, "lineno", None)
                reason = getattr(exc, "msg", str(exc))
                return f"{path} does not parse after patching ({type(exc).__name__} at line {line}: {reason})"
    return files


def _patch_one(path: str, data: bytes | None, hunks: Sequence[Hunk], reverse: bool) -> bytes | str | None:
    status = hunks[0].status
    ids = ", ".join(h.id for h in hunks)
    if status == "binary":
        h = hunks[0]
        want, put = (h.new_data, h.old_data) if reverse else (h.old_data, h.new_data)
        if data != want:
            return f"{ids} does not apply: {path} is not the version the binary change starts from"
        return put
    creates = (status == "added" and not reverse) or (status == "deleted" and reverse)
    removes = (status == "deleted" and not reverse) or (status == "added" and reverse)
    if creates and data is not None:
        return f"{ids} does not apply: it creates {path}, which exists already"
    if not creates and data is None:
        return f"{ids} does not apply: {path} does not exist"
    text = decode_text(data or b"")
    patched = apply_hunks(text, hunks, reverse=reverse)
    if patched is None:
        where = (
            "its context is not found" if len(hunks) == 1 else "a hunk's context is not found, or two overlap"
        )
        return f"{ids} does not apply to {path}: {where} (a later change rewrote those lines)"
    if removes:
        if patched.strip():
            return f"{ids} does not apply: {path} holds more than the file it deletes"
        return None
    return encode_text(patched)


def stages_for(cs: ChangeSet, hunks: Sequence[Hunk], *, reverse: bool) -> list[Stage]:
    """The hunks grouped by commit in the order they apply: newest commit first when reverting, oldest first
    when applying (hunks without a commit form one stage)."""
    order = {c.sha: i for i, c in enumerate(cs.commits)}
    groups: dict[int, list[Hunk]] = {}
    for h in hunks:
        groups.setdefault(order.get(h.commit, -1), []).append(h)
    keys = sorted(groups, reverse=reverse)
    return [(groups[k], reverse) for k in keys]


def materialize(base: Tree, stages: Sequence[Stage], *, root: Path | None = None) -> Hybrid:
    """Build (or find) the hybrid of ``base`` with ``stages`` applied, under ``root`` (default
    ``<cache>/hybrids``).

    Returns:
        The hybrid; unresolved (with the reason) when a hunk does not apply or a Python file stops parsing.
    """
    from rlaudit.adapters import file_lock

    root = root if root is not None else hybrids_dir()
    key = key_of(base, stages)
    reverted = tuple(h.id for hunks, rev in stages if rev for h in hunks)
    applied = tuple(h.id for hunks, rev in stages if not rev for h in hunks)
    hybrid = Hybrid(key, base, reverted, applied)
    directory = root / key
    done = directory / ".git" / "rlaudit-hybrid.json"
    if done.is_file():
        hybrid.directory, hybrid.subject_file = directory, directory / base.subject
        hybrid.files = json.loads(done.read_text()).get("files", {})
        return hybrid
    patched = patch_files(base, stages)
    if isinstance(patched, str):
        hybrid.unresolved = patched
        return hybrid
    hybrid.files = {p: ("deleted" if d is None else "patched") for p, d in sorted(patched.items())}
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / f".{key}.lock", what="hybrid subject"):
        if not done.is_file():
            tmp = root / f".{key}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            try:
                write_tree(base, tmp)
                for path, data in patched.items():
                    target = tmp / path
                    if data is None:
                        target.unlink(missing_ok=True)
                    else:
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(data)
                _commit(tmp, key)
                (tmp / ".git" / "rlaudit-hybrid.json").write_text(json.dumps(hybrid.describe(), indent=2))
                shutil.rmtree(directory, ignore_errors=True)
                os.replace(tmp, directory)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    hybrid.directory, hybrid.subject_file = directory, directory / base.subject
    if not hybrid.subject_file.is_file():
        hybrid.unresolved = f"the subject file {base.subject} does not exist in the hybrid"
    return hybrid


def write_tree(tree: Tree, dest: Path) -> None:
    """Write every file of ``tree`` under ``dest`` (a commit through ``git archive``, a directory by copying the
    files :func:`rlaudit.changes.trees.list_files` lists)."""
    if tree.kind == "git":
        ref = f"{tree.commit}:{tree.prefix}" if tree.prefix else tree.commit
        data = git(tree.root, "archive", "--format=tar", ref)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")
        return
    source = Path(tree.root)
    for rel in list_files(tree):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, target)


def _commit(directory: Path, key: str) -> None:
    """Make ``directory`` a repository with one commit of everything in it (fixed author and date, so equal
    contents give equal commits), ignoring whatever runs later write into it."""
    env = {
        "GIT_AUTHOR_NAME": "rlaudit",
        "GIT_AUTHOR_EMAIL": "rlaudit@localhost",
        "GIT_COMMITTER_NAME": "rlaudit",
        "GIT_COMMITTER_EMAIL": "rlaudit@localhost",
        "GIT_AUTHOR_DATE": FIXED_DATE,
        "GIT_COMMITTER_DATE": FIXED_DATE,
    }
    git(directory, "init", "-q", extra_env=env)
    git(directory, "add", "-A", "-f", ".", extra_env=env)
    git(
        directory,
        "-c",
        "commit.gpgsign=false",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        f"rlaudit hybrid {key}",
        extra_env=env,
    )
    # runs of the hybrid may write logs or checkpoints beside its code: they must not change its fingerprint
    (directory / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (directory / ".git" / "info" / "exclude").write_text("*\n")


def check(base: Tree, hunks: Sequence[Hunk], *, reverse: bool) -> str:
    """Why ``hunks`` (one stage) do not apply to ``base`` (``""`` when they do), without building anything."""
    result = patch_files(base, [(hunks, reverse)])
    return result if isinstance(result, str) else ""
