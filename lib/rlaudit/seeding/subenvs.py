"""Each vectorized environment starts from its own seed (seeding/sub-envs).

A vector of environments all reset with one seed replays one trajectory N times: the batch looks N times larger
than the experience in it. Each sub-environment is stepped with the same actions
(:func:`rlaudit.seeding.probes.subenv_trajectories`); sub-environments whose observations still differ were
seeded apart. The same is done for a second seed, so a side whose environments ignore the seed is seen too.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair
from rlaudit.evidence import Verdict
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.seeding import probes


def subenv_report(trajectories: dict[str, Any], seed: int) -> dict[str, Any]:
    """One side's sub-environment seeding, from its ``trajectories.json``.

    Returns:
        ``num_envs``; ``distinct`` (distinct trajectories among them at ``seed``), ``distinct_starts``
        (distinct first observations); ``seed_sensitive`` (the two seeds give different trajectories).
    """
    first, second = trajectories[str(seed)], trajectories[str(seed + 1)]
    return {
        "num_envs": int(first["num_envs"]),
        "distinct": len(set(first["trajectories"])),
        "distinct_starts": len(set(first["starts"])),
        "seed_sensitive": first["trajectories"] != second["trajectories"],
    }


def _alike(report: dict[str, Any]) -> bool:
    """Several sub-environments, every one on the same trajectory."""
    return report["num_envs"] > 1 and report["distinct"] == 1


def subenv_verdict(base: dict[str, Any], cand: dict[str, Any], seed: int) -> Verdict:
    """The verdict on two sides' :func:`subenv_report`: a regression only where the candidate alone replays one
    trajectory across its sub-environments, or alone ignores the seed (symmetric evidence, symmetric verdict)."""
    if all(not r["seed_sensitive"] and r["distinct"] == 1 for r in (base, cand)):
        return Verdict(
            Status.NOTED,
            Severity.INFO,
            "not measurable: on both sides every seed and every sub-environment gives the same trajectory under "
            "the same actions (a deterministic environment shows no seed)",
            "Nothing to do; the environment's seeding cannot be seen from its observations.",
        )
    if _alike(cand) and not _alike(base):
        return Verdict(
            Status.CONFIRMED,
            Severity.HIGH,
            f"the candidate's {cand['num_envs']} vectorized environments replay one trajectory (all reset with "
            f"the same seed); the baseline's {base['num_envs']} give {base['distinct']} distinct ones",
            "Seed each sub-environment apart, e.g. envs.reset(seed=seed) on the vector env (Gymnasium seeds "
            "sub-environment i with seed + i), not env.reset(seed=seed) inside each env factory.",
        )
    if base["seed_sensitive"] and not cand["seed_sensitive"]:
        return Verdict(
            Status.CONFIRMED,
            Severity.HIGH,
            f"the candidate's environments give the same trajectories for seeds {seed} and {seed + 1}: the run's "
            "seed does not reach them (the baseline's change with it)",
            "Pass the run's seed to env.reset(seed=...) on the first reset (and to the action and observation "
            "spaces' seed()), instead of a constant or no seed.",
        )
    if _alike(base) != _alike(cand) or base["seed_sensitive"] != cand["seed_sensitive"]:
        return Verdict(
            Status.NOTED,
            Severity.LOW,
            "the candidate seeds its environments apart where the baseline did not (sub-environments or seeds "
            "that gave one trajectory in the baseline differ in the candidate): a fix, not a regression",
            "Nothing to do for a regression.",
        )
    if (_alike(base) and _alike(cand)) or (not base["seed_sensitive"] and not cand["seed_sensitive"]):
        return Verdict(
            Status.NOTED,
            Severity.LOW,
            "both sides seed their environments the same questionable way (identical sub-environments or no "
            "dependence on the seed): not a difference between them",
            "Worth fixing in both, but it does not explain a regression.",
        )
    if (base["distinct"] == base["num_envs"]) == (cand["distinct"] == cand["num_envs"]):
        return Verdict(
            Status.CLEARED,
            Severity.INFO,
            "each side's sub-environments follow their own trajectories and change with the seed",
            "Nothing to do.",
        )
    return Verdict(
        Status.SUSPECT,
        Severity.MEDIUM,
        f"some sub-environments share a trajectory on one side only: {base['distinct']} of {base['num_envs']} "
        f"distinct in the baseline, {cand['distinct']} of {cand['num_envs']} in the candidate",
        "Check how each env factory seeds its environment (a seed taken modulo a small number, or reused across "
        "workers).",
    )


@check(
    "seeding/sub-envs",
    title="Does each vectorized environment start from its own seed?",
    probe=probes.subenv_trajectories,
    desc="sub-environment seeds",
    reads=("env",),
)
def sub_envs(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """Each vectorized environment starts from its own seed, and a different run seed gives different
    environments, on both sides.

    Every sub-environment steps through one shared action sequence; distinct trajectories count the seeds.
    """
    rep = {s: subenv_report(pair[s].json("trajectories"), seed) for s in SIDES}
    table = pd.DataFrame(
        [
            {
                "side": s,
                "sub-environments": rep[s]["num_envs"],
                "distinct trajectories": rep[s]["distinct"],
                "distinct first observations": rep[s]["distinct_starts"],
                f"seed {seed + 1} changes them": "yes" if rep[s]["seed_sensitive"] else "no",
            }
            for s in SIDES
        ]
    )
    measured = {
        s: {"distinct trajectories": rep[s]["distinct"], "seed changes them": rep[s]["seed_sensitive"]}
        for s in SIDES
    }
    values = {
        s: f"{rep[s]['distinct']} distinct of {rep[s]['num_envs']}; the seed "
        + ("changes them" if rep[s]["seed_sensitive"] else "changes nothing")
        for s in SIDES
    }
    finding = c.conclude(
        subenv_verdict(rep["baseline"], rep["candidate"], seed), values=values, measured=measured
    )
    return c.section(
        finding,
        tables={"sub-environment trajectories": table},
        notes="Every sub-environment gets the same actions, drawn from the seed; two sub-environments whose "
        "observations never differ replay one trajectory. An environment that is deterministic at reset and in "
        "its transitions shows no seed, and says so.",
    )
