"""Overrides check: the same test overrides applied through each subject's own ``config(overrides=...)``,
and whether each lands in the resolved config (an override silently dropped during resolution is a classic of
config rewrites).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from rlaudit.checks import SIDES, Check, Missing, check, run_probe
from rlaudit.config import probes
from rlaudit.config.diff import RESOLVE_DESC, short_value, values_equal
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.findings import Severity, Status
from rlaudit.flatdiff import flatten
from rlaudit.notebook import Section


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
        if isinstance(va, bool) or not isinstance(va, int | float) or not values_equal(va, fb[key]):
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
                    "landed": values_equal(got, value),
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
            f"{r.key}={short_value(r.requested)} resolved to {short_value(r.resolved)}"
            for r in sub.itertuples()
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
