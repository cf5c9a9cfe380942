"""The batch geometry each trainer ran, read from what its runs did, beside what its config declares.

Case 002 trained 14 environments instead of 128 because a memory heuristic overrode the config, and case
000's automatic "debug mode" cut the batch on any machine without a GPU; both configs looked right. So the
geometry is read from the runs: the recorder's episodes carry environment ids, its optimizer steps carry the
environment step they happened at, and the trainer's own summary may report its sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES, find_keys, side_finding
from rlaudit.trainer.runs import RunData, TrainingRuns, training_runs

CONFIG_GEOMETRY: dict[str, tuple[str, ...]] = {
    "num_envs": ("num_envs", "n_envs", "num_workers", "envs", "num_environments"),
    "rollout_length": ("num_steps", "n_steps", "rollout_length", "unroll_length", "horizon", "bptt_horizon"),
    "minibatches": ("num_minibatches", "n_minibatches", "minibatches"),
    "minibatch_size": ("minibatch_size", "mini_batch_size"),
    "epochs": ("update_epochs", "n_epochs", "epochs", "ppo_epochs", "num_epochs"),
    "batch_size": ("batch_size", "rollout_batch_size"),
}

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
    if not updates.empty and {"group", "step"} <= set(updates):
        g0 = updates[updates["group"] == 0]
        per_step = g0.groupby("step").size().sort_index()
        steps = per_step.index.to_numpy(dtype=float)
        if len(steps) >= 2:
            out["batch"] = int(np.median(np.diff(steps)))
        elif len(steps) == 1:
            out["batch"] = int(steps[0])
        if len(per_step):
            out["opt_steps_per_rollout"] = int(np.median(per_step.to_numpy()))
        out["rollouts"] = len(per_step)
        out["optimizer_steps"] = len(g0)
    summary = {**run.result.get("summary", {})}
    for key in ("num_envs", "num_steps", "batch_size", "minibatch_size"):
        if isinstance(summary.get(key), int | float) and not isinstance(summary.get(key), bool):
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
    if out.get("batch") and out.get("minibatches"):
        out.setdefault("minibatch_size", out["batch"] / out["minibatches"])
    if out.get("batch") and out.get("minibatch_size") and out.get("epochs"):
        out["opt_steps_per_rollout"] = out["batch"] / out["minibatch_size"] * out["epochs"]
    if out.get("batch"):
        out["updates_per_million"] = 1e6 / out["batch"]
        if out.get("opt_steps_per_rollout"):
            out["opt_steps_per_million"] = out["updates_per_million"] * out["opt_steps_per_rollout"]
    return out


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


def _ignored(per_side: Mapping[str, Mapping[str, Any]], side: str) -> list[str]:
    """Quantities whose runtime value on ``side`` differs from its config's."""
    cfg, rt = per_side[side]["config"], per_side[side]["runtime"]
    return [
        k for k in CHECKED if cfg.get(k) is not None and rt.get(k) is not None and not _close(cfg[k], rt[k])
    ]


LABELS = dict(GEOMETRY_ROWS)


def _ignored_finding(c: Check, per_side: Mapping[str, Mapping[str, Any]], side: str, alike: bool) -> Finding:
    cfg, rt = per_side[side]["config"], per_side[side]["runtime"]
    off = _ignored(per_side, side)
    parts = [
        f"{LABELS[k]}: config {fmt(cfg[k])}"
        + (f" ({cfg[k + '_key']})" if cfg.get(k + "_key") else "")
        + f", ran {fmt(rt[k])}"
        for k in off
    ]
    return side_finding(
        c,
        side,
        alike,
        id=f"trainer/geometry-{side}",
        hypothesis=f"The {side}'s trainer runs the geometry its config declares",
        baseline={k: per_side["baseline"]["runtime"].get(k) for k in off},
        candidate={k: per_side["candidate"]["runtime"].get(k) for k in off},
        effect=float(rt[off[0]]) / float(cfg[off[0]]) if cfg[off[0]] else None,
        effect_label=f"{LABELS[off[0]]}: runtime / config ({side})",
        summary=f"the {side}'s trainer ignores its config: "
        + "; ".join(parts)
        + f" (updates per 1M steps: {fmt(rt.get('updates_per_million'))} vs "
        f"{fmt(cfg.get('updates_per_million'))} declared)",
        details={"config": cfg, "runtime": rt},
        remediation=f"Find the code that overrides the {side}'s {LABELS[off[0]]} at runtime (a hardware or "
        "platform heuristic, a debug mode) and make it respect the config or fail loudly.",
        figures=["batch geometry"],
    )


