"""Environment audit (notebook 05): do the two environments behave the same, reset the same, and run as fast?

Case 001 is the model: an environment rebuilt on every reset (slower, and the finished episode's statistics
lost), and ``desync_episodes`` rewritten to truncate every episode instead of spreading the first resets.
Nothing in a config shows either; only stepping both environments does. Every check here steps them with
the same seed and the same pre-generated actions or fixed seeded policies, in the subjects' own processes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.env import plots, probes
from rlaudit.env.analysis import fmt, pct, rollout_params, run_pair, sizes
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, audit_section
from rlaudit.stats import bootstrap_diff
from rlaudit.timing import CONFIRMED_RATIO, PRACTICAL_RATIO, costlier, faster, ratio_of_ratios, slower
from rlaudit.workbench import Pair, Workbench

SUBSYSTEM = "env"
SIDES = ("baseline", "candidate")
POLICIES = ("random", "wsls")
FIELDS = ("obs", "reward", "terminated", "truncated", "episode")
FIELD_WORDS = {
    "obs": "observations",
    "reward": "rewards",
    "terminated": "terminations",
    "truncated": "truncations",
    "episode": "reported episode returns",
}


# ---------------------------------------------------------------------------------------------------------
# Equivalence: same seed, same actions, first step where anything differs
# ---------------------------------------------------------------------------------------------------------


def self_consistency(digests: dict[str, Any]) -> tuple[int | None, list[str]]:
    """First step where a subject's two runs with the same seed differ, and in which fields (None: never)."""
    first, second = digests["first"], digests["second"]
    for t in range(len(first["obs"])):
        fields = []
        for name in FIELDS:
            seq_a, seq_b = first[name], second[name]
            idx = t if name == "obs" else t - 1
            if idx < 0 or idx >= len(seq_a):
                continue
            if seq_a[idx] != seq_b[idx]:
                fields.append(name)
        if fields:
            return t, fields
    return None, []


def structural_differences(facts_a: dict[str, Any], facts_b: dict[str, Any]) -> list[str]:
    """Differences that make the two environments incomparable from step 0 (shapes, spaces, num_envs)."""
    out = []
    if facts_a["num_envs"] != facts_b["num_envs"]:
        out.append(f"num_envs {facts_a['num_envs']} vs {facts_b['num_envs']}")
    oa, ob = facts_a["observation_space"], facts_b["observation_space"]
    if (oa.get("shape"), oa.get("kind")) != (ob.get("shape"), ob.get("kind")):
        out.append(
            f"observation shapes {oa.get('shape')} vs {ob.get('shape')} ({oa.get('kind')} vs {ob.get('kind')})"
        )
    aa, ab = facts_a["action_space"], facts_b["action_space"]
    if aa.get("repr") != ab.get("repr"):
        out.append(f"action spaces {aa.get('repr')} vs {ab.get('repr')} (so the action sequences differ)")
    return out


def _differs(a: np.ndarray, b: np.ndarray, atol: float = 1e-6) -> np.ndarray:
    """Per (step, env), True where the values differ (NaN equals NaN; numbers within ``atol``)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    both_nan = np.isnan(a) & np.isnan(b)
    close = np.isclose(a, b, rtol=1e-6, atol=atol) | both_nan
    return ~close


def divergence_table(
    arrays_a: dict[str, np.ndarray],
    arrays_b: dict[str, np.ndarray],
    digests_a: dict[str, Any],
    digests_b: dict[str, Any],
    stored: int,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Compare two equal-shaped runs field by field.

    Args:
        arrays_a: The baseline's ``run.npz`` arrays: ``obs`` (S+1, N, D), ``reward``/``terminated``/
            ``truncated``/``episode_r`` (T, N).
        arrays_b: The candidate's, same shapes.
        digests_a: The baseline's first-run digests (per step and field; used beyond the stored obs).
        digests_b: The candidate's.
        stored: Steps of observations kept in the arrays (``S``).

    Returns:
        ``(table, fractions)``: one row per field with ``first_step`` (0 = reset; NaN when never),
        ``steps_differing``, ``cells_differing`` (step x env), ``max_abs_diff``; and per field the
        ``(T+1,)`` fraction of envs differing at each step (NaN where only a digest was compared).
    """
    steps = arrays_a["reward"].shape[0]
    n = arrays_a["reward"].shape[1]
    rows = []
    fractions: dict[str, np.ndarray] = {}
    for name in FIELDS:
        frac = np.zeros(steps + 1)
        max_abs = 0.0
        if name == "obs":
            a, b = arrays_a["obs"][: stored + 1], arrays_b["obs"][: stored + 1]
            cell = _differs(a, b).any(axis=2)  # (S+1, N)
            frac[: stored + 1] = cell.mean(axis=1)
            if cell.any():
                max_abs = float(np.nanmax(np.abs(a.astype(float) - b.astype(float))))
            beyond = [t for t in range(stored + 1, steps + 1) if digests_a["obs"][t] != digests_b["obs"][t]]
            frac[stored + 1 :] = np.nan
            for t in beyond:
                frac[t] = 1.0  # a digest says "something differs", not how many envs
            cells = int(cell.sum()) + len(beyond) * n
        else:
            key = "episode_r" if name == "episode" else name
            a, b = arrays_a[key], arrays_b[key]
            cell = _differs(a, b)
            frac[1:] = cell.mean(axis=1)
            cells = int(cell.sum())
            if cell.any():
                with np.errstate(invalid="ignore"):
                    diff = np.abs(
                        np.nan_to_num(a.astype(float), nan=0.0) - np.nan_to_num(b.astype(float), nan=0.0)
                    )
                max_abs = float(diff[cell].max())
        differing = np.flatnonzero(np.nan_to_num(frac, nan=0.0) > 0)
        rows.append(
            {
                "field": name,
                "first_step": int(differing[0]) if len(differing) else math.nan,
                "steps_differing": len(differing),
                "cells_differing": cells,
                "max_abs_diff": max_abs,
            }
        )
        fractions[FIELD_WORDS[name]] = frac
    return pd.DataFrame(rows), fractions


