"""Optimizer audit: what the optimizer was told (config, ``make_optimizer``) against what it did (the recorder).

Cases 000 and 001 are the model. The first pass read the config diff and concluded that the learning-rate,
entropy and clip schedules were missing; the second found the schedule had been disabled in code all along,
so the diff had misled everyone. Here the declared values sit beside the runtime ones: the optimizer the
subject's own ``make_optimizer`` builds (class, every param-group hyperparameter, values left to library
defaults such as Adam's eps 1e-8 instead of PPO's 1e-5), whether every trainable tensor is optimized, and
from short recorded runs the learning rate the optimizer actually used at each step, the entropy and clip
coefficients as logged, gradient norms before and after clipping, and per-layer update ratios.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.config import probes as config_probes
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, audit_section
from rlaudit.optimizer import plots, probes
from rlaudit.optimizer.probes import IMPLEMENTATION_FLAGS
from rlaudit.trainer.common import (
    SIDES,
    find_keys,
    first_number,
    fmt,
    guard_runs,
    pct,
    stack_tables,
)
from rlaudit.trainer.runs import RunData, run_data, runs
from rlaudit.workbench import Workbench

SUBSYSTEM = "optimizer"
FLAT_TOL = 0.01  # a schedule whose values stay within 1% of their largest is flat
CURVE_TOL = 0.05  # runtime curves that differ by more than 5% of the larger one differ
SEED = 0  # bootstrap seed: every interval in this notebook reproduces

# Config keys that declare a schedule for each coefficient (matched on the last dotted segment).
SCHEDULE_KEYS: dict[str, tuple[str, ...]] = {
    "learning rate": (
        "anneal_lr",
        "*lr_schedule*",
        "*learning_rate_schedule*",
        "*lr_decay*",
        "*lr_anneal*",
        "*lr_final*",
        "*scheduler*",
        "*lr_warmup*",
    ),
    "entropy coefficient": (
        "*ent*schedule*",
        "*ent*anneal*",
        "*ent*decay*",
        "*ent_coef_final*",
        "*entropy*final*",
    ),
    "clip coefficient": (
        "*clip*schedule*",
        "*clip*anneal*",
        "*clip*decay*",
        "*clip_coef_final*",
        "*clip_range_final*",
    ),
}
# Names under which trainers log the coefficients (recorder scalars, matched on the last "/" segment).
LOGGED_NAMES: dict[str, tuple[str, ...]] = {
    "entropy coefficient": ("ent_coef", "entropy_coef", "ent_coeff", "entropy_coefficient", "ent"),
    "clip coefficient": ("clip_coef", "clip_range", "clip_param", "clip_epsilon", "clip"),
}
SLUGS = {"learning rate": "lr", "entropy coefficient": "ent", "clip coefficient": "clip"}
CLIP_THRESHOLD_KEYS = (
    "max_grad_norm",
    "grad_clip",
    "clip_grad_norm",
    "grad_norm_clip",
    "max_norm",
    "gradient_clip*",
)
# Param-group entries that name the same hyperparameter in config keys.
HPARAM_ALIASES: dict[str, tuple[str, ...]] = {
    "lr": ("lr", "learning_rate"),
    "eps": ("eps", "adam_eps", "epsilon", "optimizer_eps"),
    "betas": ("betas",),
    "weight_decay": ("weight_decay", "wd", "l2"),
    "momentum": ("momentum",),
    "alpha": ("alpha",),
    "amsgrad": ("amsgrad",),
}


# -------------------------------------------------------------------------------------------------------------
# Data
# -------------------------------------------------------------------------------------------------------------


def _configs(wb: Workbench) -> dict[str, dict[str, Any]]:
    """Each side's resolved config (the config room's cached probe), ``{}`` when a side has none."""
    pair = wb.run(config_probes.resolved_config)
    return {side: (pair[side].json("config") if pair[side].ok else {}) for side in SIDES}


def short_runs(wb: Workbench) -> tuple[list[Any], dict[str, list[RunData]]]:
    """The profile's short recorded runs (shared with the other notebooks through the cache)."""
    pairs = runs(wb, short=True)
    return pairs, run_data(pairs)


def _is_declared(value: Any) -> bool | None:
    """Does a schedule key's value switch a schedule on? None when it says nothing (a final value)."""
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, str):
        return value.strip().lower() not in ("", "constant", "none", "null", "off", "false", "fixed")
    return None


def declared_schedule(config: Mapping[str, Any], which: str) -> tuple[bool | None, dict[str, Any]]:
    """Whether the config asks for a schedule of ``which`` (see :data:`SCHEDULE_KEYS`), and the keys read.

    Returns:
        ``(declared, keys)``: True when a switch or schedule kind turns one on, False when the keys say
        constant, None when the config has no such key.
    """
    keys = find_keys(config, SCHEDULE_KEYS[which])
    verdicts = [v for v in (_is_declared(val) for val in keys.values()) if v is not None]
    if not verdicts:
        return None, keys
    return any(verdicts), keys


# -------------------------------------------------------------------------------------------------------------
# Hyperparameters
# -------------------------------------------------------------------------------------------------------------


def _is_default(name: str, value: Any, defaults: Mapping[str, Any]) -> bool:
    return name in defaults and _same(value, defaults[name])


def _same(a: Any, b: Any, rtol: float = 1e-9) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, rtol) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=0.0)
    return a == b


