"""Logging audit: what was written to the logs against what happened in training.

Case 002 trained blind: its TensorBoard files existed and held zero scalars. Case 000 asked whether the
statistics' averaging had changed. Here each subject's own logs (TensorBoard, CSV or JSONL under its
``log_dir``, read by :mod:`rlaudit.logs`) are compared with each other (which scalars exist, which were
removed, added or renamed) and with the ground truth the recorder saw episode by episode: a logged episodic
return (or ``heart.get``) is matched against the ways it could have been averaged (the last N episodes, all
episodes so far, the episodes since the previous log, reward per step), and a different definition shows as a
systematic gap, named. Finally, how often each side logs and what it costs.

Absolute imports only: this package is ``rlaudit.logging``; ``import logging`` in any rlaudit module still
resolves to the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.compare import match_near_names
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.logs import log_inventory, read_scalars
from rlaudit.notebook import Section, audit_section
from rlaudit.trainer.common import SIDES, fmt, guard_runs, stack_tables
from rlaudit.trainer.runs import RunData, run_data, runs
from rlaudit.workbench import Workbench

SUBSYSTEM = "logging"
SEED = 0
WINDOWS = (1, 10, 20, 50, 100, 200, 500, 1000)
MATCH_RTOL = 1e-4
RETURN_TAGS = (
    "episodic_return",
    "ep_rew_mean",
    "episode_reward",
    "episode_return",
    "ep_return",
    "mean_return",
    "return",
)


# -------------------------------------------------------------------------------------------------------------
# Reading each run's logs
# -------------------------------------------------------------------------------------------------------------


def run_logs(run: RunData) -> tuple[pd.DataFrame, pd.DataFrame, Path | None]:
    """``(scalars, inventory, log_dir)`` of one run's own log files (empty frames when there are none)."""
    from rlaudit.logs import empty_scalars

    path = run.log_dir
    if path is None or not Path(path).exists():
        return (
            empty_scalars(),
            pd.DataFrame(columns=["file", "format", "bytes", "records", "scalars", "tags", "truncated"]),
            path,
        )
    return read_scalars(path), log_inventory(path), path


def side_logs(data: Mapping[str, Sequence[RunData]]) -> dict[str, dict[str, Any]]:
    """Per side: every run's scalars (with a ``seed`` column), inventories, tags, and the recorder's names."""
    out: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        frames, inventories, dirs = [], [], []
        for run in data[side]:
            scalars, inventory, path = run_logs(run)
            frames.append(scalars.assign(seed=run.seed))
            inventories.append(inventory.assign(seed=run.seed))
            dirs.append(path)
        scalars = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        inventory = pd.concat(inventories, ignore_index=True) if inventories else pd.DataFrame()
        recorder = stack_tables({side: data[side]}, "scalars")
        out[side] = {
            "scalars": scalars,
            "inventory": inventory,
            "tags": sorted(set(scalars["tag"])) if not scalars.empty else [],
            "recorder_names": sorted(set(recorder["name"])) if not recorder.empty else [],
            "dirs": dirs,
            "has_log_dir": any(d is not None for d in dirs),
        }
    return out


# -------------------------------------------------------------------------------------------------------------
# Presence
# -------------------------------------------------------------------------------------------------------------


def tag_changes(base: Sequence[str], cand: Sequence[str]) -> dict[str, Any]:
    """Tags kept, removed, added and renamed (near names matched by :func:`rlaudit.compare.match_near_names`)."""
    renamed = match_near_names(base, cand)
    renamed_old = {o for o, _, _ in renamed}
    renamed_new = {n for _, n, _ in renamed}
    return {
        "kept": sorted(set(base) & set(cand)),
        "removed": sorted(set(base) - set(cand) - renamed_old),
        "added": sorted(set(cand) - set(base) - renamed_new),
        "renamed": renamed,
    }


