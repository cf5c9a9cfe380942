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

Each hunk is then mapped (:func:`~rlaudit.changes.scopes.annotate`, and in :mod:`rlaudit.changes.priors`
:func:`~rlaudit.changes.priors.map_config_keys`, :func:`~rlaudit.changes.priors.map_trace`,
:func:`~rlaudit.changes.priors.prioritize`):

- to the innermost function or class enclosing its changed lines, with :mod:`ast` on both sides;
- to a subsystem by the names of its file, class and function (:func:`rlaudit.flatdiff.classify_key`'s rules),
  by the subject's ``config_keys()`` when it changes a key's default, and by which probes executed its function
  (:mod:`rlaudit.changes.trace`);
- to a prior (the audits' evidence against its subsystems), which orders the search and never decides.

Everything here runs in the notebook's process and needs the ``git`` command.

The pieces: :mod:`rlaudit.changes.trees` (the two versions and git), :mod:`rlaudit.changes.hunks` (diffs,
applying hunks), :mod:`rlaudit.changes.scopes` (what code a hunk touches), :mod:`rlaudit.changes.priors`
(subsystems and priors); this module builds the change set from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rlaudit.changes.hunks import Hunk, diff_hunks
from rlaudit.changes.scopes import annotate
from rlaudit.changes.trees import (
    GIT_TIMEOUT,
    Tree,
    decode_text,
    dir_listing,
    git,
    is_doc,
    list_files,
    read_file,
)
from rlaudit.engine.git import run_git

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
    out = decode_text(git(root, "log", "-1", "--format=%P%x00%an%x00%aI%x00%s", sha)).rstrip("\n")
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
    shas = decode_text(git(root, "rev-list", "--first-parent", "--reverse", f"{base}..{head}")).split()
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
    return str(Path(decode_text(out)).resolve()) if out else ""


def plan(baseline: Any, candidate: Any) -> tuple[Tree, Tree, str] | str:
    """The two trees to compare for a pair of subject specs, or why the pair has no change set.

    Args:
        baseline, candidate: :class:`rlaudit.engine.subjects.SubjectSpec` (or spec strings).

    Returns:
        ``(baseline tree, candidate tree, kind)``, or a sentence saying why there is nothing to search (a
        built-in subject, two unrelated projects, two repositories).
    """
    from rlaudit.engine.subjects import SubjectSpec, parse_spec

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
        common = {p for p in dir_listing(str(a.parent)) if p.endswith(".py")} & {
            p for p in dir_listing(str(b.parent)) if p.endswith(".py")
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
