"""Arms and what they measure: the runs of one setup, the share of a gap an arm restores, the search's result.

An *arm* is a set of training runs of one setup (the baseline, the candidate, the candidate with suspects
undone, or for the change search a commit's checkout or a hybrid with hunks reverted or applied,
:class:`ChangeArm`) over the shared seeds. Each run gives the final primary metric and the steps per CPU-second; an arm's
:class:`Effect` on a metric is the fraction of the baseline-candidate gap it restores, with an interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rlaudit.engine.subjects import SubjectSpec
from rlaudit.engine.workbench import ProbeResult
from rlaudit.metrics import DEFAULT as DEFAULT_PRIMARY
from rlaudit.metrics import Metric
from rlaudit.trainer.runs import RunData

if TYPE_CHECKING:
    from rlaudit.attribution.suspects import Suspect

SIDES = ("baseline", "candidate")
"""The two arms every search starts from; every other arm's share is of the gap between them."""
SPS = "sps"
"""The throughput metric every search attributes beside the primary metric: steps per CPU-second."""
DEFAULT_DELTA = 0.2
"""A restore "matters" when it closes at least this fraction of a gap (20%)."""
LOAD_RATIO = 1.3
"""Runs compare on steps per CPU-second only when timed at a similar load: their contention,
``max(1, load per core)``, within this factor of each other (:func:`sps_incomparable`).

CPU time excludes the time a run waits for a core, but not what sharing one costs: with more runnable threads
than cores, every switch evicts caches and memory bandwidth is split, so the same code takes more CPU time per
step. Below one runnable thread per core each run has a core of its own and little contention, hence the floor
at 1. Two smoke reports of the same code on a 2-core machine, one at about 1.2..3.5 per core and one at
3.4..4.6, saw arms run ~1.8x slower per CPU-second than the candidate timed earlier and gave opposite verdicts
(one share 104% in one, -11% in the other). 1.3 is a judgment, not a fit: it lets through the few tenths a
one-minute load average moves by as runs start and finish, and refuses differences like those."""
OVERLAP_MARGIN = 0.2
"""Single restores "add up to well over" a gap when their sum passes 100% by more than this (20 points): they
overlap, and the joint restore, not their sum, is the total."""


@dataclass
class Arm:
    """A set of training runs of one setup over the shared seeds.

    Attributes:
        name: ``"baseline"``, ``"candidate"``, or the restored suspects joined with " + ".
        target: What the workbench runs: ``"baseline"``, ``"candidate"`` or a spec string.
        overrides: Config overrides for the runs.
        suspects: Names of the suspects this arm restores.
        injects: Names of the suspects this arm injects into the baseline (the reverse experiment).
        results: One probe result per seed, in seed order (None where the runs came from elsewhere).
        measured: Per seed, what its run measured: ``{primary metric name: final value, "sps": steps per
            CPU-second}`` (NaN where the run failed or never reported it), and ``"load"``: the machine's load per
            core while it was timed (:func:`run_load`; NaN where unknown), not a metric, only what says
            whether its steps per CPU-second compare with another run's (:func:`sps_incomparable`).
        outcomes: Per seed, how its run ended (:class:`rlaudit.trainer.outcomes.RunOutcome`; None where the
            runs came from elsewhere): a run that failed is a failure of this arm, not a missing value.
        unresolved: Why its subject could not be built or its runs failed, so that no share is read from it
            (``""`` otherwise; the change search's hybrids and checkouts set it).
    """

    name: str
    target: str | SubjectSpec | None
    overrides: tuple[str, ...] = ()
    suspects: tuple[str, ...] = ()
    injects: tuple[str, ...] = ()
    results: list[ProbeResult | None] = field(default_factory=list)
    measured: list[dict[str, float]] = field(default_factory=list)
    outcomes: list[Any] = field(default_factory=list)
    unresolved: str = ""

    @property
    def n(self) -> int:
        return len(self.measured)

    def add(self, result: ProbeResult | None, row: dict[str, float]) -> None:
        from rlaudit.trainer.outcomes import outcome_of

        self.results.append(result)
        self.measured.append(row)
        self.outcomes.append(outcome_of(result, self.name) if result is not None else None)

    def failures(self) -> list[str]:
        """One line per run of this arm that did not finish with finite values: ``seed 0 raised
        FloatingPointError in train (subject.py:20): ...``, ``seed 1 non-finite from step 64 (...)``."""
        return [
            f"seed {i} {o.describe()}"
            for i, o in enumerate(self.outcomes)
            if o is not None and not o.finished
        ]

    def values(self, metric: str) -> np.ndarray:
        """Per seed: the final value of ``metric`` (a metric name, or :data:`SPS`); NaN for a failed run.
        Shape (n,)."""
        return np.asarray([row.get(metric, math.nan) for row in self.measured], dtype=float)

    def errors(self) -> list[str]:
        """One line per failed run: the probe's error, or the capabilities the subject lacks, and runs that
        finished with non-finite values."""
        lines = [
            f"{self.name} seed {i}: "
            + (str(r.error) if r.error else "lacks " + ", ".join(f"`{c}`" for c in r.missing))
            for i, r in enumerate(self.results)
            if r is not None and not r.ok
        ]
        return lines + [
            f"{self.name} seed {i}: {o.describe()}"
            for i, o in enumerate(self.outcomes)
            if o is not None and o.outcome == "non-finite"
        ]


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
    """

    kind: str = "revert"
    base: str = "candidate"
    hunks: tuple[str, ...] = ()
    frame: str = "candidate"
    reproduce: bool = False
    index: int | None = None


def attribution_scale(metric: str, values: np.ndarray) -> np.ndarray:
    """The scale on which a metric's gap is split between causes.

    Throughput is split as CPU time per step (``1 / SPS``), because costs add: a curriculum that costs 9 us
    and an environment rebuild that costs 3 us per step together cost 12 us, whatever order they are fixed
    in. Shares of steps per second do not add (the rebuild's gain in SPS grows once the curriculum is fixed),
    so on the SPS scale the causes of a throughput gap never seem to add up. Everything else is split on its
    own scale.
    """
    values = np.asarray(values, dtype=float)
    if metric != SPS:
        return values
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, 1.0 / values, np.nan)


def run_sps(run: RunData) -> float:
    """Steps per CPU-second of the training process when the recorder measured it (waiting for a core does not
    count, but sharing one does: compare runs timed at a similar load, :func:`sps_incomparable`), else
    wall-clock steps/s."""
    value = run.summary.get("sps_cpu") or run.sps
    return float(value) if value else math.nan


LOAD = "load"
"""The key of a run's load per core in :attr:`Arm.measured` (never attributed as a metric)."""


def run_load(run: RunData) -> float:
    """The machine's load per core while the run was timed (the recorder's ``load_per_core``); NaN for a run
    recorded without it (an older cache, a platform with no load average)."""
    value = run.summary.get("load_per_core")
    try:
        return float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def _loads_text(loads: np.ndarray) -> str:
    low, high = float(loads.min()), float(loads.max())
    return f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}..{high:.1f}"