@audit_section("logging/presence", SUBSYSTEM, "Both setups write the same scalars to their logs")
def presence(wb: Workbench) -> Section:
    """Which scalars each side's log files hold: empty logs, removed, added and renamed tags."""
    hypothesis = "Both setups write the same scalars to their logs"
    pairs = runs(wb)
    if (f := guard_runs(pairs, "logging/presence", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    data = run_data(pairs)
    logs = side_logs(data)
    return presence_section(logs, hypothesis)


def presence_section(logs: Mapping[str, Mapping[str, Any]], hypothesis: str) -> Section:
    missing = {s: ["log_dir"] for s in SIDES if not logs[s]["has_log_dir"]}
    if len(missing) == 2:
        return Section.of(Finding.skipped("logging/presence", SUBSYSTEM, hypothesis, missing))
    findings: list[Finding] = []
    for side in SIDES:
        inv, tags, names = logs[side]["inventory"], logs[side]["tags"], logs[side]["recorder_names"]
        if not logs[side]["has_log_dir"]:
            continue
        files = len(inv)
        if not tags:
            size = int(inv["bytes"].sum()) if files else 0
            findings.append(
                Finding(
                    id=f"logging/empty-logs-{side}",
                    subsystem=SUBSYSTEM,
                    hypothesis=f"The {side}'s log files hold the scalars it trains on",
                    status=Status.CONFIRMED if side == "candidate" else Status.NOTED,
                    severity=Severity.HIGH if side == "candidate" else Severity.LOW,
                    evidence=Evidence(
                        baseline=len(logs["baseline"]["tags"]),
                        candidate=len(logs["candidate"]["tags"]),
                        effect=float(len(names)),
                        effect_label="scalars the trainer logged through the recorder",
                        summary=f"the {side}'s log directory holds {files} log file(s) ({size:,} bytes) with zero scalars, "
                        f"while its trainer logged {len(names)} scalar names through the recorder: anyone watching "
                        "TensorBoard trains blind (case 002)",
                        details={"files": inv.to_dict("records")},
                    ),
                    remediation=f"Check the {side}'s log writer: the tags it filters or the namespaces it allows, "
                    "flushes and close(); a test that reads the event file back catches it.",
                    figures=["tags per side"],
                )
            )
            continue
        lost = [n for n in names if n not in tags]
        if lost and side == "candidate":
            findings.append(
                Finding(
                    id="logging/dropped-scalars",
                    subsystem=SUBSYSTEM,
                    hypothesis="Every scalar the candidate's trainer logs reaches its log files",
                    status=Status.SUSPECT,
                    severity=Severity.MEDIUM,
                    evidence=Evidence(
                        baseline=None,
                        candidate=lost,
                        effect=float(len(lost)),
                        effect_label="recorder scalars missing from the log files",
                        summary=f"{len(lost)} of the {len(names)} scalars the candidate's trainer logged never "
                        f"reach its log files: {', '.join(lost[:6])}",
                    ),
                    remediation="Write every logged scalar to the log writer (check its tag filter).",
                )
            )
    changes = tag_changes(logs["baseline"]["tags"], logs["candidate"]["tags"])
    both_have = logs["baseline"]["tags"] and logs["candidate"]["tags"]
    if both_have and changes["removed"]:
        findings.append(
            Finding(
                id="logging/removed-tags",
                subsystem=SUBSYSTEM,
                hypothesis="The candidate logs every scalar the baseline logs",
                status=Status.SUSPECT,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline=len(logs["baseline"]["tags"]),
                    candidate=len(logs["candidate"]["tags"]),
                    effect=float(len(changes["removed"])),
                    effect_label="tags removed",
                    summary=f"{len(changes['removed'])} tag(s) the baseline logs are gone: "
                    + ", ".join(changes["removed"][:8]),
                ),
                remediation="Log the removed scalars again (dashboards and alerts reading them went blank).",
                figures=["tags per side"],
            )
        )
    if both_have and (changes["renamed"] or changes["added"]):
        parts = [f"{o} → {n}" for o, n, _ in changes["renamed"]]
        findings.append(
            Finding(
                id="logging/renamed-tags",
                subsystem=SUBSYSTEM,
                hypothesis="The scalars keep their names",
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    summary=(f"renamed: {', '.join(parts)}" if parts else "")
                    + ("; " if parts and changes["added"] else "")
                    + (f"added: {', '.join(changes['added'][:8])}" if changes["added"] else ""),
                    details=changes,
                ),
                remediation="Update dashboards to the new names (or keep the old ones as aliases).",
            )
        )
    if not any(f.status.is_flag for f in findings) and both_have:
        findings.append(
            Finding(
                id="logging/presence",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=len(logs["baseline"]["tags"]),
                    candidate=len(logs["candidate"]["tags"]),
                    summary=f"both log files hold the same {len(changes['kept'])} scalar tags"
                    + (f" (plus {len(changes['added'])} new)" if changes["added"] else ""),
                ),
            )
        )
    if missing:
        findings.append(Finding.skipped("logging/presence-side", SUBSYSTEM, hypothesis, missing))
    every = sorted(
        set(logs["baseline"]["tags"])
        | set(logs["candidate"]["tags"])
        | set(logs["baseline"]["recorder_names"])
        | set(logs["candidate"]["recorder_names"])
    )
    table = pd.DataFrame(
        [
            {
                "scalar": t,
                **{f"{s} log file": t in logs[s]["tags"] for s in SIDES},
                **{f"{s} recorder": t in logs[s]["recorder_names"] for s in SIDES},
            }
            for t in every
        ]
    )
    inventory = pd.concat([logs[s]["inventory"].assign(side=s) for s in SIDES], ignore_index=True)
    from rlaudit.logging import plots

    return Section(
        title="Which scalars are written",
        findings=findings,
        tables={"tags per side": table, "log files": inventory},
        figures={"tags per side": plots.presence_figure(table)},
    )


