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
from rlaudit.engine.workbench import Pair
from rlaudit.env import plots
from rlaudit.env.analysis import POLICIES, rollout_pair, rollout_pairs
from rlaudit.evidence import equivalence_seeds, fmt, interval, judge, pct
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.stats import bootstrap_diff


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


LOST = "lost at reset"
TRANSFORMED = "transformed"
BOUNDARIES = "different episode ends"
UNEXPLAINED = "unexplained"


def stats_reading(episodes: pd.DataFrame, tol: float = 1e-4) -> dict[str, Any]:
    """Why one side's reported episode returns disagree with the rewards it paid, when they do.

    Three readings, tried in this order on the episodes with a reported return:

    - ``different episode ends``: the reported lengths differ from the steps the episodes took, so the env's
      bookkeeping counts other episodes than the learner sees (a wrapper that ends or resets them elsewhere);
    - ``transformed``: one affine map explains every episode, ``paid = scale * reported + per_step * length``
      (a reward-scaling or time-penalty wrapper between the env's bookkeeping and the learner): the
      statistics are fine, the learner's rewards are a transformed version of them;
    - ``lost at reset``: the reported return is 0, or short of what was paid, on most disagreeing episodes and
      no single map explains them (case 001: the accumulators recreated on reset);
    - else ``unexplained``.

    Args:
        episodes: Rollout episodes (``return``, ``length``, ``reported.r``, optional ``reported.l``).
        tol: Relative tolerance of an exact fit.

    Returns:
        ``kind`` (one of the readings, or ``"match"`` / ``"not reported"``), ``scale``, ``per_step`` (of the
        affine map, NaN unless transformed), ``zeroed`` (share of disagreeing episodes reported as 0),
        ``short`` (share reported below what was paid).
    """
    out: dict[str, Any] = {
        "kind": "not reported",
        "scale": math.nan,
        "per_step": math.nan,
        "zeroed": math.nan,
    }
    out["short"] = math.nan
    if "reported.r" not in episodes or episodes.empty:
        return out
    rep = episodes.dropna(subset=["reported.r"])
    if rep.empty:
        return out
    reported, paid = rep["reported.r"].to_numpy(float), rep["return"].to_numpy(float)
    bad = ~np.isclose(reported, paid, rtol=tol, atol=tol)
    if bad.mean() <= 0.05:
        out["kind"] = "match"
        return out
    out["zeroed"] = float(np.mean(np.abs(reported[bad]) <= tol))
    out["short"] = float(np.mean(np.abs(reported[bad]) < np.abs(paid[bad]) - tol))
    if "reported.l" in rep:
        lengths = rep["reported.l"].to_numpy(float)
        known = ~np.isnan(lengths)
        if known.any() and np.mean(lengths[known] != rep["length"].to_numpy(float)[known]) > 0.05:
            out["kind"] = BOUNDARIES
            return out
    # the simplest map first (a pure scale), then a scale with a per-step term when the two can be told apart
    exact = 1e-3 * max(float(np.max(np.abs(paid))), 1e-6) + tol
    if float(reported @ reported) > 0:
        scale = float(paid @ reported / (reported @ reported))
        if np.max(np.abs(paid - scale * reported)) <= exact:
            out.update(kind=TRANSFORMED, scale=scale, per_step=0.0)
            return out
    design = np.column_stack([reported, rep["length"].to_numpy(float)])
    if len(rep) >= 3 and np.linalg.matrix_rank(design) == 2:
        (scale, per_step), *_ = np.linalg.lstsq(design, paid, rcond=None)
        if np.max(np.abs(paid - design @ np.array([scale, per_step]))) <= exact:
            out.update(kind=TRANSFORMED, scale=float(scale), per_step=float(per_step))
            return out
    out["kind"] = LOST if max(out["zeroed"], out["short"]) >= 0.5 else UNEXPLAINED
    return out


def transform_text(reading: dict[str, Any]) -> str:
    """``×0.1`` or ``×0.1 and -0.01 per step``: the affine map of a ``transformed`` reading."""
    scale, per_step = reading["scale"], reading["per_step"]
    parts = [f"×{fmt(scale)}"] if abs(scale - 1) > 1e-3 else []
    if abs(per_step) > 1e-9:
        parts.append(f"{fmt(per_step)} per step")
    return " and ".join(parts) or "×1"


