"""Slopes and trends: the scaling exponent of time against size, linear growth per unit (with a cluster
bootstrap over runs), and monotonic trend tests (Mann-Kendall, Spearman) with the Theil-Sen slope.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np

from rlaudit.stats.intervals import (
    CHUNK_ELEMENTS,
    Interval,
    Seed,
    as_1d,
    as_generator,
    check_level,
    percentiles,
)


def _ols_slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of rows: x, y (B, n) -> (B,); NaN where x has no spread."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    sxx = np.sum(xc * xc, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sxx > 0, np.sum(xc * yc, axis=1) / np.where(sxx > 0, sxx, 1.0), np.nan)


def loglog_slope(sizes: Any, times: Any, *, n_boot: int = 2000, level: float = 0.95, seed: Seed) -> Interval:
    """Scaling exponent: the slope of log(time) against log(size), with a bootstrap over repeats.

    A slope of 1 is linear scaling, 2 quadratic, 0 constant. The point estimate fits the per-size mean of
    log(time); each resample redraws the repeats within every size (sizes stay fixed) and refits.

    Args:
        sizes: Problem sizes, shape (k,) with ``times`` (k, r); or shape (n,) with ``times`` (n,) where a size
            repeats once per measurement. At least 2 distinct sizes, all positive.
        times: Positive durations (any unit), as above.
        n_boot, level, seed: As in :func:`bootstrap_ci`. With one repeat per size the interval has zero
            width: measure at least 3 repeats.

    Returns:
        ``Interval(slope, low, high)``.
    """
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if t.ndim == 2:
        if s.shape != (t.shape[0],):
            raise ValueError(f"with times of shape (k, r) sizes must be (k,), got {s.shape} and {t.shape}")
        groups = [(float(size), row) for size, row in zip(s, t, strict=True)]
    elif t.ndim == 1 and s.shape == t.shape:
        groups = [(float(size), t[s == size]) for size in np.unique(s)]
    else:
        raise ValueError(
            f"sizes and times must be (k,) and (k, r), or both (n,), got {s.shape} and {t.shape}"
        )
    if len({size for size, _ in groups}) < 2:
        raise ValueError("a slope needs at least 2 distinct sizes")
    if any(size <= 0 for size, _ in groups) or any(np.any(row <= 0) for _, row in groups):
        raise ValueError("sizes and times must be positive to take logs")
    rng = as_generator(seed)
    level = check_level(level)
    log_x = np.log([size for size, _ in groups])
    log_t = [np.log(row) for _, row in groups]
    point = float(_ols_slopes(log_x[np.newaxis], np.array([[row.mean() for row in log_t]]))[0])
    means = np.empty((n_boot, len(groups)))
    for g, row in enumerate(log_t):
        means[:, g] = row[rng.integers(0, len(row), size=(n_boot, len(row)))].mean(axis=1)
    slopes = _ols_slopes(np.broadcast_to(log_x, means.shape), means)
    return Interval(point, *percentiles(slopes, level))


def growth_slope(
    x: Any,
    y: Any,
    *,
    per: float = 1.0,
    groups: Any | None = None,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: Seed,
) -> Interval:
    """Linear growth of ``y`` per ``per`` units of ``x``, e.g. RSS bytes per 1000 steps, with a bootstrap CI.

    Args:
        x: Positions, shape (n,), e.g. environment steps.
        y: Values, shape (n,), e.g. resident memory in bytes.
        per: Report the slope per this many units of x (``per=1000`` -> bytes per 1000 steps).
        groups: Optional run id per point, shape (n,). When given, whole runs are resampled (a cluster
            bootstrap), which respects the correlation of points within one run; otherwise points are.
        n_boot, level, seed: As in :func:`bootstrap_ci`; resamples where x has no spread are dropped.

    Returns:
        ``Interval(slope * per, low * per, high * per)``.
    """
    arr_x, arr_y = as_1d(x, "x", min_len=2), as_1d(y, "y", min_len=2)
    if arr_x.shape != arr_y.shape:
        raise ValueError(f"x and y must have the same length, got {arr_x.shape[0]} and {arr_y.shape[0]}")
    if np.all(arr_x == arr_x[0]):
        raise ValueError("x has no spread: a slope needs at least two different positions")
    rng = as_generator(seed)
    level = check_level(level)
    point = float(_ols_slopes(arr_x[np.newaxis], arr_y[np.newaxis])[0])
    if groups is None:
        slopes = []
        chunk = max(1, CHUNK_ELEMENTS // (2 * len(arr_x)))
        for start in range(0, n_boot, chunk):
            idx = rng.integers(0, len(arr_x), size=(min(chunk, n_boot - start), len(arr_x)))
            slopes.append(_ols_slopes(arr_x[idx], arr_y[idx]))
        boot = np.concatenate(slopes)
    else:
        labels = np.asarray(groups)
        if labels.shape != arr_x.shape:
            raise ValueError(
                f"groups must give one run id per point, shape {arr_x.shape}, got {labels.shape}"
            )
        _, inverse = np.unique(labels, return_inverse=True)
        n_groups = int(inverse.max()) + 1
        if n_groups < 2:
            raise ValueError("a cluster bootstrap needs at least 2 groups (runs)")
        # Sufficient statistics per run let every resample be a weighted sum instead of a concatenation.
        columns = (np.ones_like(arr_x), arr_x, arr_y, arr_x * arr_x, arr_x * arr_y)
        suff = np.stack([np.bincount(inverse, weights=w, minlength=n_groups) for w in columns])
        draws = rng.integers(0, n_groups, size=(n_boot, n_groups))
        weights = np.stack([np.bincount(row, minlength=n_groups) for row in draws])  # (B, G)
        cnt, sx, sy, sxx, sxy = (weights @ s for s in suff)
        den = cnt * sxx - sx * sx
        with np.errstate(divide="ignore", invalid="ignore"):
            boot = np.where(den > 0, (cnt * sxy - sx * sy) / np.where(den > 0, den, 1.0), np.nan)
    boot = boot[np.isfinite(boot)]
    low, high = percentiles(boot, level)
    return Interval(point * per, low * per, high * per)


# Up to this many points the Spearman p-value is exact (all n! orderings); the t approximation scipy uses
# is optimistic for short sequences (it gives p = 0 for a perfect rank correlation of 4 points).
_EXACT_SPEARMAN_N = 8


def _spearman_exact_p(x: np.ndarray, y: np.ndarray, rho: float) -> float:
    """Two-sided permutation p-value of Spearman's rho over every ordering of ``y``."""
    import itertools

    from scipy.stats import rankdata

    rx = rankdata(x)
    ry = rankdata(y)
    rx_c = rx - rx.mean()
    perms = np.array(list(itertools.permutations(ry)))  # (n!, n)
    pc = perms - perms.mean(axis=1, keepdims=True)
    rhos = pc @ rx_c / np.sqrt(np.sum(pc * pc, axis=1) * np.sum(rx_c * rx_c))
    return float(np.mean(np.abs(rhos) >= abs(rho) - 1e-12))


