"""The arms of the change search: a commit's checkout, or a hybrid subject with some hunks reverted from (or
applied to) a tree, and the targets that build them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlaudit.attribution.arms import Arm
from rlaudit.changes import hybrids
from rlaudit.changes.changeset import ChangeSet
from rlaudit.changes.hunks import Hunk
from rlaudit.changes.trees import Tree

# ------------------------------------------------------------------------------------------------------------
# Arms and targets
# ------------------------------------------------------------------------------------------------------------


@dataclass
class ChangeArm(Arm):
    """An arm of the change search: a commit's checkout, or a hybrid with hunks reverted or applied.

    Attributes:
        kind: ``"commit"`` (the checkout of a commit), ``"revert"`` (hunks reverted from ``base``) or
            ``"apply"`` (hunks applied to ``base``: the reverse check).
        base: The tree it starts from: ``"candidate"``, ``"baseline"`` or a commit hash.
        hunks: Ids of the hunks reverted or applied.
        frame: The arm its share is measured against (``"candidate"``; a commit's checkout when the hunks are
            reverted from that commit; ``"baseline"`` or a checkout for the reverse check).
        reproduce: The share is what the arm reproduces (frame minus arm) rather than restores.
        index: For a commit's checkout, the commit's position in the history (1 = the first after the
            baseline).
        unresolved: Why its subject could not be built or its runs failed (``""`` otherwise).
    """

    kind: str = "revert"
    base: str = "candidate"
    hunks: tuple[str, ...] = ()
    frame: str = "candidate"
    reproduce: bool = False
    index: int | None = None
    unresolved: str = ""


class Targets:
    """What each arm runs: commit checkouts as ``git:`` specs, hybrids materialized in the cache.

    Args:
        cs: The change set.
        baseline, candidate: The two sides' specs (hybrids run with the interpreter, requirements and
            environment of the side they start from); None gives bare specs (tests).
        root: Where hybrids are built (default ``<cache>/hybrids``).
    """

    def __init__(self, cs: ChangeSet, baseline: Any = None, candidate: Any = None, root: Any = None) -> None:
        self.cs = cs
        self.like = {"baseline": baseline, "candidate": candidate}
        self.root = root
        self.built: dict[str, hybrids.Hybrid] = {}

    def tree(self, base: str) -> Tree:
        if base == "baseline":
            return self.cs.baseline
        if base == "candidate":
            return self.cs.candidate
        c = self.cs.candidate
        return Tree("git", c.root, base, c.prefix, c.subject, base[:7])

    def commit(self, sha: str) -> Any:
        """The checkout of commit ``sha`` as a ``git:`` spec, run like the candidate."""
        from rlaudit.engine.subjects import parse_spec

        c = self.cs.candidate
        path = f"{c.prefix}/{c.subject}" if c.prefix else c.subject
        spec = parse_spec(f"git:{c.root}@{sha}:{path}", label=f"commit {sha[:7]}")
        like = self.like["candidate"]
        if like is None:
            return spec
        return spec.replace(
            python=like.python,
            requirements=like.requirements,
            system_site_packages=like.system_site_packages,
            env=dict(like.env),
        )

    def hybrid(self, base: str, hunks: Sequence[Hunk], *, reverse: bool, label: str) -> tuple[Any, str]:
        """``(spec, "")`` of ``base`` with ``hunks`` reverted (or applied), or ``(None, why)`` when it cannot be
        built."""
        stages = hybrids.stages_for(self.cs, hunks, reverse=reverse)
        built = hybrids.materialize(self.tree(base), stages, root=self.root)
        self.built[built.key] = built
        if not built.ok:
            return None, built.unresolved
        side = "baseline" if base == "baseline" else "candidate"
        return built.spec(self.like[side], label=label), ""

    def applies(self, base: str, hunks: Sequence[Hunk], *, reverse: bool) -> str:
        """Why ``hunks`` do not each apply alone to ``base`` (``""`` when every one does)."""
        tree = self.tree(base)
        for h in hunks:
            why = hybrids.check(tree, [h], reverse=reverse)
            if why:
                return why
        return ""
