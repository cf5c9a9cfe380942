"""Checkpointing audit (notebook 04): what each setup saves, what its loader restores, which checkpoint it picks,
and whether a resumed run continues like the uninterrupted one.

Case 000 (H4.1-H4.3, H4.R1-R2) and case 002 ("only 58 of 82 pretrained tensors loaded", normalization
statistics not carried over) are the models. Checkpoints come from short training runs of each subject: the
shared runs of :mod:`rlaudit.trainer.runs` (seed 0 at the profile's length) and a dedicated short run that
saves every update when the subject's ``config_keys()`` names a checkpoint-interval key (so that a resume
point and several files exist even at the smoke profile). A subject without ``train`` is audited on the
checkpoints its ``checkpoints(config)`` lists. Every file is read without executing it
(:mod:`rlaudit.checkpointing.reading`).
"""

from __future__ import annotations

import fnmatch
import math
import re
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checkpointing import probes
from rlaudit.compare import flatten
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, audit_section
from rlaudit.workbench import SIDES, Pair, ProbeResult, Workbench

SUBSYSTEM = "checkpointing"
INTERVAL_KEY = re.compile(r"(interval|every|freq|frequency|period)", re.IGNORECASE)
TIMING_METRIC = re.compile(r"(?:^perf/|sps|seconds|time|fps|throughput)", re.IGNORECASE)
EXACT = 1e-6
"""A resumed run whose metrics differ from the uninterrupted run's by less than this (relative) continues
exactly."""
BROKEN = 0.10
"""A resumed run whose largest relative metric difference exceeds this does not continue the run."""
PIECES = ("policy weights", "optimizer state", "normalizer statistics", "step counter", "config")
PIECE_COST = {
    "policy weights": "the checkpoint cannot restore the policy",
    "optimizer state": "a resumed run restarts Adam's moments and step count (a jolt in the updates)",
    "normalizer statistics": "evaluation and resumed runs feed differently scaled observations (SB3 users meet "
    "this as VecNormalize statistics living outside the model zip)",
    "step counter": "selection and resume cannot tell how far the run got (schedules restart)",
    "config": "the network cannot be rebuilt from the checkpoint alone",
}


# --------------------------------------------------------------------------------------------------------
# Where checkpoints come from


_MEMO: weakref.WeakKeyDictionary[Workbench, dict[str, Any]] = weakref.WeakKeyDictionary()


def memo(wb: Workbench, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per workbench: a failed training run is not cached on disk (errors never are), and
    the seven checks of this room must not retrain it seven times."""
    store = _MEMO.setdefault(wb, {})
    if key not in store:
        store[key] = compute()
    return store[key]


def capabilities(wb: Workbench) -> dict[str, frozenset[str]]:
    """Each side's capabilities, from a cached probe (works before any other probe has run on the subject)."""
    pair = memo(wb, "capabilities", lambda: wb.run(probes.capabilities))
    return {
        side: frozenset(pair[side].result.get("capabilities", [])) if pair[side].ok else frozenset()
        for side in SIDES
    }


def shared_run(wb: Workbench) -> Pair:
    """The shared training run of seed 0 at the profile's length (the one every notebook reads)."""
    from rlaudit.trainer.runs import runs

    return memo(wb, "shared_run", lambda: runs(wb, seeds=[0])[0])


def dedicated_overrides(wb: Workbench) -> dict[str, list[str]]:
    """Per side, overrides that make a short run save a checkpoint every update: each integer key the
    subject's ``config_keys()`` files under checkpointing whose name says interval/every/freq, set to 1.
    Empty when the subject names none (its own checkpoints are used as they come)."""
    from rlaudit.config import probes as config_probes

    pair = wb.run(config_probes.resolved_config)
    out: dict[str, list[str]] = {}
    for side in SIDES:
        res = pair[side]
        found: list[str] = []
        if res.ok and res.result.get("has_config_keys") and res.result.get("accepts_overrides"):
            patterns = (res.json("config_keys") or {}).get(SUBSYSTEM, [])
            for key, value in flatten(res.json("config")).items():
                if isinstance(value, bool) or not isinstance(value, int):
                    continue
                if any(fnmatch.fnmatch(key, pat) for pat in patterns) and INTERVAL_KEY.search(
                    key.rsplit(".", 1)[-1]
                ):
                    found.append(f"{key}=1")
        out[side] = found
    return out


def dedicated_params(wb: Workbench) -> dict[str, dict[str, Any]]:
    """Per side, the ``train_run`` parameters of the dedicated short run."""
    overrides = dedicated_overrides(wb)
    steps = int(wb.profile.short_train_steps)
    out = {}
    for side in SIDES:
        params: dict[str, Any] = {"steps": steps, "seed": 0}
        if overrides[side]:
            params["overrides"] = overrides[side]
        out[side] = params
    return out


def dedicated_run(wb: Workbench) -> dict[str, ProbeResult]:
    """The dedicated short runs of both sides (cached), run in parallel; a side without ``train`` gets the
    result that says so."""
    from rlaudit.trainer.probes import train_run

    params = dedicated_params(wb)
    results = memo(
        wb,
        "dedicated_run",
        lambda: wb.run_each(train_run, [(side, params[side]) for side in SIDES], progress=False),
    )
    return dict(zip(SIDES, results, strict=True))


def run_checkpoints(res: ProbeResult) -> list[str]:
    """Absolute checkpoint paths of a ``train_run`` result (the subject's own order: latest first)."""
    out = []
    for p in res.result.get("checkpoints", []):
        path = Path(p)
        out.append(str(path if path.is_absolute() else Path(res.dir) / path))
    return out


def _existing(wb: Workbench, side: str) -> list[str]:
    res = wb.run_side(side, probes.existing_checkpoints)
    return list(res.result.get("paths", [])) if res.ok else []


def sources(wb: Workbench, *, shared: bool = False) -> dict[str, dict[str, Any]]:
    """Per side: ``{"run": ProbeResult or None, "paths": [...], "origin": text, "missing": [...], "error"}``.

    Subjects with ``train`` get the dedicated short run (or, with ``shared``, the shared training run of the
    profile's length); others the checkpoints their ``checkpoints(config)`` lists; neither: ``missing``.
    """
    caps = capabilities(wb)
    out: dict[str, dict[str, Any]] = {}
    need_run = [side for side in SIDES if "train" in caps[side] and "config" in caps[side]]
    results: dict[str, ProbeResult] = {}
    if need_run:
        if shared:
            pair = shared_run(wb)
            results = {side: pair[side] for side in SIDES}
        else:
            results = dedicated_run(wb)
    params = dedicated_params(wb) if need_run and not shared else {}
    for side in SIDES:
        entry: dict[str, Any] = {"run": None, "paths": [], "origin": "", "missing": [], "error": None}
        if side in need_run:
            res = results[side]
            entry["run"] = res
            if res.ok:
                entry["paths"] = run_checkpoints(res)
                if shared:
                    entry["origin"] = (
                        f"the shared training run (seed 0, {int(wb.profile.train_steps):,} steps)"
                    )
                else:
                    extra = params[side].get("overrides")
                    entry["origin"] = (
                        f"a dedicated run (seed 0, {int(params[side]['steps']):,} steps"
                        + (f", {', '.join(extra)}" if extra else "")
                        + ")"
                    )
            else:
                entry["error"] = res
        elif "checkpoints" in caps[side]:
            entry["paths"] = _existing(wb, side)
            entry["origin"] = "checkpoints(config): checkpoints the subject already has"
        else:
            entry["missing"] = [c for c in ("train", "checkpoints") if c not in caps[side]]
        out[side] = entry
    return out


def _guard_sources(
    src: dict[str, dict[str, Any]], id: str, hypothesis: str, need: str = "a checkpoint"
) -> Finding | None:
    missing = {side: e["missing"] for side, e in src.items() if e["missing"]}
    if missing:
        return Finding.skipped(id, SUBSYSTEM, hypothesis, missing)
    for side, e in src.items():
        if e["error"] is not None:
            return Pair(**{s: (src[s]["run"] if s == side else None) for s in SIDES}).guard(
                id, SUBSYSTEM, hypothesis
            )
    empty = [side for side, e in src.items() if not e["paths"]]
    if empty:
        return Finding(
            id=id,
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.SUSPECT if "candidate" in empty and "baseline" not in empty else Status.NOTED,
            severity=Severity.HIGH,
            evidence=Evidence(
                baseline=len(src["baseline"]["paths"]),
                candidate=len(src["candidate"]["paths"]),
                summary=f"no checkpoints found for the {' and '.join(empty)} ({need} is needed)",
            ),
            remediation="Make train() save checkpoints under recorder.run_dir (or return them from "
            "checkpoints(config, run_dir=...)).",
        )
    return None


def contents_of(wb: Workbench, side: str, paths: list[str], trust: bool = False) -> list[dict[str, Any]]:
    res = wb.run_side(side, probes.checkpoint_contents, paths=list(paths), trust=trust)
    if not res.ok:
        raise RuntimeError(f"reading the {side}'s checkpoints failed: {res.error or res.missing}")
    return res.json("contents")


def newest(records: list[dict[str, Any]], paths: list[str]) -> str:
    """The path whose saved step counter is highest (the subject's first path when no step is known)."""
    steps = [(r.get("step"), i) for i, r in enumerate(records) if r.get("step") is not None]
    return paths[max(steps)[1]] if steps else paths[0]


# --------------------------------------------------------------------------------------------------------
# Checks


def _fmt_int(v: Any) -> str:
    return (
        f"{int(v):,}" if isinstance(v, int | float) and not (isinstance(v, float) and math.isnan(v)) else "—"
    )


def _steps_text(steps: list[int]) -> str:
    """``"20,480, 40,960, …, 999,424"``: every step when there are few, else the first two and the last."""
    if len(steps) <= 4:
        return ", ".join(_fmt_int(s) for s in steps)
    return f"{_fmt_int(steps[0])}, {_fmt_int(steps[1])}, …, {_fmt_int(steps[-1])}"


def _fmt_count(v: Any) -> str:
    """A normalizer count: ``28,736`` or ``0.0001`` (the pseudo-count of statistics never updated)."""
    if not isinstance(v, int | float) or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:,.0f}" if v >= 10 else f"{v:.4g}"


