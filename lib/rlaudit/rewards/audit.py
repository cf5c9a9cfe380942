"""Rewards audit (notebook 11): scale, shaping and components, declared and measured.

Case 001's shaped rewards vanished in a config rewrite (battery 0.8 became absent), and case 002's navigation
shaping (0.0001 per pixel) was cancelled by a 0.01 time penalty. This room reads the reward settings from
both resolved configs, then measures what each component actually pays at runtime: under the same fixed
seeded policies it regresses every episode's return on the event counts the environment reports
(``ore.get``, ``battery.get``, ...) and the episode length (a per-step term such as a time penalty), so a
component that vanished, changed scale, or is drowned by another shows up whatever the config says.
"""

from __future__ import annotations

import fnmatch
import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.compare import classify_key, flatten, values_equal
from rlaudit.config import probes as config_probes
from rlaudit.env import probes as env_probes
from rlaudit.env.analysis import fmt, pct, rollout_params, run_pair, sizes
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, audit_section
from rlaudit.rewards import plots, probes
from rlaudit.workbench import Workbench

SUBSYSTEM = "rewards"
SIDES = ("baseline", "candidate")
POLICIES = ("random", "wsls")
PER_STEP = "per step"  # the regression's length term: a time penalty or any constant per-step reward

# Reported episode statistics that are not event counts (totals, identifiers).
NOT_COUNTS = {"r", "l", "t", "return", "length", "time", "episode_return", "episode_length"}
ID_WORDS = ("task", "id", "seed", "env", "level", "map")


# ---------------------------------------------------------------------------------------------------------
# Settings from the resolved configs
# ---------------------------------------------------------------------------------------------------------


def setting_kind(key: str) -> str:
    """What a reward setting does, from its name: penalty, clip, normalize, scale, or component."""
    last = key.lower()
    for kind, patterns in (
        ("time penalty", ("*penalty*", "*per_step*", "*step_cost*")),
        ("clipping", ("*clip*",)),
        ("normalization", ("*norm*",)),
        ("scale", ("*scale*", "*coef*", "*multiplier*")),
    ):
        if any(fnmatch.fnmatch(last, p) for p in patterns):
            return kind
    return "component"


def reward_settings(
    config_a: dict[str, Any], config_b: dict[str, Any], rules: dict[str, list[str]] | None
) -> pd.DataFrame:
    """The reward settings of both configs side by side.

    A key is a reward setting when the subject's ``config_keys()`` (or rlaudit's name rules) file it under
    ``rewards``, or its name mentions a reward.

    Returns:
        One row per key: ``key``, ``kind`` (:func:`setting_kind`), ``baseline``, ``candidate`` (None when
        absent), ``change`` (``same``, ``changed``, ``vanished``, ``added``, ``removed``), ``ratio``
        (candidate / baseline for numbers).
    """
    fa, fb = flatten(config_a), flatten(config_b)
    rows = []
    for key in list(dict.fromkeys([*fa, *fb])):
        if classify_key(key, rules) != SUBSYSTEM and "reward" not in key.lower():
            continue
        in_a, in_b = key in fa, key in fb
        va, vb = fa.get(key), fb.get(key)
        num_a = isinstance(va, int | float) and not isinstance(va, bool)
        num_b = isinstance(vb, int | float) and not isinstance(vb, bool)
        if in_a and in_b and values_equal(va, vb):
            change = "same"
        elif in_a and num_a and va != 0 and (not in_b or vb is None or (num_b and vb == 0)):
            change = "vanished"
        elif not in_b:
            change = "removed"
        elif not in_a:
            change = "added"
        else:
            change = "changed"
        ratio = float(vb) / float(va) if num_a and num_b and va not in (0, None) else math.nan
        rows.append(
            {
                "key": key,
                "kind": setting_kind(key),
                "baseline": va if in_a else None,
                "candidate": vb if in_b else None,
                "change": change,
                "ratio": ratio,
            }
        )
    return pd.DataFrame(rows, columns=["key", "kind", "baseline", "candidate", "change", "ratio"])


