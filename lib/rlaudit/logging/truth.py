"""Logged statistics against the recorded episodes: is the logged statistic what happened?

Case 000 asked whether the statistics' averaging had changed. The logged episodic return and the primary
metric are matched against the ways they could have been averaged from the episodes the recorder saw (the
last N episodes, all episodes so far, the episodes since the previous log, reward per step), and a different
definition shows as a systematic gap, named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check
from rlaudit.evidence import fmt, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.logging.logged import Logged, logged
from rlaudit.metrics import RETURN, SCALAR, Metric
from rlaudit.notebook import Section
from rlaudit.trainer.common import SIDES, stack_tables
from rlaudit.trainer.runs import RunData

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
