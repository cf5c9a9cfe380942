"""Bootstrap intervals: of one sample, of a difference (unpaired and paired by seed) and of a ratio, the
interquartile mean, and the share of a gap a variant restores. The resampling (percentile and BCa) is
``scipy.stats.bootstrap``'s; the pooled shares restored (:func:`fractions_restored_pooled`) are our own.

Every random draw takes an explicit ``seed`` (an int or a ``np.random.Generator``), so every interval
reproduces to the last digit. Intervals come back as :class:`Interval` ``(point, low, high)``.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Required, TypedDict, Unpack

import numpy as np

if TYPE_CHECKING:
    pass

Seed = int | np.random.Generator
Method = Literal["percentile", "bca"]

CHUNK_ELEMENTS = 2_000_000
"""Resampled values held in memory at once; bootstraps over long arrays are done in chunks of this size so
that 2000 resamples of 100k episode returns do not allocate gigabytes. Chunking does not change results."""


class Interval(NamedTuple):
    """A point estimate with a confidence interval; unpacks as ``point, low, high``."""

    point: float
    low: float
    high: float


class Resampling(TypedDict, total=False):
    """How a bootstrap resamples: the keyword arguments every bootstrap interval here takes.

    Attributes:
        n_boot: Number of resamples (default 2000).
        level: Coverage of the interval, in (0, 1) (default 0.95).
        method: ``"percentile"`` (default) or ``"bca"`` (bias-corrected and accelerated, Efron 1987).
        seed: Seed or generator of the resampling; required, so that every interval reproduces.
    """

    n_boot: int
    level: float
    method: Method
    seed: Required[Seed]


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


def as_1d(x: Any, name: str, *, min_len: int = 1) -> np.ndarray:
    """``x`` as a 1-D float array of at least ``min_len`` values.

    Raises:
        ValueError: Another shape or too few values, naming ``name``.
    """
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array (one value per run), got shape {arr.shape}")
    if arr.shape[0] < min_len:
        raise ValueError(f"{name} needs at least {min_len} value(s), got {arr.shape[0]}")
    return arr


def check_level(level: float) -> float:
    """A confidence level in (0, 1), as a float.

    Raises:
        ValueError: Outside (0, 1).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), e.g. 0.95, got {level}")
    return float(level)


def percentiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    """The central ``level`` interval of resampled values ``draws`` (B,); NaN bounds when there are none."""
    if draws.size == 0:
        return math.nan, math.nan
    alpha = 1.0 - level
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


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