@audit_section(
    "rewards/settings",
    SUBSYSTEM,
    "Both configs declare the same reward components, scales, clipping, normalization and time penalty",
)
def settings(wb: Workbench) -> Section:
    """Reward settings from the resolved configs, side by side; vanished and rescaled components flagged."""
    hypothesis = (
        "Both configs declare the same reward components, scales, clipping, normalization and time penalty"
    )
    fid = "rewards/settings"
    pair = wb.run(config_probes.resolved_config)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    rules = None
    for side in SIDES:
        if pair[side].result.get("has_config_keys"):
            rules = pair[side].json("config_keys")
            break
    table = reward_settings(pair.baseline.json("config"), pair.candidate.json("config"), rules)
    findings = []
    if table.empty:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                severity=Severity.INFO,
                evidence=Evidence(
                    summary="neither config names a reward setting; the measured components below "
                    "are all there is to compare"
                ),
                remediation="Expose the reward weights in config() (and rewards patterns in config_keys()) so they "
                "can be compared.",
            )
        )
        return Section(title="Reward settings in the resolved configs", findings=findings)
    vanished = table[table["change"].isin(["vanished"])]
    changed = table[table["change"].isin(["changed", "removed"])]
    added = table[table["change"] == "added"]
    same = table[table["change"] == "same"]
    if len(vanished):
        items = [
            f"{r.key}: {fmt(r.baseline)} -> {fmt(r.candidate) if r.candidate is not None else 'absent'}"
            for r in vanished.itertuples()
        ]
        findings.append(
            Finding(
                id="rewards/component-vanished-in-config",
                subsystem=SUBSYSTEM,
                hypothesis="Every reward component the baseline pays is still declared in the candidate",
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline={r.key: r.baseline for r in vanished.itertuples()},
                    candidate={r.key: r.candidate for r in vanished.itertuples()},
                    effect=float(len(vanished)),
                    effect_label="components that vanished",
                    summary="a reward component vanished from the config: " + "; ".join(items),
                    details={"rows": vanished.to_dict("records")},
                ),
                remediation="Restore the shaped reward(s) in the candidate's config (case 001 had to add back "
                "ore 0.1, battery 0.8, heart 1.0 after the rewrite).",
                figures=["reward components"],
            )
        )
    if len(changed):
        items = [f"{r.key}: {fmt(r.baseline)} -> {fmt(r.candidate)}" for r in changed.itertuples()]
        findings.append(
            Finding(
                id="rewards/settings-changed",
                subsystem=SUBSYSTEM,
                hypothesis="Reward scales, clipping, normalization and penalties are the same in both configs",
                status=Status.SUSPECT,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline={r.key: r.baseline for r in changed.itertuples()},
                    candidate={r.key: r.candidate for r in changed.itertuples()},
                    effect=float(len(changed)),
                    effect_label="settings changed",
                    summary=f"{len(changed)} reward setting(s) changed: " + "; ".join(items[:6]),
                    details={"rows": changed.to_dict("records")},
                ),
                remediation="Restore the baseline's reward settings, or measure what the new scale does with the "
                "summary's attribution runs.",
            )
        )
    if len(added):
        findings.append(
            Finding(
                id="rewards/settings-added",
                subsystem=SUBSYSTEM,
                hypothesis="The candidate declares no reward settings the baseline lacks",
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    candidate={r.key: r.candidate for r in added.itertuples()},
                    summary=f"the candidate adds {len(added)} reward setting(s): "
                    + ", ".join(added["key"].tolist()[:6]),
                ),
                remediation="Check that the new settings are intended.",
            )
        )
    if not findings:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                severity=Severity.INFO,
                evidence=Evidence(
                    baseline={r.key: r.baseline for r in same.itertuples()},
                    candidate={r.key: r.candidate for r in same.itertuples()},
                    summary=f"the same {len(same)} reward settings: "
                    + ", ".join(f"{r.key}={fmt(r.baseline)}" for r in same.itertuples())[:300],
                ),
                remediation="Nothing to do.",
            )
        )
    return Section(
        title="Reward settings in the resolved configs", findings=findings, tables={"reward settings": table}
    )


