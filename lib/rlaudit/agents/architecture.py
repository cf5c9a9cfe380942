"""Architecture check: the two module trees aligned by structure (:mod:`rlaudit.agents.align`,
:mod:`rlaudit.agents.trees`), so a renamed module is NOTED and only a layer added, removed, resized or changed in
kind is SUSPECT, with the changed quantity named (hidden width, depth, activation).
"""

from __future__ import annotations

import pandas as pd

from rlaudit.agents import trees as tr
from rlaudit.agents.align import block_summary
from rlaudit.agents.common import NETWORK, tree_pair
from rlaudit.checks import Check, check
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section

# Findings a check makes beside its main one, declared once: id, hypothesis and the remedy.
IO_FOLLOWS_SPACES = {
    "id": "agents/io-follows-spaces",
    "hypothesis": "Input and output layers match the environment's spaces on both sides",
    "remediation": "Nothing to change in the network; investigate the space change in 10_spaces.",
    "reads": ("spaces",),
}
RENAMED = {
    "id": "agents/renamed",
    "hypothesis": "Modules keep their names",
    "remediation": "No change needed for training; map the old names when loading older checkpoints "
    "(see 04_checkpointing).",
}


@check("agents/architecture", title="Architecture: module trees aligned by structure", **NETWORK)
def architecture(c: Check, pair: Pair) -> Section:
    """The two networks have the same layers, sizes and activations.

    Module trees side by side, aligned by structure: layers added, removed, resized or changed in kind.
    """
    ta, tb = tree_pair(pair)
    cmp = tr.compare_trees(ta, tb)
    sum_a, sum_b = block_summary(cmp["a"]), block_summary(cmp["b"])
    total_a, total_b = ta["blocks"]["total"], tb["blocks"]["total"]
    findings: list[Finding] = []
    if cmp["real"]:
        phrases = tr.changes(cmp)
        kinds = {part for p in cmp["real"] for part in p.change.split("+")}
        quantities = tr.changed_quantities(ta, tb)
        what = [
            word
            for word, present in (
                ("resized", "resized" in kinds),
                ("changed in kind", "kind" in kinds),
                ("added/removed", bool(kinds & {"added", "removed"})),
                ("with changed settings", "settings" in kinds),
            )
            if present
        ]
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH if kinds & {"kind", "added", "removed", "resized"} else Severity.MEDIUM,
                baseline=sum_a,
                candidate=sum_b,
                effect=float(len(cmp["real"])),
                effect_label="modules changed",
                summary=(f"{'; '.join(quantities)}: " if quantities else "")
                + f"{len(cmp['real'])} module(s) {' and '.join(what)}: "
                + "; ".join(phrases[:6])
                + (" ..." if len(phrases) > 6 else "")
                + ("" if quantities else f" (parameters {tr.count(total_a)} → {tr.count(total_b)})"),
                details={
                    "changes": phrases,
                    "quantities": quantities,
                    "blocks": {"baseline": ta["blocks"], "candidate": tb["blocks"]},
                },
                remediation="Make the candidate's make_policy build the baseline's layers again: "
                + "; ".join(quantities or phrases[:3])
                + " (restore the config key or code that sets them, then rerun this notebook).",
                figures=["aligned modules"],
            )
        )
    if cmp["knock_on"]:
        notes = sorted({row for row in cmp["table"]["note"] if row})
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **IO_FOLLOWS_SPACES,
                baseline={"observation": ta.get("obs_size"), "actions": ta.get("n_actions")},
                candidate={"observation": tb.get("obs_size"), "actions": tb.get("n_actions")},
                effect=float(len(cmp["knock_on"])),
                effect_label="layers resized by the spaces",
                summary="; ".join(notes)
                + ": "
                + "; ".join(tr.changes(cmp, "knock_on"))
                + " — a knock-on of a change in the observation or action space (see 10_spaces), not of "
                "the network code",
            )
        )
    if cmp["renamed"]:
        names = [f"{cmp['a'][p.a]['path']} → {cmp['b'][p.b]['path']}" for p in cmp["renamed"]]  # type: ignore[index]
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.INFO,
                **RENAMED,
                baseline=len(cmp["a"]),
                candidate=len(cmp["b"]),
                effect=float(len(names)),
                effect_label="modules renamed",
                summary=f"{len(names)} module(s) renamed with the same class and shapes: "
                + ", ".join(names[:6])
                + (" ..." if len(names) > 6 else "")
                + "; a rename changes checkpoint keys, not the network",
            )
        )
    if not cmp["real"]:
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline=sum_a,
                candidate=sum_b,
                effect=0.0,
                effect_label="modules changed",
                summary="same architecture, "
                + tr.architecture_phrase(ta)
                + ("" if not cmp["knock_on"] else " (the input layer follows the observation size)"),
            )
        )
    blocks = sorted(set(ta["blocks"]) | set(tb["blocks"]), key=lambda k: (k == "total", k))
    counts = pd.DataFrame(
        [
            {
                "block": k,
                "baseline": ta["blocks"].get(k),
                "candidate": tb["blocks"].get(k),
                "ratio": (tb["blocks"].get(k) or 0) / ta["blocks"][k] if ta["blocks"].get(k) else None,
            }
            for k in blocks
        ]
    )
    return c.section(
        findings,
        tables={
            "aligned modules": cmp["table"].rename(columns={"change": "how it changed"}),
            "parameters per block": counts.rename(
                columns={
                    "baseline": "baseline parameters",
                    "candidate": "candidate parameters",
                    "ratio": "candidate / baseline",
                }
            ),
            "module settings (baseline)": tr.module_table(cmp["a"]),
            "module settings (candidate)": tr.module_table(cmp["b"]),
        },
        notes=[
            f"Networks built by each subject's `make_policy` (policy class {ta.get('policy_class')} | "
            f"{tb.get('policy_class')}), modules in execution order; aligned by class and shape, names only "
            "break ties."
        ],
    )