def _declared_for(name: str, config: Mapping[str, Any]) -> tuple[str | None, Any]:
    """The config key declaring hyperparameter ``name`` (optimizer sections first), and its value."""
    keys = find_keys(config, HPARAM_ALIASES.get(name, (name,)))
    if not keys:
        return None, None
    best = sorted(keys, key=lambda k: (0 if "optim" in k.lower() else 1, k.count("."), k))[0]
    return best, keys[best]


def hyperparameter_table(
    setups: Mapping[str, Mapping[str, Any]], configs: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """One row per (param group, hyperparameter): both sides' effective values, defaults and declarations.

    Args:
        setups: Per side, the ``optimizer.json`` of :func:`rlaudit.optimizer.probes.optimizer_setup`.
        configs: Per side, the resolved config.

    Returns:
        Columns ``group``, ``hyperparameter``, ``baseline``, ``candidate``, ``same``, ``kind``
        (``hyperparameter`` or ``implementation flag``), ``baseline_default``/``candidate_default`` (the value
        is the optimizer class's own default), ``baseline_declared``/``candidate_declared`` (``key = value``
        in the config, or ``(not in config)``).
    """
    rows = []
    n_groups = max(len(setups[s]["groups"]) for s in SIDES)
    for gi in range(n_groups):
        groups = {s: (setups[s]["groups"][gi] if gi < len(setups[s]["groups"]) else {}) for s in SIDES}
        names = list(dict.fromkeys(k for s in SIDES for k in groups[s] if not k.startswith("_")))
        for name in names:
            row: dict[str, Any] = {"group": gi, "hyperparameter": name}
            for side in SIDES:
                value = groups[side].get(name, "(absent)")
                row[side] = value
                row[f"{side}_default"] = _is_default(name, value, setups[side]["defaults"])
                key, declared = _declared_for(name, configs[side]) if gi == 0 else (None, None)
                row[f"{side}_declared"] = f"{key} = {declared}" if key else "(not in config)"
            row["same"] = _same(row["baseline"], row["candidate"])
            row["kind"] = "implementation flag" if name in IMPLEMENTATION_FLAGS else "hyperparameter"
            rows.append(row)
    cols = [
        "group",
        "hyperparameter",
        "baseline",
        "candidate",
        "same",
        "kind",
        "baseline_default",
        "candidate_default",
        "baseline_declared",
        "candidate_declared",
    ]
    return pd.DataFrame(rows, columns=cols)


def _value_text(row: Mapping[str, Any], side: str) -> str:
    value = row[side]
    text = fmt(value) if not isinstance(value, list) else "(" + ", ".join(fmt(v) for v in value) + ")"
    declared = row[f"{side}_declared"]
    if row[f"{side}_default"] and ("= None" in declared or declared == "(not in config)"):
        return f"{text} (the optimizer's own default; {declared})"
    if row[f"{side}_default"]:
        return f"{text} (= the optimizer's default; {declared})"
    return f"{text} ({declared})"


@audit_section(
    "optimizer/hyperparameters",
    SUBSYSTEM,
    "Both setups build the same optimizer with the same hyperparameters",
)
def hyperparameters(wb: Workbench) -> Section:
    """Optimizer class and every param-group hyperparameter as ``make_optimizer`` built them, side by side."""
    hypothesis = "Both setups build the same optimizer with the same hyperparameters"
    pair = wb.run(probes.optimizer_setup, seed=0)
    if (f := pair.guard("optimizer/hyperparameters", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    return hyperparameter_section({s: pair[s].json("optimizer") for s in SIDES}, _configs(wb), hypothesis)


def hyperparameter_section(
    setups: Mapping[str, Mapping[str, Any]], configs: Mapping[str, Mapping[str, Any]], hypothesis: str
) -> Section:
    """The verdicts on two optimizers as built (see :func:`hyperparameter_table` for the arguments)."""
    table = hyperparameter_table(setups, configs)
    findings: list[Finding] = []
    classes = {s: setups[s]["class"] for s in SIDES}
    if classes["baseline"] != classes["candidate"]:
        findings.append(
            Finding(
                id="optimizer/class",
                subsystem=SUBSYSTEM,
                hypothesis="Both setups use the same optimizer class",
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline=classes["baseline"],
                    candidate=classes["candidate"],
                    summary=f"the optimizer changed: {classes['baseline']} → {classes['candidate']}",
                ),
                remediation=f"Build {classes['baseline'].rsplit('.', 1)[-1]} in the candidate's make_optimizer "
                "(or measure the change with an attribution run).",
            )
        )
    n_groups = {s: len(setups[s]["groups"]) for s in SIDES}
    if n_groups["baseline"] != n_groups["candidate"]:
        findings.append(
            Finding(
                id="optimizer/param-groups",
                subsystem=SUBSYSTEM,
                hypothesis="Both optimizers split the parameters into the same param groups",
                status=Status.SUSPECT,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline=n_groups["baseline"],
                    candidate=n_groups["candidate"],
                    summary=f"{n_groups['baseline']} param group(s) → {n_groups['candidate']}",
                ),
                remediation="Give the candidate the baseline's param groups (per-group lr / weight decay).",
            )
        )
    differing = table[(~table["same"]) & (table["kind"] == "hyperparameter")]
    for row in differing.to_dict("records"):
        name = row["hyperparameter"]
        to_default = row["candidate_default"] and not row["baseline_default"]
        rel = None
        if (
            isinstance(row["baseline"], int | float)
            and isinstance(row["candidate"], int | float)
            and row["baseline"]
        ):
            rel = float(row["candidate"]) / float(row["baseline"])
        severity = (
            Severity.HIGH if to_default or (rel is not None and (rel >= 2 or rel <= 0.5)) else Severity.MEDIUM
        )
        default_note = " — the candidate leaves it to the library default" if to_default else ""
        findings.append(
            Finding(
                id=f"optimizer/hparam-{name}" + (f"-group{row['group']}" if row["group"] else ""),
                subsystem=SUBSYSTEM,
                hypothesis=f"The optimizer's `{name}` is the same on both sides",
                status=Status.SUSPECT,
                severity=severity,
                evidence=Evidence(
                    baseline=row["baseline"],
                    candidate=row["candidate"],
                    effect=rel,
                    effect_label="ratio candidate / baseline" if rel is not None else "",
                    summary=f"`{name}` (group {row['group']}): baseline {_value_text(row, 'baseline')}, candidate "
                    f"{_value_text(row, 'candidate')}{default_note}",
                    details={"row": row},
                ),
                remediation=(
                    f"Set `{name}` explicitly to {fmt(row['baseline'])} in the candidate's config "
                    f"({row['baseline_declared'].split(' = ')[0]}) so make_optimizer passes it"
                    if to_default
                    else f"Restore `{name}` = {fmt(row['baseline'])} in the candidate (or keep it and let "
                    "attribution measure it)."
                ),
                figures=["optimizer hyperparameters"],
            )
        )
    flags = table[(~table["same"]) & (table["kind"] == "implementation flag")]
    if len(flags):
        findings.append(
            Finding(
                id="optimizer/implementation-flags",
                subsystem=SUBSYSTEM,
                hypothesis="The optimizers use the same implementation switches",
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    baseline={r["hyperparameter"]: r["baseline"] for r in flags.to_dict("records")},
                    candidate={r["hyperparameter"]: r["candidate"] for r in flags.to_dict("records")},
                    summary="implementation switches differ (speed, not the update rule): "
                    + ", ".join(
                        f"{r['hyperparameter']} {r['baseline']} → {r['candidate']}"
                        for r in flags.to_dict("records")
                    ),
                ),
                remediation="None needed for learning; check speed if a fused/foreach path was lost.",
            )
        )
    # Within a side: the config declares a value but the optimizer holds another (at construction).
    for side in SIDES:
        for row in table[table["group"] == 0].to_dict("records"):
            declared = row[f"{side}_declared"]
            if " = " not in declared or row["kind"] != "hyperparameter":
                continue
            key, text = declared.split(" = ", 1)
            _, value = _declared_for(row["hyperparameter"], configs[side])
            if value is None or row[side] == "(absent)":
                continue
            if isinstance(value, int | float | list) and not _same(
                _as_list(value), _as_list(row[side]), rtol=1e-6
            ):
                findings.append(
                    Finding(
                        id=f"optimizer/declared-vs-effective-{row['hyperparameter']}-{side}",
                        subsystem=SUBSYSTEM,
                        hypothesis=f"The {side}'s optimizer uses the `{row['hyperparameter']}` its config declares",
                        status=Status.CONFIRMED if side == "candidate" else Status.NOTED,
                        severity=Severity.HIGH if side == "candidate" else Severity.LOW,
                        evidence=Evidence(
                            baseline=value if side == "baseline" else None,
                            candidate=row[side] if side == "candidate" else None,
                            summary=f"the {side}'s config declares {key} = {text}, but its optimizer was built with "
                            f"{row['hyperparameter']} = {fmt(row[side])}",
                            details={"declared": value, "effective": row[side], "key": key},
                        ),
                        remediation=f"Pass `{key}` through to the optimizer in the {side}'s make_optimizer.",
                    )
                )
    if not any(f.status.is_flag for f in findings):
        hp = table[(table["group"] == 0) & (table["kind"] == "hyperparameter")]
        values = ", ".join(
            f"{r['hyperparameter']} {fmt(r['baseline']) if not isinstance(r['baseline'], list) else r['baseline']}"
            for r in hp.to_dict("records")
        )
        findings.append(
            Finding(
                id="optimizer/hyperparameters",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=classes["baseline"],
                    candidate=classes["candidate"],
                    summary=f"same optimizer ({classes['baseline'].rsplit('.', 1)[-1]}, {n_groups['baseline']} "
                    f"param group(s)) with the same hyperparameters: {values}",
                ),
            )
        )
    notes = [
        "Values are read from the optimizer object that each subject's own `make_optimizer` returns, not from the "
        "config: a key that is null or missing falls back to the optimizer class's default, marked in the table.",
    ]
    sched = {s: setups[s].get("scheduler") for s in SIDES}
    if any(sched.values()):
        notes.append(
            "Schedulers returned by make_optimizer: "
            + ", ".join(f"{s}: {(v or {}).get('class', 'none')}" for s, v in sched.items())
        )
    return Section(
        title="Declared vs effective optimizer hyperparameters",
        findings=findings,
        tables={"optimizer hyperparameters": table},
        notes=notes,
    )


