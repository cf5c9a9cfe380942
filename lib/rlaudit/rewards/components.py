"""What each reward component pays at runtime, and whether one drowns another (rewards/components,
rewards/magnitudes).

Under the same fixed seeded policies (:func:`rlaudit.env.analysis.rollout_pairs`), every episode's return (the
rewards the outermost environment returned) is regressed on the event counts the environment reports
(``ore.get``, ``battery.get``, ...) and the episode length (a per-step term such as a time penalty), so a
component that vanished, changed scale, or is drowned by another shows up whatever the config says.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair
from rlaudit.env.analysis import POLICIES, rollout_pair, rollout_pairs
from rlaudit.evidence import fmt, interval
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.rewards import plots

PER_STEP = "per step"  # the regression's length term: a time penalty or any constant per-step reward
SCALE_MARGIN = 0.2
"""A component pays the same when its reward per event is within 20% of the baseline's (the ``rescaled``
verdict's [0.8, 1.25] band), the whole interval of the difference included."""

# Reported episode statistics that are not event counts (totals, identifiers).
NOT_COUNTS = {"r", "l", "t", "return", "length", "time", "episode_return", "episode_length"}
ID_WORDS = ("task", "id", "seed", "env", "level", "map")
MEASURED = {"reads": ("curriculum", "env")}
"""What every check of rewards measured in rollouts also reads: the environment that pays them and the curriculum
that picks its tasks."""


def count_columns(episodes: pd.DataFrame) -> list[str]:
    """The reported statistics that are event counts (non-negative integers, not totals or identifiers)."""
    out = []
    for col in episodes.columns:
        if not col.startswith("reported."):
            continue
        key = col[len("reported.") :]
        if key in NOT_COUNTS or any(w in key.lower() for w in ID_WORDS):
            continue
        values = episodes[col].to_numpy(dtype=float)
        values = values[~np.isnan(values)]
        if values.size and np.all(values >= 0) and np.allclose(values, np.round(values)):
            out.append(col)
    return out


def component_weights(episodes: pd.DataFrame, *, seed: int, n_boot: int = 1000) -> pd.DataFrame:
    """What each event pays, by least squares of the episode return on event counts and length.

    ``return_e = sum_k w_k * count_{k,e} + w_step * length_e`` (no intercept): ``w_k`` is the reward per
    event of component ``k`` and ``w_step`` a constant paid every step (a time penalty when negative). The
    bootstrap resamples episodes.

    Args:
        episodes: Rollout episodes with ``return``, ``length`` and ``reported.<count>`` columns.
        seed: Seed of the bootstrap.

    Returns:
        One row per component (its count column's name without ``reported.``, plus ``per step``):
        ``weight``, ``ci_low``, ``ci_high``, ``events`` (total count), ``mean_count`` (per episode),
        ``per_episode`` (weight x mean count), ``per_step`` (weight x events per step), ``measurable``
        (False when the event never happened, so its weight cannot be estimated), ``r2`` of the fit.
    """
    cols = count_columns(episodes)
    ep = episodes.dropna(subset=cols) if cols else episodes
    y = ep["return"].to_numpy(dtype=float)
    length = ep["length"].to_numpy(dtype=float)
    counts = ep[cols].to_numpy(dtype=float) if cols else np.zeros((len(ep), 0))
    active = [i for i in range(len(cols)) if counts[:, i].any()]
    names = [cols[i][len("reported.") :] for i in active] + [PER_STEP]
    design = np.column_stack([counts[:, active], length]) if len(ep) else np.zeros((0, len(names)))
    rows = []
    steps_total = float(length.sum()) if len(ep) else 0.0
    if len(ep) >= len(names) + 2:
        w, *_ = np.linalg.lstsq(design, y, rcond=None)
        resid = y - design @ w
        r2 = float(1 - resid.var() / y.var()) if y.var() > 0 else (1.0 if np.allclose(resid, 0) else 0.0)
        rng = stats.as_generator(seed)
        boot = np.zeros((n_boot, len(names)))
        for b in range(n_boot):
            idx = rng.integers(0, len(ep), size=len(ep))
            boot[b], *_ = np.linalg.lstsq(design[idx], y[idx], rcond=None)
        low, high = np.quantile(boot, [0.025, 0.975], axis=0)
        # Exact fits leave rounding noise (1e-16) where a weight is zero; show it as the zero it is.
        w, low, high = (np.where(np.abs(v) < 1e-9, 0.0, v) for v in (w, low, high))
    else:
        w = low = high = np.full(len(names), np.nan)
        r2 = math.nan
    for j, name in enumerate(names):
        events = float(design[:, j].sum()) if len(ep) else 0.0
        mean_count = events / max(1, len(ep))
        rows.append(
            {
                "component": name,
                "weight": float(w[j]),
                "ci_low": float(low[j]),
                "ci_high": float(high[j]),
                "events": events,
                "mean_count": mean_count,
                "per_episode": float(w[j]) * mean_count,
                "per_step": float(w[j]) * events / steps_total if steps_total else math.nan,
                "measurable": True,
                "r2": r2,
            }
        )
    for i in range(len(cols)):
        if i not in active:
            rows.append(
                {
                    "component": cols[i][len("reported.") :],
                    "weight": math.nan,
                    "ci_low": math.nan,
                    "ci_high": math.nan,
                    "events": 0.0,
                    "mean_count": 0.0,
                    "per_episode": 0.0,
                    "per_step": 0.0,
                    "measurable": False,
                    "r2": r2,
                }
            )
    return pd.DataFrame(rows)


