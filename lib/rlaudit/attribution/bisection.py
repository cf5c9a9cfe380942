"""Bisection: which commits, then which hunks, explain each gap, and how much of it.

A strategy of the attribution engine (:class:`rlaudit.attribution.engine.Engine`), as the screening is: the
same arms (training runs over shared seeds), the same shares of each gap (the primary metric, and steps per second as
CPU time per step) with intervals that pool run-to-run noise over all arms and account for every view the
search tried (Holm, :func:`rlaudit.stats.fractions_restored_holm`), the same decisions (a share *matters* when
its interval is above zero and its point reaches ``delta``; it is *cleared* when its interval is below
``delta``) and the same rule for seeds (an arm starts with one and gains more only while an interval straddles
``delta`` and more seeds could settle it). What it adds:

**Commits first: a noisy bisection with priors.** Every commit of the history is a real subject (the
``git:`` ref at that commit), and the checkout of commit ``j`` is the candidate with commits ``j+1..N``
undone. So the share of the gap that commits ``i+1..j`` explain is the difference of two checkouts,
``share(c_i) - share(c_j)``, measured as one paired contrast with the same pooled interval (a *view*: two
arms compared seed by seed). Starting from the whole range (the baseline against the candidate), a range that
matters is split where its commits' priors (their hunks' subsystems weighed by the audits' evidence) balance,
one checkout measured per split (two when a single range is left and there are two cores); a range that is
cleared is dropped whole; seeds are added to a range's endpoints only while its interval straddles ``delta``.
Several culprit commits come out when several ranges keep mattering (a learning regression in one commit, a
throughput regression in another). A checkout that does not import or run is *unresolved*, like ``git bisect
skip``: the range is split elsewhere, or, when nothing is left to split on, its commits are searched together.

**Then hunks: group testing with ddmin-style isolation.** Inside each culprit commit (or the whole diff without
history), the hunks, strongest prior first, are reverted from the candidate in groups (one hybrid subject per
group, :mod:`rlaudit.changes.hybrids`): a group that matters is halved, a half that measurably does not matter
lets its sibling be inferred to matter (halved again without a run), a group that does not matter is dropped
whole. A hybrid that cannot be built, does not import, crashes or produces NaN is unresolved (recorded, never a
crash): the hunks it separated that name each other (a function renamed in one, called in the other) are
merged into one unit and the group split again, or the group is split finer (delta debugging's increase of
granularity). When the hunks found do not add up to their commit's share, what is left is reverted together and
reduced ddmin-style (drop a part while the rest still matters) to the smallest group that matters only
together. Where a culprit commit's hunks no longer apply to the candidate (a later commit rewrote their lines),
they are reverted from the commit itself and compared with its checkout.

**The answer.** Per culprit (a hunk, or hunks that matter only together): its commit, file, function and
``@@ -a,b +c,d @@`` header, the share of each gap reverting it restores (interval), the share applying it alone
to the baseline reproduces (the reverse check; when culprits only reproduce the gap together, the share they
reproduce together), and what the search spent against a per-commit and a per-hunk sweep at ``max_seeds``.

Assumptions, as for group testing: shares of a range of commits or a group of hunks add up, so a range whose
share is below ``delta`` holds no culprit; two changes whose effects cancel exactly would be missed.

This module is the strategy alone (one class): its three phases (commits, hunks, reverse checks) share the
views and the culprits, and each phase reads what the previous one decided, so they are kept as the methods of
one object read in order. What it builds on lives beside it: the engine (arms, budget, seeds, pooled
intervals), :class:`~rlaudit.attribution.arms.ChangeArm` (its arms), :mod:`rlaudit.changes.targets` (the
subjects behind them), :mod:`~rlaudit.attribution.grouping` (units of hunks) and
:mod:`~rlaudit.attribution.culprits` (culprits and the result).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from rlaudit.attribution.arms import SIDES, Arm, ChangeArm, Effect, attribution_scale
from rlaudit.attribution.culprits import ChangeResult, Culprit, effects_text, first_line
from rlaudit.attribution.engine import Engine, Runs
from rlaudit.attribution.grouping import chunks, components, connected, flat, halves, label
from rlaudit.changes.changeset import ChangeSet
from rlaudit.changes.hunks import Hunk
from rlaudit.changes.scopes import linked
from rlaudit.changes.targets import Targets

LONG_RANGE = 6  # split points in a range from which a spare core measures a second checkout
TRANSIENT = ("timeout", "crash", "protocol")  # run failures that may be the machine's, not the subject's


# ------------------------------------------------------------------------------------------------------------
# The search
# ------------------------------------------------------------------------------------------------------------


class Bisection:
    """Commit bisection, then hunk isolation, a strategy of the attribution engine.

    Its shares are *views*: the share of the gap between two arms (``share(top) - share(bottom)``, a contrast
    paired by seed); every arm is also a view of itself against the arm it is measured against (its frame).
    All views form one family of intervals.

    Args:
        engine: The engine it runs on (its workbench or runner, sizes and budget); it serves this strategy.
        cs: The change set, mapped and prioritized (:func:`rlaudit.changes.priors.map_all`).
        targets: Builds what arms run (default: :class:`~rlaudit.changes.targets.Targets` with the
            workbench's specs).
    """

    def __init__(self, engine: Engine, cs: ChangeSet, *, targets: Targets | None = None) -> None:
        self.engine = engine
        engine.strategy = self
        self.cs = cs
        if targets is None:
            specs = engine.wb.specs if engine.wb is not None else {}
            targets = Targets(cs, specs.get("baseline"), specs.get("candidate"))
        self.targets = targets
        self.hunk_by_id = cs.hunks()
        self.views: dict[str, tuple[str, str]] = {}
        self.failures: dict[str, str] = {}
        self.points: dict[int, Arm] = {}
        self.ranges: list[dict[str, Any]] = []
        self.commit_verdicts: dict[int, tuple[str, str]] = {}
        self.culprits: list[Culprit] = []
        self._injections: dict[tuple[str, ...], str] = {}

    # -- what the engine asks ----------------------------------------------------------------------------

    def checked(self, calls: Sequence[tuple[Arm, int]], runs: Runs) -> Runs:
        """Run again what timed out or lost its worker, and note the arms whose runs failed or produced NaN:
        they are unresolved."""
        out = list(runs)
        # a worker that timed out or died may have met a busy machine, not a broken subject: once more
        again = [
            i
            for i, (res, _) in enumerate(out)
            if getattr(getattr(res, "error", None), "kind", "") in TRANSIENT
        ]
        if again:
            self.engine.log.append(
                "ran again after a timeout or a lost worker: " + ", ".join(calls[i][0].name for i in again)
            )
            self.engine.runs_used += len(again)
            for i, retry in zip(again, self.engine.train([calls[i] for i in again]), strict=True):
                out[i] = retry
        for (arm, seed), (res, row) in zip(calls, out, strict=True):
            if arm.name in SIDES:
                continue
            reason = ""
            if res is not None and not getattr(res, "ok", True):
                error = getattr(res, "error", None) or getattr(res, "missing", None)
                reason = f"seed {seed} failed: {first_line(error)}"
            elif not math.isfinite(row.get(self.engine.metric.name, math.nan)):
                reason = f"seed {seed} produced no finite {self.engine.metric.name}"
            if reason and isinstance(arm, ChangeArm) and not arm.unresolved:
                arm.unresolved = reason
                self.failures[arm.name] = reason
        return out

    def paired(self, arm: Arm) -> Arm | None:
        """The arm a hybrid's share is measured against, when it is neither side (a commit's checkout): a
        contrast is paired by seed, so it grows with it."""
        if isinstance(arm, ChangeArm) and arm.frame not in SIDES:
            return self.engine.arms[arm.frame]
        return None

    def values(self, metric: str) -> dict[str, np.ndarray]:
        """Every view's values on ``metric``: a contrast ``top - bottom``, paired by seed, enters the pooled
        computation as the candidate plus that difference, so its share is ``share(top) - share(bottom)``.
        The views are one family: each interval accounts for every view the search tried (Holm). Views on an
        unresolved arm are left out."""
        c = self.engine.base_arms()[1]
        vc = attribution_scale(metric, c.values(metric))
        arms = self.engine.arms
        values: dict[str, np.ndarray] = {}
        for name, (top, bottom) in self._all_views().items():
            if top not in arms or bottom not in arms:
                continue
            t = attribution_scale(metric, arms[top].values(metric))
            u = attribution_scale(metric, arms[bottom].values(metric))
            k = min(len(t), len(u), len(vc))
            if k == 0 or arms[top].unresolved or arms[bottom].unresolved:
                continue
            values[name] = vc[:k] + (t[:k] - u[:k])
        return values

    # -- views: shares measured as paired contrasts -----------------------------------------------------

    def view(self, name: str, top: str, bottom: str) -> str:
        """Register the share of the gap between arms ``top`` and ``bottom`` (``share(top) - share(bottom)``),
        as one more contrast in the pooled computation; returns its name."""
        if self.views.get(name) != (top, bottom):
            self.views[name] = (top, bottom)
            self.engine.invalidate()
        return name

    def rests_on(self, name: str) -> list[Arm]:
        """The arms a view's contrast is measured on besides the baseline and candidate (its top and bottom)."""
        top, bottom = self._all_views().get(name, (name, "candidate"))
        return [self.engine.arms[a] for a in (top, bottom) if a in self.engine.arms and a not in SIDES]

    def _all_views(self) -> dict[str, tuple[str, str]]:
        out = dict(self.views)
        for name, arm in self.engine.arms.items():
            if name in SIDES or name in out:
                continue
            if isinstance(arm, ChangeArm):
                out[name] = (arm.frame, name) if arm.reproduce else (name, arm.frame)
            else:
                out[name] = (name, "candidate")
        return out

    def effect_of(self, view: str, metric: str) -> Effect | None:
        return self.engine.effect(view, metric)

    def state(self, view: str) -> str:
        """``matters`` (on some metric with a gap), ``cleared`` (below ``delta`` on every one), ``undecided``
        (more seeds could settle it), ``unclear`` (they could not), or ``unresolved``."""
        effects = [self.effect_of(view, m) for m in self.engine.active_metrics]
        if any(e is None for e in effects):
            return "unresolved"
        if any(e.matters(self.engine.delta) for e in effects):
            return "matters"
        if all(e.below(self.engine.delta) for e in effects):
            return "cleared"
        if all(e.decided(self.engine.delta) or self.engine.futile(e) for e in effects):
            return "unclear"
        return "undecided"

    # -- arms ------------------------------------------------------------------------------------------

    def commit_arm(self, index: int) -> Arm:
        """The checkout of the ``index``-th commit (0: the baseline, N: the candidate)."""
        n = len(self.cs.commits)
        if index == 0:
            return self.engine.base_arms()[0]
        if index == n:
            return self.engine.base_arms()[1]
        sha = self.cs.commits[index - 1].sha
        name = f"commit {sha[:7]}"
        if name not in self.engine.arms:
            self.engine.arms[name] = ChangeArm(
                name=name, target=self.targets.commit(sha), kind="commit", base=sha, index=index
            )
        return self.engine.arms[name]

    def hunk_arm(
        self, hunks: Sequence[Hunk], *, base: str = "candidate", frame: str = "candidate"
    ) -> ChangeArm:
        """The arm reverting ``hunks`` from ``base`` (measured against ``frame``)."""
        name = f"revert {label(hunks)}" + ("" if base == "candidate" else f" from {base[:7]}")
        return self._hybrid_arm(name, hunks, base=base, frame=frame, revert=True)

    def apply_arm(
        self, hunks: Sequence[Hunk], *, base: str = "baseline", frame: str = "baseline"
    ) -> ChangeArm:
        """The reverse check: ``hunks`` applied to ``base`` alone (its share: what it reproduces)."""
        name = f"apply {label(hunks)}" + ("" if base == "baseline" else f" onto {base[:7]}")
        return self._hybrid_arm(name, hunks, base=base, frame=frame, revert=False)

    def _hybrid_arm(
        self, name: str, hunks: Sequence[Hunk], *, base: str, frame: str, revert: bool
    ) -> ChangeArm:
        """The arm (made once per name) of the hybrid subject ``base`` with ``hunks`` reverted, or applied; a
        hybrid that cannot be built is unresolved from the start."""
        if name not in self.engine.arms:
            target, why = self.targets.hybrid(base, hunks, reverse=revert, label=name)
            arm = ChangeArm(
                name=name,
                target=target,
                kind="revert" if revert else "apply",
                base=base,
                hunks=tuple(sorted(h.id for h in hunks)),
                frame=frame,
                reproduce=not revert,
                unresolved=why,
            )
            self.engine.arms[name] = arm
            if why:
                self._unresolved(arm, why)
        return self.engine.arms[name]  # type: ignore[return-value]

    def _unresolved(self, arm: ChangeArm, why: str) -> None:
        self.failures[arm.name] = why
        self.engine.log.append(f"unresolved: {arm.name}: {why}")

    # -- 1. commits ------------------------------------------------------------------------------------

    def _range_view(self, i: int, j: int) -> str:
        commits = self.cs.commits
        name = (
            f"commit {commits[j - 1].short}"
            if j - i == 1
            else f"commits {commits[i].short}..{commits[j - 1].short}"
        )
        return self.view(f"range {name}", self.points[i].name, self.points[j].name)

    def _split_points(self, i: int, j: int, allowed: Sequence[int], k: int) -> list[int]:
        """Up to ``k`` checkouts inside range ``(i, j]`` that split its commits' prior mass most evenly."""
        commits = self.cs.commits
        priors = [max(commits[x - 1].prior, 0.0) for x in range(i + 1, j + 1)]
        total = sum(priors)
        floor = 0.05 * (total / len(priors)) if total > 0 else 1.0  # no commit is ruled out by its prior
        mass = np.cumsum([p + floor for p in priors])
        picked: list[int] = []
        for q in range(1, k + 1):
            goal = mass[-1] * q / (k + 1)
            options = [m for m in allowed if m not in picked]
            if not options:
                break
            picked.append(min(options, key=lambda m: (abs(mass[m - i - 1] - goal), m)))
        return sorted(picked)

    def bisect(self) -> list[tuple[int, int]]:
        """Find the commit ranges that matter, down to single commits where checkouts allow.

        Returns:
            The culprit ranges ``(i, j)`` (commits ``i+1..j``; one commit when ``j == i + 1``), in history order.
        """
        n = len(self.cs.commits)
        self.points = {0: self.commit_arm(0), n: self.commit_arm(n)}
        if n == 1:
            self.commit_verdicts[1] = ("culprit", "the only commit")
            return [(0, 1)]
        bad: set[int] = set()
        final: dict[tuple[int, int], str] = {}
        culprits: list[tuple[int, int]] = []
        while True:
            marks = sorted(self.points)
            split: list[tuple[int, int, list[int]]] = []
            grow: dict[str, Arm] = {}
            for i, j in itertools.pairwise(marks):
                if (i, j) in final:
                    continue
                view = self._range_view(i, j)
                state = self.state(view)
                allowed = [m for m in range(i + 1, j) if m not in bad]
                if state == "matters" and j - i == 1:
                    self._decide(i, j, view, "culprit", final)
                    culprits.append((i, j))
                elif state == "matters" and not allowed:
                    self._decide(i, j, view, "culprit (cannot be split: checkouts inside do not run)", final)
                    culprits.append((i, j))
                elif state == "matters":
                    split.append((i, j, allowed))
                elif state == "cleared":
                    self._decide(i, j, view, "cleared", final)
                elif state == "undecided":
                    ends = [self.points[x] for x in (i, j) if x not in (0, n)]
                    ends = [a for a in ends if a.n < self.engine.max_seeds]
                    if ends:
                        grow.update({a.name: a for a in ends})
                    else:
                        self._decide(i, j, view, "unclear", final)
                else:
                    self._decide(i, j, view, state, final)
            if not split and not grow:
                break
            # one checkout per range; a spare core takes a second one in a long range (trisection), where it
            # saves a round without costing runs a bisection would not spend anyway
            spare = max(0, self.engine.batch - len(grow) - len(split))
            new: list[tuple[int, Arm]] = []
            for pos, (i, j, allowed) in enumerate(sorted(split, key=lambda s: -(s[1] - s[0]))):
                k = 1 + (spare if pos == 0 and len(allowed) >= LONG_RANGE else 0)
                for m in self._split_points(i, j, allowed, min(k, len(allowed))):
                    new.append((m, self.commit_arm(m)))
            needed = len(new) * self.engine.seeds0 + len(grow)
            if self.engine.runs_used + needed > self.engine.budget:
                self.engine.notes.append(
                    "budget spent before the commit bisection finished; the ranges left are unclear"
                )
                for i, j in itertools.pairwise(marks):
                    if (i, j) not in final:
                        self._decide(i, j, self._range_view(i, j), "unclear (budget)", final)
                break
            if new:
                self.engine.log.append(
                    "commit bisection: checkouts "
                    + ", ".join(f"{a.name} (after {m} of {n} commits)" for m, a in new)
                    + (f"; one more seed for {', '.join(grow)}" if grow else "")
                )
            elif grow:
                self.engine.log.append(
                    f"commit bisection: one more seed for {', '.join(grow)} (a range straddles delta)"
                )
            targets: list[Arm] = [a for _, a in new]
            self.engine.grow(targets, self.engine.seeds0)
            self.engine.grow(list(grow.values()))
            for m, arm in new:
                if getattr(arm, "unresolved", ""):
                    bad.add(m)
                    self.commit_verdicts[m] = ("unresolved", arm.unresolved)  # type: ignore[attr-defined]
                    self.engine.log.append(f"unresolved checkout {arm.name} (skipped, like git bisect skip)")
                else:
                    self.points[m] = arm
        return sorted(culprits)

    def _decide(self, i: int, j: int, view: str, verdict: str, final: dict[tuple[int, int], str]) -> None:
        final[(i, j)] = verdict
        commits = self.cs.commits[i:j]
        effects = {
            m: asdict(e) for m in self.engine.active_metrics if (e := self.effect_of(view, m)) is not None
        }
        self.ranges.append(
            {
                "first": i + 1,
                "last": j,
                "commits": [c.sha for c in commits],
                "view": view,
                "between": list(self.views[view]),
                "effects": effects,
                "verdict": verdict,
            }
        )
        for k in range(i + 1, j + 1):
            if self.commit_verdicts.get(k, ("",))[0] != "unresolved":
                self.commit_verdicts[k] = (verdict.split(" ")[0], view)
        self.engine.log.append(f"{view}: {verdict} ({effects_text(effects)})")

    # -- 2. hunks --------------------------------------------------------------------------------------

    def search_hunks(self, i: int, j: int) -> None:
        """Isolate the hunks of commits ``i+1..j`` (the whole diff without history) that explain their share."""
        commits = self.cs.commits[i:j]
        hunks = [h for c in commits for h in c.hunks] if self.cs.commits else list(self.cs.diff)
        where = ", ".join(c.short for c in commits) if commits else "the whole diff"
        if not hunks:
            self.engine.notes.append(f"{where}: no hunks to search (only documentation changed)")
            return
        base, frame = "candidate", "candidate"
        if commits:
            why = self.targets.applies("candidate", hunks, reverse=True)
            if why:
                base, frame = commits[-1].sha, self.points[j].name
                self.engine.log.append(
                    f"hunks of {where} reverted from {commits[-1].short} itself, not from the candidate ({why})"
                )
        anchor = (
            self._range_view(i, j) if self.cs.commits else self.view("range all", "baseline", "candidate")
        )
        order = sorted(hunks, key=lambda h: -h.prior)  # stable: ties keep their position in the diff
        units = [[h] for h in order]
        self.engine.log.append(f"hunk search in {where}: {len(hunks)} hunks, strongest prior first")
        found = self._group_test(units, base, frame, anchor)
        # a unit merged after an unresolved split may hold a hunk already found alone: the smaller one names it
        found = [
            u for u in found if not any(v is not u and {h.id for h in v} < {h.id for h in u} for v in found)
        ]
        self._together(units, found, base, frame, anchor)

    def _explains(self, arm: str, anchor: str) -> bool:
        """Reverting ``arm``'s hunks surely restores all of the ``anchor`` range's share (within ``delta``) on
        every metric where the range matters: the rest of its hunks cannot hold a meaningful share."""
        for m in self.engine.active_metrics:
            whole = self.effect_of(anchor, m)
            if whole is None or not whole.matters(self.engine.delta):
                continue
            part = self.effect_of(arm, m)
            if part is None or part.low < whole.point - self.engine.delta:
                return False
        return True

    def _contributes(self, view: str) -> bool:
        """Surely restores more than the minor floor (a quarter of ``delta``) on some metric with a gap."""
        return any(
            (e := self.effect_of(view, m)) is not None and e.contributes(self.engine.delta)
            for m in self.engine.active_metrics
        )

    def _group_test(self, units: list[list[Hunk]], base: str, frame: str, anchor: str) -> list[list[Hunk]]:
        """Group testing over ``units`` (lists of hunks that are reverted together), known to matter as a whole
        (the ``anchor`` range's share).

        A group that matters is halved; its sibling is measured, unless the group alone already restores the
        whole range's share (then the sibling cannot hold a meaningful share); a group that does not matter
        lets its sibling be inferred to matter. An unresolved group regroups hunks that name each other, or is
        split finer.

        Returns:
            The units found to matter on their own (as measured singles).
        """
        found: list[list[Hunk]] = []
        if len(units) == 1:
            work: list[tuple[list[list[Hunk]], list[list[Hunk]] | None, list[list[Hunk]] | None]] = [
                (units, None, None)
            ]
        else:
            first, second = halves(units)
            work = [(first, second, units)]
        tried: set[frozenset[frozenset[str]]] = set()
        while work:
            batch, work = work[: self.engine.batch], work[self.engine.batch :]
            arms = [self.hunk_arm(flat(g), base=base, frame=frame) for g, _, _ in batch]
            runnable = [a for a in arms if a.target is not None]
            if runnable:
                self.engine.log.append("group test: " + " | ".join(a.name for a in runnable))
                self.engine.evaluate(runnable)
            for (g, sibling, parent), arm in zip(batch, arms, strict=True):
                if arm.target is not None and arm.n == 0:
                    return found  # out of budget (evaluate noted it)
                state = "unresolved" if arm.unresolved else self.state(arm.name)
                if state == "matters":
                    if len(g) > 1:
                        a, b = halves(g)
                        work.append((a, b, g))
                    else:
                        found.append(g[0])
                elif state in ("unclear", "undecided") and len(g) == 1 and self._contributes(arm.name):
                    found.append(g[0])  # a small share, surely there: reported (as minor or undecided)
                elif state == "unresolved":
                    inside = {h.id for h in flat(g)}
                    named = [
                        h
                        for h in flat(parent or units)
                        if h.id not in inside and any(linked(h, x) for x in flat(g))
                    ]
                    found_ids = {h.id for u in found for h in u}
                    needs_found = bool(named) and all(h.id in found_ids for h in named)
                    regrouped = None if needs_found else self._regroup(g, parent or units)
                    if needs_found:
                        # it only runs with a culprit already found: its own share cannot be measured apart
                        self.engine.log.append(
                            f"{arm.name} needs {label(named)} (a culprit found) to run; not split further"
                        )
                    key = frozenset(frozenset(h.id for h in u) for u in regrouped) if regrouped else None
                    if regrouped is not None and key in tried:
                        continue  # the same regrouping is already under way
                    if regrouped is not None:
                        tried.add(key)
                        # hunks that name each other now form one unit: split the parent again, without them apart
                        a, b = halves(regrouped)
                        self.engine.log.append(
                            "regrouped after an unresolved hybrid (hunks that name each other stay together): "
                            + " | ".join(label(flat([u])) for u in regrouped if len(u) > 1)
                        )
                        work = [w for w in work if w[2] is not parent]
                        work.append((a, b, regrouped))
                        continue
                    if needs_found:
                        pass
                    elif len(g) > 1:
                        a, b = halves(g)
                        work.extend([(a, None, g), (b, None, g)])  # finer: measure both halves
                    else:
                        self.engine.log.append(
                            f"unresolved alone, and nothing it names lies outside it: {arm.name}"
                        )
                if not sibling:
                    continue
                if state == "matters" and self._explains(arm.name, anchor):
                    self.engine.log.append(
                        f"not needed (its sibling restores the whole share of {anchor.removeprefix('range ')}): "
                        + label(flat(sibling))
                    )
                    continue
                if state == "cleared" and len(sibling) > 1:
                    self.engine.log.append(
                        "inferred to matter (its sibling does not): " + label(flat(sibling))
                    )
                    a, b = halves(sibling)
                    work.append((a, b, sibling))
                else:
                    work.append((sibling, None, parent))
        return found

    def _regroup(self, group: list[list[Hunk]], parent: list[list[Hunk]]) -> list[list[Hunk]] | None:
        """``parent`` with every set of units that name each other (a rename and its callers: connected by
        :func:`~rlaudit.changes.scopes.linked`) merged into one unit, where such a set has units both inside
        and outside ``group`` (the split that broke the hybrid); None when there is none."""
        inside = {h.id for h in flat(group)}
        units = [list(u) for u in parent]
        sets = connected(len(units), lambda a, b: any(linked(x, y) for x in units[a] for y in units[b]))
        set_of = {i: members for members in sets for i in members}
        merged: list[list[Hunk]] = []
        done: set[int] = set()
        changed = False
        for i, unit in enumerate(units):
            if i in done:
                continue
            group_of = set_of[i]
            sides = {any(h.id in inside for h in units[k]) for k in group_of}
            if len(group_of) > 1 and sides == {True, False}:
                merged.append([h for k in group_of for h in units[k]])
                done.update(group_of)
                changed = True
            else:
                merged.append(unit)
                done.add(i)
        return merged if changed else None

    def _together(
        self, units: list[list[Hunk]], found: list[list[Hunk]], base: str, frame: str, anchor: str
    ) -> None:
        """Record the culprits found; when they do not add up to the share of their commits (``anchor``),
        revert what is left together and reduce it ddmin-style to the smallest group that matters only together."""
        for unit in found:
            self._add_culprit(unit, base, frame, scope=flat(units))
        found_arms = [self.hunk_arm(u, base=base, frame=frame).name for u in found]
        missing = []
        for m in self.engine.active_metrics:
            e = self.effect_of(anchor, m)
            if e is None or not e.matters(self.engine.delta):
                continue
            got = sum(
                x.low
                for a in found_arms
                if (x := self.effect_of(a, m)) is not None and x.contributes(self.engine.delta)
            )
            if got < e.point - self.engine.delta:
                missing.append(m)
        if not missing:
            return
        taken = {h.id for u in found for h in u}
        rest = [u for u in units if not any(h.id in taken for h in u)]
        if not rest:
            return
        why = f"the hunks found explain less than their commits' share of {', '.join(missing)}: the rest together"
        if not self._reverts_matter(rest, base, frame, why):
            where = anchor.removeprefix("range ")
            self.engine.notes.append(
                f"{where}, {', '.join(missing)}: the culprits found and the rest of its hunks reverted together do "
                "not add up to its share; its hunks interact"
            )
            return
        group = self._ddmin(
            rest, lambda part: self._reverts_matter(part, base, frame, "ddmin: reverted together")
        )
        self._add_culprit(flat(group), base, frame, note="matters only together", scope=flat(units))

    def _reverts_matter(self, units: list[list[Hunk]], base: str, frame: str, why: str) -> bool:
        """Reverting ``units`` together from ``base`` restores a share that matters (False when unresolved)."""
        arm = self.hunk_arm(flat(units), base=base, frame=frame)
        if arm.target is None:
            return False
        if arm.n == 0:
            self.engine.log.append(f"{why}: {arm.name}")
        self.engine.evaluate([arm])
        return not arm.unresolved and self.state(arm.name) == "matters"

    def _reproduces(self, hunks: Sequence[Hunk], metric: str, why: str) -> bool:
        """Applying ``hunks`` together to the baseline reproduces a share of ``metric``'s gap that matters."""
        arm = self._inject(hunks, why=why)
        if arm is None or arm.target is None or arm.unresolved:
            return False
        e = self.effect_of(arm.name, metric)
        return e is not None and e.matters(self.engine.delta)

    def _ddmin(self, units: list[list[Hunk]], holds: Callable[[list[list[Hunk]]], bool]) -> list[list[Hunk]]:
        """The smallest part of ``units`` for which ``holds`` still does: drop parts while it holds for the rest,
        splitting finer when no part can go (delta debugging's reduction to a 1-minimal set)."""
        current = list(units)
        n = 2
        while len(current) >= 2 and self.engine.runs_used + self.engine.seeds0 <= self.engine.budget:
            reduced = None
            for chunk in chunks(current, n):
                rest = [u for u in current if u not in chunk]
                if rest and holds(rest):
                    reduced = rest
                    break
            if reduced is not None:
                current, n = reduced, max(n - 1, 2)
            elif n >= len(current):
                break
            else:
                n = min(len(current), 2 * n)
        return current

    def _add_culprit(
        self, hunks: Sequence[Hunk], base: str, frame: str, note: str = "", scope: Sequence[Hunk] = ()
    ) -> Culprit:
        for c in self.culprits:
            if {h.id for h in c.hunks} == {h.id for h in hunks}:
                return c
        arm = self.hunk_arm(hunks, base=base, frame=frame)
        commit = self.cs.commit_of(hunks[0])
        if len(hunks) > 1 and not note:
            note = "hunks that only import or run together"
        culprit = Culprit(list(hunks), commit, arm.name, note=note)
        culprit.scope = list(scope) or list(hunks)
        culprit.frame = (base, frame)
        self.culprits.append(culprit)
        return culprit

    # -- 3. reverse checks and first places -----------------------------------------------------------

    def reverse_checks(self) -> None:
        """Apply each culprit alone to the baseline (to its commit's parent where it does not apply to the
        baseline), at ``seeds0`` seeds. A culprit that restores a share when reverted but reproduces less than
        ``delta`` alone needs other changes: the hunks searched with it are applied with it, and reduced
        ddmin-style to the partners it needs; a partner not yet a culprit becomes one (reverting it restores
        the gap too)."""
        for c in list(self.culprits):
            if self.engine.runs_used + self.engine.seeds0 > self.engine.budget:
                self.engine.notes.append(
                    "budget spent before every culprit could be applied alone to the baseline"
                )
                return
            arm = self._inject(
                c.hunks, why="reverse check (alone in the baseline: does it reproduce the gap?)"
            )
            if arm is not None and arm.unresolved:
                # it does not run without the hunks it names (a helper it calls, an attribute it reads)
                own = {x.id for x in c.hunks}
                needs = [h for u in components(c.scope) if {x.id for x in u} & own for h in u]
                c.needs = [h for h in needs if h.id not in own]
                if c.needs and self.engine.runs_used + self.engine.seeds0 <= self.engine.budget:
                    self._inject(c.applied, why="reverse check, with the hunks it needs to run")
        for c in list(self.culprits):
            for m in self.engine.active_metrics:
                restores = self.effect_of(c.arm, m)
                alone = self.effect_of(self._inject_name(c.applied), m)
                if (
                    restores is None
                    or alone is None
                    or not restores.matters(self.engine.delta)
                    or alone.high >= self.engine.delta
                ):
                    continue
                self._partners(c, m)

    def _partners(self, c: Culprit, metric: str) -> None:
        """Find the hunks ``c`` needs to reproduce ``metric``'s gap (it reproduces little alone)."""
        base_set = c.applied
        own = {h.id for h in base_set}
        others = [h for h in c.scope if h.id not in own]
        if not others or self.engine.runs_used + self.engine.seeds0 > self.engine.budget:
            return
        units = components(others)  # hunks that name each other are applied together, or they do not import
        why = f"{metric}: {label(c.hunks)} reproduces little alone; applied with the hunks searched with it"
        if not self._reproduces([*base_set, *flat(units)], metric, why):
            self.engine.notes.append(
                f"{metric}: {c.name} restores a share when reverted but does not reproduce it in the baseline, "
                "even with the other hunks of its commits: it needs changes from elsewhere"
            )
            return
        need = self._ddmin(
            units, lambda part: self._reproduces([*base_set, *flat(part)], metric, "ddmin: applied together")
        )
        c.partners = flat(need)
        together = self._inject([*base_set, *c.partners])
        if together is not None and (e := self.effect_of(together.name, metric)) is not None:
            c.together[metric] = e
        c.note = (c.note + "; " if c.note else "") + "reproduces the gap only with " + label(c.partners)
        base, frame = c.frame
        for unit in need:
            partner = self._add_culprit(unit, base, frame, scope=c.scope)
            if partner is c:
                continue
            arm = self.engine.arms[partner.arm]
            if arm.n == 0 and arm.target is not None:
                self.engine.log.append(f"{metric}: the partner reverted alone: {arm.name}")
                self.engine.evaluate([arm])
            self._inject(partner.hunks, why=f"{metric}: the partner alone in the baseline")
            partner.partners = list(base_set)
            if together is not None and (e := self.effect_of(together.name, metric)) is not None:
                partner.together[metric] = e
            if "reproduces the gap only with" not in partner.note:
                partner.note = (
                    (partner.note + "; " if partner.note else "")
                    + "reproduces the gap only with "
                    + label(c.hunks)
                )

    def _inject_name(self, hunks: Sequence[Hunk]) -> str:
        return self._injections.get(tuple(sorted(h.id for h in hunks)), "")

    def _inject(self, hunks: Sequence[Hunk], why: str = "applied to the baseline") -> ChangeArm | None:
        """The arm applying ``hunks`` alone to the baseline (or to their commit's parent), run at ``seeds0``."""
        ids = tuple(sorted(h.id for h in hunks))
        if ids in self._injections:
            return self.engine.arms[self._injections[ids]]  # type: ignore[return-value]
        base, frame = "baseline", "baseline"
        commit = self.cs.commit_of(hunks[0])
        if commit is not None and self.targets.applies("baseline", hunks, reverse=False):
            # an earlier commit rewrote their context: apply them to their own commit's parent instead
            k = self.cs.commits.index(commit)
            base, frame = commit.parent, self.commit_arm(k).name
        arm = self.apply_arm(hunks, base=base, frame=frame)
        self._injections[ids] = arm.name
        if arm.target is not None and arm.n == 0:
            if self.engine.runs_used + self.engine.seeds0 > self.engine.budget:
                self.engine.notes.append(f"budget spent before {arm.name} could run")
                return arm
            self.engine.log.append(f"{why}: {arm.name}")
            self.engine.grow([arm], self.engine.seeds0)
        return arm

    def confirm_first_places(self) -> None:
        """The culprit ranked first on each metric gains seeds until it rests on two and its interval clears the
        runner-up's (both grow while they overlap), as for the screening's first places."""
        while True:
            grow: dict[str, Arm] = {}
            for m in self.engine.active_metrics:
                ranked = sorted(
                    ((e, c) for c in self.culprits if (e := self.effect_of(c.arm, m)) is not None),
                    key=lambda t: -t[0].point,
                )
                if not ranked or not ranked[0][0].matters(self.engine.delta):
                    continue
                top = self.engine.arms[ranked[0][1].arm]
                if top.n < 2:
                    grow[top.name] = top
                partners = {h.id for h in ranked[0][1].partners}
                # partners are one cause (each restores it all when reverted): their order means nothing
                if len(ranked) > 1 and partners & {h.id for h in ranked[1][1].hunks}:
                    continue
                if len(ranked) > 1 and ranked[1][0].high >= ranked[0][0].low:
                    second = self.engine.arms[ranked[1][1].arm]
                    grow.update({top.name: top, second.name: second})
            pending = [a for a in grow.values() if a.n < self.engine.max_seeds]
            if not pending or self.engine.runs_used + len(pending) > self.engine.budget:
                return
            self.engine.log.append("one more seed for a first place: " + ", ".join(a.name for a in pending))
            self.engine.grow(pending)

    # -- the whole search ------------------------------------------------------------------------------

    def run(self) -> ChangeResult:
        """Commits (bisection), then hunks (group testing) inside each culprit range, reverse checks, first
        places; returns the result."""
        self.engine.measure_gaps()
        for m in self.engine.metrics:
            if not self.engine.gap_known[m]:
                self.engine.notes.append(self.engine.gap_note(m))
        if self.engine.active_metrics and (self.cs.commits or self.cs.diff):
            ranges = self.bisect() if self.cs.commits else [(0, 0)]
            for i, j in ranges:
                self.search_hunks(i, j)
            self.reverse_checks()
            self.confirm_first_places()
        return self.result()

    def result(self) -> ChangeResult:
        metrics = list(self.engine.metrics)
        active = list(self.engine.active_metrics)
        for c in self.culprits:
            c.effects = {m: e for m in active if (e := self.effect_of(c.arm, m)) is not None}
            inj = self._inject_name(c.applied)
            c.reproduced = {m: e for m in active if inj and (e := self.effect_of(inj, m)) is not None}
            verdicts = [e.verdict(self.engine.delta) for e in c.effects.values()]
            c.verdict = next((v for v in ("cause", "minor", "undecided") if v in verdicts), "no effect")
        primary = self.engine.metric.name

        def rank(c: Culprit) -> tuple[int, int, float]:
            order = {"cause": 0, "minor": 1, "undecided": 2}.get(c.verdict, 3)
            e = c.effects.get(primary)
            on_primary = e is not None and e.matters(self.engine.delta)
            return (order, 0 if on_primary else 1, -(e.point if on_primary and e else c.best()))

        self.culprits.sort(key=rank)
        gaps = {m: self.engine.gap_summary(m) for m in metrics}
        commits = []
        for k, commit in enumerate(self.cs.commits, start=1):
            verdict, why = self.commit_verdicts.get(k, ("not searched", ""))
            commits.append(
                {
                    "index": k,
                    "sha": commit.sha,
                    "subject": commit.subject,
                    "prior": commit.prior,
                    "hunks": len(commit.hunks),
                    "verdict": verdict,
                    "decided_by": why,
                    "checkout": f"commit {commit.short}"
                    if f"commit {commit.short}" in self.engine.arms
                    else "",
                }
            )
        arms = []
        views = self._all_views()
        for name, arm in self.engine.arms.items():
            row = {
                "name": name,
                "kind": getattr(arm, "kind", "side"),
                "target": str(arm.target) if arm.target is not None else None,
                "hunks": list(getattr(arm, "hunks", ())),
                "frame": getattr(arm, "frame", ""),
                "seeds": arm.n,
                "measured": arm.measured,
                "unresolved": getattr(arm, "unresolved", ""),
                "errors": arm.errors(),
                "effects": {
                    m: asdict(e)
                    for m in active
                    if name in views and (e := self.effect_of(name, m)) is not None
                },
            }
            arms.append(row)
        hunks_searched = len(self.cs.searched)
        n_commits = len(self.cs.commits)
        base_runs = 2 * self.engine.max_seeds
        variant_runs = sum(a.n for k, a in self.engine.arms.items() if k not in SIDES)
        spent = {
            **self.engine.spent(variant_runs),
            "seeds_per_arm_max": self.engine.max_seeds,
            "commits": n_commits,
            "hunks": hunks_searched,
            "per_commit_sweep_runs": (n_commits + 2) * self.engine.max_seeds if n_commits else None,
            "per_hunk_sweep_runs": hunks_searched * self.engine.max_seeds + base_runs,
            "per_hunk_sweep_variant_runs": hunks_searched * self.engine.max_seeds,
            "share_of_per_hunk_sweep": self.engine.runs_used
            / max(1, hunks_searched * self.engine.max_seeds + base_runs),
            "unresolved_arms": sum(1 for a in self.engine.arms.values() if getattr(a, "unresolved", "")),
        }
        return ChangeResult(
            change_set=self.cs,
            metrics=metrics,
            active=active,
            gaps=gaps,
            commits=commits,
            ranges=self.ranges,
            culprits=self.culprits,
            arms=arms,
            unresolved=[
                {"arm": a.name, "kind": a.kind, "hunks": list(a.hunks), "reason": a.unresolved}
                for a in self.engine.arms.values()
                if isinstance(a, ChangeArm) and a.unresolved
            ],
            spent=spent,
            log=self.engine.log,
            notes=self.engine.notes,
        )