# -------------------------------------------------------------------------------------------------------------
# Truth
# -------------------------------------------------------------------------------------------------------------


def find_tag(tags: Sequence[str], wanted: Sequence[str]) -> str | None:
    """The first tag whose last ``/`` segment is one of ``wanted`` (in order of ``wanted``)."""
    by_leaf: dict[str, str] = {}
    for tag in tags:
        by_leaf.setdefault(str(tag).rsplit("/", 1)[-1].lower(), tag)
    for name in wanted:
        if name.lower() in by_leaf:
            return by_leaf[name.lower()]
    return None


def definitions(episodes: pd.DataFrame, key: str, steps: Sequence[int]) -> dict[str, np.ndarray]:
    """Every candidate definition of a logged episode statistic, evaluated at each logged step.

    Args:
        episodes: The recorder's episodes of one run in finishing order (``step`` and ``key`` columns;
            ``length`` for the per-step definition).
        key: The statistic (``return``, ``heart.get``).
        steps: The logged steps; an episode counts at a log when it finished at or before that step.

    Returns:
        ``{definition: values (len(steps),)}``, NaN where no episode was available; definitions are
        ``all episodes so far``, ``episodes since the previous log``, ``last N episodes`` for N in
        :data:`WINDOWS`, and (for returns) ``reward per step since the previous log``.
    """
    ep_steps = episodes["step"].to_numpy(dtype=float)
    values = episodes[key].to_numpy(dtype=float)
    lengths = episodes["length"].to_numpy(dtype=float) if "length" in episodes else None
    counts = np.searchsorted(ep_steps, np.asarray(steps, dtype=float), side="right")
    csum = np.concatenate([[0.0], np.cumsum(values)])
    out: dict[str, np.ndarray] = {}

    def window_mean(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        n = hi - lo
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, (csum[hi] - csum[lo]) / np.maximum(n, 1), np.nan)

    zeros = np.zeros_like(counts)
    out["all episodes so far"] = window_mean(zeros, counts)
    previous = np.concatenate([[0], counts[:-1]])
    out["episodes since the previous log"] = window_mean(previous, counts)
    for w in WINDOWS:
        out[f"last {w} episodes"] = window_mean(np.maximum(counts - w, 0), counts)
    if lengths is not None and key == "return":
        lsum = np.concatenate([[0.0], np.cumsum(lengths)])
        with np.errstate(invalid="ignore", divide="ignore"):
            out["reward per step since the previous log"] = np.where(
                counts > previous,
                (csum[counts] - csum[previous]) / np.maximum(lsum[counts] - lsum[previous], 1e-12),
                np.nan,
            )
    return out


