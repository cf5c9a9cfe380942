"""The optimizer as each subject's own ``make_optimizer`` builds it: class, every param-group hyperparameter
(with the values left to library defaults, such as Adam's eps 1e-8 instead of PPO's 1e-5), what the config
declares for them, and whether every trainable tensor is in some param group."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from rlaudit.checks import Check, check, on_side
from rlaudit.config import probes as config_probes
from rlaudit.engine.workbench import Workbench
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.optimizer import probes
from rlaudit.optimizer.probes import IMPLEMENTATION_FLAGS
from rlaudit.trainer.common import SIDES, find_keys, side_finding

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


@dataclass
class Built:
    """The optimizers both subjects build, and their resolved configs: the evidence of the setup checks.

    Attributes:
        setups: Per side, the ``optimizer.json`` of :func:`rlaudit.optimizer.probes.optimizer_setup`.
        coverage: Per side, its ``coverage`` table (one row per policy parameter).
        configs: Per side, the resolved config (``{}`` when a side has none).
        pair: The probe's pair, whose guard says SKIPPED or ERROR (None when built by hand).
    """

    setups: dict[str, dict[str, Any]] = field(default_factory=dict)
    coverage: dict[str, pd.DataFrame] = field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    pair: Any = None

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        return self.pair.guard(id, subsystem, hypothesis) if self.pair is not None else None


def built(wb: Workbench, given: Built | None = None) -> Built:
    """``needs=`` of the setup checks: the optimizer-setup probe on both sides and the resolved configs."""
    if given is not None:
        return given
    pair = wb.run(probes.optimizer_setup, seed=0)
    if not all(pair[s].ok for s in SIDES):
        return Built(pair=pair)
    configs = wb.run(config_probes.resolved_config)
    return Built(
        setups={s: pair[s].json("optimizer") for s in SIDES},
        coverage={s: pair[s].table("coverage") for s in SIDES},
        configs={s: (configs[s].json("config") if configs[s].ok else {}) for s in SIDES},
        pair=pair,
    )


def _is_default(name: str, value: Any, defaults: Mapping[str, Any]) -> bool:
    return name in defaults and same_value(value, defaults[name])


def same_value(a: Any, b: Any, rtol: float = 1e-9) -> bool:
    """Equal hyperparameter values: numbers to ``rtol``, lists (and tuples) element by element."""
    a, b = (list(v) if isinstance(v, tuple) else v for v in (a, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y, rtol) for x, y in zip(a, b, strict=True))
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
            row["same"] = same_value(row["baseline"], row["candidate"])
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


def _text(value: Any) -> str:
    return fmt(value) if not isinstance(value, list) else "(" + ", ".join(fmt(v) for v in value) + ")"


def _value_text(row: Mapping[str, Any], side: str) -> str:
    text = _text(row[side])
    declared = row[f"{side}_declared"]
    if row[f"{side}_default"] and ("= None" in declared or declared == "(not in config)"):
        return f"{text} (the optimizer's own default; {declared})"
    if row[f"{side}_default"]:
        return f"{text} (= the optimizer's default; {declared})"
    return f"{text} ({declared})"


def _changed_value(c: Check, row: Mapping[str, Any]) -> Finding:
    """A hyperparameter that differs between the two optimizers."""
    name = row["hyperparameter"]
    to_default = row["candidate_default"] and not row["baseline_default"]
    rel = None
    if (
        isinstance(row["baseline"], int | float)
        and isinstance(row["candidate"], int | float)
        and row["baseline"]
    ):
        rel = float(row["candidate"]) / float(row["baseline"])
    big = to_default or (rel is not None and (rel >= 2 or rel <= 0.5))
    return c.finding(
        Status.SUSPECT,
        Severity.HIGH if big else Severity.MEDIUM,
        id=f"optimizer/hparam-{name}" + (f"-group{row['group']}" if row["group"] else ""),
        hypothesis=f"The optimizer's `{name}` is the same on both sides",
        values=row,
        effect=rel,
        effect_label="ratio candidate / baseline" if rel is not None else "",
        summary=f"`{name}` (group {row['group']}): baseline {_value_text(row, 'baseline')}, candidate "
        f"{_value_text(row, 'candidate')}"
        + (" — the candidate leaves it to the library default" if to_default else ""),
        details={"row": dict(row)},
        remediation=(
            f"Set `{name}` explicitly to {fmt(row['baseline'])} in the candidate's config "
            f"({row['baseline_declared'].split(' = ')[0]}) so make_optimizer passes it"
            if to_default
            else f"Restore `{name}` = {fmt(row['baseline'])} in the candidate (or keep it and let attribution "
            "measure it)."
        ),
        figures=["optimizer hyperparameters"],
    )


def _ignored_declarations(table: pd.DataFrame, configs: Mapping[str, Mapping[str, Any]]) -> dict[str, list]:
    """Per side, ``(hyperparameter, key, declared, effective)`` where the optimizer holds another value than
    its config declares (group 0, at construction)."""
    out: dict[str, list] = {s: [] for s in SIDES}
    for side in SIDES:
        for row in table[(table["group"] == 0) & (table["kind"] == "hyperparameter")].to_dict("records"):
            declared = row[f"{side}_declared"]
            if " = " not in declared or row[side] == "(absent)":
                continue
            key, value = _declared_for(row["hyperparameter"], configs[side])
            if value is None or not isinstance(value, int | float | list | tuple):
                continue
            if not same_value(value, row[side], rtol=1e-6):
                out[side].append((row["hyperparameter"], key, value, row[side]))
    return out


FLAGS_DIFFER = {
    "id": "optimizer/implementation-flags",
    "hypothesis": "The optimizers use the same implementation switches",
}
"""A secondary finding of the hyperparameter check: implementation switches (foreach, fused) that differ."""


@check("optimizer/hyperparameters", title="Declared vs effective optimizer hyperparameters", needs=built)
def hyperparameters(c: Check, setup: Built) -> Section:
    """Both setups build the same optimizer with the same hyperparameters.

    Optimizer class and every param-group hyperparameter as ``make_optimizer`` built them, side by side.
    """
    setups, configs = setup.setups, setup.configs
    table = hyperparameter_table(setups, configs)
    findings: list[Finding] = []
    classes = {s: setups[s]["class"] for s in SIDES}
    n_groups = {s: len(setups[s]["groups"]) for s in SIDES}
    structure = (
        (
            "optimizer/class",
            "Both setups use the same optimizer class",
            classes,
            "the optimizer changed: {baseline} → {candidate}",
            Severity.HIGH,
            f"Build {classes['baseline'].rsplit('.', 1)[-1]} in the candidate's make_optimizer (or measure the "
            "change with an attribution run).",
        ),
        (
            "optimizer/param-groups",
            "Both optimizers split the parameters into the same param groups",
            n_groups,
            "{baseline} param group(s) → {candidate}",
            Severity.MEDIUM,
            "Give the candidate the baseline's param groups (per-group lr / weight decay).",
        ),
    )
    for fid, hypothesis, values, text, severity, remediation in structure:
        if values["baseline"] != values["candidate"]:
            findings.append(
                c.finding(
                    Status.SUSPECT,
                    severity,
                    id=fid,
                    hypothesis=hypothesis,
                    values=values,
                    summary=text.format(**values),
                    remediation=remediation,
                )
            )
    differing = table[(~table["same"]) & (table["kind"] == "hyperparameter")]
    findings += [_changed_value(c, row) for row in differing.to_dict("records")]
    flags = table[(~table["same"]) & (table["kind"] == "implementation flag")].to_dict("records")
    if flags:
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **FLAGS_DIFFER,
                values={s: {r["hyperparameter"]: r[s] for r in flags} for s in SIDES},
                summary="implementation switches differ (speed, not the update rule): "
                + ", ".join(f"{r['hyperparameter']} {r['baseline']} → {r['candidate']}" for r in flags),
                remediation="None needed for learning; check speed if a fused/foreach path was lost.",
            )
        )
    ignored = _ignored_declarations(table, configs)
    for side in SIDES:
        for name, key, declared, effective in ignored[side]:
            other = [x for x in ignored["candidate" if side == "baseline" else "baseline"] if x[0] == name]
            alike = bool(other) and same_value(other[0][2], declared) and same_value(other[0][3], effective)
            findings.append(
                side_finding(
                    c,
                    side,
                    alike,
                    id=f"optimizer/declared-vs-effective-{name}-{side}",
                    hypothesis=f"The {side}'s optimizer uses the `{name}` its config declares",
                    values=on_side(side, declared if side == "baseline" else effective),
                    summary=f"the {side}'s config declares {key} = {declared}, but its optimizer was built with "
                    f"{name} = {fmt(effective)}",
                    details={"declared": declared, "effective": effective, "key": key},
                    remediation=f"Pass `{key}` through to the optimizer in the {side}'s make_optimizer.",
                )
            )
    if not any(f.status.is_flag for f in findings):
        hp = table[(table["group"] == 0) & (table["kind"] == "hyperparameter")]
        settings = ", ".join(f"{r['hyperparameter']} {_text(r['baseline'])}" for r in hp.to_dict("records"))
        findings.append(
            c.finding(
                Status.CLEARED,
                values=classes,
                summary=f"same optimizer ({classes['baseline'].rsplit('.', 1)[-1]}, {n_groups['baseline']} "
                f"param group(s)) with the same hyperparameters: {settings}",
            )
        )
    notes = [
        "Values are read from the optimizer object that each subject's own `make_optimizer` returns, not from the "
        "config: a key that is null or missing falls back to the optimizer class's default, marked in the table.",
    ]
    schedulers = {s: setups[s].get("scheduler") for s in SIDES}
    if any(schedulers.values()):
        notes.append(
            "Schedulers returned by make_optimizer: "
            + ", ".join(f"{s}: {(v or {}).get('class', 'none')}" for s, v in schedulers.items())
        )
    return c.section(findings, tables={"optimizer hyperparameters": table}, notes=notes)


@check("optimizer/coverage", title="Are all trainable parameters optimized?", needs=built, reads=("agents",))
def coverage(c: Check, setup: Built) -> Section:
    """Every trainable parameter is in some param group.

    Parameters that require gradients but are in no param group are frozen by accident.
    """
    summary: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        t = setup.coverage[side]
        trainable = t[t["requires_grad"].astype(bool)]
        missing = trainable[trainable["group"] < 0]
        summary[side] = {
            "trainable": len(trainable),
            "values": int(trainable["numel"].sum()),
            "missing": missing["parameter"].tolist(),
            "missing_values": int(missing["numel"].sum()),
        }
    findings = []
    for side in SIDES:
        missing = summary[side]["missing"]
        if not missing:
            continue
        alike = missing == summary["candidate" if side == "baseline" else "baseline"]["missing"]
        findings.append(
            side_finding(
                c,
                side,
                alike,
                flagged=(Status.CONFIRMED, Severity.CRITICAL),
                id=f"optimizer/frozen-{side}",
                hypothesis=f"Every trainable parameter of the {side} is optimized",
                baseline=summary["baseline"]["missing"],
                candidate=summary["candidate"]["missing"],
                effect=float(summary[side]["missing_values"]) / max(1, summary[side]["values"]),
                effect_label="fraction of trainable values never updated",
                summary=f"the {side}'s optimizer leaves {len(missing)} of {summary[side]['trainable']} trainable "
                "tensors out of every param group, frozen at their initial values: " + ", ".join(missing[:6]),
                remediation=f"Build the {side}'s optimizer over `policy.parameters()` (or add the missing tensors "
                "to a param group); set requires_grad=False where freezing is intended.",
            )
        )
    if not findings:
        b, k = summary["baseline"], summary["candidate"]
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline=b["trainable"],
                candidate=k["trainable"],
                summary=f"every trainable tensor is optimized on both sides ({b['trainable']} tensors / "
                f"{b['values']:,} values vs {k['trainable']} / {k['values']:,})",
            )
        )
    table = pd.concat([setup.coverage[s].assign(side=s) for s in SIDES], ignore_index=True)
    return c.section(
        findings,
        tables={"parameter coverage": table[["side", "parameter", "numel", "requires_grad", "group"]]},
    )