CANDIDATE_READINGS: dict[str, tuple[Status, Severity, str, str]] = {
    BOUNDARIES: (
        Status.SUSPECT,
        Severity.HIGH,
        "the candidate's reported episode lengths differ from the steps its episodes took ({mc} of returns "
        "disagree, {example}): the env books other episode ends than the learner sees, different dynamics around "
        "resets rather than lost statistics",
        "Find the wrapper or reset path that ends or restarts episodes differently in the candidate.",
    ),
    LOST: (
        Status.CONFIRMED,
        Severity.HIGH,
        "the candidate reports a wrong return for {mc} of episodes (baseline {mb}): {example}; {zeroed} of them read "
        "0 and no single scale explains them: episode statistics are lost at reset",
        "Read (and report) the finished episode's statistics before the reset recreates or zeroes the accumulators "
        "(case 001's environment recreation lost the episode rewards); the trainer's episodic return and heart.get "
        "curves are wrong until then.",
    ),
    UNEXPLAINED: (
        Status.SUSPECT,
        Severity.HIGH,
        "the candidate's reported returns disagree with the rewards paid for {mc} of episodes ({example}) in no "
        "consistent way (no scale or per-step term explains them)",
        "Compare how the candidate accumulates episode statistics with the rewards step() returns.",
    ),
}
"""The verdict on a candidate whose bookkeeping disagrees with its rewards (and the baseline's does not, or
differently), by :func:`stats_reading` kind; a ``transformed`` reading is worded with its scale."""


def _disagree(res: dict[str, Any]) -> str:
    if not res["reported"]:
        return "not reported"
    return f"{pct(res['return_mismatch'])} of {res['reported']} reported episodes disagree"


def _example(res: dict[str, Any]) -> str:
    ex = res["example"] or {}
    return (
        f"e.g. env {ex.get('env')} at step {ex.get('end_step')} reported {fmt(ex.get('reported_return'))} but was "
        f"paid {fmt(ex.get('return_paid'))}"
    )


@check(
    "env/episode-stats", title="Do episode statistics survive resets?", needs=rollout_pair, reads=("rewards",)
)
def episode_stats(c: Check, pair: Pair) -> Section:
    """The per-episode statistics the environment reports match the rewards it returned.

    Reported episode return/length (``info["episode"]``) against the sum of rewards the env returned.
    """
    eps = {s: pair[s].table("episodes") for s in SIDES}
    res = {s: stat_mismatch(eps[s]) for s in SIDES}
    read = {s: stats_reading(eps[s]) for s in SIDES}
    table = pd.DataFrame(
        [
            {
                "side": s,
                **{k: v for k, v in res[s].items() if k != "example"},
                **{f"reading {k}": v for k, v in read[s].items()},
            }
            for s in SIDES
        ]
    )
    b, cand = res["baseline"], res["candidate"]
    kb, kc = read["baseline"]["kind"], read["candidate"]["kind"]
    mb = b["return_mismatch"] if b["reported"] else math.nan
    mc = cand["return_mismatch"] if cand["reported"] else math.nan
    knock_on = False
    if b["reported"] and not cand["reported"]:
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
    elif kc == kb and (
        kc != TRANSFORMED or transform_text(read["baseline"]) == transform_text(read["candidate"])
    ):
        # the same reading on both sides: symmetric evidence, one verdict for both
        if kc in ("match", "not reported"):
            status, severity = Status.CLEARED, Severity.INFO
            summary = (
                f"reported episode returns match the rewards paid ({b['reported']} and {cand['reported']} "
                f"episodes, {pct(mb)} and {pct(mc)} disagree)"
            )
            remediation = "Nothing to do: episode statistics survive resets."
        else:
            status, severity = Status.NOTED, Severity.LOW
            detail = f" ({transform_text(read['baseline'])})" if kc == TRANSFORMED else ""
            summary = (
                f"both environments' reported returns disagree with the rewards paid the same way: {kc}{detail} "
                f"({pct(mb)} and {pct(mc)} of episodes); not a difference between the setups"
            )
            remediation = "Check the reported statistic's definition (shaped vs raw reward) in both versions."
    elif kc == TRANSFORMED:
        knock_on = True
        status, severity = Status.SUSPECT, Severity.MEDIUM
        before = transform_text(read["baseline"]) if kb == TRANSFORMED else "×1"
        summary = (
            f"the rewards the candidate's learner receives are the environment's own episode returns "
            f"{transform_text(read['candidate'])} (baseline {before}): a wrapper transforms the rewards between the "
            f"env's bookkeeping and the learner (a reward scale of {fmt(read['candidate']['scale'])} relative to the "
            "env's), not lost statistics; 11_rewards measures each component's scale"
        )
        remediation = (
            "Find the reward wrapper (scaling, normalization, penalty) the candidate added or changed and restore "
            "the baseline's, or retune what depends on the reward scale."
        )
    elif kc in CANDIDATE_READINGS:
        status, severity, text, remediation = CANDIDATE_READINGS[kc]
        summary = text.format(
            mc=pct(mc), mb=pct(mb), example=_example(cand), zeroed=pct(read["candidate"]["zeroed"])
        )
    else:  # the baseline's bookkeeping is missing or disagrees and the candidate's matches: an improvement
        status, severity = Status.NOTED, Severity.LOW
        summary = (
            f"the baseline's reported returns disagree with the rewards paid ({kb}), the candidate's do not"
            if b["reported"]
            else "the candidate reports per-episode statistics that match the rewards paid; the baseline reports none"
        )
        remediation = "Nothing to do for a regression."
    finding = c.finding(
        status,
        severity,
        baseline=_disagree(b),
        candidate=_disagree(cand),
        effect=(mc - mb) if b["reported"] and cand["reported"] else None,
        effect_label="difference in the fraction of episodes whose reported return is wrong",
        summary=summary,
        details={"baseline": b, "candidate": cand, "readings": read, "knock_on": knock_on},
        remediation=remediation,
    )
    return c.section(finding, tables={"reported vs paid": table})


