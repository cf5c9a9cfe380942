"""Shared training runs: ask for them here so every notebook hits the same cache entries.

A run is the :func:`rlaudit.trainer.probes.train_run` probe's artifact: the recorder's tables under
``run/`` (scalars, episodes, updates, layers, phases, memory, minibatches, summary.json) plus the subject's own
logs and checkpoints when its ``train`` wrote them under the recorder's ``run_dir``.

Checks that read runs take :func:`training_runs` (or :func:`short_training_runs`) as their ``needs=``: the
evidence is a :class:`TrainingRuns`, guarded like a probe pair (SKIPPED without ``train``, ERROR when no run of
a side completed). Both accept ``given=`` runs instead, which is how the tests feed a check an A/A pair.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlaudit.engine.io import read_table, table_path
from rlaudit.engine.workbench import SIDES, Pair, ProbeResult, Workbench
from rlaudit.findings import Finding
from rlaudit.trainer.probes import RUN_SUBDIR, train_run

if TYPE_CHECKING:
    from rlaudit.trainer.outcomes import RunOutcome


def default_seeds(wb: Workbench, n: int | None = None) -> list[int]:
    """The profile's seed list: ``0 .. seeds-1`` (every audit uses the same seeds, so runs are shared)."""
    return list(range(n if n is not None else wb.profile.seeds))


def runs(
    wb: Workbench,
    *,
    seeds: Sequence[int] | None = None,
    steps: int | None = None,
    short: bool = False,
    overrides: Sequence[str] = (),
) -> list[Pair]:
    """Training runs of both subjects, one :class:`Pair` per seed (cached, run in parallel).

    Args:
        seeds: Seeds to run (default: the profile's ``seeds``).
        steps: Environment steps per run (default: the workbench's ``train_steps``, or ``short_train_steps``
            with ``short=True``).
        short: Use the profile's short runs (for runtime traces: schedules, geometry, logging).
        overrides: Config overrides for both sides (``dotted.key=value``).
    """
    steps = steps if steps is not None else (wb.short_train_steps if short else wb.train_steps)
    seeds = list(seeds) if seeds is not None else default_seeds(wb, 2 if short else None)
    params = [run_params(steps, s, overrides) for s in seeds]
    return wb.run_many(train_run, params)


