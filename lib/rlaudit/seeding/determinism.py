"""Same seed, same run: two fresh processes with one seed agree, and two different seeds differ.

Case 000's torch generator was never seeded, so two runs with the same seed started from different weights.
Fresh interpreters bring their own hash randomization and untouched global generators, which a replica in the
already-running worker would not.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.seeding.common import (
    compare_replicas,
    describe_difference,
    errors_finding,
    replicas_pair,
    side_replicas,
)


def same_seed_report(rep: dict[str, Any]) -> dict[str, Any]:
    """One side's determinism: fresh replicas among themselves, the worker's replica against a fresh one,
    and a different seed against the same seed."""
    fresh = rep["fresh"]
    inproc = rep["in_process"]
    ok_fresh = [r for r in fresh if "error" not in r]
    fresh_cmp = compare_replicas(ok_fresh[0], ok_fresh[1]) if len(ok_fresh) >= 2 else None
    warm_cmp = compare_replicas(ok_fresh[0], inproc["same"]) if ok_fresh else None
    other = compare_replicas(inproc["same"], inproc["other_seed"])
    insensitive = []
    if "env" in other["parts"] and other["env_step"] is None and "env" not in other["errors"]:
        insensitive.append("environment rollout")
    if "train" in other["parts"] and other["init"] is True:
        insensitive.append("initial weights")
    if (
        "gradient norms" in other["recorded"]
        and other["grad_step"] is None
        and "train" not in other["errors"]
    ):
        insensitive.append("gradient norms")
    if "train" in other["parts"] and other["episodes"] is True:
        insensitive.append("episode statistics")
    return {
        "fresh": fresh_cmp,
        "warm": warm_cmp,
        "other_seed": other,
        "insensitive": insensitive,
        "fresh_errors": [r["error"] for r in fresh if "error" in r],
        "hashseed": inproc["same"].get("hashseed"),
    }


def _recorded(rep: dict[str, Any]) -> list[str]:
    """What one side's same-seed replicas recorded (fresh processes, else the worker's), by name."""
    cmp = rep["fresh"] or rep["warm"] or rep["other_seed"]
    return list(cmp["recorded"]) if cmp else []


def _replica_text(cmp: dict[str, Any] | None, fallback: str = "n/a") -> str:
    if not cmp:
        return fallback
    return "identical" if cmp["identical"] else describe_difference(cmp)


SEED_IGNORED = {
    "id": "seeding/seed-ignored",
    "hypothesis": "Different seeds give different rollouts, initial weights and updates",
}
"""A secondary finding of the fresh-processes check: parts that come out the same for two different seeds."""


@check("seeding/fresh-processes", title="Same seed, two fresh processes: same run?", needs=replicas_pair)
def fresh_processes(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """With the same seed, two fresh processes produce identical rollouts, initial weights and first updates;
    different seeds produce different ones.

    Seeded replicas in new interpreters, compared digest by digest.
    """
    reps = side_replicas(c, pair)
    if (f := errors_finding(c, reps)) is not None:
        return c.section(f)
    rep = {s: same_seed_report(reps[s]) for s in SIDES}
    recorded = {s: _recorded(rep[s]) for s in SIDES}
    if not recorded["baseline"] and not recorded["candidate"]:
        c.missing(
            "record of a seeded run to compare (weights, gradient norms, losses, episodes or env rollouts)",
            "In train(), hand the policy and optimizer to recorder.watch(policy, optimizer) and report "
            "episodes through recorder.episode(step=..., **stats); or expose make_env(config, seed).",
        )
    rows = [
        {
            "side": s,
            "two fresh processes, same seed": _replica_text(
                rep[s]["fresh"], "; ".join(rep[s]["fresh_errors"]) or "n/a"
            ),
            "fresh vs worker, same seed": _replica_text(rep[s]["warm"]),
            "different seeds": (
                "differ" if not rep[s]["insensitive"] else "identical " + ", ".join(rep[s]["insensitive"])
            ),
            "PYTHONHASHSEED": rep[s]["hashseed"] or "(random)",
        }
        for s in SIDES
    ]
    table = pd.DataFrame(rows)
    findings = []
    broken = {s: bool(rep[s]["fresh"]) and not rep[s]["fresh"]["identical"] for s in SIDES}
    cand, base = rep["candidate"], rep["baseline"]
    if broken["candidate"] and not broken["baseline"]:
        what = describe_difference(cand["fresh"])
        findings.append(
            c.finding(
                Status.CONFIRMED,
                Severity.HIGH,
                baseline="identical",
                candidate=f"differ: {what}",
                effect=float(len(cand["fresh"]["init_tensors"])) if cand["fresh"]["init"] is False else None,
                effect_label="initial weight tensors that differ between same-seed runs",
                summary=(
                    f"same seed {seed}, two fresh processes: the candidate's {what} differ, the baseline's are "
                    "identical: some generator is not seeded from the run's seed"
                ),
                details={"candidate": cand["fresh"], "baseline": base["fresh"]},
                remediation=(
                    "Seed every generator from the run's seed in one place (torch.manual_seed(seed), "
                    "np.random.default_rng(seed), env.reset(seed=seed)); check for torch.seed() or "
                    "unseeded default_rng() calls."
                ),
            )
        )
    elif broken["candidate"] and broken["baseline"]:
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.MEDIUM,
                values={s: describe_difference(rep[s]["fresh"]) for s in SIDES},
                summary="neither setup reproduces itself with the same seed in fresh processes",
                remediation="Seed both setups fully before comparing single runs; until then compare over many "
                "seeds.",
            )
        )
    if cand["insensitive"] and not set(cand["insensitive"]) <= set(base["insensitive"]):
        new = sorted(set(cand["insensitive"]) - set(base["insensitive"]))
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH,
                **SEED_IGNORED,
                baseline="seed-dependent",
                candidate=f"identical for seeds {seed} and {seed + 1}: " + ", ".join(new),
                summary=f"seeds {seed} and {seed + 1} give the candidate the same "
                + ", ".join(new)
                + ": the seed does not reach them, so 'several seeds' are one run repeated",
                remediation="Pass the run's seed to the generator behind these (the environment's reset, the init).",
            )
        )
    if not findings:
        what = recorded["candidate"] or recorded["baseline"]
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline=rows[0]["two fresh processes, same seed"],
                candidate=rows[1]["two fresh processes, same seed"],
                summary=f"same seed {seed} in two fresh processes: identical "
                + (", ".join(what[:-1]) + " and " + what[-1] if len(what) > 1 else what[0])
                + f" in both setups; seed {seed + 1} differs",
                remediation="Nothing to do.",
            )
        )
    return c.section(
        findings,
        tables={"replicas": table},
        notes=[
            "Each fresh replica is a new interpreter started by the subject's worker with its own "
            "interpreter, environment and working directory (new hash randomization, untouched "
            "global generators); it rolls out the environment with a seeded action sequence and "
            "trains for the subject's smallest run, recording digests of the observations, the "
            "initial weights (at recorder.watch), each optimizer step's gradient norm and the "
            "logged losses."
        ],
    )