def match_definitions(
    logged: pd.DataFrame, episodes_by_seed: Mapping[int, pd.DataFrame], key: str
) -> pd.DataFrame:
    """How well each definition reproduces the logged values, over all seeds' log points.

    Args:
        logged: ``seed``, ``step``, ``value`` of the logged statistic.
        episodes_by_seed: The recorder's episodes per seed.
        key: The episode statistic.

    Returns:
        One row per definition: ``definition``, ``max_error``, ``mean_gap`` (logged - definition, mean over
        points), ``relative_gap`` (mean gap over the mean |definition|), ``points``, ``match``.
    """
    rows: dict[str, dict[str, list[float]]] = {}
    for seed, part in logged.groupby("seed"):
        episodes = episodes_by_seed.get(int(seed))
        if episodes is None or episodes.empty or key not in episodes:
            continue
        part = part.sort_values("step")
        defs = definitions(episodes, key, part["step"].to_numpy())
        for name, values in defs.items():
            ok = np.isfinite(values)
            slot = rows.setdefault(name, {"logged": [], "defined": []})
            slot["logged"].extend(part["value"].to_numpy(dtype=float)[ok].tolist())
            slot["defined"].extend(values[ok].tolist())
    out = []
    for name, slot in rows.items():
        lv, dv = np.array(slot["logged"]), np.array(slot["defined"])
        if len(lv) == 0:
            continue
        scale = max(float(np.mean(np.abs(dv))), 1e-9)
        err = float(np.max(np.abs(lv - dv)))
        out.append(
            {
                "definition": name,
                "max_error": err,
                "mean_gap": float(np.mean(lv - dv)),
                "relative_gap": float(np.mean(lv - dv)) / scale,
                "points": len(lv),
                "match": err <= MATCH_RTOL * max(scale, float(np.max(np.abs(dv)))) + 1e-6,
            }
        )
    return pd.DataFrame(
        out, columns=["definition", "max_error", "mean_gap", "relative_gap", "points", "match"]
    )


def logged_statistic(
    logs: Mapping[str, Any], data: Sequence[RunData], key: str
) -> tuple[pd.DataFrame, str | None, str]:
    """The logged values of an episode statistic: from the log files when they have it, else the recorder's
    scalars (what train() passed to recorder.log). Returns ``(seed/step/value frame, tag, source)``."""
    wanted = RETURN_TAGS if key == "return" else (key,)
    tag = find_tag(logs["tags"], wanted)
    if tag is not None:
        part = logs["scalars"][logs["scalars"]["tag"] == tag]
        return part[["seed", "step", "value"]].reset_index(drop=True), tag, "log files"
    recorder = stack_tables({"x": data}, "scalars")
    if recorder.empty:
        return pd.DataFrame(columns=["seed", "step", "value"]), None, "none"
    tag = find_tag(recorder["name"].unique().tolist(), wanted)
    if tag is None:
        return pd.DataFrame(columns=["seed", "step", "value"]), None, "none"
    part = recorder[recorder["name"] == tag]
    return part[["seed", "step", "value"]].reset_index(drop=True), tag, "recorder scalars"


def _describe(matches: Sequence[str]) -> str:
    if not matches:
        return "no known definition"
    order = [
        "all episodes so far",
        "episodes since the previous log",
        "reward per step since the previous log",
    ]
    ranked = sorted(matches, key=lambda m: order.index(m) if m in order else 10 + _window(m))
    first = ranked[0]
    others = [m for m in ranked[1:] if m.startswith("last ")]
    return first + (
        f" (equally: {', '.join(others[:2])}: too few episodes to tell apart)"
        if others and first.startswith("all")
        else ""
    )


def _window(name: str) -> int:
    try:
        return int(name.split()[1])
    except (IndexError, ValueError):
        return 10**6


