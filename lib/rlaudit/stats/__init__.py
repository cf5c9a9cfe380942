"""Statistics for comparing two training setups: bootstrap intervals, tests, effect sizes, slopes, power.

A small functional API in the spirit of rliable's ``metrics.py``: plain functions over numpy arrays whose
docstrings state shapes. One difference on purpose: every random draw takes an explicit ``seed`` (an int or
a ``np.random.Generator``), so every interval reproduces to the last digit.

Conventions:
    - Samples are 1-D arrays, one value per run (seed), unless a docstring says otherwise.
    - Differences are ``a - b`` in argument order; call ``f(candidate, baseline)`` to get "candidate minus
      baseline".
    - Intervals come back as :class:`Interval` ``(point, low, high)``, a tuple that also has names.
    - Test results come back as JSON-ready dicts with ``name``, ``statistic`` and ``p``, so they drop straight
      into :attr:`rlaudit.findings.Evidence.test`.

Modules, each re-exported here (``from rlaudit import stats; stats.bootstrap_ci(...)``):
    - :mod:`~rlaudit.stats.intervals`: the bootstrap engine and intervals, the share of a gap restored
      (one arm, or a family of arms with Holm's adjustment).
    - :mod:`~rlaudit.stats.effects`: probability of improvement, two-sample tests, effect sizes, chi-square.
    - :mod:`~rlaudit.stats.trends`: scaling exponents, growth slopes, trend tests.
    - :mod:`~rlaudit.stats.power`: seeds needed to detect a difference.
"""

from __future__ import annotations

from rlaudit.stats.effects import (
    chi_square_distributions,
    cohens_d,
    probability_of_improvement,
    probability_of_improvement_ci,
    standardized_mean_difference,
    two_sample_test,
)
from rlaudit.stats.intervals import (
    FamilyShare,
    Interval,
    Method,
    Resampling,
    Seed,
    as_generator,
    bootstrap_ci,
    bootstrap_diff,
    bootstrap_ratio_ci,
    fraction_restored,
    fractions_restored_holm,
    fractions_restored_pooled,
    holm_adjust,
    holm_levels,
    iqm,
    iqm_ci,
    paired_bootstrap_diff,
    paired_t_interval,
)
from rlaudit.stats.power import power_seeds, power_table
from rlaudit.stats.trends import growth_slope, loglog_slope, trend_test

__all__ = [
    "FamilyShare",
    "Interval",
    "Method",
    "Resampling",
    "Seed",
    "as_generator",
    "bootstrap_ci",
    "bootstrap_diff",
    "bootstrap_ratio_ci",
    "chi_square_distributions",
    "cohens_d",
    "fraction_restored",
    "fractions_restored_holm",
    "fractions_restored_pooled",
    "growth_slope",
    "holm_adjust",
    "holm_levels",
    "iqm",
    "iqm_ci",
    "loglog_slope",
    "paired_bootstrap_diff",
    "paired_t_interval",
    "power_seeds",
    "power_table",
    "probability_of_improvement",
    "probability_of_improvement_ci",
    "standardized_mean_difference",
    "trend_test",
    "two_sample_test",
]
