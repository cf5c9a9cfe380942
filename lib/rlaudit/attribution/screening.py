"""Screening: which suspects explain the gap between baseline and candidate, measured, with intervals.

Audits list differences; this strategy proposes the experiments that turn suspects into causes, and runs them
on the attribution engine (:class:`~rlaudit.attribution.engine.Engine`: arms, budget, sequential seeds,
pooled intervals). A *suspect* (:mod:`rlaudit.attribution.suspects`) is a change that can be undone in the
candidate: one subsystem's config keys set back to the baseline's values (a *restore*, through the
candidate's own ``config(overrides=...)``), a fault removed from a built-in candidate (the built-in analog of a
fix commit), any named variant subject the user lists (a fix commit), or a code change between two versions of
one source (a culprit of :mod:`rlaudit.attribution.bisection`). Every arm trains on the same seeds as the
baseline and the candidate, and for each arm and each metric (the pair's primary metric, ``wb.metric``, and
steps per second) the engine measures the fraction of the gap it restores,
``(variant - candidate) / (baseline - candidate)``, with a bootstrap interval paired by seed. The fraction
reads the same whichever direction is better (a loss that rose from 1.0 to 3.0 and a variant at 1.5 restore
75%); a gap is attributed only where the candidate is measurably worse. Throughput is split as CPU time per
step, where costs add (:func:`~rlaudit.attribution.arms.attribution_scale`).

A full one-factor sweep (every suspect alone, many seeds) is what a careful human would do and costs the most.
The screening spends less (case 003's protocol, automated; :class:`Screening` has the details):

- **Audit evidence first**: suspects whose subsystem holds a CONFIRMED or SUSPECT mechanism finding (a
  symptom such as the learning gap itself points at no subsystem) are restored one at a time, strongest
  evidence first (:func:`~rlaudit.attribution.ranking.audit_priors`), two at a time (two cores), until the
  causes found add up to every gap.
- **Interactions**: the causes found are then restored together. If together they close every gap, the
  suspects not yet tried are not needed to explain it and are left unmeasured (and said so); when the singles
  do not add up to the whole, the summary says so.
- **Group testing** (delta debugging with a statistical oracle) for everything else: the remaining suspects
  are restored as one group; a group that matters is halved (a half whose sibling measurably does not matter
  is inferred to matter and halved again without a run), a group that does not is cleared whole.
- **Sequential allocation** (the engine's): every arm starts with ``seeds0`` seeds (one); seeds are added only
  where an interval still straddles a decision (restores a meaningful share ``delta`` or not) that more seeds
  could settle and the search still needs it, and to the first place of each ranking until it rests on two
  seeds and clears the runner-up. Intervals pool the run-to-run noise of all arms
  (:func:`rlaudit.stats.fractions_restored_pooled`; the baseline and candidate bring ``max_seeds`` each), so
  a one- or two-seed arm gets an honest interval instead of the span of the values it saw.

The budget (training runs) comes from the profile; the result records what was spent and what the full
one-factor sweep at the same seed count would have cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from rlaudit.attribution.arms import OVERLAP_MARGIN, SIDES, Arm, Attribution, Effect, attribution_scale
from rlaudit.attribution.engine import Engine, Runs
from rlaudit.attribution.ranking import STRONG_PRIOR
from rlaudit.attribution.suspects import Suspect, compose, compose_injection


class Screening:
    """Prior-guided screening of suspects, a strategy of the attribution engine.

    The order of work (each step one parallel batch of ``batch`` arms, the number of jobs):

    1. Baseline and candidate at ``max_seeds`` (usually cached: the trainer audit ran the same runs;
       :meth:`Engine.measure_gaps <rlaudit.attribution.engine.Engine.measure_gaps>`).
    2. Suspects the audits flagged strongly (a CONFIRMED or SUSPECT mechanism: ``prior >= strong_prior``) are
       restored one at a time, strongest evidence first, until the singles explain every gap (the lower
       bounds of their shares add up to ``1 - delta``).
    3. The causes and smaller contributors found are restored together (the interaction check), beside the
       reverse check of the primary cause (its change alone in the baseline). If together they close every
       gap, the suspects not yet tried are not needed to explain it and stay unmeasured.
    4. Otherwise the remaining suspects are screened as one group (group testing); a group that matters is
       halved until its causes are isolated, a group that does not is cleared whole.
    5. The first place of each metric's ranking gains seeds until it rests on two and its interval clears the
       runner-up's (both grow while they overlap).

    Every arm's share is measured against the candidate; the arms restoring suspects form one family of
    intervals, the reverse checks (injections) another.

    Args:
        engine: The engine it runs on (its workbench or runner, sizes and budget); it serves this strategy.
        suspects: From :func:`~rlaudit.attribution.suspects.gather_suspects`, strongest audit evidence
            first.
        strong_prior: Audit evidence from which a suspect is tried on its own rather than in a group.
    """

    def __init__(
        self, engine: Engine, suspects: Sequence[Suspect], *, strong_prior: float = STRONG_PRIOR
    ) -> None:
        self.engine = engine
        engine.strategy = self
        self.suspects = list(suspects)
        self.strong_prior = strong_prior
        self.injections: dict[str, Arm] = {}

    # -- what the engine asks ----------------------------------------------------------------------------

    def values(self, metric: str) -> dict[str, np.ndarray]:
        """Every arm restoring suspects, by name: its own values (its share is measured against the
        candidate)."""
        return self._scaled(metric, {k: a for k, a in self.engine.arms.items() if k not in SIDES})

    @staticmethod
    def _scaled(metric: str, arms: dict[str, Arm]) -> dict[str, np.ndarray]:
        return {k: attribution_scale(metric, a.values(metric)) for k, a in arms.items() if a.n}

    def paired(self, arm: Arm) -> Arm | None:
        """None: every share is measured against the candidate."""
        return None

    def checked(self, calls: Sequence[tuple[Arm, int]], runs: Runs) -> Runs:
        """The runs as they came (a failed run is a failure of its arm, reported as such)."""
        return runs

    # -- arms ----------------------------------------------------------------------------------------------

    def arm(self, suspects: Sequence[Suspect]) -> Arm:
        order = {s.name: i for i, s in enumerate(self.suspects)}
        suspects = sorted(suspects, key=lambda s: order.get(s.name, len(order)))
        names = tuple(s.name for s in suspects)
        key = " + ".join(names)
        if key not in self.engine.arms:
            target, overrides = (
                compose(self.engine.wb.specs["candidate"], suspects)
                if self.engine.wb is not None
                else (key, ())
            )
            self.engine.arms[key] = Arm(name=key, target=target, overrides=overrides, suspects=names)
        return self.engine.arms[key]

    def reproduced(self, metric: str) -> dict[str, Effect]:
        """Per injected suspect: the share of ``metric``'s gap its change reproduces in the baseline alone,
        ``(baseline - injected) / (baseline - candidate)``: one minus the share it "restores"."""
        return {
            n: Effect(1.0 - e.point, 1.0 - e.high, 1.0 - e.low, e.n, e.level, e.family, e.incomparable)
            for n, e in self.engine.pooled(
                metric,
                self._scaled(metric, self.injections),
                {k: [a] for k, a in self.injections.items()},
            ).items()
        }

    # -- the search ------------------------------------------------------------------------------------

    def _cleared(self, arm: Arm) -> bool:
        """Measurably no share of any gap: a group that can be dropped whole."""
        effects = [self.effect(arm, m) for m in self.engine.active_metrics]
        return all(e is not None and e.below(self.engine.delta) for e in effects)

    def _fixes(self) -> list[Suspect]:
        """The composable singles worth restoring together: the causes, and the smaller contributors
        (:meth:`_contributors`) that together with them may close a gap."""
        names = {s.name for s in [*self._causes(), *self._contributors()]}
        return [s for s in self.suspects if s.name in names and s.composable]

    def _singles(self) -> list[tuple[Suspect, Arm]]:
        """Every suspect measured on its own, with its arm."""
        by_name = {s.name: s for s in self.suspects}
        return [
            (by_name[a.suspects[0]], a)
            for a in self.engine.arms.values()
            if len(a.suspects) == 1 and a.suspects[0] in by_name and a.n
        ]

    def _ranked(self, metric: str) -> list[tuple[Effect, Suspect, Arm]]:
        """The singles measured on ``metric``, largest share first."""
        rows = [(e, s, a) for s, a in self._singles() if (e := self.effect(a, metric)) is not None]
        return sorted(rows, key=lambda row: -row[0].point)

    def _causes(self) -> list[Suspect]:
        return [s for s, a in self._singles() if self.engine.matters(a.name)]

    def _contributors(self) -> list[Suspect]:
        """Singles measured to restore some share of a gap (interval above :func:`~rlaudit.attribution.arms.minor_floor`), causes or
        not: an effect below ``delta`` still counts towards explaining a gap."""
        return [
            s
            for s, a in self._singles()
            if any(
                (e := self.effect(a, m)) is not None and e.contributes(self.engine.delta)
                for m in self.engine.active_metrics
            )
        ]

    def _explained(self, causes: Sequence[Suspect]) -> bool:
        """The singles ``causes`` add up to the whole of every gap (within ``delta``), confidently: the sum
        of their lower bounds reaches ``1 - delta``, so what is left unexplained is below ``delta`` and no
        suspect left untried can hide a meaningful share (a point estimate just past the line would stop
        the search half the time when an untried suspect holds close to ``delta``)."""
        for m in self.engine.active_metrics:
            total = sum(
                e.low
                for s in causes
                if (e := self.effect(self.arm([s]), m)) is not None and e.contributes(self.engine.delta)
            )
            if total < 1.0 - self.engine.delta:
                return False
        return True

    def effect(self, arm: Arm, metric: str) -> Effect | None:
        """The share of ``metric``'s gap ``arm`` restores (None when not measured)."""
        return self.engine.effect(arm.name, metric)

    def run(self) -> Attribution:
        """The whole screening (see the class docstring); returns the attribution."""
        self.engine.measure_gaps()
        composable = [s for s in self.suspects if s.composable]
        variants = [s for s in self.suspects if not s.composable]
        if self.engine.active_metrics and self.suspects:
            self._screen(composable)
            for s in variants:
                if self.engine.runs_used + self.engine.seeds0 > self.engine.budget:
                    self.engine.notes.append(f"budget spent before variant {s.name!r} was tried")
                    break
                self.engine.evaluate([self.arm([s])])
            self._confirm_first_places()
            self._inject_primary_cause()
            self._restore_causes_together()
        return self._result()

    def _screen(self, suspects: list[Suspect]) -> None:
        if not suspects:
            return
        strong = [s for s in suspects if s.prior >= self.strong_prior]
        untested = list(suspects)
        # 2. singles of the strongest suspects, a batch at a time, until the causes explain every gap; seeds
        # are added later, and only if the causes found do not close the gaps together
        while strong and not self._explained(self._contributors()):
            batch, strong = strong[: self.engine.batch], strong[self.engine.batch :]
            self.engine.log.append(
                "alone (strong audit evidence; gaps not yet explained): " + ", ".join(s.name for s in batch)
            )
            self.engine.evaluate([self.arm([s]) for s in batch], grow=False)
            untested = [s for s in untested if s not in batch]
        # 3. the causes together: if they close every gap, what is left is not needed to explain it. The
        # reverse check of the primary cause shares the batch (two cores).
        fixes = self._fixes()
        inject = self._injection_arm()
        if (
            len(fixes) >= 2
            and self.engine.runs_used + self.engine.seeds0 * (1 + bool(inject)) <= self.engine.budget
        ):
            together = self.arm(fixes)
            self.engine.log.append(
                "together (the causes and smaller contributors found; do they close every gap?): "
                + together.name
            )
            if inject is not None:
                self.engine.log.append(self._injection_log(inject))
            self.engine.grow([together, *([inject] if inject else [])], self.engine.seeds0)
            closed = self._closes(together)
        else:
            closed = len(fixes) == 1 and self._explained(fixes)
        if closed:
            if untested:
                self.engine.notes.append(
                    f"the causes found close every gap to within {self.engine.delta:.0%}; not measured, as not "
                    "needed to explain it (their audit evidence stands): "
                    + ", ".join(s.name for s in untested)
                )
            return
        # 4. otherwise: more seeds where a single is undecided, then group testing over what is left
        singles = [a for a in self.engine.arms.values() if len(a.suspects) == 1 and a.n]
        if singles:
            self.engine.log.append(
                "more seeds where a single is undecided (the causes found do not close the gaps)"
            )
            self.engine.evaluate(singles)
        if untested:
            self._split(untested)

    def _confirm_first_places(self) -> None:
        """Sequential allocation for the ranking itself: the single ranked first on a metric must rest on at
        least two seeds (its own run-to-run noise, not only the pooled one) and its interval must clear the
        runner-up's. Seeds go to the first and second place, one round at a time, until both hold, the arms
        reach ``max_seeds``, or the budget ends."""
        while True:
            grow: dict[str, Arm] = {}
            ties: list[str] = []
            for m in self.engine.active_metrics:
                ranked = self._ranked(m)
                if not ranked or not ranked[0][0].matters(self.engine.delta):
                    continue
                (top_e, _, top), rest = ranked[0], ranked[1:]
                if top.n < 2:
                    grow[top.name] = top
                if rest and rest[0][0].high >= top_e.low:
                    second = rest[0][2]
                    grow.update({top.name: top, second.name: second})
                    ties.append(f"{m}: {top.name} and {second.name}")
            pending = [a for a in grow.values() if a.n < self.engine.max_seeds]
            if not pending or self.engine.runs_used + len(pending) > self.engine.budget:
                self.engine.notes.extend(
                    f"{t}: the seeds cannot tell their shares apart, so which comes first is not established"
                    for t in ties
                )
                return
            self.engine.log.append(
                "one more seed for a first place (fewer than two seeds, or not yet clear of the runner-up): "
                + ", ".join(a.name for a in pending)
            )
            self.engine.grow(pending)

    def _injection_arm(self) -> Arm | None:
        """The reverse experiment for the primary cause, if it still needs running: the single ranked first
        on the primary metric (on SPS when only throughput has a gap), its change alone put into the
        baseline. A cause that restores the gap when undone and reproduces it when injected is confirmed
        from both sides; one that does only one of the two depends on the other changes."""
        ranked = self._ranked(self.engine.active_metrics[0]) if self.engine.active_metrics else []
        if not ranked:
            return None
        e, s, _ = ranked[0]
        if not s.injectable or not e.matters(self.engine.delta):
            return None
        if s.name not in self.injections:
            target, overrides = (
                compose_injection(self.engine.wb.specs["baseline"], s)
                if self.engine.wb is not None
                else (s.name, ())
            )
            self.injections[s.name] = Arm(
                name=f"inject {s.name}", target=target, overrides=overrides, injects=(s.name,)
            )
        arm = self.injections[s.name]
        return arm if arm.n < self.engine.seeds0 else None

    @staticmethod
    def _injection_log(arm: Arm) -> str:
        return f"injected into the baseline alone (does the primary cause reproduce the gap?): {arm.name}"

    def _inject_primary_cause(self) -> None:
        """Run the reverse experiment of the primary cause if the search has not yet (see
        :meth:`_injection_arm`)."""
        arm = self._injection_arm()
        if arm is None:
            return
        if self.engine.runs_used + self.engine.seeds0 > self.engine.budget:
            self.engine.notes.append(
                "budget spent before the primary cause could be injected into the baseline"
            )
            return
        self.engine.log.append(self._injection_log(arm))
        self.engine.grow([arm], self.engine.seeds0)

    def _closes(self, arm: Arm) -> bool:
        effects = [self.effect(arm, m) for m in self.engine.active_metrics]
        return all(
            e is not None and e.high >= 1.0 - self.engine.delta and e.low > self.engine.delta for e in effects
        )

    def _split(self, group: list[Suspect]) -> None:
        """Group testing (delta debugging with a statistical oracle) over ``group``.

        A group that matters is halved. Its first half is measured; the second half is measured too when the
        first matters, and otherwise is inferred to carry the effect and halved again without being measured
        (a single is always measured: its effect size is the result). Groups measured as no effect are
        dropped whole. The inference assumes no two suspects matter only jointly; such causes end as singles
        that do not matter, and the summary says the causes do not add up.
        """
        work: list[tuple[list[Suspect], list[Suspect] | None]] = [(group, None)]
        while work:
            batch, work = work[: self.engine.batch], work[self.engine.batch :]
            arms = [self.arm(g) for g, _ in batch]
            self.engine.log.append("group test: " + " | ".join(a.name for a in arms))
            self.engine.evaluate(arms)
            for (g, sibling), arm in zip(batch, arms, strict=True):
                if arm.n == 0:
                    return  # out of budget (evaluate noted it)
                matters = self.engine.matters(arm.name) and not self._cleared(arm)
                if matters and len(g) > 1:
                    work.append(_halves(g))
                if sibling is None:
                    continue
                if matters or len(sibling) == 1:
                    work.append((sibling, None))
                else:
                    self.engine.log.append(
                        "inferred to matter (its sibling does not): " + " + ".join(s.name for s in sibling)
                    )
                    work.append(_halves(sibling))

    def _result(self) -> Attribution:
        effects = {
            name: {m: e for m in self.engine.metrics if (e := self.effect(arm, m)) is not None}
            for name, arm in self.engine.arms.items()
            if name not in SIDES
        }
        by_name = {s.name: s for s in self.suspects}
        ranking: dict[str, list[dict[str, Any]]] = {}
        for m in self.engine.active_metrics:
            rows = []
            for name, per in effects.items():
                if m not in per:
                    continue
                members = self.engine.arms[name].suspects
                subsystems = sorted({by_name[s].subsystem for s in members})
                e = per[m]
                failed = self.engine.arms[name].failures()
                rows.append(
                    {
                        "arm": name,
                        "suspects": list(members),
                        "subsystems": subsystems,
                        "single": len(members) == 1,
                        "point": e.point,
                        "low": e.low,
                        "high": e.high,
                        "n": e.n,
                        "family": e.family,
                        "level": e.level,
                        # an arm whose runs fail is a failed arm, not a share measured on the runs left
                        "verdict": "fails" if failed else e.verdict(self.engine.delta),
                        "needed": e.seeds_to_decide(self.engine.delta),
                        "failed": failed,
                        # why the share is no verdict: its runs were timed at too different loads
                        "incomparable": e.incomparable,
                    }
                )
            # singles first (they name a cause), then by effect
            rows.sort(key=lambda r: (not r["single"], -r["point"]))
            ranking[m] = rows
        together = self._together(ranking)
        gaps = {}
        for m in self.engine.metrics:
            g = self.engine.gap(m)
            gaps[m] = {
                **self.engine.gap_summary(m),
                "direction": "higher" if self.engine.sign.get(m, 1) > 0 else "lower",
                "better": g is not None and g.high < 0.0,
                "note": "" if self.engine.gap_known.get(m) else self.engine.gap_note(m),
            }
        n_suspects = len(self.suspects)
        variant_runs = sum(a.n for k, a in self.engine.arms.items() if k not in SIDES) + sum(
            a.n for a in self.injections.values()
        )
        injected: dict[str, dict[str, Effect]] = {}
        for m in self.engine.active_metrics:
            for name, e in self.reproduced(m).items():
                injected.setdefault(name, {})[m] = e
        spent = {
            **self.engine.spent(variant_runs),
            "full_sweep_variant_runs": n_suspects * self.engine.max_seeds,
            "min_sweep_variant_runs": n_suspects * self.engine.seeds0,
            "seeds_per_arm_min": self.engine.seeds0,
            "full_sweep_runs": (n_suspects + 2) * self.engine.max_seeds,
            "seeds_per_arm_max": self.engine.max_seeds,
        }
        self.engine.notes.extend(self._failure_notes())
        return Attribution(
            metrics=self.engine.metrics,
            gaps=gaps,
            arms=[*self.engine.arms.values(), *self.injections.values()],
            effects=effects,
            suspects=self.suspects,
            ranking=ranking,
            together=together,
            spent=spent,
            notes=self.engine.notes,
            log=self.engine.log,
            injected=injected,
            primary=self.engine.metric,
        )

    def _failure_notes(self) -> list[str]:
        """One sentence per arm whose runs did not all finish with finite values: a crash or a divergence is
        a result of that setup, said as such (the shares rest on the runs that finished)."""
        notes = []
        for arm in [*self.engine.arms.values(), *self.injections.values()]:
            failed = arm.failures()
            if not failed:
                continue
            what = (
                "the gap rests on the runs that finished"
                if arm.name in SIDES
                else "the arm is reported as failing, not as a share"
            )
            notes.append(f"{arm.name} fails on {len(failed)} of {arm.n} runs ({'; '.join(failed)}): {what}")
        return notes

    def _restore_causes_together(self) -> None:
        """The interaction check: restore the causes and contributors found together (if not yet done)."""
        members = self._fixes()
        if len(members) < 2:
            return
        arm = self.arm(members)
        if arm.n == 0:
            self.engine.log.append("together (interaction check): " + arm.name)
        self.engine.evaluate([arm])

    def _together(self, ranking: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """How much of each gap the causes and contributors found close when restored together."""
        members = self._fixes()
        causes = {s.name for s in members}
        arm = self.engine.arms.get(" + ".join(s.name for s in members)) if len(members) >= 2 else None
        if arm is None or arm.n == 0:
            return {
                "suspects": [m.name for m in members],
                "effects": {},
                "note": ""
                if len(members) < 2
                else "budget spent before the causes could be restored together",
            }
        effects = {m: asdict(e) for m in self.engine.active_metrics if (e := self.effect(arm, m)) is not None}
        notes = []
        for m, e in effects.items():
            if e["incomparable"]:  # timed at too different loads: no total to read from it
                continue
            singles = sum(
                r["point"] for r in ranking.get(m, []) if r["single"] and r["suspects"][0] in causes
            )
            if e["high"] < 1.0 - self.engine.delta:
                notes.append(
                    f"{m}: the causes found close {e['point']:.0%} of the gap together; "
                    f"{1 - e['point']:.0%} stays unexplained"
                )
            # singles well over the whole gap overlap: the summary says so in the metric's own sentence and
            # takes the joint restore as the total (rlaudit.attribution.ranking.overlap), so it is not said twice here
            if (
                abs(singles - e["point"]) > max(0.25, e["high"] - e["low"])
                and singles <= 1.0 + OVERLAP_MARGIN
            ):
                notes.append(
                    f"{m}: the single restores add up to {singles:.0%} but together restore "
                    f"{e['point']:.0%}: the causes interact"
                )
        return {"suspects": [m.name for m in members], "effects": effects, "note": "; ".join(notes)}


def _halves(group: list[Suspect]) -> tuple[list[Suspect], list[Suspect]]:
    half = (len(group) + 1) // 2
    return group[:half], group[half:]