def truth_finding(
    key: str, label: str, tables: Mapping[str, pd.DataFrame], tags: Mapping[str, tuple[str | None, str]]
) -> Finding:
    """Compare how the two sides define a logged statistic, and the systematic gap between the definitions."""
    fid = f"logging/truth-{'return' if key == 'return' else key.replace('.', '-')}"
    hypothesis = f"The logged {label} is the same statistic of the episodes on both sides"
    matches = {s: tables[s][tables[s]["match"]]["definition"].tolist() for s in SIDES}
    common = set(matches["baseline"]) & set(matches["candidate"])
    base_def = _describe(matches["baseline"])
    cand_def = _describe(matches["candidate"])
    src = {s: f"{tags[s][0]} ({tags[s][1]})" for s in SIDES}
    if matches["baseline"] and not common:
        # the gap: the candidate's logged values against the baseline's definition, on the candidate's episodes
        chosen = sorted(matches["baseline"], key=lambda m: (0 if m.startswith("last") else 1, _window(m)))[0]
        row = tables["candidate"][tables["candidate"]["definition"] == chosen]
        gap = float(row["relative_gap"].iloc[0]) if len(row) else float("nan")
        mean_gap = float(row["mean_gap"].iloc[0]) if len(row) else float("nan")
        return Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.CONFIRMED,
            severity=Severity.MEDIUM,
            evidence=Evidence(
                baseline=base_def,
                candidate=cand_def,
                effect=gap,
                effect_label=f"mean relative gap of the candidate's logged {label} to the baseline's definition",
                summary=f"the candidate's logged {label} ({src['candidate']}) is the mean over {cand_def}; the "
                f"baseline's ({src['baseline']}) is the mean over {base_def}. Against the baseline's definition the "
                f"candidate's curve is off by {fmt(mean_gap)} on average ({gap:+.0%}): a systematic gap from the "
                "averaging alone, not from training",
                details={"matches": matches},
            ),
            remediation=f"Average the candidate's logged {label} as the baseline does ({base_def}) before comparing "
            "curves; compare runs on the recorder's per-episode truth meanwhile.",
            figures=[f"logged vs recorded {label}"],
        )
    if not matches["candidate"]:
        nearest = tables["candidate"].sort_values("max_error").head(1)
        near = nearest["definition"].iloc[0] if len(nearest) else "—"
        gap = float(nearest["relative_gap"].iloc[0]) if len(nearest) else float("nan")
        return Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.SUSPECT if matches["baseline"] else Status.NOTED,
            severity=Severity.MEDIUM,
            evidence=Evidence(
                baseline=base_def,
                candidate=cand_def,
                effect=gap,
                effect_label=f"mean relative gap to the nearest definition ({near})",
                summary=f"the candidate's logged {label} ({src['candidate']}) matches no average of the "
                f"episodes the recorder saw; nearest: {near}, off by {gap:+.0%} on average; the baseline's "
                f"is {base_def}",
            ),
            remediation=f"Trace how the candidate computes its logged {label} (filtering, window, per-step averaging).",
            figures=[f"logged vs recorded {label}"],
        )
    return Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=Status.CLEARED,
        evidence=Evidence(
            baseline=base_def,
            candidate=cand_def,
            summary=f"both log the {label} as the mean over {_describe(sorted(common))} of the episodes "
            f"the recorder saw (to {MATCH_RTOL:g} relative)",
        ),
    )