# ---------------------------------------------------------------------------------------------------------
# Components measured at runtime
# ---------------------------------------------------------------------------------------------------------


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
    ``new`` (only the candidate pays it), ``same``.
    """
    b = base.set_index("component")
    c = cand.set_index("component")
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
        rows.append(
            {
                "component": comp,
                "baseline weight": wb_,
                "candidate weight": wc,
                "baseline per episode": float(rb["per_episode"]) if rb is not None else math.nan,
                "candidate per episode": float(rc["per_episode"]) if rc is not None else math.nan,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows)


@audit_section(
    "rewards/components",
    SUBSYSTEM,
    "Under the same fixed policies, every reward component pays the same per event in both setups",
)
def components(wb: Workbench, *, seed: int = 0) -> Section:
    """Per-component reward per event and per episode, measured under random and heuristic policies."""
    hypothesis = (
        "Under the same fixed policies, every reward component pays the same per event in both setups"
    )
    fid = "rewards/components"
    tables: dict[str, Any] = {}
    verdicts: dict[str, pd.DataFrame] = {}
    bars = []
    for policy in POLICIES:
        pair = run_pair(
            wb, env_probes.rollout, f"env rollout ({policy})", **rollout_params(wb.profile, seed, policy)
        )
        if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
            return Section.of(f)
        weights = {s: component_weights(pair[s].table("episodes"), seed=seed) for s in SIDES}
        for s in SIDES:
            part = weights[s].assign(side=s, policy=policy)
            bars.append(part)
        verdicts[policy] = compare_components(weights["baseline"], weights["candidate"])
        tables[f"components ({policy} policy)"] = verdicts[policy]
    all_bars = pd.concat(bars, ignore_index=True)
    figure = plots.component_bars(all_bars[(all_bars["policy"] == "random") & all_bars["measurable"]])
    findings = []
    # The random policy is the reference measurement; the heuristic confirms (it reaches later components).
    merged = pd.concat([v.assign(policy=p) for p, v in verdicts.items()], ignore_index=True)
    measurable_any = not all_bars[all_bars["component"] != PER_STEP].empty
    for verdict, status, severity in (
        ("vanished", Status.CONFIRMED, Severity.HIGH),
        ("rescaled", Status.SUSPECT, Severity.MEDIUM),
    ):
        hit = merged[merged["verdict"] == verdict]
        if hit.empty:
            continue
        comps = list(dict.fromkeys(hit["component"]))
        items = []
        for comp in comps:
            row = hit[hit["component"] == comp].iloc[0]
            items.append(f"{comp}: {fmt(row['baseline weight'])} -> {fmt(row['candidate weight'])} per event")
        first = hit.iloc[0]
        findings.append(
            Finding(
                id=f"rewards/component-{verdict}",
                subsystem=SUBSYSTEM,
                hypothesis=f"No reward component {'vanished' if verdict == 'vanished' else 'changed scale'} at runtime",
                status=status,
                severity=severity,
                evidence=Evidence(
                    baseline={c: fmt(hit[hit["component"] == c].iloc[0]["baseline weight"]) for c in comps},
                    candidate={c: fmt(hit[hit["component"] == c].iloc[0]["candidate weight"]) for c in comps},
                    effect=float(first["candidate weight"] - first["baseline weight"]),
                    effect_label=f"change in reward per {first['component']} event",
                    summary=(
                        "measured at runtime, "
                        + "; ".join(items)
                        + (" : the component no longer pays anything" if verdict == "vanished" else "")
                    ),
                    details={"components": merged.to_dict("records")},
                ),
                remediation=(
                    "Restore the component's reward in the environment config (and check the config "
                    "rewrite that dropped it)."
                    if verdict == "vanished"
                    else "Restore the baseline's scale for the component, or retune what depends on it."
                ),
                figures=["reward components"],
            )
        )
    unmeasurable = merged[merged["verdict"] == "unmeasurable"]
    if len(unmeasurable):
        comps = list(dict.fromkeys(unmeasurable["component"]))
        findings.append(
            Finding(
                id="rewards/components-unmeasurable",
                subsystem=SUBSYSTEM,
                hypothesis="Both environments report the events that rewards are paid for",
                status=Status.NOTED,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    summary="the candidate reports no " + ", ".join(comps) + " events although the "
                    "baseline does, so their rewards cannot be measured here (a knock-on of lost "
                    "episode statistics: see 05_env's episode-statistics check)"
                ),
                remediation="Fix the episode statistics the candidate reports, then rerun this check.",
            )
        )
    if not findings:
        rows = verdicts["random"].to_dict("records")
        text = ", ".join(
            f"{r['component']} {fmt(r['baseline weight'])}"
            for r in rows
            if math.isfinite(r["baseline weight"])
        )
        text_c = ", ".join(
            f"{r['component']} {fmt(r['candidate weight'])}"
            for r in rows
            if math.isfinite(r["candidate weight"])
        )
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED if measurable_any else Status.NOTED,
                severity=Severity.INFO,
                evidence=Evidence(
                    baseline=text,
                    candidate=text_c,
                    summary=(
                        f"every component pays the same per event ({text})"
                        if measurable_any
                        else "the environments report no event counts; only totals could be compared"
                    ),
                ),
                remediation="Nothing to do."
                if measurable_any
                else "Report per-component counts in info['episode'] (e.g. ore.get) to measure components.",
            )
        )
    return Section(
        title="What does each reward component pay? (measured)",
        findings=findings,
        tables=tables,
        figures={"reward components": figure},
        notes=[
            "Weights are least-squares fits of each episode's return (the rewards the environment "
            "returned) on the event counts it reported and the episode length (`per step`: a time "
            "penalty or constant per-step reward); intervals bootstrap over episodes."
        ],
    )


# ---------------------------------------------------------------------------------------------------------
# Range, values paid, wrappers
# ---------------------------------------------------------------------------------------------------------


def value_table(facts: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Distinct per-step reward values and how often each is paid (fraction of steps), per side."""
    rows = []
    for side, f in facts.items():
        rw = f["rewards"]
        if rw.get("values") is None:
            continue
        total = float(sum(rw["counts"])) or 1.0
        for v, c in zip(rw["values"], rw["counts"], strict=True):
            rows.append({"side": side, "value": float(v), "count": int(c), "frequency": c / total})
    return pd.DataFrame(rows, columns=["side", "value", "count", "frequency"])