def sps_incomparable(arms: Sequence[Arm], base: Sequence[Arm]) -> str:
    """Why a throughput share resting on ``arms`` (beside the baseline and candidate, ``base``) is no verdict:
    their runs were timed at loads whose contention, ``max(1, load per core)``, differs by more than
    :data:`LOAD_RATIO` (steps per CPU-second drift with it between batches, and the share's interval only knows
    the seed-to-seed spread within one). ``""`` when they compare, or when the load of either side's runs is
    unknown (runs recorded without it are compared as before)."""
    arm_loads = np.concatenate([a.values(LOAD) for a in arms]) if arms else np.array([])
    base_loads = np.concatenate([a.values(LOAD) for a in base]) if base else np.array([])
    arm_loads, base_loads = arm_loads[np.isfinite(arm_loads)], base_loads[np.isfinite(base_loads)]
    if not arm_loads.size or not base_loads.size:
        return ""
    contention = np.maximum(1.0, np.concatenate([arm_loads, base_loads]))
    if contention.max() <= LOAD_RATIO * contention.min():
        return ""
    who = "the arm was" if len(arms) == 1 else "its arms were"
    return (
        f"not comparable: {who} timed at load {_loads_text(arm_loads)} per core, the baseline and candidate at "
        f"{_loads_text(base_loads)}; cached runs keep the load they were timed at, so rerun with a fresh cache "
        "and one notebook at a time on an otherwise quiet machine (make report FRESH=1 JOBS=1; rlaudit report "
        "--fresh -j 1), so that every run is timed at a similar load"
    )


def ci_label(family: int | None) -> str:
    """``95% CI``, or ``95% CI over 6 arms (Holm)``: the name of a share's interval in sentences."""
    return "95% CI" if not family or family <= 1 else f"95% CI over {family} arms (Holm)"


def minor_floor(delta: float) -> float:
    """The smallest share a "minor" contributor must surely restore: a quarter of ``delta``."""
    return delta / 4.0


