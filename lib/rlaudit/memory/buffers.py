"""How big are the rollout buffers? num_envs x num_steps x observation size, and the other per-step
buffers the configs imply, side by side."""

from __future__ import annotations

import math

import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair
from rlaudit.evidence import fmt
from rlaudit.findings import Severity, Status
from rlaudit.memory import probes
from rlaudit.memory.common import mib
from rlaudit.notebook import Section


@check(
    "memory/buffers",
    title="How big are the rollout buffers?",
    probe=probes.buffer_sizes,
    desc="memory: buffer sizes",
    reads=("env", "spaces", "trainer"),
)
def buffers(c: Check, pair: Pair) -> Section:
    """The rollout buffers the configs imply have the same size.

    num_envs x num_steps x observation size (and the other per-step buffers), side by side.
    """
    res = {s: pair[s].result for s in SIDES}
    rows = [
        {"quantity": q, **{s: res[s].get(k) for s in SIDES}}
        for q, k in (
            ("num_envs (config)", "num_envs_config"),
            ("num_envs (built)", "num_envs_built"),
            ("num_steps", "num_steps"),
            ("observation size", "obs_size"),
        )
    ]
    names = list(dict.fromkeys([*res["baseline"]["buffers"], *res["candidate"]["buffers"]]))
    for name in names:
        rows.append(
            {"quantity": f"{name} (MiB)", **{s: res[s]["buffers"].get(name, math.nan) / 2**20 for s in SIDES}}
        )
    total = {s: float(sum(res[s]["buffers"].values())) for s in SIDES}
    rows.append({"quantity": "total (MiB)", **{s: total[s] / 2**20 for s in SIDES}})
    table = pd.DataFrame(rows)
    if not total["baseline"] or not total["candidate"]:
        finding = c.finding(
            Status.NOTED,
            summary="no rollout length key (num_steps) in a config; buffer sizes not computed",
            remediation="Name the rollout length num_steps in the config to size buffers.",
        )
        return c.section(finding, tables={"buffers": table})
    ratio = total["candidate"] / total["baseline"]
    changes = [
        f"{r['quantity']} {fmt(r['baseline'])} -> {fmt(r['candidate'])}"
        for r in rows[:4]
        if r["baseline"] != r["candidate"]
    ]
    common = {
        "baseline": mib(total["baseline"]),
        "candidate": mib(total["candidate"]),
        "effect": ratio,
        "effect_label": "buffer size ratio, candidate / baseline",
        "details": {"table": table.to_dict("records")},
    }
    if not 0.5 <= ratio <= 2.0:
        finding = c.finding(
            Status.NOTED,
            Severity.MEDIUM,
            **common,
            summary=f"the candidate's rollout buffers take {mib(total['candidate'])} vs "
            f"{mib(total['baseline'])} (x{fmt(ratio)}): "
            + "; ".join(changes)
            + " (a knock-on of the environment or trainer settings that changed)",
            remediation="Check that the change of num_envs, num_steps or observation size is intended.",
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            **common,
            summary=f"rollout buffers of {mib(total['baseline'])} vs {mib(total['candidate'])}"
            + (": " + "; ".join(changes) if changes else " (same shapes)"),
            remediation="Nothing to do.",
        )
    return c.section(finding, tables={"buffers": table})