def run_params(steps: int, seed: int, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The train_run parameters for one run; build them here so every caller hits the same cache key."""
    params: dict[str, Any] = {"steps": int(steps), "seed": int(seed)}
    if overrides:
        params["overrides"] = list(overrides)
    return params


@dataclass
class RunData:
    """One training run's recorded truth, read lazily from its artifact.

    Attributes:
        side: ``baseline``/``candidate`` (or a variant label).
        seed: The run's seed.
        dir: The artifact directory.
        result: The probe's returned dict (summary, checkpoints, log_dir).
    """

    side: str
    seed: int
    dir: Path
    result: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_result(cls, res: ProbeResult, label: str | None = None) -> RunData:
        if not res.ok:
            raise ValueError(
                f"the {res.side} run did not complete ({res.error or res.missing}); check .ok first"
            )
        return cls(
            side=label or res.side,
            seed=int(res.result.get("seed", -1)),
            dir=Path(res.dir),
            result=dict(res.result),
        )

    @property
    def run_dir(self) -> Path:
        return self.dir / RUN_SUBDIR

    def table(self, name: str) -> pd.DataFrame:
        """A recorder table (``scalars``, ``episodes``, ``updates``, ``layers``, ``phases``, ``memory``);
        empty when the trainer never wrote it."""
        if table_path(self.run_dir / name) is None:
            return pd.DataFrame()
        return read_table(self.run_dir / name)

    @cached_property
    def summary(self) -> dict[str, Any]:
        path = self.run_dir / "summary.json"
        return json.loads(path.read_text()) if path.exists() else {}

    @cached_property
    def config(self) -> dict[str, Any]:
        return json.loads((self.dir / "config.json").read_text())

    def path(self, relative: str | None) -> Path | None:
        """Resolve a path the probe recorded (relative to the artifact when it was inside it)."""
        if relative is None:
            return None
        p = Path(relative)
        return p if p.is_absolute() else self.dir / p

    @property
    def checkpoints(self) -> list[Path]:
        return [self.path(p) for p in self.result.get("checkpoints", [])]

    @property
    def log_dir(self) -> Path | None:
        return self.path(self.result.get("log_dir"))

    def metric(self, metric: Any) -> pd.DataFrame:
        """The metric over this run: ``step``, ``value`` (empty when the run never reported it).

        An ``episode`` metric comes from the episodes table (one row per finished episode); a ``scalar``
        metric, or an episode statistic the episodes do not carry, from the logged scalar of that name (or one
        ending in ``/<name>``, as ``env/heart.get`` for ``heart.get``).

        Args:
            metric: A :class:`rlaudit.metrics.Metric`, or a name (read as an episode statistic first).
        """
        name = str(getattr(metric, "name", metric))
        source = getattr(metric, "source", "episode")
        episodes = self.table("episodes") if source == "episode" else pd.DataFrame()
        if not episodes.empty and name in episodes and "step" in episodes:
            out = episodes[["step", name]].rename(columns={name: "value"})
            out["value"] = pd.to_numeric(out["value"], errors="coerce")
            return out.dropna().reset_index(drop=True)
        scalars = self.table("scalars")
        if not scalars.empty:
            names = [
                n for n in dict.fromkeys(scalars["name"]) if str(n) == name or str(n).endswith("/" + name)
            ]
            if names:
                part = scalars[scalars["name"] == (name if name in names else names[0])]
                return part[["step", "value"]].reset_index(drop=True)
        return pd.DataFrame(columns=["step", "value"])

    def final(self, metric: Any, tail: float = 0.25) -> float:
        """The metric's mean over the last ``tail`` of the run's steps (the last 10 points when that window is
        empty); NaN when the run never reported it."""
        series = self.metric(metric)
        if series.empty:
            return float("nan")
        end = float(self.summary.get("steps") or series["step"].max())
        window = series[series["step"] >= (1.0 - tail) * end]
        if window.empty:
            window = series.tail(10)
        return float(window["value"].mean())

    @property
    def sps(self) -> float | None:
        value = self.summary.get("sps") or self.result.get("summary", {}).get("sps")
        return float(value) if value is not None else None

    @property
    def cpu_per_step(self) -> float | None:
        """CPU seconds of the training process per environment step, in steady state (after the first
        update, net of the recorder's writes: the recorder's ``sps_cpu``); None when not recorded. For a run
        whose policy was on CUDA, wall seconds instead, synchronized with the GPU (``sps_wall``): the process's
        CPU time leaves out the work it queued on the GPU."""
        on_gpu = str(self.summary.get("device") or "").startswith("cuda")
        value = self.summary.get("sps_wall" if on_gpu else "sps_cpu")
        return 1.0 / float(value) if value else None

    def calibration(self, kind: str) -> float | None:
        """CPU seconds of one calibration workload the probe timed beside ``train`` (median): ``"torch"`` or
        ``"numpy"`` (see :func:`rlaudit.trainer.probes._calibrate`); None when the run has no such value."""
        value = (self.result.get("calibration") or {}).get(kind)
        return float(value) if value else None


@dataclass
class TrainingRuns:
    """The training runs of both sides, as one piece of evidence for a check.

    Attributes:
        pairs: One :class:`Pair` per seed (empty when built from ``data`` directly).
        data: ``{"baseline": [RunData per completed run], "candidate": [...]}``.
    """

    pairs: list[Pair] = field(default_factory=list)
    data: dict[str, list[RunData]] = field(default_factory=dict)
    _outcomes: dict[str, list[RunOutcome]] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, pairs: Sequence[Pair]) -> TrainingRuns:
        return cls(pairs=list(pairs), data=run_data(pairs))

    def __getitem__(self, side: str) -> list[RunData]:
        return self.data.get(side, [])

    def outcomes(self) -> dict[str, list[RunOutcome]]:
        """How every run asked for ended, per side (failed runs included; see :mod:`rlaudit.trainer.outcomes`).

        Built from the pairs when there are any, else from the completed runs in ``data``.
        """
        from rlaudit.trainer.outcomes import outcome_of_run, outcomes_of

        if self._outcomes is None:
            self._outcomes = (
                outcomes_of(self.pairs)
                if self.pairs
                else {
                    side: [outcome_of_run(run, side) for run in self[side]]
                    for side in ("baseline", "candidate")
                }
            )
        return self._outcomes

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        """SKIPPED or ERROR when a side has no completed run; None when both have at least one (a failed seed
        leaves the others to compare)."""
        if all(self[side] for side in ("baseline", "candidate")):
            return None
        for pair in self.pairs:
            finding = pair.guard(id, subsystem, hypothesis)
            if finding is not None:
                return finding
        return Finding.error(id, subsystem, hypothesis, "audit", RuntimeError("no training run completed"))


def side_medians(
    runs: TrainingRuns, stat: Callable[[RunData], dict[str, float] | None], keys: Iterable[str]
) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Each side's median over its runs of the numbers ``stat`` reads from one run (None: it recorded none).

    Returns:
        ``(medians, lacking)``: ``{side: {key: median}}`` for the sides where some run recorded them, and the
        sides where none did (to name in a SKIPPED finding).
    """
    keys = tuple(keys)
    medians: dict[str, dict[str, float]] = {}
    lacking: list[str] = []
    for side in SIDES:
        found = [v for v in (stat(r) for r in runs[side]) if v is not None]
        if found:
            medians[side] = {k: float(np.median([v[k] for v in found])) for k in keys}
        else:
            lacking.append(side)
    return medians, lacking


def training_runs(wb: Workbench, given: TrainingRuns | None = None) -> TrainingRuns:
    """``needs=`` of checks on the profile's training runs (``given`` runs instead, when passed)."""
    return given if given is not None else TrainingRuns.of(runs(wb))


def short_training_runs(wb: Workbench, given: TrainingRuns | None = None) -> TrainingRuns:
    """``needs=`` of checks on the profile's short runs (runtime traces: schedules, clipping, ratios)."""
    return given if given is not None else TrainingRuns.of(runs(wb, short=True))


def run_data(pairs: Sequence[Pair]) -> dict[str, list[RunData]]:
    """``{"baseline": [RunData per ok seed], "candidate": [...]}`` from :func:`runs`' pairs (failed runs are
    left out here; :meth:`TrainingRuns.outcomes` keeps them, and the ``trainer/outcomes`` check reports them)."""
    out: dict[str, list[RunData]] = {"baseline": [], "candidate": []}
    for pair in pairs:
        for res in pair:
            if res.ok:
                out[res.side].append(RunData.from_result(res))
    return out


CURVE_SCALARS = ("charts/episodic_return", "losses/value_loss", "losses/policy_loss", "charts/learning_rate")
"""Logged scalars :func:`scalar_curves` shows besides the primary metric, when a trainer logs them."""


def scalar_curves(
    wb: Workbench, names: Sequence[str] = CURVE_SCALARS, *, short: bool = False
) -> pd.DataFrame:
    """The logged scalars of the shared runs as one tidy table for :func:`rlaudit.notebook.explore_curves`.

    Args:
        names: Scalars to keep, besides the primary metric's (its name, or a name ending in ``/<name>`` such as
            ``env/heart.get``); when no run logged any of them, every logged scalar is kept.
        short: The profile's short runs instead of the full ones.

    Returns:
        Columns ``step``, ``name``, ``value``, ``side``, ``seed`` (empty when no run logged a scalar).
    """
    metric = str(getattr(wb.metric, "name", wb.metric))
    frames = []
    for side, data in run_data(runs(wb, short=short)).items():
        for run in data:
            scalars = run.table("scalars")
            if not scalars.empty:
                frames.append(scalars.assign(side=side, seed=run.seed))
    if not frames:
        return pd.DataFrame(columns=["step", "name", "value", "side", "seed"])
    every = pd.concat(frames, ignore_index=True)
    label = every["name"].astype(str)
    wanted = label.isin(list(names)) | (label == metric) | label.str.endswith("/" + metric)
    return every[wanted].reset_index(drop=True) if wanted.any() else every
