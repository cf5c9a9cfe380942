"""``git:<repo>@<ref>[:<subject.py>]``: a subject as it was at a commit.

The ref is resolved to a commit and checked out once into a worktree under the cache
(``cache_dir()/worktrees/<repo-hash>/<commit>``, ``git worktree add --detach``), then the subject file there is
loaded like any ``path/to/subject.py``. A second request for the same commit reuses the worktree; concurrent
requests wait on a lock instead of checking out twice. The subject's fingerprint is the commit
(:func:`git_fingerprint`), so moving a branch gives a new fingerprint and never a stale artifact.

Only committed code runs: for uncommitted work, point a path spec at the checkout itself.
The repository must be local (clone a remote one first). Uses only the standard library and the ``git``
command.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlaudit.engine.git import failure, have_git, run_git

GIT_TIMEOUT = 120.0  # seconds per git command (a worktree checkout of a large repo takes a while)


class GitSubjectError(ValueError):
    """A git spec that cannot be resolved: not a repository, unknown ref, subject file missing at the ref."""


@dataclass(frozen=True)
class GitCheckout:
    """A subject at a commit.

    Attributes:
        repo: Top level of the repository (absolute).
        ref: The ref as the user wrote it.
        commit: The full commit hash it resolves to.
        path: The subject file, relative to the repository's top level.
        worktree: The worktree directory for the commit (may not exist yet).
    """

    repo: Path
    ref: str
    commit: str
    path: str
    worktree: Path

    @property
    def subject_file(self) -> Path:
        return self.worktree / self.path


def _git(repo: Path | str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if not have_git():
        raise GitSubjectError("git subjects need the `git` command, which is not on PATH; install git")
    proc = run_git(repo, *args, timeout=GIT_TIMEOUT, text=True)
    if check and proc.returncode != 0:
        raise GitSubjectError(failure(repo, args, proc))
    return proc


def _spec_fields(spec: Any) -> tuple[str, str, str]:
    """(repo, ref, path) from a SubjectSpec (or anything with target/ref/path) or a spec string."""
    if isinstance(spec, str):
        from rlaudit.engine.subjects import parse_spec

        spec = parse_spec(spec)
    if getattr(spec, "scheme", "git") != "git":
        raise ValueError(f"not a git spec: {spec}; expected git:<repo>@<ref>[:<subject.py>]")
    return str(spec.target), str(spec.ref), str(spec.path or "subject.py")


def repo_root(repo: str | Path) -> Path:
    """The top level of the local repository ``repo`` names.

    Raises:
        GitSubjectError: ``repo`` does not exist, is remote, or is not inside a git repository.
    """
    path = Path(repo).expanduser()
    if not path.exists():
        if "://" in str(repo) or str(repo).startswith("git@"):
            raise GitSubjectError(
                f"git subject repository {repo!r} is remote; rlaudit checks out local repositories only. "
                f"Clone it first (git clone {repo} somewhere) and use git:<that directory>@<ref>"
            )
        raise GitSubjectError(
            f"git subject repository {repo!r} does not exist; expected a local git checkout"
        )
    proc = _git(path if path.is_dir() else path.parent, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise GitSubjectError(
            f"{path} is not a git repository (git says: {proc.stderr.strip()}); expected "
            "git:<path to a local git checkout>@<ref>[:<subject.py>]"
        )
    return Path(proc.stdout.strip()).resolve()


def resolve_commit(repo: Path, ref: str) -> str:
    """The full hash of the commit ``ref`` names in ``repo``.

    Raises:
        GitSubjectError: Unknown ref; the message lists branches, tags and recent commits.
    """
    proc = _git(
        repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", check=False
    )
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.strip()
    branches = _git(
        repo, "for-each-ref", "--format=%(refname:short)", "refs/heads", check=False
    ).stdout.split()
    tags = _git(repo, "for-each-ref", "--format=%(refname:short)", "refs/tags", check=False).stdout.split()
    recent = _git(repo, "log", "--all", "--format=%h %s", "-n", "5", check=False).stdout.strip().splitlines()
    parts = [f"branches: {', '.join(branches[:20]) or 'none'}", f"tags: {', '.join(tags[:20]) or 'none'}"]
    if recent:
        parts.append("recent commits: " + "; ".join(recent))
    raise GitSubjectError(f"unknown ref {ref!r} in git repository {repo} ({'. '.join(parts)})")


def _check_subject_at(repo: Path, commit: str, path: str, ref: str) -> None:
    proc = _git(repo, "cat-file", "-e", f"{commit}:{path}", check=False)
    if proc.returncode == 0:
        return
    top = _git(repo, "ls-tree", "--name-only", commit, check=False).stdout.split()
    hint = ""
    candidates = _git(repo, "ls-tree", "-r", "--name-only", commit, check=False).stdout.split()
    named = [c for c in candidates if c.endswith("subject.py")]
    if named:
        hint = f"; files named subject.py at that ref: {', '.join(named[:10])}"
    raise GitSubjectError(
        f"subject file {path!r} does not exist at ref {ref!r} ({commit[:12]}) of {repo}; top-level files there: "
        f"{', '.join(top) or 'none'}{hint}. Name the file after the ref: git:{repo}@{ref}:<path/to/subject.py>"
    )


def repo_hash(repo: Path) -> str:
    """16 hex digits identifying a repository by its git common directory (shared by all its worktrees)."""
    common = _git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir", check=False).stdout.strip()
    key = common or str(repo)
    return hashlib.sha256(os.path.realpath(key).encode()).hexdigest()[:16]


def worktrees_dir() -> Path:
    from rlaudit.engine.paths import cache_dir

    return cache_dir() / "worktrees"


def resolve(spec: Any) -> GitCheckout:
    """Check a git spec against the repository without changing anything on disk.

    Args:
        spec: A :class:`rlaudit.engine.subjects.SubjectSpec` with scheme ``git``, or the spec string.

    Raises:
        GitSubjectError: Not a git repository, unknown ref, or no subject file at that ref (with what
            exists instead).
    """
    repo_arg, ref, path = _spec_fields(spec)
    repo = repo_root(repo_arg)
    commit = resolve_commit(repo, ref)
    _check_subject_at(repo, commit, path, ref)
    worktree = worktrees_dir() / repo_hash(repo) / commit
    return GitCheckout(repo=repo, ref=ref, commit=commit, path=path, worktree=worktree)


def git_fingerprint(spec: Any) -> str:
    """The subject's code identity: the full commit hash its ref resolves to (see :func:`resolve`)."""
    return resolve(spec).commit


