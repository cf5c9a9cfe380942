"""Execution check: observations flow through both networks the same way: call order and shapes on real
observations, shared or separate actor and critic trunks, input and head sizes against the spaces.
"""

from __future__ import annotations

from typing import Any

from rlaudit.agents import trees as tr
from rlaudit.agents.common import NETWORK, tree_pair
from rlaudit.checks import Check, check
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section

# Findings the check makes beside its main one, declared once: id, hypothesis and the remedy.
IO_SIZES = {
    "id": "agents/io-sizes",
    "hypothesis": "Each network's input matches the observation size and its policy head the action count",
    "remediation": "Build the network from the environment's spaces (observation size and action count) instead "
    "of hard-coded sizes.",
}
TRUNK = {
    "id": "agents/trunk",
    "hypothesis": "Actor and critic share (or separate) their trunk the same way on both sides",
    "remediation": "Restore the baseline's trunk layout (separate actor and critic networks, or the same shared "
    "encoder) in the candidate's make_policy.",
}
REPEATED_CALLS = {
    "id": "agents/repeated-calls",
    "hypothesis": "Each module runs as many times per forward pass on both sides",
    "remediation": "Check whether the extra calls are intended (weight sharing) or a duplicated forward pass.",
}


def _heads_text(facts: dict[str, Any]) -> str:
    """``policy head 3 = 3 actions; value head 1``, saying what the pass has not: continuous actions have no
    count to match, and a TD3 or DDPG policy's forward runs the actor alone (no value head)."""
    width, n = facts["policy_width"], facts["n_actions"]
    if width is None and n is None:
        policy = "continuous actions (no action count for a head to match)"
    else:
        policy = f"policy head {width if width is not None else 'not found'} = {n if n is not None else '?'} actions"
    value = facts["value_width"]
    return (
        policy + "; " + (f"value head {value}" if value is not None else "no value head in the forward pass")
    )


def _io_problems(facts: dict[str, dict[str, Any]]) -> list[str]:
    """Per side, an input narrower or wider than the observation, or a policy head not as wide as the actions."""
    problems = []
    for side, f in facts.items():
        if not f["inputs_ok"]:
            problems.append(
                f"the {side}'s input layer(s) take {f['inputs']} but the observation has {f['obs_size']} features"
            )
        if (
            f["n_actions"] is not None
            and f["policy_width"] is not None
            and f["policy_width"] != f["n_actions"]
        ):
            problems.append(
                f"the {side}'s policy head has {f['policy_width']} outputs for {f['n_actions']} actions"
            )
    return problems


def _trunk(facts: dict[str, Any]) -> str:
    return "shared: " + ", ".join(facts["shared_trunk"]) if facts["shared_trunk"] else "separate"


@check("agents/execution", title="Execution order and shapes on real observations", **NETWORK)
def execution(c: Check, pair: Pair) -> Section:
    """Observations flow through both networks the same way (order, shapes, trunks, input and heads)

    Execution order and shapes on real observations, shared vs separate trunks, input and head sizes.
    """
    ta, tb = tree_pair(pair)
    fa, fb = tr.io_facts(ta), tr.io_facts(tb)
    findings: list[Finding] = []
    problems = _io_problems({"baseline": fa, "candidate": fb})
    if problems:
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH,
                **IO_SIZES,
                baseline=fa["inputs"],
                candidate=fb["inputs"],
                summary="; ".join(problems),
            )
        )
    trunk_a, trunk_b = _trunk(fa), _trunk(fb)
    if bool(fa["shared_trunk"]) != bool(fb["shared_trunk"]):
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH,
                **TRUNK,
                summary=f"actor and critic trunks are {trunk_a} in the baseline but {trunk_b} in the candidate: "
                "a shared trunk lets the value loss shape the policy's features",
                baseline=trunk_a,
                candidate=trunk_b,
            )
        )
    rep_a, rep_b = fa["repeated_calls"], fb["repeated_calls"]
    if rep_a != rep_b:
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **REPEATED_CALLS,
                summary=f"modules called more than once per pass: {rep_a or 'none'} vs {rep_b or 'none'}",
                baseline=rep_a or "each module once",
                candidate=rep_b or "each module once",
            )
        )
    if not findings:
        widths = {
            side: ", ".join(str(v) for v in f["inputs"].values() if v is not None)
            for side, f in (("a", fa), ("b", fb))
        }
        inputs = f"input {widths['a'] or '—'} = observation {fa['obs_size']}"
        if fa["obs_size"] != fb["obs_size"]:
            inputs += f" | {widths['b'] or '—'} = {fb['obs_size']}"
        heads = _heads_text(fa)
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline={"calls": len(ta["calls"]), "trunk": trunk_a, "entry": fa["entry"]},
                candidate={"calls": len(tb["calls"]), "trunk": trunk_b, "entry": fb["entry"]},
                summary=f"same flow: {len(ta['calls'])} | {len(tb['calls'])} module calls via "
                f"`{fa['entry']}`, {trunk_a} actor and critic trunks; {inputs}; {heads}",
            )
        )
    return c.section(
        findings,
        tables={
            "forward pass (baseline)": tr.calls_frame(ta),
            "forward pass (candidate)": tr.calls_frame(tb),
        },
        notes=[
            f"One forward pass on {ta.get('batch')} observations from a seeded random-policy rollout, traced with "
            "forward hooks on every leaf module; `fed by` names the module (or `obs`) whose output each call "
            "received."
        ],
    )
