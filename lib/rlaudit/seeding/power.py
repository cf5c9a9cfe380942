"""How many seeds a comparison needs: the power table of the seeding room, and how to read it elsewhere.

The seeding check ``seeding/variance`` measures the run-to-run standard deviation of the final primary metric
(``wb.metric``, read with :meth:`rlaudit.trainer.runs.RunData.final`) over the shared training runs, pooled
over both sides, and turns it into a *power table*: for several effect sizes, the seeds per side needed

- to **detect** a difference of that size (``seeds_to_detect``: a two-sided two-sample t-test at ``alpha``
  with ``power``, :func:`rlaudit.stats.power_seeds`), and
- to **clear** one, i.e. to show equivalence within a margin of that size when there is no true difference
  (``seeds_to_clear``: two one-sided tests, :func:`rlaudit.evidence.equivalence_seeds`).

The table travels in the finding, so that the summary and the trainer's learning check use the same notion
of "seeds needed" without recomputing it::

    details = finding.evidence.details           # the seeding/variance finding
    details["power_table"]                        # rows of :func:`seeds_table` (list of dicts)
    details["pooled_sd"], details["metric"]       # the SD it rests on, the metric's name
    seeds_needed(details["power_table"], effect=2.0)              # seeds per side to detect a gap of 2.0
    seeds_needed(details["power_table"], effect=2.0, kind="clear")  # ... to show |gap| < 2.0

Light module (numpy, pandas and scipy on call): audit side only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rlaudit import stats
from rlaudit.evidence import equivalence_seeds

RELATIVE_EFFECTS = (0.05, 0.10, 0.25, 0.50)
"""Effect sizes of the table, as fractions of the baseline's mean final metric."""

COLUMNS = [
    "effect",
    "effect (% of baseline mean)",
    "effect_sd",
    "seeds_to_detect",
    "seeds_to_clear",
    "seeds_per_arm",
    "total_runs",
]
"""Columns of :func:`seeds_table`: ``effect`` (metric units), its share of the baseline mean (NaN when that
mean is 0), ``effect_sd`` (effect / SD), ``seeds_to_detect`` and ``seeds_to_clear`` (per side),
``seeds_per_arm`` (= ``seeds_to_detect``, the name :func:`rlaudit.stats.power_table` uses) and ``total_runs``
(both sides, to detect)."""


def table_effects(sd: float, baseline_mean: float) -> list[float]:
    """The effects a table sizes: :data:`RELATIVE_EFFECTS` of ``|baseline_mean|``, or 0.5, 1 and 2 SD when
    the mean is 0 (or not finite); only positive ones."""
    if math.isfinite(baseline_mean) and baseline_mean != 0:
        effects = [e * abs(baseline_mean) for e in RELATIVE_EFFECTS]
    else:
        effects = [0.5 * sd, sd, 2 * sd] if math.isfinite(sd) else []
    return [e for e in effects if e > 0]


def seeds_table(
    sd: float,
    effects: Sequence[float],
    *,
    baseline_mean: float = math.nan,
    alpha: float = 0.05,
    power: float = 0.8,
) -> pd.DataFrame:
    """Seeds per side to detect, or to clear, a difference of each size.

    Args:
        sd: Run-to-run standard deviation of the final metric (pooled over both sides), in metric units.
        effects: Differences worth detecting (and equivalence margins), in metric units, > 0.
        baseline_mean: The baseline's mean final metric, to state each effect as a share of it.
        alpha: Significance level (two-sided for detection, each one-sided test for equivalence).
        power: Probability of detecting the effect (or of showing equivalence when there is no difference).

    Returns:
        One row per effect, columns :data:`COLUMNS` (empty with those columns when ``effects`` is).

    Raises:
        ValueError: ``sd`` is negative or not finite, or an effect is not a positive finite number.
    """
    if not (math.isfinite(sd) and sd >= 0):
        raise ValueError(f"sd must be a finite non-negative standard deviation, got {sd}")
    bad = [e for e in effects if not (math.isfinite(e) and e > 0)]
    if bad:
        raise ValueError(f"effects must be positive finite differences in the metric's unit, got {bad}")
    rows = []
    for effect in effects:
        detect = stats.power_seeds(sd, effect, alpha=alpha, power=power)
        clear = equivalence_seeds(sd, effect, alpha=alpha, power=power)
        rows.append(
            {
                "effect": float(effect),
                "effect (% of baseline mean)": 100 * effect / abs(baseline_mean)
                if math.isfinite(baseline_mean) and baseline_mean != 0
                else math.nan,
                "effect_sd": effect / sd if sd > 0 else math.inf,
                "seeds_to_detect": detect,
                "seeds_to_clear": clear,
                "seeds_per_arm": detect,
                "total_runs": 2 * detect,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def seeds_needed(
    table: pd.DataFrame | Sequence[Mapping[str, Any]], effect: float, *, kind: str = "detect"
) -> int | None:
    """Seeds per side for an effect of ``effect`` (metric units), read from a power table.

    The table's row with the largest effect not above ``effect`` answers (a smaller effect needs at least as
    many seeds, so the answer errs on the side of enough); None when every row's effect is larger or the table
    is empty.

    Args:
        table: :func:`seeds_table`'s DataFrame or its records (``finding.evidence.details["power_table"]``).
        effect: The difference to detect, or the equivalence margin, in the metric's unit.
        kind: ``"detect"`` (a difference) or ``"clear"`` (equivalence within ``effect``).
    """
    if kind not in ("detect", "clear"):
        raise ValueError(f"kind must be 'detect' or 'clear', got {kind!r}")
    rows = table.to_dict("records") if isinstance(table, pd.DataFrame) else list(table)
    column = "seeds_to_detect" if kind == "detect" else "seeds_to_clear"
    fits = [r for r in rows if float(r.get("effect", math.inf)) <= abs(effect) and r.get(column) is not None]
    if not fits:
        return None
    value = max(fits, key=lambda r: float(r["effect"]))[column]
    return int(value) if value is not None and math.isfinite(float(value)) else None
