"""The attribution engine: what every search over arms shares, whatever it proposes to run.

A search turns differences into causes by running *arms* (training runs of one setup over the shared seeds,
:class:`~rlaudit.attribution.arms.Arm`) and measuring the share of each gap an arm restores. Two searches use
it, as *strategies* that propose the next arms (:class:`Strategy`):

- :class:`~rlaudit.attribution.screening.Screening` restores suspects (a subsystem's config, a built-in fix, a
  named variant, a code change) alone and in groups, audit evidence first;
- :class:`~rlaudit.attribution.bisection.Bisection` bisects the commits between two versions of one source,
  then isolates the hunks inside each culprit commit.

The :class:`Engine` holds what they share:

- **arms and runs**: every arm by name, the runs each one holds, and the runs through a runner (the
  workbench's executor by default; tests simulate trainers with one);
- **the budget**: training runs spent (and from the cache) against what the profile allows;
- **the gaps**: the baseline and the candidate at ``max_seeds`` each, grown while a practically large gap is
  not yet measured (:meth:`Engine.measure_gaps`), then which metrics carry a gap to explain;
- **sequential seeds**: an arm starts with ``seeds0`` seeds and gains more, one round at a time, only while an
  interval still straddles ``delta`` and ``max_seeds`` could settle it (:meth:`Engine.evaluate`,
  :meth:`Engine.futile`);
- **pooled intervals**: the shares of one family of arms computed together, paired by seed, with run-to-run
  noise pooled over all arms and each interval accounting for the whole family (Holm,
  :func:`rlaudit.stats.fractions_restored_holm`).

A strategy tells the engine which shares form its family (:meth:`Strategy.values`), which arm a run must be
paired with (:meth:`Strategy.paired`) and what to make of finished runs (:meth:`Strategy.checked`); it drives
the engine's services in its own order and builds its own result.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from scipy.stats import t as scipy_t

from rlaudit import stats
from rlaudit.attribution.arms import (
    DEFAULT_DELTA,
    LOAD,
    SIDES,
    SPS,
    Arm,
    Effect,
    attribution_scale,
    run_load,
    run_sps,
    sps_incomparable,
)
from rlaudit.engine.workbench import ProbeResult, Workbench
from rlaudit.evidence import fmt
from rlaudit.metrics import DEFAULT as DEFAULT_PRIMARY
from rlaudit.metrics import Metric, parse_override
from rlaudit.trainer.probes import train_run
from rlaudit.trainer.runs import RunData, run_params

SETTLE_MARGIN = 0.1
"""A gap is worth more seeds only when its estimate exceeds this share of the baseline's mean (the learning
check's practical margin): a 1% throughput wobble is not a regression to chase with runs."""

Runs = list[tuple[ProbeResult | None, dict[str, float]]]
Runner = Callable[[Sequence[tuple[Arm, int]]], Runs]
"""Trains one run per ``(arm, seed)`` and returns, per call, ``(result or None, {metric: value, "sps": value})``
(NaN where the run failed); a result with ``ok == False`` carries the error (``result.error``)."""


class Strategy(Protocol):
    """How a search reads the engine's arms. The engine calls these while it runs arms and computes shares; the
    strategy decides which arms to propose next and drives :meth:`Engine.evaluate` and :meth:`Engine.grow`."""

    def values(self, metric: str) -> dict[str, np.ndarray]:
        """The family of shares on ``metric``: name -> per seed, the value whose share of the gap is measured,
        on the attribution scale (:func:`~rlaudit.attribution.arms.attribution_scale`) and paired by seed
        with the candidate (an arm's own values, or the candidate plus a contrast between two arms)."""
        ...

    def paired(self, arm: Arm) -> Arm | None:
        """The arm whose runs ``arm``'s share is compared with seed by seed beyond the two sides (grown to as
        many seeds with it), or None."""
        ...

    def checked(self, calls: Sequence[tuple[Arm, int]], runs: Runs) -> Runs:
        """The runs as the search keeps them (it may run some again, or note arms whose runs failed)."""
        ...

    # Optional: ``rests_on(name) -> list[Arm]``, the arms a family member other than an arm of that name is
    # measured on (a contrast); the engine reads it to tell whether a throughput share compares (Engine.rests_on).


FUTILITY_MIN_SEEDS = 2
"""Seeds an arm holds before :meth:`Engine.futile` may stop it, where the profile allows more than this. One
seed's share is as uncertain as its interval is wide, so a projection from it gave up on arms a few more seeds
would decide: the SB3 DQN example's only suspect, restored at one seed that happened to be the baseline's
weakest, read 52% (95% CI -33%..151%) and was projected to need 9 seeds, while restoring it makes the
candidate the baseline (its one run equalled the baseline's to the digit). Two is a judgment: the least that
gives the point a spread of its own. At smoke (two seeds at most) the rule is as before, so the quick look
stays as cheap."""