def interval_of(steps: list[int]) -> int | None:
    """The typical gap between consecutive saved steps (median), None with fewer than two."""
    s = sorted(set(steps))
    if len(s) < 2:
        return None
    return int(np.median(np.diff(s)))


@audit_section("checkpointing/written", SUBSYSTEM, "Both setups write checkpoints at the same points")
def written(wb: Workbench, trust: bool = False) -> Section:
    """How many checkpoints each setup writes over the same run, and at which steps."""
    hypothesis = "Both setups write checkpoints at the same points of the same run"
    src = sources(wb, shared=True)
    if (f := _guard_sources(src, "checkpointing/written", hypothesis)) is not None:
        return Section.of(f, "Checkpoints written")
    recs = {side: contents_of(wb, side, src[side]["paths"], trust) for side in SIDES}
    steps = {side: sorted(r["step"] for r in recs[side] if r.get("step") is not None) for side in SIDES}
    counters = {side: sorted({k for r in recs[side] for k in (r.get("counters") or {})}) for side in SIDES}
    sizes = {
        side: float(np.mean([r["bytes"] for r in recs[side] if r.get("bytes")] or [0])) for side in SIDES
    }
    na, nb = len(src["baseline"]["paths"]), len(src["candidate"]["paths"])
    ia, ib = interval_of(steps["baseline"]), interval_of(steps["candidate"])
    same_runs = src["baseline"]["run"] is not None and src["candidate"]["run"] is not None
    rows = []
    for side in SIDES:
        for r in recs[side]:
            rows.append(
                {
                    "side": side,
                    "file": r["name"],
                    "step": r.get("step"),
                    "format": r.get("format"),
                    "bytes": r.get("bytes"),
                    "counters": r.get("counters"),
                }
            )
    table = pd.DataFrame(rows)
    if same_runs and na == nb and steps["baseline"] != steps["candidate"]:
        finding = Finding(
            id="checkpointing/written",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.NOTED,
            severity=Severity.INFO,
            evidence=Evidence(
                baseline={"count": na, "steps": steps["baseline"]},
                candidate={"count": nb, "steps": steps["candidate"]},
                effect=0.0,
                effect_label="extra checkpoints per run",
                summary=f"the same number of checkpoints ({na}) but at different steps "
                f"({_steps_text(steps['baseline'])} | "
                f"{_steps_text(steps['candidate'])}): the runs count steps per update "
                "differently (a batch-size change, see 02_trainer), not a checkpointing change",
            ),
            remediation="Nothing to fix in checkpointing; see the trainer's batch geometry.",
        )
    elif same_runs and na != nb:
        extra_bytes = (nb - na) * sizes["candidate"]
        finding = Finding(
            id="checkpointing/interval",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.NOTED,
            severity=Severity.LOW,
            evidence=Evidence(
                baseline={"count": na, "steps": steps["baseline"], "interval": ia},
                candidate={"count": nb, "steps": steps["candidate"], "interval": ib},
                effect=float(nb - na),
                effect_label="extra checkpoints per run",
                summary=f"over the same {int(wb.profile.train_steps):,}-step run the baseline writes {na} "
                f"checkpoint(s) (steps {_steps_text(steps['baseline'])}) and the candidate {nb} "
                f"(steps {_steps_text(steps['candidate'])}); the interval changed "
                f"({_fmt_int(ia) if ia else 'final only'} → {_fmt_int(ib) if ib else 'final only'} steps). "
                f"It costs little: {abs(extra_bytes) / 1e6:.2f} MB of disk per run and a save every few updates; "
                "it does not change what is learned",
            ),
            remediation="Nothing to fix for learning; restore the baseline's checkpoint interval only if disk or "
            "save time matters.",
        )
    elif not same_runs:
        finding = Finding(
            id="checkpointing/written",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.NOTED,
            severity=Severity.INFO,
            evidence=Evidence(
                baseline=na,
                candidate=nb,
                summary=f"{na} | {nb} existing checkpoints ({src['baseline']['origin']} | "
                f"{src['candidate']['origin']}); not from the same run, so their counts are not compared",
            ),
            remediation="Give both subjects a train() so that rlaudit can produce comparable runs.",
        )
    else:
        finding = Finding(
            id="checkpointing/written",
            subsystem=SUBSYSTEM,
            hypothesis=hypothesis,
            status=Status.CLEARED,
            evidence=Evidence(
                baseline={"count": na, "steps": steps["baseline"]},
                candidate={"count": nb, "steps": steps["candidate"]},
                effect=0.0,
                effect_label="extra checkpoints per run",
                summary=f"same checkpoints over the same {int(wb.profile.train_steps):,}-step run: {na} file(s) at "
                f"step(s) {_steps_text(steps['baseline'])}, "
                f"{sizes['baseline'] / 1e3:.0f} kB each",
            ),
        )
    return Section(
        title="Checkpoints written",
        findings=[finding],
        tables={"checkpoint files": table},
        notes=[
            f"Checkpoints of {src['baseline']['origin'] or 'the baseline'} | "
            f"{src['candidate']['origin'] or 'the candidate'}; steps read from each file's own step counter "
            f"(counters found: {', '.join(counters['baseline']) or 'none'} | "
            f"{', '.join(counters['candidate']) or 'none'})."
        ],
    )


