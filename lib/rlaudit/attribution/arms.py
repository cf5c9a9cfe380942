"""Arms and what they measure: the runs of one setup, the share of a gap an arm restores, the search's result.

An *arm* is a set of training runs of one setup (the baseline, the candidate, or the candidate with suspects
undone) over the shared seeds. Each run gives the final primary metric and the steps per CPU-second; an arm's
:class:`Effect` on a metric is the fraction of the baseline-candidate gap it restores, with an interval.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rlaudit.subjects import SubjectSpec
from rlaudit.trainer.runs import RunData
from rlaudit.workbench import ProbeResult

if TYPE_CHECKING:
    from rlaudit.attribution.suspects import Suspect

SPS = "sps"
DEFAULT_METRIC = "heart.get"
DEFAULT_DELTA = 0.2
"""A restore "matters" when it closes at least this fraction of a gap (20%)."""


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
        measured: Per seed, the metrics read from its run: ``{metric: value, "sps": value}`` (NaN if failed).
    """

    name: str
    target: str | SubjectSpec
    overrides: tuple[str, ...] = ()
    suspects: tuple[str, ...] = ()
    injects: tuple[str, ...] = ()
    results: list[ProbeResult | None] = field(default_factory=list)
    measured: list[dict[str, float]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.measured)

    def add(self, result: ProbeResult | None, row: dict[str, float]) -> None:
        self.results.append(result)
        self.measured.append(row)

    def values(self, metric: str) -> np.ndarray:
        """Per seed: the final metric (or SPS); NaN for a failed run. Shape (n,)."""
        return np.asarray([row.get(metric, math.nan) for row in self.measured], dtype=float)

    def errors(self) -> list[str]:
        return [
            f"{self.name} seed {i}: {r.error or r.missing}"
            for i, r in enumerate(self.results)
            if r is not None and not r.ok
        ]


def final_metric(run: RunData, metric: str = DEFAULT_METRIC, tail: float = 0.25) -> float:
    """The metric averaged over the episodes that ended in the last ``tail`` fraction of the run's steps.

    Falls back to the logged scalar ``env/<metric>`` (or ``<metric>``) when the recorder saw no episodes
    with that statistic. NaN when neither exists.
    """
    episodes = run.table("episodes")
    if not episodes.empty and metric in episodes.columns and "step" in episodes.columns:
        last = float(episodes["step"].max())
        window = episodes[episodes["step"] >= (1.0 - tail) * last]
        if len(window):
            return float(window[metric].mean())
    scalars = run.table("scalars")
    if not scalars.empty:
        for name in (f"env/{metric}", metric):
            rows = scalars[scalars["name"] == name]
            if len(rows):
                last = float(rows["step"].max())
                return float(rows[rows["step"] >= (1.0 - tail) * last]["value"].mean())
    return math.nan


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
    """Steps per CPU-second of the training process when the recorder measured it (other load on the machine
    barely moves it, so two arms trained at different moments compare fairly), else wall-clock steps/s."""
    value = run.summary.get("sps_cpu") or run.sps
    return float(value) if value else math.nan


def minor_floor(delta: float) -> float:
    """The smallest share a "minor" contributor must surely restore: a quarter of ``delta``."""
    return delta / 4.0


@dataclass
class Effect:
    """Fraction of one metric's gap that an arm restores, paired by seed."""

    point: float
    low: float
    high: float
    n: int

    def decided(self, delta: float) -> bool:
        return self.low > delta or self.high < delta

    def matters(self, delta: float) -> bool:
        return self.low > 0.0 and self.point >= delta

    def contributes(self, delta: float) -> bool:
        """Surely restores more than a quarter of ``delta`` (5% of the gap by default). Below that floor,
        throughput shares are within what separate batches of runs on one busy machine differ by."""
        return self.low > minor_floor(delta)

    def verdict(self, delta: float) -> str:
        """``cause`` (a meaningful share), ``minor`` (surely above :func:`minor_floor`, surely below
        ``delta``), ``no effect`` (surely below ``delta``, not surely above the floor), or ``unclear``."""
        if self.matters(delta):
            return "cause"
        if self.high < delta:
            return "minor" if self.contributes(delta) else "no effect"
        return "unclear"


@dataclass
class Attribution:
    """Everything the summary reports: gaps, arms, effects per metric, the ranking, and what it cost."""

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
    """Suspect name -> metric -> the share of the gap its change reproduces when put into the baseline alone."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
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
