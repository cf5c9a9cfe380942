"""Two-sample comparisons: probability of improvement (with its interval), Welch and Mann-Whitney tests,
Cohen's d, per-feature standardized mean differences, and chi-square on categorical counts.

Test results come back as JSON-ready dicts with ``name``, ``statistic`` and ``p``, so they drop straight into
:attr:`rlaudit.findings.Evidence.test`. Differences are ``a - b`` in argument order.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

from rlaudit.stats.intervals import Interval, Seed, as_1d, bootstrap_statistic


def _poi_batch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """P(A > B) + P(A = B) / 2 for batches: a (B, n, ...), b (B, m, ...) -> (B,)."""
    from scipy.stats import rankdata

    n, m = a.shape[1], b.shape[1]
    ranks = rankdata(np.concatenate([a, b], axis=1), axis=1)  # mid-ranks for ties
    u = ranks[:, :n].sum(axis=1) - n * (n + 1) / 2.0  # Mann-Whitney U of a
    prob = u / (n * m)
    return prob.reshape(prob.shape[0], -1).mean(axis=1)  # average over tasks, as rliable


def probability_of_improvement(a: Any, b: Any) -> float:
    """Probability that a run of A scores higher than a run of B, ties counting half (rliable's definition).

    This is the Mann-Whitney U statistic of A divided by ``n * m``; with several tasks it is averaged over
    tasks. 0.5 means no difference.

    Args:
        a: Scores of A, shape (n,) or (n, tasks).
        b: Scores of B, shape (m,) or (m, tasks).
    """
    arr_a, arr_b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if arr_a.ndim not in (1, 2) or arr_a.shape[1:] != arr_b.shape[1:] or min(len(arr_a), len(arr_b)) < 1:
        raise ValueError(
            f"a and b must be (runs,) or (runs, tasks) with the same tasks, got {arr_a.shape} and {arr_b.shape}"
        )
    return float(_poi_batch(arr_a[np.newaxis], arr_b[np.newaxis])[0])


def probability_of_improvement_ci(
    a: Any, b: Any, *, n_boot: int = 2000, level: float = 0.95, seed: Seed
) -> Interval:
    """:func:`probability_of_improvement` with a percentile bootstrap interval.

    Runs of A and B are resampled independently (rliable's stratified bootstrap over runs).

    Args:
        a: Scores of A, shape (n,) or (n, tasks).
        b: Scores of B, shape (m,) or (m, tasks).
    """
    probability_of_improvement(a, b)  # validates shapes
    arr_a, arr_b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return bootstrap_statistic(
        [arr_a, arr_b],
        lambda xs: _poi_batch(xs[0], xs[1]),
        paired=False,
        n_boot=n_boot,
        level=level,
        method="percentile",
        seed=seed,
    )


def cohens_d(a: Any, b: Any) -> float:
    """Cohen's d of ``a - b``: difference of means over the pooled standard deviation (ddof=1).

    Args:
        a: Sample A, shape (n,).
        b: Sample B, shape (m,); ``n + m`` must be at least 3.

    Returns:
        d; 0.0 when both samples are constant and equal, +/-inf when they are constant and differ.
    """
    arr_a, arr_b = as_1d(a, "a"), as_1d(b, "b")
    n, m = len(arr_a), len(arr_b)
    if n + m < 3:
        raise ValueError(f"Cohen's d needs at least 3 values in total to estimate a spread, got {n} + {m}")
    diff = float(arr_a.mean() - arr_b.mean())
    ss = float(np.sum((arr_a - arr_a.mean()) ** 2) + np.sum((arr_b - arr_b.mean()) ** 2))
    pooled = math.sqrt(ss / (n + m - 2))
    if pooled == 0.0:
        return 0.0 if diff == 0.0 else math.copysign(math.inf, diff)
    return diff / pooled


def standardized_mean_difference(a: Any, b: Any) -> np.ndarray:
    """Per-feature standardized mean difference ``(mean_a - mean_b) / sqrt((var_a + var_b) / 2)``.

    The usual balance check between two distributions of observations: above about 0.1 a feature is
    distributed differently. Variances use ddof=1 (0 for a single row).

    Args:
        a: Samples of A, shape (n, d); a 1-D array is one feature, (n, 1).
        b: Samples of B, shape (m, d).

    Returns:
        Array (d,): 0 where both features are constant and equal, +/-inf where constant and different.
    """
    arr_a = np.asarray(a, dtype=float)
    arr_b = np.asarray(b, dtype=float)
    arr_a = arr_a[:, np.newaxis] if arr_a.ndim == 1 else arr_a
    arr_b = arr_b[:, np.newaxis] if arr_b.ndim == 1 else arr_b
    if arr_a.ndim != 2 or arr_b.ndim != 2 or arr_a.shape[1] != arr_b.shape[1]:
        raise ValueError(
            f"a and b must be (n, d) and (m, d) with the same d, got {arr_a.shape} and {arr_b.shape}"
        )
    if len(arr_a) == 0 or len(arr_b) == 0:
        raise ValueError("a and b need at least one row each")
    diff = arr_a.mean(axis=0) - arr_b.mean(axis=0)
    var_a = arr_a.var(axis=0, ddof=1) if len(arr_a) > 1 else np.zeros(arr_a.shape[1])
    var_b = arr_b.var(axis=0, ddof=1) if len(arr_b) > 1 else np.zeros(arr_b.shape[1])
    scale = np.sqrt((var_a + var_b) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        smd = diff / scale
    smd = np.where(scale == 0.0, np.where(diff == 0.0, 0.0, np.copysign(np.inf, diff)), smd)
    return smd


def two_sample_test(
    a: Any, b: Any, *, method: Literal["auto", "welch", "mann-whitney"] = "auto", alpha: float = 0.05
) -> dict[str, Any]:
    """Test whether two samples differ: Welch's t-test and the Mann-Whitney U test, and which one to read.

    ``method="auto"`` reads Welch's t when both samples have at least 3 runs, some spread, and Shapiro-Wilk
    does not reject normality at ``alpha``; otherwise Mann-Whitney, which assumes nothing about the shape.
    With 2 runs per arm no test can reach p < 0.05: use more seeds (see :func:`power_seeds`).

    Args:
        a: Sample A, shape (n,).
        b: Sample B, shape (m,).
        method: Which test's p-value to report as ``p``.
        alpha: Significance level for the normality check and ``significant``.

    Returns:
        ``{"name", "statistic", "p", "significant", "used", "reason", "welch": {"statistic", "p", "df"},
        "mann_whitney": {"statistic", "p"}, "n_a", "n_b", "mean_a", "mean_b", "cohens_d",
        "prob_improvement"}`` (``name``/``statistic``/``p`` are the chosen test's; differences are a - b).
    """
    from scipy import stats

    arr_a, arr_b = as_1d(a, "a"), as_1d(b, "b")
    n, m = len(arr_a), len(arr_b)
    constant_a = bool(np.all(arr_a == arr_a[0]))
    constant_b = bool(np.all(arr_b == arr_b[0]))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        if n < 2 or m < 2:
            welch = {"statistic": math.nan, "p": math.nan, "df": math.nan}
        elif constant_a and constant_b:
            # Welch's t is undefined without spread; two point masses are equal or certainly different.
            gap = float(arr_a[0] - arr_b[0])
            welch = {
                "statistic": 0.0 if gap == 0 else math.copysign(math.inf, gap),
                "p": 1.0 if gap == 0 else 0.0,
                "df": float(n + m - 2),
            }
        else:
            t = stats.ttest_ind(arr_a, arr_b, equal_var=False)
            welch = {"statistic": float(t.statistic), "p": float(t.pvalue), "df": float(t.df)}
        mw = stats.mannwhitneyu(arr_a, arr_b, alternative="two-sided")
        mann = {"statistic": float(mw.statistic), "p": float(mw.pvalue)}

        if method == "welch":
            used, reason = "welch", "requested"
        elif method == "mann-whitney":
            used, reason = "mann-whitney", "requested"
        elif method != "auto":
            raise ValueError(f"method must be 'auto', 'welch' or 'mann-whitney', got {method!r}")
        elif min(n, m) < 3:
            used, reason = "mann-whitney", "fewer than 3 runs in an arm: no normality check possible"
        elif constant_a or constant_b:
            used, reason = "mann-whitney", "an arm has no spread"
        else:
            normal = all(stats.shapiro(x).pvalue > alpha for x in (arr_a, arr_b))
            used, reason = (
                ("welch", "both arms look normal (Shapiro-Wilk)")
                if normal
                else ("mann-whitney", "an arm departs from normality (Shapiro-Wilk)")
            )
    chosen = welch if used == "welch" else mann
    p = chosen["p"]
    return {
        "name": "welch t" if used == "welch" else "mann-whitney U",
        "statistic": chosen["statistic"],
        "p": p,
        "significant": bool(math.isfinite(p) and p < alpha),
        "used": used,
        "reason": reason,
        "welch": welch,
        "mann_whitney": mann,
        "n_a": n,
        "n_b": m,
        "mean_a": float(arr_a.mean()),
        "mean_b": float(arr_b.mean()),
        "cohens_d": cohens_d(arr_a, arr_b) if n + m >= 3 else math.nan,
        "prob_improvement": probability_of_improvement(arr_a, arr_b),
    }


def chi_square_distributions(
    counts_a: Any | Mapping[Any, float], counts_b: Any | Mapping[Any, float]
) -> dict[str, Any]:
    """Do two categorical distributions differ? Pearson's chi-square on the 2 x k table of counts.

    Categories with zero counts in both are dropped. No continuity correction is applied. With expected
    counts below about 5 the p-value is approximate.

    Args:
        counts_a: Counts per category, shape (k,), or a mapping category -> count (e.g. action histogram).
        counts_b: Same categories as ``counts_a`` (mappings are aligned by key, missing keys count 0).

    Returns:
        ``{"name": "chi-square", "statistic", "p", "dof", "cramers_v", "tvd", "n_a", "n_b", "categories"}``;
        ``tvd`` is the total variation distance between the two normalized distributions (0 to 1).
    """
    from scipy.stats import chi2_contingency

    if isinstance(counts_a, Mapping) or isinstance(counts_b, Mapping):
        if not (isinstance(counts_a, Mapping) and isinstance(counts_b, Mapping)):
            raise ValueError("pass both counts as mappings (category -> count) or both as arrays")
        keys = list(dict.fromkeys([*counts_a.keys(), *counts_b.keys()]))
        arr_a = np.array([float(counts_a.get(k, 0)) for k in keys])
        arr_b = np.array([float(counts_b.get(k, 0)) for k in keys])
        categories: list[Any] = keys
    else:
        arr_a, arr_b = np.asarray(counts_a, dtype=float), np.asarray(counts_b, dtype=float)
        if arr_a.shape != arr_b.shape or arr_a.ndim != 1:
            raise ValueError(
                f"counts must be 1-D with the same categories, got {arr_a.shape} and {arr_b.shape}"
            )
        categories = list(range(arr_a.shape[0]))
    if np.any(arr_a < 0) or np.any(arr_b < 0):
        raise ValueError("counts must be non-negative")
    n_a, n_b = float(arr_a.sum()), float(arr_b.sum())
    if n_a == 0 or n_b == 0:
        raise ValueError(f"both distributions need at least one count, got totals {n_a} and {n_b}")
    keep = (arr_a + arr_b) > 0
    tvd = 0.5 * float(np.abs(arr_a / n_a - arr_b / n_b).sum())
    if keep.sum() < 2:
        statistic, p, dof = 0.0, 1.0, 0
    else:
        result = chi2_contingency(np.stack([arr_a[keep], arr_b[keep]]), correction=False)
        statistic, p, dof = float(result.statistic), float(result.pvalue), int(result.dof)
    return {
        "name": "chi-square",
        "statistic": statistic,
        "p": p,
        "dof": dof,
        "cramers_v": math.sqrt(statistic / (n_a + n_b)),  # 2 rows: min(r, c) - 1 = 1
        "tvd": tvd,
        "n_a": n_a,
        "n_b": n_b,
        "categories": categories,
    }
