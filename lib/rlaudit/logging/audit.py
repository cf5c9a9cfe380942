"""Logging audit: what was written to the logs against what happened in training.

Case 002 trained blind: its TensorBoard files existed and held zero scalars. Case 000 asked whether the
statistics' averaging had changed. Here each subject's own logs (TensorBoard, CSV or JSONL under its
``log_dir``, read by :mod:`rlaudit.logs`) are compared with each other (which scalars exist, which were
removed, added or renamed) and with the ground truth the recorder saw episode by episode: the logged episodic
return and the primary metric are matched against the ways they could have been averaged (the last N
episodes, all episodes so far, the episodes since the previous log, reward per step), and a different
definition shows as a systematic gap, named. Finally, how often each side logs and what it costs.

Absolute imports only: this package is ``rlaudit.logging``; ``import logging`` in any rlaudit module still
resolves to the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check, run_checks
from rlaudit.compare import match_near_names
from rlaudit.evidence import Verdict, fmt, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.logs import log_inventory, read_scalars
from rlaudit.metrics import RETURN, SCALAR, Metric
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES, side_finding, stack_tables
from rlaudit.trainer.runs import RunData, TrainingRuns, training_runs
from rlaudit.workbench import Workbench

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
LOG_DIR_HOW = (
    "Define log_dir(config, run_dir=None) in the subject, returning the directory train() writes its "
    "TensorBoard, CSV or JSONL logs to (under recorder.run_dir when given)."
)


@dataclass
class Logged:
    """The training runs and what their log files hold: the evidence of the logging checks."""

    runs: TrainingRuns
    logs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        return None if self.logs else self.runs.guard(id, subsystem, hypothesis)

    @property
    def data(self) -> dict[str, list[RunData]]:
        return self.runs.data


def logged(wb: Workbench, given: TrainingRuns | Logged | None = None) -> Logged:
    """``needs=`` of the logging checks: the shared training runs and each side's log files (``given`` runs,
    or runs with their logs, instead)."""
    if isinstance(given, Logged):
        return given
    runs = training_runs(wb, given)
    ok = all(runs[s] for s in SIDES)
    return Logged(runs=runs, logs=side_logs(runs.data) if ok else {})


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


DROPPED_SCALARS = {
    "id": "logging/dropped-scalars",
    "hypothesis": "Every scalar the candidate's trainer logs reaches its log files",
}
"""A secondary finding of the presence check: scalars the trainer logs that never reach its log files."""
REMOVED_TAGS = {
    "id": "logging/removed-tags",
    "hypothesis": "The candidate logs every scalar the baseline logs",
}
"""A secondary finding of the presence check: scalars the baseline logs and the candidate does not."""
RENAMED_TAGS = {"id": "logging/renamed-tags", "hypothesis": "The scalars keep their names"}
"""A secondary finding of the presence check: scalars logged under a new name."""


@check("logging/presence", title="Which scalars are written", needs=logged)
def presence(c: Check, evidence: Logged) -> Section:
    """Both setups write the same scalars to their logs.

    Which scalars each side's log files hold: empty logs, removed, added and renamed tags.
    """
    from rlaudit.logging import plots

    logs = evidence.logs
    without = [s for s in SIDES if not logs[s]["has_log_dir"]]
    if len(without) == 2:
        c.missing("`log_dir` capability (where train() writes its logs)", LOG_DIR_HOW, without)
    findings: list[Finding] = []
    empty = [s for s in SIDES if logs[s]["has_log_dir"] and not logs[s]["tags"]]
    for side in empty:
        inv, names = logs[side]["inventory"], logs[side]["recorder_names"]
        files, size = len(inv), int(inv["bytes"].sum()) if len(inv) else 0
        findings.append(
            side_finding(
                c,
                side,
                len(empty) == 2,
                id=f"logging/empty-logs-{side}",
                hypothesis=f"The {side}'s log files hold the scalars it trains on",
                baseline=len(logs["baseline"]["tags"]),
                candidate=len(logs["candidate"]["tags"]),
                effect=float(len(names)),
                effect_label="scalars the trainer logged through the recorder",
                summary=f"the {side}'s log directory holds {files} log file(s) ({size:,} bytes) with zero scalars, "
                f"while its trainer logged {len(names)} scalar names through the recorder: anyone watching "
                "TensorBoard trains blind (case 002)",
                details={"files": inv.to_dict("records")},
                remediation=f"Check the {side}'s log writer: the tags it filters or the namespaces it allows, "
                "flushes and close(); a test that reads the event file back catches it.",
                figures=["tags per side"],
            )
        )
    cand = logs["candidate"]
    lost = [n for n in cand["recorder_names"] if n not in cand["tags"]]
    if cand["has_log_dir"] and cand["tags"] and lost:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.MEDIUM,
                **DROPPED_SCALARS,
                candidate=lost,
                effect=float(len(lost)),
                effect_label="recorder scalars missing from the log files",
                summary=f"{len(lost)} of the {len(cand['recorder_names'])} scalars the candidate's trainer logged "
                f"never reach its log files: {', '.join(lost[:6])}",
                remediation="Write every logged scalar to the log writer (check its tag filter).",
            )
        )
    changes = tag_changes(logs["baseline"]["tags"], cand["tags"])
    both_have = bool(logs["baseline"]["tags"] and cand["tags"])
    if both_have and changes["removed"]:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.MEDIUM,
                **REMOVED_TAGS,
                baseline=len(logs["baseline"]["tags"]),
                candidate=len(cand["tags"]),
                effect=float(len(changes["removed"])),
                effect_label="tags removed",
                summary=f"{len(changes['removed'])} tag(s) the baseline logs are gone: "
                + ", ".join(changes["removed"][:8]),
                remediation="Log the removed scalars again (dashboards and alerts reading them went blank).",
                figures=["tags per side"],
            )
        )
    if both_have and (changes["renamed"] or changes["added"]):
        parts = [f"{o} → {n}" for o, n, _ in changes["renamed"]]
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **RENAMED_TAGS,
                summary=(f"renamed: {', '.join(parts)}" if parts else "")
                + ("; " if parts and changes["added"] else "")
                + (f"added: {', '.join(changes['added'][:8])}" if changes["added"] else ""),
                details=changes,
                remediation="Update dashboards to the new names (or keep the old ones as aliases).",
            )
        )
    if both_have and not any(f.status.is_flag for f in findings):
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline=len(logs["baseline"]["tags"]),
                candidate=len(cand["tags"]),
                summary=f"both log files hold the same {len(changes['kept'])} scalar tags"
                + (f" (plus {len(changes['added'])} new)" if changes["added"] else ""),
            )
        )
    if without:
        findings.append(
            c.finding(
                Status.SKIPPED,
                id="logging/presence-side",
                summary=f"{without[0]}: no `log_dir` capability (where train() writes its logs)",
                details={"missing": "log_dir", "sides": without},
                remediation=LOG_DIR_HOW,
            )
        )
    every = sorted({t for s in SIDES for t in (*logs[s]["tags"], *logs[s]["recorder_names"])})
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
    return c.section(
        findings,
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
    c: Check,
    key: str,
    label: str,
    tables: Mapping[str, pd.DataFrame],
    tags: Mapping[str, tuple[str | None, str]],
) -> Finding:
    """Compare how the two sides define a logged statistic, and the systematic gap between the definitions."""
    matches = {s: tables[s][tables[s]["match"]]["definition"].tolist() for s in SIDES}
    common = set(matches["baseline"]) & set(matches["candidate"])
    base_def = _describe(matches["baseline"])
    cand_def = _describe(matches["candidate"])
    common_fields: dict[str, Any] = dict(
        id=truth_id(key),
        hypothesis=f"The logged {label} is the same statistic of the episodes on both sides",
        baseline=base_def,
        candidate=cand_def,
    )
    src = {s: f"{tags[s][0]} ({tags[s][1]})" for s in SIDES}
    if matches["baseline"] and not common:
        # the gap: the candidate's logged values against the baseline's definition, on the candidate's episodes
        chosen = sorted(matches["baseline"], key=lambda m: (0 if m.startswith("last") else 1, _window(m)))[0]
        row = tables["candidate"][tables["candidate"]["definition"] == chosen]
        gap = float(row["relative_gap"].iloc[0]) if len(row) else float("nan")
        mean_gap = float(row["mean_gap"].iloc[0]) if len(row) else float("nan")
        return c.finding(
            Status.CONFIRMED,
            Severity.MEDIUM,
            effect=gap,
            effect_label=f"mean relative gap of the candidate's logged {label} to the baseline's definition",
            summary=f"the candidate's logged {label} ({src['candidate']}) is the mean over {cand_def}; the "
            f"baseline's ({src['baseline']}) is the mean over {base_def}. Against the baseline's definition the "
            f"candidate's curve is off by {fmt(mean_gap)} on average ({pct(gap, signed=True)}): a systematic gap "
            "from the averaging alone, not from training",
            details={"matches": matches},
            remediation=f"Average the candidate's logged {label} as the baseline does ({base_def}) before comparing "
            "curves; compare runs on the recorder's per-episode truth meanwhile.",
            figures=[f"logged vs recorded {label}"],
            **common_fields,
        )
    if not matches["candidate"]:
        nearest = tables["candidate"].sort_values("max_error").head(1)
        near = nearest["definition"].iloc[0] if len(nearest) else "—"
        gap = float(nearest["relative_gap"].iloc[0]) if len(nearest) else float("nan")
        return c.finding(
            Status.SUSPECT if matches["baseline"] else Status.NOTED,
            Severity.MEDIUM,
            effect=gap,
            effect_label=f"mean relative gap to the nearest definition ({near})",
            summary=f"the candidate's logged {label} ({src['candidate']}) matches no average of the episodes the "
            f"recorder saw; nearest: {near}, off by {pct(gap, signed=True)} on average; the baseline's is "
            f"{base_def}",
            remediation=f"Trace how the candidate computes its logged {label} (filtering, window, per-step "
            "averaging).",
            figures=[f"logged vs recorded {label}"],
            **common_fields,
        )
    # a side whose logged values match no definition was not measured: no agreement on the definition
    quantity = f"definition of the logged {label}"
    return c.finding(
        Status.CLEARED,
        summary=f"both log the {label} as the mean over {_describe(sorted(common))} of the episodes the recorder "
        f"saw (to {MATCH_RTOL:g} relative)",
        measured={s: {quantity: _describe(matches[s]) if matches[s] else None} for s in SIDES},
        measured_words={
            s: {
                quantity: _describe(matches[s])
                if matches[s]
                else "matches no average of the recorded episodes"
            }
            for s in SIDES
        },
        **common_fields,
    )


def truth_id(key: str) -> str:
    return f"logging/truth-{'return' if key == RETURN else key.replace('.', '-')}"


def statistics(metric: Metric) -> list[tuple[str, str]]:
    """The episode statistics whose logged values are checked: the episodic return and the primary metric."""
    out = [(RETURN, "episodic return")]
    if metric.name != RETURN:
        out.append((metric.name, metric.name))
    return out


def _unverifiable(
    c: Check, key: str, label: str, metric: Metric, lacking: Mapping[str, list[str]]
) -> Finding:
    """SKIPPED for a statistic that is not logged, or not reported per episode, on some side."""
    parts, hows = [], []
    if lacking["logged"]:
        tag = "charts/episodic_return" if key == RETURN else key
        parts.append(f"{' and '.join(lacking['logged'])}: no logged `{tag}` (log files or recorder.log)")
        hows.append(
            f"Log it in train() as the trainer's dashboards show it: recorder.log(step, **{{{tag!r}: mean over "
            "recent episodes}}) (or write it to the log_dir's files)."
        )
    if lacking["episodes"]:
        parts.append(f"{' and '.join(lacking['episodes'])}: no episodes reporting `{key}`")
        hows.append(
            metric.how_to_report
            if key == metric.name
            else f"Report it per finished episode: recorder.episode(step=step, env=i, **{{{key!r}: value}})."
        )
    return c.finding(
        Status.SKIPPED,
        id=truth_id(key),
        hypothesis=f"The logged {label} is the same statistic of the episodes on both sides",
        summary="; ".join(parts),
        details={"missing": parts, "sides": sorted({s for v in lacking.values() for s in v})},
        remediation=" ".join(hows),
    )


@check("logging/truth", title="Logged statistics against the recorded episodes", needs=logged)
def truth(c: Check, evidence: Logged) -> Section:
    """The logged episode statistics agree with what happened.

    The logged episodic return and the primary metric against the recorder's per-episode ground truth.
    """
    from rlaudit.logging import plots

    metric: Metric = c.wb.metric
    data, logs = evidence.data, evidence.logs
    findings, tables, figures = [], {}, {}
    for key, label in statistics(metric):
        if key == metric.name and metric.source == SCALAR:
            findings.append(_unverifiable(c, key, label, metric, {"logged": [], "episodes": list(SIDES)}))
            continue
        per_side, tags, frames = {}, {}, {}
        lacking: dict[str, list[str]] = {"logged": [], "episodes": []}
        for side in SIDES:
            episodes = {r.seed: r.table("episodes") for r in data[side]}
            values, tag, source = logged_statistic(logs[side], data[side], key)
            tags[side] = (tag, source)
            if values.empty:
                lacking["logged"].append(side)
            if not any(key in e for e in episodes.values()):
                lacking["episodes"].append(side)
            if not values.empty and side not in lacking["episodes"]:
                per_side[side] = match_definitions(values, episodes, key)
                frames[side] = (values, episodes)
        if lacking["logged"] or lacking["episodes"]:
            findings.append(_unverifiable(c, key, label, metric, lacking))
            continue
        findings.append(truth_finding(c, key, label, per_side, tags))
        merged = pd.concat([per_side[s].assign(side=s) for s in SIDES], ignore_index=True)
        tables[f"definitions of the logged {label}"] = merged.pivot_table(
            index="definition", columns="side", values=["max_error", "relative_gap", "match"], aggfunc="first"
        )
        figures[f"logged vs recorded {label}"] = plots.truth_figure(frames, key, label)
    return c.section(
        findings,
        tables=tables,
        figures=figures,
        notes="Ground truth is the recorder's table of finished episodes (one row per episode, in finishing order). "
        "At each logged step every definition is computed from the episodes finished by then; the one that "
        "reproduces the logged values (to 1e-4 relative) is how that side averages. Where the log files lack the "
        "statistic, the values the trainer passed to recorder.log are used instead (said in the finding).",
    )


# -------------------------------------------------------------------------------------------------------------
# Frequency and overhead
# -------------------------------------------------------------------------------------------------------------


def frequency_table(
    data: Mapping[str, Sequence[RunData]], logs: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """One row per run: log points and scalars per 10k steps, log-file size, and the untimed wall time."""
    rows = []
    for side in SIDES:
        for run in data[side]:
            steps = float(run.summary.get("steps") or 0) or 1.0
            recorder = run.table("scalars")
            points = recorder["step"].nunique() if not recorder.empty else 0
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
                    "log points per 10k steps": points / steps * 1e4,
                    "scalars per log point": len(recorder) / max(1, points) if points else 0,
                    "log-file scalars": len(mine),
                    "log-file bytes per 10k steps": (float(inv["bytes"].sum()) if len(inv) else 0.0)
                    / steps
                    * 1e4,
                    "untimed seconds per 10k steps": max(0.0, total - timed) / steps * 1e4,
                }
            )
    return pd.DataFrame(rows)


@check("logging/frequency", title="Logging frequency and overhead", needs=logged, reads=("trainer",))
def frequency(c: Check, evidence: Logged) -> Section:
    """Both setups log about as often, at a similar cost.

    Log points per 10,000 steps, bytes written, and the wall time outside the trainer's timed phases.
    """
    table = frequency_table(evidence.data, evidence.logs)
    means = table.groupby("side").mean(numeric_only=True)
    fb, fc = (float(means.loc[s, "log points per 10k steps"]) for s in SIDES)
    silent = [s for s, f in zip(SIDES, (fb, fc), strict=True) if f == 0]
    if len(silent) == 2:
        c.missing(
            "scalars logged through recorder.log",
            "Log the training scalars (losses, episodic return, learning rate) in train(): "
            "recorder.log(step, **scalars), once per update.",
            silent,
        )
    ob, oc = (float(means.loc[s, "untimed seconds per 10k steps"]) for s in SIDES)
    ratio = fc / fb if fb else float("inf")
    costs = f"untimed wall time (logging, checkpoints, setup) {fmt(oc)} vs {fmt(ob)} s per 10k steps"
    if silent:
        decided = Verdict(
            Status.NOTED,
            Severity.LOW,
            f"the {silent[0]} logs nothing through recorder.log ({fmt(fc)} vs {fmt(fb)} log points per 10k "
            f"steps); {costs}",
            f"Log the {silent[0]}'s training scalars with recorder.log(step, **scalars).",
        )
    elif ratio > 2 or ratio < 0.5:
        decided = Verdict(
            Status.NOTED,
            Severity.LOW,
            f"the candidate logs {'more' if ratio > 1 else 'less'} often: {fmt(fc)} vs {fmt(fb)} log points per "
            f"10k steps; {costs}",
            "Log scalars every few updates and images/videos rarely (case 003 logged scalars every 25 steps)."
            if ratio > 1
            else "Log at least once per update so curves have enough points to compare.",
        )
    else:
        decided = Verdict(
            Status.CLEARED,
            Severity.INFO,
            f"{fmt(fb)} vs {fmt(fc)} log points per 10k steps (within a factor of 2); {costs}",
            "",
        )
    return c.section(
        c.conclude(
            decided,
            baseline=fb,
            candidate=fc,
            effect=ratio if np.isfinite(ratio) else None,
            effect_label="log-frequency ratio candidate / baseline",
        ),
        tables={"logging per run": table},
        notes="Log points are counted, not timed: the verdict does not move with machine load. The cost of "
        "logging is bounded by the wall time outside the trainer's timed phases (rollout, update): it also holds "
        "setup and checkpointing, so it is an upper bound, and it is wall time.",
    )


CHECKS = (presence, truth, frequency)
"""Every logging check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every logging check, in notebook order."""
    return run_checks(wb, CHECKS)
