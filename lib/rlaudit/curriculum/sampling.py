"""Same scores in, same tasks out? (curriculum/sampling)

Both curricula are driven with identical synthetic scores in the subjects' own processes
(:func:`rlaudit.curriculum.probes.sampling`): open loop, the distribution of tasks each draws after the same
updates is compared (chi-square, total variation with a bootstrap interval); closed loop, the sequences of
choices, when each curriculum replays its choices under a fixed seed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, Check, check
from rlaudit.curriculum import plots, probes
from rlaudit.curriculum.common import no_curriculum
from rlaudit.engine.workbench import Pair
from rlaudit.env.analysis import sizes
from rlaudit.evidence import Verdict, fmt, inconclusive, interval, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section

TVD_MARGIN = 0.05
"""Two sampling distributions closer than this total variation are practically the same."""


def pooled_counts(phases: list[dict[str, int]], skip_first: bool = True) -> dict[str, int]:
    """Counts per task summed over phases (the initial, score-free phase left out by default)."""
    out: dict[str, int] = {}
    for counts in phases[1 if skip_first else 0 :]:
        for k, v in counts.items():
            out[k] = out.get(k, 0) + int(v)
    return out


def _sequence_note(pair: Pair, closed: dict[str, Any], repro: dict[str, bool]) -> str:
    """How the closed-loop choice sequences compare, or why they cannot be compared."""
    if all(repro.values()):
        a, b = closed["baseline"]["sequence"], closed["candidate"]["sequence"]
        div = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
        same_frac = float(np.mean([x == y for x, y in zip(a, b, strict=False)])) if a else math.nan
        if div is None:
            return f"the closed-loop choices are identical for all {len(a)} episodes"
        return f"the closed-loop choices first differ at episode {div} ({pct(same_frac)} identical)"
    irreproducible = [s for s in SIDES if not repro[s]]
    how = pair[irreproducible[0]].result.get("seeded")
    who = (
        f"the {irreproducible[0]}'s curriculum chooses"
        if len(irreproducible) == 1
        else "both curricula choose"
    )
    return (
        f"{who} differently from one instance to the next under a fixed seed (make_curriculum takes no seed; the "
        f"{how} generators were seeded), so choice sequences are not comparable and the distribution test "
        "carries the verdict"
    )


def tvd_interval(
    counts_a: dict[str, int], counts_b: dict[str, int], *, seed: int, n_boot: int = 1000
) -> tuple[float, float, float]:
    """Total variation distance between two samples of draws, with a parametric bootstrap 95% interval.

    Each resample redraws both sides' draws from their own observed frequencies (multinomial), so the interval
    carries the sampling noise of finite draws (which biases the distance upward: two identical curricula
    read a small positive distance).

    Returns:
        ``(tvd, low, high)``.
    """
    keys = sorted(set(counts_a) | set(counts_b))
    a = np.array([counts_a.get(k, 0) for k in keys], dtype=float)
    b = np.array([counts_b.get(k, 0) for k in keys], dtype=float)
    if a.sum() == 0 or b.sum() == 0:
        return math.nan, math.nan, math.nan
    pa, pb = a / a.sum(), b / b.sum()
    rng = stats.as_generator(seed)
    boot_a = rng.multinomial(int(a.sum()), pa, size=n_boot) / a.sum()
    boot_b = rng.multinomial(int(b.sum()), pb, size=n_boot) / b.sum()
    tvd = 0.5 * np.abs(boot_a - boot_b).sum(axis=1)
    point = 0.5 * float(np.abs(pa - pb).sum())
    low, high = np.quantile(tvd, [0.025, 0.975])
    return point, min(float(low), point), max(float(high), point)


def phase_table(opened: dict[str, list[dict[str, int]]]) -> pd.DataFrame:
    """Per open-loop phase: tasks drawn on each side and the chi-square test between the two draws."""
    rows = []
    for i, (pb, pc) in enumerate(zip(opened["baseline"], opened["candidate"], strict=False)):
        t = stats.chi_square_distributions(pc, pb)
        rows.append(
            {
                "phase": i,
                "tasks (baseline)": len(pb),
                "tasks (candidate)": len(pc),
                "chi2": t["statistic"],
                "p": t["p"],
                "tvd": t["tvd"],
            }
        )
    return pd.DataFrame(rows)


NOT_REPRODUCIBLE = {
    "id": "curriculum/not-reproducible",
    "hypothesis": "A curriculum built with a fixed seed makes the same choices",
}
"""A secondary finding of the sampling check: a curriculum that does not replay its choices under a fixed seed."""


def _not_reproducible(c: Check, pair: Pair, repro: dict[str, bool], note: str) -> Finding:
    def side(s: str) -> str:
        return (
            "reproducible"
            if repro[s]
            else f"differs from itself at episode {pair[s].result.get('self_divergence')}"
        )

    return c.finding(
        Status.NOTED,
        Severity.LOW,
        **NOT_REPRODUCIBLE,
        baseline=side("baseline"),
        candidate=side("candidate"),
        summary=note,
        remediation="Give make_curriculum a seed (make_curriculum(config, seed)) so runs and audits can replay its "
        "choices.",
    )


def sampling_params(wb: Any, seed: int = 0) -> dict[str, Any]:
    """The sampling probe's parameters at the workbench's profile (one cache entry for the check and 06's picker)."""
    return {"seed": seed, "episodes": sizes(wb.profile).curriculum_episodes}


@check(
    "curriculum/sampling",
    title="Same scores in, same tasks out?",
    probe=probes.sampling,
    params=sampling_params,
    desc="curriculum sampling",
)
def sampling(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """Given the same scores, both curricula sample tasks from the same distribution.

    Open-loop chi-square of the sampling distributions; closed-loop choice sequences when reproducible.
    """
    if (none := no_curriculum(c, pair)) is not None:
        return none
    opened = {s: pair[s].json("open_loop")["phases"] for s in SIDES}
    closed = {s: pair[s].json("closed_loop") for s in SIDES}
    pooled = {s: pooled_counts(opened[s]) for s in SIDES}
    test = stats.chi_square_distributions(pooled["candidate"], pooled["baseline"])
    phases = phase_table(opened)
    tasks_b, tasks_c = set(pooled["baseline"]), set(pooled["candidate"])
    keys = sorted(tasks_b | tasks_c, key=lambda k: (len(k), k))
    probs = pd.DataFrame(
        [
            {"task": k, "side": s, "probability": pooled[s].get(k, 0) / max(1, sum(pooled[s].values()))}
            for s in SIDES
            for k in keys
        ]
    )
    repro = {s: pair[s].result.get("reproducible", False) for s in SIDES}
    seq_note = _sequence_note(pair, closed, repro)
    if tasks_b != tasks_c:
        decided = Verdict(
            Status.SUSPECT,
            Severity.HIGH,
            f"the curricula draw from different task sets ({len(tasks_b)} vs {len(tasks_c)} tasks; only in "
            f"candidate: {sorted(tasks_c - tasks_b)[:5]}, only in baseline: {sorted(tasks_b - tasks_c)[:5]})",
            "Restore the task family (the curriculum's task lists) of the baseline.",
        )
    elif test["p"] < 0.001 and test["tvd"] > 0.05:
        decided = Verdict(
            Status.SUSPECT,
            Severity.HIGH,
            f"the same scores give different sampling distributions (total variation {fmt(test['tvd'])}, "
            f"chi-square p = {fmt(test['p'])}); {seq_note}",
            "Diff the curriculum's scoring and sampling (learning-progress formula, exploration rate, smoothing) "
            "between versions.",
        )
    else:
        tvd = tvd_interval(pooled["candidate"], pooled["baseline"], seed=seed)
        identical = all(repro.values()) and seq_note.startswith("the closed-loop choices are identical")
        if identical or tvd[2] <= TVD_MARGIN:
            decided = Verdict(
                Status.CLEARED,
                Severity.INFO,
                f"the same scores give the same sampling distribution over {len(tasks_b)} tasks (total variation "
                f"{fmt(tvd[0])} {interval(tvd[1], tvd[2])}, within {fmt(TVD_MARGIN)}; chi-square p = "
                f"{fmt(test['p'])}); {seq_note}",
                "Nothing to do.",
            )
        else:
            decided = inconclusive(
                f"total variation {fmt(tvd[0])} {interval(tvd[1], tvd[2])} over {len(tasks_b)} tasks "
                f"is not shown below {fmt(TVD_MARGIN)} (chi-square p = {fmt(test['p'])}); {seq_note}",
                "more draws per phase",
            )
    findings = [
        c.conclude(
            decided,
            baseline=f"{len(tasks_b)} tasks, {sum(pooled['baseline'].values())} draws",
            candidate=f"{len(tasks_c)} tasks, {sum(pooled['candidate'].values())} draws",
            effect=test["tvd"],
            effect_label="total variation distance",
            test={k: test[k] for k in ("name", "statistic", "p", "dof", "cramers_v")},
            details={"phases": phases.to_dict("records"), "reproducible": repro},
            figures=["sampling distributions"],
        )
    ]
    if not all(repro.values()):
        findings.append(_not_reproducible(c, pair, repro, seq_note))
    draws = sum(opened["baseline"][0].values())  # per phase, as the probe was asked for
    method = (
        f"Open loop: every task seen is updated with the same synthetic score each phase, in a fixed order, then "
        f"{draws} draws record the distribution, so the counts of two equivalent curricula differ only by "
        "multinomial noise (a valid chi-square)."
    )
    return c.section(
        findings,
        tables={"per phase": phases},
        figures={"sampling distributions": plots.distributions(probs)},
        notes=method,
    )