def piece_table(record: dict[str, Any], fidelity: dict[str, Any] | None) -> dict[str, str]:
    """Piece -> where it is in the file (``""`` when absent), from a contents record."""
    out = {}
    groups = record.get("groups") or {}
    policy = (fidelity or {}).get("saved_prefix")
    if policy is None and groups:
        policy = next(
            (g for g in groups if re.search(r"policy|model|state_dict|actor|net", g, re.IGNORECASE)), None
        )
    out["policy weights"] = (
        f"{policy or '(root)'} ({groups.get(policy, groups.get('(root)', 0))} tensors)"
        if (policy is not None or groups)
        else ""
    )
    opt = record.get("optimizer")
    out["optimizer state"] = f"{opt['path']} ({opt['n_state_tensors']} tensors)" if opt else ""
    norm = record.get("normalizer")
    out["normalizer statistics"] = (
        f"{norm['path']} ({norm['dim']} features, count {_fmt_int(norm['count'])})" if norm else ""
    )
    out["step counter"] = ", ".join(f"{k}={_fmt_int(v)}" for k, v in (record.get("counters") or {}).items())
    out["config"] = (
        f"{record['config_key']} ({record.get('config_keys')} sections)" if record.get("config_key") else ""
    )
    out["RNG state (exact resume)"] = "yes" if record.get("rng_state") else ""
    return out


@audit_section("checkpointing/contents", SUBSYSTEM, "Checkpoints hold everything evaluation and resume need")
def contents(wb: Workbench, trust: bool = False) -> Section:
    """Policy weights, optimizer state, normalizer statistics, step counters and config in each side's newest
    checkpoint, read safely (``weights_only``; unsafe files are reported with the classes they would import)."""
    hypothesis = "Each setup's checkpoints hold policy weights, optimizer state, normalizer statistics, a step counter and the config"
    src = sources(wb)
    if (f := _guard_sources(src, "checkpointing/contents", hypothesis)) is not None:
        return Section.of(f, "What a checkpoint holds")
    recs = {side: contents_of(wb, side, src[side]["paths"], trust) for side in SIDES}
    latest = {
        side: next(r for r in recs[side] if r["name"] == Path(newest(recs[side], src[side]["paths"])).name)
        for side in SIDES
    }
    findings: list[Finding] = []
    unsafe = {side: latest[side] for side in SIDES if not latest[side].get("loaded", False)}
    for side, rec in unsafe.items():
        findings.append(
            Finding(
                id=f"checkpointing/unsafe-{side}",
                subsystem=SUBSYSTEM,
                hypothesis="Checkpoints can be read without executing code",
                status=Status.NOTED,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline=latest["baseline"].get("unsafe_globals"),
                    candidate=latest["candidate"].get("unsafe_globals"),
                    summary=rec.get("message") or rec.get("error") or "unreadable",
                ),
                remediation="Save plain state dicts (tensors, numbers, strings) instead of pickled objects, or "
                "rerun this notebook with trust=True for files you made yourself.",
            )
        )
    pieces = {side: piece_table(latest[side], None) for side in SIDES}
    rows = [
        {
            "piece": p,
            "baseline": pieces["baseline"].get(p) or "—",
            "candidate": pieces["candidate"].get(p) or "—",
        }
        for p in pieces["baseline"]
    ]
    missing_c = [p for p in PIECES if pieces["baseline"].get(p) and not pieces["candidate"].get(p)]
    missing_b = [p for p in PIECES if pieces["candidate"].get(p) and not pieces["baseline"].get(p)]
    missing_both = [p for p in PIECES if not pieces["baseline"].get(p) and not pieces["candidate"].get(p)]
    if missing_c:
        findings.append(
            Finding(
                id="checkpointing/missing-pieces",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline={p: pieces["baseline"][p] for p in missing_c},
                    candidate={p: "absent" for p in missing_c},
                    effect=float(len(missing_c)),
                    effect_label="pieces missing",
                    summary="the candidate's checkpoints lack "
                    + ", ".join(missing_c)
                    + ": "
                    + "; ".join(PIECE_COST[p] for p in missing_c),
                ),
                remediation="Save "
                + ", ".join(missing_c)
                + " in the candidate's checkpoint dict, as the baseline does.",
            )
        )
    if missing_b or missing_both:
        items = missing_b + missing_both
        findings.append(
            Finding(
                id="checkpointing/pieces-absent",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                severity=Severity.MEDIUM
                if "optimizer state" in items or "normalizer statistics" in items
                else Severity.LOW,
                evidence=Evidence(
                    baseline={p: pieces["baseline"].get(p) or "absent" for p in items},
                    candidate={p: pieces["candidate"].get(p) or "absent" for p in items},
                    summary=(
                        "absent from both setups' checkpoints: " + ", ".join(missing_both)
                        if missing_both
                        else ""
                    )
                    + ("; " if missing_both and missing_b else "")
                    + ("absent from the baseline's only: " + ", ".join(missing_b) if missing_b else "")
                    + " (not a difference that explains a regression; "
                    + "; ".join(PIECE_COST[p] for p in items)
                    + ")",
                ),
                remediation="Consider saving "
                + ", ".join(items)
                + " too (not needed to match the baseline).",
            )
        )
    if not missing_c:
        present = [p for p in PIECES if pieces["baseline"].get(p)]
        findings.append(
            Finding(
                id="checkpointing/contents",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline={p: pieces["baseline"][p] for p in present},
                    candidate={p: pieces["candidate"].get(p) for p in present},
                    summary=f"both checkpoints hold {', '.join(present)} "
                    f"({latest['baseline'].get('format')} files read with weights_only, "
                    f"{latest['baseline'].get('n_tensors')} | {latest['candidate'].get('n_tensors')} tensors)",
                ),
            )
        )
    return Section(
        title="What a checkpoint holds",
        findings=findings,
        tables={
            "pieces of the newest checkpoint": pd.DataFrame(rows),
            "tensor groups": pd.DataFrame([{"side": s, **(latest[s].get("groups") or {})} for s in SIDES]),
        },
        notes=[
            f"Newest checkpoint of each side ({latest['baseline']['name']} | {latest['candidate']['name']}), read "
            "with rlaudit.safeload (torch weights_only, safetensors, JSON): nothing in the file is executed."
        ],
    )


