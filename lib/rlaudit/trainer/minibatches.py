"""How each trainer forms its minibatches: which samples, in which order, reshuffled per epoch or not.

The batch geometry says how large the minibatches are; this says what is in them. A trainer that reports its
minibatches (``recorder.minibatch(epoch, indices)``, see :meth:`rlaudit.recorder.Recorder.minibatch`) leaves
the sample indices of each minibatch of its first updates in the ``minibatches`` table. Three properties of
each side are read from it, and compared:

- coverage: the share of the batch's samples an epoch visits (a trainer that samples with replacement, or
  drops a remainder, leaves some out);
- reshuffling: whether an epoch's minibatches are the previous epoch's again (the same sets of samples);
- locality: how far apart the samples of one minibatch lie in the batch, against a random draw. Rollout
  batches are stored in time order, so a contiguous block of indices is a run of consecutive, correlated time
  steps: the minibatch gradient is then an estimate from a few correlated trajectories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check
from rlaudit.evidence import fmt, pct
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES, stack_tables
from rlaudit.trainer.runs import RunData, TrainingRuns, training_runs

FULL_COVERAGE = 0.95  # an epoch that visits fewer of the batch's samples leaves some out
REPEATED = 0.5  # more than half of an epoch's minibatches repeated from the previous epoch: no reshuffling
LOCAL = 0.5  # minibatches spanning less than half of what a random draw spans are contiguous blocks
HOW = (
    "Call recorder.minibatch(epoch, indices) for each minibatch in train(), with the minibatch's sample indices "
    "into the update's flattened batch (b_inds[start:end]); the recorder keeps the first updates only."
)


def random_span(size: int, batch: int) -> float:
    """Expected ``(max - min + 1) / batch`` of ``size`` samples drawn without replacement from ``batch``.

    The range of a uniform sample of ``m`` of ``N`` ordered items has mean ``(m - 1)(N + 1) / (m + 1)``.
    """
    if size <= 1 or batch <= 0:
        return 1.0 / max(batch, 1)
    return ((size - 1) * (batch + 1) / (size + 1) + 1) / batch


def composition(table: pd.DataFrame) -> dict[str, Any]:
    """The composition of one side's recorded minibatches (every run and update pooled).

    Args:
        table: ``minibatches`` rows (``seed``, ``step``, ``epoch``, ``minibatch``, ``position``, ``index``).

    Returns:
        ``updates``, ``epochs`` (per update, median), ``batch`` (distinct samples per update, median),
        ``minibatch_size`` (median), ``coverage`` (mean share of the batch one epoch visits), ``duplicates``
        (mean share of an epoch's draws that repeat a sample), ``repeated`` (share of minibatches, from the
        second epoch on, whose samples are exactly a minibatch of the previous epoch; None with one epoch),
        ``locality`` (median over minibatches of their index span over a random draw's).
    """
    updates, epochs, batches, sizes, coverage, duplicates, repeated, locality = [], [], [], [], [], [], [], []
    keys = [k for k in ("seed", "step") if k in table]
    for _, update in table.groupby(keys, sort=True):
        batch = int(update["index"].nunique())
        updates.append(1)
        batches.append(batch)
        by_epoch = {int(e): part for e, part in update.groupby("epoch", sort=True)}
        epochs.append(len(by_epoch))
        previous: set[frozenset[int]] | None = None
        for _, part in by_epoch.items():
            draws = part["index"].to_numpy()
            coverage.append(len(np.unique(draws)) / batch)
            duplicates.append(1.0 - len(np.unique(draws)) / len(draws))
            sets = []
            for _, mb in part.sort_values("position").groupby("minibatch", sort=True):
                idx = mb["index"].to_numpy()
                sizes.append(len(idx))
                locality.append(((idx.max() - idx.min() + 1) / batch) / random_span(len(idx), batch))
                sets.append(frozenset(idx.tolist()))
            if previous is not None:
                repeated.extend(float(s in previous) for s in sets)
            previous = set(sets)
    return {
        "updates": len(updates),
        "epochs": float(np.median(epochs)) if epochs else None,
        "batch": float(np.median(batches)) if batches else None,
        "minibatch_size": float(np.median(sizes)) if sizes else None,
        "coverage": float(np.mean(coverage)) if coverage else None,
        "duplicates": float(np.mean(duplicates)) if duplicates else None,
        "repeated": float(np.mean(repeated)) if repeated else None,
        "locality": float(np.median(locality)) if locality else None,
    }


def problems(comp: Mapping[str, Any]) -> dict[str, str]:
    """The properties of one side's composition that depart from the usual shuffled epochs, in words."""
    out = {}
    if comp["locality"] is not None and comp["locality"] < LOCAL:
        out["locality"] = (
            f"contiguous minibatches (each spans {pct(comp['locality'])} of what a random draw spans: runs of "
            "consecutive, correlated samples)"
        )
    if comp["repeated"] is not None and comp["repeated"] > REPEATED:
        out["repeated"] = f"no reshuffling between epochs ({pct(comp['repeated'])} of the minibatches repeat)"
    if comp["coverage"] is not None and comp["coverage"] < FULL_COVERAGE:
        out["coverage"] = f"an epoch visits only {pct(comp['coverage'])} of the batch"
    return out


def composition_table(comps: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    rows = [
        ("updates recorded", "updates"),
        ("epochs per update", "epochs"),
        ("samples per update", "batch"),
        ("minibatch size", "minibatch_size"),
        ("share of the batch one epoch visits", "coverage"),
        ("share of draws repeating a sample", "duplicates"),
        ("minibatches repeated from the previous epoch", "repeated"),
        ("minibatch span / random span", "locality"),
    ]
    return pd.DataFrame([{"quantity": label, **{s: comps[s][key] for s in SIDES}} for label, key in rows])


@check("trainer/minibatches", title="Minibatch composition", needs=training_runs)
def minibatches(c: Check, runs: TrainingRuns) -> Section:
    """Both trainers form their minibatches the same way: every sample once per epoch, reshuffled,
    uncorrelated.

    Coverage per epoch, reshuffling between epochs and locality of the recorded minibatches, per side.
    """
    from rlaudit.trainer import plots

    tables = {s: _side_table(runs[s]) for s in SIDES}
    lacking = [s for s in SIDES if tables[s].empty]
    if lacking:
        c.missing("minibatch composition (the recorder's `minibatches` table)", HOW, lacking)
    comps = {s: composition(tables[s]) for s in SIDES}
    issues = {s: problems(comps[s]) for s in SIDES}
    new = {k: v for k, v in issues["candidate"].items() if k not in issues["baseline"]}
    shared = {k: v for k, v in issues["candidate"].items() if k in issues["baseline"]}
    fixed = {k: v for k, v in issues["baseline"].items() if k not in issues["candidate"]}
    evidence = dict(
        baseline={k: comps["baseline"][k] for k in ("coverage", "repeated", "locality")},
        candidate={k: comps["candidate"][k] for k in ("coverage", "repeated", "locality")},
        details={"composition": comps, "problems": issues},
        figures=["minibatch order"],
    )
    if new:
        structural = bool({"locality", "repeated"} & set(new))
        finding = c.finding(
            Status.SUSPECT,
            Severity.HIGH if structural else Severity.MEDIUM,
            effect=comps["candidate"]["locality"] if "locality" in new else None,
            effect_label="candidate minibatch span / random span" if "locality" in new else "",
            summary="the candidate forms its minibatches differently: " + "; ".join(new.values()),
            remediation="Draw a fresh permutation of the batch for every epoch and slice minibatches from it "
            "(b_inds = rng.permutation(batch_size) inside the epoch loop), as the baseline does.",
            **evidence,
        )
    elif shared or fixed:
        both = "; ".join(shared.values())
        only = "; ".join(f"the baseline only: {v}" for v in fixed.values())
        finding = c.finding(
            Status.NOTED,
            Severity.LOW,
            summary="no difference that could explain a regression: "
            + "; ".join(p for p in (f"both sides: {both}" if both else "", only) if p),
            remediation="Not a difference between the setups; consider shuffling every epoch on both.",
            **evidence,
        )
    else:
        b = comps["baseline"]
        # reshuffling is measured only across two epochs of one update: a one-epoch side says nothing of it
        finding = c.finding(
            Status.CLEARED,
            measured={s: {k: comps[s][k] for k in ("coverage", "repeated", "locality")} for s in SIDES},
            measured_words={
                s: {"repeated": "one epoch per update"} for s in SIDES if comps[s]["repeated"] is None
            },
            summary=f"both sides visit every sample once per epoch ({pct(b['coverage'])} / "
            f"{pct(comps['candidate']['coverage'])}), reshuffle between epochs and draw spread-out minibatches "
            f"(span over a random draw's: {fmt(b['locality'])} vs {fmt(comps['candidate']['locality'])})",
            **evidence,
        )
    return c.section(
        finding,
        tables={"minibatch composition": composition_table(comps)},
        figures={"minibatch order": plots.minibatch_figure({s: tables[s] for s in SIDES})},
        notes="From the minibatches each trainer reported through `recorder.minibatch(epoch, indices)` in the "
        "first updates of every run. Locality is a minibatch's index span (largest minus smallest index, over the "
        f"batch) over what a random draw of that size spans: about 1 when shuffled, minibatch/batch for a "
        f"contiguous block; below {fmt(LOCAL)} counts as contiguous.",
    )


def _side_table(runs: Sequence[RunData]) -> pd.DataFrame:
    table = stack_tables({"side": runs}, "minibatches")
    needed = {"step", "epoch", "minibatch", "position", "index"}
    return table if not table.empty and needed <= set(table) else pd.DataFrame()
