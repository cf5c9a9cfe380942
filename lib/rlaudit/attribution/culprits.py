"""What the change search found: each culprit (a hunk, or hunks that matter only together) with its commit,
place and shares of each gap, and the whole result with what the search spent."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from rlaudit.attribution.arms import Effect
from rlaudit.changes.changeset import ChangeSet, Commit
from rlaudit.changes.hunks import Hunk

# ------------------------------------------------------------------------------------------------------------
# Results
# ------------------------------------------------------------------------------------------------------------


@dataclass
class Culprit:
    """One change that explains a share of a gap: a hunk, or hunks that matter only together.

    Attributes:
        hunks: The hunks (one, or several that only matter or only run together).
        commit: The commit that made them (None without history).
        arm: The arm that reverts them.
        effects: Metric -> the share of the gap reverting them restores.
        reproduced: Metric -> the share applying them alone to the baseline reproduces (the reverse check).
        together: Metric -> the share it reproduces applied together with its ``partners`` (found when alone it
            reproduces less than ``delta``: the regression needs them together).
        partners: The other hunks the regression needs (from the same commits), for ``together``.
        needs: Hunks it does not run without (a helper it calls, an attribute it reads): the reverse check
            applies them with it.
        scope: The hunks searched with it (its commits' hunks).
        frame: ``(base, frame)``: the tree it is reverted from and the arm its share is measured against.
        verdict: ``"cause"``, ``"minor"`` or ``"undecided"`` (on its strongest metric).
        note: What the reader should know (``"only imports with ..."``, ``"matters only together"``).
    """

    hunks: list[Hunk]
    commit: Commit | None
    arm: str
    effects: dict[str, Effect] = field(default_factory=dict)
    reproduced: dict[str, Effect] = field(default_factory=dict)
    together: dict[str, Effect] = field(default_factory=dict)
    verdict: str = "undecided"
    note: str = ""
    partners: list[Hunk] = field(default_factory=list)
    needs: list[Hunk] = field(default_factory=list)
    scope: list[Hunk] = field(default_factory=list, repr=False)
    frame: tuple[str, str] = ("candidate", "candidate")

    @property
    def name(self) -> str:
        """``"<short commit>:<path>:<function> @@ -a,b +c,d @@"`` (and ``+ n more`` for a group)."""
        h = self.hunks[0]
        where = f"{h.path}:{h.function}" if h.function else h.path
        head = f"{h.short_commit + ' ' if h.commit else ''}{where} {h.header}"
        return head + (f" (+ {len(self.hunks) - 1} more)" if len(self.hunks) > 1 else "")

    @property
    def applied(self) -> list[Hunk]:
        """What its reverse check applies to the baseline: its hunks and those it needs to run."""
        return [*self.hunks, *self.needs]

    @property
    def subsystem(self) -> str:
        subs = [h.subsystem for h in self.hunks if h.subsystem]
        return max(subs, key=subs.count) if subs else ""

    def diff(self) -> str:
        """The hunks as ``git diff`` prints them."""
        return "".join(h.text() for h in self.hunks)

    def changes(self) -> list[dict[str, str]]:
        """``{commit, path, hunk, function}`` per hunk (``hunk``: the ``@@ -a,b +c,d @@`` header)."""
        return [
            {"commit": h.commit, "path": h.path, "hunk": h.header, "function": h.where} for h in self.hunks
        ]

    def best(self) -> float:
        return max((e.point for e in self.effects.values()), default=-math.inf)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "commit": self.commit.sha if self.commit else "",
            "commit_subject": self.commit.subject if self.commit else "",
            "subsystem": self.subsystem,
            "arm": self.arm,
            "verdict": self.verdict,
            "note": self.note,
            "changes": self.changes(),
            "hunks": [h.id for h in self.hunks],
            "diff": self.diff(),
            "effects": {m: asdict(e) for m, e in self.effects.items()},
            "reproduced": {m: asdict(e) for m, e in self.reproduced.items()},
            "together": {m: asdict(e) for m, e in self.together.items()},
        }


@dataclass
class ChangeResult:
    """What the change search found and what it cost.

    Attributes:
        change_set: The change set searched.
        metrics: The metrics attributed (the primary metric's name, then ``"sps"``).
        active: The metrics with a measurable gap.
        gaps: Per metric: baseline and candidate means, how much worse (``worse_by`` with ``low``..``high``),
            ``measurable``.
        commits: One row per commit: its verdict (``culprit``, ``cleared``, ``unclear``, ``unresolved``,
            ``not searched``), prior, and the range that decided it.
        ranges: Every commit range decided: ``first``..``last`` (1-based), ``effects`` per metric, ``verdict``.
        culprits: Strongest first (the primary metric's causes, then throughput's, then minor and undecided).
        arms: Every arm: name, kind, hunks, seeds, measured values, ``unresolved``, and its shares.
        unresolved: Hybrids or checkouts that could not be built or run: ``arm``, ``hunks``, ``reason``.
        spent: Runs (cached included), and a per-commit and a per-hunk sweep at ``max_seeds`` for comparison.
        log: What ran and why, in order.
        notes: Sentences for the summary.
    """

    change_set: ChangeSet
    metrics: list[str]
    active: list[str]
    gaps: dict[str, dict[str, Any]]
    commits: list[dict[str, Any]]
    ranges: list[dict[str, Any]]
    culprits: list[Culprit]
    arms: list[dict[str, Any]]
    unresolved: list[dict[str, Any]]
    spent: dict[str, Any]
    log: list[str]
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "change_set": self.change_set.to_dict(),
            "metrics": self.metrics,
            "active": self.active,
            "gaps": self.gaps,
            "commits": self.commits,
            "ranges": self.ranges,
            "culprits": [c.to_dict() for c in self.culprits],
            "arms": self.arms,
            "unresolved": self.unresolved,
            "spent": self.spent,
            "log": self.log,
            "notes": self.notes,
        }


def first_line(error: Any) -> str:
    """The first line of an error (at most 300 characters), as a log or a note quotes it."""
    text = str(error) if error is not None else "failed"
    return text.strip().splitlines()[0][:300] if text.strip() else "failed"


def effects_text(effects: dict[str, dict[str, float]]) -> str:
    """Shares as a sentence: ``metric: 40% (10%..70%, 3 seeds); ...``, and why a share is no verdict where its
    runs were timed at too different loads (``incomparable``)."""
    if not effects:
        return "no share measured"
    return "; ".join(
        f"{m}: {e['point']:.0%} ({e['low']:.0%}..{e['high']:.0%}, {int(e['n'])} seed{'s' if e['n'] != 1 else ''})"
        + (f", {e['incomparable']}" if e.get("incomparable") else "")
        for m, e in effects.items()
    )
