"""Config audit: what changed between the two resolved configs, what was left to a library default, and
whether an override given through the subject's own mechanism actually lands.

Case 000 is the model: a Hydra/YAML tree rewritten as Python ("dehydration") whose scheduler fields became
None and quietly fell back to defaults. Every difference is attributed to a subsystem (the subject's
``config_keys()`` when it has one, name rules otherwise), so later audits and the summary's attribution
experiments can restore one subsystem's keys at a time.
"""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rlaudit.checks import SIDES, Check, Missing, check, run_checks, run_probe
from rlaudit.compare import classify_key, flatten
from rlaudit.config import probes
from rlaudit.findings import Finding, Severity, Status, notebook_name
from rlaudit.notebook import Section
from rlaudit.workbench import Pair, Workbench

# Library defaults a key falls back to when a config leaves it out (or sets None). Matched against the last
# dotted segment of the key; the first match wins. Sources: torch.optim.Adam, SB3 PPO, CleanRL ppo.py.
KNOWN_DEFAULTS: list[tuple[str, str]] = [
    ("eps", "torch.optim.Adam eps=1e-08 (PPO implementations use 1e-5)"),
    ("adam_eps", "torch.optim.Adam eps=1e-08 (PPO implementations use 1e-5)"),
    ("betas", "torch.optim.Adam betas=(0.9, 0.999)"),
    ("weight_decay", "torch.optim.Adam weight_decay=0"),
    ("*schedule*", "no schedule: the value stays constant for the whole run"),
    ("anneal*", "no annealing: the value stays constant for the whole run"),
    ("max_grad_norm", "no gradient clipping"),
    ("target_kl", "no early stopping on KL"),
    ("ent_coef", "SB3 PPO ent_coef=0.0 (no entropy bonus)"),
    ("*reward*", "no reward for this component"),
    ("ore", "no reward for this component"),
    ("battery", "no reward for this component"),
    ("heart", "no reward for this component"),
    ("seed", "an unseeded (time-dependent) generator"),
]


def library_default(key: str) -> str:
    """What a key most likely falls back to when left out, or a generic sentence."""
    last = key.rsplit(".", 1)[-1]
    for pattern, meaning in KNOWN_DEFAULTS:
        if fnmatch.fnmatch(last, pattern):
            return meaning
    return "whatever default the code or library applies"


@dataclass
class ConfigDiff:
    """Both flattened configs and their per-key comparison.

    Attributes:
        table: One row per key in either config: key, subsystem, baseline, candidate, change
            (``same``/``changed``/``added``/``removed``/``implicit``), relative (numeric relative change).
        baseline: Flattened baseline config.
        candidate: Flattened candidate config.
    """

    table: pd.DataFrame
    baseline: dict[str, Any]
    candidate: dict[str, Any]

    def changed(self) -> pd.DataFrame:
        return self.table[self.table["change"] != "same"]

    def keys_by_subsystem(self) -> dict[str, list[str]]:
        """Keys that differ, grouped by subsystem (what an attribution experiment would restore)."""
        out: dict[str, list[str]] = {}
        for row in self.changed().itertuples():
            out.setdefault(row.subsystem, []).append(row.key)
        return out


def _rules(pair: Pair) -> dict[str, list[str]] | None:
    """The subjects' own subsystem map (baseline first), or None to use name rules."""
    for side in (pair.baseline, pair.candidate):
        if side.ok and side.result.get("has_config_keys"):
            return side.json("config_keys")
    return None


def _values_equal(a: Any, b: Any, rtol: float = 1e-9) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=rtol, abs_tol=0.0)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def diff_configs(a: dict[str, Any], b: dict[str, Any], rules: dict[str, list[str]] | None) -> ConfigDiff:
    """Compare two nested configs key by key.

    ``changed``: both sides set a value and they differ. ``implicit``: one side sets a value, the other sets
    None (case 000's scheduler fields that became None). ``added``/``removed``: the key exists on one side
    only. In the last three cases one side falls back to a default the config does not show.
    """
    fa, fb = flatten(a), flatten(b)
    rows = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key), fb.get(key)
        in_a, in_b = key in fa, key in fb
        if in_a and in_b and _values_equal(va, vb):
            change = "same"
        elif not in_b:
            change = "removed"
        elif not in_a:
            change = "added"
        elif (va is None) != (vb is None):
            change = "implicit"
        else:
            change = "changed"
        relative = None
        if change == "changed" and isinstance(va, int | float) and isinstance(vb, int | float):
            if not isinstance(va, bool) and va != 0:
                relative = (float(vb) - float(va)) / abs(float(va))
        rows.append(
            {
                "key": key,
                "subsystem": classify_key(key, rules),
                "baseline": va if in_a else "(absent)",
                "candidate": vb if in_b else "(absent)",
                "change": change,
                "relative": relative,
            }
        )
    # Object columns keep each value as the config has it: a numeric column would turn 64 into 64.0 and None
    # into NaN (and an implicit None would no longer read as None).
    table = pd.DataFrame(
        rows, columns=["key", "subsystem", "baseline", "candidate", "change", "relative"], dtype=object
    )
    table["relative"] = pd.to_numeric(table["relative"], errors="coerce")
    return ConfigDiff(table=table, baseline=fa, candidate=fb)


