"""Resets: what a reset costs, how resets are spread over the vectorized environments, and how episodes end
(env/reset-cost, env/reset-spread, env/termination).

Case 001 is the model: an environment rebuilt on every reset (a reset step many times a plain step) and
``desync_episodes`` rewritten to truncate every episode early instead of randomizing only the first one. All
three checks read the shared fixed-policy rollout (:func:`rlaudit.env.analysis.rollout_pair`).
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
from rlaudit.env.analysis import repeats_to_settle, rollout_pair
from rlaudit.evidence import Verdict, fmt, inconclusive, interval, judge, judge_ratio, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.timing import costlier, ratio_of_ratios

RESET_FACTOR = 1.5
"""A reset step's cost relative to a plain step counts as changed beyond this factor either way: the ratio of
two within-process ratios of noisy CPU timings of single steps, so a looser margin than whole blocks get."""
SHARE_MARGIN = 0.10
"""Shares of episodes (cut early, terminated) that differ by less than this are practically the same."""
ROLLOUT = {"needs": rollout_pair, "reads": ("curriculum",)}
"""The evidence of the reset-spread and termination checks: the shared fixed-policy rollout, whose episodes a
curriculum shapes (it picks each reset's task)."""


def proportion_difference(
    k_a: int, n_a: int, k_b: int, n_b: int, z: float = 1.96
) -> tuple[float, float, float]:
    """``k_a/n_a - k_b/n_b`` with Newcombe's hybrid score interval (from the two Wilson intervals).

    Newcombe (1998), *Interval estimation for the difference between independent proportions*, method 10: it
    keeps its coverage at 0 and 1, where the Wald interval collapses to a point.

    Returns:
        ``(difference, low, high)``; NaN when a side has no trials.
    """
    if n_a <= 0 or n_b <= 0:
        return math.nan, math.nan, math.nan

    def wilson(k: int, n: int) -> tuple[float, float, float]:
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return p, centre - half, centre + half

    pa, la, ua = wilson(k_a, n_a)
    pb, lb, ub = wilson(k_b, n_b)
    d = pa - pb
    low = d - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2)
    high = d + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)
    return d, low, high


