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
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

Seed = int | np.random.Generator
Method = Literal["percentile", "bca"]

# Resampled values held in memory at once; bootstraps over long arrays are done in chunks of this size so
# that 2000 resamples of 100k episode returns do not allocate gigabytes. Chunking does not change results.
_CHUNK_ELEMENTS = 2_000_000


class Interval(NamedTuple):
    """A point estimate with a confidence interval; unpacks as ``point, low, high``."""

    point: float
    low: float
    high: float


def as_generator(seed: Seed) -> np.random.Generator:
    """Turn an int seed into a generator; pass a generator through unchanged.

    Raises:
        TypeError: ``seed`` is None or another type, since an implicit seed would make intervals
            irreproducible.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, int | np.integer) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed))
    raise TypeError(
        f"seed must be an int or a np.random.Generator, got {seed!r}; "
        "pass e.g. seed=0 so that the interval reproduces"
    )


def _as_1d(x: Any, name: str, *, min_len: int = 1) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array (one value per run), got shape {arr.shape}")
    if arr.shape[0] < min_len:
        raise ValueError(f"{name} needs at least {min_len} value(s), got {arr.shape[0]}")
    return arr


def _check_level(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), e.g. 0.95, got {level}")
    return float(level)


def _accepts_axis(stat: Callable[..., Any]) -> bool:
    try:
        return "axis" in inspect.signature(stat).parameters
    except (TypeError, ValueError):  # builtins and some C functions have no signature
        return False


def _apply(stat: Callable[..., Any], data: np.ndarray) -> np.ndarray:
    """Apply ``stat`` to each row: ``data`` (B, n, ...) -> (B, ...)."""
    if _accepts_axis(stat):
        return np.asarray(stat(data, axis=1), dtype=float)
    return np.asarray([stat(row) for row in data], dtype=float)


# ----------------------------------------------------------------------------------------------------------
# The bootstrap engine
# ----------------------------------------------------------------------------------------------------------


def _bootstrap(
    samples: Sequence[np.ndarray],
    combine: Callable[[list[np.ndarray]], np.ndarray],
    *,
    paired: bool,
    n_boot: int,
    level: float,
    method: Method,
    seed: Seed,
) -> Interval:
    """Bootstrap a statistic of one or more samples.

    Args:
        samples: Arrays of shape (n_j, ...); resampling is along axis 0.
        combine: Maps a list of batched samples, each (B, n_j, ...), to the statistic, shape (B,).
        paired: Resample the same indices in every sample (all must have the same n).
        n_boot: Number of bootstrap resamples.
        level: Coverage of the interval, e.g. 0.95.
        method: ``"percentile"`` or ``"bca"`` (bias-corrected and accelerated, Efron 1987).
        seed: Seed or generator for the resampling.
    """
    rng = as_generator(seed)
    level = _check_level(level)
    if n_boot < 1:
        raise ValueError(f"n_boot must be a positive number of resamples, got {n_boot}")
    if method not in ("percentile", "bca"):
        raise ValueError(f"method must be 'percentile' or 'bca', got {method!r}")
    sizes = [s.shape[0] for s in samples]
    if paired and len(set(sizes)) > 1:
        raise ValueError(f"paired samples must have equal lengths (one value per seed), got {sizes}")

    with np.errstate(divide="ignore", invalid="ignore"):
        point = float(combine([s[np.newaxis] for s in samples])[0])
        per_row = max(1, sum(int(np.prod(s.shape)) for s in samples))
        chunk = max(1, _CHUNK_ELEMENTS // per_row)
        boots = []
        for start in range(0, n_boot, chunk):
            b = min(chunk, n_boot - start)
            if paired:
                idx = rng.integers(0, sizes[0], size=(b, sizes[0]))
                batch = [s[idx] for s in samples]
            else:
                batch = [s[rng.integers(0, n, size=(b, n))] for s, n in zip(samples, sizes, strict=True)]
            boots.append(np.asarray(combine(batch), dtype=float).reshape(b))
        theta = np.concatenate(boots)

    finite = theta[np.isfinite(theta)]
    if finite.size == 0 or not math.isfinite(point):
        return Interval(point, math.nan, math.nan)
    alpha = 1.0 - level
    if method == "percentile" or np.all(finite == finite[0]):
        low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
        return Interval(point, float(low), float(high))
    z0 = _bias_correction(finite, point)
    accel = _acceleration(samples, combine, paired=paired)
    from scipy.stats import norm

    quantiles = []
    for z_alpha in (norm.ppf(alpha / 2), norm.ppf(1 - alpha / 2)):
        shifted = z0 + z_alpha
        quantiles.append(float(norm.cdf(z0 + shifted / (1 - accel * shifted))))
    low, high = np.quantile(finite, quantiles)
    return Interval(point, float(low), float(high))


def _bias_correction(theta: np.ndarray, point: float) -> float:
    from scipy.stats import norm

    b = theta.shape[0]
    # Ties count half, so discrete statistics (medians of integer data) are not biased by the tie rule.
    prop = (np.sum(theta < point) + 0.5 * np.sum(theta == point)) / b
    prop = min(max(prop, 0.5 / b), 1 - 0.5 / b)
    return float(norm.ppf(prop))


def _leave_one_out(n: int, rows: np.ndarray) -> np.ndarray:
    """Index matrix (len(rows), n - 1): row k lists 0..n-1 without ``rows[k]``."""
    base = np.arange(n - 1)
    return base[np.newaxis, :] + (base[np.newaxis, :] >= rows[:, np.newaxis])


def _acceleration(
    samples: Sequence[np.ndarray], combine: Callable[[list[np.ndarray]], np.ndarray], *, paired: bool
) -> float:
    """BCa acceleration from jackknife values; several independent samples are jackknifed one at a time.

    For k samples this is the multi-sample formula used by ``scipy.stats.bootstrap``:
    ``a = sum_j sum_i U_ji^3 / n_j^3 / (6 (sum_j sum_i U_ji^2 / n_j^2)^1.5)``, ``U_ji = (n_j - 1)(mean_j - t_ji)``.
    """
    groups: list[np.ndarray] = []
    sizes: list[int] = []
    with np.errstate(divide="ignore", invalid="ignore"):
        if paired:
            n = samples[0].shape[0]
            if n < 2:
                return 0.0
            values = []
            per_row = max(1, sum(int(np.prod(s.shape)) for s in samples))
            step = max(1, _CHUNK_ELEMENTS // per_row)
            for start in range(0, n, step):
                idx = _leave_one_out(n, np.arange(start, min(n, start + step)))
                values.append(combine([s[idx] for s in samples]))
            groups.append(np.concatenate(values))
            sizes.append(n)
        else:
            for j, sample in enumerate(samples):
                n = sample.shape[0]
                if n < 2:
                    continue
                step = max(1, _CHUNK_ELEMENTS // max(1, int(np.prod(sample.shape))))
                values = []
                for start in range(0, n, step):
                    idx = _leave_one_out(n, np.arange(start, min(n, start + step)))
                    k = idx.shape[0]
                    batch = [
                        s[idx] if i == j else np.broadcast_to(s[np.newaxis], (k, *s.shape))
                        for i, s in enumerate(samples)
                    ]
                    values.append(combine(batch))
                groups.append(np.concatenate(values))
                sizes.append(n)
    num = 0.0
    den = 0.0
    for values, n in zip(groups, sizes, strict=True):
        values = values[np.isfinite(values)]
        if values.size == 0:
            continue
        u = (n - 1) * (values.mean() - values)
        num += float(np.sum(u**3)) / n**3
        den += float(np.sum(u**2)) / n**2
    if den <= 0.0:
        return 0.0
    return num / (6.0 * den**1.5)


# ----------------------------------------------------------------------------------------------------------
# Bootstrap intervals
# ----------------------------------------------------------------------------------------------------------


def bootstrap_ci(
    x: Any,
    stat: Callable[..., Any] = np.mean,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    method: Method = "percentile",
    seed: Seed,
) -> Interval:
    """Bootstrap confidence interval of a statistic of one sample.

    Args:
        x: Values, shape (n,), e.g. final returns of n seeds.
        stat: Statistic of a 1-D array. Functions that take ``axis`` (``np.mean``, ``np.median``,
            :func:`iqm`) are applied to all resamples at once; others are called per resample.
        n_boot: Number of resamples.
        level: Coverage, e.g. 0.95.
        method: ``"percentile"`` or ``"bca"``.
        seed: Seed or generator (required: intervals must reproduce).

    Returns:
        ``Interval(point, low, high)`` where ``point = stat(x)``.
    """
    arr = _as_1d(x, "x")
    return _bootstrap(
        [arr],
        lambda xs: _apply(stat, xs[0]),
        paired=False,
        n_boot=n_boot,
        level=level,
        method=method,
        seed=seed,
    )


def bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    stat: Callable[[np.ndarray], float] = np.mean,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int,
) -> Interval:
    """Interval of ``stat(a) - stat(b)`` for two independent samples (each resampled on its own).

    Args:
        a: Sample A, shape (n,) (e.g. the candidate's episode lengths).
        b: Sample B, shape (m,).
        stat: Statistic of a 1-D array.
        seed: Seed of the resampling (intervals reproduce to the last digit).

    Returns:
        ``Interval(stat(a) - stat(b), low, high)`` (percentile bootstrap).
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) == 0 or len(y) == 0:
        raise ValueError(f"both samples need values, got {len(x)} and {len(y)}")
    rng = as_generator(seed)
    point = float(stat(x) - stat(y))
    ia = rng.integers(0, len(x), size=(n_boot, len(x)))
    ib = rng.integers(0, len(y), size=(n_boot, len(y)))
    if stat is np.mean:
        boot = x[ia].mean(axis=1) - y[ib].mean(axis=1)
    elif stat is np.median:
        boot = np.median(x[ia], axis=1) - np.median(y[ib], axis=1)
    else:
        boot = np.array([stat(x[i]) - stat(y[j]) for i, j in zip(ia, ib, strict=True)])
    alpha = 1.0 - level
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return Interval(point, float(low), float(high))


