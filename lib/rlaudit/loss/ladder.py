"""Loss audit, the probe-environment ladder: each subject trains on five tiny environments whose answers are
known (:mod:`rlaudit.loss.envs`); the first rung that fails isolates the bug.

The ladder is Andy Jones' "Debugging RL, Without the Agonizing Pain": each rung adds one thing to learn
(value, backprop, discounting, policy, batching).
"""

from __future__ import annotations

import pandas as pd

from rlaudit.checks import Check, check
from rlaudit.engine.workbench import SIDES, Pair, Workbench
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.loss import plots, probes
from rlaudit.notebook import Section

PROBE_STEPS = (
    32_768  # probe-environment training: ~8 updates of the built-in PPO; the reference learns all five
)
VALUE_MISS = 0.5
"""A first failing rung whose value misses its target by more than this is CONFIRMED even alone."""
BOTH_FAIL = {"id": "loss/probe-envs-both", "hypothesis": "The baseline learns every probe environment"}
"""The finding the ladder adds for probes both sides fail (a shared bug, or runs too short to learn them)."""


def probe_names() -> tuple[str, ...]:
    from rlaudit.loss.envs import PROBE_NAMES

    return tuple(PROBE_NAMES)


def ladder_runs(wb: Workbench, seed: int = 0, steps: int = PROBE_STEPS) -> list[Pair]:
    """Each subject trained on each probe environment (cached)."""
    return wb.run_many(
        probes.probe_env_run,
        [dict(probe=p, steps=steps, seed=seed) for p in probe_names()],
        desc="probe environments",
    )


def ladder_table(pairs: list[Pair]) -> pd.DataFrame:
    """One row per probe and side: supported, passed, value error, probability of the good action, reason."""
    from rlaudit.loss.envs import PROBES

    rows = []
    for name, pair in zip(probe_names(), pairs, strict=True):
        for side in SIDES:
            r = pair[side].result
            rows.append(
                {
                    "probe": f"{PROBES[name].index}. {name}",
                    "name": name,
                    "side": side,
                    "supported": r.get("supported", False),
                    "passed": bool(r.get("passed", False)),
                    "value_error": r.get("value_error"),
                    "p_good": r.get("p_good"),
                    "reason": r.get("reason"),
                    "isolates": PROBES[name].isolates,
                }
            )
    return pd.DataFrame(rows)


@check(
    "loss/probe-envs",
    title="Probe environments",
    needs=ladder_runs,
    # the probes' verdicts read the final checkpoint through the subject's own load_checkpoint
    reads=("agents", "checkpointing", "init", "optimizer", "trainer"),
)
def probe_envs(c: Check, pairs: list[Pair], seed: int = 0, steps: int = PROBE_STEPS) -> Section:
    """Both setups learn the five probe environments.

    Train each subject on each probe environment (``train(..., env_fn=...)``) and judge what it learned.
    """
    from rlaudit.loss.envs import PROBES

    table = ladder_table(pairs)
    unsupported = table[~table["supported"]]
    if len(unsupported):
        sides = sorted(set(unsupported["side"]))
        c.missing(
            f"probe-environment runs ({unsupported['reason'].iloc[0]})",
            "give train() an env_fn=(num_envs, seed) -> VectorEnv argument (see the subject template) so rlaudit "
            "can train it on the probe environments",
            sides=sides,
        )
    names = probe_names()
    passed = {s: table[table["side"] == s].set_index("name")["passed"] for s in SIDES}
    fails = [n for n in names if passed["baseline"][n] and not passed["candidate"][n]]
    both = [n for n in names if not passed["baseline"][n] and not passed["candidate"][n]]
    score = {s: f"{int(passed[s].sum())}/{len(names)} passed" for s in SIDES}
    findings: list[Finding] = []
    if fails:
        first = fails[0]
        row = table[(table["name"] == first) & (table["side"] == "candidate")].iloc[0]
        findings.append(
            c.finding(
                Status.CONFIRMED
                if len(fails) >= 2 or (row["value_error"] or 0) > VALUE_MISS
                else Status.SUSPECT,
                Severity.HIGH,
                **score,
                effect=float(len(fails)),
                effect_label="probes the baseline passes and the candidate fails",
                summary=f"the candidate fails {', '.join(fails)} (the baseline passes "
                f"{'it' if len(fails) == 1 else 'them'}); the first failing rung, {PROBES[first].index}. {first}, "
                f"isolates {PROBES[first].isolates}: {row['reason']}",
                details={"failed": fails},
                remediation=f"Look at {PROBES[first].isolates} in the candidate; the probe reproduces it in seconds "
                f"(rlaudit.loss.envs.make_probe_env('{first}', num_envs, seed)).",
                figures=["probe grid"],
            )
        )
    if both:
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.LOW,
                **BOTH_FAIL,
                summary=f"both sides fail {', '.join(both)} in {steps:,} steps: either a shared bug or too short a "
                "run for these settings",
                remediation="Rerun the probes with more steps (probe_envs(wb, steps=...)) before reading the failure.",
            )
        )
    if not fails and not both:
        findings.append(
            c.finding(
                Status.CLEARED,
                **score,
                summary=f"both learn all five probes in {steps:,} steps (largest value error "
                f"{fmt(table['value_error'].max())})",
            )
        )
    return c.section(
        findings,
        tables={"probe grid": table.drop(columns=["name"])},
        figures={"probe grid": plots.probe_grid_figure(table)},
        notes=_notes(seed, steps),
    )


def _notes(seed: int, steps: int) -> list[str]:
    return [
        "The ladder of Andy Jones' 'Debugging RL, Without the Agonizing Pain': each rung adds one thing to learn, "
        "so the first rung that fails isolates the bug. Pass: value within 0.1 of its target on probes 1-3 (0.3 on "
        "4-5, where the target moves with the policy), and the rewarded action's probability at least 0.9.",
        f"Each subject trains {steps:,} steps per probe with seed {seed} through its own train(env_fn=...); the "
        "final checkpoint is loaded with load_checkpoint and read on every probe state.",
    ]
