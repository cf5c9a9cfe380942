"""Power: how many seeds per arm a two-sample t-test needs to detect a difference of a given size."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def t_power(n: int, d: float, alpha: float) -> float:
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
    while n > 2 and t_power(n - 1, d, alpha) >= power:
        n -= 1
    while t_power(n, d, alpha) < power:
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
