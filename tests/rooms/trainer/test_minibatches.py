"""The tests of :mod:`rlaudit.trainer.minibatches`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rlaudit.findings import Status
from rlaudit.recorder import MINIBATCH_UPDATES, Recorder
from rlaudit.trainer import minibatches as tm
from rlaudit.trainer.runs import RunData
from support.runs import bench, evidence, fake_run

# ---------------------------------------------------------------------------------------------------------------
# Minibatch composition
# ---------------------------------------------------------------------------------------------------------------


def test_random_span_by_hand() -> None:
    # Two of three items: ranges 1, 2, 1 -> mean 4/3; the span counts both ends: (4/3 + 1) / 3.
    assert tm.random_span(2, 3) == pytest.approx(7 / 9)


def _minibatches(order: str, batch: int = 64, size: int = 16, epochs: int = 2, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    rows: dict[str, list[int]] = {k: [] for k in ("step", "epoch", "minibatch", "position", "index")}
    fixed = rng.permutation(batch)
    for epoch in range(epochs):
        inds = {
            "shuffled": rng.permutation(batch),
            "contiguous": np.arange(batch),
            "once": fixed,
            "replacement": rng.integers(0, batch, batch),
        }[order]
        for k in range(batch // size):
            part = inds[k * size : (k + 1) * size]
            rows["step"] += [batch] * size
            rows["epoch"] += [epoch] * size
            rows["minibatch"] += [k] * size
            rows["position"] += list(range(size))
            rows["index"] += part.tolist()
    return rows


def test_composition_tells_shuffled_from_contiguous_from_not_reshuffled() -> None:
    shuffled = tm.composition(pd.DataFrame(_minibatches("shuffled")))
    assert shuffled["coverage"] == 1.0 and shuffled["repeated"] == 0.0 and shuffled["locality"] > 0.8
    contiguous = tm.composition(pd.DataFrame(_minibatches("contiguous")))
    assert contiguous["repeated"] == 1.0 and contiguous["locality"] == pytest.approx(
        (16 / 64) / tm.random_span(16, 64)
    )
    assert set(tm.problems(contiguous)) == {"locality", "repeated"}
    once = tm.composition(pd.DataFrame(_minibatches("once")))
    assert set(tm.problems(once)) == {"repeated"}
    drawn = tm.composition(pd.DataFrame(_minibatches("replacement")))
    assert set(tm.problems(drawn)) == {"coverage"} and drawn["duplicates"] > 0.2


def test_minibatch_check_flags_the_candidate_and_skips_a_trainer_that_does_not_report(tmp_path: Path) -> None:
    def side(order: str, seed: int) -> list[RunData]:
        return [fake_run(tmp_path, seed=seed, tables={"minibatches": _minibatches(order, seed=seed)})]

    (bad,) = tm.minibatches(bench(), given=evidence(side("shuffled", 0), side("contiguous", 1))).findings
    assert bad.status is Status.SUSPECT and "contiguous" in bad.evidence.summary
    (same,) = tm.minibatches(bench(), given=evidence(side("shuffled", 0), side("shuffled", 1))).findings
    assert same.status is Status.CLEARED
    (both,) = tm.minibatches(bench(), given=evidence(side("once", 0), side("once", 1))).findings
    assert both.status is Status.NOTED
    silent = [fake_run(tmp_path, seed=5)]
    (skipped,) = tm.minibatches(bench(), given=evidence(side("shuffled", 0), silent)).findings
    assert skipped.status is Status.SKIPPED and "recorder.minibatch" in skipped.remediation
    assert "candidate" in skipped.evidence.summary


def test_the_recorder_keeps_the_minibatches_of_the_first_updates(tmp_path: Path) -> None:
    from rlaudit.engine.io import read_table

    rec = Recorder(tmp_path)
    for update in range(MINIBATCH_UPDATES + 2):
        # no step reported between updates: a new update starts when the epoch goes back to 0
        for epoch in range(2):
            for k in range(2):
                rec.minibatch(epoch, np.arange(4 * k, 4 * k + 4) + update)
    rec.close()
    table = read_table(tmp_path / "minibatches")
    assert len(table) == MINIBATCH_UPDATES * 2 * 2 * 4
    first = table.iloc[:16]
    assert first["minibatch"].tolist() == [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4
    assert first["position"].tolist() == list(range(4)) * 4
    assert table["index"].max() == MINIBATCH_UPDATES - 1 + 7