def fidelity(wb: Workbench, side: str, path: str, trust: bool = False) -> ProbeResult:
    """The ``load_fidelity`` probe of ``side``'s loader on ``path`` (cached)."""
    return wb.run_side(
        side,
        probes.load_fidelity,
        path=str(path),
        seed=0,
        env_seed=0,
        rollout_steps=int(min(wb.profile.rollout_steps, 2000)),
        batch=256,
        trust=trust,
    )


def own_fidelity(
    wb: Workbench, trust: bool = False
) -> tuple[dict[str, Any], dict[str, ProbeResult], Finding | None]:
    """Each side's loader on its own newest checkpoint: ``(sources, {side: ProbeResult}, guard finding)``."""
    hypothesis = "load_checkpoint restores what was saved"
    caps = capabilities(wb)
    missing = {side: [c for c in ("load_checkpoint",) if c not in caps[side]] for side in SIDES}
    if not all(("train" in caps[s] and "config" in caps[s]) or "checkpoints" in caps[s] for s in SIDES):
        for side in SIDES:
            if not (("train" in caps[side] and "config" in caps[side]) or "checkpoints" in caps[side]):
                missing[side] = [c for c in ("train", "checkpoints") if c not in caps[side]] + missing[side]
    if any(missing.values()):
        return (
            {},
            {},
            Finding.skipped(
                "checkpointing/loading", SUBSYSTEM, hypothesis, {k: v for k, v in missing.items() if v}
            ),
        )
    src = sources(wb)
    if (f := _guard_sources(src, "checkpointing/loading", hypothesis)) is not None:
        return src, {}, f
    out = {}
    for side in SIDES:
        recs = contents_of(wb, side, src[side]["paths"], trust)
        out[side] = fidelity(wb, side, newest(recs, src[side]["paths"]), trust)
    pair = Pair(baseline=out["baseline"], candidate=out["candidate"])
    if (f := pair.guard("checkpointing/loading", SUBSYSTEM, hypothesis)) is not None:
        return src, out, f
    return src, out, None


def loading_problems(report: dict[str, Any]) -> dict[str, Any]:
    """What went wrong in one ``fidelity.json``: loader error, tensors not restored, normalizer mismatch."""
    counts = report.get("counts") or {}
    n = int(report.get("n_policy_tensors") or 0)
    loaded = int(counts.get("loaded", 0))
    bad = {k: v for k, v in counts.items() if k != "loaded"}
    norm = report.get("normalizer") or {}
    norm_problem = ""
    if norm.get("saved") and not norm.get("returned"):
        norm_problem = "normalizer statistics are saved but load_checkpoint does not return them"
    elif norm.get("shape_mismatch"):
        norm_problem = f"normalizer statistics have shape {norm['shape_mismatch'][1]} instead of {norm['shape_mismatch'][0]}"
    elif norm.get("features_differ"):
        norm_problem = (
            f"load_checkpoint returns obs_rms with count {_fmt_count(norm.get('returned_count'))}, mean |μ| "
            f"{norm.get('returned_mean_abs', 0):.3g}, mean σ² {norm.get('returned_var_mean', 0):.3g} instead of the "
            f"saved count {_fmt_count(norm.get('saved_count'))}, |μ| {norm.get('saved_mean_abs', 0):.3g}, σ² "
            f"{norm.get('saved_var_mean', 0):.3g} ({norm['features_differ']} of {norm.get('dim')} features differ)"
        )
    return {
        "n": n,
        "loaded": loaded,
        "bad": bad,
        "error": report.get("loader_error"),
        "normalizer": norm_problem,
    }


def _tensor_frame(res: ProbeResult) -> pd.DataFrame:
    return pd.DataFrame(res.json("tensors"))


def _not_loaded(res: ProbeResult) -> list[str]:
    df = _tensor_frame(res)
    if df.empty:
        return []
    rows = df[df["status"] != "loaded"]
    return [f"{r['key'] or r['saved_key']} ({r['status']})" for r in rows.to_dict("records")]


