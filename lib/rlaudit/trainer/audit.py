"""Trainer audit: the batch geometry used at runtime, speed and where time goes, and learning over seeds.

Case 002 trained 14 environments instead of 128 because a memory heuristic overrode the config, and case
000's automatic "debug mode" cut the batch on any machine without a GPU; both configs looked right. So the
geometry here is read from what the runs did (the recorder's episodes carry environment ids, its optimizer
steps carry the environment step they happened at, and the trainer's own summary), beside the config.
Speed is steps per second over the seeds' runs with a bootstrap interval, broken down by the recorder's
phases. Learning is the primary metric over seeds against steps and wall-clock, final performance as an IQM
with intervals paired by seed and the probability of improvement (rliable's statistics, explicit seeds), and
stability across seeds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, audit_section
from rlaudit.trainer import plots
from rlaudit.trainer.common import SIDES, find_keys, fmt, guard_runs, pct
from rlaudit.trainer.runs import RunData, run_data, runs
from rlaudit.workbench import Workbench

SUBSYSTEM = "trainer"
SEED = 0  # bootstrap seed: every interval reproduces
SPEED_MIN_EFFECT = 0.15  # a speed ratio must exclude 1 and differ by more than 15%
LEARNING_MIN_EFFECT = 0.10  # a final-performance gap must exceed 10% of the baseline's IQM
MIN_SEEDS_FOR_VERDICT = 3  # below this no interval over seeds can carry a learning verdict
FINAL_FRACTION = 0.25  # final performance: episodes that ended in the last quarter of the run
CURVE_BINS = 20

CONFIG_GEOMETRY: dict[str, tuple[str, ...]] = {
    "num_envs": ("num_envs", "n_envs", "num_workers", "envs", "num_environments"),
    "rollout_length": ("num_steps", "n_steps", "rollout_length", "unroll_length", "horizon", "bptt_horizon"),
    "minibatches": ("num_minibatches", "n_minibatches", "minibatches"),
    "minibatch_size": ("minibatch_size", "mini_batch_size"),
    "epochs": ("update_epochs", "n_epochs", "epochs", "ppo_epochs", "num_epochs"),
    "batch_size": ("batch_size", "rollout_batch_size"),
}


# -------------------------------------------------------------------------------------------------------------
# Geometry
# -------------------------------------------------------------------------------------------------------------


def runtime_geometry(run: RunData) -> dict[str, Any]:
    """What one run did, from its recorder tables and the trainer's returned summary.

    Returns:
        ``num_envs`` (distinct environment ids among finished episodes), ``batch`` (environment steps between
        two rollouts' optimizer steps), ``opt_steps_per_rollout``, ``rollout_length`` (batch / envs),
        ``minibatch_size`` / ``epochs`` (from the trainer's summary when it reports them), ``rollouts``,
        ``optimizer_steps``, ``updates_per_million`` (rollouts per 1M steps), ``opt_steps_per_million``.
    """
    out: dict[str, Any] = {}
    episodes = run.table("episodes")
    if not episodes.empty and "env" in episodes and (episodes["env"] >= 0).any():
        out["num_envs"] = int(episodes.loc[episodes["env"] >= 0, "env"].nunique())
    updates = run.table("updates")
    if not updates.empty:
        g0 = updates[updates["group"] == 0]
        per_step = g0.groupby("step").size().sort_index()
        steps = per_step.index.to_numpy(dtype=float)
        if len(steps) >= 2:
            out["batch"] = int(np.median(np.diff(steps)))
        elif len(steps) == 1:
            out["batch"] = int(steps[0])
        out["opt_steps_per_rollout"] = int(np.median(per_step.to_numpy()))
        out["rollouts"] = len(per_step)
        out["optimizer_steps"] = len(g0)
    summary = {**run.result.get("summary", {})}
    for key in ("num_envs", "num_steps", "batch_size", "minibatch_size"):
        if isinstance(summary.get(key), int | float):
            out[f"summary_{key}"] = int(summary[key])
    if "num_envs" not in out and "summary_num_envs" in out:
        out["num_envs"] = out["summary_num_envs"]
    if "batch" not in out and "summary_batch_size" in out:
        out["batch"] = out["summary_batch_size"]
    if out.get("batch") and out.get("num_envs"):
        out["rollout_length"] = out["batch"] / out["num_envs"]
    if out.get("summary_minibatch_size") and out.get("batch") and out.get("opt_steps_per_rollout"):
        per_epoch = out["batch"] / out["summary_minibatch_size"]
        out["minibatch_size"] = out["summary_minibatch_size"]
        out["epochs"] = out["opt_steps_per_rollout"] / per_epoch
    if out.get("batch"):
        out["updates_per_million"] = 1e6 / out["batch"]
        if out.get("opt_steps_per_rollout"):
            out["opt_steps_per_million"] = 1e6 / out["batch"] * out["opt_steps_per_rollout"]
    return out


def config_geometry(config: Mapping[str, Any]) -> dict[str, Any]:
    """The geometry a config declares (first numeric key matching each quantity), plus derived sizes."""
    out: dict[str, Any] = {}
    for quantity, names in CONFIG_GEOMETRY.items():
        hits = {
            k: v
            for k, v in find_keys(config, names).items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        if hits:
            key = sorted(hits, key=lambda k: (0 if "train" in k else 1, k.count("."), k))[0]
            out[quantity] = hits[key]
            out[f"{quantity}_key"] = key
    if "num_envs" in out and "rollout_length" in out:
        out.setdefault("batch", out["num_envs"] * out["rollout_length"])
    elif "batch_size" in out:
        out.setdefault("batch", out["batch_size"])
    if out.get("batch") and "minibatches" in out:
        out.setdefault("minibatch_size", out["batch"] / out["minibatches"])
    if out.get("batch") and out.get("minibatch_size") and out.get("epochs"):
        out["opt_steps_per_rollout"] = out["batch"] / out["minibatch_size"] * out["epochs"]
    if out.get("batch"):
        out["updates_per_million"] = 1e6 / out["batch"]
        if out.get("opt_steps_per_rollout"):
            out["opt_steps_per_million"] = out["updates_per_million"] * out["opt_steps_per_rollout"]
    return out


GEOMETRY_ROWS = (
    ("num_envs", "environments"),
    ("rollout_length", "rollout length (steps per env per update)"),
    ("batch", "batch (env steps per update)"),
    ("minibatch_size", "minibatch size"),
    ("epochs", "epochs per update"),
    ("opt_steps_per_rollout", "optimizer steps per update"),
    ("updates_per_million", "updates per 1M steps"),
    ("opt_steps_per_million", "optimizer steps per 1M steps"),
)
CHECKED = ("num_envs", "rollout_length", "batch", "minibatch_size", "epochs", "opt_steps_per_rollout")


def _consensus(values: Sequence[Any]) -> Any:
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return vals[0] if all(_close(v, vals[0]) for v in vals) else float(np.median(vals))


def _close(a: Any, b: Any, rtol: float = 0.02) -> bool:
    if a is None or b is None:
        return False
    return math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=1e-9)


def geometry_table(data: Mapping[str, Sequence[RunData]]) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """Rows per quantity: each side's config value and runtime value (seeds agreeing, else their median)."""
    per_side: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        geos = [runtime_geometry(r) for r in data[side]]
        runtime = {k: _consensus([g.get(k) for g in geos]) for k in {k for g in geos for k in g}}
        per_side[side] = {"runtime": runtime, "config": config_geometry(data[side][0].config)}
    rows = []
    for key, label in GEOMETRY_ROWS:
        row: dict[str, Any] = {"quantity": label}
        for side in SIDES:
            row[f"{side} config"] = per_side[side]["config"].get(key)
            row[f"{side} runtime"] = per_side[side]["runtime"].get(key)
        rows.append(row)
    cols = ["quantity", "baseline config", "baseline runtime", "candidate config", "candidate runtime"]
    return pd.DataFrame(rows, columns=cols), per_side


@audit_section(
    "trainer/geometry",
    SUBSYSTEM,
    "Both trainers run the batch geometry their configs declare, and the same one",
)
def geometry(wb: Workbench) -> Section:
    """Environments, rollout length, batch and minibatch sizes, epochs and updates per 1M steps, as run."""
    hypothesis = "Both trainers run the batch geometry their configs declare, and the same one"
    pairs = runs(wb)
    if (f := guard_runs(pairs, "trainer/geometry", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    data = run_data(pairs)
    table, per_side = geometry_table(data)
    labels = dict(GEOMETRY_ROWS)
    findings: list[Finding] = []
    for side in SIDES:
        cfg, rt = per_side[side]["config"], per_side[side]["runtime"]
        off = [
            k
            for k in CHECKED
            if cfg.get(k) is not None and rt.get(k) is not None and not _close(cfg[k], rt[k])
        ]
        if not off:
            continue
        parts = [
            f"{labels[k]}: config {fmt(cfg[k])}"
            + (f" ({cfg[k + '_key']})" if cfg.get(k + "_key") else "")
            + f", ran {fmt(rt[k])}"
            for k in off
        ]
        findings.append(
            Finding(
                id=f"trainer/geometry-{side}",
                subsystem=SUBSYSTEM,
                hypothesis=f"The {side}'s trainer runs the geometry its config declares",
                status=Status.CONFIRMED if side == "candidate" else Status.NOTED,
                severity=Severity.HIGH if side == "candidate" else Severity.LOW,
                evidence=Evidence(
                    baseline={k: per_side["baseline"]["runtime"].get(k) for k in off},
                    candidate={k: per_side["candidate"]["runtime"].get(k) for k in off},
                    effect=float(rt[off[0]]) / float(cfg[off[0]]) if cfg[off[0]] else None,
                    effect_label=f"{labels[off[0]]}: runtime / config ({side})",
                    summary=f"the {side}'s trainer ignores its config: "
                    + "; ".join(parts)
                    + f" (updates per 1M steps: {fmt(rt.get('updates_per_million'))} vs "
                    f"{fmt(cfg.get('updates_per_million'))} declared)",
                    details={"config": cfg, "runtime": rt},
                ),
                remediation=f"Find the code that overrides the {side}'s {labels[off[0]]} at runtime (a hardware or "
                "platform heuristic, a debug mode) and make it respect the config or fail loudly.",
                figures=["batch geometry"],
            )
        )
    rb, rc = per_side["baseline"]["runtime"], per_side["candidate"]["runtime"]
    differ = [
        k for k in CHECKED if rb.get(k) is not None and rc.get(k) is not None and not _close(rb[k], rc[k])
    ]
    if differ and not any(f.id == "trainer/geometry-candidate" for f in findings):
        findings.append(
            Finding(
                id="trainer/geometry",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline={k: rb[k] for k in differ},
                    candidate={k: rc[k] for k in differ},
                    summary="the two trainers run different batch geometries (as their configs say): "
                    + "; ".join(f"{labels[k]} {fmt(rb[k])} → {fmt(rc[k])}" for k in differ),
                ),
                remediation="Restore the baseline's rollout and minibatch sizes in the candidate's config "
                "(or let attribution measure what the change costs).",
                figures=["batch geometry"],
            )
        )
    if not findings:
        findings.append(
            Finding(
                id="trainer/geometry",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline={k: rb.get(k) for k in ("num_envs", "batch")},
                    candidate={k: rc.get(k) for k in ("num_envs", "batch")},
                    summary=f"same geometry as configured on both sides: {fmt(rb.get('num_envs'))} environments x "
                    f"{fmt(rb.get('rollout_length'))} steps = {fmt(rb.get('batch'))} per update, "
                    f"{fmt(rb.get('opt_steps_per_rollout'))} optimizer steps per update",
                ),
            )
        )
    notes = [
        "Runtime values come from the recorder: environments = distinct environment ids among finished episodes, "
        "batch = environment steps between consecutive rollouts' optimizer steps, optimizer steps per update = "
        "optimizer steps recorded at one rollout; minibatch size (and so epochs) from the summary the trainer "
        "returns. Seeds agree unless a median is shown.",
    ]
    return Section(
        title="Batch geometry at runtime",
        findings=findings,
        tables={"batch geometry": table},
        figures={"batch geometry": plots.geometry_figure(table)},
        notes=notes,
    )


# -------------------------------------------------------------------------------------------------------------
# Speed
# -------------------------------------------------------------------------------------------------------------


def run_sps(run: RunData) -> float | None:
    """Environment steps per second of ``train()`` as the recorder timed it (steps / wall seconds)."""
    s = run.summary
    if s.get("steps") and s.get("seconds"):
        return float(s["steps"]) / float(s["seconds"])
    return run.sps


def phase_breakdown(run: RunData) -> dict[str, float]:
    """Seconds per 1,000 environment steps in ``env``, ``inference``, ``update`` and ``other``.

    Nested phases are matched on their last segment (``rollout/env`` is env); ``update`` is the top-level
    update phase; ``other`` is the rest of ``train()``'s wall time (setup, logging, checkpoints, bookkeeping).
    """
    phases = run.table("phases")
    steps = float(run.summary.get("steps") or 0)
    total = float(run.summary.get("seconds") or 0)
    if phases.empty or steps <= 0:
        return {}
    leaf = phases["name"].astype(str).str.rsplit("/", n=1).str[-1]
    top = ~phases["name"].astype(str).str.contains("/")
    env = float(phases.loc[leaf == "env", "seconds"].sum())
    inference = float(phases.loc[leaf == "inference", "seconds"].sum())
    update = float(phases.loc[top & (leaf.isin(["update", "learn", "train", "optimize"])), "seconds"].sum())
    other = max(0.0, total - env - inference - update)
    per_k = 1000.0 / steps
    return {
        "env": env * per_k,
        "inference": inference * per_k,
        "update": update * per_k,
        "other": other * per_k,
    }


@audit_section("trainer/speed", SUBSYSTEM, "Both trainers run at the same speed")
def speed(wb: Workbench) -> Section:
    """Steps per second over the seeds' runs (a bootstrap ratio interval) and the phase breakdown."""
    hypothesis = "Both trainers run at the same speed"
    pairs = runs(wb)
    if (f := guard_runs(pairs, "trainer/speed", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    return speed_section(run_data(pairs), hypothesis)


def speed_section(data: Mapping[str, Sequence[RunData]], hypothesis: str) -> Section:
    """The speed verdict on given runs (SPS ratio interval, phase breakdown)."""
    sps = {s: np.array([v for v in (run_sps(r) for r in data[s]) if v]) for s in SIDES}
    if any(len(v) == 0 for v in sps.values()):
        return Section.of(
            Finding(
                id="trainer/speed",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                evidence=Evidence(summary="no run reported its steps and duration"),
            )
        )
    ratio = stats.bootstrap_ratio_ci(sps["candidate"], sps["baseline"], seed=SEED)
    rows = []
    for side in SIDES:
        for run in data[side]:
            rows.append({"side": side, "seed": run.seed, "sps": run_sps(run), **phase_breakdown(run)})
    table = pd.DataFrame(rows)
    phase_cols = [c for c in ("env", "inference", "update", "other") if c in table]
    means = table.groupby("side")[phase_cols].mean() if phase_cols else pd.DataFrame()
    loss_text = ""
    if phase_cols and set(SIDES) <= set(means.index):
        delta = means.loc["candidate"] - means.loc["baseline"]
        worst = str(delta.idxmax())
        base_total = float(means.loc["baseline"].sum())
        loss_text = (
            f"; per 1,000 steps the candidate spends {fmt(delta[worst])} s more in {worst} "
            f"({fmt(means.loc['baseline', worst])} → {fmt(means.loc['candidate', worst])} s)"
            if delta[worst] > 0.05 * base_total
            else "; no phase stands out"
        )
    n = {s: len(sps[s]) for s in SIDES}
    beyond = ratio.high < 1 - SPEED_MIN_EFFECT or ratio.low > 1 + SPEED_MIN_EFFECT
    # With two runs a side the percentile interval is just the extremes, and machine load drifting between
    # runs can look like a speed change: a verdict needs three runs a side.
    decisive = beyond and min(n.values()) >= MIN_SEEDS_FOR_VERDICT
    text = (
        f"{fmt(np.mean(sps['candidate']))} vs {fmt(np.mean(sps['baseline']))} steps/s, ratio {fmt(ratio.point)} "
        f"[{fmt(ratio.low)}, {fmt(ratio.high)}] over {n['candidate']} and {n['baseline']} runs"
    )
    if decisive:
        slower = ratio.point < 1
        finding = Finding(
            id="trainer/speed",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.CONFIRMED if (ratio.high < 0.7 or ratio.low > 1.3) else Status.SUSPECT,
            severity=Severity.HIGH if slower else Severity.INFO,
            evidence=Evidence(
                baseline=float(np.mean(sps["baseline"])),
                candidate=float(np.mean(sps["candidate"])),
                effect=ratio.point,
                effect_label="SPS ratio candidate / baseline",
                ci=(ratio.low, ratio.high),
                ci_level=0.95,
                summary=f"the candidate is {'slower' if slower else 'faster'}: {text}{loss_text}",
                details={"sps": {s: sps[s].tolist() for s in SIDES}},
            ),
            remediation="Profile the phase that grew (the stacked bars) in the candidate; 05_env and 06_curriculum "
            "time the environment side on their own."
            if slower
            else "None needed for speed.",
            figures=["time per 1,000 steps by phase"],
        )
    elif abs(ratio.point - 1) > SPEED_MIN_EFFECT:
        finding = Finding(
            id="trainer/speed",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.NOTED,
            severity=Severity.LOW,
            evidence=Evidence(
                baseline=float(np.mean(sps["baseline"])),
                candidate=float(np.mean(sps["candidate"])),
                effect=ratio.point,
                effect_label="SPS ratio candidate / baseline",
                ci=(ratio.low, ratio.high),
                ci_level=0.95,
                summary=f"a speed gap beyond {SPEED_MIN_EFFECT:.0%} that {min(n.values())} run(s) a side cannot "
                f"confirm: {text}{loss_text}",
            ),
            remediation="Rerun with more seeds (profile standard) or time the subsystem directly (05_env).",
            figures=["time per 1,000 steps by phase"],
        )
    else:
        finding = Finding(
            id="trainer/speed",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.CLEARED,
            evidence=Evidence(
                baseline=float(np.mean(sps["baseline"])),
                candidate=float(np.mean(sps["candidate"])),
                effect=ratio.point,
                effect_label="SPS ratio candidate / baseline",
                ci=(ratio.low, ratio.high),
                ci_level=0.95,
                summary=f"no speed difference beyond {SPEED_MIN_EFFECT:.0%} can be shown: {text}{loss_text}",
            ),
        )
    notes = [
        f"Steps per second of each seed's training run as its recorder timed it (the runs of both sides ran side by "
        f"side, so machine load hits both). A verdict needs {MIN_SEEDS_FOR_VERDICT}+ runs a side and the 95% interval "
        f"of the ratio to exclude 1 by more than {SPEED_MIN_EFFECT:.0%}. Phases are seconds per 1,000 steps from the recorder's `phases` table; `other` is "
        "the rest of train() (setup, logging, checkpoints).",
    ]
    return Section(
        title="Speed and where the time goes",
        findings=[finding],
        tables={"speed by run": table},
        figures={"time per 1,000 steps by phase": plots.phase_figure(table, phase_cols)},
        notes=notes,
    )


# -------------------------------------------------------------------------------------------------------------
# Learning
# -------------------------------------------------------------------------------------------------------------


def metric_series(run: RunData, metric: str) -> pd.DataFrame:
    """The metric per finished episode (``step``, ``value``), from the episodes table; falls back to the
    logged scalar whose name ends with ``metric`` (``env/heart.get``) when episodes do not carry it."""
    episodes = run.table("episodes")
    if not episodes.empty and metric in episodes:
        out = episodes[["step", metric]].rename(columns={metric: "value"}).dropna()
        return out.reset_index(drop=True)
    scalars = run.table("scalars")
    if not scalars.empty:
        names = [n for n in scalars["name"].unique() if str(n) == metric or str(n).endswith("/" + metric)]
        if names:
            part = scalars[scalars["name"] == names[0]]
            return part[["step", "value"]].reset_index(drop=True)
    return pd.DataFrame(columns=["step", "value"])


def wall_clock(run: RunData) -> tuple[np.ndarray, np.ndarray]:
    """(steps, seconds) points of the run (the recorder's memory samples, taken once per rollout)."""
    memory = run.table("memory")
    if memory.empty:
        total = float(run.summary.get("seconds") or 0)
        steps = float(run.summary.get("steps") or 0)
        return np.array([0.0, steps]), np.array([0.0, total])
    return (
        np.concatenate([[0.0], memory["step"].to_numpy(dtype=float)]),
        np.concatenate([[0.0], memory["seconds"].to_numpy(dtype=float)]),
    )


def learning_curves(
    data: Mapping[str, Sequence[RunData]], metric: str, bins: int = CURVE_BINS
) -> pd.DataFrame:
    """Per run, the metric's mean over episodes ending in each of ``bins`` equal step intervals.

    Returns:
        ``side, seed, bin, step`` (bin centre), ``seconds`` (wall-clock at that step), ``value``, ``episodes``.
    """
    top = max((float(r.summary.get("steps") or 0) for s in SIDES for r in data[s]), default=0.0)
    edges = np.linspace(0.0, top, bins + 1) if top > 0 else np.linspace(0, 1, bins + 1)
    rows = []
    for side in SIDES:
        for run in data[side]:
            series = metric_series(run, metric)
            if series.empty:
                continue
            idx = np.clip(
                np.searchsorted(edges, series["step"].to_numpy(dtype=float), side="left") - 1, 0, bins - 1
            )
            ws, wt = wall_clock(run)
            for b in range(bins):
                values = series["value"].to_numpy(dtype=float)[idx == b]
                if len(values) == 0:
                    continue
                centre = 0.5 * (edges[b] + edges[b + 1])
                rows.append(
                    {
                        "side": side,
                        "seed": run.seed,
                        "bin": b,
                        "step": centre,
                        "seconds": float(np.interp(centre, ws, wt)),
                        "value": float(np.mean(values)),
                        "episodes": len(values),
                    }
                )
    return pd.DataFrame(rows, columns=["side", "seed", "bin", "step", "seconds", "value", "episodes"])


def final_scores(
    data: Mapping[str, Sequence[RunData]], metric: str, fraction: float = FINAL_FRACTION
) -> dict[str, dict[int, float]]:
    """Per side and seed: the metric's mean over the episodes that ended in the last ``fraction`` of the run."""
    out: dict[str, dict[int, float]] = {}
    for side in SIDES:
        out[side] = {}
        for run in data[side]:
            series = metric_series(run, metric)
            if series.empty:
                continue
            end = float(run.summary.get("steps") or series["step"].max())
            tail = series[series["step"] >= (1 - fraction) * end]
            if tail.empty:
                tail = series.tail(10)
            out[side][run.seed] = float(tail["value"].mean())
    return out


def compare_final(
    scores: Mapping[str, Mapping[int, float]], min_effect: float = LEARNING_MIN_EFFECT
) -> dict[str, Any]:
    """IQM per side with intervals, the paired IQM difference, and the probability of improvement.

    Seeds common to both sides are paired (the same seed on both sides); intervals use :data:`SEED`.

    Returns:
        ``n``, ``iqm`` / ``iqm_ci`` per side, ``diff`` (candidate - baseline IQM) with ``diff_ci``, ``relative``
        (diff over the baseline's |IQM|), ``poi`` with ``poi_ci`` (P(candidate run > baseline run)),
        ``decisive`` (at least :data:`MIN_SEEDS_FOR_VERDICT` seeds, the difference interval excludes 0, the
        probability-of-improvement interval excludes 0.5, and |relative| >= ``min_effect``), ``seeds_needed``.
    """
    common = sorted(set(scores["baseline"]) & set(scores["candidate"]))
    b = np.array([scores["baseline"][s] for s in common])
    c = np.array([scores["candidate"][s] for s in common])
    out: dict[str, Any] = {"n": len(common), "seeds": common}
    if len(common) == 0:
        out["decisive"] = False
        return out
    out["iqm"] = {"baseline": stats.iqm(b), "candidate": stats.iqm(c)}
    out["iqm_ci"] = {
        "baseline": tuple(stats.iqm_ci(b, seed=SEED)[1:]),
        "candidate": tuple(stats.iqm_ci(c, seed=SEED)[1:]),
    }
    diff = stats.paired_bootstrap_diff(c, b, stat=stats.iqm, seed=SEED)
    poi = stats.probability_of_improvement_ci(c, b, seed=SEED)
    scale = abs(out["iqm"]["baseline"]) or max(abs(out["iqm"]["candidate"]), 1e-12)
    out.update(
        diff=diff.point,
        diff_ci=(diff.low, diff.high),
        relative=diff.point / scale,
        poi=poi.point,
        poi_ci=(poi.low, poi.high),
    )
    excludes = diff.low > 0 or diff.high < 0
    poi_excludes = poi.low > 0.5 or poi.high < 0.5
    out["decisive"] = bool(
        len(common) >= MIN_SEEDS_FOR_VERDICT
        and excludes
        and poi_excludes
        and abs(out["relative"]) >= min_effect
    )
    sd = float(np.std(np.concatenate([b, c]), ddof=1)) if len(common) >= 2 else float("nan")
    effect = min_effect * scale
    out["seeds_needed"] = (
        stats.power_seeds(sd, effect) if math.isfinite(sd) and sd > 0 and effect > 0 else None
    )
    return out


@audit_section("trainer/learning", SUBSYSTEM, "The candidate learns as well as the baseline")
def learning(wb: Workbench, metric: str = "heart.get") -> Section:
    """The primary metric over seeds against steps and wall-clock; final IQM paired by seed; P(improvement)."""
    hypothesis = f"The candidate learns as well as the baseline ({metric})"
    pairs = runs(wb)
    if (f := guard_runs(pairs, "trainer/learning", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    data = run_data(pairs)
    return learning_section(data, metric, hypothesis)


def learning_section(data: Mapping[str, Sequence[RunData]], metric: str, hypothesis: str) -> Section:
    """The learning verdict on given runs (the tests feed it runs of one subject with shifted seeds: A/A)."""
    curves = learning_curves(data, metric)
    scores = final_scores(data, metric)
    if any(not scores[s] for s in SIDES):
        return Section.of(
            Finding(
                id="trainer/learning",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                evidence=Evidence(
                    summary=f"no finished episode reports `{metric}` on "
                    f"{', '.join(s for s in SIDES if not scores[s])}"
                ),
                remediation=f"Pass `{metric}` to recorder.episode(...) (or choose another metric=).",
            ),
            title="Learning",
        )
    cmp = compare_final(scores)
    iqm_b, iqm_c = cmp["iqm"]["baseline"], cmp["iqm"]["candidate"]
    text = (
        f"final {metric} IQM {fmt(iqm_c)} [{fmt(cmp['iqm_ci']['candidate'][0])}, {fmt(cmp['iqm_ci']['candidate'][1])}] "
        f"vs {fmt(iqm_b)} [{fmt(cmp['iqm_ci']['baseline'][0])}, {fmt(cmp['iqm_ci']['baseline'][1])}], paired "
        f"difference {fmt(cmp['diff'])} [{fmt(cmp['diff_ci'][0])}, {fmt(cmp['diff_ci'][1])}] ({pct(cmp['relative'])}), "
        f"P(candidate run > baseline run) {fmt(cmp['poi'], 2)} [{fmt(cmp['poi_ci'][0], 2)}, {fmt(cmp['poi_ci'][1], 2)}] "
        f"over {cmp['n']} seeds"
    )
    common = dict(
        baseline=iqm_b,
        candidate=iqm_c,
        effect=cmp["diff"],
        effect_label=f"IQM difference ({metric}), paired by seed",
        ci=cmp["diff_ci"],
        ci_level=0.95,
        test={"name": "probability of improvement", "statistic": cmp["poi"], "ci": list(cmp["poi_ci"])},
        details={"scores": {s: scores[s] for s in SIDES}, "relative": cmp["relative"]},
    )
    if cmp["decisive"]:
        worse = cmp["diff"] < 0
        finding = Finding(
            id="trainer/learning",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.CONFIRMED if worse else Status.NOTED,
            severity=Severity.CRITICAL if worse else Severity.INFO,
            evidence=Evidence(
                **common, summary=f"the candidate learns {'worse' if worse else 'better'}: {text}"
            ),
            remediation="Attribute the gap (15_summary): restore one subsystem's settings at a time."
            if worse
            else "None: the candidate is better.",
            figures=["learning curves"],
        )
    elif abs(cmp["relative"]) >= LEARNING_MIN_EFFECT:
        need = (
            f"; about {cmp['seeds_needed']} seeds per side would resolve a {LEARNING_MIN_EFFECT:.0%} gap"
            if cmp.get("seeds_needed")
            else ""
        )
        finding = Finding(
            id="trainer/learning",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.NOTED,
            severity=Severity.LOW,
            evidence=Evidence(
                **common,
                summary=f"a gap beyond {LEARNING_MIN_EFFECT:.0%} that these seeds cannot "
                f"confirm: {text}{need}",
            ),
            remediation="Run more seeds (profile=standard or thorough) before reading the learning gap.",
            figures=["learning curves"],
        )
    else:
        finding = Finding(
            id="trainer/learning",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.CLEARED,
            evidence=Evidence(**common, summary=f"no learning gap beyond {LEARNING_MIN_EFFECT:.0%}: {text}"),
        )
    table = pd.DataFrame(
        [{"side": s, "seed": seed, f"final {metric}": v} for s in SIDES for seed, v in scores[s].items()]
    )
    notes = [
        f"Final performance: mean `{metric}` of the episodes that ended in the last {FINAL_FRACTION:.0%} of each run. "
        f"Intervals: percentile bootstrap (2,000 resamples, seed {SEED}), the difference paired by seed; a verdict "
        f"needs at least {MIN_SEEDS_FOR_VERDICT} seeds, both intervals clear of no-difference, and a gap of at least "
        f"{LEARNING_MIN_EFFECT:.0%} of the baseline's IQM, so that identical setups stay quiet.",
        "Bands are bootstrap intervals of the mean over seeds per step bin; wall-clock positions come from the "
        "recorder's per-rollout timestamps.",
    ]
    return Section(
        title=f"Learning: {metric} over seeds",
        findings=[finding],
        tables={"final performance": table},
        figures={"learning curves": plots.learning_figure(curves, metric, seed=SEED)},
        notes=notes,
    )


# -------------------------------------------------------------------------------------------------------------
# Stability
# -------------------------------------------------------------------------------------------------------------


def collapsed_runs(curves: pd.DataFrame, drop: float = 0.5) -> dict[str, list[int]]:
    """Runs that fell back after their peak: the mean of the last three bins below ``drop`` x the peak.

    The peak is the best of the run's curve smoothed over three bins (one lucky bin is not a peak), it must come
    before the last three bins, be positive, and reach a quarter of the best peak of any run.
    """
    out: dict[str, list[int]] = {s: [] for s in SIDES}
    if curves.empty:
        return out
    smoothed = {
        key: part.sort_values("bin")["value"].rolling(3, center=True, min_periods=1).mean().to_numpy()
        for key, part in curves.groupby(["side", "seed"])
    }
    ceiling = max((float(np.max(v)) for v in smoothed.values()), default=0.0)
    for (side, seed), part in curves.groupby(["side", "seed"]):
        values = part.sort_values("bin")["value"].to_numpy(dtype=float)
        smooth = smoothed[(side, seed)]
        if len(values) < 5:
            continue
        peak_at = int(np.argmax(smooth))
        peak = float(smooth[peak_at])
        last = float(np.mean(values[-3:]))
        if peak > 0 and peak >= 0.25 * ceiling and peak_at < len(values) - 3 and last < drop * peak:
            out[str(side)].append(int(seed))
    return out


@audit_section("trainer/stability", SUBSYSTEM, "The candidate is as stable across seeds as the baseline")
def stability(wb: Workbench, metric: str = "heart.get") -> Section:
    """Spread of final performance across seeds, and runs that collapsed after their peak."""
    hypothesis = f"The candidate is as stable across seeds as the baseline ({metric})"
    pairs = runs(wb)
    if (f := guard_runs(pairs, "trainer/stability", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    return stability_section(run_data(pairs), metric, hypothesis)


def stability_section(data: Mapping[str, Sequence[RunData]], metric: str, hypothesis: str) -> Section:
    scores = final_scores(data, metric)
    curves = learning_curves(data, metric)
    collapsed = collapsed_runs(curves)
    vals = {s: np.array(list(scores[s].values())) for s in SIDES}
    n = {s: len(vals[s]) for s in SIDES}
    spread = {s: float(np.std(vals[s], ddof=1)) if n[s] >= 2 else float("nan") for s in SIDES}
    ratio = None
    if min(n.values()) >= MIN_SEEDS_FOR_VERDICT and spread["baseline"] > 0:
        ratio = stats.bootstrap_ratio_ci(
            vals["candidate"],
            vals["baseline"],
            stat=lambda x, axis=None: np.std(x, axis=axis, ddof=1),
            seed=SEED,
        )
    text = (
        f"spread (sd over seeds) {fmt(spread['candidate'])} vs {fmt(spread['baseline'])}; collapsed runs "
        f"{len(collapsed['candidate'])}/{n['candidate']} vs {len(collapsed['baseline'])}/{n['baseline']}"
    )
    more_collapses = (
        len(collapsed["candidate"]) >= 2 and len(collapsed["candidate"]) >= len(collapsed["baseline"]) + 2
    )
    wider = ratio is not None and ratio.low > 2.0
    if min(n.values()) >= MIN_SEEDS_FOR_VERDICT and (more_collapses or wider):
        status, severity = Status.SUSPECT, Severity.MEDIUM
        summary = (
            "the candidate is less stable: "
            + text
            + (f", spread ratio {fmt(ratio.point)} [{fmt(ratio.low)}, {fmt(ratio.high)}]" if ratio else "")
        )
    elif more_collapses or (ratio is not None and ratio.point > 2):
        status, severity = Status.NOTED, Severity.LOW
        summary = f"possibly less stable, not resolvable with {min(n.values())} seeds: " + text
    else:
        status, severity = Status.CLEARED, Severity.INFO
        summary = "no sign of instability: " + text
    finding = Finding(
        id="trainer/stability",
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=Evidence(
            baseline=spread["baseline"],
            candidate=spread["candidate"],
            effect=ratio.point if ratio else None,
            effect_label="spread ratio candidate / baseline",
            ci=(ratio.low, ratio.high) if ratio else None,
            ci_level=0.95 if ratio else None,
            summary=summary,
            details={"collapsed": collapsed},
        ),
        remediation="Look at the collapsed seeds' curves (learning rate, entropy, value loss around the drop)."
        if status.is_flag
        else "",
        figures=["learning curves"],
    )
    table = pd.DataFrame(
        [{"side": s, "seeds": n[s], "sd of final": spread[s], "collapsed seeds": collapsed[s]} for s in SIDES]
    )
    return Section(
        title="Stability across seeds",
        findings=[finding],
        tables={"stability": table},
        notes=[
            "A run has collapsed when its last three bins average below half of its peak (the best of its curve "
            "smoothed over three bins, reached before the end and at least a quarter of any run's peak). A verdict "
            f"needs {MIN_SEEDS_FOR_VERDICT}+ seeds."
        ],
    )


def audit_all(wb: Workbench, metric: str = "heart.get") -> list[Section]:
    """Every trainer check, in notebook order."""
    return [geometry(wb), speed(wb), learning(wb, metric=metric), stability(wb, metric=metric)]