def trend_test(
    y: Any,
    x: Any | None = None,
    *,
    method: Literal["mann-kendall", "spearman"] = "mann-kendall",
    level: float = 0.95,
) -> dict[str, Any]:
    """Is there a monotonic trend in a sequence (e.g. steps per second over a training run)?

    The Mann-Kendall test (S statistic with the tie-corrected variance and a continuity correction) or
    Spearman's rank correlation against the position (exact permutation p-value up to 8 points, the t
    approximation beyond), plus the Theil-Sen slope with its rank-based interval (Sen 1968). Everything is
    deterministic: no resampling.

    Args:
        y: Values in order, shape (n,), n >= 3.
        x: Positions, shape (n,); defaults to the index 0..n-1 (the slope is then per step of the index).
        method: ``"mann-kendall"`` or ``"spearman"``.
        level: Coverage of the slope interval; ``1 - level`` is also the significance level of ``direction``.

    Returns:
        ``{"name", "statistic", "p", "z" (Mann-Kendall only), "slope", "ci", "ci_level", "direction", "n"}``;
        ``direction`` is ``"increasing"``, ``"decreasing"`` or ``"no trend"``.
    """
    from scipy import stats

    arr_y = as_1d(y, "y", min_len=3)
    arr_x = np.arange(len(arr_y), dtype=float) if x is None else as_1d(x, "x")
    if arr_x.shape != arr_y.shape:
        raise ValueError(f"x and y must have the same length, got {arr_x.shape[0]} and {arr_y.shape[0]}")
    level = check_level(level)
    n = len(arr_y)
    order = np.argsort(arr_x, kind="stable")
    xs, ys = arr_x[order], arr_y[order]
    result: dict[str, Any] = {"n": n}
    if method == "mann-kendall":
        i, j = np.triu_indices(n, k=1)
        s = float(np.sum(np.sign(ys[j] - ys[i])))
        _, tie_counts = np.unique(ys, return_counts=True)
        var = (
            n * (n - 1) * (2 * n + 5) - float(np.sum(tie_counts * (tie_counts - 1) * (2 * tie_counts + 5)))
        ) / 18
        z = 0.0 if s == 0 or var <= 0 else (s - math.copysign(1.0, s)) / math.sqrt(var)
        p = float(2 * stats.norm.sf(abs(z))) if var > 0 else 1.0
        result.update(name="mann-kendall", statistic=s, z=z, p=p)
    elif method == "spearman":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rho, p = stats.spearmanr(xs, ys)
        rho, p = float(rho), float(p)
        if not math.isfinite(rho):  # constant y
            rho, p = 0.0, 1.0
        elif n <= _EXACT_SPEARMAN_N:
            p = _spearman_exact_p(xs, ys, rho)
        result.update(name="spearman", statistic=rho, p=p)
    else:
        raise ValueError(f"method must be 'mann-kendall' or 'spearman', got {method!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = stats.theilslopes(ys, xs, alpha=level)
    result.update(slope=float(ts.slope), ci=(float(ts.low_slope), float(ts.high_slope)), ci_level=level)
    alpha = 1.0 - level
    sign = result["statistic"]
    result["direction"] = (
        "no trend" if not result["p"] < alpha or sign == 0 else ("increasing" if sign > 0 else "decreasing")
    )
    return result