@audit_section(
    "checkpointing/loading", SUBSYSTEM, "load_checkpoint restores every saved tensor and the normalizer"
)
def loading(wb: Workbench, trust: bool = False) -> Section:
    """After ``load_checkpoint``: every tensor compared with the saved one (loaded, still at init, missing,
    unexpected, shape mismatch), and the returned ``obs_rms`` compared with the saved statistics."""
    hypothesis = "load_checkpoint restores every saved tensor and the normalizer statistics"
    _src, res, f = own_fidelity(wb, trust)
    if f is not None:
        return Section.of(f, "Loading fidelity")
    reports = {side: res[side].json("fidelity") for side in SIDES}
    probs = {side: loading_problems(reports[side]) for side in SIDES}
    findings: list[Finding] = []

    def status_for(side: str, has: dict[str, bool]) -> tuple[Status, Severity]:
        other = "baseline" if side == "candidate" else "candidate"
        if side == "candidate" and not has[other]:
            return Status.SUSPECT, Severity.HIGH
        return Status.NOTED, Severity.MEDIUM

    tensor_bad = {side: bool(probs[side]["bad"] or probs[side]["error"]) for side in SIDES}
    for side in SIDES:
        p = probs[side]
        if not tensor_bad[side]:
            continue
        status, severity = status_for(side, tensor_bad)
        listed = _not_loaded(res[side])
        text = (
            f"the {side}'s load_checkpoint raised {p['error']}"
            if p["error"]
            else f"the {side}'s load_checkpoint restored {p['loaded']} of {p['n']} tensors: "
            + ", ".join(f"{v} {k}" for k, v in p["bad"].items())
            + (
                " (still at their initialization: the loader silently skipped them)"
                if "at-init" in p["bad"]
                else ""
            )
            + ": "
            + ", ".join(listed[:8])
            + (" ..." if len(listed) > 8 else "")
        )
        findings.append(
            Finding(
                id="checkpointing/partial-load"
                if side == "candidate"
                else "checkpointing/partial-load-baseline",
                subsystem=SUBSYSTEM,
                hypothesis="load_checkpoint restores every tensor the checkpoint holds",
                status=status,
                severity=severity,
                evidence=Evidence(
                    baseline=f"{probs['baseline']['loaded']} of {probs['baseline']['n']} loaded",
                    candidate=f"{probs['candidate']['loaded']} of {probs['candidate']['n']} loaded",
                    effect=float(p["n"] - p["loaded"]),
                    effect_label="tensors not restored",
                    summary=text
                    + (" — the other side restores all of its own" if status is Status.SUSPECT else ""),
                    details={"not_loaded": listed, "counts": reports[side].get("counts")},
                ),
                remediation=f"Fix the {side}'s key mapping in load_checkpoint and load with strict=True so a "
                "missing or renamed key raises instead of leaving a layer at its initialization.",
            )
        )
    norm_bad = {side: bool(probs[side]["normalizer"]) for side in SIDES}
    for side in SIDES:
        if not norm_bad[side]:
            continue
        status, severity = status_for(side, norm_bad)
        findings.append(
            Finding(
                id="checkpointing/normalizer-not-restored"
                if side == "candidate"
                else "checkpointing/normalizer-not-restored-baseline",
                subsystem=SUBSYSTEM,
                hypothesis="load_checkpoint returns the observation-normalizer statistics that were saved",
                status=status,
                severity=severity,
                evidence=Evidence(
                    baseline=reports["baseline"].get("normalizer"),
                    candidate=reports["candidate"].get("normalizer"),
                    effect=float(
                        (reports[side].get("normalizer") or {}).get("max_abs_diff_mean") or float("nan")
                    ),
                    effect_label="largest |Δ mean| per feature",
                    summary=f"the {side}: {probs[side]['normalizer']}: evaluation or a resumed run would feed the "
                    "network differently scaled observations than it was trained on (case 002)",
                ),
                remediation=f"Restore obs_rms from the checkpoint in the {side}'s load_checkpoint (and in resume), "
                "and return it in the extras.",
            )
        )
    if not any(tensor_bad.values()) and not any(norm_bad.values()):
        norm = reports["baseline"].get("normalizer") or {}
        norm_text = (
            f"; obs_rms returned as saved ({norm.get('dim')} features, count {_fmt_int(norm.get('saved_count'))})"
            if norm.get("saved") and norm.get("returned")
            else "; no normalizer statistics saved or returned"
        )
        findings.append(
            Finding(
                id="checkpointing/loading",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=f"{probs['baseline']['loaded']} of {probs['baseline']['n']} loaded",
                    candidate=f"{probs['candidate']['loaded']} of {probs['candidate']['n']} loaded",
                    effect=0.0,
                    effect_label="tensors not restored",
                    summary=f"{probs['baseline']['loaded']} of {probs['baseline']['n']} | {probs['candidate']['loaded']} "
                    f"of {probs['candidate']['n']} tensors restored exactly{norm_text}",
                ),
            )
        )
    table = pd.concat([_tensor_frame(res[s]).assign(side=s) for s in SIDES], ignore_index=True)
    return Section(
        title="Loading fidelity: what load_checkpoint restores",
        findings=findings,
        tables={"tensors after load_checkpoint": table},
        notes=[
            "Each side's newest checkpoint, loaded by its own load_checkpoint under torch seed 0; every tensor is "
            "compared with the one saved in the file (read safely) and with a fresh make_policy under the same "
            "seed (`at-init`: the loader left it at its initialization). Shape mismatches are compared here, "
            "not by torch (load_state_dict raises on them even with strict=False)."
        ],
    )