def paired_bootstrap_diff(
    a: Any,
    b: Any,
    stat: Callable[..., Any] = np.mean,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    method: Method = "percentile",
    seed: Seed,
) -> Interval:
    """Interval of ``stat(a) - stat(b)`` for runs paired by seed index.

    Each resample draws seed indices once and uses them for both arrays, so the seed-to-seed variation that
    both arms share cancels out (for ``np.mean`` this equals the mean of the paired differences).

    Args:
        a: Values of arm A, shape (n,), ``a[i]`` run with seed i.
        b: Values of arm B, shape (n,), same seeds in the same order.
        stat: Statistic applied to each arm.
        n_boot, level, method, seed: As in :func:`bootstrap_ci`.

    Returns:
        ``Interval(stat(a) - stat(b), low, high)``.
    """
    arr_a, arr_b = _as_1d(a, "a"), _as_1d(b, "b")
    return _bootstrap(
        [arr_a, arr_b],
        lambda xs: _apply(stat, xs[0]) - _apply(stat, xs[1]),
        paired=True,
        n_boot=n_boot,
        level=level,
        method=method,
        seed=seed,
    )


def paired_t_interval(a: Any, b: Any, *, level: float = 0.95) -> Interval:
    """Student-t interval of ``mean(a - b)`` for runs paired by seed index.

    Use it to decide whether a difference exists at all when seeds are few: a percentile bootstrap of two
    paired differences only spans the two values it saw, so pure noise "excludes zero" half the time, while
    the t interval widens as the seeds get fewer (12.7 standard errors at two seeds).

    Args:
        a: Values of arm A, shape (n,), n >= 2, ``a[i]`` run with seed i.
        b: Values of arm B, shape (n,), same seeds in the same order.
        level: Confidence level in (0, 1).

    Returns:
        ``Interval(mean(a - b), low, high)``.

    Raises:
        ValueError: The arms differ in length or have fewer than two seeds.
    """
    from scipy.stats import t as student_t

    level = _check_level(level)
    arr_a, arr_b = _as_1d(a, "a", min_len=2), _as_1d(b, "b", min_len=2)
    if arr_a.shape != arr_b.shape:
        raise ValueError(f"a has {arr_a.size} seeds and b {arr_b.size}; pair them by seed first")
    d = arr_a - arr_b
    mean = float(d.mean())
    half = float(student_t.ppf(0.5 + level / 2.0, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size))
    return Interval(mean, mean - half, mean + half)