def lost_values(values: pd.DataFrame, min_count: int = 20) -> list[dict[str, Any]]:
    """Reward values the baseline pays at least ``min_count`` times that the candidate pays at less than a
    tenth of the baseline's frequency."""
    out = []
    if values.empty:
        return out
    b = values[values["side"] == "baseline"].set_index("value")
    c = values[values["side"] == "candidate"].set_index("value")
    for v, row in b.iterrows():
        fc = float(c["frequency"].get(v, 0.0)) if len(c) else 0.0
        if row["count"] >= min_count and v != 0 and fc < 0.1 * row["frequency"]:
            out.append(
                {"value": float(v), "baseline_frequency": float(row["frequency"]), "candidate_frequency": fc}
            )
    return out


@audit_section(
    "rewards/range",
    SUBSYSTEM,
    "Both setups pay rewards over the same range and values, before and after their wrappers",
)
def reward_range(wb: Workbench, *, seed: int = 0) -> Section:
    """Reward range and distinct values paid; the range before and after wrappers (clipping, normalizing)."""
    hypothesis = "Both setups pay rewards over the same range and values, before and after their wrappers"
    fid = "rewards/range"
    pair = run_pair(
        wb, env_probes.rollout, "env rollout (random)", **rollout_params(wb.profile, seed, "random")
    )
    wrap = wb.run(probes.reward_wrappers, seed=seed, steps=sizes(wb.profile).equivalence_steps)
    for p in (pair, wrap):
        if (f := p.guard(fid, SUBSYSTEM, hypothesis)) is not None:
            return Section.of(f)
    facts = {s: pair[s].json("facts") for s in SIDES}
    values = value_table(facts)
    w = {s: wrap[s].result for s in SIDES}
    rows = []
    for s in SIDES:
        for stage in ("before", "after"):
            st = w[s][stage]
            rows.append(
                {
                    "side": s,
                    "stage": f"{stage} wrappers",
                    **{k: st.get(k) for k in ("min", "max", "mean", "std", "abs_max", "nonzero")},
                }
            )
        rows.append(
            {
                "side": s,
                "stage": "rollout (random policy)",
                "min": facts[s]["rewards"]["min"],
                "max": facts[s]["rewards"]["max"],
                "mean": facts[s]["rewards"]["mean"],
            }
        )
    table = pd.DataFrame(rows)
    findings = []
    lost = lost_values(values)
    ab, ac = w["baseline"]["after"].get("abs_max", 0.0), w["candidate"]["after"].get("abs_max", 0.0)
    scale = (ac / ab) if ab else math.nan
    problems = []
    if lost:
        problems.append(
            "reward value(s) the baseline pays are (almost) never paid by the candidate: "
            + "; ".join(
                f"{fmt(x['value'])} ({pct(x['baseline_frequency'])} of steps -> {pct(x['candidate_frequency'])})"
                for x in lost
            )
        )
    if math.isfinite(scale) and not 0.5 <= scale <= 2.0:
        problems.append(
            f"the largest reward after wrappers changed from {fmt(ab)} to {fmt(ac)} (x{fmt(scale)})"
        )
    if w["baseline"]["wrapped"] != w["candidate"]["wrapped"] or (
        w["baseline"]["same_stream"] != w["candidate"]["same_stream"]
    ):
        problems.append(
            "the wrappers that transform rewards differ: "
            f"{' > '.join(w['baseline']['wrappers'])} vs {' > '.join(w['candidate']['wrappers'])}"
        )
    if problems:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline={
                        "range": [facts["baseline"]["rewards"]["min"], facts["baseline"]["rewards"]["max"]],
                        "wrappers": w["baseline"]["wrappers"],
                    },
                    candidate={
                        "range": [facts["candidate"]["rewards"]["min"], facts["candidate"]["rewards"]["max"]],
                        "wrappers": w["candidate"]["wrappers"],
                    },
                    effect=scale,
                    effect_label="largest |reward| after wrappers, candidate / baseline",
                    summary="; ".join(problems),
                    details={"lost_values": lost, "wrappers": w},
                ),
                remediation="Restore the reward values (or the clipping/normalization wrapper) of the baseline.",
                figures=["reward values"],
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
                    baseline=[facts["baseline"]["rewards"]["min"], facts["baseline"]["rewards"]["max"]],
                    candidate=[facts["candidate"]["rewards"]["min"], facts["candidate"]["rewards"]["max"]],
                    summary=f"same reward range [{fmt(facts['baseline']['rewards']['min'])}, "
                    f"{fmt(facts['baseline']['rewards']['max'])}] and values paid; wrappers: "
                    f"{' > '.join(w['baseline']['wrappers'])}",
                ),
                remediation="Nothing to do.",
            )
        )
    return Section(
        title="Reward range and values, before and after wrappers",
        findings=findings,
        tables={"reward range": table, "reward values paid": values},
        figures={"reward values": plots.value_frequencies(values)},
    )