@dataclass
class Effect:
    """Fraction of one metric's gap that an arm restores, paired by seed.

    Attributes:
        point: The share restored.
        low, high: Its interval. Within a search the interval accounts for every arm the search tried
            (:func:`rlaudit.stats.fractions_restored_holm`): it covers this arm at ``level``, Holm's level
            for its place in the family, so that every decision read from it (a cause, a minor contributor,
            no effect) holds for the family at 95%.
        n: Seeds the arm rests on.
        level: Coverage of this arm's own interval (0.95 for a family of one).
        family: Arms the decision accounts for (1: this arm alone).
        incomparable: Why the share is no verdict whatever its interval (its runs were timed at too different
            loads, :func:`sps_incomparable`); ``""`` when it is one.
    """

    point: float
    low: float
    high: float
    n: int
    level: float = 0.95
    family: int = 1
    incomparable: str = ""

    def ci_text(self) -> str:
        """How the interval is named in a sentence: ``95% CI``, or ``95% CI over 6 arms (Holm)`` when it
        accounts for a family of arms."""
        return ci_label(self.family)

    def decided(self, delta: float) -> bool:
        return not self.incomparable and (self.low > delta or self.high < delta)

    def below(self, delta: float) -> bool:
        """Surely restores less than ``delta``: it can be ruled out (never when :attr:`incomparable`)."""
        return not self.incomparable and self.high < delta

    def matters(self, delta: float) -> bool:
        return not self.incomparable and self.low > 0.0 and self.point >= delta

    def contributes(self, delta: float) -> bool:
        """Surely restores more than a quarter of ``delta`` (5% of the gap by default). Below that floor,
        throughput shares are within what separate batches of runs on one busy machine differ by."""
        return not self.incomparable and self.low > minor_floor(delta)

    def seeds_to_decide(self, delta: float) -> int | None:
        """Seeds at which the interval would likely leave ``delta`` outside (:meth:`decided`): its half-width
        shrinks as 1/sqrt(seeds), so about ``n * (half-width / |point - delta|)^2``. None when the estimate
        sits on ``delta``, or when the share is :attr:`incomparable` (no number of seeds decides it)."""
        if self.incomparable:
            return None
        distance = abs(self.point - delta)
        if distance == 0.0:
            return None
        half = 0.5 * (self.high - self.low)
        return max(self.n, math.ceil(self.n * (half / distance) ** 2))

    def verdict(self, delta: float) -> str:
        """``cause`` (a meaningful share), ``minor`` (surely above :func:`minor_floor`, surely below
        ``delta``), ``no effect`` (surely below ``delta``, not surely above the floor), or ``undecided`` (the
        interval, which accounts for every arm of the search, decides none of these, or the share is
        :attr:`incomparable`)."""
        if self.incomparable:
            return "undecided"
        if self.matters(delta):
            return "cause"
        if self.below(delta):
            return "minor" if self.contributes(delta) else "no effect"
        return "undecided"


@dataclass
class Attribution:
    """Everything the summary reports: gaps, arms, effects per metric, the ranking, and what it cost.

    Attributes:
        metrics: The metrics attributed, by name: the primary metric's, then :data:`SPS`.
        gaps: Per metric: ``baseline`` and ``candidate`` (means over seeds), ``worse_by`` (how much worse the
            candidate is, in the metric's units: positive when it is worse, whichever direction is better) with
            its 95% interval ``low``..``high``, ``direction`` (``higher``/``lower`` is better),
            ``measurable`` (the interval lies above zero: the gap attribution explains), ``better`` (the
            candidate is measurably better: nothing to explain) and ``note`` (why a gap is not attributed).
        arms: Every arm run, the reverse checks last.
        effects: Arm name -> metric -> the share of the gap it restores.
        suspects: Every suspect, strongest audit evidence first.
        ranking: Metric -> rows (one per arm: ``arm``, ``suspects``, ``subsystems``, ``single``, ``point``,
            ``low``, ``high``, ``n``, ``verdict``), singles first, largest share first.
        together: The causes restored together: ``suspects``, ``effects`` per metric, ``note``.
        spent: Runs used, reused from the cache, the budget, and what a one-factor sweep would cost.
        notes: Sentences for the summary (gaps not attributed, budget spent, ...).
        log: What ran and why, in order.
        injected: Suspect name -> metric -> the share of the gap its change reproduces in the baseline alone.
        primary: The primary metric (name, direction, source).
    """

    metrics: list[str]
    gaps: dict[str, dict[str, float]]
    arms: list[Arm]
    effects: dict[str, dict[str, Effect]]
    suspects: list[Suspect]
    ranking: dict[str, list[dict[str, Any]]]
    together: dict[str, Any]
    spent: dict[str, Any]
    notes: list[str]
    log: list[str] = field(default_factory=list)
    injected: dict[str, dict[str, Effect]] = field(default_factory=dict)
    primary: Metric = DEFAULT_PRIMARY

    def label(self, metric: str) -> str:
        """How ``metric`` is named in sentences and figures (the primary metric says which way is better)."""
        if metric == SPS:
            return "steps per CPU-second"
        if metric == self.primary.name and self.primary.direction != "higher":
            return f"{metric} ({self.primary.better} is better)"
        return metric

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "primary": self.primary.to_dict(),
            "gaps": self.gaps,
            "arms": [
                {
                    "name": a.name,
                    "target": a.target,
                    "overrides": list(a.overrides),
                    "suspects": list(a.suspects),
                    "injects": list(a.injects),
                    "seeds": a.n,
                    "measured": a.measured,
                    "errors": a.errors(),
                    "outcomes": [o.outcome if o is not None else None for o in a.outcomes],
                }
                for a in self.arms
            ],
            "effects": {arm: {m: asdict(e) for m, e in per.items()} for arm, per in self.effects.items()},
            "suspects": [asdict(s) for s in self.suspects],
            "ranking": self.ranking,
            "together": self.together,
            "spent": self.spent,
            "notes": self.notes,
            "log": self.log,
            "injected": {n: {m: asdict(e) for m, e in per.items()} for n, per in self.injected.items()},
        }