def bootstrap_ratio_ci(
    a: Any,
    b: Any,
    stat: Callable[..., Any] = np.mean,
    *,
    paired: bool = False,
    n_boot: int = 2000,
    level: float = 0.95,
    method: Method = "percentile",
    seed: Seed,
) -> Interval:
    """Interval of the ratio ``stat(a) / stat(b)``, e.g. candidate SPS over baseline SPS.

    Args:
        a: Numerator sample, shape (n,), e.g. steps per second of n timing repeats of the candidate.
        b: Denominator sample, shape (m,).
        stat: Statistic of each sample.
        paired: Resample index-paired runs together (requires n == m); by default the two samples are
            resampled independently (timing repeats of two subjects are not paired).
        n_boot, level, method, seed: As in :func:`bootstrap_ci`.

    Returns:
        ``Interval(stat(a) / stat(b), low, high)``; resamples with ``stat(b) == 0`` are dropped.
    """
    arr_a, arr_b = _as_1d(a, "a"), _as_1d(b, "b")
    return _bootstrap(
        [arr_a, arr_b],
        lambda xs: _apply(stat, xs[0]) / _apply(stat, xs[1]),
        paired=paired,
        n_boot=n_boot,
        level=level,
        method=method,
        seed=seed,
    )


def iqm(x: Any, axis: int | None = None) -> Any:
    """Interquartile mean: the mean of the middle 50% (``scipy.stats.trim_mean(x, 0.25)``, as rliable).

    ``int(0.25 * n)`` values are dropped from each end after sorting: IQM of ``[1, 2, 3, 4]`` is 2.5, of
    ``1..10`` it is the mean of ``3..8`` = 5.5.

    Args:
        x: Scores, any shape.
        axis: Axis to reduce; ``None`` flattens.

    Returns:
        A float (``axis=None``) or an array with ``axis`` removed.
    """
    from scipy.stats import trim_mean

    arr = np.asarray(x, dtype=float)
    if axis is None:
        return float(trim_mean(arr.reshape(-1), 0.25))
    return trim_mean(arr, 0.25, axis=axis)