@check("trainer/geometry", title="Batch geometry at runtime", needs=training_runs)
def geometry(c: Check, runs: TrainingRuns) -> Section:
    """Both trainers run the batch geometry their configs declare, and the same one.

    Environments, rollout length, batch and minibatch sizes, epochs and updates per 1M steps, as run.
    """
    from rlaudit.trainer import plots
    from rlaudit.trainer.replay import learns_off_policy

    if all(learns_off_policy(runs[side]) for side in SIDES):
        return c.section(
            c.skipped(
                "rollout geometry: not applicable to a value learner",
                "Nothing to do: both learners sample batches from a replay buffer; trainer/replay-ratio reads "
                "their replay ratio, learning_starts, train_freq and batch size.",
            )
        )
    table, per_side = geometry_table(runs.data)
    unknown = [side for side in SIDES if not per_side[side]["runtime"].get("batch")]
    if unknown:
        c.missing(
            "batch size at runtime (no optimizer steps recorded, and train() returns no batch_size)",
            "Call recorder.watch(policy, optimizer) in train() before the first update (the batch is read "
            "from the steps at which updates happen), or return num_envs and batch_size in train()'s summary.",
            unknown,
        )
    ignored = {side: _ignored(per_side, side) for side in SIDES}
    rb, rc = per_side["baseline"]["runtime"], per_side["candidate"]["runtime"]
    differ = [
        k for k in CHECKED if rb.get(k) is not None and rc.get(k) is not None and not _close(rb[k], rc[k])
    ]
    alike = bool(ignored["baseline"]) and ignored["baseline"] == ignored["candidate"] and not differ
    findings = [_ignored_finding(c, per_side, side, alike) for side in SIDES if ignored[side]]
    if differ and not (ignored["candidate"] and not alike):
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH,
                baseline={k: rb[k] for k in differ},
                candidate={k: rc[k] for k in differ},
                summary="the two trainers run different batch geometries (as their configs say): "
                + "; ".join(f"{LABELS[k]} {fmt(rb[k])} → {fmt(rc[k])}" for k in differ),
                remediation="Restore the baseline's rollout and minibatch sizes in the candidate's config "
                "(or let attribution measure what the change costs).",
                figures=["batch geometry"],
            )
        )
    if not findings:
        # `differ` compared only what both trainers report; one reported by one side only is no agreement (a
        # quantity neither reports, such as the optional minibatch size, is not claimed)
        reported = [k for k in CHECKED if rb.get(k) is not None or rc.get(k) is not None]
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline={k: rb.get(k) for k in ("num_envs", "batch")},
                candidate={k: rc.get(k) for k in ("num_envs", "batch")},
                measured={s: {LABELS[k]: per_side[s]["runtime"].get(k) for k in reported} for s in SIDES},
                summary=f"same geometry as configured on both sides: {fmt(rb.get('num_envs'))} environments x "
                f"{fmt(rb.get('rollout_length'))} steps = {fmt(rb.get('batch'))} per update, "
                f"{fmt(rb.get('opt_steps_per_rollout'))} optimizer steps per update",
            )
        )
    return c.section(
        findings,
        tables={"batch geometry": table},
        figures={"batch geometry": plots.geometry_figure(table)},
        notes="Runtime values come from the recorder: environments = distinct environment ids among finished "
        "episodes, batch = environment steps between consecutive rollouts' optimizer steps, optimizer steps per "
        "update = optimizer steps recorded at one rollout; minibatch size (and so epochs) from the summary the "
        "trainer returns. Seeds agree unless a median is shown.",
    )