@audit_section("logging/truth", SUBSYSTEM, "The logged episode statistics agree with what happened")
def truth(wb: Workbench, metric: str = "heart.get") -> Section:
    """The logged episodic return and ``metric`` against the recorder's per-episode ground truth."""
    hypothesis = "The logged episode statistics agree with what happened"
    pairs = runs(wb)
    if (f := guard_runs(pairs, "logging/truth", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    data = run_data(pairs)
    return truth_section(data, side_logs(data), metric)


def truth_section(
    data: Mapping[str, Sequence[RunData]], logs: Mapping[str, Mapping[str, Any]], metric: str
) -> Section:
    from rlaudit.logging import plots

    findings, tables, figures = [], {}, {}
    for key, label in (("return", "episodic return"), (metric, metric)):
        per_side, tags, logged_frames, ok = {}, {}, {}, True
        for side in SIDES:
            episodes = {r.seed: r.table("episodes") for r in data[side]}
            logged, tag, source = logged_statistic(logs[side], data[side], key)
            tags[side] = (tag, source)
            if logged.empty or not any(key in e for e in episodes.values()):
                ok = False
                break
            per_side[side] = match_definitions(logged, episodes, key)
            logged_frames[side] = (logged, episodes)
        if not ok:
            lacking = [s for s in SIDES if s not in per_side]
            findings.append(
                Finding(
                    id=f"logging/truth-{'return' if key == 'return' else key.replace('.', '-')}",
                    subsystem=SUBSYSTEM,
                    hypothesis=f"The logged {label} is the same statistic of the episodes on both sides",
                    status=Status.NOTED,
                    severity=Severity.LOW,
                    evidence=Evidence(
                        summary=f"{label} cannot be checked on {', '.join(lacking)}: it is either not logged "
                        "or not reported per episode to the recorder"
                    ),
                    remediation=f"Log the {label} and pass it to recorder.episode(...).",
                )
            )
            continue
        findings.append(truth_finding(key, label, per_side, tags))
        merged = pd.concat([per_side[s].assign(side=s) for s in SIDES], ignore_index=True)
        tables[f"definitions of the logged {label}"] = merged.pivot_table(
            index="definition", columns="side", values=["max_error", "relative_gap", "match"], aggfunc="first"
        )
        figures[f"logged vs recorded {label}"] = plots.truth_figure(logged_frames, key, label)
    notes = [
        "Ground truth is the recorder's table of finished episodes (one row per episode, in finishing order). At each "
        "logged step every definition is computed from the episodes finished by then; the one that reproduces the "
        "logged values (to 1e-4 relative) is how that side averages. Where the log files lack the statistic, the "
        "values the trainer passed to recorder.log are used instead (said in the finding).",
    ]
    return Section(
        title="Logged statistics against the recorded episodes",
        findings=findings,
        tables=tables,
        figures=figures,
        notes=notes,
    )


# -------------------------------------------------------------------------------------------------------------
# Frequency and overhead
# -------------------------------------------------------------------------------------------------------------


@audit_section("logging/frequency", SUBSYSTEM, "Both setups log about as often, at a similar cost")
def frequency(wb: Workbench) -> Section:
    """Log points per 10,000 steps, bytes written, and the wall time outside the trainer's timed phases."""
    hypothesis = "Both setups log about as often, at a similar cost"
    pairs = runs(wb)
    if (f := guard_runs(pairs, "logging/frequency", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    data = run_data(pairs)
    logs = side_logs(data)
    rows = []
    for side in SIDES:
        for run in data[side]:
            steps = float(run.summary.get("steps") or 0) or 1.0
            recorder = run.table("scalars")
            scal = logs[side]["scalars"]
            mine = scal[scal["seed"] == run.seed] if not scal.empty else scal
            inv = logs[side]["inventory"]
            inv = inv[inv["seed"] == run.seed] if not inv.empty else inv
            phases = run.table("phases")
            timed = (
                float(phases.loc[~phases["name"].astype(str).str.contains("/"), "seconds"].sum())
                if not phases.empty
                else 0.0
            )
            total = float(run.summary.get("seconds") or 0)
            rows.append(
                {
                    "side": side,
                    "seed": run.seed,
                    "log points per 10k steps": (recorder["step"].nunique() if not recorder.empty else 0)
                    / steps
                    * 1e4,
                    "scalars per log point": (len(recorder) / max(1, recorder["step"].nunique()))
                    if not recorder.empty
                    else 0,
                    "log-file scalars": len(mine),
                    "log-file bytes per 10k steps": (float(inv["bytes"].sum()) if len(inv) else 0.0)
                    / steps
                    * 1e4,
                    "untimed seconds per 10k steps": max(0.0, total - timed) / steps * 1e4,
                }
            )
    table = pd.DataFrame(rows)
    means = table.groupby("side").mean(numeric_only=True)
    fb, fc = (means.loc[s, "log points per 10k steps"] for s in SIDES)
    ratio = fc / fb if fb else float("inf")
    ob, oc = (means.loc[s, "untimed seconds per 10k steps"] for s in SIDES)
    if fb and (ratio > 2 or ratio < 0.5):
        finding = Finding(
            id="logging/frequency",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.NOTED,
            severity=Severity.LOW,
            evidence=Evidence(
                baseline=fb,
                candidate=fc,
                effect=ratio,
                effect_label="log-frequency ratio candidate / baseline",
                summary=f"the candidate logs {'more' if ratio > 1 else 'less'} often: {fmt(fc)} vs {fmt(fb)} log "
                f"points per 10k steps; untimed wall time (logging, checkpoints, setup) {fmt(oc)} vs {fmt(ob)} s per 10k steps",
            ),
            remediation="Log scalars every few updates and images/videos rarely (case 003 logged scalars every 25 steps)."
            if ratio > 1
            else "Log at least once per update so curves have enough points to compare.",
        )
    else:
        finding = Finding(
            id="logging/frequency",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.CLEARED,
            evidence=Evidence(
                baseline=fb,
                candidate=fc,
                effect=ratio if math.isfinite(ratio) else None,
                effect_label="log-frequency ratio candidate / baseline",
                summary=f"{fmt(fb)} vs {fmt(fc)} log points per 10k steps; untimed wall time (logging, "
                f"checkpoints, setup) {fmt(ob)} vs {fmt(oc)} s per 10k steps",
            ),
        )
    return Section(
        title="Logging frequency and overhead",
        findings=[finding],
        tables={"logging per run": table},
        notes=[
            "The cost of logging is bounded by the wall time outside the trainer's timed phases "
            "(rollout, update): it also holds setup and checkpointing, so it is an upper bound."
        ],
    )


def audit_all(wb: Workbench, metric: str = "heart.get") -> list[Section]:
    """Every logging check, in notebook order."""
    return [presence(wb), truth(wb, metric=metric), frequency(wb)]