def iqm_ci(
    x: Any, *, n_boot: int = 2000, level: float = 0.95, method: Method = "percentile", seed: Seed
) -> Interval:
    """Bootstrap interval of the interquartile mean of ``x`` (n,)."""
    return bootstrap_ci(x, iqm, n_boot=n_boot, level=level, method=method, seed=seed)


def fraction_restored(
    baseline: Any,
    candidate: Any,
    variant: Any,
    stat: Callable[..., Any] = np.mean,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    method: Method = "percentile",
    seed: Seed,
) -> Interval:
    """How much of the baseline-candidate gap a variant closes: ``(V - C) / (B - C)``.

    1 means the variant is as good as the baseline (the change it makes explains the whole gap), 0 means it
    is no better than the candidate, negative values mean it is worse still.

    Args:
        baseline: Metric of the baseline, shape (n,), one value per seed.
        candidate: Metric of the candidate, shape (n,), same seeds in the same order.
        variant: Metric of the variant (e.g. the candidate with one subsystem restored), shape (n,).
        stat: Statistic of each arm (``np.mean`` or :func:`iqm`).
        n_boot, level, method, seed: As in :func:`bootstrap_ci`; resampling draws seeds once for all three
            arms (paired), and drops resamples in which the gap is exactly zero.

    Raises:
        ValueError: The arrays have different lengths, or the baseline and candidate have the same
            statistic (there is no gap to restore).
    """
    arr_b = _as_1d(baseline, "baseline")
    arr_c = _as_1d(candidate, "candidate")
    arr_v = _as_1d(variant, "variant")
    gap = float(stat(arr_b)) - float(stat(arr_c))
    if gap == 0.0:
        raise ValueError(
            "baseline and candidate have the same statistic, so there is no gap for a variant to restore; "
            "check that the runs differ (or use paired_bootstrap_diff on the variant directly)"
        )

    def combine(xs: list[np.ndarray]) -> np.ndarray:
        b, c, v = (_apply(stat, x) for x in xs)
        den = b - c
        return np.where(den == 0.0, np.nan, (v - c) / np.where(den == 0.0, 1.0, den))

    return _bootstrap(
        [arr_b, arr_c, arr_v],
        combine,
        paired=True,
        n_boot=n_boot,
        level=level,
        method=method,
        seed=seed,
    )


