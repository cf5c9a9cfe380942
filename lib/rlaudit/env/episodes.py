"""Episodes: do the statistics the environment reports match what it paid, and do episodes under fixed
seeded policies look the same? (env/episode-stats, env/episode-distributions)

Both read the shared fixed-policy rollouts (:func:`rlaudit.env.analysis.rollout_pair`): every episode's
return as the sum of the rewards the outermost environment returned (what a learner receives), its length,
and the statistics the environment reported in ``info`` (``reported.r``, ``reported.l``, event counts).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, Check, check
from rlaudit.env import plots
from rlaudit.env.analysis import POLICIES, rollout_pair, rollout_pairs
from rlaudit.evidence import fmt, pct
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.stats import bootstrap_diff
from rlaudit.workbench import Pair


def stat_mismatch(episodes: pd.DataFrame, tol: float = 1e-4) -> dict[str, Any]:
    """How often the episode statistics the environment reported disagree with what it returned.

    Args:
        episodes: The rollout's episodes table (``return``, ``length``, ``reported.r``, ``reported.l``).
        tol: Absolute and relative tolerance for returns.

    Returns:
        ``reported`` (episodes with a reported return), ``episodes``, ``return_mismatch`` (fraction of
        reported episodes whose return differs), ``length_mismatch``, ``example`` (one mismatching episode).
    """
    out: dict[str, Any] = {
        "episodes": len(episodes),
        "reported": 0,
        "return_mismatch": math.nan,
        "length_mismatch": math.nan,
        "example": None,
    }
    if "reported.r" not in episodes or episodes.empty:
        return out
    rep = episodes.dropna(subset=["reported.r"])
    out["reported"] = len(rep)
    if rep.empty:
        return out
    r_bad = ~np.isclose(rep["reported.r"].to_numpy(), rep["return"].to_numpy(), rtol=tol, atol=tol)
    out["return_mismatch"] = float(r_bad.mean())
    if "reported.l" in rep:
        l_rep = rep["reported.l"].to_numpy()
        ok = ~np.isnan(l_rep)
        out["length_mismatch"] = (
            float((l_rep[ok] != rep["length"].to_numpy()[ok]).mean()) if ok.any() else math.nan
        )
    if r_bad.any():
        row = rep[r_bad].iloc[0]
        out["example"] = {
            "env": int(row["env"]),
            "end_step": int(row["end"]),
            "reported_return": float(row["reported.r"]),
            "return_paid": float(row["return"]),
        }
    return out


def _disagree(res: dict[str, Any]) -> str:
    if not res["reported"]:
        return "not reported"
    return f"{pct(res['return_mismatch'])} of {res['reported']} reported episodes disagree"


@check(
    "env/episode-stats",
    "The per-episode statistics the environment reports match the rewards it returned",
    title="Do episode statistics survive resets?",
    needs=rollout_pair,
)
def episode_stats(c: Check, pair: Pair) -> Section:
    """Reported episode return/length (``info["episode"]``) against the sum of rewards the env returned."""
    res = {s: stat_mismatch(pair[s].table("episodes")) for s in SIDES}
    table = pd.DataFrame([{"side": s, **{k: v for k, v in res[s].items() if k != "example"}} for s in SIDES])
    b, cand = res["baseline"], res["candidate"]
    mb = b["return_mismatch"] if b["reported"] else math.nan
    mc = cand["return_mismatch"] if cand["reported"] else math.nan
    if cand["reported"] and (not b["reported"] or mc - (mb if b["reported"] else 0.0) > 0.05) and mc > 0.05:
        ex = cand["example"] or {}
        status, severity = Status.CONFIRMED, Severity.HIGH
        summary = (
            f"the candidate reports a wrong return for {pct(mc)} of episodes (baseline {pct(mb)}): e.g. env "
            f"{ex.get('env')} at step {ex.get('end_step')} reported {fmt(ex.get('reported_return'))} but was "
            f"paid {fmt(ex.get('return_paid'))}: episode statistics are lost at reset"
        )
        remediation = (
            "Read (and report) the finished episode's statistics before the reset recreates or zeroes the "
            "accumulators (case 001's environment recreation lost the episode rewards); the trainer's "
            "episodic return and heart.get curves are wrong until then."
        )
    elif b["reported"] and not cand["reported"]:
        status, severity = Status.SUSPECT, Severity.MEDIUM
        summary = "the candidate stopped reporting per-episode statistics (info['episode']) that the baseline reports"
        remediation = "Restore the episode statistics in info (RecordEpisodeStatistics or the env's own)."
    elif not b["reported"] and not cand["reported"]:
        status, severity = Status.NOTED, Severity.INFO
        summary = (
            "neither environment reports per-episode statistics in info; trainers must sum rewards themselves"
        )
        remediation = (
            "Wrap the environment in gymnasium's RecordEpisodeStatistics to make episode returns checkable."
        )
    elif mb > 0.05 and mc > 0.05:
        status, severity = Status.NOTED, Severity.MEDIUM
        summary = (
            f"both environments report returns that disagree with the rewards paid ({pct(mb)}, {pct(mc)})"
        )
        remediation = "Check the reported statistic's definition (shaped vs raw reward) in both versions."
    else:
        status, severity = Status.CLEARED, Severity.INFO
        summary = (
            f"reported episode returns match the rewards paid ({b['reported']} and {cand['reported']} episodes, "
            f"{pct(mb)} and {pct(mc)} disagree)"
        )
        remediation = "Nothing to do: episode statistics survive resets."
    finding = c.finding(
        status,
        severity,
        baseline=_disagree(b),
        candidate=_disagree(cand),
        effect=(mc - mb) if b["reported"] and cand["reported"] else None,
        effect_label="difference in the fraction of episodes whose reported return is wrong",
        summary=summary,
        details={"baseline": b, "candidate": cand},
        remediation=remediation,
    )
    return c.section(finding, tables={"reported vs paid": table})


def compare_samples(a: np.ndarray, b: np.ndarray, *, seed: int) -> dict[str, Any]:
    """Candidate sample ``a`` against baseline ``b``: test, mean difference with CI, and the decision.

    A difference counts when the two-sample test's p < 0.05, the bootstrap interval of the mean difference
    excludes 0, AND the mean moved by more than 10% of the baseline's mean magnitude and a quarter of a pooled
    standard deviation: large rollouts make every tiny shift "significant", and only a practical one matters.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return {"n_a": len(a), "n_b": len(b), "differs": False, "test": None, "ci": None, "diff": math.nan}
    test = stats.two_sample_test(a, b)
    ci = bootstrap_diff(a, b, seed=seed)
    pooled = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    scale = max(0.10 * abs(b.mean()), 0.25 * pooled, 1e-12)
    differs = bool(test["p"] < 0.05 and abs(ci.point) > scale and (ci.low > 0 or ci.high < 0))
    return {
        "n_a": len(a),
        "n_b": len(b),
        "mean_a": float(a.mean()),
        "mean_b": float(b.mean()),
        "diff": ci.point,
        "ci": (ci.low, ci.high),
        "test": {k: test[k] for k in ("name", "statistic", "p", "cohens_d")},
        "differs": differs,
    }


