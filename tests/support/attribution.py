"""A simulated attribution search: every suspect restores a known share of each gap, with seed noise, so the
search's decisions can be tested in milliseconds (the real search runs in the summary notebook and in
tests/rooms/test_two_faults_rank_on_top.py)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping

import numpy as np

from rlaudit.attribution.arms import SPS
from rlaudit.attribution.engine import Engine
from rlaudit.attribution.screening import Screening
from rlaudit.attribution.suspects import Suspect


class SimSearch:
    """The screening on an engine whose runs come from a model (the engine's runner is :meth:`measure`):
    restoring suspects closes the sum of their shares (capped at the whole gap; for SPS, shares of the CPU time
    per step, since costs add), plus noise shared by seed (paired) and noise of each run.

    Args:
        suspects: The suspects (see :func:`fixes`).
        heart: Suspect name -> the share of the primary metric's gap its restore closes.
        sps: Suspect name -> the share of the CPU time per step lost that its restore wins back.
        noise: Standard deviation of a run's primary metric and of its SPS.
        **kwargs: For :class:`~rlaudit.attribution.engine.Engine` (``metric`` defaults to ``heart.get``,
            higher is better).

    Attributes:
        engine, screening: The engine and the strategy it serves.
        ends: Metric -> ``(baseline, candidate)`` means; set it to model another gap.
        calls: Runs measured so far.
    """

    def __init__(
        self,
        suspects: Iterable[Suspect],
        heart: Mapping[str, float],
        sps: Mapping[str, float],
        noise: tuple[float, float] = (0.3, 800.0),  # ~2% SPS noise, as measured
        **kwargs: object,
    ) -> None:
        kwargs.setdefault("metric", "heart.get")
        self.engine = Engine(None, runner=self.measure, **kwargs)  # type: ignore[arg-type]
        self.screening = Screening(self.engine, list(suspects))
        self.metric = self.engine.metric
        name = self.metric.name
        self.shares = {name: dict(heart), SPS: dict(sps)}
        self.noise = {name: noise[0], SPS: noise[1]}
        self.ends = {name: (6.2, 0.5), SPS: (58_000.0, 33_500.0)}
        self.calls = 0

    @property
    def arms(self):
        return self.engine.arms

    def run(self):
        return self.screening.run()

    def measure(self, calls):
        self.calls += len(calls)
        out = []
        for arm, s in calls:
            rng = np.random.default_rng([s, zlib.crc32(arm.name.encode())])
            shared = np.random.default_rng([s, 7]).normal(size=2)
            row = {}
            for i, m in enumerate((self.metric.name, SPS)):
                b, c = self.ends[m]
                if arm.name == "baseline":
                    share = 1.0
                elif arm.injects:  # the baseline with these changes put in
                    share = 1.0 - min(1.0, sum(self.shares[m].get(n, 0.0) for n in arm.injects))
                else:
                    share = min(1.0, sum(self.shares[m].get(n, 0.0) for n in arm.suspects))
                if m == SPS:  # costs add: the share is of the time per step
                    b, c = 1.0 / b, 1.0 / c
                value = c + (b - c) * share
                row[m] = (1.0 / value if m == SPS else value) + self.noise[m] * (
                    0.5 * shared[i] + rng.normal()
                )
            out.append((None, row))
        return out


def fixes(named: Iterable[tuple[str, str, float]]) -> list[Suspect]:
    """Built-in-fix suspects from ``(name, subsystem, prior)``, each removable and injectable."""
    return [Suspect(name, sub, "fix", remove=(name,), add=(name,), prior=prior) for name, sub, prior in named]


REGRESSED_LIKE = [
    ("gae", "loss", 6.5),
    ("rebuild", "env", 5.5),
    ("shaped", "rewards", 5.1),
    ("full_scan", "curriculum", 4.95),
    ("lr", "optimizer", 4.5),
    ("interval", "checkpointing", 3.0),
]
"""Suspects shaped like the built-in regressed candidate's faults, with their audit priors."""
