"""Run-to-run variance of the primary metric over the shared training runs' seeds, and from it the seeds
a comparison needs to detect or to clear an effect (the power table of :mod:`rlaudit.seeding.power`, which
the summary and the trainer's learning check read).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, SYMPTOM, Check, check
from rlaudit.evidence import fmt
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.seeding import power as pw
from rlaudit.trainer.runs import TrainingRuns, training_runs

POWER_TABLE = "power table (seeds per arm)"
"""Name of the variance section's power table (notebooks show it with ``section.table(POWER_TABLE)``)."""


def variance_table(values: dict[str, list[float]], *, seed: int) -> dict[str, Any]:
    """Per side: mean and SD over seeds (with a bootstrap interval of the SD), and the pooled SD."""
    out: dict[str, Any] = {}
    sds = []
    for side, vals in values.items():
        arr = np.asarray(vals, dtype=float)
        sd = float(arr.std(ddof=1)) if len(arr) >= 2 else math.nan
        ci = (
            stats.bootstrap_ci(arr, lambda x, axis=None: np.std(x, axis=axis, ddof=1), seed=seed)
            if len(arr) >= 3
            else None
        )
        out[side] = {
            "n": len(arr),
            "mean": float(arr.mean()) if len(arr) else math.nan,
            "sd": sd,
            "sd_ci": (ci.low, ci.high) if ci else None,
            "values": arr.tolist(),
        }
        if math.isfinite(sd):
            sds.append((len(arr) - 1, sd))
    dof = sum(d for d, _ in sds)
    out["pooled_sd"] = math.sqrt(sum(d * s * s for d, s in sds) / dof) if dof else math.nan
    return out


def final_values(runs: TrainingRuns, metric: Any) -> dict[str, list[float]]:
    """Per side, each completed run's final value of ``metric`` (:meth:`RunData.final`), runs that never
    reported it left out (runs that did not finish are reported by trainer/outcomes)."""
    values: dict[str, list[float]] = {s: [] for s in SIDES}
    for s in SIDES:
        for run in runs[s]:
            v = run.final(metric)
            if math.isfinite(v):
                values[s].append(v)
    return values


@check(
    "seeding/variance",
    title="Run-to-run variance and the seeds a comparison needs",
    needs=training_runs,  # a failed seed leaves the others (trainer/outcomes reports it)
    role=SYMPTOM,  # runs that vary more across seeds follow from whatever else changed
)
def variance(
    c: Check, runs: TrainingRuns, *, seed: int = 0, alpha: float = 0.05, power: float = 0.8
) -> Section:
    """The runs vary across seeds alike in {metric}, and we know how many seeds a comparison needs.

    Run-to-run SD of the primary metric's final value over the shared runs' seeds, and the power table
    (:mod:`rlaudit.seeding.power`): seeds per side to detect, or to clear, an effect of several sizes.
    """
    metric = c.wb.metric
    values = final_values(runs, metric)
    short = [s for s in SIDES if len(values[s]) < 2]
    if short:
        found = runs.outcomes()
        unfinished = "".join(
            f"; {s} seed {o.seed} {o.describe()}" for s in short for o in found.get(s, []) if not o.finished
        )
        c.missing(
            f"two or more runs reporting {metric.name} (got {', '.join(f'{s} {len(values[s])}' for s in SIDES)}"
            f"{unfinished})",
            metric.how_to_report + " Run at least two seeds per side (the profile's seeds).",
            short,
        )
    var = variance_table(values, seed=seed)
    sd = var["pooled_sd"]
    base_mean = var["baseline"]["mean"]
    table = pw.seeds_table(
        sd, pw.table_effects(sd, base_mean), baseline_mean=base_mean, alpha=alpha, power=power
    )
    spread = pd.DataFrame(
        [
            {
                "metric": metric.name,
                "side": s,
                "seeds": var[s]["n"],
                "mean": var[s]["mean"],
                "sd": var[s]["sd"],
            }
            for s in SIDES
        ]
    )
    sb, sc = var["baseline"]["sd"], var["candidate"]["sd"]
    n_b, n_c = var["baseline"]["n"], var["candidate"]["n"]
    test = None
    status, severity = Status.NOTED, Severity.INFO
    if n_b >= 5 and n_c >= 5 and sb > 0 and sc > 0:
        from scipy.stats import levene

        lv = levene(values["candidate"], values["baseline"])
        test = {"name": "levene", "statistic": float(lv.statistic), "p": float(lv.pvalue)}
        if lv.pvalue < 0.01 and sc / sb > 2:
            status, severity = Status.SUSPECT, Severity.MEDIUM
    row10 = table.iloc[1] if len(table) > 1 else (table.iloc[0] if len(table) else None)
    need = (
        f"detecting a {fmt(row10['effect'])} change ({fmt(row10['effect_sd'])} SD) with power {power:.0%} at "
        f"alpha {alpha} takes {int(row10['seeds_to_detect'])} seeds per arm, showing the two setups agree "
        f"within ±{fmt(row10['effect'])} takes {int(row10['seeds_to_clear'])}"
        if row10 is not None
        else "no effect size to size (the SD and the baseline's mean are both 0)"
    )
    summary = (
        f"final {metric.name} varies across seeds with SD {fmt(sb)} (baseline, {n_b} seeds) and {fmt(sc)} "
        f"(candidate, {n_c} seeds); {need}"
    )
    if status == Status.SUSPECT:
        summary = f"the candidate's runs vary {fmt(sc / sb)} times more across seeds: " + summary
    finding = c.finding(
        status,
        severity,
        baseline=round(sb, 6),
        candidate=round(sc, 6),
        effect=sc / sb if sb > 0 else None,
        effect_label="SD ratio candidate/baseline",
        test=test,
        summary=summary,
        details={
            "metric": metric.name,
            "pooled_sd": sd,
            "variance": var,
            "alpha": alpha,
            "power": power,
            "power_table": table.to_dict("records"),
        },
        remediation=(
            f"Size attribution experiments with the power table: at least {int(row10['seeds_to_detect'])} "
            "seeds per arm for the effect sizes you care about."
            if row10 is not None
            else "Run more seeds to estimate the variance."
        ),
    )
    return c.section(
        finding,
        tables={
            "spread across seeds": spread,
            POWER_TABLE: table.rename(columns={"effect": f"effect ({metric.name}, difference of means)"}),
        },
        notes=[
            f"Final value = mean of {metric.name} over the last quarter of each run's steps; the SD pools both "
            f"sides' seeds. Detect: two-sided t-test at alpha {alpha}, power {power:.0%} (noncentral t). Clear: "
            f"two one-sided tests at alpha {alpha} within ±effect, power {power:.0%}, no true difference."
        ],
    )