def compare_samples(a: np.ndarray, b: np.ndarray, *, seed: int) -> dict[str, Any]:
    """Candidate sample ``a`` against baseline ``b``: test, mean difference with CI, and the decision.

    A difference counts when the two-sample test's p < 0.05, the bootstrap interval of the mean difference
    excludes 0, AND the mean moved by more than 10% of the baseline's mean magnitude and a quarter of a pooled
    standard deviation: large rollouts make every tiny shift "significant", and only a practical one matters.
    The two are ``equivalent`` only when that whole interval lies inside the same practical ``margin``;
    ``needed`` is then None, else the episodes per side that would show equivalence (TOST), when any would.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return {
            "n_a": len(a),
            "n_b": len(b),
            "differs": False,
            "equivalent": False,
            "needed": None,
            "test": None,
            "ci": None,
            "diff": math.nan,
        }
    test = stats.two_sample_test(a, b)
    ci = bootstrap_diff(a, b, seed=seed)
    pooled = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    scale = max(0.10 * abs(b.mean()), 0.25 * pooled, 1e-12)
    differs = bool(test["p"] < 0.05 and abs(ci.point) > scale and (ci.low > 0 or ci.high < 0))
    verdict = judge(ci.point, ci.low, ci.high, scale, needed=equivalence_seeds(pooled, scale, ci.point))
    return {
        "n_a": len(a),
        "n_b": len(b),
        "mean_a": float(a.mean()),
        "mean_b": float(b.mean()),
        "diff": ci.point,
        "ci": (ci.low, ci.high),
        "test": {k: test[k] for k in ("name", "statistic", "p", "cohens_d")},
        "differs": differs,
        "margin": scale,
        "equivalent": verdict.equivalent,
        "needed": verdict.needed,
    }


@check(
    "env/episode-distributions",
    title="Episodes under fixed seeded policies",
    needs=rollout_pairs,
    reads=("curriculum", "rewards", "trainer"),
)
def distributions(c: Check, pairs: list[Pair], *, seed: int = 0) -> Section:
    """Under fixed seeded policies, episode lengths and returns have the same distributions.

    Random and win-stay-lose-shift policies: lengths and returns compared by test and bootstrap CI.
    """
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
        means = {
            side: "; ".join(f"{r['quantity']} ({r['policy']}) {fmt(r.get(col))}" for r in rows)
            for side, col in (("baseline", "mean_b"), ("candidate", "mean_a"))
        }
        open_rows = [r for r in rows if not r["equivalent"]]
        if not open_rows:
            finding = c.finding(
                Status.CLEARED,
                **means,
                summary="episode lengths and returns match under random and win-stay-lose-shift policies, every mean "
                f"within its practical margin ({int(table['n_b'].sum())} and {int(table['n_a'].sum())} episodes)",
                details=details,
                remediation="Nothing to do.",
                figures=["episode histograms"],
            )
        else:
            needed = [r["needed"] for r in open_rows if r.get("needed")]
            settle = f"; about {max(needed)} episodes per side would settle it" if needed else ""
            parts = [
                f"{r['quantity']} ({r['policy']}) {fmt(r['diff'])} {interval(*(r['ci'] or (None, None)))} vs margin "
                f"±{fmt(r['margin'])}"
                if r.get("ci")
                else f"{r['quantity']} ({r['policy']}) with {r['n_b']} and {r['n_a']} episodes"
                for r in open_rows
            ]
            finding = c.finding(
                Status.NOTED,
                **means,
                summary="inconclusive: no difference shown, but not every mean is shown the same within its "
                "practical margin: " + "; ".join(parts) + settle,
                details=details,
                remediation="Rerun at a larger profile (longer rollouts, more episodes) to settle it.",
                figures=["episode histograms"],
            )
    return c.section(
        finding,
        tables={"episode statistics": table},
        figures={
            "episode histograms": plots.histograms(samples, title="episodes under fixed seeded policies")
        },
    )