@audit_section(
    "env/equivalence",
    SUBSYSTEM,
    "With the same seed and the same actions, both environments produce the same observations, rewards, "
    "terminations and truncations",
)
def equivalence(wb: Workbench, *, seed: int = 0) -> Section:
    """Step both environments K steps with one pre-generated action sequence; report the first difference."""
    hypothesis = (
        "With the same seed and the same actions, both environments produce the same observations, rewards, "
        "terminations and truncations"
    )
    fid = "env/equivalence"
    steps = sizes(wb.profile).equivalence_steps
    pair = run_pair(wb, probes.equivalence, "env equivalence", seed=seed, steps=steps)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    facts = {s: pair[s].json("facts") for s in SIDES}
    digests = {s: pair[s].json("digests") for s in SIDES}
    notes: list[str] = [
        f"Both environments were built with seed {seed}, reset with seed {seed}, and stepped {steps} times "
        f"with the same actions drawn from `np.random.default_rng({seed})`."
    ]
    findings: list[Finding] = []
    tables: dict[str, Any] = {}
    figures: dict[str, Any] = {}

    # Each side must reproduce itself, or a cross-version difference means nothing.
    for side in SIDES:
        step, fields = self_consistency(digests[side])
        if step is not None:
            findings.append(
                Finding(
                    id=f"env/not-reproducible-{side}",
                    subsystem=SUBSYSTEM,
                    hypothesis=f"The {side} environment is reproducible under a fixed seed",
                    status=Status.NOTED,
                    severity=Severity.MEDIUM,
                    evidence=Evidence(
                        baseline=None if side == "candidate" else f"differs from itself at step {step}",
                        candidate=None if side == "baseline" else f"differs from itself at step {step}",
                        summary=f"the {side} environment built twice with seed {seed} differs from itself at "
                        f"step {step} ({', '.join(FIELD_WORDS[x] for x in fields)}): it is not seeded fully",
                        details={"step": step, "fields": fields},
                    ),
                    remediation="Make `make_env(config, seed)` and `reset(seed=...)` the only sources of "
                    "randomness in the environment (see 13_seeding for global-RNG dependence).",
                )
            )

    structural = structural_differences(facts["baseline"], facts["candidate"])
    if structural:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline={
                        k: facts["baseline"][k] for k in ("num_envs", "observation_space", "action_space")
                    },
                    candidate={
                        k: facts["candidate"][k] for k in ("num_envs", "observation_space", "action_space")
                    },
                    effect=0.0,
                    effect_label="first differing step",
                    summary="the environments differ at step 0: " + "; ".join(structural),
                    details={"structural": structural},
                ),
                remediation="Build the candidate's environment with the baseline's shape settings (or confirm "
                "the change is intended and retrain the policy for it).",
                figures=[],
            )
        )
        return Section(
            title="Same seed, same actions: where do the environments diverge?",
            findings=findings,
            notes=notes,
        )

    arrays = {s: pair[s].npz("run") for s in SIDES}
    stored = int(min(digests["baseline"]["stored"], digests["candidate"]["stored"]))
    table, fractions = divergence_table(
        arrays["baseline"],
        arrays["candidate"],
        digests["baseline"]["first"],
        digests["candidate"]["first"],
        stored,
    )
    tables["first difference per field"] = table
    n = int(facts["baseline"]["num_envs"])
    differing = table.dropna(subset=["first_step"])
    dynamics = differing[differing["field"] != "episode"]
    if differing.empty:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                severity=Severity.INFO,
                evidence=Evidence(
                    baseline=f"{steps} steps x {n} envs",
                    candidate=f"{steps} steps x {n} envs",
                    effect=0.0,
                    effect_label="cells differing",
                    summary=f"identical for {steps} steps x {n} envs: observations, rewards, terminations, "
                    "truncations and reported episode returns",
                ),
                remediation="Nothing to do: the environment's dynamics are the same.",
            )
        )
    else:
        first = int(differing["first_step"].min())
        at_first = differing[differing["first_step"] == first]["field"].tolist()
        words = ", ".join(FIELD_WORDS[x] for x in at_first)
        only_stats = dynamics.empty
        envs_text = ""
        for name in at_first:
            key = {"episode": "episode_r"}.get(name, name)
            if name == "obs" or first == 0:
                continue
            cell = _differs(arrays["baseline"][key][first - 1], arrays["candidate"][key][first - 1])
            ids = np.flatnonzero(cell)[:6].tolist()
            if ids:
                a_vals = arrays["baseline"][key][first - 1][ids].tolist()
                b_vals = arrays["candidate"][key][first - 1][ids].tolist()
                envs_text = f" (env {ids[0]}: {fmt(a_vals[0])} vs {fmt(b_vals[0])})"
                break
        if only_stats:
            summary = (
                f"same dynamics for {steps} steps, but the reported episode returns differ from step {first}"
                f"{envs_text}: the environment reports different episode statistics for the same episodes"
            )
            severity = Severity.HIGH
            remediation = (
                "Read the finished episode's statistics before anything resets them (case 001: an environment "
                "recreated on reset lost the episode's rewards); see the episode-statistics check below."
            )
        else:
            summary = f"the environments diverge at step {first} ({words}){envs_text}"
            if set(at_first) == {"reward"}:
                summary += " while observations and episode ends still agree: the reward function changed (see 11_rewards)"
            first_dyn = int(dynamics["first_step"].min())
            if first_dyn > first:
                later = dynamics[dynamics["first_step"] == first_dyn]["field"].tolist()
                summary += (
                    f"; the dynamics follow at step {first_dyn} ({', '.join(FIELD_WORDS[x] for x in later)})"
                )
            severity = Severity.HIGH
            remediation = (
                "Diff the environment code between versions starting from what produces the "
                f"{FIELD_WORDS[at_first[0]]} (episode ends, resets, reward function); the checks below narrow "
                "it down."
            )
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=severity,
                evidence=Evidence(
                    baseline="reference trajectory",
                    candidate=f"first difference at step {first}: {words}",
                    effect=float(first),
                    effect_label="first differing step",
                    summary=summary,
                    details={"table": table.to_dict("records"), "steps": steps, "num_envs": n},
                ),
                remediation=remediation,
                figures=["divergence"],
            )
        )
        figures["divergence"] = plots.divergence(fractions)
    return Section(
        title="Same seed, same actions: where do the environments diverge?",
        findings=findings,
        tables=tables,
        figures=figures,
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------------------
# Resets: cost, statistics, spread, termination handling
# ---------------------------------------------------------------------------------------------------------


def _rollouts(wb: Workbench, seed: int, policy: str = "random") -> Pair:
    return run_pair(wb, probes.rollout, f"env rollout ({policy})", **rollout_params(wb.profile, seed, policy))


def reset_step_times(steps: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Step durations (s) of steps in which some episode ended, and of steps in which none did."""
    ended = steps["ended"].to_numpy() > 0
    secs = steps["seconds"].to_numpy()
    return secs[ended], secs[~ended]


@audit_section(
    "env/reset-cost",
    SUBSYSTEM,
    "A step that resets episodes costs the same, relative to a plain step, in both environments",
)
def reset_cost(wb: Workbench, *, seed: int = 0) -> Section:
    """Within each process: median time of steps that reset some environment over steps that reset none."""
    hypothesis = "A step that resets episodes costs the same, relative to a plain step, in both environments"
    fid = "env/reset-cost"
    pair = _rollouts(wb, seed)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    rows = []
    groups: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for side in SIDES:
        steps = pair[side].table("steps")
        facts = pair[side].json("facts")
        with_end, without = reset_step_times(steps)
        groups[side] = (with_end, without)
        plain = float(np.median(without)) if len(without) else math.nan
        rows.append(
            {
                "side": side,
                "steps with an episode end": len(with_end),
                "steps without": len(without),
                "median step with end (ms)": 1e3 * float(np.median(with_end)) if len(with_end) else math.nan,
                "median plain step (ms)": 1e3 * plain,
                "reset-step / plain-step": float(np.median(with_end)) / plain
                if len(with_end) and plain
                else math.nan,
                "explicit reset() (ms)": 1e3 * float(np.median(facts["reset_seconds"])),
                "reset() / plain step": float(np.median(facts["reset_seconds"])) / plain
                if plain
                else math.nan,
            }
        )
    table = pd.DataFrame(rows)
    enough = all(len(g[0]) >= 5 and len(g[1]) >= 5 for g in groups.values())
    if not enough:
        # Every step resets something (or none does): fall back on explicit reset() against all steps.
        finding = Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.NOTED,
            severity=Severity.INFO,
            evidence=Evidence(
                baseline=rows[0]["reset() / plain step"],
                candidate=rows[1]["reset() / plain step"],
                summary="too few steps with and without an episode end to compare autoreset cost; explicit "
                "reset() cost is in the table",
            ),
            remediation="Rerun at a larger profile (longer rollouts) to compare autoreset cost.",
        )
        return Section(title="What does a reset cost?", findings=[finding], tables={"reset cost": table})
    ci = ratio_of_ratios(*groups["candidate"], *groups["baseline"], seed=seed)
    rb, rc = rows[0]["reset-step / plain-step"], rows[1]["reset-step / plain-step"]
    evidence = Evidence(
        baseline=round(rb, 3),
        candidate=round(rc, 3),
        effect=ci.point,
        effect_label="ratio of (reset step / plain step), candidate over baseline",
        ci=(ci.low, ci.high),
        ci_level=0.95,
        details={"table": table.to_dict("records")},
    )
    if costlier(ci, 1.5):
        status = Status.CONFIRMED if ci.low > 3.0 else Status.SUSPECT
        evidence.summary = (
            f"a step that resets episodes costs {fmt(rc)}x a plain step in the candidate vs {fmt(rb)}x in the "
            f"baseline ({fmt(ci.point)}x [{fmt(ci.low)}, {fmt(ci.high)}]): resets got {fmt(ci.point)} times "
            "more expensive"
        )
        remediation = (
            "Profile the environment's reset path: rebuild only what a reset changes (case 001 recreated the "
            "whole environment, every buffer and lookup table, on every reset)."
        )
        severity = Severity.HIGH
    elif ci.high < 1 / 1.5:
        status, severity = Status.NOTED, Severity.LOW
        evidence.summary = f"resets got cheaper in the candidate ({fmt(ci.point)}x relative to a plain step)"
        remediation = "Nothing to do for a regression; a cheaper reset is an improvement."
    else:
        status, severity = Status.CLEARED, Severity.INFO
        evidence.summary = (
            f"a reset step costs {fmt(rb)}x a plain step in the baseline and {fmt(rc)}x in the candidate "
            f"(ratio {fmt(ci.point)} [{fmt(ci.low)}, {fmt(ci.high)}])"
        )
        remediation = "Nothing to do: resets cost the same."
    finding = Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=evidence,
        remediation=remediation,
    )
    return Section(
        title="What does a reset cost?",
        findings=[finding],
        tables={"reset cost": table},
        notes=[
            "Both ratios are measured inside one process (a step that resets some environment over a step "
            "that resets none), so a busier machine on one side cancels out."
        ],
    )


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


@audit_section(
    "env/episode-stats",
    SUBSYSTEM,
    "The per-episode statistics the environment reports match the rewards it returned",
)
def episode_stats(wb: Workbench, *, seed: int = 0) -> Section:
    """Reported episode return/length (``info["episode"]``) against the sum of rewards the env returned."""
    hypothesis = "The per-episode statistics the environment reports match the rewards it returned"
    fid = "env/episode-stats"
    pair = _rollouts(wb, seed)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    res = {s: stat_mismatch(pair[s].table("episodes")) for s in SIDES}
    table = pd.DataFrame([{"side": s, **{k: v for k, v in res[s].items() if k != "example"}} for s in SIDES])
    b, c = res["baseline"], res["candidate"]
    mb = b["return_mismatch"] if b["reported"] else math.nan
    mc = c["return_mismatch"] if c["reported"] else math.nan
    evidence = Evidence(
        baseline=f"{pct(mb)} of {b['reported']} reported episodes disagree"
        if b["reported"]
        else "not reported",
        candidate=f"{pct(mc)} of {c['reported']} reported episodes disagree"
        if c["reported"]
        else "not reported",
        effect=(mc - mb) if b["reported"] and c["reported"] else None,
        effect_label="difference in the fraction of episodes whose reported return is wrong",
        details={"baseline": res["baseline"], "candidate": res["candidate"]},
    )
    if c["reported"] and (not b["reported"] or mc - (mb if b["reported"] else 0.0) > 0.05) and mc > 0.05:
        ex = c["example"] or {}
        status, severity = Status.CONFIRMED, Severity.HIGH
        evidence.summary = (
            f"the candidate reports a wrong return for {pct(mc)} of episodes (baseline {pct(mb)}): e.g. env "
            f"{ex.get('env')} at step {ex.get('end_step')} reported {fmt(ex.get('reported_return'))} but was "
            f"paid {fmt(ex.get('return_paid'))}: episode statistics are lost at reset"
        )
        remediation = (
            "Read (and report) the finished episode's statistics before the reset recreates or zeroes the "
            "accumulators (case 001's environment recreation lost the episode rewards); the trainer's "
            "episodic return and heart.get curves are wrong until then."
        )
    elif b["reported"] and not c["reported"]:
        status, severity = Status.SUSPECT, Severity.MEDIUM
        evidence.summary = "the candidate stopped reporting per-episode statistics (info['episode']) that the baseline reports"
        remediation = "Restore the episode statistics in info (RecordEpisodeStatistics or the env's own)."
    elif not b["reported"] and not c["reported"]:
        status, severity = Status.NOTED, Severity.INFO
        evidence.summary = (
            "neither environment reports per-episode statistics in info; trainers must sum rewards themselves"
        )
        remediation = (
            "Wrap the environment in gymnasium's RecordEpisodeStatistics to make episode returns checkable."
        )
    elif mb > 0.05 and mc > 0.05:
        status, severity = Status.NOTED, Severity.MEDIUM
        evidence.summary = (
            f"both environments report returns that disagree with the rewards paid ({pct(mb)}, {pct(mc)})"
        )
        remediation = "Check the reported statistic's definition (shaped vs raw reward) in both versions."
    else:
        status, severity = Status.CLEARED, Severity.INFO
        evidence.summary = (
            f"reported episode returns match the rewards paid ({b['reported']} and {c['reported']} episodes, "
            f"{pct(mb)} and {pct(mc)} disagree)"
        )
        remediation = "Nothing to do: episode statistics survive resets."
    finding = Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=evidence,
        remediation=remediation,
    )
    return Section(
        title="Do episode statistics survive resets?", findings=[finding], tables={"reported vs paid": table}
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


@audit_section(
    "env/reset-spread",
    SUBSYSTEM,
    "Resets are spread the same way over the vectorized environments, "
    "and later episodes run to the same time limit",
)
def reset_spread_check(wb: Workbench, *, seed: int = 0) -> Section:
    """Case 001's desync: the first episode's random length spreads resets; later episodes run to the limit."""
    hypothesis = (
        "Resets are spread the same way over the vectorized environments, and later episodes run to "
        "the same time limit"
    )
    fid = "env/reset-spread"
    pair = _rollouts(wb, seed)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    eps = {s: pair[s].table("episodes") for s in SIDES}
    res = {s: reset_spread(eps[s], pair[s].table("steps")) for s in SIDES}
    table = pd.DataFrame([{"side": s, **res[s]} for s in SIDES])
    figures = {
        "reset steps": plots.reset_raster(
            {s: (eps[s]["end"].to_numpy(), eps[s]["env"].to_numpy()) for s in SIDES},
            {s: int(pair[s].result["num_envs"]) for s in SIDES},
        )
    }
    b, c = res["baseline"], res["candidate"]
    findings = []
    if not b["later"] and not c["later"]:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                severity=Severity.INFO,
                evidence=Evidence(
                    baseline=b,
                    candidate=c,
                    summary="the rollout saw no truncated episode after "
                    "the first ones; the time-limit behaviour could not be compared",
                ),
                remediation="Rerun at a larger profile so that rollouts outlast the first episodes.",
            )
        )
    else:
        eb = 0.0 if math.isnan(b["early_fraction"]) else b["early_fraction"]
        ec = 0.0 if math.isnan(c["early_fraction"]) else c["early_fraction"]
        evidence = Evidence(
            baseline=f"{pct(eb)} of {b['later']} later episodes cut before {b['limit']} steps",
            candidate=f"{pct(ec)} of {c['later']} later episodes cut before {c['limit']} steps",
            effect=ec - eb,
            effect_label="difference in the fraction of later episodes truncated early",
            details={"baseline": b, "candidate": c},
        )
        if ec - eb > 0.10:
            status, severity = Status.CONFIRMED if ec - eb > 0.5 else Status.SUSPECT, Severity.HIGH
            evidence.summary = (
                f"{pct(ec)} of the candidate's later episodes are truncated before the {c['limit']}-step limit "
                f"(baseline {pct(eb)}): episodes are cut short for good, not only the first one (case 001's "
                "desync_episodes rewrite)"
            )
            remediation = (
                "Randomize only the first episode's length after reset (desync) and let every later "
                "episode run to max_steps."
            )
        elif eb - ec > 0.10:
            status, severity = Status.NOTED, Severity.MEDIUM
            evidence.summary = f"the baseline cut {pct(eb)} of later episodes early, the candidate {pct(ec)}"
            remediation = "Check which behaviour the training recipe expects."
        else:
            status, severity = Status.CLEARED, Severity.INFO
            evidence.summary = (
                f"later episodes run to the time limit alike ({pct(eb)} vs {pct(ec)} cut early; limits "
                f"{b['limit']} and {c['limit']} steps)"
            )
            remediation = "Nothing to do."
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=status,
                severity=severity,
                evidence=evidence,
                remediation=remediation,
                figures=["reset steps"],
            )
        )
        # Resets bunched on the same steps (desync lost): compare the spread of first-episode ends.
        sb, sc = b["first_end_spread"], c["first_end_spread"]
        if math.isfinite(sb) and math.isfinite(sc) and sb > 0.15 and sc < 0.05:
            findings.append(
                Finding(
                    id="env/resets-bunched",
                    subsystem=SUBSYSTEM,
                    hypothesis="The environments' first resets are spread out (desynchronized) in both",
                    status=Status.SUSPECT,
                    severity=Severity.MEDIUM,
                    evidence=Evidence(
                        baseline=round(sb, 3),
                        candidate=round(sc, 3),
                        effect=sc - sb,
                        effect_label="spread of first-episode ends (std / limit)",
                        summary="the candidate's environments all reset on the same steps "
                        "(desync lost): rollouts fill with synchronized episode starts",
                    ),
                    remediation="Restore desync_episodes (a random length for each environment's first episode).",
                    figures=["reset steps"],
                )
            )
    return Section(
        title="How are resets spread across the vectorized environments?",
        findings=findings,
        tables={"reset spread": table},
        figures=figures,
    )


@audit_section(
    "env/termination",
    SUBSYSTEM,
    "Terminations, truncations, final observations and the autoreset mode are handled the same way",
)
def termination(wb: Workbench, *, seed: int = 0) -> Section:
    """Autoreset mode, terminated/truncated counts, and whether final observations are handed over."""
    hypothesis = (
        "Terminations, truncations, final observations and the autoreset mode are handled the same way"
    )
    fid = "env/termination"
    pair = _rollouts(wb, seed)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    rows = []
    for side in SIDES:
        eps = pair[side].table("episodes")
        facts = pair[side].json("facts")
        n = max(1, len(eps))
        rows.append(
            {
                "side": side,
                "autoreset mode": facts["autoreset_mode"],
                "episodes": len(eps),
                "terminated": int(eps["terminated"].sum()) if len(eps) else 0,
                "truncated": int(eps["truncated"].sum()) if len(eps) else 0,
                "both": int((eps["terminated"] & eps["truncated"]).sum()) if len(eps) else 0,
                "final obs handed over": float(eps["final_obs"].sum() / n) if len(eps) else math.nan,
                "wrappers": " > ".join(facts["wrappers"]),
            }
        )
    table = pd.DataFrame(rows)
    b, c = rows
    problems = []
    if b["autoreset mode"] != c["autoreset mode"]:
        problems.append(
            f"autoreset mode {b['autoreset mode']} vs {c['autoreset mode']} (a trainer written for "
            "one mode mishandles the other's final observations)"
        )
    fb, fc = b["final obs handed over"], c["final obs handed over"]
    if math.isfinite(fb) and math.isfinite(fc) and fb - fc > 0.05:
        problems.append(
            f"final observations handed over for {pct(fc)} of episodes vs {pct(fb)} (truncated "
            "episodes can no longer be bootstrapped)"
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
    evidence = Evidence(
        baseline={k: b[k] for k in ("autoreset mode", "terminated", "truncated", "final obs handed over")},
        candidate={k: c[k] for k in ("autoreset mode", "terminated", "truncated", "final obs handed over")},
        test={k: test[k] for k in ("name", "statistic", "p", "tvd")} if test else None,
        details={"table": table.to_dict("records")},
    )
    if problems:
        status, severity = Status.SUSPECT, Severity.MEDIUM
        evidence.summary = "; ".join(problems)
        remediation = (
            "Make the trainer read final observations the way the candidate's autoreset mode hands them "
            "over, and bootstrap truncated (not terminated) episodes from them."
        )
    else:
        status, severity = Status.CLEARED, Severity.INFO
        evidence.summary = (
            f"same autoreset mode ({b['autoreset mode']}); {b['terminated']}/{b['truncated']} vs "
            f"{c['terminated']}/{c['truncated']} terminated/truncated; final observations handed over alike"
        )
        remediation = "Nothing to do."
    finding = Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=evidence,
        remediation=remediation,
    )
    return Section(
        title="Termination, truncation and autoreset", findings=[finding], tables={"episode ends": table}
    )


# ---------------------------------------------------------------------------------------------------------
# Episode distributions under fixed policies
# ---------------------------------------------------------------------------------------------------------


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


@audit_section(
    "env/episode-distributions",
    SUBSYSTEM,
    "Under fixed seeded policies, episode lengths and returns have the same distributions",
)
def distributions(wb: Workbench, *, seed: int = 0) -> Section:
    """Random and win-stay-lose-shift policies: lengths and returns compared by test and bootstrap CI."""
    hypothesis = "Under fixed seeded policies, episode lengths and returns have the same distributions"
    fid = "env/episode-distributions"
    pairs = {p: _rollouts(wb, seed, p) for p in POLICIES}
    for pair in pairs.values():
        if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
            return Section.of(f)
    rows = []
    findings = []
    samples: dict[str, dict[str, Any]] = {}
    flagged = []
    for p, pair in pairs.items():
        eps = {s: pair[s].table("episodes") for s in SIDES}
        for quantity, col in (("length", "length"), ("return", "return")):
            cmp = compare_samples(
                eps["candidate"][col].to_numpy(), eps["baseline"][col].to_numpy(), seed=seed
            )
            rows.append(
                {
                    "policy": p,
                    "quantity": quantity,
                    **{k: v for k, v in cmp.items() if k != "test"},
                    "p": (cmp["test"] or {}).get("p"),
                }
            )
            samples[f"{quantity} ({p})"] = {s: eps[s][col].to_numpy() for s in SIDES}
            if cmp["differs"]:
                flagged.append((p, quantity, cmp))
    table = pd.DataFrame(rows)
    figure = plots.histograms(samples, title="episodes under fixed seeded policies")
    if flagged:
        p, quantity, cmp = max(flagged, key=lambda x: abs(x[2]["diff"]) / max(abs(x[2]["mean_b"]), 1e-9))
        parts = [f"{q} under {pol}: {fmt(c['mean_b'])} -> {fmt(c['mean_a'])}" for pol, q, c in flagged]
        knock = (
            " (a return change follows from the reward function: see 11_rewards)"
            if all(q == "return" for _, q, _ in flagged)
            else ""
        )
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline=round(cmp["mean_b"], 4),
                    candidate=round(cmp["mean_a"], 4),
                    effect=cmp["diff"],
                    effect_label=f"difference in mean episode {quantity} ({p} policy)",
                    ci=cmp["ci"],
                    ci_level=0.95,
                    test=cmp["test"],
                    summary="episodes differ under the same fixed policies: " + "; ".join(parts) + knock,
                    details={"table": table.to_dict("records")},
                ),
                remediation="Find what changed the episode ends or the rewards (the reset and equivalence checks "
                "above point at where); a policy trained on one distribution sees another.",
                figures=["episode histograms"],
            )
        )
    else:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                severity=Severity.INFO,
                evidence=Evidence(
                    baseline="; ".join(
                        f"{r['quantity']} ({r['policy']}) {fmt(r.get('mean_b'))}" for r in rows
                    ),
                    candidate="; ".join(
                        f"{r['quantity']} ({r['policy']}) {fmt(r.get('mean_a'))}" for r in rows
                    ),
                    summary="episode lengths and returns match under random and win-stay-lose-shift policies "
                    f"({int(table['n_b'].sum())} and {int(table['n_a'].sum())} episodes)",
                    details={"table": table.to_dict("records")},
                ),
                remediation="Nothing to do.",
                figures=["episode histograms"],
            )
        )
    return Section(
        title="Episodes under fixed seeded policies",
        findings=findings,
        tables={"episode statistics": table},
        figures={"episode histograms": figure},
    )


# ---------------------------------------------------------------------------------------------------------
# Throughput
# ---------------------------------------------------------------------------------------------------------


def throughput_table(blocks: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per timed block and side: ``sps`` (measured env steps/s) and ``nsps`` (per calibration unit)."""
    frames = []
    for side, df in blocks.items():
        df = df.copy()
        df["side"] = side
        df["sps"] = df["env_steps"] / df["seconds"]
        df["nsps"] = df["env_steps"] / (df["seconds"] / df["calib_seconds"])
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def throughput_ratios(table: pd.DataFrame, *, seed: int) -> pd.DataFrame:
    """Per requested size: median sps per side and the candidate/baseline ratio of normalized sps with CI."""
    rows = []
    for requested, part in table.groupby("requested", sort=True):
        b = part[part["side"] == "baseline"]
        c = part[part["side"] == "candidate"]
        if b.empty or c.empty:
            continue
        ci = stats.bootstrap_ratio_ci(c["nsps"], b["nsps"], stat=np.median, seed=seed)
        rows.append(
            {
                "requested": int(requested),
                "num_envs (baseline)": int(b["num_envs"].iloc[0]),
                "num_envs (candidate)": int(c["num_envs"].iloc[0]),
                "baseline sps": float(b["sps"].median()),
                "candidate sps": float(c["sps"].median()),
                "ratio": ci.point,
                "ci_low": ci.low,
                "ci_high": ci.high,
            }
        )
    return pd.DataFrame(rows)


@audit_section("env/throughput", SUBSYSTEM, "The environments step equally fast across num_envs")
def throughput(wb: Workbench, *, seed: int = 0) -> Section:
    """Steps per second across ``num_envs``, repeated and normalized by a calibration workload; the ratio."""
    hypothesis = "The environments step equally fast across num_envs"
    fid = "env/throughput"
    sz = sizes(wb.profile)
    pair = run_pair(
        wb,
        probes.throughput,
        "env throughput",
        seed=seed,
        num_envs=list(sz.throughput_envs),
        repeats=sz.timing_repeats,
        block_seconds=sz.block_seconds,
    )
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    table = throughput_table({s: pair[s].table("blocks") for s in SIDES})
    ratios = throughput_ratios(table, seed=seed)
    own = ratios[ratios["requested"] == 0]
    main = own.iloc[0] if len(own) else ratios.iloc[-1]
    ci = stats.Interval(float(main["ratio"]), float(main["ci_low"]), float(main["ci_high"]))
    label = (
        "the subjects' own num_envs" if int(main["requested"]) == 0 else f"num_envs={int(main['requested'])}"
    )
    nb, nc = int(main["num_envs (baseline)"]), int(main["num_envs (candidate)"])
    evidence = Evidence(
        baseline=f"{fmt(main['baseline sps'])} env steps/s ({nb} envs)",
        candidate=f"{fmt(main['candidate sps'])} env steps/s ({nc} envs)",
        effect=ci.point,
        effect_label=f"throughput ratio candidate/baseline at {label} (calibration-normalized)",
        ci=(ci.low, ci.high),
        ci_level=0.95,
        details={"ratios": ratios.to_dict("records"), "practical_ratio": PRACTICAL_RATIO},
    )
    others = ratios[ratios["requested"] != int(main["requested"])]
    slow_elsewhere = [
        int(r.requested) for r in others.itertuples() if r.ci_high < 1 and r.ratio < 1 / PRACTICAL_RATIO
    ]
    if slower(ci):
        status = Status.CONFIRMED if ci.high < CONFIRMED_RATIO else Status.SUSPECT
        severity = Severity.HIGH
        evidence.summary = (
            f"the candidate's environment steps at {fmt(ci.point)}x the baseline's speed at {label} "
            f"[{fmt(ci.low)}, {fmt(ci.high)}] ({fmt(main['candidate sps'])} vs {fmt(main['baseline sps'])} env "
            "steps/s as measured); a curriculum or wrapper inside the env counts too"
        )
        remediation = (
            "Profile env.step in the candidate (py-spy or cProfile over a rollout) and compare with the "
            "reset-cost and curriculum-overhead checks to find which part got slower."
        )
    elif faster(ci):
        status, severity = Status.NOTED, Severity.LOW
        evidence.summary = f"the candidate's environment is faster ({fmt(ci.point)}x at {label})"
        remediation = "Nothing to do for a regression."
    else:
        status, severity = Status.CLEARED, Severity.INFO
        evidence.summary = (
            f"equal speed at {label}: ratio {fmt(ci.point)} [{fmt(ci.low)}, {fmt(ci.high)}] "
            f"({fmt(main['baseline sps'])} vs {fmt(main['candidate sps'])} env steps/s)"
        )
        if slow_elsewhere:
            evidence.summary += f"; slower at num_envs {slow_elsewhere}"
        remediation = "Nothing to do."
    finding = Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=evidence,
        remediation=remediation,
        figures=["throughput"],
    )
    return Section(
        title="How fast do the environments step?",
        findings=[finding],
        tables={"throughput by num_envs": ratios},
        figures={"throughput": plots.throughput_curves(table)},
        notes=[
            f"{sz.timing_repeats} interleaved blocks of ~{sz.block_seconds} s per size and side, timed with each "
            "worker's CPU clock (other processes on a busy machine do not stretch it); each block is followed by "
            "a fixed calibration workload and the ratio uses steps per calibration unit. Steps/s are CPU-time "
            "rates as measured. num_envs 0 = the subject's own configuration."
        ],
    )


# ---------------------------------------------------------------------------------------------------------
# Gymnasium's checker
# ---------------------------------------------------------------------------------------------------------


@audit_section("env/check-env", SUBSYSTEM, "Both environments pass Gymnasium's check_env")
def check_env(wb: Workbench, *, seed: int = 0) -> Section:
    """``gymnasium.utils.env_checker.check_env`` side by side (single environments only)."""
    hypothesis = "Both environments pass Gymnasium's check_env"
    fid = "env/check-env"
    pair = wb.run(probes.check_env, seed=seed)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    res = {s: pair[s].result for s in SIDES}
    if not res["baseline"].get("applicable") and not res["candidate"].get("applicable"):
        finding = Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.SKIPPED,
            severity=Severity.INFO,
            evidence=Evidence(
                summary="both environments are vectorized; check_env applies to single environments "
                "(the equivalence and reset checks above cover the vector API)"
            ),
            remediation="Nothing to do; expose a single-environment factory to run Gymnasium's checker.",
        )
        return Section(title="Gymnasium's check_env", findings=[finding])
    rows = []
    for s in SIDES:
        r = res[s]
        rows.append(
            {
                "side": s,
                "applicable": r.get("applicable"),
                "passed": r.get("passed"),
                "error": r.get("error"),
                "warnings": len(r.get("warnings") or []),
            }
        )
    table = pd.DataFrame(rows)
    wb_, wc = set(res["baseline"].get("warnings") or []), set(res["candidate"].get("warnings") or [])
    new = sorted(wc - wb_)
    failed = res["candidate"].get("applicable") and not res["candidate"].get("passed")
    base_ok = res["baseline"].get("passed", False)
    if failed and base_ok:
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = f"the candidate fails check_env: {res['candidate'].get('error')}"
    elif new:
        status, severity = Status.NOTED, Severity.LOW
        summary = f"the candidate raises {len(new)} new check_env warning(s): " + "; ".join(new[:3])
    else:
        status, severity = Status.CLEARED, Severity.INFO
        summary = "check_env gives the same result for both environments"
    finding = Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=Evidence(
            baseline=rows[0],
            candidate=rows[1],
            summary=summary,
            details={"warnings": {s: res[s].get("warnings") for s in SIDES}},
        ),
        remediation="Fix what check_env reports in the candidate (spaces, seeding, return types)."
        if status.is_flag
        else "Nothing to do.",
    )
    return Section(title="Gymnasium's check_env", findings=[finding], tables={"check_env": table})


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every environment check, in notebook order."""
    return [
        equivalence(wb, seed=seed),
        reset_cost(wb, seed=seed),
        episode_stats(wb, seed=seed),
        reset_spread_check(wb, seed=seed),
        termination(wb, seed=seed),
        distributions(wb, seed=seed),
        throughput(wb, seed=seed),
        check_env(wb, seed=seed),
    ]