def config_diff(pair: Pair) -> ConfigDiff:
    """Diff the two resolved configs of a :func:`rlaudit.config.probes.resolved_config` pair (both sides ok)."""
    return diff_configs(pair.baseline.json("config"), pair.candidate.json("config"), _rules(pair))


def load_diff(wb: Workbench) -> tuple[Pair, ConfigDiff | None]:
    """Resolve both configs (cached) and diff them; the diff is None when a side failed."""
    pair = run_probe(wb, probes.resolved_config, RESOLVE_DESC)
    return pair, (config_diff(pair) if pair.ok else None)


def _fmt(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."


def _severity(rows: pd.DataFrame) -> Severity:
    rel = rows["relative"].dropna().abs()
    if (rel >= 0.5).any() or rows["relative"].isna().any():
        return Severity.HIGH
    return Severity.MEDIUM


def _filed_under(finding: Finding, subsystem: str) -> Finding:
    """File a finding of this room under the subsystem that owns the key (the ranking counts it there)."""
    finding.subsystem = subsystem
    return finding


RESOLVE_DESC = "config: resolved configs"


def _owner_finding(row: Any) -> str:
    """The id of the finding that files a differing key under its owning subsystem."""
    return f"config/changed-{row.subsystem}" if row.change == "changed" else f"config/implicit-{row.key}"


CHANGED_VALUES = {
    "id": "config/changed-values",
    "hypothesis": "The resolved configuration is the same outside the config room's own keys",
}
"""A secondary finding of the values check: changed keys that other rooms own and judge."""


def changed_values(c: Check, diff: ConfigDiff) -> Finding | None:
    """NOTED in the config room for every resolved value that differs and is owned by another subsystem.

    Each difference is judged by the finding filed under its owning subsystem (``config/changed-<subsystem>``,
    ``config/implicit-<key>``); this one shows the config room that its configuration changed, with a pointer
    to the owning room, and says so in its details (``mirror_of``, ``knock_on``) so the ranking never counts
    the difference twice. None when nothing outside the config subsystem differs.
    """
    rows = diff.changed()
    rows = rows[rows["subsystem"] != "config"]
    if rows.empty:
        return None
    keys = [
        {
            "key": r.key,
            # the flattened configs' own values: the table's columns coerce 64 to 64.0 and None to NaN
            "baseline": diff.baseline.get(r.key, "(absent)"),
            "candidate": diff.candidate.get(r.key, "(absent)"),
            "change": r.change,
            "owner": r.subsystem,
            "room": notebook_name(r.subsystem),
            "finding": _owner_finding(r),
        }
        for r in rows.itertuples()
    ]
    items = [f"{k['key']}: {_fmt(k['baseline'])} → {_fmt(k['candidate'])} (see {k['room']})" for k in keys]
    rooms = list(dict.fromkeys(k["room"] for k in keys))
    return c.finding(
        Status.NOTED,
        Severity.LOW,
        **CHANGED_VALUES,
        values={s: {k["key"]: k[s] for k in keys} for s in SIDES},
        effect=float(len(keys)),
        effect_label="keys changed (judged in their owning rooms)",
        summary=f"the configuration changed: {len(keys)} resolved value(s) differ, each judged in the room that "
        "owns it: " + "; ".join(items[:6]) + (" ..." if len(items) > 6 else ""),
        details={
            "keys": keys,
            "mirror_of": sorted({k["finding"] for k in keys}),
            "knock_on": True,
        },
        remediation="See "
        + ", ".join(rooms)
        + " for what each change does; restore the keys there or let the "
        "summary's attribution measure whether they matter.",
        figures=["config diff"],
    )


@check(
    "config/values", title="Resolved values, side by side", probe=probes.resolved_config, desc=RESOLVE_DESC
)
def values(c: Check, pair: Pair) -> Section:
    """Both setups resolve to the same configuration values.

    Per subsystem: which resolved values differ (SUSPECT), and which subsystems are identical (CLEARED).
    """
    diff = config_diff(pair)
    findings: list[Finding] = []
    changed = diff.table[diff.table["change"] == "changed"]
    for subsystem, rows in changed.groupby("subsystem", sort=True):
        items = [f"{r.key}: {_fmt(r.baseline)} → {_fmt(r.candidate)}" for r in rows.itertuples()]
        finding = c.finding(
            Status.SUSPECT,
            _severity(rows),
            id=f"config/changed-{subsystem}",
            hypothesis=f"The {subsystem} settings are the same in both configs",
            baseline={r.key: r.baseline for r in rows.itertuples()},
            candidate={r.key: r.candidate for r in rows.itertuples()},
            effect=float(len(rows)),
            effect_label="keys changed",
            summary=f"{len(rows)} {subsystem} key(s) differ: "
            + "; ".join(items[:6])
            + (" ..." if len(items) > 6 else ""),
            details={"keys": rows[["key", "baseline", "candidate", "change"]].to_dict("records")},
            remediation=f"Restore the {subsystem} keys to the baseline's values (or keep them and let the "
            "summary's attribution measure whether they matter).",
            figures=["config diff"],
        )
        findings.append(_filed_under(finding, str(subsystem)))
    same = diff.table[diff.table["change"] == "same"]
    cleared = sorted(set(same["subsystem"]) - set(changed["subsystem"]))
    if cleared:
        counts = same[same["subsystem"].isin(cleared)].groupby("subsystem").size()
        findings.append(
            c.finding(
                Status.CLEARED,
                id="config/unchanged",
                baseline=int(counts.sum()),
                candidate=int(counts.sum()),
                summary="identical settings for " + ", ".join(f"{s} ({n} keys)" for s, n in counts.items()),
                details={"subsystems": cleared},
            )
        )
    if (mirror := changed_values(c, diff)) is not None:
        findings.append(mirror)
    shown = diff.table[diff.table["change"] != "same"].reset_index(drop=True)
    shown.insert(2, "room", [notebook_name(s) for s in shown["subsystem"]])
    return c.section(
        findings,
        tables={"config diff": shown},
        notes=[f"{len(diff.table)} keys compared; {len(shown)} differ."],
    )


@check(
    "config/implicit-defaults",
    title="Settings left to implicit defaults",
    probe=probes.resolved_config,
    desc=RESOLVE_DESC,
)
def implicit_defaults(c: Check, pair: Pair) -> Section:
    """Neither setup leaves a setting to an implicit default the other sets explicitly.

    Keys one side sets and the other leaves out or sets to None: the value then comes from code or a
    library, invisible in the config (Adam's eps=1e-8, a schedule that became None).
    """
    rows = config_diff(pair).table
    rows = rows[rows["change"].isin(["implicit", "added", "removed"])]
    findings = []
    for r in rows.itertuples():
        missing_side = "candidate" if r.candidate is None or r.candidate == "(absent)" else "baseline"
        setting_side = "baseline" if missing_side == "candidate" else "candidate"
        value = r.baseline if setting_side == "baseline" else r.candidate
        finding = c.finding(
            Status.SUSPECT,
            Severity.HIGH,
            id=f"config/implicit-{r.key}",
            hypothesis=f"`{r.key}` is set explicitly on both sides",
            baseline=r.baseline,
            candidate=r.candidate,
            summary=f"{r.key}: the {setting_side} sets {_fmt(value)}; the {missing_side} leaves it to "
            f"{library_default(r.key)}",
            remediation=f"Set `{r.key}` explicitly in the {missing_side}'s config to {_fmt(value)} "
            "(or confirm the default is intended).",
        )
        findings.append(_filed_under(finding, str(r.subsystem)))
    if not findings:
        findings.append(c.finding(Status.CLEARED, summary="every key set on one side is set on the other"))
    return c.section(findings, tables={"implicit defaults": rows.reset_index(drop=True)} if len(rows) else {})


def pick_overrides(
    baseline: dict[str, Any], candidate: dict[str, Any], per_section: int = 1
) -> dict[str, Any]:
    """Choose test overrides: per top-level section, numeric keys equal on both sides, set to a new value.

    Floats are preferred over integers (integer keys are often sizes with divisibility constraints), and
    list elements are skipped (Hydra-style overrides set whole lists).

    Returns:
        ``{dotted_key: new_value}``; floats are doubled (0 becomes 0.125), ints incremented.
    """
    fa, fb = flatten(baseline), flatten(candidate)
    eligible: dict[str, list[str]] = {}
    for key in sorted(set(fa) & set(fb)):
        va = fa[key]
        if isinstance(va, bool) or not isinstance(va, int | float) or not _values_equal(va, fb[key]):
            continue
        if any(part.isdigit() for part in key.split(".")):
            continue
        eligible.setdefault(key.split(".", 1)[0], []).append(key)
    chosen: dict[str, Any] = {}
    for keys in eligible.values():
        keys.sort(key=lambda k: not isinstance(fa[k], float))  # stable: floats first, then sorted names
        for key in keys[:per_section]:
            va = fa[key]
            chosen[key] = (va * 2 if va != 0 else 0.125) if isinstance(va, float) else va + 1
    return chosen


def override_pairs(wb: Workbench) -> list[Pair]:
    """Both resolved configs, then both resolved again with the same test overrides (:func:`pick_overrides`)
    through each subject's own ``config(overrides=...)``.

    Raises:
        Missing: A side's ``config()`` takes no ``overrides`` argument.
    """
    pair = run_probe(wb, probes.resolved_config, RESOLVE_DESC)
    if not pair.ok:
        return [pair]  # the check's guard reports the failure
    unsupported = [side.side for side in pair if not side.result.get("accepts_overrides")]
    if unsupported:
        raise Missing(
            "`overrides=` argument to config()",
            "Accept `overrides: list[str]` (Hydra-style `dotted.key=value`) in config() and apply them to the "
            "resolved config, so overrides can be tested and attribution can restore keys.",
            unsupported,
        )
    wanted = pick_overrides(pair.baseline.json("config"), pair.candidate.json("config"))
    strings = [f"{k}={json.dumps(v)}" for k, v in wanted.items()]
    return [pair, run_probe(wb, probes.config_with_overrides, "config: with overrides", overrides=strings)]


@check("config/overrides", title="Do overrides land?", needs=override_pairs)
def overrides(c: Check, pairs: list[Pair]) -> Section:
    """An override given through each setup's own mechanism lands in its resolved config.

    Apply the same overrides through each subject's own ``config(overrides=...)`` and check that each
    lands in the resolved config (an override silently dropped during resolution is a classic of config
    rewrites).
    """
    pair, result = pairs
    wanted = pick_overrides(pair.baseline.json("config"), pair.candidate.json("config"))
    rows = []
    for side in result:
        resolved = flatten(side.json("config"))
        for key, value in wanted.items():
            got = resolved.get(key, "(absent)")
            rows.append(
                {
                    "side": side.side,
                    "key": key,
                    "requested": value,
                    "resolved": got,
                    "landed": _values_equal(got, value),
                }
            )
    table = pd.DataFrame(rows, columns=["side", "key", "requested", "resolved", "landed"])
    ignored = {s: table[(table["side"] == s) & ~table["landed"]]["key"].tolist() for s in SIDES}
    findings = []
    for side in SIDES:
        if not ignored[side]:
            continue
        other = "baseline" if side == "candidate" else "candidate"
        only_here = [k for k in ignored[side] if k not in ignored[other]]
        sub = table[(table["side"] == side) & ~table["landed"]]
        detail = "; ".join(
            f"{r.key}={_fmt(r.requested)} resolved to {_fmt(r.resolved)}" for r in sub.itertuples()
        )
        shared = "" if only_here else f" (the {other} ignores the same overrides)"
        findings.append(
            c.finding(
                # Only a difference can explain the candidate's regression; the severity depends on the evidence
                # alone, so the same behaviour on both sides gets the same severity.
                Status.CONFIRMED if (side == "candidate" and only_here) else Status.NOTED,
                Severity.HIGH if only_here else Severity.MEDIUM,
                id=f"config/override-ignored-{side}",
                hypothesis=f"Overrides land in the {side}'s resolved config",
                baseline=len(wanted) - len(ignored["baseline"]),
                candidate=len(wanted) - len(ignored["candidate"]),
                effect=float(len(ignored[side])),
                effect_label="overrides ignored",
                summary=f"the {side} silently ignored {len(ignored[side])} of {len(wanted)} overrides: {detail}"
                + shared,
                details={"ignored": ignored[side], "only_here": only_here, "requested": wanted},
                remediation=f"Fix the {side}'s config resolution so that overrides of "
                f"{', '.join(f'`{k}`' for k in ignored[side])} are applied (and fail loudly on unknown keys)"
                + (
                    "; until then attribution cannot restore these keys by override."
                    if not only_here
                    else "."
                ),
            )
        )
    if not findings:
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline=len(wanted),
                candidate=len(wanted),
                summary=f"all {len(wanted)} test overrides landed on both sides ({', '.join(wanted)})",
            )
        )
    return c.section(findings, tables={"overrides": table})


CHECKS = (values, implicit_defaults, overrides)
"""Every config check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every config check, in notebook order."""
    return run_checks(wb, CHECKS)
