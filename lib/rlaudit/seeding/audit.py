"""Seeding audit (notebook 13): same seed, same run? Different seeds, different runs? And how many seeds does
a comparison need?

Case 000's torch generator was never seeded (a call whose name reads like ``manual_seed`` drew a fresh seed
from the OS), so two runs with the same seed started from different weights. Each subject runs seeded
replicas in fresh interpreters (hash randomization and process-level state included) and in its worker,
with and without its global generators perturbed; the shared training runs give the run-to-run variance of
the primary metric and, from it, the seeds needed to detect or to clear an effect (the power table of
:mod:`rlaudit.seeding.power`, which the summary and the trainer's learning check read).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.checks import SIDES, SYMPTOM, Check, check, probe_evidence, run_checks
from rlaudit.env.analysis import sizes
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.seeding import power as pw
from rlaudit.seeding import probes
from rlaudit.trainer.runs import TrainingRuns, training_runs
from rlaudit.workbench import Pair, Workbench

POWER_TABLE = "power table (seeds per arm)"
"""Name of the variance section's power table (notebooks show it with ``section.table(POWER_TABLE)``)."""


def _compare_env(ea: dict[str, Any], eb: dict[str, Any]) -> dict[str, Any]:
    """``env_step``: the first step whose digest differs (a shorter rollout differs where it stops)."""
    da, db = ea["digests"], eb["digests"]
    first = next((i for i, (x, y) in enumerate(zip(da, db, strict=False)) if x != y), None)
    if first is None and len(da) != len(db):
        first = min(len(da), len(db))
    return {"env_step": first, "recorded": ["environment rollouts"]}


_TRAIN_RECORDS = (
    ("initial weights", "init", None),
    ("gradient norms", "grad_norms", []),
    ("losses", "losses", {}),
    ("episode statistics", "episodes", None),
)
"""What a training replica can record: (name, key, the value when the trainer reported none)."""


def _compare_train(ta: dict[str, Any], tb: dict[str, Any]) -> dict[str, Any]:
    """``init``, ``init_tensors``, ``grad_step`` (1-based), ``losses``, ``episodes`` and ``final`` of two
    training starts; a quantity neither replica recorded compares as None (nothing to say), never as equal."""

    def same(key: str, empty: Any) -> bool | None:
        a, b = ta.get(key, empty), tb.get(key, empty)
        return None if a == empty and b == empty else a == b

    ga, gb = np.asarray(ta["grad_norms"], dtype=float), np.asarray(tb["grad_norms"], dtype=float)
    n = min(len(ga), len(gb))
    diff = ~np.isclose(ga[:n], gb[:n], rtol=1e-9, atol=0.0, equal_nan=True)
    return {
        "init": same("init", None),
        "init_tensors": sorted(
            k for k in ta["init_tensors"] if ta["init_tensors"].get(k) != tb["init_tensors"].get(k)
        ),
        "grad_step": int(np.argmax(diff)) + 1 if diff.any() else (None if len(ga) == len(gb) else n + 1),
        "losses": same("losses", {}),
        "episodes": same("episodes", None),
        "final": same("final", None),
        "recorded": [
            name
            for name, key, empty in _TRAIN_RECORDS
            if ta.get(key, empty) != empty or tb.get(key, empty) != empty
        ],
    }