def _ready_marker(worktree: Path) -> Path:
    """Written beside a worktree once ``git worktree add`` has finished checking it out."""
    return worktree.with_name(worktree.name + ".ready")


def _worktree_ok(worktree: Path, commit: str, tries: int = 1) -> bool:
    """True when ``worktree`` is a finished checkout of ``commit``.

    ``git worktree add`` points the worktree's HEAD at the commit before it writes the files, so a HEAD alone
    does not say the checkout is done: another process reading the subject file then finds nothing. Only a
    worktree with its ready marker (written after the checkout) counts.

    ``tries`` > 1 asks git again after a failed ``rev-parse`` before saying no: on a busy machine git can fail
    for a moment (a lock another git process holds), and a worktree wrongly judged broken is removed while
    other report lanes are reading their subject from it.
    """
    for attempt in range(tries):
        if not (worktree / ".git").exists() or not _ready_marker(worktree).is_file():
            return False
        proc = _git(worktree, "rev-parse", "HEAD", check=False)
        if proc.returncode == 0:
            return proc.stdout.strip() == commit
        if attempt + 1 < tries:
            time.sleep(0.5)
    return False


def ensure_worktree(spec: Any) -> GitCheckout:
    """Resolve ``spec`` and make sure its commit is checked out under the cache; returns the checkout.

    Creating is locked per repository (``git worktree add`` edits the repository's worktree list), and an
    existing, intact worktree of the commit is reused. A half-made one (a crash during checkout, or one made by
    an earlier version without a ready marker) is removed and made again.

    Raises:
        GitSubjectError: As :func:`resolve`, or ``git worktree add`` failed (its message included).
    """
    from rlaudit.adapters import file_lock

    checkout = resolve(spec)
    worktree = checkout.worktree
    if _worktree_ok(worktree, checkout.commit):
        return checkout
    with file_lock(worktree.parent / ".lock", what="git worktree"):
        if _worktree_ok(worktree, checkout.commit, tries=5):  # made by another process while we waited
            return checkout
        _ready_marker(worktree).unlink(missing_ok=True)
        if worktree.exists():
            shutil.rmtree(worktree)
        # forget worktrees whose directories are gone (a cleaned cache), so the path can be registered again
        _git(checkout.repo, "worktree", "prune", check=False)
        worktree.parent.mkdir(parents=True, exist_ok=True)
        proc = _git(
            checkout.repo,
            "worktree",
            "add",
            "--detach",
            "--force",
            str(worktree),
            checkout.commit,
            check=False,
        )
        if proc.returncode != 0:
            shutil.rmtree(worktree, ignore_errors=True)
            raise GitSubjectError(
                f"could not check out {checkout.commit[:12]} ({checkout.ref}) of {checkout.repo} into {worktree}: "
                f"{proc.stderr.strip()}"
            )
        _ready_marker(worktree).write_text(checkout.commit + "\n")
    return checkout


def load(spec: Any) -> object:
    """Loader for :data:`rlaudit.engine.subjects.ADAPTERS` (runs in the worker): the subject module at the commit.

    The worker's working directory becomes the subject file's directory inside the worktree (unless the spec
    names a ``cwd``), the way a path spec runs in its own directory.
    """
    from rlaudit.engine.subjects import load_subject, parse_spec

    checkout = ensure_worktree(spec)
    subject_file = checkout.subject_file
    if not getattr(spec, "cwd", ""):
        os.chdir(subject_file.parent)
    return load_subject(parse_spec(str(subject_file)))