# ---------------------------------------------------------------------------------------------------------
# Relative magnitudes
# ---------------------------------------------------------------------------------------------------------


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


@audit_section(
    "rewards/magnitudes",
    SUBSYSTEM,
    "No reward component is drowned by another in the candidate that was not already in the baseline",
)
def relative_magnitudes(wb: Workbench, *, seed: int = 0) -> Section:
    """Shaping per step vs terminal reward vs time penalty, measured under the random policy."""
    hypothesis = (
        "No reward component is drowned by another in the candidate that was not already in the baseline"
    )
    fid = "rewards/magnitudes"
    pair = run_pair(
        wb, env_probes.rollout, "env rollout (random)", **rollout_params(wb.profile, seed, "random")
    )
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    mags = {}
    for s in SIDES:
        eps = pair[s].table("episodes")
        mags[s] = magnitudes(component_weights(eps, seed=seed), eps)
    table = pd.concat([m.assign(side=s) for s, m in mags.items()], ignore_index=True)
    new = sorted(
        set(mags["candidate"].loc[mags["candidate"]["drowned"], "term"])
        - set(mags["baseline"].loc[mags["baseline"]["drowned"], "term"])
    )
    both = sorted(
        set(mags["candidate"].loc[mags["candidate"]["drowned"], "term"])
        & set(mags["baseline"].loc[mags["baseline"]["drowned"], "term"])
    )
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
    finding = Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=Evidence(
            baseline=pen["baseline"],
            candidate=pen["candidate"],
            effect_label="per-step term",
            summary=summary,
            details={"table": table.to_dict("records")},
        ),
        remediation=remediation,
    )
    return Section(
        title="Shaping per step vs terminal reward vs time penalty",
        findings=[finding],
        tables={"reward magnitudes": table},
    )


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every rewards check, in notebook order."""
    return [
        settings(wb),
        components(wb, seed=seed),
        reward_range(wb, seed=seed),
        relative_magnitudes(wb, seed=seed),
    ]