def compare_components(base: pd.DataFrame, cand: pd.DataFrame) -> pd.DataFrame:
    """Per component: the baseline's and candidate's measured weight and the verdict.

    Verdicts: ``vanished`` (the baseline pays it, the candidate's weight is within noise of 0 and below a
    fifth of the baseline's), ``rescaled`` (both pay, ratio outside [0.8, 1.25] with disjoint intervals),
    ``unmeasurable`` (the candidate never reports the event, so its weight cannot be estimated),
    ``new`` (only the candidate pays it), ``same``. ``ratio`` is the implied scale (candidate / baseline weight)
    and ``equivalent`` says whether the difference's interval (the two bootstrap intervals combined) lies within
    ``SCALE_MARGIN`` of the baseline's weight, or of a twentieth of its largest component for one it does not pay.
    """
    b = base.set_index("component")
    c = cand.set_index("component")
    paying = b[b["measurable"] & ((b["ci_low"] > 0) | (b["ci_high"] < 0))]["weight"].abs()
    floor = 0.05 * float(paying.max()) if len(paying) else 1e-9
    rows = []
    for comp in list(dict.fromkeys([*b.index, *c.index])):
        rb = b.loc[comp] if comp in b.index else None
        rc = c.loc[comp] if comp in c.index else None
        wb_ = float(rb["weight"]) if rb is not None else math.nan
        wc = float(rc["weight"]) if rc is not None else math.nan
        b_pays = rb is not None and bool(rb["measurable"]) and (rb["ci_low"] > 0 or rb["ci_high"] < 0)
        c_pays = rc is not None and bool(rc["measurable"]) and (rc["ci_low"] > 0 or rc["ci_high"] < 0)
        if rb is not None and rb["measurable"] and (rc is None or not rc["measurable"]):
            verdict = "unmeasurable"
        elif b_pays and not c_pays and abs(wc) < 0.2 * abs(wb_):
            verdict = "vanished"
        elif b_pays and c_pays:
            ratio = wc / wb_
            disjoint = rc["ci_low"] > rb["ci_high"] or rc["ci_high"] < rb["ci_low"]
            verdict = "rescaled" if disjoint and not 0.8 <= ratio <= 1.25 else "same"
        elif c_pays and not b_pays and abs(wc) > 0.2 * max(abs(wb_) if math.isfinite(wb_) else 0.0, 1e-12):
            verdict = "new"
        else:
            verdict = "same"
        half = math.hypot(
            *((r["ci_high"] - r["ci_low"]) / 2 if r is not None else math.nan for r in (rb, rc))
        )
        margin = SCALE_MARGIN * max(abs(wb_) if math.isfinite(wb_) else 0.0, floor)
        low, high = wc - wb_ - half, wc - wb_ + half
        rows.append(
            {
                "component": comp,
                "baseline weight": wb_,
                "candidate weight": wc,
                "ratio": wc / wb_ if math.isfinite(wb_) and wb_ != 0 else math.nan,
                "difference low": low,
                "difference high": high,
                "equivalent": bool(math.isfinite(low) and -margin <= low and high <= margin),
                "baseline per episode": float(rb["per_episode"]) if rb is not None else math.nan,
                "candidate per episode": float(rc["per_episode"]) if rc is not None else math.nan,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows)


def scale_text(row: pd.Series | dict) -> str:
    """``×0.5`` (the implied scale of a component, candidate over baseline), ``×0`` for a vanished one."""
    ratio, before, after = row["ratio"], row["baseline weight"], row["candidate weight"]
    if math.isfinite(ratio):
        return f"×{fmt(0.0 if abs(ratio) < 1e-9 else ratio)}"
    if math.isfinite(before) and math.isfinite(after) and abs(before) < 1e-9 and abs(after) < 1e-9:
        return "0 on both"
    return "new" if math.isfinite(after) else "not measured"


def uniform_scale(table: pd.DataFrame) -> float | None:
    """The one scale every paying component shares (within 2%), when they all changed alike, else None."""
    ratios = table["ratio"].to_numpy(dtype=float)
    ratios = ratios[np.isfinite(ratios)]
    if len(ratios) < 2 or np.any(np.abs(ratios - 1) < 0.02):
        return None
    return float(np.median(ratios)) if np.ptp(ratios) <= 0.02 * np.max(np.abs(ratios)) else None


def _component_finding(c: Check, merged: pd.DataFrame, verdict: str) -> Finding | None:
    """CONFIRMED for components that vanished, SUSPECT for rescaled ones (None when there are none)."""
    hit = merged[merged["verdict"] == verdict]
    if hit.empty:
        return None
    comps = list(dict.fromkeys(hit["component"]))
    firsts = {comp: hit[hit["component"] == comp].iloc[0] for comp in comps}
    items = [
        f"{comp}: {fmt(r['baseline weight'])} -> {fmt(r['candidate weight'])} per event ({scale_text(r)})"
        for comp, r in firsts.items()
    ]
    first = hit.iloc[0]
    vanished = verdict == "vanished"
    common = None if vanished else uniform_scale(merged[merged["policy"] == first["policy"]])
    tail = (
        " : the component no longer pays anything"
        if vanished
        else f": every component ×{fmt(common)}, a uniform reward scale (a scaling wrapper or coefficient), not a "
        "change to one component"
        if common is not None
        else ""
    )
    return c.finding(
        Status.CONFIRMED if vanished else Status.SUSPECT,
        Severity.HIGH if vanished else Severity.MEDIUM,
        id=f"rewards/component-{verdict}",
        hypothesis=f"No reward component {'vanished' if vanished else 'changed scale'} at runtime",
        baseline={comp: fmt(r["baseline weight"]) for comp, r in firsts.items()},
        candidate={comp: fmt(r["candidate weight"]) for comp, r in firsts.items()},
        effect=float(first["candidate weight"] - first["baseline weight"]),
        effect_label=f"change in reward per {first['component']} event",
        ci=(first["difference low"], first["difference high"])
        if math.isfinite(first["difference low"])
        else None,
        summary="measured at runtime, " + "; ".join(items) + tail,
        details={"components": merged.to_dict("records")},
        remediation="Restore the component's reward in the environment config (and check the config rewrite that "
        "dropped it)."
        if vanished
        else "Restore the baseline's scale for the component, or retune what depends on it.",
        figures=["reward components"],
    )


UNMEASURABLE = {
    "id": "rewards/components-unmeasurable",
    "hypothesis": "Both environments report the events that rewards are paid for",
}
"""A secondary finding of the components check: the candidate reports none of the events its rewards are paid for."""


def _unmeasurable_finding(c: Check, merged: pd.DataFrame) -> Finding | None:
    hit = merged[merged["verdict"] == "unmeasurable"]
    if hit.empty:
        return None
    comps = list(dict.fromkeys(hit["component"]))
    return c.finding(
        Status.NOTED,
        Severity.MEDIUM,
        **UNMEASURABLE,
        summary="the candidate reports no "
        + ", ".join(comps)
        + " events although the baseline does, so their "
        "rewards cannot be measured here (a knock-on of lost episode statistics: see 05_env's "
        "episode-statistics check)",
        remediation="Fix the episode statistics the candidate reports, then rerun this check.",
    )


def _same_or_open(c: Check, merged: pd.DataFrame, bars: pd.DataFrame) -> Finding:
    """CLEARED when every measured component pays the same within the margin under both policies, NOTED when a
    component's interval is too wide to tell, or when no event counts are reported."""
    if bars[bars["component"] != PER_STEP].empty:
        return c.finding(
            Status.NOTED,
            summary="the environments report no event counts; only totals could be compared",
            remediation="Report per-component counts in info['episode'] (e.g. ore.get) to measure components.",
        )
    measured = merged[merged["baseline weight"].notna() | merged["candidate weight"].notna()]
    random = measured[measured["policy"] == POLICIES[0]]
    scales = ", ".join(
        f"{r['component']} {fmt(r['baseline weight'])} ({scale_text(r)})" for _, r in random.iterrows()
    )
    sides = {
        side: ", ".join(
            f"{r['component']} {fmt(r[col])}" for _, r in random.iterrows() if math.isfinite(r[col])
        )
        for side, col in (("baseline", "baseline weight"), ("candidate", "candidate weight"))
    }
    open_rows = measured[~measured["equivalent"]]
    if open_rows.empty:
        return c.finding(
            Status.CLEARED,
            **sides,
            summary=f"every component pays the same per event within {fmt(100 * SCALE_MARGIN)}%: {scales}",
            remediation="Nothing to do.",
        )
    parts = [
        f"{r['component']} ({r['policy']}) {scale_text(r)}, difference {interval(r['difference low'], r['difference high'])}"
        for _, r in open_rows.iterrows()
    ]
    return c.finding(
        Status.NOTED,
        **sides,
        summary="inconclusive: no component shown to change, but not every one shown the same within "
        f"{fmt(100 * SCALE_MARGIN)}%: " + "; ".join(parts),
        remediation="Rerun at a larger profile (longer rollouts, more episodes per component) to settle it.",
    )


@check(
    "rewards/components",
    title="What does each reward component pay? (measured)",
    needs=rollout_pairs,
    **MEASURED,
)
def components(c: Check, pairs: list[Pair], *, seed: int = 0) -> Section:
    """Under the same fixed policies, every reward component pays the same per event in both setups.

    Per-component reward per event and per episode, measured under random and heuristic policies.
    """
    tables: dict[str, pd.DataFrame] = {}
    verdicts: dict[str, pd.DataFrame] = {}
    bars = []
    for policy, pair in zip(POLICIES, pairs, strict=True):
        weights = {s: component_weights(pair[s].table("episodes"), seed=seed) for s in SIDES}
        bars += [weights[s].assign(side=s, policy=policy) for s in SIDES]
        verdicts[policy] = compare_components(weights["baseline"], weights["candidate"])
        tables[f"components ({policy} policy)"] = verdicts[policy].rename(
            columns={
                "ratio": "candidate / baseline weight",
                "difference low": "interval low (candidate − baseline weight)",
                "difference high": "interval high (candidate − baseline weight)",
            }
        )
    all_bars = pd.concat(bars, ignore_index=True)
    figure = plots.component_bars(all_bars[(all_bars["policy"] == "random") & all_bars["measurable"]])
    # The random policy is the reference measurement; the heuristic confirms (it reaches later components).
    merged = pd.concat([v.assign(policy=p) for p, v in verdicts.items()], ignore_index=True)
    findings = [
        f
        for f in (
            _component_finding(c, merged, "vanished"),
            _component_finding(c, merged, "rescaled"),
            _unmeasurable_finding(c, merged),
        )
        if f is not None
    ]
    if not findings:
        findings.append(_same_or_open(c, merged, all_bars))
    return c.section(
        findings,
        tables=tables,
        figures={"reward components": figure},
        notes="Weights are least-squares fits of each episode's return (the rewards the environment returned) on "
        "the event counts it reported and the episode length (`per step`: a time penalty or constant per-step "
        "reward); intervals bootstrap over episodes.",
    )


def magnitudes(weights: pd.DataFrame, episodes: pd.DataFrame) -> pd.DataFrame:
    """Per component: reward per event, events per step, contribution per step; the per-step term; the
    terminal reward; and whether each component is drowned (its contribution per step is below a tenth of
    the per-step penalty's, case 002's 0.0001-per-pixel shaping against a 0.01 time penalty)."""
    rows = []
    per_step = weights[weights["component"] == PER_STEP]
    penalty = (
        float(per_step["weight"].iloc[0])
        if len(per_step) and math.isfinite(per_step["weight"].iloc[0])
        else 0.0
    )
    penalty_known = len(per_step) and per_step["ci_high"].iloc[0] < 0
    for r in weights.itertuples():
        if r.component == PER_STEP or not r.measurable:
            continue
        drowned = bool(penalty_known and abs(r.per_step) < 0.1 * abs(penalty))
        rows.append(
            {
                "term": r.component,
                "reward per event": r.weight,
                "per step": r.per_step,
                "per episode": r.per_episode,
                "drowned": drowned,
            }
        )
    rows.append(
        {
            "term": "per-step term (time penalty)",
            "reward per event": penalty,
            "per step": penalty,
            "per episode": penalty * float(episodes["length"].mean()) if len(episodes) else math.nan,
            "drowned": False,
        }
    )
    term = episodes[episodes["terminated"]] if len(episodes) else episodes
    if len(term) and "last_reward" in term:
        rows.append(
            {
                "term": "terminal step reward",
                "reward per event": float(term["last_reward"].mean()),
                "per step": math.nan,
                "per episode": float(term["last_reward"].mean()),
                "drowned": False,
            }
        )
    return pd.DataFrame(rows)


@check(
    "rewards/magnitudes",
    title="Shaping per step vs terminal reward vs time penalty",
    needs=rollout_pair,
    **MEASURED,
)
def relative_magnitudes(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """No reward component is drowned by another in the candidate that was not already in the baseline.

    Shaping per step vs terminal reward vs time penalty, measured under the random policy.
    """
    mags = {}
    for s in SIDES:
        eps = pair[s].table("episodes")
        mags[s] = magnitudes(component_weights(eps, seed=seed), eps)
    table = pd.concat([m.assign(side=s) for s, m in mags.items()], ignore_index=True)
    drowned = {s: set(mags[s].loc[mags[s]["drowned"], "term"]) for s in SIDES}
    new = sorted(drowned["candidate"] - drowned["baseline"])
    both = sorted(drowned["candidate"] & drowned["baseline"])
    pen = {
        s: float(mags[s].loc[mags[s]["term"].str.startswith("per-step"), "per step"].iloc[0]) for s in SIDES
    }
    if new:
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = (
            f"in the candidate {', '.join(new)} pays less per step than a tenth of the per-step penalty "
            f"({fmt(pen['candidate'])} per step): the shaping is drowned (case 002)"
        )
        remediation = (
            "Scale the drowned shaping up (or the time penalty down) until it outweighs the penalty per step."
        )
    elif both:
        status, severity = Status.NOTED, Severity.MEDIUM
        summary = f"{', '.join(both)} is drowned by the per-step penalty in both setups"
        remediation = "Consider rescaling the shaping; it is not a difference between the setups."
    else:
        status, severity = Status.CLEARED, Severity.INFO
        summary = (
            f"no component is drowned (per-step term {fmt(pen['baseline'])} vs {fmt(pen['candidate'])}); "
            "magnitudes in the table"
        )
        remediation = "Nothing to do."
    finding = c.finding(
        status,
        severity,
        values=pen,
        effect_label="per-step term",
        summary=summary,
        details={"table": table.to_dict("records")},
        remediation=remediation,
    )
    return c.section(finding, tables={"reward magnitudes": table})