@audit_section(
    "checkpointing/round-trip", SUBSYSTEM, "A loaded policy computes what the saved policy computed"
)
def round_trip(wb: Workbench, trust: bool = False) -> Section:
    """Outputs of the loaded policy vs the saved weights on a fixed observation batch."""
    hypothesis = "The policy load_checkpoint returns computes the same outputs as the saved policy"
    _src, res, f = own_fidelity(wb, trust)
    if f is not None:
        return Section.of(f, "Round trip")
    reports = {side: res[side].json("fidelity") for side in SIDES}
    rows, worst = [], {}
    for side in SIDES:
        rt = reports[side].get("round_trip") or {}
        worst[side] = None
        for head, d in (rt.get("heads") or {}).items():
            rel = d["max_abs_diff"] / max(d["scale"], 1e-12)
            rows.append(
                {
                    "side": side,
                    "head": head,
                    "max |Δ|": d["max_abs_diff"],
                    "mean |output|": d["scale"],
                    "relative": rel,
                    "batch": rt.get("batch"),
                }
            )
            worst[side] = max(worst[side] or 0.0, rel)
        if not rt.get("comparable"):
            rows.append(
                {
                    "side": side,
                    "head": "—",
                    "max |Δ|": None,
                    "mean |output|": None,
                    "relative": None,
                    "batch": None,
                    "note": rt.get("reason", ""),
                }
            )
    table = pd.DataFrame(rows)
    bad = {side: worst[side] is not None and worst[side] > 1e-6 for side in SIDES}
    findings = []
    for side in SIDES:
        if not bad[side]:
            continue
        heads = table[(table["side"] == side) & (table["relative"].fillna(0) > 1e-6)]
        other = "baseline" if side == "candidate" else "candidate"
        findings.append(
            Finding(
                id="checkpointing/round-trip" if side == "candidate" else "checkpointing/round-trip-baseline",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT if side == "candidate" and not bad[other] else Status.NOTED,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline=worst["baseline"],
                    candidate=worst["candidate"],
                    effect=float(worst[side] or 0.0),
                    effect_label="largest relative output difference",
                    summary=f"the {side}'s loaded policy computes different outputs than the saved weights: "
                    + "; ".join(
                        f"{r['head']} head max |Δ| {r['max |Δ|']:.3g} (mean |output| {r['mean |output|']:.3g})"
                        for r in heads.to_dict("records")
                    )
                    + f" on {int(heads['batch'].iloc[0])} observations",
                ),
                remediation="Make load_checkpoint restore every tensor (see the loading finding); a round trip must "
                "reproduce the saved policy's outputs exactly.",
            )
        )
    comparable = [s for s in SIDES if worst[s] is not None]
    if not findings:
        if len(comparable) == 2:
            findings.append(
                Finding(
                    id="checkpointing/round-trip",
                    subsystem=SUBSYSTEM,
                    hypothesis=hypothesis,
                    status=Status.CLEARED,
                    evidence=Evidence(
                        baseline=worst["baseline"],
                        candidate=worst["candidate"],
                        effect=0.0,
                        effect_label="largest relative output difference",
                        summary="the loaded policies reproduce the saved policies' outputs exactly "
                        f"(policy and value heads, max |Δ| ≤ 1e-6 relative, {int(table['batch'].dropna().iloc[0])} "
                        "observations)",
                    ),
                )
            )
        else:
            reasons = "; ".join(f"{r['side']}: {r.get('note', '')}" for r in rows if r.get("head") == "—")
            findings.append(
                Finding(
                    id="checkpointing/round-trip",
                    subsystem=SUBSYSTEM,
                    hypothesis=hypothesis,
                    status=Status.NOTED,
                    severity=Severity.INFO,
                    evidence=Evidence(summary=f"round trip not comparable: {reasons}"),
                    remediation="Give the subject make_env and make_policy so rlaudit can rebuild the saved policy.",
                )
            )
    return Section(
        title="Round trip: loaded vs saved outputs",
        findings=findings,
        tables={"head outputs, loaded vs saved": table},
        notes=[
            "The saved weights are put into a fresh make_policy network by rlaudit itself (names, then "
            "order and shape) and both networks run on the same observations from a seeded random-policy "
            "rollout; the policy and value heads are compared."
        ],
    )


@audit_section("checkpointing/cross-version", SUBSYSTEM, "Each setup's loader reads the other's checkpoints")
def cross_version(wb: Workbench, trust: bool = False) -> Section:
    """The candidate's loader on the baseline's checkpoint and the reverse, each in its own subject's process
    (case 000, H4.R1: a DictConfig → AgentConfig change that may break loading old checkpoints)."""
    hypothesis = "Each setup's load_checkpoint reads the other's checkpoints completely"
    src, _res, f = own_fidelity(wb, trust)
    if f is not None:
        return Section.of(f, "Cross-version loading")
    paths = {}
    for side in SIDES:
        recs = contents_of(wb, side, src[side]["paths"], trust)
        paths[side] = newest(recs, src[side]["paths"])
    cross = {
        "candidate reads baseline's": fidelity(wb, "candidate", paths["baseline"], trust),
        "baseline reads candidate's": fidelity(wb, "baseline", paths["candidate"], trust),
    }
    rows, problems, shape_only = [], {}, {}
    for label, r in cross.items():
        if not r.ok:
            problems[label] = f"the probe failed: {r.error or r.missing}"
            shape_only[label] = False
            continue
        rep = r.json("fidelity")
        p = loading_problems(rep)
        rows.append(
            {
                "direction": label,
                "loaded": p["loaded"],
                "tensors": p["n"],
                "problems": ", ".join(f"{v} {k}" for k, v in p["bad"].items()) or "—",
                "loader error": p["error"] or "—",
                "normalizer": p["normalizer"] or "as saved",
            }
        )
        if p["bad"] or p["error"]:
            mism = set(p["bad"]) <= {"shape-mismatch", "not-loaded", "missing", "unexpected"} and (
                "shape-mismatch" in p["bad"] or "size mismatch" in str(p["error"])
            )
            shape_only[label] = bool(mism)
            problems[label] = (
                f"load_checkpoint raised {p['error']}"
                if p["error"]
                else f"{p['loaded']} of {p['n']} tensors restored ("
                + ", ".join(f"{v} {k}" for k, v in p["bad"].items())
                + ")"
            )
    table = pd.DataFrame(rows)
    findings = []
    if problems:
        only_shapes = all(shape_only.values())
        findings.append(
            Finding(
                id="checkpointing/cross-version",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED if only_shapes else Status.SUSPECT,
                severity=Severity.MEDIUM if only_shapes else Severity.HIGH,
                evidence=Evidence(
                    baseline=rows[1] if len(rows) > 1 else None,
                    candidate=rows[0] if rows else None,
                    effect=float(len(problems)),
                    effect_label="directions that fail",
                    summary="; ".join(f"{k} checkpoint: {v}" for k, v in problems.items())
                    + (
                        " — the networks differ in shape (see 01_agents), so checkpoints are not interchangeable"
                        if only_shapes
                        else " — old checkpoints would resume or evaluate with layers left at init"
                    ),
                ),
                remediation=(
                    "Expected while the architectures differ; convert checkpoints explicitly if they must be "
                    "shared."
                    if only_shapes
                    else "Make the loaders map the other version's keys (and config type) explicitly and load "
                    "with strict=True; add a test that loads a checkpoint written by the previous version."
                ),
            )
        )
    else:
        findings.append(
            Finding(
                id="checkpointing/cross-version",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=rows[1] if len(rows) > 1 else None,
                    candidate=rows[0] if rows else None,
                    effect=0.0,
                    effect_label="directions that fail",
                    summary="each loader reads the other's checkpoint completely: "
                    + "; ".join(f"{r['direction']} {r['loaded']} of {r['tensors']} tensors" for r in rows),
                ),
            )
        )
    return Section(
        title="Cross-version loading",
        findings=findings,
        tables={"cross loading": table},
        notes=[
            "Each direction runs in the loading subject's own process (its own code and interpreter), on "
            "the other's newest checkpoint; normalizer differences are reported under loading fidelity."
        ],
    )