def reset_step_times(steps: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Step durations (s) of steps in which some episode ended, and of steps in which none did."""
    ended = steps["ended"].to_numpy() > 0
    secs = steps["seconds"].to_numpy()
    return secs[ended], secs[~ended]


def _median(values: Any) -> float:
    values = np.asarray(values, dtype=float)
    return float(np.median(values)) if values.size else math.nan


def reset_cost_row(side: str, steps: pd.DataFrame, facts: dict[str, Any]) -> dict[str, Any]:
    """One side's row of the reset-cost table: step counts, median step times (ms) and their ratios."""
    with_end, without = reset_step_times(steps)
    plain = _median(without)
    reset = _median(facts.get("reset_seconds") or [])
    return {
        "side": side,
        "steps with an episode end": len(with_end),
        "steps without": len(without),
        "median step with end (ms)": 1e3 * _median(with_end),
        "median plain step (ms)": 1e3 * plain,
        "reset-step / plain-step": _median(with_end) / plain if len(with_end) and plain else math.nan,
        "explicit reset() (ms)": 1e3 * reset,
        "reset() / plain step": reset / plain if plain else math.nan,
    }


@check("env/reset-cost", title="What does a reset cost?", needs=rollout_pair, reads=("curriculum", "memory"))
def reset_cost(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """A step that resets episodes costs the same, relative to a plain step, in both environments.

    Within each process: median time of steps that reset some environment over steps that reset none.
    """
    groups = {s: reset_step_times(pair[s].table("steps")) for s in SIDES}
    rows = [reset_cost_row(s, pair[s].table("steps"), pair[s].json("facts")) for s in SIDES]
    table = pd.DataFrame(rows)
    tables = {"reset cost": table}
    if not all(len(g[0]) >= 5 and len(g[1]) >= 5 for g in groups.values()):
        # Every step resets something (or none does): fall back on explicit reset() against all steps.
        return c.section(
            c.finding(
                Status.NOTED,
                baseline=rows[0]["reset() / plain step"],
                candidate=rows[1]["reset() / plain step"],
                summary="too few steps with and without an episode end to compare autoreset cost; explicit "
                "reset() cost is in the table",
                remediation="Rerun at a larger profile (longer rollouts) to compare autoreset cost.",
            ),
            tables=tables,
        )
    ci = ratio_of_ratios(*groups["candidate"], *groups["baseline"], seed=seed)
    rb, rc = rows[0]["reset-step / plain-step"], rows[1]["reset-step / plain-step"]
    n_steps = min(len(pair[s].table("steps")) for s in SIDES)
    verdict = judge_ratio(*ci, RESET_FACTOR, needed=repeats_to_settle(n_steps, *ci, RESET_FACTOR))
    measured = f"{fmt(rc)}x a plain step in the candidate vs {fmt(rb)}x in the baseline ({fmt(ci.point)}x {interval(ci.low, ci.high)})"
    if verdict.different and ci.point > 1:
        # the whole interval beyond the margin confirms it; beyond 1 with the estimate past the margin suspects it
        decided = Verdict(
            Status.CONFIRMED if costlier(ci, RESET_FACTOR) else Status.SUSPECT,
            Severity.HIGH,
            f"a step that resets episodes costs {measured}: resets got {fmt(ci.point)} times more expensive",
            "Profile the environment's reset path: rebuild only what a reset changes (case 001 recreated the "
            "whole environment, every buffer and lookup table, on every reset).",
        )
    elif ci.high < 1 / RESET_FACTOR:
        decided = Verdict(
            Status.NOTED,
            Severity.LOW,
            f"resets got cheaper in the candidate ({fmt(ci.point)}x relative to a plain step)",
            "Nothing to do for a regression; a cheaper reset is an improvement.",
        )
    elif verdict.equivalent:
        decided = Verdict(
            Status.CLEARED,
            Severity.INFO,
            f"a reset step costs {measured}: the same within ×{fmt(RESET_FACTOR)}",
            "Nothing to do: resets cost the same.",
        )
    else:
        decided = inconclusive(
            f"a reset step costs {measured}, neither shown the same within ×{fmt(RESET_FACTOR)} nor "
            f"surely costlier; {verdict.settle('rollout steps')}",
            "longer rollouts, more steps with resets",
        )
    return c.section(
        c.conclude(
            decided,
            baseline=round(rb, 3),
            candidate=round(rc, 3),
            interval=ci,
            effect_label="ratio of (reset step / plain step), candidate over baseline",
            details={"table": table.to_dict("records")},
        ),
        tables=tables,
        notes="Both ratios are measured inside one process (a step that resets some environment over a step "
        "that resets none), so a busier machine on one side cancels out.",
    )


def reset_spread(episodes: pd.DataFrame, steps: pd.DataFrame) -> dict[str, Any]:
    """How one side's resets are spread over time and environments.

    Args:
        episodes: Rollout episodes (``env``, ``end``, ``length``, ``truncated``, ``first``).
        steps: Rollout steps (``ended`` per step).

    Returns:
        ``limit`` (longest truncated episode: the time limit as observed), ``later`` (non-first truncated
        episodes), ``early_fraction`` (of those, cut before the limit), ``first_end_spread`` (std of the
        first episodes' end step over the limit; 0 when every environment resets on the same step),
        ``resets_cv`` (coefficient of variation of resets per step after the first ``limit`` steps).
    """
    trunc = episodes[episodes["truncated"]]
    limit = int(trunc["length"].max()) if len(trunc) else 0
    later = trunc[~trunc["first"]]
    early = float((later["length"] < limit).mean()) if len(later) else math.nan
    firsts = episodes[episodes["first"]]
    spread = float(firsts["end"].std(ddof=0) / limit) if len(firsts) > 1 and limit else math.nan
    after = steps["ended"].to_numpy()[limit:] if limit else np.zeros(0)
    cv = float(after.std() / after.mean()) if len(after) > 1 and after.mean() > 0 else math.nan
    return {
        "limit": limit,
        "later": len(later),
        "early_fraction": early,
        "first_end_spread": spread,
        "resets_cv": cv,
        "episodes": len(episodes),
    }


RESETS_BUNCHED = {
    "id": "env/resets-bunched",
    "hypothesis": "The environments' first resets are spread out (desynchronized) in both",
}
"""A secondary finding of the reset-spread check: every environment resets on the same steps."""


def _bunched(c: Check, sb: float, sc: float) -> Finding | None:
    """SUSPECT when the baseline spreads its first resets and the candidate resets every env together."""
    if not (math.isfinite(sb) and math.isfinite(sc) and sb > 0.15 and sc < 0.05):
        return None
    return c.finding(
        Status.SUSPECT,
        Severity.MEDIUM,
        **RESETS_BUNCHED,
        baseline=round(sb, 3),
        candidate=round(sc, 3),
        effect=sc - sb,
        effect_label="spread of first-episode ends (std / limit)",
        summary="the candidate's environments all reset on the same steps (desync lost): rollouts fill with "
        "synchronized episode starts",
        remediation="Restore desync_episodes (a random length for each environment's first episode).",
        figures=["reset steps"],
    )


@check("env/reset-spread", title="How are resets spread across the vectorized environments?", **ROLLOUT)
def reset_spread_check(c: Check, pair: Pair) -> Section:
    """Resets are spread the same way over the vectorized environments, and later episodes run to the same
    time limit.

    Case 001's desync: the first episode's random length spreads resets; later episodes run to the limit.
    """
    eps = {s: pair[s].table("episodes") for s in SIDES}
    res = {s: reset_spread(eps[s], pair[s].table("steps")) for s in SIDES}
    section = {
        "tables": {"reset spread": pd.DataFrame([{"side": s, **res[s]} for s in SIDES])},
        "figures": {
            "reset steps": plots.reset_raster(
                {s: (eps[s]["end"].to_numpy(), eps[s]["env"].to_numpy()) for s in SIDES},
                {s: int(pair[s].result["num_envs"]) for s in SIDES},
            )
        },
    }
    b, cand = res["baseline"], res["candidate"]
    if not b["later"] and not cand["later"]:
        return c.section(
            c.finding(
                Status.NOTED,
                baseline=b,
                candidate=cand,
                summary="the rollout saw no truncated episode after the first ones; the time-limit behaviour "
                "could not be compared",
                remediation="Rerun at a larger profile so that rollouts outlast the first episodes.",
            ),
            **section,
        )
    eb = 0.0 if math.isnan(b["early_fraction"]) else b["early_fraction"]
    ec = 0.0 if math.isnan(cand["early_fraction"]) else cand["early_fraction"]
    diff = proportion_difference(round(ec * cand["later"]), cand["later"], round(eb * b["later"]), b["later"])
    verdict = judge(*diff, SHARE_MARGIN) if cand["later"] and b["later"] else None
    if ec - eb > SHARE_MARGIN:
        decided = Verdict(
            Status.CONFIRMED if ec - eb > 0.5 else Status.SUSPECT,
            Severity.HIGH,
            f"{pct(ec)} of the candidate's later episodes are truncated before the {cand['limit']}-step limit "
            f"(baseline {pct(eb)}): episodes are cut short for good, not only the first one (case 001's "
            "desync_episodes rewrite)",
            "Randomize only the first episode's length after reset (desync) and let every later episode run to "
            "max_steps.",
        )
    elif eb - ec > SHARE_MARGIN:
        decided = Verdict(
            Status.NOTED,
            Severity.MEDIUM,
            f"the baseline cut {pct(eb)} of later episodes early, the candidate {pct(ec)}",
            "Check which behaviour the training recipe expects.",
        )
    elif verdict is not None and verdict.equivalent:
        decided = Verdict(
            Status.CLEARED,
            Severity.INFO,
            f"later episodes run to the time limit alike ({pct(eb)} vs {pct(ec)} cut early, difference "
            f"{pct(diff[0], signed=True)} {interval(diff[1], diff[2])} within ±{pct(SHARE_MARGIN)}; limits "
            f"{b['limit']} and {cand['limit']} steps)",
            "Nothing to do.",
        )
    else:
        decided = inconclusive(
            f"{pct(eb)} vs {pct(ec)} of later episodes cut early over {b['later']} and "
            f"{cand['later']} episodes (difference {interval(diff[1], diff[2])}, not within ±{pct(SHARE_MARGIN)})",
            "longer rollouts, more later episodes",
        )
    findings = [
        c.conclude(
            decided,
            baseline=f"{pct(eb)} of {b['later']} later episodes cut before {b['limit']} steps",
            candidate=f"{pct(ec)} of {cand['later']} later episodes cut before {cand['limit']} steps",
            effect=diff[0] if math.isfinite(diff[0]) else ec - eb,
            effect_label="difference in the fraction of later episodes truncated early",
            ci=diff[1:] if math.isfinite(diff[1]) else None,
            details={"baseline": b, "candidate": cand},
            figures=["reset steps"],
        )
    ]
    bunched = _bunched(c, b["first_end_spread"], cand["first_end_spread"])
    return c.section([*findings, *([bunched] if bunched else [])], **section)


def episode_ends(side: str, episodes: pd.DataFrame, facts: dict[str, Any]) -> dict[str, Any]:
    """One side's row of the termination table: autoreset mode, how episodes ended, final observations."""
    any_eps = len(episodes) > 0
    return {
        "side": side,
        "autoreset mode": facts["autoreset_mode"],
        "episodes": len(episodes),
        "terminated": int(episodes["terminated"].sum()) if any_eps else 0,
        "truncated": int(episodes["truncated"].sum()) if any_eps else 0,
        "both": int((episodes["terminated"] & episodes["truncated"]).sum()) if any_eps else 0,
        "final obs handed over": float(episodes["final_obs"].sum() / len(episodes)) if any_eps else math.nan,
        "wrappers": " > ".join(facts["wrappers"]),
    }


def termination_problems(b: dict[str, Any], c: dict[str, Any]) -> tuple[list[str], dict[str, Any] | None]:
    """What differs in how the two sides end episodes (rows of :func:`episode_ends`), and the chi-square test
    of the terminated/truncated split (None when a side has no episodes)."""
    problems = []
    if b["autoreset mode"] != c["autoreset mode"]:
        problems.append(
            f"autoreset mode {b['autoreset mode']} vs {c['autoreset mode']} (a trainer written for one mode "
            "mishandles the other's final observations)"
        )
    fb, fc = b["final obs handed over"], c["final obs handed over"]
    if math.isfinite(fb) and math.isfinite(fc) and fb - fc > 0.05:
        problems.append(
            f"final observations handed over for {pct(fc)} of episodes vs {pct(fb)} (truncated episodes can no "
            "longer be bootstrapped)"
        )
    test = None
    if b["episodes"] and c["episodes"]:
        kb = {"terminated": b["terminated"] - b["both"], "truncated": b["truncated"], "none": 0}
        kc = {"terminated": c["terminated"] - c["both"], "truncated": c["truncated"], "none": 0}
        if sum(kb.values()) and sum(kc.values()):
            test = stats.chi_square_distributions(kc, kb)
            if test["p"] < 0.01 and test["tvd"] > 0.10:
                problems.append(
                    f"episodes end by termination {pct(c['terminated'] / c['episodes'])} vs "
                    f"{pct(b['terminated'] / b['episodes'])} of the time"
                )
    return problems, test


@check("env/termination", title="Termination, truncation and autoreset", **ROLLOUT)
def termination(c: Check, pair: Pair) -> Section:
    """Terminations, truncations, final observations and the autoreset mode are handled the same way.

    Autoreset mode, terminated/truncated counts, and whether final observations are handed over.
    """
    rows = [episode_ends(s, pair[s].table("episodes"), pair[s].json("facts")) for s in SIDES]
    table = pd.DataFrame(rows)
    b, cand = rows
    problems, test = termination_problems(b, cand)
    keys = ("autoreset mode", "terminated", "truncated", "final obs handed over")
    diff = proportion_difference(cand["terminated"], cand["episodes"], b["terminated"], b["episodes"])
    same_share = judge(*diff, SHARE_MARGIN).equivalent if b["episodes"] and cand["episodes"] else False
    if problems:
        decided = Verdict(
            Status.SUSPECT,
            Severity.MEDIUM,
            "; ".join(problems),
            "Make the trainer read final observations the way the candidate's autoreset mode hands them over, "
            "and bootstrap truncated (not terminated) episodes from them.",
        )
    elif same_share:
        decided = Verdict(
            Status.CLEARED,
            Severity.INFO,
            f"same autoreset mode ({b['autoreset mode']}); {b['terminated']}/{b['truncated']} vs "
            f"{cand['terminated']}/{cand['truncated']} terminated/truncated (share terminated differs by "
            f"{interval(diff[1], diff[2])}, within ±{pct(SHARE_MARGIN)}); final observations handed over alike",
            "Nothing to do.",
        )
    else:
        decided = inconclusive(
            f"same autoreset mode ({b['autoreset mode']}), but {b['episodes']} and {cand['episodes']} "
            f"episodes cannot show the share that terminates is the same within ±{pct(SHARE_MARGIN)} (difference "
            f"{interval(diff[1], diff[2])})",
            "longer rollouts, more episodes",
        )
    finding = c.conclude(
        decided,
        baseline={k: b[k] for k in keys},
        candidate={k: cand[k] for k in keys},
        effect=diff[0] if math.isfinite(diff[0]) else None,
        effect_label="difference in the share of episodes that terminate (candidate - baseline)",
        ci=diff[1:] if math.isfinite(diff[1]) else None,
        test={k: test[k] for k in ("name", "statistic", "p", "tvd")} if test else None,
        details={"table": table.to_dict("records")},
    )
    return c.section(finding, tables={"episode ends": table})