class Engine:
    """Arms, budget, gaps, sequential seeds and pooled intervals over a workbench's (baseline, candidate) pair.

    Args:
        wb: The workbench (its profile sets steps, seeds and the budget); None with ``runner``.
        runner: Trains runs instead of the workbench (see :data:`Runner`).
        metric: The primary metric (a :class:`rlaudit.metrics.Metric`, or ``"NAME[:lower]"``); None: the
            workbench's (``wb.metric``), or the episodic return without a workbench.
        delta: The share of a gap that counts as meaningful.
        budget: Training runs the search may use (baseline and candidate seeds included).
        seeds0: Seeds an arm starts with.
        max_seeds: Seeds an arm may grow to (also the baseline's and candidate's seed count).
        gap_seeds: Seeds the baseline and candidate may grow to when the gap is unsettled at ``max_seeds``
            (the candidate looks worse but the interval still reaches zero); default three times
            ``max_seeds``. Runs are added a batch at a time and stop as soon as the gap is measured.
        steps: Environment steps per run.
        tail: Fraction of the run over which the final metric is averaged.
        seed: Seeds the bootstrap.
        batch: Arms evaluated side by side in one step (defaults to the workbench's parallel jobs).

    Attributes:
        strategy: The search it serves (set by the strategy, :class:`Strategy`).
        arms: Every arm by name, the baseline and the candidate first.
        runs_used, cached_runs: Training runs spent, and how many of them came from the cache.
        notes, log: Sentences for the summary; what ran and why, in order.
        metrics: The metrics attributed: the primary metric's name, then :data:`SPS`.
        sign: Per metric, +1 where higher is better (the gap is ``sign * (baseline - candidate)``).
        gap_known: Per metric, whether the candidate is measurably worse (set by :meth:`measure_gaps`).
    """

    def __init__(
        self,
        wb: Workbench | None,
        *,
        runner: Runner | None = None,
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
    ) -> None:
        profile = wb.profile if wb is not None else None
        self.wb = wb
        self.runner = runner
        self.strategy: Strategy | None = None
        self.metric = primary_metric(metric, wb)
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
        self.steps = steps if steps is not None else (train_steps(wb) if wb is not None else 0)
        self.tail = tail
        self.seed = seed
        self.batch = max(1, batch if batch is not None else (getattr(wb, "jobs", None) or 2))
        self.arms: dict[str, Arm] = {}
        self.runs_used = 0
        self.cached_runs = 0
        self.notes: list[str] = []
        self.log: list[str] = []
        self.metrics = [self.metric.name, SPS]
        self.sign = {self.metric.name: self.metric.sign, SPS: 1}
        self.gap_known: dict[str, bool] = {}
        self._effects: dict[str, dict[str, Effect]] = {}
        self.started = time.perf_counter()

    # -- running arms ----------------------------------------------------------------------------------

    def train(self, calls: Sequence[tuple[Arm, int]]) -> Runs:
        """Train one run per ``(arm, seed)``, all in one parallel batch (through the runner, else the
        workbench), and read each run's metrics.

        Returns:
            Per call: the probe result (kept for learning curves) and ``{primary metric name: final value,
            "sps": steps per CPU-second, "load": the machine's load per core while it was timed}`` (NaN for a
            failed run, or a value the run never reported).
        """
        if self.runner is not None:
            return self.runner(calls)
        if self.wb is None:
            raise RuntimeError("an attribution engine without a workbench needs a runner to supply runs")
        results = self.wb.run_each(
            train_run,
            [(arm.target, run_params(self.steps, s, arm.overrides)) for arm, s in calls],
            desc=f"attribution ({len(calls)} runs)",
        )
        out: Runs = []
        for (arm, _), res in zip(calls, results, strict=True):
            row = {m: math.nan for m in self.metrics}
            if res.ok:
                run = RunData.from_result(res, arm.name)
                row = {
                    self.metric.name: run.final(self.metric, self.tail),
                    SPS: run_sps(run),
                    LOAD: run_load(run),
                }
            out.append((res, row))
        return out

    def add_runs(self, calls: Sequence[tuple[Arm, int]]) -> None:
        """Measure ``(arm, seed)`` calls in one parallel batch and add each run to its arm (the shares, which
        depend on every arm's runs, are computed again on the next read)."""
        if not calls:
            return
        runs = self.train(calls)
        if self.strategy is not None:
            runs = self.strategy.checked(calls, runs)
        for (arm, _), (res, row) in zip(calls, runs, strict=True):
            arm.add(res, row)
            self.runs_used += 1
            self.cached_runs += int(bool(getattr(res, "cached", False)))
        self._effects.clear()

    def grow(self, arms: Sequence[Arm], n: int | None = None) -> None:
        """Bring each arm to ``n`` seeds (None: one more each) in one batch, and the arm it is paired with
        (:meth:`Strategy.paired`) to as many, since a contrast is paired by seed. An arm with no subject to run
        (one that could not be built) is skipped."""
        target: dict[str, int] = {}
        order: list[Arm] = []

        def want(arm: Arm, k: int) -> None:
            if arm.name not in target:
                order.append(arm)
            target[arm.name] = max(target.get(arm.name, 0), k)

        for arm in arms:
            if arm.target is None:
                continue  # unresolved before any run
            k = arm.n + 1 if n is None else n
            want(arm, k)
            frame = self.strategy.paired(arm) if self.strategy is not None else None
            if frame is not None and frame.n < k:
                want(frame, k)
        self.add_runs([(arm, s) for arm in order for s in range(arm.n, target[arm.name])])

    def base_arms(self) -> tuple[Arm, Arm]:
        """The baseline's and the candidate's arms (made on first use)."""
        for name in SIDES:
            if name not in self.arms:
                self.arms[name] = Arm(name=name, target=name)
        return self.arms["baseline"], self.arms["candidate"]

    def affords(self, runs: int) -> bool:
        """Whether ``runs`` more training runs stay within the budget."""
        return self.runs_used + runs <= self.budget

    # -- the gaps ----------------------------------------------------------------------------------------

    def gap(self, metric: str) -> stats.Interval | None:
        """How much worse the candidate is on ``metric``: ``baseline - candidate`` where higher is better,
        ``candidate - baseline`` where lower is, paired by seed, with a Student-t interval (honest at two
        seeds, where a bootstrap would call noise a gap half the time). None with fewer than two seeds
        measured on both sides."""
        b, c = self.base_arms()
        vb, vc = b.values(metric), c.values(metric)
        ok = ~(np.isnan(vb) | np.isnan(vc))
        if ok.sum() < 2:
            return None
        if self.sign.get(metric, 1) < 0:
            return stats.paired_t_interval(vc[ok], vb[ok])
        return stats.paired_t_interval(vb[ok], vc[ok])

    def has_gap(self, metric: str) -> bool:
        """The candidate is measurably worse on ``metric`` (the gap's interval lies above zero). A candidate
        that is measurably better leaves nothing to explain there."""
        g = self.gap(metric)
        return g is not None and g.low > 0.0

    @property
    def active_metrics(self) -> list[str]:
        """The metrics with a gap to explain (after :meth:`measure_gaps`)."""
        return [m for m in self.metrics if self.gap_known.get(m)]

    def measure_gaps(self) -> None:
        """The first step of every search: the baseline and the candidate at ``max_seeds`` (usually cached:
        the trainer audit ran the same runs), more while a gap is unsettled (:meth:`settle_gaps`), then which
        metrics carry a gap (:attr:`gap_known`)."""
        b, c = self.base_arms()
        self.grow([b, c], self.max_seeds)
        self.settle_gaps()
        self.gap_known = {m: self.has_gap(m) for m in self.metrics}

    def unsettled(self) -> dict[str, int]:
        """Metrics whose gap points to a practically worse candidate (by more than :data:`SETTLE_MARGIN` of
        the baseline's mean) while its interval still reaches zero, each with the seeds per side that would
        likely settle it: the interval's half-width shrinks as 1/sqrt(seeds), so it clears zero at about
        ``n * (half-width / estimate)**2``."""
        out: dict[str, int] = {}
        b, _ = self.base_arms()
        for m in self.metrics:
            g = self.gap(m)
            scale = abs(finite_mean(b.values(m)))
            if g is None or g.low > 0.0 or not g.point > SETTLE_MARGIN * scale:
                continue
            # the half-width over the t quantile is the standard error; it shrinks as 1/sqrt(seeds), and at
            # many seeds the quantile is the normal's (a slight optimism that growing in batches corrects)
            n = max(2, b.n)
            se = 0.5 * (g.high - g.low) / float(scipy_t.ppf(0.975, n - 1))
            out[m] = max(b.n + 1, math.ceil(n * (1.96 * se / g.point) ** 2))
        return out

    def settle_gaps(self) -> None:
        """Add seeds to both sides, a batch at a time, while a gap is unsettled and seeds remain.

        Seed-to-seed spread decides how many seeds a gap needs (case files: one run per side hid a 0.8-point
        drop); stopping at the profile's count would report "no measurable gap" for a real one. The added runs
        are the baseline's and candidate's own, so they also serve every arm's comparison afterwards.
        """
        b, c = self.base_arms()
        start = b.n
        while unsettled := self.unsettled():
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
            self.grow([b, c], min(self.gap_seeds, b.n + max(1, self.batch // 2)))
        if b.n > start:
            left = self.unsettled()
            state = f"still unsettled: {', '.join(left)}" if left else "settled"
            self.notes.append(
                f"the gap was unsettled at {start} seeds per side; grown to {b.n} seeds per side ({state})"
            )
            self.log.append(f"gap seeds {start} -> {b.n} ({state})")

    def gap_summary(self, m: str) -> dict[str, Any]:
        """The gap on metric ``m`` as the results state it: both sides' means, how much worse the candidate is
        (in the metric's direction) with its interval, and whether the gap was measured at all."""
        g = self.gap(m)
        b, c = self.base_arms()
        return {
            "baseline": finite_mean(b.values(m)),
            "candidate": finite_mean(c.values(m)),
            "worse_by": g.point if g else None,
            "low": g.low if g else None,
            "high": g.high if g else None,
            "measurable": bool(self.gap_known.get(m)),
        }

    def gap_note(self, metric: str) -> str:
        """Why ``metric``'s gap is not attributed, in one sentence."""
        g = self.gap(metric)
        label = "throughput (steps per CPU-second)" if metric == SPS else metric
        if g is None:
            b, c = self.base_arms()
            failed = [e for arm in (b, c) for e in arm.errors()]
            if failed:
                return (
                    f"{label}: too few training runs completed on both sides to measure a gap "
                    f"({len(failed)} failed; first: {failed[0]}); not attributed."
                )
            how = "" if metric == SPS else " " + self.metric.how_to_report
            return f"{label}: the training runs did not report it on both sides; not attributed.{how}"
        sides = self.gap_summary(metric)
        means = f"mean over seeds: baseline {fmt(sides['baseline'])}, candidate {fmt(sides['candidate'])}"
        point, low, high = (("+" if v > 0 else "") + fmt(v) for v in (g.point, g.low, g.high))
        # "+1,620", never "+1.62e+03"; a negative shortfall named as such, never "worse by -16.5"
        where = f"how much worse the candidate is: {point}, 95% CI {low}..{high}; {means}"
        if g.high < 0.0:
            return f"{label}: the candidate is measurably better than the baseline ({where}); nothing to attribute."
        return f"No measurable {label} gap between baseline and candidate ({where}); not attributed."

    def spent(self, variant_runs: int) -> dict[str, Any]:
        """What the search spent so far: runs (and how many came from the cache), runs on arms other than the
        two sides, the budget it had, and seconds since it started."""
        return {
            "runs": self.runs_used,
            "cached_runs": self.cached_runs,
            "variant_runs": variant_runs,
            "budget": self.budget,
            "seconds": round(time.perf_counter() - self.started, 1),
        }

    # -- pooled intervals ------------------------------------------------------------------------------

    def rests_on(self, name: str) -> list[Arm]:
        """The arms whose runs the family member ``name`` is measured on besides the baseline and candidate:
        the strategy's answer (``Strategy.rests_on``, for a contrast between two arms), else the arm of that
        name, else none."""
        own = getattr(self.strategy, "rests_on", None)
        if own is not None:
            return list(own(name))
        return [self.arms[name]] if name in self.arms and name not in SIDES else []

    def pooled(
        self, metric: str, values: dict[str, np.ndarray], arms: dict[str, Sequence[Arm]] | None = None
    ) -> dict[str, Effect]:
        """The share of ``metric``'s gap each entry of ``values`` restores (per seed, on the attribution scale,
        paired with the candidate), computed together: they share the pooled noise, and they are one family,
        so each interval accounts for every entry (Holm, :func:`rlaudit.stats.fractions_restored_holm`):
        among several arms, one interval that barely excludes zero is what chance alone produces.

        A throughput share whose runs (``arms[name]``, else :meth:`rests_on`, and both sides') were timed at
        too different loads is marked :attr:`Effect.incomparable`: its verdict is undecided, whatever its
        interval (:func:`~rlaudit.attribution.arms.sps_incomparable`)."""
        if not values:
            return {}
        b, c = self.base_arms()
        try:
            iv = stats.fractions_restored_holm(
                attribution_scale(metric, b.values(metric)),
                attribution_scale(metric, c.values(metric)),
                values,
                seed=self.seed,
            )
        except ValueError:
            return {}
        out = {k: family_effect(i, int((~np.isnan(values[k])).sum())) for k, i in iv.items()}
        if metric == SPS:
            for k, e in out.items():
                on = arms[k] if arms is not None and k in arms else self.rests_on(k)
                e.incomparable = sps_incomparable(on, (b, c))
        return out

    def effects(self, metric: str) -> dict[str, Effect]:
        """The strategy's family of shares on ``metric`` (:meth:`Strategy.values`), cached until the next
        runs (or :meth:`invalidate`)."""
        if metric not in self._effects:
            values = self.strategy.values(metric) if self.strategy is not None else {}
            self._effects[metric] = self.pooled(metric, values)
        return self._effects[metric]

    def effect(self, name: str, metric: str) -> Effect | None:
        """The share of ``metric``'s gap that the family member ``name`` (an arm, or a strategy's view)
        restores; None when it was not measured."""
        return self.effects(metric).get(name)

    def invalidate(self) -> None:
        """Forget the shares computed (the strategy changed its family)."""
        self._effects.clear()

    # -- sequential seeds ------------------------------------------------------------------------------

    def matters(self, name: str) -> bool:
        """Restores a meaningful share (:meth:`Effect.matters`) of some gap."""
        return any(
            (e := self.effect(name, m)) is not None and e.matters(self.delta) for m in self.active_metrics
        )

    def futile(self, e: Effect) -> bool:
        """Seeds up to ``max_seeds`` would still leave the interval straddling ``delta``: the effect sits on
        the threshold. Its half-width shrinks as 1/sqrt(seeds) at best, so when even that leaves ``delta``
        inside, the arm stays "undecided" instead of spending the budget on it. The projection starts from
        the point estimate, so it is made from :data:`FUTILITY_MIN_SEEDS` seeds on where the profile allows
        more."""
        if e.n >= self.max_seeds:
            return True
        needed = e.seeds_to_decide(self.delta)
        if needed is None:
            return True
        if e.n < FUTILITY_MIN_SEEDS < self.max_seeds:
            return False
        return needed > self.max_seeds

    def undecided(self, arm: Arm) -> bool:
        """Worth another seed: it ran, no metric shows it matters yet, and some metric still straddles
        ``delta`` by less than ``max_seeds`` could resolve. (A cause found on one metric is not grown to settle
        another.)"""
        if arm.unresolved or self.matters(arm.name):
            return False
        for m in self.active_metrics:
            e = self.effect(arm.name, m)
            if e is None or not (e.decided(self.delta) or self.futile(e)):
                return True
        return False

    def evaluate(self, arms: Sequence[Arm], *, grow: bool = True) -> None:
        """Run arms at ``seeds0`` seeds, then (if ``grow``) add seeds one round at a time, in parallel, to
        those still undecided, while the budget allows."""
        arms = list(arms)
        base = self.base_arms()
        start = [a for a in arms if a.n < self.seeds0]
        if start and self.runs_used + sum(self.seeds0 - a.n for a in start) > self.budget:
            self.notes.append(
                "budget spent before " + ", ".join(repr(a.name) for a in start) + " could be measured"
            )
            return
        self.grow([*base, *arms], self.seeds0)
        while grow:
            pending = [a for a in arms if a.n < self.max_seeds and self.undecided(a)]
            if not pending or self.runs_used + len(pending) > self.budget:
                return
            self.grow(pending)  # one seed more each (the baseline and candidate have max_seeds)


def family_effect(share: stats.FamilyShare, n: int) -> Effect:
    """An :class:`Effect` from a share whose interval accounts for its family of arms (Holm)."""
    return Effect(
        point=share.point, low=share.low, high=share.high, n=n, level=share.level, family=share.family
    )


def finite_mean(values: np.ndarray) -> float:
    """Mean of the finite values; NaN (without a warning) when there are none."""
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan


def primary_metric(metric: Metric | str | None, wb: Workbench | None) -> Metric:
    """The primary metric a search attributes: as given, else the workbench's, else the episodic return."""
    if isinstance(metric, Metric):
        return metric
    if metric:
        name, direction = parse_override(str(metric))
        return Metric(name, direction or "higher", primary=True, origin="override")
    if wb is not None:
        return wb.metric
    return DEFAULT_PRIMARY


def train_steps(wb: Any) -> int:
    """A full run's length on ``wb``: its ``train_steps`` (the subjects' own run length within the profile)."""
    steps = getattr(wb, "train_steps", None)
    return int(steps) if isinstance(steps, int) else int(wb.profile.train_steps)
