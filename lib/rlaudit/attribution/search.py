"""The attribution search: which changes explain the gap between baseline and candidate, measured, with
intervals.

Audits list differences; this module runs the experiments that turn suspects into causes. A *suspect*
(:mod:`rlaudit.attribution.suspects`) is a change that can be undone in the candidate: one subsystem's config
keys set back to the baseline's values (a *restore*, through the candidate's own ``config(overrides=...)``),
a fault removed from a built-in candidate (the built-in analog of a fix commit), any named variant subject
the user lists (a fix commit), or a code change between two versions of one source. Every arm
trains on the same seeds as the baseline and the candidate, and for each arm and each metric (the pair's
primary metric, ``wb.metric``, and steps per second) we measure the fraction of the gap it restores,
``(variant - candidate) / (baseline - candidate)``, with a bootstrap interval paired by seed. The fraction
reads the same whichever direction is better (a loss that rose from 1.0 to 3.0 and a variant at 1.5 restore
75%); a gap is attributed only where the candidate is measurably worse. Throughput is split as CPU time per
step, where costs add (:func:`~rlaudit.attribution.arms.attribution_scale`).

A full one-factor sweep (every suspect alone, many seeds) is what a careful human would do and costs the most.
The search here spends less (case 003's protocol, automated; :class:`Search` has the details):

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
- **Sequential allocation**: every arm starts with ``seeds0`` seeds (one); seeds are added only where an
  interval still straddles a decision (restores a meaningful share ``delta`` or not) that more seeds could
  settle and the search still needs it, and to the first place of each ranking until it rests on two seeds
  and clears the runner-up. Intervals pool the run-to-run noise of all arms
  (:func:`rlaudit.stats.fractions_restored_pooled`; the baseline and candidate bring ``max_seeds`` each), so
  a one- or two-seed arm gets an honest interval instead of the span of the values it saw.

The budget (training runs) comes from the profile; the result records what was spent and what the full
one-factor sweep at the same seed count would have cost.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from scipy.stats import t as scipy_t

from rlaudit import stats
from rlaudit.attribution.arms import (
    DEFAULT_DELTA,
    OVERLAP_MARGIN,
    SPS,
    Arm,
    Attribution,
    Effect,
    attribution_scale,
    run_sps,
)
from rlaudit.attribution.ranking import _SEVERITY_WEIGHT, _STATUS_WEIGHT
from rlaudit.attribution.suspects import Suspect, compose, compose_injection
from rlaudit.engine.workbench import ProbeResult, Workbench
from rlaudit.findings import Severity, Status
from rlaudit.metrics import DEFAULT as DEFAULT_PRIMARY
from rlaudit.metrics import Metric, parse_override
from rlaudit.trainer.probes import train_run
from rlaudit.trainer.runs import RunData, run_params

SETTLE_MARGIN = 0.1
"""A gap is worth more seeds only when its estimate exceeds this share of the baseline's mean (the learning
check's practical margin): a 1% throughput wobble is not a regression to chase with runs."""


