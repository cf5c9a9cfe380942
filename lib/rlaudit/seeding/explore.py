"""The power calculator of 13_seeding: pick an effect, a level and a power, read the seeds per side it takes.

It rests on what ``seeding/variance`` measured (the pooled run-to-run SD of the final primary metric and the
baseline's mean, in the finding's details), so nothing trains when a control moves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rlaudit.evidence import equivalence_seeds
from rlaudit.explore import Explorer, choice, nothing_to_explore, slider
from rlaudit.stats import power_seeds
from rlaudit.stats.power import t_power

MAX_SEEDS = 64
"""The power curve is drawn up to this many seeds per side."""


def _details(section: Any) -> dict[str, Any] | None:
    for finding in getattr(section, "findings", []):
        details = finding.evidence.details or {}
        if "pooled_sd" in details and "variance" in details:
            return details
    return None


def power_curve(sd: float, effect: float, alpha: float, seeds: Any) -> Any:
    """Power of a two-sided two-sample t-test at each number of seeds per side (noncentral t)."""
    d = abs(effect) / sd if sd > 0 else math.inf
    return np.array([t_power(int(n), d, alpha) if math.isfinite(d) else 1.0 for n in seeds])


def power_explorer(section: Any) -> Any:
    """The power calculator over the ``seeding/variance`` section (its finding's SD and baseline mean)."""

    details = _details(section)
    sd = float(details["pooled_sd"]) if details else math.nan
    if details is None or not math.isfinite(sd) or sd <= 0:
        text = "No power calculator: seeding/variance measured no run-to-run spread (see its finding)."
        return nothing_to_explore(text)
    metric = str(details.get("metric", "metric"))
    base = float(details["variance"]["baseline"]["mean"])
    relative = math.isfinite(base) and base != 0
    unit = abs(base) if relative else sd
    label = "effect (% of baseline mean)" if relative else "effect (SDs)"
    seeds = np.arange(2, MAX_SEEDS + 1)

    def effect_of(values: dict[str, Any]) -> float:
        return values["effect"] * unit / (100.0 if relative else 1.0)

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.12, top=0.9)
        (curve,) = ax.plot([], [], color="#1f77b4", label="power to detect")
        target = ax.axhline(0.8, color="grey", linestyle=":", linewidth=1)
        detect = ax.axvline(2, color="#d62728", linewidth=1.5, label="seeds to detect")
        clear = ax.axvline(2, color="#2ca02c", linestyle="--", linewidth=1.5, label="seeds to clear")
        ax.set_xlim(2, MAX_SEEDS)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("seeds per side")
        ax.set_ylabel("power")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
        return {"ax": ax, "curve": curve, "target": target, "detect": detect, "clear": clear}

    def update(artists: dict[str, Any], values: dict[str, Any]) -> None:
        effect = effect_of(values)
        alpha, power = float(values["alpha"]), float(values["power"])
        artists["curve"].set_data(seeds, power_curve(sd, effect, alpha, seeds))
        artists["target"].set_ydata([power, power])
        n_detect = power_seeds(sd, effect, alpha=alpha, power=power)
        n_clear = equivalence_seeds(sd, effect, alpha=alpha, power=power)
        artists["detect"].set_xdata([min(n_detect, MAX_SEEDS)] * 2)
        artists["clear"].set_visible(n_clear is not None)
        artists["clear"].set_xdata([min(n_clear or 2, MAX_SEEDS)] * 2)
        over = lambda n: f"{n}" if n <= MAX_SEEDS else f"{n} (off the chart)"  # noqa: E731
        clear_text = over(n_clear) if n_clear is not None else "never"
        artists["ax"].set_title(
            f"{metric}: a gap of {effect:.3g} (SD {sd:.3g}) takes {over(n_detect)} seeds per side to detect, "
            f"{clear_text} to clear, at alpha {alpha:g} and power {power:.0%}",
            fontsize="small",
        )

    controls = [
        slider(
            "effect",
            1.0 if relative else 0.1,
            100.0 if relative else 3.0,
            10.0 if relative else 1.0,
            step=1.0 if relative else 0.05,
            label=label,
        ),
        choice("alpha", [0.01, 0.05, 0.1], 0.05, label="level (alpha)"),
        choice("power", [0.7, 0.8, 0.9, 0.95], 0.8, label="power"),
    ]
    return Explorer(
        title=f"Power calculator: seeds per side for a gap in final {metric}",
        controls=controls,
        setup=setup,
        update=update,
    )


__all__ = ["Explorer", "power_curve", "power_explorer"]