@audit_section("checkpointing/selection", SUBSYSTEM, "Both setups pick their newest checkpoint as the latest")
def selection(wb: Workbench, trust: bool = False) -> Section:
    """The subject's "latest" (first of ``checkpoints(config, run_dir=...)``) vs the highest saved step, plus a
    digit-boundary test (``model_9`` vs ``model_10``)."""
    from rlaudit.trainer.probes import RUN_SUBDIR

    hypothesis = "Both setups pick the checkpoint with the highest step as their latest"
    caps = capabilities(wb)
    missing = {side: ["checkpoints"] for side in SIDES if "checkpoints" not in caps[side]}
    if missing:
        return Section.of(
            Finding.skipped("checkpointing/selection", SUBSYSTEM, hypothesis, missing), "Selection"
        )
    results: dict[str, ProbeResult] = {}
    runs = dedicated_run(wb) if all("train" in caps[s] and "config" in caps[s] for s in SIDES) else {}
    for side in SIDES:
        if runs:
            run = runs[side]
            if not run.ok:
                return Section.of(
                    Pair(**{s: (run if s == side else None) for s in SIDES}).guard(
                        "checkpointing/selection", SUBSYSTEM, hypothesis
                    ),
                    "Selection",
                )
            results[side] = wb.run_side(
                side, probes.selection, run_dir=str(Path(run.dir) / RUN_SUBDIR), trust=trust
            )
        else:
            results[side] = wb.run_side(side, probes.selection, run_dir=None, trust=trust)
    pair = Pair(baseline=results["baseline"], candidate=results["candidate"])
    if (f := pair.guard("checkpointing/selection", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f, "Selection")
    sel = {side: results[side].json("selection") for side in SIDES}
    rows, wrong = [], {}
    for side in SIDES:
        s = sel[side]
        picks = s["picks"]
        latest = picks[0] if picks else None
        highest = picks[s["highest_index"]] if s.get("highest_index") is not None else None
        dt = s.get("digit_test") or {}
        rows.append(
            {
                "side": side,
                "checkpoints": len(picks),
                "picked as latest": latest,
                "step": s["steps"][0] if picks else None,
                "highest step": highest,
                "step ": s["steps"][s["highest_index"]] if s.get("highest_index") is not None else None,
                "9 vs 10 test": dt.get("picked") if dt.get("tested") else "not testable",
                "9 vs 10 correct": dt.get("correct"),
            }
        )
        problems = []
        if picks and not s.get("latest_is_highest") and s.get("highest_index") is not None:
            problems.append(
                f"picks {latest} (step {_fmt_int(s['steps'][0])}) as latest over {highest} "
                f"(step {_fmt_int(s['steps'][s['highest_index']])})"
            )
        if dt.get("tested") and not dt.get("correct"):
            problems.append(
                f"given {dt['older']} (older) and {dt['newer']} (newer), it picks {dt['picked']}: it "
                "sorts file names as strings, so model_9 beats model_10 once a run passes 9 saves"
            )
        if problems:
            wrong[side] = problems
    findings = []
    for side, problems in wrong.items():
        other = "baseline" if side == "candidate" else "candidate"
        findings.append(
            Finding(
                id="checkpointing/selection" if side == "candidate" else "checkpointing/selection-baseline",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT if side == "candidate" and other not in wrong else Status.NOTED,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline=rows[0]["9 vs 10 test"],
                    candidate=rows[1]["9 vs 10 test"],
                    summary=f"the {side} "
                    + "; ".join(problems)
                    + " — resuming or evaluating 'the latest' checkpoint would load an older one (case 000, H4.R2)",
                ),
                remediation=f"Sort the {side}'s checkpoints by the step number parsed from the name (int) or by the "
                "step saved inside, not by the file name as a string.",
            )
        )
    if not wrong:
        findings.append(
            Finding(
                id="checkpointing/selection",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=rows[0]["picked as latest"],
                    candidate=rows[1]["picked as latest"],
                    summary="both pick their highest-step checkpoint as latest "
                    f"({rows[0]['picked as latest']}, step {_fmt_int(rows[0]['step'])} | {rows[1]['picked as latest']}, "
                    f"step {_fmt_int(rows[1]['step'])}) and order model_10 before model_9",
                ),
            )
        )
    return Section(
        title="Which checkpoint is 'latest'",
        findings=findings,
        tables={"selection": pd.DataFrame(rows)},
        notes=[
            "A dedicated short run per side (saving every update when the subject's config_keys() name a "
            "checkpoint interval), then each subject's own checkpoints(config, run_dir=...) ordering; the "
            "step of each file is read from its contents. The 9-vs-10 test copies the run's oldest and "
            "newest checkpoints under numbers 9 and 10 in a scratch run directory."
        ],
    )


def continuity(full: pd.DataFrame, resumed: pd.DataFrame) -> pd.DataFrame:
    """Scalars of the resumed run next to the uninterrupted run's at the same steps.

    Args:
        full: Uninterrupted run's ``scalars`` table (step, name, value).
        resumed: Resumed run's ``scalars`` table (only steps after the resume point).

    Returns:
        Columns name, step, uninterrupted, resumed, abs_diff, rel_diff (|Δ| over the larger of |value|, the
        metric's std over the uninterrupted run, and 1e-8); timing metrics are left out.
    """
    if full.empty or resumed.empty:
        return pd.DataFrame(columns=["name", "step", "uninterrupted", "resumed", "abs_diff", "rel_diff"])
    keep = ~resumed["name"].str.contains(TIMING_METRIC)
    merged = resumed[keep].merge(full, on=["step", "name"], suffixes=("_r", "_u"))
    scale = full.groupby("name")["value"].std().fillna(0.0)
    merged["scale"] = np.maximum.reduce(
        [
            merged["value_u"].abs().to_numpy(),
            merged["name"].map(scale).fillna(0.0).to_numpy(),
            np.full(len(merged), 1e-8),
        ]
    )
    merged["abs_diff"] = (merged["value_r"] - merged["value_u"]).abs()
    merged["rel_diff"] = merged["abs_diff"] / merged["scale"]
    return merged.rename(columns={"value_u": "uninterrupted", "value_r": "resumed"})[
        ["name", "step", "uninterrupted", "resumed", "abs_diff", "rel_diff"]
    ]


def resume_class(table: pd.DataFrame) -> str:
    """``exact``, ``approximate``, ``broken`` (see :data:`EXACT`, :data:`BROKEN`) or ``unknown`` (no overlap)."""
    if table.empty:
        return "unknown"
    worst = float(table["rel_diff"].max())
    if worst <= EXACT:
        return "exact"
    return "broken" if worst > BROKEN else "approximate"