@check(
    "env/episode-distributions",
    "Under fixed seeded policies, episode lengths and returns have the same distributions",
    title="Episodes under fixed seeded policies",
    needs=rollout_pairs,
)
def distributions(c: Check, pairs: list[Pair], *, seed: int = 0) -> Section:
    """Random and win-stay-lose-shift policies: lengths and returns compared by test and bootstrap CI."""
    rows, flagged = [], []
    samples: dict[str, dict[str, Any]] = {}
    for policy, pair in zip(POLICIES, pairs, strict=True):
        eps = {s: pair[s].table("episodes") for s in SIDES}
        for quantity in ("length", "return"):
            cmp = compare_samples(
                eps["candidate"][quantity].to_numpy(), eps["baseline"][quantity].to_numpy(), seed=seed
            )
            rows.append(
                {
                    "policy": policy,
                    "quantity": quantity,
                    **{k: v for k, v in cmp.items() if k != "test"},
                    "p": (cmp["test"] or {}).get("p"),
                }
            )
            samples[f"{quantity} ({policy})"] = {s: eps[s][quantity].to_numpy() for s in SIDES}
            if cmp["differs"]:
                flagged.append((policy, quantity, cmp))
    table = pd.DataFrame(rows)
    details = {"table": table.to_dict("records")}
    if flagged:
        policy, quantity, cmp = max(flagged, key=lambda x: abs(x[2]["diff"]) / max(abs(x[2]["mean_b"]), 1e-9))
        parts = [f"{q} under {pol}: {fmt(x['mean_b'])} -> {fmt(x['mean_a'])}" for pol, q, x in flagged]
        knock = (
            " (a return change follows from the reward function: see 11_rewards)"
            if all(q == "return" for _, q, _ in flagged)
            else ""
        )
        finding = c.finding(
            Status.SUSPECT,
            Severity.HIGH,
            baseline=round(cmp["mean_b"], 4),
            candidate=round(cmp["mean_a"], 4),
            effect=cmp["diff"],
            effect_label=f"difference in mean episode {quantity} ({policy} policy)",
            ci=cmp["ci"],
            test=cmp["test"],
            summary="episodes differ under the same fixed policies: " + "; ".join(parts) + knock,
            details=details,
            remediation="Find what changed the episode ends or the rewards (the reset and equivalence checks above "
            "point at where); a policy trained on one distribution sees another.",
            figures=["episode histograms"],
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            baseline="; ".join(f"{r['quantity']} ({r['policy']}) {fmt(r.get('mean_b'))}" for r in rows),
            candidate="; ".join(f"{r['quantity']} ({r['policy']}) {fmt(r.get('mean_a'))}" for r in rows),
            summary="episode lengths and returns match under random and win-stay-lose-shift policies "
            f"({int(table['n_b'].sum())} and {int(table['n_a'].sum())} episodes)",
            details=details,
            remediation="Nothing to do.",
            figures=["episode histograms"],
        )
    return c.section(
        finding,
        tables={"episode statistics": table},
        figures={
            "episode histograms": plots.histograms(samples, title="episodes under fixed seeded policies")
        },
    )