def _as_list(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# -------------------------------------------------------------------------------------------------------------
# Coverage
# -------------------------------------------------------------------------------------------------------------


@audit_section("optimizer/coverage", SUBSYSTEM, "Every trainable parameter is in some param group")
def coverage(wb: Workbench) -> Section:
    """Parameters that require gradients but are in no param group are frozen by accident."""
    hypothesis = "Every trainable parameter is in some param group"
    pair = wb.run(probes.optimizer_setup, seed=0)
    if (f := pair.guard("optimizer/coverage", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    tables = {s: pair[s].table("coverage") for s in SIDES}
    frames = []
    findings = []
    summary: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        t = tables[side]
        trainable = t[t["requires_grad"].astype(bool)]
        missing = trainable[trainable["group"] < 0]
        summary[side] = {
            "trainable": len(trainable),
            "values": int(trainable["numel"].sum()),
            "missing": missing["parameter"].tolist(),
            "missing_values": int(missing["numel"].sum()),
        }
        frames.append(t.assign(side=side))
        if len(missing):
            findings.append(
                Finding(
                    id=f"optimizer/frozen-{side}",
                    subsystem=SUBSYSTEM,
                    hypothesis=f"Every trainable parameter of the {side} is optimized",
                    status=Status.CONFIRMED if side == "candidate" else Status.NOTED,
                    severity=Severity.CRITICAL if side == "candidate" else Severity.MEDIUM,
                    evidence=Evidence(
                        baseline=summary.get("baseline", {}).get("missing") if side == "baseline" else None,
                        candidate=missing["parameter"].tolist() if side == "candidate" else None,
                        effect=float(summary[side]["missing_values"]) / max(1, summary[side]["values"]),
                        effect_label="fraction of trainable values never updated",
                        summary=f"the {side}'s optimizer leaves {len(missing)} of {len(trainable)} trainable tensors "
                        f"out of every param group, frozen at their initial values: "
                        + ", ".join(missing["parameter"].tolist()[:6]),
                    ),
                    remediation=f"Build the {side}'s optimizer over `policy.parameters()` (or add the missing tensors "
                    "to a param group); set requires_grad=False where freezing is intended.",
                )
            )
    if not findings:
        findings.append(
            Finding(
                id="optimizer/coverage",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=summary["baseline"]["trainable"],
                    candidate=summary["candidate"]["trainable"],
                    summary=f"every trainable tensor is optimized on both sides "
                    f"({summary['baseline']['trainable']} tensors / {summary['baseline']['values']:,} values vs "
                    f"{summary['candidate']['trainable']} / {summary['candidate']['values']:,})",
                ),
            )
        )
    table = pd.concat(frames, ignore_index=True)[["side", "parameter", "numel", "requires_grad", "group"]]
    return Section(
        title="Are all trainable parameters optimized?",
        findings=findings,
        tables={"parameter coverage": table},
    )


# -------------------------------------------------------------------------------------------------------------
# Schedules
# -------------------------------------------------------------------------------------------------------------


def schedule_progress(steps: Sequence[float]) -> np.ndarray:
    """Fraction of the run done when the value at each record was set: ``(step - first) / last``.

    Records carry the environment step at which the rollout feeding them ended; a trainer sets its schedules
    from the steps done *before* that rollout, which is ``step - first`` (the first record's step is one
    rollout), over the run's length (the last record's step). Two trainers with different rollout sizes then
    land their values at the same fractions, so a coarse staircase and a fine one of the same schedule agree.
    """
    arr = np.asarray(steps, dtype=float)
    if arr.size == 0:
        return arr
    top = float(np.max(arr))
    return np.zeros_like(arr) if top <= 0 else (arr - float(np.min(arr))) / top


def lr_curves(data: Mapping[str, Sequence[RunData]]) -> pd.DataFrame:
    """Learning rate of param group 0 at every optimizer step: ``side, seed, update, progress, value``."""
    updates = stack_tables(data, "updates")
    if updates.empty or "lr" not in updates:
        return pd.DataFrame(columns=["side", "seed", "update", "progress", "value", "name"])
    g0 = updates[updates["group"] == 0]
    out = []
    for (side, seed), part in g0.groupby(["side", "seed"], sort=False):
        part = part.sort_values("update")
        out.append(
            pd.DataFrame(
                {
                    "side": side,
                    "seed": seed,
                    "update": part["update"].to_numpy(),
                    "progress": schedule_progress(part["step"].to_numpy()),
                    "value": part["lr"].to_numpy(dtype=float),
                }
            )
        )
    frame = pd.concat(out, ignore_index=True)
    frame["name"] = "learning rate"
    return frame


def logged_name(names: Sequence[str], which: str) -> str | None:
    """The recorder scalar that logs ``which`` (e.g. ``charts/ent_coef``), matched on its last segment."""
    wanted = LOGGED_NAMES[which]
    by_leaf = {str(n).rsplit("/", 1)[-1].lower(): n for n in names}
    for leaf in wanted:
        if leaf in by_leaf:
            return by_leaf[leaf]
    return None


def logged_curves(
    data: Mapping[str, Sequence[RunData]], which: str
) -> tuple[pd.DataFrame, dict[str, str | None]]:
    """A coefficient as logged through ``recorder.log``: ``side, seed, step, progress, value, name``."""
    scalars = stack_tables(data, "scalars")
    names: dict[str, str | None] = {}
    out = []
    for side in SIDES:
        part = scalars[scalars["side"] == side] if not scalars.empty else scalars
        name = logged_name(part["name"].unique().tolist(), which) if not part.empty else None
        names[side] = name
        if name is None:
            continue
        for seed, rows in part[part["name"] == name].groupby("seed"):
            rows = rows.sort_values("step")
            out.append(
                pd.DataFrame(
                    {
                        "side": side,
                        "seed": seed,
                        "step": rows["step"].to_numpy(),
                        "progress": schedule_progress(rows["step"].to_numpy()),
                        "value": rows["value"].to_numpy(dtype=float),
                    }
                )
            )
    frame = (
        pd.concat(out, ignore_index=True)
        if out
        else pd.DataFrame(columns=["side", "seed", "step", "progress", "value"])
    )
    frame["name"] = which
    return frame, names


def curve_summary(curves: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per side: the mean over seeds at each progress point, its first and last values, whether it is flat.

    Returns:
        ``{side: {"x", "y" (the mean curve's points), "first", "last", "min", "max", "flat", "change"}}``.
    """
    out: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        part = curves[curves["side"] == side]
        if part.empty:
            continue
        mean = (
            part.assign(x=part["progress"].astype(float).round(9)).groupby("x")["value"].mean().sort_index()
        )
        x, y = mean.index.to_numpy(dtype=float), mean.to_numpy(dtype=float)
        top = float(np.max(np.abs(y))) or 1.0
        out[side] = {
            "x": x,
            "y": y,
            "first": float(y[0]),
            "last": float(y[-1]),
            "min": float(np.min(y)),
            "max": float(np.max(y)),
            "flat": bool((np.max(y) - np.min(y)) <= FLAT_TOL * top),
            "change": float(y[-1] / y[0] - 1.0) if y[0] else float("nan"),
        }
    return out


def curve_gap(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """Largest gap between two mean curves over the progress both cover, relative to their scale.

    Each curve is interpolated linearly between its points (a schedule is a function of progress, and two
    trainers sample it at different points); a curve with a single point is a constant.
    """
    hi = min(float(a["x"][-1]), float(b["x"][-1]))
    grid = np.linspace(0.0, hi, 201) if hi > 0 else np.zeros(1)
    ya, yb = np.interp(grid, a["x"], a["y"]), np.interp(grid, b["x"], b["y"])
    scale = max(float(np.max(np.abs(a["y"]))), float(np.max(np.abs(b["y"]))), 1e-12)
    return float(np.max(np.abs(ya - yb))) / scale


def judge_schedule(
    which: str,
    summary: Mapping[str, Mapping[str, Any]],
    declared: Mapping[str, tuple[bool | None, dict[str, Any]]],
) -> Finding:
    """The verdict on one coefficient's schedule from its runtime curves and the configs' declarations."""
    fid = f"optimizer/{SLUGS[which]}-schedule"
    hypothesis = f"The {which} follows the same schedule at runtime on both sides"

    def shape(side: str) -> str:
        s = summary[side]
        return (
            "flat at " + fmt(s["first"])
            if s["flat"]
            else f"{fmt(s['first'])} → {fmt(s['last'])} ({pct(s['change'])})"
        )

    def keys(side: str) -> str:
        _, ks = declared[side]
        return ", ".join(f"{k}={v}" for k, v in ks.items()) or "no schedule keys"

    rel_gap = curve_gap(summary["baseline"], summary["candidate"])
    details = {"max_relative_gap": rel_gap, "declared": {s: declared[s][1] for s in SIDES}}
    evidence = dict(
        baseline=shape("baseline"),
        candidate=shape("candidate"),
        effect=rel_gap,
        effect_label="largest gap between the runtime curves, relative to their scale",
        details=details,
    )
    declared_flat = [s for s in SIDES if declared[s][0] and summary[s]["flat"]]
    if "candidate" in declared_flat and "baseline" not in declared_flat:
        return Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.CONFIRMED,
            severity=Severity.HIGH,
            evidence=Evidence(
                **evidence,
                summary=f"the candidate's config declares a {which} schedule ({keys('candidate')}) "
                f"but at runtime the {which} is {shape('candidate')}; the baseline's goes {shape('baseline')}",
            ),
            remediation=f"Find where the candidate's trainer applies the {which} schedule and re-enable it (the "
            "config already asks for it; the code path that reads it is off).",
            figures=["effective schedules"],
        )
    if rel_gap > CURVE_TOL:
        status = Status.SUSPECT
        summary_text = (
            f"the {which} differs at runtime: baseline {shape('baseline')}, candidate {shape('candidate')}"
        )
        if declared_flat:
            summary_text += f" (declared but flat on: {', '.join(declared_flat)})"
        return Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=status,
            severity=Severity.HIGH if which == "learning rate" else Severity.MEDIUM,
            evidence=Evidence(
                **evidence,
                summary=summary_text
                + f"; config: baseline {keys('baseline')}, candidate {keys('candidate')}",
            ),
            remediation=f"Give the candidate the baseline's {which} schedule (config and the code that applies it).",
            figures=["effective schedules"],
        )
    if declared_flat:
        return Finding(
            id=fid,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.NOTED,
            severity=Severity.LOW,
            evidence=Evidence(
                **evidence,
                summary=f"both sides declare a {which} schedule but run it flat "
                f"({shape('baseline')}): the config misleads, on both sides alike",
            ),
            remediation="Remove the dead schedule keys or re-enable the schedule on both sides.",
        )
    return Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=Status.CLEARED,
        evidence=Evidence(
            **evidence,
            summary=f"same {which} at runtime: {shape('baseline')} on both sides (largest gap {rel_gap:.1%})",
        ),
    )


@audit_section(
    "optimizer/schedules", SUBSYSTEM, "The learning-rate, entropy and clip schedules run the same at runtime"
)
def schedules(wb: Workbench) -> Section:
    """Runtime schedules from short recorded runs: the learning rate the optimizer held at every step (the
    recorder's ``updates`` table), and the entropy and clip coefficients as the trainer logged them."""
    hypothesis = "The learning-rate, entropy and clip schedules run the same at runtime"
    pairs, data = short_runs(wb)
    if (f := guard_runs(pairs, "optimizer/schedules", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    configs = {s: data[s][0].config for s in SIDES}
    curves = [lr_curves(data)]
    findings = []
    names_used: dict[str, Any] = {}
    for which in ("learning rate", "entropy coefficient", "clip coefficient"):
        if which == "learning rate":
            frame = curves[0]
        else:
            frame, names = logged_curves(data, which)
            names_used[which] = names
            curves.append(frame)
        summary = curve_summary(frame)
        declared = {s: declared_schedule(configs[s], which) for s in SIDES}
        if set(summary) != set(SIDES):
            lacking = [s for s in SIDES if s not in summary]
            findings.append(
                Finding(
                    id=f"optimizer/{SLUGS[which]}-schedule",
                    subsystem=SUBSYSTEM,
                    hypothesis=f"The {which} follows the same schedule at runtime on both sides",
                    status=Status.NOTED,
                    severity=Severity.LOW,
                    evidence=Evidence(
                        summary=f"the {which} is not recorded at runtime by: {', '.join(lacking)} "
                        "(no recorder scalar with a known name), so its schedule cannot be checked"
                    ),
                    remediation=f"Log the {which} each update (e.g. recorder.log(step, **{{'charts/{LOGGED_NAMES.get(which, ('lr',))[0]}': value}})).",
                )
            )
            continue
        findings.append(judge_schedule(which, summary, declared))
    all_curves = pd.concat([c for c in curves if not c.empty], ignore_index=True)
    notes = [
        "Progress is the fraction of the run done (first to last optimizer step for the learning rate, first to last "
        "log for the coefficients). A schedule declared in the config but flat at runtime is what case 001 found "
        "after case 000 had trusted the config diff.",
        f"Short runs: {', '.join(f'{s} seeds {[r.seed for r in data[s]]}' for s in SIDES)}, "
        f"{wb.profile.short_train_steps:,} steps each.",
    ]
    return Section(
        title="Effective schedules at runtime",
        findings=findings,
        tables={"schedule endpoints": _endpoints(all_curves)},
        figures={"effective schedules": plots.schedules_figure(all_curves)},
        notes=notes,
    )


def _endpoints(curves: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (name, side), part in curves.groupby(["name", "side"], sort=False):
        s = curve_summary(part.assign(side=side)).get(side)
        if s:
            rows.append(
                {
                    "coefficient": name,
                    "side": side,
                    "first": s["first"],
                    "last": s["last"],
                    "min": s["min"],
                    "max": s["max"],
                    "flat": s["flat"],
                    "change": s["change"],
                }
            )
    return pd.DataFrame(rows)


# -------------------------------------------------------------------------------------------------------------
# Gradient clipping and update ratios
# -------------------------------------------------------------------------------------------------------------


def clipping_stats(updates: pd.DataFrame, threshold: float | None) -> dict[str, Any]:
    """Clipping of one side's optimizer steps (group 0 rows of the ``updates`` table, all seeds).

    Returns:
        ``steps``, ``fraction_clipped`` (post-clip norm below the pre-clip norm by more than 1e-4 relative),
        ``pre_median``/``post_median``, ``post_max``, ``over_threshold`` (steps whose applied norm exceeds the
        declared threshold by more than 1%), ``clipped`` (bool array per step).
    """
    g0 = updates[updates["group"] == 0]
    pre = g0["grad_norm"].to_numpy(dtype=float)
    post = g0["grad_norm_clipped"].to_numpy(dtype=float)
    ok = np.isfinite(pre) & np.isfinite(post)
    pre, post = pre[ok], post[ok]
    clipped = post < pre * (1 - 1e-4)
    over = int(np.sum(post > threshold * 1.01)) if threshold is not None else 0
    return {
        "steps": len(pre),
        "fraction_clipped": float(np.mean(clipped)) if len(pre) else float("nan"),
        "pre_median": float(np.median(pre)) if len(pre) else float("nan"),
        "post_median": float(np.median(post)) if len(post) else float("nan"),
        "post_max": float(np.max(post)) if len(post) else float("nan"),
        "over_threshold": over,
        "clipped": clipped,
        "pre": pre,
    }


@audit_section("optimizer/grad-clipping", SUBSYSTEM, "Gradients are clipped the same way on both sides")
def gradient_clipping(wb: Workbench) -> Section:
    """Threshold (config) against the recorder's total gradient norm before and after clipping at every step."""
    hypothesis = "Gradients are clipped the same way on both sides"
    pairs, data = short_runs(wb)
    if (f := guard_runs(pairs, "optimizer/grad-clipping", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    updates = stack_tables(data, "updates")
    if updates.empty or "grad_norm" not in updates:
        return Section.of(
            Finding(
                id="optimizer/grad-clipping",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                evidence=Evidence(
                    summary="no optimizer steps were recorded "
                    "(train() never called recorder.watch(policy, optimizer))"
                ),
                remediation="Call recorder.watch(policy, optimizer) in train().",
            )
        )
    thresholds = {s: first_number(data[s][0].config, CLIP_THRESHOLD_KEYS) for s in SIDES}
    st = {s: clipping_stats(updates[updates["side"] == s], thresholds[s][1]) for s in SIDES}
    findings = []
    for side in SIDES:
        key, thr = thresholds[side]
        if thr is not None and st[side]["over_threshold"]:
            findings.append(
                Finding(
                    id=f"optimizer/clipping-not-applied-{side}",
                    subsystem=SUBSYSTEM,
                    hypothesis=f"The {side} clips gradients to the threshold its config declares",
                    status=Status.CONFIRMED if side == "candidate" else Status.NOTED,
                    severity=Severity.HIGH if side == "candidate" else Severity.LOW,
                    evidence=Evidence(
                        baseline=thr if side == "baseline" else None,
                        candidate=thr if side == "candidate" else None,
                        effect=st[side]["post_max"],
                        effect_label="largest applied gradient norm",
                        summary=f"the {side}'s config declares {key} = {fmt(thr)}, but {st[side]['over_threshold']} of "
                        f"{st[side]['steps']} optimizer steps applied a larger gradient (up to {fmt(st[side]['post_max'])})",
                    ),
                    remediation=f"Clip with the declared threshold in the {side}'s update step "
                    "(clip_grad_norm_ between backward() and step()).",
                )
            )
    if thresholds["baseline"][1] != thresholds["candidate"][1]:
        findings.append(
            Finding(
                id="optimizer/clip-threshold",
                subsystem=SUBSYSTEM,
                hypothesis="Both sides declare the same gradient-clipping threshold",
                status=Status.SUSPECT,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline=thresholds["baseline"][1],
                    candidate=thresholds["candidate"][1],
                    summary=f"clipping threshold {fmt(thresholds['baseline'][1])} → {fmt(thresholds['candidate'][1])}",
                ),
                remediation="Restore the baseline's clipping threshold in the candidate.",
            )
        )
    # Fraction of steps clipped: a bootstrap over optimizer steps, resampled within each seed's run.
    fb, fc = st["baseline"]["clipped"].astype(float), st["candidate"]["clipped"].astype(float)
    diff = float(np.mean(fc) - np.mean(fb)) if len(fb) and len(fc) else float("nan")
    ci = _fraction_diff_ci(fc, fb)
    ratio = (
        stats.bootstrap_ratio_ci(st["candidate"]["pre"], st["baseline"]["pre"], stat=np.median, seed=SEED)
        if len(st["baseline"]["pre"]) > 1 and len(st["candidate"]["pre"]) > 1
        else None
    )
    big = abs(diff) >= 0.25 and (ci[0] > 0 or ci[1] < 0)
    if big:
        findings.append(
            Finding(
                id="optimizer/clip-fraction",
                subsystem=SUBSYSTEM,
                hypothesis="The same share of updates is clipped on both sides",
                status=Status.SUSPECT,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline=st["baseline"]["fraction_clipped"],
                    candidate=st["candidate"]["fraction_clipped"],
                    effect=diff,
                    effect_label="difference in the fraction of clipped steps",
                    ci=ci,
                    ci_level=0.95,
                    summary=f"{st['candidate']['fraction_clipped']:.0%} of the candidate's optimizer steps are clipped vs "
                    f"{st['baseline']['fraction_clipped']:.0%} of the baseline's (median pre-clip norm "
                    f"{fmt(st['candidate']['pre_median'])} vs {fmt(st['baseline']['pre_median'])})",
                ),
                remediation="Find why the gradient norms differ (loss scale, learning rate, advantages) before changing "
                "the threshold.",
                figures=["gradient norms"],
            )
        )
    if not any(f.status.is_flag for f in findings):
        findings.append(
            Finding(
                id="optimizer/grad-clipping",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=st["baseline"]["fraction_clipped"],
                    candidate=st["candidate"]["fraction_clipped"],
                    effect=diff,
                    effect_label="difference in the fraction of clipped steps",
                    ci=ci,
                    ci_level=0.95,
                    summary=f"threshold {fmt(thresholds['baseline'][1])} on both sides; {st['baseline']['fraction_clipped']:.0%} "
                    f"vs {st['candidate']['fraction_clipped']:.0%} of steps clipped; median pre-clip norm ratio "
                    f"{fmt(ratio.point) if ratio else '—'}"
                    + (f" [{fmt(ratio.low)}, {fmt(ratio.high)}]" if ratio else ""),
                ),
            )
        )
    table = pd.DataFrame(
        [
            {
                "side": s,
                "threshold": thresholds[s][1],
                "threshold_key": thresholds[s][0],
                "optimizer_steps": st[s]["steps"],
                "fraction_clipped": st[s]["fraction_clipped"],
                "median_norm_before": st[s]["pre_median"],
                "median_norm_after": st[s]["post_median"],
                "max_norm_applied": st[s]["post_max"],
            }
            for s in SIDES
        ]
    )
    return Section(
        title="Gradient clipping",
        findings=findings,
        tables={"gradient clipping": table},
        figures={"gradient norms": plots.grad_norm_figure(updates, thresholds)},
    )


def _fraction_diff_ci(a: np.ndarray, b: np.ndarray, n_boot: int = 2000) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(a) - mean(b)`` (independent resamples, seed :data:`SEED`)."""
    if not len(a) or not len(b):
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(SEED)
    boots = a[rng.integers(0, len(a), (n_boot, len(a)))].mean(axis=1) - b[
        rng.integers(0, len(b), (n_boot, len(b)))
    ].mean(axis=1)
    low, high = np.quantile(boots, [0.025, 0.975])
    return float(low), float(high)


def update_ratio_table(layers: pd.DataFrame) -> pd.DataFrame:
    """Per layer: median ``|dw| / |w|`` on each side and their ratio with a bootstrap interval (seed 0)."""
    rows = []
    for layer in dict.fromkeys(layers["layer"]):
        part = layers[layers["layer"] == layer]
        b = part[part["side"] == "baseline"]["update_ratio"].dropna().to_numpy()
        c = part[part["side"] == "candidate"]["update_ratio"].dropna().to_numpy()
        if len(b) < 2 or len(c) < 2 or np.median(b) <= 0:
            rows.append(
                {
                    "layer": layer,
                    "baseline": np.median(b) if len(b) else np.nan,
                    "candidate": np.median(c) if len(c) else np.nan,
                    "ratio": np.nan,
                    "low": np.nan,
                    "high": np.nan,
                }
            )
            continue
        ci = stats.bootstrap_ratio_ci(c, b, stat=np.median, seed=SEED)
        rows.append(
            {
                "layer": layer,
                "baseline": float(np.median(b)),
                "candidate": float(np.median(c)),
                "ratio": ci.point,
                "low": ci.low,
                "high": ci.high,
            }
        )
    return pd.DataFrame(rows, columns=["layer", "baseline", "candidate", "ratio", "low", "high"])


@audit_section(
    "optimizer/update-ratios", SUBSYSTEM, "Each layer's weights move by a similar fraction per update"
)
def update_ratios(wb: Workbench) -> Section:
    """Per-layer update ratios ``|dw| / |w|`` from the recorder's ``layers`` table (sampled optimizer steps)."""
    hypothesis = "Each layer's weights move by a similar fraction per update on both sides"
    pairs, data = short_runs(wb)
    if (f := guard_runs(pairs, "optimizer/update-ratios", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    layers = stack_tables(data, "layers")
    if layers.empty:
        return Section.of(
            Finding(
                id="optimizer/update-ratios",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                evidence=Evidence(summary="no per-layer statistics were recorded"),
                remediation="Call recorder.watch(policy, optimizer) in train().",
            )
        )
    table = update_ratio_table(layers)
    # Three-fold and outside the interval: a learning-rate or epsilon change shows up here first.
    off = table[(table["low"] > 3.0) | (table["high"] < 1 / 3.0)]
    zero = table[(table["candidate"] == 0) & (table["baseline"] > 0)]
    findings = []
    if len(off) or len(zero):
        worst = (
            off.iloc[(off["ratio"].apply(lambda r: abs(math.log(r)))).argmax()] if len(off) else zero.iloc[0]
        )
        findings.append(
            Finding(
                id="optimizer/update-ratios",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline=float(worst["baseline"]),
                    candidate=float(worst["candidate"]),
                    effect=float(worst["ratio"]) if math.isfinite(worst["ratio"]) else None,
                    effect_label=f"update-ratio ratio candidate / baseline ({worst['layer']})",
                    ci=(float(worst["low"]), float(worst["high"])) if math.isfinite(worst["low"]) else None,
                    ci_level=0.95,
                    summary=f"{len(off) + len(zero)} of {len(table)} tensors move at a different rate; worst "
                    f"`{worst['layer']}`: median |dw|/|w| {fmt(worst['baseline'])} → {fmt(worst['candidate'])}",
                    details={"layers": (off if len(off) else zero)["layer"].tolist()},
                ),
                remediation="Compare the effective learning rate and Adam eps above; a per-layer gap without an "
                "optimizer difference points at the loss or the gradients (09_loss).",
                figures=["update ratios"],
            )
        )
    else:
        findings.append(
            Finding(
                id="optimizer/update-ratios",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=float(table["baseline"].median()),
                    candidate=float(table["candidate"].median()),
                    effect=float(table["ratio"].median()) if table["ratio"].notna().any() else None,
                    effect_label="median over layers of the ratio candidate / baseline",
                    summary=f"every layer moves within 3x of the baseline's rate (median ratio "
                    f"{fmt(table['ratio'].median())} over {len(table)} tensors)",
                ),
            )
        )
    return Section(
        title="Per-layer update ratios",
        findings=findings,
        tables={"update ratios": table},
        figures={"update ratios": plots.update_ratio_figure(table)},
    )


def audit_all(wb: Workbench) -> list[Section]:
    """Every optimizer check, in notebook order."""
    return [hyperparameters(wb), coverage(wb), schedules(wb), gradient_clipping(wb), update_ratios(wb)]