def fractions_restored_pooled(
    baseline: Any,
    candidate: Any,
    variants: dict[str, Any],
    *,
    n_boot: int = 4000,
    level: float = 0.95,
    seed: Seed,
) -> dict[str, Interval]:
    """Fraction of the baseline-candidate gap each variant closes, for variants with few seeds.

    Every arm is paired with the candidate by seed: ``g_i = B_i - C_i`` (the gap, all ``N`` seeds) and
    ``d_i = V_i - C_i`` (a variant's restore, its first ``n <= N`` seeds). The estimate is
    ``mean(d) / mean(g)``. Its interval comes from a paired *residual* bootstrap: the seed-to-seed noise of the
    paired differences is pooled over all arms (centered residuals, rescaled by ``sqrt(n / (n - 1))``), and each
    bootstrap replicate redraws every arm's mean from that pool. Pooling is what lets an arm with two seeds
    get an honest interval: a plain two-seed bootstrap only ever spans the two values it saw, while the
    pooled noise carries everything the other arms learned about run-to-run variation. It assumes the noise
    of a paired difference is similar across arms (one trainer, one machine, one metric).

    Args:
        baseline: Metric of the baseline per seed, shape (N,).
        candidate: Metric of the candidate per seed, shape (N,), same seeds in the same order.
        variants: Name -> metric per seed, shape (n,) with n <= N, seeds 0..n-1 of the same list. NaN marks
            a failed run (that seed is dropped for that arm).
        n_boot, level, seed: As in :func:`bootstrap_ci`.

    Returns:
        Name -> Interval; variants with no usable seed are left out.

    Raises:
        ValueError: Baseline and candidate differ in length, a variant has more seeds than they do, or there
            is no gap (``mean(g) == 0``).
    """
    level = _check_level(level)
    b = _as_1d(baseline, "baseline")
    c = _as_1d(candidate, "candidate")
    if b.shape != c.shape:
        raise ValueError(f"baseline has {b.size} seeds and candidate {c.size}; pair them by seed first")
    g = b - c
    g = g[~np.isnan(g)]
    if g.size == 0 or float(g.mean()) == 0.0:
        raise ValueError(
            "baseline and candidate have the same mean over paired seeds, so there is no gap to restore"
        )
    diffs: dict[str, np.ndarray] = {}
    for name, values in variants.items():
        v = _as_1d(values, name)
        if v.size > c.size:
            raise ValueError(f"variant {name!r} has {v.size} seeds, more than the candidate's {c.size}")
        d = v - c[: v.size]
        d = d[~np.isnan(d)]
        if d.size:
            diffs[name] = d
    pool = [g]
    pool.extend(diffs.values())
    residuals = np.concatenate(
        [(x - x.mean()) * np.sqrt(x.size / (x.size - 1)) for x in pool if x.size >= 2] or [np.zeros(1)]
    )
    rng = as_generator(seed)
    alpha = (1.0 - level) / 2.0

    def mean_draws(center: float, n: int) -> np.ndarray:
        return center + rng.choice(residuals, size=(n_boot, n)).mean(axis=1)

    gap_star = mean_draws(float(g.mean()), g.size)
    out: dict[str, Interval] = {}
    for name, d in diffs.items():
        ratio = mean_draws(float(d.mean()), d.size) / gap_star
        ratio = ratio[np.isfinite(ratio)]
        low, high = np.quantile(ratio, [alpha, 1.0 - alpha]) if ratio.size else (np.nan, np.nan)
        out[name] = Interval(float(d.mean() / g.mean()), float(low), float(high))
    return out