class Search:
    """Prior-guided screening with sequential seeds over a workbench's (baseline, candidate) pair.

    The order of work (each step one parallel batch of ``batch`` arms, the number of jobs):

    1. Baseline and candidate at ``max_seeds`` (usually cached: the trainer audit ran the same runs).
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

    Every arm starts with ``seeds0`` seeds and gains seeds only while an interval still straddles ``delta``
    on a metric with a gap and ``max_seeds`` could still settle it (:meth:`_futile`), within the budget.
    Intervals come from :func:`rlaudit.stats.fractions_restored_pooled` (paired by seed, run-to-run noise
    pooled over arms).

    Args:
        wb: The workbench (its profile sets steps, seeds and the budget).
        suspects: From :func:`~rlaudit.attribution.suspects.gather_suspects`, strongest audit evidence
            first.
        metric: The primary metric (a :class:`rlaudit.metrics.Metric`, or ``"NAME[:lower]"``); None: the
            workbench's (``wb.metric``), or the episodic return without a workbench.
        delta: The share of a gap that counts as meaningful.
        budget: Training runs this search may use (baseline and candidate seeds included).
        seeds0: Seeds an arm starts with.
        max_seeds: Seeds an arm may grow to (also the baseline's and candidate's seed count).
        gap_seeds: Seeds the baseline and candidate may grow to when the gap is unsettled at ``max_seeds``
            (the candidate looks worse but the interval still reaches zero); default three times
            ``max_seeds``. Runs are added a batch at a time and stop as soon as the gap is measured.
        steps: Environment steps per run.
        tail: Fraction of the run over which the final metric is averaged.
        seed: Seeds the bootstrap.
        batch: Arms evaluated side by side in one step (defaults to the workbench's parallel jobs).
        strong_prior: Audit evidence from which a suspect is tried on its own rather than in a group.
    """

    def __init__(
        self,
        wb: Workbench | None,
        suspects: Sequence[Suspect],
        *,
        metric: Metric | str | None = None,
        delta: float = DEFAULT_DELTA,
        budget: int | None = None,
        seeds0: int = 1,
        max_seeds: int | None = None,
        gap_seeds: int | None = None,
        steps: int | None = None,
        tail: float = 0.25,
        seed: int = 0,
        batch: int | None = None,
        strong_prior: float = _STATUS_WEIGHT[Status.SUSPECT] * _SEVERITY_WEIGHT[Severity.LOW],
    ) -> None:
        profile = wb.profile if wb is not None else None
        self.wb = wb
        self.suspects = list(suspects)
        self.metric = _primary(metric, wb)
        if self.metric.name == SPS:
            raise ValueError(
                f"the primary metric is named {SPS!r}, the name attribution gives throughput (steps per "
                "CPU-second, always attributed beside it); declare it under another name, e.g. 'perf/sps'"
            )
        self.delta = delta
        self.budget = budget if budget is not None else (profile.attribution_budget if profile else 60)
        seeds = max_seeds if max_seeds is not None else (profile.seeds if profile else 5)
        self.max_seeds = max(2, seeds)
        self.seeds0 = min(max(1, seeds0), self.max_seeds)
        self.gap_seeds = max(self.max_seeds, gap_seeds if gap_seeds is not None else 3 * self.max_seeds)
        self.steps = steps if steps is not None else (_train_steps(wb) if wb is not None else 0)
        self.tail = tail
        self.seed = seed
        self.batch = max(1, batch if batch is not None else (getattr(wb, "jobs", None) or 2))
        self.strong_prior = strong_prior
        self.arms: dict[str, Arm] = {}
        self.injections: dict[str, Arm] = {}
        self.runs_used = 0
        self.cached_runs = 0
        self.notes: list[str] = []
        self.log: list[str] = []
        self._metrics = [self.metric.name, SPS]
        # +1 where higher is better: the gap is sign * (baseline - candidate), positive when the candidate is worse
        self._sign = {self.metric.name: self.metric.sign, SPS: 1}
        self._gap_known: dict[str, bool] = {}
        self._effects: dict[str, dict[str, Effect]] = {}
        self.started = time.perf_counter()

    # -- running arms ----------------------------------------------------------------------------------

    def measure(self, calls: Sequence[tuple[Arm, int]]) -> list[tuple[ProbeResult | None, dict[str, float]]]:
        """Train one run per ``(arm, seed)``, all in one parallel batch, and read each run's metrics.

        Returns:
            Per call: the probe result (kept for learning curves) and ``{primary metric name: final value,
            "sps": steps per CPU-second}`` (NaN for a failed run, or a metric the run never reported).
        """
        if self.wb is None:
            raise RuntimeError("Search without a workbench: override measure() to supply runs")
        results = self.wb.run_each(
            train_run,
            [(arm.target, run_params(self.steps, s, arm.overrides)) for arm, s in calls],
            desc=f"attribution ({len(calls)} runs)",
        )
        out = []
        for (arm, _), res in zip(calls, results, strict=True):
            row = {m: math.nan for m in self._metrics}
            if res.ok:
                run = RunData.from_result(res, arm.name)
                row = {self.metric.name: run.final(self.metric, self.tail), SPS: run_sps(run)}
            out.append((res, row))
        return out

    def _grow(self, arms: Sequence[Arm], n: int | None = None) -> None:
        """Bring every arm to ``n`` seeds (``None``: one seed more each), all new runs in one parallel batch."""
        self._add_runs([(arm, s) for arm in arms for s in range(arm.n, arm.n + 1 if n is None else n)])

    def _add_runs(self, calls: Sequence[tuple[Arm, int]]) -> None:
        """Measure ``(arm, seed)`` calls in one parallel batch and add each run to its arm (the effects, which
        depend on every arm's runs, are computed again on the next read)."""
        if not calls:
            return
        for (arm, _), (res, row) in zip(calls, self.measure(calls), strict=True):
            arm.add(res, row)
            self.runs_used += 1
            self.cached_runs += int(bool(getattr(res, "cached", False)))
        self._effects.clear()

    def arm(self, suspects: Sequence[Suspect]) -> Arm:
        order = {s.name: i for i, s in enumerate(self.suspects)}
        suspects = sorted(suspects, key=lambda s: order.get(s.name, len(order)))
        names = tuple(s.name for s in suspects)
        key = " + ".join(names)
        if key not in self.arms:
            target, overrides = (
                compose(self.wb.specs["candidate"], suspects) if self.wb is not None else (key, ())
            )
            self.arms[key] = Arm(name=key, target=target, overrides=overrides, suspects=names)
        return self.arms[key]

    def _base_arms(self) -> tuple[Arm, Arm]:
        for name in ("baseline", "candidate"):
            if name not in self.arms:
                self.arms[name] = Arm(name=name, target=name)
        return self.arms["baseline"], self.arms["candidate"]

    # -- statistics ------------------------------------------------------------------------------------

    def gap(self, metric: str) -> stats.Interval | None:
        """How much worse the candidate is on ``metric``: ``baseline - candidate`` where higher is better,
        ``candidate - baseline`` where lower is, paired by seed, with a Student-t interval (honest at two
        seeds, where a bootstrap would call noise a gap half the time). None with fewer than two seeds
        measured on both sides."""
        b, c = self._base_arms()
        vb, vc = b.values(metric), c.values(metric)
        ok = ~(np.isnan(vb) | np.isnan(vc))
        if ok.sum() < 2:
            return None
        if self._sign.get(metric, 1) < 0:
            return stats.paired_t_interval(vc[ok], vb[ok])
        return stats.paired_t_interval(vb[ok], vc[ok])

    def has_gap(self, metric: str) -> bool:
        """The candidate is measurably worse on ``metric`` (the gap's interval lies above zero). A candidate
        that is measurably better leaves nothing to explain there."""
        g = self.gap(metric)
        return g is not None and g.low > 0.0

    def _spent(self, variant_runs: int) -> dict[str, Any]:
        """What the search spent so far: runs (and how many came from the cache), runs on arms other than the
        two sides, the budget it had, and seconds since it started."""
        return {
            "runs": self.runs_used,
            "cached_runs": self.cached_runs,
            "variant_runs": variant_runs,
            "budget": self.budget,
            "seconds": round(time.perf_counter() - self.started, 1),
        }

    def _gap_summary(self, m: str) -> dict[str, Any]:
        """The gap on metric ``m`` as the results state it: both sides' means, how much worse the candidate is
        (in the metric's direction) with its interval, and whether the gap was measured at all."""
        g = self.gap(m)
        b, c = self._base_arms()
        return {
            "baseline": _mean(b.values(m)),
            "candidate": _mean(c.values(m)),
            "worse_by": g.point if g else None,
            "low": g.low if g else None,
            "high": g.high if g else None,
            "measurable": bool(self._gap_known.get(m)),
        }

    def _gap_note(self, metric: str) -> str:
        """Why ``metric``'s gap is not attributed, in one sentence."""
        g = self.gap(metric)
        label = "throughput (steps per CPU-second)" if metric == SPS else metric
        if g is None:
            b, c = self._base_arms()
            failed = [e for arm in (b, c) for e in arm.errors()]
            if failed:
                return (
                    f"{label}: too few training runs completed on both sides to measure a gap "
                    f"({len(failed)} failed; first: {failed[0]}); not attributed."
                )
            how = "" if metric == SPS else " " + self.metric.how_to_report
            return f"{label}: the training runs did not report it on both sides; not attributed.{how}"
        where = f"worse by {g.point:+.3g}, 95% CI {g.low:+.3g}..{g.high:+.3g}"
        if g.high < 0.0:
            return f"{label}: the candidate is measurably better than the baseline ({where}); nothing to attribute."
        return f"No measurable {label} gap between baseline and candidate (the candidate is {where}); not attributed."

    def _fractions(self, metric: str, arms: dict[str, Arm]) -> dict[str, Effect]:
        """The share of ``metric``'s gap each arm restores, computed together: they share the pooled noise,
        and they are one family, so each interval accounts for every arm tried (Holm,
        :func:`rlaudit.stats.fractions_restored_holm`): among several arms, one interval that barely excludes
        zero is what chance alone produces. Throughput is attributed as CPU time per step
        (:func:`attribution_scale`)."""
        b, c = self._base_arms()
        values = {k: attribution_scale(metric, a.values(metric)) for k, a in arms.items() if a.n}
        if not values:
            return {}
        try:
            iv = stats.fractions_restored_holm(
                attribution_scale(metric, b.values(metric)),
                attribution_scale(metric, c.values(metric)),
                values,
                seed=self.seed,
            )
        except ValueError:
            return {}
        return {k: family_effect(i, int((~np.isnan(values[k])).sum())) for k, i in iv.items()}

    def _effects_for(self, metric: str) -> dict[str, Effect]:
        """Effects of every variant arm on ``metric`` (cached until the next runs)."""
        if metric not in self._effects:
            variants = {k: a for k, a in self.arms.items() if k not in ("baseline", "candidate")}
            self._effects[metric] = self._fractions(metric, variants)
        return self._effects[metric]

    def effect(self, arm: Arm, metric: str) -> Effect | None:
        return self._effects_for(metric).get(arm.name)

    def reproduced(self, metric: str) -> dict[str, Effect]:
        """Per injected suspect: the share of ``metric``'s gap its change reproduces in the baseline alone,
        ``(baseline - injected) / (baseline - candidate)``: one minus the share it "restores"."""
        return {
            n: Effect(1.0 - e.point, 1.0 - e.high, 1.0 - e.low, e.n, e.level, e.family)
            for n, e in self._fractions(metric, self.injections).items()
        }

    def _undecided(self, arm: Arm) -> bool:
        """Worth another seed: no metric shows it matters yet, and some metric still straddles ``delta`` by
        less than ``max_seeds`` could resolve. (A cause found on one metric is not grown to settle another: it
        is restored with the other causes.)"""
        if self._matters(arm):
            return False
        for m in self.active_metrics:
            e = self.effect(arm, m)
            if e is None or not (e.decided(self.delta) or self._futile(e)):
                return True
        return False

    def _futile(self, e: Effect) -> bool:
        """Seeds up to ``max_seeds`` would still leave the interval straddling ``delta``: the effect sits on
        the threshold. Its half-width shrinks as 1/sqrt(seeds) at best, so when even that leaves ``delta``
        inside, the arm stays "undecided" instead of spending the budget on it."""
        needed = e.seeds_to_decide(self.delta)
        return e.n >= self.max_seeds or needed is None or needed > self.max_seeds

    def evaluate(self, arms: Sequence[Arm], *, grow: bool = True) -> None:
        """Run arms at ``seeds0`` seeds, then (if ``grow``) add seeds one round at a time, in parallel, to
        those still undecided, while the budget allows."""
        arms = list(arms)
        base = self._base_arms()
        start = [a for a in arms if a.n < self.seeds0]
        if start and self.runs_used + sum(self.seeds0 - a.n for a in start) > self.budget:
            self.notes.append(
                "budget spent before " + ", ".join(repr(a.name) for a in start) + " could be measured"
            )
            return
        self._grow([*base, *arms], self.seeds0)
        while grow:
            pending = [a for a in arms if a.n < self.max_seeds and self._undecided(a)]
            if not pending or self.runs_used + len(pending) > self.budget:
                return
            self._grow(pending)  # one seed more each (the baseline and candidate have max_seeds)

    # -- the search ------------------------------------------------------------------------------------

    @property
    def active_metrics(self) -> list[str]:
        return [m for m in self._metrics if self._gap_known.get(m)]

    def _matters(self, arm: Arm) -> bool:
        return any(
            (e := self.effect(arm, m)) is not None and e.matters(self.delta) for m in self.active_metrics
        )

    def _cleared(self, arm: Arm) -> bool:
        """Measurably no share of any gap: a group that can be dropped whole."""
        effects = [self.effect(arm, m) for m in self.active_metrics]
        return all(e is not None and e.high < self.delta for e in effects)

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
            for a in self.arms.values()
            if len(a.suspects) == 1 and a.suspects[0] in by_name and a.n
        ]

    def _ranked(self, metric: str) -> list[tuple[Effect, Suspect, Arm]]:
        """The singles measured on ``metric``, largest share first."""
        rows = [(e, s, a) for s, a in self._singles() if (e := self.effect(a, metric)) is not None]
        return sorted(rows, key=lambda row: -row[0].point)

    def _causes(self) -> list[Suspect]:
        return [s for s, a in self._singles() if self._matters(a)]

    def _contributors(self) -> list[Suspect]:
        """Singles measured to restore some share of a gap (interval above :func:`minor_floor`), causes or
        not: an effect below ``delta`` still counts towards explaining a gap."""
        return [
            s
            for s, a in self._singles()
            if any(
                (e := self.effect(a, m)) is not None and e.contributes(self.delta)
                for m in self.active_metrics
            )
        ]

    def _explained(self, causes: Sequence[Suspect]) -> bool:
        """The singles ``causes`` add up to the whole of every gap (within ``delta``), confidently: the sum
        of their lower bounds reaches ``1 - delta``, so what is left unexplained is below ``delta`` and no
        suspect left untried can hide a meaningful share (a point estimate just past the line would stop
        the search half the time when an untried suspect holds close to ``delta``)."""
        for m in self.active_metrics:
            total = sum(
                e.low
                for s in causes
                if (e := self.effect(self.arm([s]), m)) is not None and e.contributes(self.delta)
            )
            if total < 1.0 - self.delta:
                return False
        return True

    def run(self) -> Attribution:
        b, c = self._base_arms()
        self._grow([b, c], self.max_seeds)
        self._settle_gaps()
        self._gap_known = {m: self.has_gap(m) for m in self._metrics}
        composable = [s for s in self.suspects if s.composable]
        variants = [s for s in self.suspects if not s.composable]
        if self.active_metrics and self.suspects:
            self._screen(composable)
            for s in variants:
                if self.runs_used + self.seeds0 > self.budget:
                    self.notes.append(f"budget spent before variant {s.name!r} was tried")
                    break
                self.evaluate([self.arm([s])])
            self._confirm_first_places()
            self._inject_primary_cause()
            self._restore_causes_together()
        return self._result()

    def _unsettled(self) -> dict[str, int]:
        """Metrics whose gap points to a practically worse candidate (by more than :data:`SETTLE_MARGIN` of
        the baseline's mean) while its interval still reaches zero, each with the seeds per side that would
        likely settle it: the interval's half-width shrinks as 1/sqrt(seeds), so it clears zero at about
        ``n * (half-width / estimate)**2``."""
        out: dict[str, int] = {}
        b, _ = self._base_arms()
        for m in self._metrics:
            g = self.gap(m)
            scale = abs(_mean(b.values(m)))
            if g is None or g.low > 0.0 or not g.point > SETTLE_MARGIN * scale:
                continue
            # the half-width over the t quantile is the standard error; it shrinks as 1/sqrt(seeds), and at
            # many seeds the quantile is the normal's (a slight optimism that growing in batches corrects)
            n = max(2, b.n)
            se = 0.5 * (g.high - g.low) / float(scipy_t.ppf(0.975, n - 1))
            out[m] = max(b.n + 1, math.ceil(n * (1.96 * se / g.point) ** 2))
        return out

    def _settle_gaps(self) -> None:
        """Add seeds to both sides, a batch at a time, while a gap is unsettled and seeds remain.

        Seed-to-seed spread decides how many seeds a gap needs (case files: one run per side hid a 0.8-point
        drop); stopping at the profile's count would report "no measurable gap" for a real one. The added runs
        are the baseline's and candidate's own, so they also serve every arm's comparison afterwards.
        """
        b, c = self._base_arms()
        start = b.n
        while unsettled := self._unsettled():
            reachable = [m for m, n in unsettled.items() if n <= self.gap_seeds]
            if not reachable:
                needs = ", ".join(f"{m} about {n}" for m, n in unsettled.items())
                self.notes.append(
                    f"the gap is unsettled at {b.n} seeds per side and would need more than the search may "
                    f"add ({needs} seeds per side; at most {self.gap_seeds})"
                )
                break
            if self.runs_used + 2 > self.budget:
                self.notes.append(
                    f"budget spent while settling the {', '.join(reachable)} gap at {b.n} seeds"
                )
                break
            self._grow([b, c], min(self.gap_seeds, b.n + max(1, self.batch // 2)))
        if b.n > start:
            left = self._unsettled()
            state = f"still unsettled: {', '.join(left)}" if left else "settled"
            self.notes.append(
                f"the gap was unsettled at {start} seeds per side; grown to {b.n} seeds per side ({state})"
            )
            self.log.append(f"gap seeds {start} -> {b.n} ({state})")

    def _screen(self, suspects: list[Suspect]) -> None:
        if not suspects:
            return
        strong = [s for s in suspects if s.prior >= self.strong_prior]
        untested = list(suspects)
        # 2. singles of the strongest suspects, a batch at a time, until the causes explain every gap; seeds
        # are added later, and only if the causes found do not close the gaps together
        while strong and not self._explained(self._contributors()):
            batch, strong = strong[: self.batch], strong[self.batch :]
            self.log.append(
                "alone (strong audit evidence; gaps not yet explained): " + ", ".join(s.name for s in batch)
            )
            self.evaluate([self.arm([s]) for s in batch], grow=False)
            untested = [s for s in untested if s not in batch]
        # 3. the causes together: if they close every gap, what is left is not needed to explain it. The
        # reverse check of the primary cause shares the batch (two cores).
        fixes = self._fixes()
        inject = self._injection_arm()
        if len(fixes) >= 2 and self.runs_used + self.seeds0 * (1 + bool(inject)) <= self.budget:
            together = self.arm(fixes)
            self.log.append(
                "together (the causes and smaller contributors found; do they close every gap?): "
                + together.name
            )
            if inject is not None:
                self.log.append(self._injection_log(inject))
            self._grow([together, *([inject] if inject else [])], self.seeds0)
            closed = self._closes(together)
        else:
            closed = len(fixes) == 1 and self._explained(fixes)
        if closed:
            if untested:
                self.notes.append(
                    f"the causes found close every gap to within {self.delta:.0%}; not measured, as not "
                    "needed to explain it (their audit evidence stands): "
                    + ", ".join(s.name for s in untested)
                )
            return
        # 4. otherwise: more seeds where a single is undecided, then group testing over what is left
        singles = [a for a in self.arms.values() if len(a.suspects) == 1 and a.n]
        if singles:
            self.log.append("more seeds where a single is undecided (the causes found do not close the gaps)")
            self.evaluate(singles)
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
            for m in self.active_metrics:
                ranked = self._ranked(m)
                if not ranked or not ranked[0][0].matters(self.delta):
                    continue
                (top_e, _, top), rest = ranked[0], ranked[1:]
                if top.n < 2:
                    grow[top.name] = top
                if rest and rest[0][0].high >= top_e.low:
                    second = rest[0][2]
                    grow.update({top.name: top, second.name: second})
                    ties.append(f"{m}: {top.name} and {second.name}")
            pending = [a for a in grow.values() if a.n < self.max_seeds]
            if not pending or self.runs_used + len(pending) > self.budget:
                self.notes.extend(
                    f"{t}: the seeds cannot tell their shares apart, so which comes first is not established"
                    for t in ties
                )
                return
            self.log.append(
                "one more seed for a first place (fewer than two seeds, or not yet clear of the runner-up): "
                + ", ".join(a.name for a in pending)
            )
            self._grow(pending)

    def _injection_arm(self) -> Arm | None:
        """The reverse experiment for the primary cause, if it still needs running: the single ranked first
        on the primary metric (on SPS when only throughput has a gap), its change alone put into the
        baseline. A cause that restores the gap when undone and reproduces it when injected is confirmed
        from both sides; one that does only one of the two depends on the other changes."""
        ranked = self._ranked(self.active_metrics[0]) if self.active_metrics else []
        if not ranked:
            return None
        e, s, _ = ranked[0]
        if not s.injectable or not e.matters(self.delta):
            return None
        if s.name not in self.injections:
            target, overrides = (
                compose_injection(self.wb.specs["baseline"], s) if self.wb is not None else (s.name, ())
            )
            self.injections[s.name] = Arm(
                name=f"inject {s.name}", target=target, overrides=overrides, injects=(s.name,)
            )
        arm = self.injections[s.name]
        return arm if arm.n < self.seeds0 else None

    @staticmethod
    def _injection_log(arm: Arm) -> str:
        return f"injected into the baseline alone (does the primary cause reproduce the gap?): {arm.name}"

    def _inject_primary_cause(self) -> None:
        """Run the reverse experiment of the primary cause if the search has not yet (see
        :meth:`_injection_arm`)."""
        arm = self._injection_arm()
        if arm is None:
            return
        if self.runs_used + self.seeds0 > self.budget:
            self.notes.append("budget spent before the primary cause could be injected into the baseline")
            return
        self.log.append(self._injection_log(arm))
        self._grow([arm], self.seeds0)

    def _closes(self, arm: Arm) -> bool:
        effects = [self.effect(arm, m) for m in self.active_metrics]
        return all(e is not None and e.high >= 1.0 - self.delta and e.low > self.delta for e in effects)

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
            batch, work = work[: self.batch], work[self.batch :]
            arms = [self.arm(g) for g, _ in batch]
            self.log.append("group test: " + " | ".join(a.name for a in arms))
            self.evaluate(arms)
            for (g, sibling), arm in zip(batch, arms, strict=True):
                if arm.n == 0:
                    return  # out of budget (evaluate noted it)
                matters = self._matters(arm) and not self._cleared(arm)
                if matters and len(g) > 1:
                    work.append(_halves(g))
                if sibling is None:
                    continue
                if matters or len(sibling) == 1:
                    work.append((sibling, None))
                else:
                    self.log.append(
                        "inferred to matter (its sibling does not): " + " + ".join(s.name for s in sibling)
                    )
                    work.append(_halves(sibling))

    def _result(self) -> Attribution:
        effects = {
            name: {m: e for m in self._metrics if (e := self.effect(arm, m)) is not None}
            for name, arm in self.arms.items()
            if name not in ("baseline", "candidate")
        }
        by_name = {s.name: s for s in self.suspects}
        ranking: dict[str, list[dict[str, Any]]] = {}
        for m in self.active_metrics:
            rows = []
            for name, per in effects.items():
                if m not in per:
                    continue
                members = self.arms[name].suspects
                subsystems = sorted({by_name[s].subsystem for s in members})
                e = per[m]
                failed = self.arms[name].failures()
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
                        "verdict": "fails" if failed else e.verdict(self.delta),
                        "needed": e.seeds_to_decide(self.delta),
                        "failed": failed,
                    }
                )
            # singles first (they name a cause), then by effect
            rows.sort(key=lambda r: (not r["single"], -r["point"]))
            ranking[m] = rows
        together = self._together(ranking)
        gaps = {}
        for m in self._metrics:
            g = self.gap(m)
            gaps[m] = {
                **self._gap_summary(m),
                "direction": "higher" if self._sign.get(m, 1) > 0 else "lower",
                "better": g is not None and g.high < 0.0,
                "note": "" if self._gap_known.get(m) else self._gap_note(m),
            }
        n_suspects = len(self.suspects)
        variant_runs = sum(a.n for k, a in self.arms.items() if k not in ("baseline", "candidate")) + sum(
            a.n for a in self.injections.values()
        )
        injected: dict[str, dict[str, Effect]] = {}
        for m in self.active_metrics:
            for name, e in self.reproduced(m).items():
                injected.setdefault(name, {})[m] = e
        spent = {
            **self._spent(variant_runs),
            "full_sweep_variant_runs": n_suspects * self.max_seeds,
            "min_sweep_variant_runs": n_suspects * self.seeds0,
            "seeds_per_arm_min": self.seeds0,
            "full_sweep_runs": (n_suspects + 2) * self.max_seeds,
            "seeds_per_arm_max": self.max_seeds,
        }
        self.notes.extend(self._failure_notes())
        return Attribution(
            metrics=self._metrics,
            gaps=gaps,
            arms=[*self.arms.values(), *self.injections.values()],
            effects=effects,
            suspects=self.suspects,
            ranking=ranking,
            together=together,
            spent=spent,
            notes=self.notes,
            log=self.log,
            injected=injected,
            primary=self.metric,
        )

    def _failure_notes(self) -> list[str]:
        """One sentence per arm whose runs did not all finish with finite values: a crash or a divergence is
        a result of that setup, said as such (the shares rest on the runs that finished)."""
        notes = []
        for arm in [*self.arms.values(), *self.injections.values()]:
            failed = arm.failures()
            if not failed:
                continue
            what = (
                "the gap rests on the runs that finished"
                if arm.name in ("baseline", "candidate")
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
            self.log.append("together (interaction check): " + arm.name)
        self.evaluate([arm])

    def _together(self, ranking: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
        """How much of each gap the causes and contributors found close when restored together."""
        members = self._fixes()
        causes = {s.name for s in members}
        arm = self.arms.get(" + ".join(s.name for s in members)) if len(members) >= 2 else None
        if arm is None or arm.n == 0:
            return {
                "suspects": [m.name for m in members],
                "effects": {},
                "note": ""
                if len(members) < 2
                else "budget spent before the causes could be restored together",
            }
        effects = {m: asdict(e) for m in self.active_metrics if (e := self.effect(arm, m)) is not None}
        notes = []
        for m, e in effects.items():
            singles = sum(
                r["point"] for r in ranking.get(m, []) if r["single"] and r["suspects"][0] in causes
            )
            if e["high"] < 1.0 - self.delta:
                notes.append(
                    f"{m}: the causes found close {e['point']:.0%} of the gap together; "
                    f"{1 - e['point']:.0%} stays unexplained"
                )
            # singles well over the whole gap overlap: the summary says so in the metric's own sentence and
            # takes the joint restore as the total (rlaudit.summary.overlap), so it is not said twice here
            if (
                abs(singles - e["point"]) > max(0.25, e["high"] - e["low"])
                and singles <= 1.0 + OVERLAP_MARGIN
            ):
                notes.append(
                    f"{m}: the single restores add up to {singles:.0%} but together restore "
                    f"{e['point']:.0%}: the causes interact"
                )
        return {"suspects": [m.name for m in members], "effects": effects, "note": "; ".join(notes)}


def family_effect(share: stats.FamilyShare, n: int) -> Effect:
    """An :class:`Effect` from a share whose interval accounts for its family of arms (Holm)."""
    return Effect(
        point=share.point, low=share.low, high=share.high, n=n, level=share.level, family=share.family
    )


def _mean(values: np.ndarray) -> float:
    """Mean of the finite values; NaN (without a warning) when there are none."""
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan


def _primary(metric: Metric | str | None, wb: Workbench | None) -> Metric:
    """The primary metric a search attributes: as given, else the workbench's, else the episodic return."""
    if isinstance(metric, Metric):
        return metric
    if metric:
        name, direction = parse_override(str(metric))
        return Metric(name, direction or "higher", primary=True, origin="override")
    if wb is not None:
        return wb.metric
    return DEFAULT_PRIMARY


def _halves(group: list[Suspect]) -> tuple[list[Suspect], list[Suspect]]:
    half = (len(group) + 1) // 2
    return group[:half], group[half:]


def _train_steps(wb: Any) -> int:
    """A full run's length on ``wb``: its ``train_steps`` (the subjects' own run length within the profile)."""
    steps = getattr(wb, "train_steps", None)
    return int(steps) if isinstance(steps, int) else int(wb.profile.train_steps)