def compare_replicas(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Where two replicas differ.

    Returns:
        ``env_step`` (first differing step of the environment rollout, 0 = reset; None when identical),
        ``init`` (initial weights identical), ``init_tensors`` (tensors whose initial values differ),
        ``grad_step`` (first optimizer step whose gradient norm differs, 1-based; None when identical),
        ``losses`` (logged losses identical), ``episodes`` (reported episode statistics identical), ``final``
        (final weights identical), each None when neither replica recorded it; ``errors`` (part -> text),
        ``identical`` (everything recorded agrees), ``parts`` (the parts both replicas ran), ``recorded``
        (what the replicas recorded, by name).
    """
    out: dict[str, Any] = {
        "env_step": None,
        "init": None,
        "init_tensors": [],
        "grad_step": None,
        "losses": None,
        "episodes": None,
        "final": None,
        "errors": {},
        "parts": [],
        "recorded": [],
    }
    for part, compare in (("env", _compare_env), ("train", _compare_train)):
        pa, pb = a.get(part), b.get(part)
        if pa is None or pb is None:
            continue
        out["parts"].append(part)
        if "error" in pa or "error" in pb:
            out["errors"][part] = pa.get("error") or pb.get("error")
        else:
            found = compare(pa, pb)
            out["recorded"] += found.pop("recorded")
            out.update(found)
    out["identical"] = (
        not out["errors"]
        and out["env_step"] is None
        and out["grad_step"] is None
        and all(out[k] in (None, True) for k in ("init", "losses", "episodes", "final"))
    )
    return out


def describe_difference(cmp: dict[str, Any]) -> str:
    """The differences of :func:`compare_replicas` as a phrase: ``initial weights (6 tensors), ...``."""
    parts = []
    if cmp["errors"]:
        parts.append("failed: " + "; ".join(f"{k}: {v}" for k, v in cmp["errors"].items()))
    if cmp["env_step"] is not None:
        parts.append(f"environment rollout from step {cmp['env_step']}")
    if cmp["init"] is False:
        parts.append(f"initial weights ({len(cmp['init_tensors'])} tensors)")
    if cmp["grad_step"] is not None:
        parts.append(f"gradient norms from optimizer step {cmp['grad_step']}")
    if cmp["losses"] is False:
        parts.append("logged losses")
    if cmp["episodes"] is False:
        parts.append("episode statistics")
    if cmp["final"] is False and cmp["init"] is not False:
        parts.append("final weights")
    return ", ".join(parts) if parts else "nothing"


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


def replica_errors(rep: dict[str, Any]) -> list[str]:
    """Every failure recorded in one side's replicas, as ``"<replica> <part>: <error>"``."""
    out = [f"fresh process {i + 1}: {r['error']}" for i, r in enumerate(rep["fresh"]) if "error" in r]
    named = [(f"fresh process {i + 1}", r) for i, r in enumerate(rep["fresh"]) if "error" not in r]
    named += [(f"worker ({name})", r) for name, r in rep["in_process"].items()]
    for name, r in named:
        for part in ("env", "train"):
            if isinstance(r.get(part), dict) and "error" in r[part]:
                out.append(f"{name} {part}: {r[part]['error']}")
    return out


def _errors_finding(c: Check, reps: dict[str, dict[str, Any]]) -> Finding | None:
    """ERROR naming the first failed replica (the subject itself broke), or None when every replica ran."""
    errors = {s: replica_errors(reps[s]) for s in SIDES}
    if not any(errors.values()):
        return None
    first = next(e for s in SIDES for e in errors[s])
    finding = Finding.error(
        c.id,
        c.subsystem,
        c.hypothesis,
        " and ".join(s for s in SIDES if errors[s]),
        RuntimeError(f"a seeded replica failed: {first}"),
    )
    finding.evidence.details["replica_errors"] = errors
    finding.remediation = (
        "The subject's make_env or train raised inside a replica (see the evidence); fix it and "
        "rerun this notebook."
    )
    return finding


def replicas_params(wb: Workbench, seed: int = 0) -> dict[str, Any]:
    """Parameters of :func:`rlaudit.seeding.probes.replicas` at the workbench's profile."""
    sz = sizes(wb.profile)
    return {
        "seed": seed,
        "other_seed": seed + 1,
        "env_steps": sz.seeding_env_steps,
        "train_steps": sz.seeding_train_steps,
    }


replicas_pair = probe_evidence(probes.replicas, replicas_params, "seeding: replicas")
"""The replicas probe on both sides, ``replicas_pair(wb, seed=0) -> Pair`` (one run for two checks)."""


def _replicas(c: Check, pair: Pair) -> dict[str, dict[str, Any]]:
    """Both sides' replicas; stops the check with SKIPPED when a side has nothing to replicate."""
    lacking = [s for s in SIDES if not pair[s].result.get("parts")]
    if lacking:
        c.missing(
            "make_env or train to replicate",
            "Expose make_env(config, seed) or train(config, steps, seed, recorder) in the subject.",
            lacking,
        )
    return {s: pair[s].json("replicas") for s in SIDES}


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
    reps = _replicas(c, pair)
    if (f := _errors_finding(c, reps)) is not None:
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


def rng_verdict(inproc: dict[str, Any]) -> tuple[str, list[str], dict[str, Any]]:
    """One side's dependence on global generators from its in-worker replicas.

    Returns:
        ``(verdict, leaks, perturbed)``: ``independent`` (moving every global generator changes nothing),
        ``nondeterministic`` (two same-seed calls already differ), or ``depends`` with the generators that
        leak in; and the comparison of the perturbed replica with the canonical one.
    """
    base = inproc["same"]
    pert = compare_replicas(base, inproc["perturbed"])
    if pert["identical"]:
        return "independent", [], pert
    if "repeat" in inproc and not compare_replicas(base, inproc["repeat"])["identical"]:
        return "nondeterministic", [], pert
    leaks = [
        g
        for g in ("python", "numpy", "torch")
        if f"perturbed_{g}" in inproc and not compare_replicas(base, inproc[f"perturbed_{g}"])["identical"]
    ]
    return "depends", leaks, pert


@check("seeding/global-rng", title="Hidden dependence on global generators", needs=replicas_pair)
def global_rng(c: Check, pair: Pair) -> Section:
    """Seeded calls do not depend on Python's, NumPy's or torch's global generator state.

    Perturb the global generators before a seeded replica in the worker; name the generator that leaks in.
    """
    reps = _replicas(c, pair)
    if (f := _errors_finding(c, reps)) is not None:
        return c.section(f)
    verdicts = {s: rng_verdict(reps[s]["in_process"]) for s in SIDES}
    table = pd.DataFrame(
        [
            {
                "side": s,
                "verdict": verdicts[s][0],
                "generators that leak in": ", ".join(verdicts[s][1]) or "—",
                "what changed when perturbed": describe_difference(verdicts[s][2]),
            }
            for s in SIDES
        ]
    )
    (vb, lb, _), (vc, lc, pc) = verdicts["baseline"], verdicts["candidate"]
    if vc == "depends" and (vb != "depends" or set(lc) - set(lb)):
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = (
            f"the candidate's seeded run changes when the global {', '.join(lc) or 'generators'} "
            f"generator{'s' if len(lc) != 1 else ''} are moved ({describe_difference(pc)}): it draws from "
            "global state instead of its seed"
        )
        remediation = "Draw from generators created from the run's seed (np.random.default_rng(seed), a torch.Generator)."
    elif vc == "nondeterministic" and vb != "nondeterministic":
        status, severity = Status.SUSPECT, Severity.HIGH
        summary = (
            "the candidate's seeded run differs between two calls with the same seed in one process even "
            "without touching the global generators: it reseeds from entropy (e.g. torch.seed()) or reads "
            "other hidden state"
        )
        remediation = "Replace entropy-based reseeding with seeding from the run's seed."
    elif vc == vb == "independent":
        status, severity = Status.CLEARED, Severity.INFO
        summary = (
            "moving Python's, NumPy's and torch's global generators changes nothing in either seeded run"
        )
        remediation = "Nothing to do."
    else:
        status, severity = Status.NOTED, Severity.LOW
        summary = f"baseline: {vb}; candidate: {vc} (no new dependence in the candidate)"
        remediation = "Consider seeding the baseline's hidden generators too."
    finding = c.finding(
        status,
        severity,
        baseline=vb if not lb else f"{vb}: {', '.join(lb)}",
        candidate=vc if not lc else f"{vc}: {', '.join(lc)}",
        summary=summary,
        details={"table": table.to_dict("records")},
        remediation=remediation,
    )
    return c.section(finding, tables={"global generators": table})


# ---------------------------------------------------------------------------------------------------------
# Run-to-run variance and the seeds a comparison needs
# ---------------------------------------------------------------------------------------------------------


def variance_table(values: dict[str, list[float]], *, seed: int) -> dict[str, Any]:
    """Per side: mean and SD over seeds (with a bootstrap interval of the SD), and the pooled SD."""
    out: dict[str, Any] = {}
    sds = []
    for side, vals in values.items():
        arr = np.asarray(vals, dtype=float)
        sd = float(arr.std(ddof=1)) if len(arr) >= 2 else math.nan
        ci = (
            stats.bootstrap_ci(arr, lambda x, axis=None: np.std(x, axis=axis, ddof=1), seed=seed)
            if len(arr) >= 3
            else None
        )
        out[side] = {
            "n": len(arr),
            "mean": float(arr.mean()) if len(arr) else math.nan,
            "sd": sd,
            "sd_ci": (ci.low, ci.high) if ci else None,
            "values": arr.tolist(),
        }
        if math.isfinite(sd):
            sds.append((len(arr) - 1, sd))
    dof = sum(d for d, _ in sds)
    out["pooled_sd"] = math.sqrt(sum(d * s * s for d, s in sds) / dof) if dof else math.nan
    return out


def final_values(runs: TrainingRuns, metric: Any) -> dict[str, list[float]]:
    """Per side, each completed run's final value of ``metric`` (:meth:`RunData.final`), runs that never
    reported it left out (runs that did not finish are reported by trainer/outcomes)."""
    values: dict[str, list[float]] = {s: [] for s in SIDES}
    for s in SIDES:
        for run in runs[s]:
            v = run.final(metric)
            if math.isfinite(v):
                values[s].append(v)
    return values


@check(
    "seeding/variance",
    title="Run-to-run variance and the seeds a comparison needs",
    needs=training_runs,  # a failed seed leaves the others (trainer/outcomes reports it)
    role=SYMPTOM,  # runs that vary more across seeds follow from whatever else changed
)
def variance(
    c: Check, runs: TrainingRuns, *, seed: int = 0, alpha: float = 0.05, power: float = 0.8
) -> Section:
    """The runs vary across seeds alike in {metric}, and we know how many seeds a comparison needs.

    Run-to-run SD of the primary metric's final value over the shared runs' seeds, and the power table
    (:mod:`rlaudit.seeding.power`): seeds per side to detect, or to clear, an effect of several sizes.
    """
    metric = c.wb.metric
    values = final_values(runs, metric)
    short = [s for s in SIDES if len(values[s]) < 2]
    if short:
        found = runs.outcomes()
        unfinished = "".join(
            f"; {s} seed {o.seed} {o.describe()}" for s in short for o in found.get(s, []) if not o.finished
        )
        c.missing(
            f"two or more runs reporting {metric.name} (got {', '.join(f'{s} {len(values[s])}' for s in SIDES)}"
            f"{unfinished})",
            metric.how_to_report + " Run at least two seeds per side (the profile's seeds).",
            short,
        )
    var = variance_table(values, seed=seed)
    sd = var["pooled_sd"]
    base_mean = var["baseline"]["mean"]
    table = pw.seeds_table(
        sd, pw.table_effects(sd, base_mean), baseline_mean=base_mean, alpha=alpha, power=power
    )
    spread = pd.DataFrame(
        [
            {
                "metric": metric.name,
                "side": s,
                "seeds": var[s]["n"],
                "mean": var[s]["mean"],
                "sd": var[s]["sd"],
            }
            for s in SIDES
        ]
    )
    sb, sc = var["baseline"]["sd"], var["candidate"]["sd"]
    n_b, n_c = var["baseline"]["n"], var["candidate"]["n"]
    test = None
    status, severity = Status.NOTED, Severity.INFO
    if n_b >= 5 and n_c >= 5 and sb > 0 and sc > 0:
        from scipy.stats import levene

        lv = levene(values["candidate"], values["baseline"])
        test = {"name": "levene", "statistic": float(lv.statistic), "p": float(lv.pvalue)}
        if lv.pvalue < 0.01 and sc / sb > 2:
            status, severity = Status.SUSPECT, Severity.MEDIUM
    row10 = table.iloc[1] if len(table) > 1 else (table.iloc[0] if len(table) else None)
    need = (
        f"detecting a {fmt(row10['effect'])} change ({fmt(row10['effect_sd'])} SD) with power {power:.0%} at "
        f"alpha {alpha} takes {int(row10['seeds_to_detect'])} seeds per arm, showing the two setups agree "
        f"within ±{fmt(row10['effect'])} takes {int(row10['seeds_to_clear'])}"
        if row10 is not None
        else "no effect size to size (the SD and the baseline's mean are both 0)"
    )
    summary = (
        f"final {metric.name} varies across seeds with SD {fmt(sb)} (baseline, {n_b} seeds) and {fmt(sc)} "
        f"(candidate, {n_c} seeds); {need}"
    )
    if status == Status.SUSPECT:
        summary = f"the candidate's runs vary {fmt(sc / sb)} times more across seeds: " + summary
    finding = c.finding(
        status,
        severity,
        baseline=round(sb, 6),
        candidate=round(sc, 6),
        effect=sc / sb if sb > 0 else None,
        effect_label="SD ratio candidate/baseline",
        test=test,
        summary=summary,
        details={
            "metric": metric.name,
            "pooled_sd": sd,
            "variance": var,
            "alpha": alpha,
            "power": power,
            "power_table": table.to_dict("records"),
        },
        remediation=(
            f"Size attribution experiments with the power table: at least {int(row10['seeds_to_detect'])} "
            "seeds per arm for the effect sizes you care about."
            if row10 is not None
            else "Run more seeds to estimate the variance."
        ),
    )
    return c.section(
        finding,
        tables={"spread across seeds": spread, POWER_TABLE: table},
        notes=[
            f"Final value = mean of {metric.name} over the last quarter of each run's steps; the SD pools both "
            f"sides' seeds. Detect: two-sided t-test at alpha {alpha}, power {power:.0%} (noncentral t). Clear: "
            f"two one-sided tests at alpha {alpha} within ±effect, power {power:.0%}, no true difference."
        ],
    )


CHECKS = (fresh_processes, global_rng, variance)
"""Every seeding check, in notebook order."""


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every seeding check, in notebook order."""
    return run_checks(wb, CHECKS, seed=seed)