def bootstrap_statistic(
    samples: Sequence[np.ndarray],
    combine: Callable[[list[np.ndarray]], np.ndarray],
    *,
    paired: bool,
    n_boot: int = 2000,
    level: float = 0.95,
    method: Method = "percentile",
    seed: Seed,
) -> Interval:
    """Bootstrap a statistic of one or more samples with ``scipy.stats.bootstrap``.

    scipy resamples the row indices of each sample (so samples of any shape resample along axis 0) in batches
    of :data:`CHUNK_ELEMENTS`, and computes the BCa interval (Efron 1987; for several independent samples the
    multi-sample jackknife). What scipy does not do is kept here: a sample of one value is held fixed (its
    resamples are all the same), and resamples whose statistic is not finite (a zero denominator) are dropped,
    the interval then being the percentile interval of the others; so is a BCa interval that scipy cannot
    compute (constant resamples).

    Args:
        samples: Arrays of shape (n_j, ...); resampling is along axis 0.
        combine: Maps a list of batched samples, each (B, n_j, ...), to the statistic, shape (B,).
        paired: Resample the same indices in every sample (all must have the same n).
        n_boot: Number of bootstrap resamples.
        level: Coverage of the interval, e.g. 0.95.
        method: ``"percentile"`` or ``"bca"`` (bias-corrected and accelerated).
        seed: Seed or generator for the resampling.
    """
    from scipy.stats import DegenerateDataWarning, bootstrap

    rng = as_generator(seed)
    level = check_level(level)
    if n_boot < 1:
        raise ValueError(f"n_boot must be a positive number of resamples, got {n_boot}")
    if method not in ("percentile", "bca"):
        raise ValueError(f"method must be 'percentile' or 'bca', got {method!r}")
    sizes = [s.shape[0] for s in samples]
    if paired and len(set(sizes)) > 1:
        raise ValueError(f"paired samples must have equal lengths (one value per seed), got {sizes}")
    resampled = [j for j, n in enumerate(sizes) if n > 1]  # scipy needs two values to resample

    with np.errstate(divide="ignore", invalid="ignore"):
        point = float(combine([s[np.newaxis] for s in samples])[0])
        if not resampled:
            return (
                Interval(point, point, point) if math.isfinite(point) else Interval(point, math.nan, math.nan)
            )

        def statistic(*rows: np.ndarray, axis: int = -1) -> np.ndarray:
            # rows: index arrays (..., n_j) from scipy, one per resampled sample; the statistic of each row
            lead = np.broadcast_shapes(*(r.shape[:-1] for r in rows))
            index = {
                j: np.broadcast_to(r, (*lead, r.shape[-1])).reshape(-1, r.shape[-1])
                for j, r in zip(resampled, rows, strict=True)
            }
            count = int(np.prod(lead))
            picked = [
                s[index[j]] if j in index else s[np.zeros((count, 1), int)] for j, s in enumerate(samples)
            ]
            return np.asarray(combine(picked), dtype=float).reshape(lead)

        per_row = max(1, sum(int(np.prod(s.shape)) for s in samples))
        with warnings.catch_warnings():
            # a degenerate BCa interval (constant resamples) is NaN in scipy; it is handled below
            warnings.simplefilter("ignore", DegenerateDataWarning)
            result = bootstrap(
                tuple(np.arange(sizes[j]) for j in resampled),
                statistic,
                paired=paired,
                vectorized=True,
                n_resamples=n_boot,
                batch=max(1, CHUNK_ELEMENTS // per_row),
                confidence_level=level,
                method="BCa" if method == "bca" else "percentile",
                random_state=rng,
            )
        theta = result.bootstrap_distribution
    finite = theta[np.isfinite(theta)]
    if finite.size == 0 or not math.isfinite(point):
        return Interval(point, math.nan, math.nan)
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    if method == "percentile" or finite.size < theta.size or not (math.isfinite(low) and math.isfinite(high)):
        return Interval(point, *percentiles(finite, level))
    return Interval(point, low, high)


# ----------------------------------------------------------------------------------------------------------
# Bootstrap intervals
# ----------------------------------------------------------------------------------------------------------


def bootstrap_ci(
    x: Any,
    stat: Callable[..., Any] = np.mean,
    **resampling: Unpack[Resampling],
) -> Interval:
    """Bootstrap confidence interval of a statistic of one sample.

    Args:
        x: Values, shape (n,), e.g. final returns of n seeds.
        stat: Statistic of a 1-D array. Functions that take ``axis`` (``np.mean``, ``np.median``,
            :func:`iqm`) are applied to all resamples at once; others are called per resample.
        resampling: ``n_boot``, ``level``, ``method`` and ``seed`` (required: intervals must reproduce), see
            :class:`Resampling`.

    Returns:
        ``Interval(point, low, high)`` where ``point = stat(x)``.
    """
    arr = as_1d(x, "x")
    return bootstrap_statistic(
        [arr],
        lambda xs: _apply(stat, xs[0]),
        paired=False,
        **resampling,
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
    return Interval(point, *percentiles(boot, level))


def paired_bootstrap_diff(
    a: Any,
    b: Any,
    stat: Callable[..., Any] = np.mean,
    **resampling: Unpack[Resampling],
) -> Interval:
    """Interval of ``stat(a) - stat(b)`` for runs paired by seed index.

    Each resample draws seed indices once and uses them for both arrays, so the seed-to-seed variation that
    both arms share cancels out (for ``np.mean`` this equals the mean of the paired differences).

    Args:
        a: Values of arm A, shape (n,), ``a[i]`` run with seed i.
        b: Values of arm B, shape (n,), same seeds in the same order.
        stat: Statistic applied to each arm.
        resampling: ``n_boot``, ``level``, ``method``, ``seed`` (:class:`Resampling`).

    Returns:
        ``Interval(stat(a) - stat(b), low, high)``.
    """
    arr_a, arr_b = as_1d(a, "a"), as_1d(b, "b")
    return bootstrap_statistic(
        [arr_a, arr_b],
        lambda xs: _apply(stat, xs[0]) - _apply(stat, xs[1]),
        paired=True,
        **resampling,
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

    level = check_level(level)
    arr_a, arr_b = as_1d(a, "a", min_len=2), as_1d(b, "b", min_len=2)
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
    **resampling: Unpack[Resampling],
) -> Interval:
    """Interval of the ratio ``stat(a) / stat(b)``, e.g. candidate SPS over baseline SPS.

    Args:
        a: Numerator sample, shape (n,), e.g. steps per second of n timing repeats of the candidate.
        b: Denominator sample, shape (m,).
        stat: Statistic of each sample.
        paired: Resample index-paired runs together (requires n == m); by default the two samples are
            resampled independently (timing repeats of two subjects are not paired).
        resampling: ``n_boot``, ``level``, ``method``, ``seed`` (:class:`Resampling`).

    Returns:
        ``Interval(stat(a) / stat(b), low, high)``; resamples with ``stat(b) == 0`` are dropped.
    """
    arr_a, arr_b = as_1d(a, "a"), as_1d(b, "b")
    return bootstrap_statistic(
        [arr_a, arr_b],
        lambda xs: _apply(stat, xs[0]) / _apply(stat, xs[1]),
        paired=paired,
        **resampling,
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


def iqm_ci(x: Any, **resampling: Unpack[Resampling]) -> Interval:
    """Bootstrap interval of the interquartile mean of ``x`` (n,)."""
    return bootstrap_ci(x, iqm, **resampling)


def fraction_restored(
    baseline: Any,
    candidate: Any,
    variant: Any,
    stat: Callable[..., Any] = np.mean,
    **resampling: Unpack[Resampling],
) -> Interval:
    """How much of the baseline-candidate gap a variant closes: ``(V - C) / (B - C)``.

    1 means the variant is as good as the baseline (the change it makes explains the whole gap), 0 means it
    is no better than the candidate, negative values mean it is worse still.

    Args:
        baseline: Metric of the baseline, shape (n,), one value per seed.
        candidate: Metric of the candidate, shape (n,), same seeds in the same order.
        variant: Metric of the variant (e.g. the candidate with one subsystem restored), shape (n,).
        stat: Statistic of each arm (``np.mean`` or :func:`iqm`).
        resampling: ``n_boot``, ``level``, ``method``, ``seed`` (:class:`Resampling`); resampling draws seeds once for all three
            arms (paired), and drops resamples in which the gap is exactly zero.

    Raises:
        ValueError: The arrays have different lengths, or the baseline and candidate have the same
            statistic (there is no gap to restore).
    """
    arr_b = as_1d(baseline, "baseline")
    arr_c = as_1d(candidate, "candidate")
    arr_v = as_1d(variant, "variant")
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

    return bootstrap_statistic(
        [arr_b, arr_c, arr_v],
        combine,
        paired=True,
        **resampling,
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

    Each interval covers its own arm at ``level``; with several arms one of them excludes zero by chance
    more often than ``1 - level``. :func:`fractions_restored_holm` accounts for the number of arms.

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
    level = check_level(level)
    draws = _pooled_share_draws(baseline, candidate, variants, n_boot=n_boot, seed=seed)
    return {name: Interval(point, *percentiles(ratio, level)) for name, (point, ratio) in draws.items()}


class FamilyShare(NamedTuple):
    """The share of a gap one arm restores, with an interval that accounts for every arm of its family.

    Attributes:
        point: The estimate, ``mean(d) / mean(g)``.
        low, high: The interval at ``level``, this arm's Holm level (:func:`holm_levels`): it excludes zero
            exactly when Holm's step-down procedure rejects "this arm restores nothing" at the family's
            level.
        level: The coverage of this arm's own interval (``0.95`` for a family of one; up to
            ``1 - 0.05 / family``).
        p: The bootstrap p-value of "this arm restores nothing" (two-sided, before adjustment).
        p_holm: ``p`` adjusted for the family (Holm): below ``1 - family level`` means decided non-zero.
        family: The number of arms the decision accounts for.
    """

    point: float
    low: float
    high: float
    level: float
    p: float
    p_holm: float
    family: int


def fractions_restored_holm(
    baseline: Any,
    candidate: Any,
    variants: dict[str, Any],
    *,
    n_boot: int = 4000,
    level: float = 0.95,
    seed: Seed,
) -> dict[str, FamilyShare]:
    """:func:`fractions_restored_pooled` for a family of arms: each interval widened to its Holm level.

    A search that tries ``m`` arms and calls every arm whose 95% interval excludes zero a cause finds one by
    chance far more often than 5% of the time (about ``1 - 0.95**m``). Here the arms are one family: each
    arm's two-sided bootstrap p-value of "restores nothing" (the share of resamples on the other side of
    zero) ranks them, and the arm ranked ``i``-th (from 1) gets an interval at level ``1 - alpha / (m - i +
    1)`` (``alpha = 1 - level``), Holm's step-down levels; from the first arm that step does not decide,
    every later arm keeps that arm's level. So an interval excludes zero exactly when Holm rejects "restores
    nothing" for that arm, and the chance that any arm that restores nothing is called a cause stays below
    ``alpha``. The other readings of the interval (below a threshold, above a floor) use the same, widened,
    interval. Resamples grow with the family so that the tail quantiles rest on at least 25 resamples.

    Each arm's mean is drawn from a normal with the pooled variance (a parametric bootstrap) rather than from
    the residuals themselves: one seed's draw from a pool of five residuals takes five values, so its tails
    are a few atoms that do not move with the level (the interval at 99% is the one at 95%, and a share whose
    lowest atom is above zero would look certain at any level). The pooled variance is the residual
    bootstrap's, so at one arm the interval is close to :func:`fractions_restored_pooled`'s.

    Args:
        baseline, candidate, variants: As in :func:`fractions_restored_pooled`.
        n_boot: Resamples at least (more for a large family).
        level: The family-wise level, e.g. 0.95.
        seed: Seeds the resampling.

    Returns:
        Name -> :class:`FamilyShare`; variants with no usable seed are left out (and are not in the family).
    """
    level = check_level(level)
    alpha = 1.0 - level
    usable = _usable_variants(candidate, variants)
    n_boot = max(n_boot, math.ceil(50 * max(1, usable) / alpha))
    draws = _pooled_share_draws(baseline, candidate, variants, n_boot=n_boot, seed=seed, parametric=True)
    names = list(draws)
    pvalues = [_bootstrap_p(ratio) for _, ratio in draws.values()]
    levels = holm_levels(pvalues, level)
    adjusted = holm_adjust(pvalues)
    out: dict[str, FamilyShare] = {}
    for name, p, lv, p_adj in zip(names, pvalues, levels, adjusted, strict=True):
        point, ratio = draws[name]
        out[name] = FamilyShare(point, *percentiles(ratio, lv), lv, p, p_adj, len(names))
    return out


def _bootstrap_p(draws: np.ndarray) -> float:
    """Two-sided bootstrap p-value of "the statistic is zero": twice the share of resamples on the far side of
    zero (the smaller side), each side counting one more resample so that it is never exactly 0. It is below
    ``alpha`` when, up to that one resample, the percentile interval at ``1 - alpha`` excludes zero. NaN
    without resamples."""
    if draws.size == 0:
        return math.nan
    b = draws.size
    below = (float(np.sum(draws <= 0.0)) + 1.0) / (b + 1.0)
    above = (float(np.sum(draws >= 0.0)) + 1.0) / (b + 1.0)
    return min(1.0, 2.0 * min(below, above))


def holm_adjust(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given: the ``i``-th smallest ``p`` (from 1) becomes
    ``max over j <= i of min(1, (m - j + 1) p_(j))``. A hypothesis is rejected at family-wise level
    ``alpha`` when its adjusted p-value is below ``alpha``. NaN p-values rank last and stay NaN (they
    count in ``m``).

    Example: ``[0.01, 0.04, 0.03, 0.005]`` -> ``[0.03, 0.06, 0.06, 0.02]``.
    """
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    order = np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")
    out = np.full(m, math.nan)
    running = 0.0
    for rank, i in enumerate(order):
        if math.isnan(p[i]):
            continue
        running = max(running, min(1.0, (m - rank) * float(p[i])))
        out[i] = running
    return [float(x) for x in out]


def holm_levels(pvalues: Sequence[float], level: float = 0.95) -> list[float]:
    """Per hypothesis, the coverage of the interval that decides it under Holm's step-down procedure.

    With ``m`` hypotheses sorted by p-value, the ``i``-th (from 1) is tested at ``alpha / (m - i + 1)``,
    ``alpha = 1 - level``, while every earlier one was rejected; from the first that is not, Holm rejects
    nothing more, so that one's level holds for all after it (their larger p-values cannot pass it). The
    interval at ``1 - alpha / (m - i + 1)`` excludes the null value exactly when its test rejects.

    Example, four arms at 0.95: p-values ``[0.0001, 0.0002, 0.04, 0.5]`` give levels ``[0.9875, 0.98333,
    0.975, 0.975]``: the third arm's 0.04 would pass alone (below 0.05) but not at its Holm level (0.025), so
    it and the fourth stay undecided.
    """
    level = check_level(level)
    alpha = 1.0 - level
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    order = np.argsort(np.where(np.isnan(p), np.inf, p), kind="stable")
    out = np.empty(m)
    stopped: float | None = None
    for rank, i in enumerate(order):
        this = 1.0 - alpha / (m - rank)
        if stopped is not None:
            out[i] = stopped
            continue
        out[i] = this
        if not (p[i] < alpha / (m - rank)):  # NaN or too large: Holm stops here
            stopped = this
    return [float(x) for x in out]


def _usable_variants(candidate: Any, variants: dict[str, Any]) -> int:
    """How many variants have at least one seed paired with a finite candidate run."""
    c = np.asarray(candidate, dtype=float).reshape(-1)
    count = 0
    for values in variants.values():
        v = np.asarray(values, dtype=float).reshape(-1)
        k = min(v.size, c.size)
        count += bool(np.any(~np.isnan(v[:k] - c[:k])))
    return count


def _pooled_share_draws(
    baseline: Any,
    candidate: Any,
    variants: dict[str, Any],
    *,
    n_boot: int,
    seed: Seed,
    parametric: bool = False,
) -> dict[str, tuple[float, np.ndarray]]:
    """Per variant: the share restored and its finite bootstrap resamples (the engine of
    :func:`fractions_restored_pooled`, which documents the method). ``parametric`` draws each mean from a
    normal with the pooled residual variance instead of resampling the residuals (smooth tails for one- and
    two-seed arms, see :func:`fractions_restored_holm`)."""
    b = as_1d(baseline, "baseline")
    c = as_1d(candidate, "candidate")
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
        v = as_1d(values, name)
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
    sd = float(np.sqrt(np.mean(residuals**2)))

    def mean_draws(center: float, n: int) -> np.ndarray:
        if parametric:
            return center + rng.normal(0.0, sd / math.sqrt(n), size=n_boot)
        return center + rng.choice(residuals, size=(n_boot, n)).mean(axis=1)

    gap_star = mean_draws(float(g.mean()), g.size)
    out: dict[str, tuple[float, np.ndarray]] = {}
    for name, d in diffs.items():
        ratio = mean_draws(float(d.mean()), d.size) / gap_star
        out[name] = (float(d.mean() / g.mean()), ratio[np.isfinite(ratio)])
    return out