@audit_section(
    "checkpointing/resume", SUBSYSTEM, "A run resumed from a checkpoint continues like the uninterrupted run"
)
def resume(wb: Workbench, trust: bool = False) -> Section:
    """Resume each side's dedicated run from a mid-run checkpoint (same seed and steps) and compare the
    recorder's scalars after the resume point with the uninterrupted run's."""
    from rlaudit.trainer.probes import train_run
    from rlaudit.trainer.runs import RunData

    hypothesis = "A run resumed from a checkpoint continues like the uninterrupted run (losses and metrics)"
    caps = capabilities(wb)
    missing = {side: [c for c in ("train", "checkpoints") if c not in caps[side]] for side in SIDES}
    if any(missing.values()):
        return Section.of(Finding.skipped("checkpointing/resume", SUBSYSTEM, hypothesis, missing), "Resume")
    runs = dedicated_run(wb)
    pair = Pair(baseline=runs["baseline"], candidate=runs["candidate"])
    if (f := pair.guard("checkpointing/resume", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f, "Resume")
    params = dedicated_params(wb)
    tables, classes, points, notes = {}, {}, {}, []
    for side in SIDES:
        paths = run_checkpoints(runs[side])
        recs = contents_of(wb, side, paths, trust) if paths else []
        steps = [(r.get("step"), p) for r, p in zip(recs, paths, strict=True) if r.get("step") is not None]
        final = max((s for s, _ in steps), default=None)
        mids = sorted((s, p) for s, p in steps if s != final)
        if not mids:
            classes[side] = "untestable"
            points[side] = None
            notes.append(
                f"the {side}'s run left no checkpoint before its end ({len(paths)} checkpoint(s)); nothing to "
                "resume from"
            )
            continue
        step, path = mids[len(mids) // 2] if len(mids) > 1 else mids[0]
        points[side] = step
        resumed = wb.run_side(side, train_run, **params[side], resume_from=str(path))
        if not resumed.ok:
            err = str(getattr(resumed.error, "message", resumed.error))
            if "resume_from" in err:
                classes[side] = "unsupported"
                notes.append(f"the {side}'s train() does not accept resume_from=: {err[:200]}")
                continue
            return Section.of(
                Pair(**{s: (resumed if s == side else None) for s in SIDES}).guard(
                    "checkpointing/resume", SUBSYSTEM, hypothesis
                ),
                "Resume",
            )
        full = RunData.from_result(runs[side]).table("scalars")
        again = RunData.from_result(resumed).table("scalars")
        tables[side] = continuity(full, again).assign(side=side)
        classes[side] = resume_class(tables[side])
    table = pd.concat(list(tables.values()), ignore_index=True) if tables else pd.DataFrame()
    worst = {
        side: float(tables[side]["rel_diff"].max()) if side in tables and len(tables[side]) else None
        for side in SIDES
    }

    def describe(side: str) -> str:
        t = tables.get(side)
        if t is None or t.empty:
            return classes[side]
        top = t.sort_values("rel_diff", ascending=False).iloc[0]
        return (
            f"{classes[side]} (resumed at step {_fmt_int(points[side])}; largest difference {top['name']} "
            f"{top['uninterrupted']:.4g} → {top['resumed']:.4g}, {top['rel_diff']:.2%} of its scale)"
        )

    findings = []
    if "unsupported" in classes.values() or "untestable" in classes.values():
        findings.append(
            Finding(
                id="checkpointing/resume",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SKIPPED,
                severity=Severity.INFO,
                evidence=Evidence(
                    baseline=classes.get("baseline"),
                    candidate=classes.get("candidate"),
                    summary="; ".join(notes),
                ),
                remediation="Accept train(..., resume_from=path) and save checkpoints during the run so resume can be "
                "tested.",
            )
        )
    elif classes["candidate"] == "broken" and classes["baseline"] != "broken":
        findings.append(
            Finding(
                id="checkpointing/resume",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline=describe("baseline"),
                    candidate=describe("candidate"),
                    effect=worst["candidate"],
                    effect_label="largest relative metric difference after resume",
                    summary=f"the candidate's resumed run does not continue its own run: {describe('candidate')}; the "
                    f"baseline's continues {classes['baseline']}ly",
                ),
                remediation="Restore everything the run carries in resume (weights, optimizer, normalizer "
                "statistics, RNG and step counters) and check it with a resume-equals-uninterrupted test.",
                figures=["resume continuity"],
            )
        )
    elif classes["baseline"] != classes["candidate"] or "broken" in classes.values():
        findings.append(
            Finding(
                id="checkpointing/resume",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                severity=Severity.MEDIUM if "broken" in classes.values() else Severity.LOW,
                evidence=Evidence(
                    baseline=describe("baseline"),
                    candidate=describe("candidate"),
                    effect=worst["candidate"],
                    effect_label="largest relative metric difference after resume",
                    summary=f"resume continuity: baseline {describe('baseline')}; candidate "
                    f"{describe('candidate')}",
                ),
                remediation="Save and restore RNG states with the checkpoint if exact resumes matter.",
                figures=["resume continuity"],
            )
        )
    else:
        n_metrics = table["name"].nunique() if not table.empty else 0
        findings.append(
            Finding(
                id="checkpointing/resume",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=describe("baseline"),
                    candidate=describe("candidate"),
                    effect=worst["candidate"],
                    effect_label="largest relative metric difference after resume",
                    summary=f"both resumed runs continue {classes['candidate']}ly: {n_metrics} metrics "
                    f"after the resume point (step {_fmt_int(points['baseline'])} | "
                    f"{_fmt_int(points['candidate'])}) match the uninterrupted runs (largest relative "
                    f"difference {worst['baseline']:.2g} | {worst['candidate']:.2g})",
                ),
            )
        )
    from rlaudit.checkpointing import plots

    figures = {"resume continuity": plots.resume_figure(table)} if not table.empty else {}
    return Section(
        title="Resume: does a resumed run continue the run?",
        findings=findings,
        tables={"metrics after the resume point": table},
        figures=figures,
        notes=[
            f"Dedicated run per side ({params['baseline']['steps']:,} steps, seed 0"
            + (
                f", overrides {params['baseline'].get('overrides')}"
                if params["baseline"].get("overrides")
                else ""
            )
            + "), resumed from its middle checkpoint with train(..., resume_from=<checkpoint>) and the same "
            f"seed and steps; timing metrics are left out. Exact: ≤ {EXACT:g} relative; broken: > {BROKEN:.0%}.",
            *notes,
        ],
    )


def audit_all(wb: Workbench, trust: bool = False) -> list[Section]:
    """Every checkpointing check, in notebook order."""
    return [
        written(wb, trust=trust),
        contents(wb, trust=trust),
        loading(wb, trust=trust),
        round_trip(wb, trust=trust),
        cross_version(wb, trust=trust),
        selection(wb, trust=trust),
        resume(wb, trust=trust),
    ]