# ----------------------------------------------------------------------------------------------------------
# Probability of improvement, two-sample tests, effect sizes
# ----------------------------------------------------------------------------------------------------------


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
    return _bootstrap(
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
    arr_a, arr_b = _as_1d(a, "a"), _as_1d(b, "b")
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

    arr_a, arr_b = _as_1d(a, "a"), _as_1d(b, "b")
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


# ----------------------------------------------------------------------------------------------------------
# Slopes and trends
# ----------------------------------------------------------------------------------------------------------


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
    level = _check_level(level)
    log_x = np.log([size for size, _ in groups])
    log_t = [np.log(row) for _, row in groups]
    point = float(_ols_slopes(log_x[np.newaxis], np.array([[row.mean() for row in log_t]]))[0])
    means = np.empty((n_boot, len(groups)))
    for g, row in enumerate(log_t):
        means[:, g] = row[rng.integers(0, len(row), size=(n_boot, len(row)))].mean(axis=1)
    slopes = _ols_slopes(np.broadcast_to(log_x, means.shape), means)
    alpha = 1.0 - level
    low, high = np.quantile(slopes, [alpha / 2, 1 - alpha / 2])
    return Interval(point, float(low), float(high))


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
    arr_x, arr_y = _as_1d(x, "x", min_len=2), _as_1d(y, "y", min_len=2)
    if arr_x.shape != arr_y.shape:
        raise ValueError(f"x and y must have the same length, got {arr_x.shape[0]} and {arr_y.shape[0]}")
    if np.all(arr_x == arr_x[0]):
        raise ValueError("x has no spread: a slope needs at least two different positions")
    rng = as_generator(seed)
    level = _check_level(level)
    point = float(_ols_slopes(arr_x[np.newaxis], arr_y[np.newaxis])[0])
    if groups is None:
        slopes = []
        chunk = max(1, _CHUNK_ELEMENTS // (2 * len(arr_x)))
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
    alpha = 1.0 - level
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2]) if boot.size else (math.nan, math.nan)
    return Interval(point * per, float(low) * per, float(high) * per)


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

    arr_y = _as_1d(y, "y", min_len=3)
    arr_x = np.arange(len(arr_y), dtype=float) if x is None else _as_1d(x, "x")
    if arr_x.shape != arr_y.shape:
        raise ValueError(f"x and y must have the same length, got {arr_x.shape[0]} and {arr_y.shape[0]}")
    level = _check_level(level)
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


# ----------------------------------------------------------------------------------------------------------
# Power
# ----------------------------------------------------------------------------------------------------------


def _t_power(n: int, d: float, alpha: float) -> float:
    from scipy.stats import nct, t

    df = 2 * n - 2
    crit = t.ppf(1 - alpha / 2, df)
    ncp = d * math.sqrt(n / 2.0)
    return float(nct.sf(crit, df, ncp) + nct.cdf(-crit, df, ncp))


def power_seeds(sd: float, effect: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Seeds per arm that a two-sided two-sample t-test needs to detect a difference of means ``effect``.

    Exact power from the noncentral t distribution with equal arms: for ``effect / sd = 1`` it is 17 seeds
    per arm, for 0.5 it is 64 (Cohen 1988).

    Args:
        sd: Standard deviation of the metric across seeds (same unit as ``effect``).
        effect: The smallest difference of means worth detecting (its absolute value is used).
        alpha: Two-sided significance level.
        power: Probability of detecting a true difference of ``effect``.

    Returns:
        Seeds per arm (at least 2).
    """
    from scipy.stats import norm

    if sd < 0 or not math.isfinite(sd):
        raise ValueError(f"sd must be a finite non-negative standard deviation, got {sd}")
    if effect == 0 or not math.isfinite(effect):
        raise ValueError(f"effect must be a finite non-zero difference to detect, got {effect}")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha} and {power}")
    if sd == 0:
        return 2
    d = abs(effect) / sd
    # The normal approximation is a close lower bound; the exact search starts just below it.
    approx = 2 * ((norm.ppf(1 - alpha / 2) + norm.ppf(power)) / d) ** 2
    n = max(2, int(approx) - 2)
    while n > 2 and _t_power(n - 1, d, alpha) >= power:
        n -= 1
    while _t_power(n, d, alpha) < power:
        n += 1
    return n


def power_table(sd: float, effects: Sequence[float], alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """Seeds needed per arm for several effect sizes, as a table.

    Args:
        sd: Standard deviation of the metric across seeds.
        effects: Differences of means worth detecting, in the metric's unit.

    Returns:
        DataFrame with columns ``effect``, ``effect_sd`` (effect in units of sd), ``seeds_per_arm``,
        ``total_runs`` (both arms), one row per effect.
    """
    import pandas as pd

    rows = []
    for effect in effects:
        seeds = power_seeds(sd, effect, alpha=alpha, power=power)
        rows.append(
            {
                "effect": float(effect),
                "effect_sd": abs(float(effect)) / sd if sd > 0 else math.inf,
                "seeds_per_arm": seeds,
                "total_runs": 2 * seeds,
            }
        )
    return pd.DataFrame(rows, columns=["effect", "effect_sd", "seeds_per_arm", "total_runs"])
