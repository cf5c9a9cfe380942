"""Seeding audit (notebook 13): same seed, same run? Different seeds, different runs? And how many seeds does
a comparison need?

Case 000's torch generator was never seeded (a call whose name reads like ``manual_seed`` drew a fresh seed
from the OS), so two runs with the same seed started from different weights. Each subject runs seeded
replicas in fresh interpreters (hash randomization and process-level state included) and in its worker,
with and without its global generators perturbed; the shared training runs give the run-to-run variance of
the primary metric and, from it, the seeds needed to detect an effect (a power table for the summary).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.env.analysis import fmt, run_pair, sizes
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, audit_section
from rlaudit.seeding import probes
from rlaudit.trainer.runs import RunData, runs
from rlaudit.workbench import Pair, Workbench

SUBSYSTEM = "seeding"
SIDES = ("baseline", "candidate")
DEFAULT_METRIC = "charts/episodic_return"
RELATIVE_EFFECTS = (0.05, 0.10, 0.25, 0.50)  # effects to size, as fractions of the baseline's mean


def compare_replicas(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Where two replicas differ.

    Returns:
        ``env_step`` (first differing step of the environment rollout, 0 = reset; None when identical),
        ``init`` (initial weights identical), ``init_tensors`` (tensors whose initial values differ),
        ``grad_step`` (first optimizer step whose gradient norm differs, 1-based; None when identical),
        ``losses`` (logged losses identical), ``final`` (final weights identical), ``errors`` (part -> text),
        ``identical`` (everything recorded agrees), ``parts`` (the parts both replicas ran).
    """
    out: dict[str, Any] = {
        "env_step": None,
        "init": None,
        "init_tensors": [],
        "grad_step": None,
        "losses": None,
        "final": None,
        "errors": {},
        "parts": [],
    }
    ea, eb = a.get("env"), b.get("env")
    if ea is not None and eb is not None:
        out["parts"].append("env")
        if "error" in ea or "error" in eb:
            out["errors"]["env"] = ea.get("error") or eb.get("error")
        else:
            da, db = ea["digests"], eb["digests"]
            out["env_step"] = next(
                (i for i, (x, y) in enumerate(zip(da, db, strict=False)) if x != y),
                None if len(da) == len(db) else min(len(da), len(db)),
            )
    ta, tb = a.get("train"), b.get("train")
    if ta is not None and tb is not None:
        out["parts"].append("train")
        if "error" in ta or "error" in tb:
            out["errors"]["train"] = ta.get("error") or tb.get("error")
        else:
            out["init"] = ta["init"] == tb["init"]
            out["init_tensors"] = sorted(
                k for k in ta["init_tensors"] if ta["init_tensors"].get(k) != tb["init_tensors"].get(k)
            )
            ga, gb = np.asarray(ta["grad_norms"], dtype=float), np.asarray(tb["grad_norms"], dtype=float)
            n = min(len(ga), len(gb))
            diff = ~np.isclose(ga[:n], gb[:n], rtol=1e-9, atol=0.0, equal_nan=True)
            out["grad_step"] = (
                int(np.argmax(diff)) + 1 if diff.any() else (None if len(ga) == len(gb) else n + 1)
            )
            out["losses"] = ta["losses"] == tb["losses"]
            out["final"] = ta["final"] == tb["final"]
    out["identical"] = (
        not out["errors"]
        and out["env_step"] is None
        and out["grad_step"] is None
        and all(out[k] in (None, True) for k in ("init", "losses", "final"))
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
    if "train" in other["parts"] and other["grad_step"] is None and "train" not in other["errors"]:
        insensitive.append("gradient norms")
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


def _errors_finding(fid: str, hypothesis: str, reps: dict[str, dict[str, Any]]) -> Finding | None:
    errors = {s: replica_errors(reps[s]) for s in SIDES}
    if not any(errors.values()):
        return None
    first = next(e for s in SIDES for e in errors[s])
    finding = Finding.error(
        fid,
        SUBSYSTEM,
        hypothesis,
        " and ".join(s for s in SIDES if errors[s]),
        RuntimeError(f"a seeded replica failed: {first}"),
    )
    finding.evidence.details["replica_errors"] = errors
    finding.remediation = (
        "The subject's make_env or train raised inside a replica (see the evidence); fix it and "
        "rerun this notebook."
    )
    return finding


def _replicas(wb: Workbench, seed: int) -> Pair:
    sz = sizes(wb.profile)
    return run_pair(
        wb,
        probes.replicas,
        "seeding: replicas",
        seed=seed,
        other_seed=seed + 1,
        env_steps=sz.seeding_env_steps,
        train_steps=sz.seeding_train_steps,
    )


@audit_section(
    "seeding/fresh-processes",
    SUBSYSTEM,
    "With the same seed, two fresh processes produce identical "
    "rollouts, initial weights and first updates; different seeds produce different ones",
)
def fresh_processes(wb: Workbench, *, seed: int = 0) -> Section:
    """Seeded replicas in new interpreters, compared digest by digest."""
    hypothesis = (
        "With the same seed, two fresh processes produce identical rollouts, initial weights and first "
        "updates; different seeds produce different ones"
    )
    fid = "seeding/fresh-processes"
    pair = _replicas(wb, seed)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    reps = {s: pair[s].json("replicas") for s in SIDES}
    if not reps["baseline"]["parts"] and not reps["candidate"]["parts"]:
        return Section.of(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SKIPPED,
                severity=Severity.INFO,
                evidence=Evidence(summary="neither subject has make_env or train to replicate"),
                remediation="Expose make_env(config, seed) or train(config, steps, seed, recorder).",
            )
        )
    if (f := _errors_finding(fid, hypothesis, reps)) is not None:
        return Section.of(f)
    rep = {s: same_seed_report(reps[s]) for s in SIDES}
    rows = []
    for s in SIDES:
        r = rep[s]
        rows.append(
            {
                "side": s,
                "two fresh processes, same seed": "identical"
                if r["fresh"] and r["fresh"]["identical"]
                else describe_difference(r["fresh"])
                if r["fresh"]
                else "; ".join(r["fresh_errors"]) or "n/a",
                "fresh vs worker, same seed": "identical"
                if r["warm"] and r["warm"]["identical"]
                else describe_difference(r["warm"])
                if r["warm"]
                else "n/a",
                "different seeds": (
                    "differ" if not r["insensitive"] else "identical " + ", ".join(r["insensitive"])
                ),
                "PYTHONHASHSEED": r["hashseed"] or "(random)",
            }
        )
    table = pd.DataFrame(rows)
    findings = []
    broken = {s: bool(rep[s]["fresh"]) and not rep[s]["fresh"]["identical"] for s in SIDES}
    c, b = rep["candidate"], rep["baseline"]
    if broken["candidate"] and not broken["baseline"]:
        what = describe_difference(c["fresh"])
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CONFIRMED,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline="identical",
                    candidate=f"differ: {what}",
                    effect=float(len(c["fresh"]["init_tensors"])) if c["fresh"]["init"] is False else None,
                    effect_label="initial weight tensors that differ between same-seed runs",
                    summary=(
                        f"same seed {seed}, two fresh processes: the candidate's {what} differ, the baseline's are "
                        "identical: some generator is not seeded from the run's seed"
                    ),
                    details={"candidate": c["fresh"], "baseline": b["fresh"]},
                ),
                remediation=(
                    "Seed every generator from the run's seed in one place (torch.manual_seed(seed), "
                    "np.random.default_rng(seed), env.reset(seed=seed)); check for torch.seed() or "
                    "unseeded default_rng() calls."
                ),
            )
        )
    elif broken["candidate"] and broken["baseline"]:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline=describe_difference(b["fresh"]),
                    candidate=describe_difference(c["fresh"]),
                    summary="neither setup reproduces itself with the same seed in fresh processes",
                ),
                remediation="Seed both setups fully before comparing single runs; until then compare over many seeds.",
            )
        )
    if c["insensitive"] and not set(c["insensitive"]) <= set(b["insensitive"]):
        new = sorted(set(c["insensitive"]) - set(b["insensitive"]))
        findings.append(
            Finding(
                id="seeding/seed-ignored",
                subsystem=SUBSYSTEM,
                hypothesis="Different seeds give different rollouts, initial weights and updates",
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline="seed-dependent",
                    candidate=f"identical for seeds {seed} and {seed + 1}: " + ", ".join(new),
                    summary=f"seeds {seed} and {seed + 1} give the candidate the same "
                    + ", ".join(new)
                    + ": the seed does not reach them, so 'several seeds' are one run repeated",
                ),
                remediation="Pass the run's seed to the generator behind these (the environment's reset, the init).",
            )
        )
    if not findings:
        findings.append(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                severity=Severity.INFO,
                evidence=Evidence(
                    baseline=rows[0]["two fresh processes, same seed"],
                    candidate=rows[1]["two fresh processes, same seed"],
                    summary=(
                        f"same seed {seed} in two fresh processes: identical "
                        + " and ".join(
                            {
                                "env": "environment rollouts",
                                "train": "initial weights, gradient norms and losses",
                            }[p]
                            for p in reps["candidate"]["parts"]
                        )
                        + f" in both setups; seed {seed + 1} differs"
                    ),
                ),
                remediation="Nothing to do.",
            )
        )
    return Section(
        title="Same seed, two fresh processes: same run?",
        findings=findings,
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


@audit_section(
    "seeding/global-rng",
    SUBSYSTEM,
    "Seeded calls do not depend on Python's, NumPy's or torch's global generator state",
)
def global_rng(wb: Workbench, *, seed: int = 0) -> Section:
    """Perturb the global generators before a seeded replica in the worker; name the generator that leaks in."""
    hypothesis = "Seeded calls do not depend on Python's, NumPy's or torch's global generator state"
    fid = "seeding/global-rng"
    pair = _replicas(wb, seed)
    if (f := pair.guard(fid, SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    reps = {s: pair[s].json("replicas") for s in SIDES}
    if (f := _errors_finding(fid, hypothesis, reps)) is not None:
        return Section.of(f)
    verdicts = {}
    rows = []
    for s in SIDES:
        inproc = reps[s]["in_process"]
        base = inproc["same"]
        pert = compare_replicas(base, inproc["perturbed"])
        if pert["identical"]:
            verdict, leaks = "independent", []
        elif "repeat" in inproc and not compare_replicas(base, inproc["repeat"])["identical"]:
            verdict, leaks = "nondeterministic", []
        else:
            leaks = [
                g
                for g in ("python", "numpy", "torch")
                if f"perturbed_{g}" in inproc
                and not compare_replicas(base, inproc[f"perturbed_{g}"])["identical"]
            ]
            verdict = "depends"
        verdicts[s] = (verdict, leaks, pert)
        rows.append(
            {
                "side": s,
                "verdict": verdict,
                "generators that leak in": ", ".join(leaks) or "—",
                "what changed when perturbed": describe_difference(pert),
            }
        )
    table = pd.DataFrame(rows)
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
    finding = Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=Evidence(
            baseline=vb if not lb else f"{vb}: {', '.join(lb)}",
            candidate=vc if not lc else f"{vc}: {', '.join(lc)}",
            summary=summary,
            details={"table": table.to_dict("records")},
        ),
        remediation=remediation,
    )
    return Section(
        title="Hidden dependence on global generators",
        findings=[finding],
        tables={"global generators": table},
    )


# ---------------------------------------------------------------------------------------------------------
# Run-to-run variance and the seeds a comparison needs
# ---------------------------------------------------------------------------------------------------------


def final_values(run: RunData, metric: str, tail: float = 0.2) -> float | None:
    """The mean of a scalar's last ``tail`` fraction of logged values (the run's final level)."""
    scalars = run.table("scalars")
    if scalars.empty:
        return None
    part = scalars[scalars["name"] == metric].sort_values("step")
    if part.empty:
        return None
    k = max(1, math.ceil(tail * len(part)))
    return float(part["value"].iloc[-k:].mean())


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


@audit_section(
    "seeding/variance",
    SUBSYSTEM,
    "The runs vary across seeds alike, and we know how many seeds a comparison needs",
)
def variance(
    wb: Workbench, *, seed: int = 0, metric: str = DEFAULT_METRIC, alpha: float = 0.05, power: float = 0.8
) -> Section:
    """Run-to-run SD of the primary metric over the shared runs' seeds, and a power table (seeds per arm)."""
    hypothesis = "The runs vary across seeds alike, and we know how many seeds a comparison needs"
    fid = "seeding/variance"
    pairs = runs(wb)
    values: dict[str, list[float]] = {s: [] for s in SIDES}
    errors = []
    other_metrics: dict[str, dict[str, list[float]]] = {}
    for p in pairs:
        if (g := p.guard(fid, SUBSYSTEM, hypothesis)) is not None:
            errors.append(g)
        for s in SIDES:
            if not p[s].ok:
                continue
            run = RunData.from_result(p[s])
            v = final_values(run, metric)
            if v is not None:
                values[s].append(v)
            scalars = run.table("scalars")
            for name in sorted(set(scalars["name"])) if len(scalars) else []:
                if str(name).startswith("env/") or str(name) == "charts/episodic_length":
                    fv = final_values(run, str(name))
                    if fv is not None:
                        other_metrics.setdefault(str(name), {k: [] for k in SIDES})[s].append(fv)
    if min(len(v) for v in values.values()) < 2:
        if errors:
            return Section.of(errors[0])
        return Section.of(
            Finding(
                id=fid,
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                severity=Severity.INFO,
                evidence=Evidence(
                    summary=f"fewer than two runs logged {metric} on a side; no variance to estimate",
                    details={"values": values},
                ),
                remediation=f"Log {metric} from train() (recorder.log) and run at least two seeds.",
            )
        )
    var = variance_table(values, seed=seed)
    sd = var["pooled_sd"]
    base_mean = var["baseline"]["mean"]
    effects = [e * abs(base_mean) for e in RELATIVE_EFFECTS] if base_mean else [0.5 * sd, sd, 2 * sd]
    effects = [e for e in effects if e > 0]
    table = (
        stats.power_table(sd if sd > 0 else 1e-12, effects, alpha=alpha, power=power)
        if effects
        else pd.DataFrame()
    )
    if len(table) and base_mean:
        table.insert(1, "effect (% of baseline mean)", [100 * e / abs(base_mean) for e in table["effect"]])
    rows = [
        {"metric": metric, "side": s, "seeds": var[s]["n"], "mean": var[s]["mean"], "sd": var[s]["sd"]}
        for s in SIDES
    ]
    for name, vals in other_metrics.items():
        v2 = variance_table(vals, seed=seed)
        rows += [
            {"metric": name, "side": s, "seeds": v2[s]["n"], "mean": v2[s]["mean"], "sd": v2[s]["sd"]}
            for s in SIDES
        ]
    spread = pd.DataFrame(rows)
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
        (
            f"detecting a {fmt(row10['effect'])} change ({fmt(row10['effect_sd'])} SD) with power {power:.0%} at "
            f"alpha {alpha} takes {int(row10['seeds_per_arm'])} seeds per arm"
        )
        if row10 is not None
        else ""
    )
    summary = (
        f"final {metric} varies across seeds with SD {fmt(sb)} (baseline, {n_b} seeds) and {fmt(sc)} "
        f"(candidate, {n_c} seeds); {need}"
    )
    if status == Status.SUSPECT:
        summary = f"the candidate's runs vary {fmt(sc / sb)} times more across seeds: " + summary
    finding = Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=hypothesis,
        status=status,
        severity=severity,
        evidence=Evidence(
            baseline=round(sb, 6),
            candidate=round(sc, 6),
            effect=sc / sb if sb > 0 else None,
            effect_label="SD ratio candidate/baseline",
            test=test,
            summary=summary,
            details={
                "metric": metric,
                "pooled_sd": sd,
                "variance": var,
                "alpha": alpha,
                "power": power,
                "power_table": table.to_dict("records"),
                "other_metrics": spread.to_dict("records"),
            },
        ),
        remediation=(
            f"Size attribution experiments with the power table: at least {int(row10['seeds_per_arm'])} "
            "seeds per arm for the effect sizes you care about."
            if row10 is not None
            else "Run more seeds to estimate the variance."
        ),
    )
    return Section(
        title="Run-to-run variance and the seeds a comparison needs",
        findings=[finding],
        tables={"spread across seeds": spread, "power table (seeds per arm)": table},
        notes=[
            f"Final value = mean of the last 20% of logged points of each run; the SD pools both "
            f"sides' seeds. Two-sided test at alpha {alpha}, power {power:.0%} (noncentral t)."
        ],
    )


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every seeding check, in notebook order."""
    return [fresh_processes(wb, seed=seed), global_rng(wb, seed=seed), variance(wb, seed=seed)]
