"""Spaces audit (notebook 10): the observation and action spaces, the observations themselves, what the network
actually receives on the training and evaluation paths, and what preprocessing costs.

Case 002 is the model: behaviour cloning trained on normalized observations while RL fed raw ones, and frame
stacking quadrupled the input of an MLP that did not need it. Observations come from seeded random-policy
rollouts in which both subjects play the same action sequence (when their action spaces are equal), so an
identical environment gives identical statistics and any shift is real.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import stats
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, audit_section
from rlaudit.spaces import probes
from rlaudit.workbench import SIDES, Pair, ProbeResult, Workbench

SUBSYSTEM = "spaces"
SMD_SHIFT = 0.2
"""|Standardized mean difference| above which a feature counts as shifted (0.1 is the usual balance check;
0.2 leaves room for rollout noise in environments that are not bit-identical)."""
STD_RATIO = 1.5
"""A feature whose spread differs by more than this factor (either way) also counts as shifted."""
SHIFTED_FRACTION = 0.10
"""A side whose first layer sees more than this fraction of features shifted between training and evaluation
is SUSPECT."""
COST_RATIO = 1.15
"""Input bytes, first-layer FLOPs or forward time differing by more than 15% is a practical difference."""


def obs_pair(wb: Workbench) -> Pair:
    """The :func:`rlaudit.spaces.probes.observations` probe on both sides (cached)."""
    return wb.run(
        probes.observations, env_seed=0, rollout_steps=int(wb.profile.rollout_steps), keep_rows=1024
    )


def smd_from_moments(
    mean_a: np.ndarray, var_a: np.ndarray, mean_b: np.ndarray, var_b: np.ndarray
) -> np.ndarray:
    """Per-feature standardized mean difference ``(mean_b - mean_a) / sqrt((var_a + var_b) / 2)`` from moments
    (same convention as :func:`rlaudit.stats.standardized_mean_difference`, b minus a): 0 where both features
    are constant and equal, +-inf where constant and different."""
    mean_a, mean_b = np.asarray(mean_a, float), np.asarray(mean_b, float)
    diff = mean_b - mean_a
    scale = np.sqrt((np.asarray(var_a, float) + np.asarray(var_b, float)) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        smd = diff / scale
    return np.where(scale == 0.0, np.where(diff == 0.0, 0.0, np.copysign(np.inf, diff)), smd)


def shifted_features(
    mean_a: np.ndarray, std_a: np.ndarray, mean_b: np.ndarray, std_b: np.ndarray, eps: float = 1e-6
) -> tuple[np.ndarray, np.ndarray]:
    """Which features are distributed differently: |SMD| > :data:`SMD_SHIFT` or a spread ratio beyond
    :data:`STD_RATIO`; features constant on both sides (std < eps) are never shifted by spread alone.

    Returns:
        ``(shifted (D,) bool, smd (D,))``.
    """
    std_a, std_b = np.asarray(std_a, float), np.asarray(std_b, float)
    smd = smd_from_moments(mean_a, std_a**2, mean_b, std_b**2)
    live = np.maximum(std_a, std_b) > eps
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(live, (std_b + eps) / (std_a + eps), 1.0)
    shifted = (np.abs(smd) > SMD_SHIFT) | (live & ((ratio > STD_RATIO) | (ratio < 1.0 / STD_RATIO)))
    return shifted, smd


def stack_alignment(
    mom_small: dict[str, np.ndarray], mom_big: dict[str, np.ndarray]
) -> dict[str, Any] | None:
    """Is the bigger observation ``k`` copies of the smaller one side by side (frame stacking)?

    Args:
        mom_small: Moments (``mean``, ``var``) of the observation with D features.
        mom_big: Moments of the observation with k * D features (k >= 2).

    Returns:
        ``{"k", "block_max_smd" (k,), "matches"}`` (matches when every block's features agree with the small
        observation within :data:`SMD_SHIFT`), or None when the sizes are not a multiple.
    """
    d, big = int(np.size(mom_small["mean"])), int(np.size(mom_big["mean"]))
    if d == 0 or big <= d or big % d:
        return None
    k = big // d
    worst = []
    for j in range(k):
        block = slice(j * d, (j + 1) * d)
        smd = smd_from_moments(
            mom_small["mean"], mom_small["var"], mom_big["mean"][block], mom_big["var"][block]
        )
        worst.append(float(np.max(np.abs(smd))))
    # The oldest frames of a stack hold tiled copies of the first observation right after each reset, so their
    # statistics drift a little from a single frame's; allow them half a threshold more.
    return {"k": k, "block_max_smd": worst, "matches": all(w <= 1.5 * SMD_SHIFT for w in worst)}


def _bound_text(value: Any) -> str:
    """A bounds summary from :func:`rlaudit.spaces.rollout.describe_space`: ``-1``, ``{-1, 0}``, ``0..255``."""
    if isinstance(value, dict):
        if "values" in value:
            return (
                "{" + ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value["values"]) + "}"
            )
        return f"{value.get('min')}..{value.get('max')}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _space_text(desc: dict[str, Any]) -> str:
    parts = [desc.get("class", "?")]
    if desc.get("shape"):
        parts.append("x".join(map(str, desc["shape"])))
    if desc.get("n") is not None:
        parts.append(f"n={desc['n']}")
    if desc.get("dtype"):
        parts.append(desc["dtype"])
    if "low" in desc:
        parts.append(f"bounds {_bound_text(desc.get('low'))} to {_bound_text(desc.get('high'))}")
    return " ".join(str(p) for p in parts)


@audit_section("spaces/definitions", SUBSYSTEM, "Both setups define the same observation and action spaces")
def definitions(wb: Workbench) -> Section:
    """Observation and action spaces side by side: class, shape, dtype, bounds, n."""
    hypothesis = "Both setups define the same observation and action spaces"
    pair = obs_pair(wb)
    if (f := pair.guard("spaces/definitions", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f, "Spaces")
    ia, ib = pair.baseline.json("spaces"), pair.candidate.json("spaces")
    rows, diffs = [], []
    for which in ("observation_space", "action_space"):
        da, db = ia[which], ib[which]
        for field in ("class", "shape", "dtype", "low", "high", "n", "nvec", "size"):
            if field not in da and field not in db:
                continue
            va, vb = da.get(field), db.get(field)
            same = va == vb
            rows.append(
                {
                    "space": which.replace("_", " "),
                    "field": field,
                    "baseline": str(va),
                    "candidate": str(vb),
                    "same": same,
                }
            )
            if not same and field != "size":
                diffs.append((which, field, va, vb))
    rows.append(
        {
            "space": "environment",
            "field": "num_envs",
            "baseline": str(ia["num_envs"]),
            "candidate": str(ib["num_envs"]),
            "same": ia["num_envs"] == ib["num_envs"],
        }
    )
    table = pd.DataFrame(rows)
    findings = []
    if diffs:
        structural = [d for d in diffs if d[1] in ("class", "shape", "n", "nvec", "dtype")]
        size_a, size_b = ia["observation_space"].get("size"), ib["observation_space"].get("size")
        ratio = (size_b / size_a) if size_a and size_b else None
        text = "; ".join(f"{w.split('_')[0]} {f}: {va} → {vb}" for w, f, va, vb in diffs)
        findings.append(
            Finding(
                id="spaces/definitions",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.HIGH if structural else Severity.MEDIUM,
                evidence=Evidence(
                    baseline={
                        "observation": _space_text(ia["observation_space"]),
                        "action": _space_text(ia["action_space"]),
                    },
                    candidate={
                        "observation": _space_text(ib["observation_space"]),
                        "action": _space_text(ib["action_space"]),
                    },
                    effect=ratio,
                    effect_label="observation size ratio (candidate / baseline)" if ratio else "",
                    summary="the spaces differ: " + text,
                    details={"differences": [list(map(str, d)) for d in diffs]},
                ),
                remediation="Make the candidate's environment produce the baseline's observation and action spaces "
                "(undo the wrapper or setting that changed them), or confirm the change is intended.",
            )
        )
    else:
        findings.append(
            Finding(
                id="spaces/definitions",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline={
                        "observation": _space_text(ia["observation_space"]),
                        "action": _space_text(ia["action_space"]),
                    },
                    candidate={
                        "observation": _space_text(ib["observation_space"]),
                        "action": _space_text(ib["action_space"]),
                    },
                    summary=f"same spaces: observation {_space_text(ia['observation_space'])}, action "
                    f"{_space_text(ia['action_space'])}",
                ),
            )
        )
    return Section(title="Observation and action spaces", findings=findings, tables={"spaces": table})


@audit_section("spaces/observations", SUBSYSTEM, "Both setups produce identically distributed observations")
def observations(wb: Workbench) -> Section:
    """Per-feature statistics of raw observations from the same seeded random-policy rollout on both sides."""
    hypothesis = (
        "Both environments produce identically distributed observations under the same random actions"
    )
    pair = obs_pair(wb)
    if (f := pair.guard("spaces/observations", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f, "Observation statistics")
    ia, ib = pair.baseline.json("spaces"), pair.candidate.json("spaces")
    ma, mb = pair.baseline.npz("moments"), pair.candidate.npz("moments")
    same_actions = ia["action_space"] == ib["action_space"]
    da, db = int(np.size(ma["mean"])), int(np.size(mb["mean"]))
    from rlaudit.spaces import plots

    findings: list[Finding] = []
    figures: dict[str, Any] = {}
    tables: dict[str, Any] = {}
    n_note = f"{int(ma['n'])} | {int(mb['n'])} observations"
    if da == db:
        shifted, smd = shifted_features(ma["mean"], np.sqrt(ma["var"]), mb["mean"], np.sqrt(mb["var"]))
        order = np.argsort(-np.abs(np.nan_to_num(smd, posinf=1e9, neginf=1e9)))
        table = pd.DataFrame(
            {
                "feature": [f"obs[{i}]" for i in order],
                "mean b": ma["mean"][order],
                "mean c": mb["mean"][order],
                "std b": np.sqrt(ma["var"][order]),
                "std c": np.sqrt(mb["var"][order]),
                "smd": smd[order],
                "shifted": shifted[order],
            }
        )
        tables["per-feature statistics (largest shift first)"] = table.head(40)
        figures["observation shift"] = plots.smd_heatmap(
            smd, title="Standardized mean difference per feature (candidate − baseline)"
        )
        n_shift = int(shifted.sum())
        if n_shift:
            names = [f"obs[{i}] ({smd[i]:+.2f})" for i in order[:n_shift][:8]]
            findings.append(
                Finding(
                    id="spaces/observation-shift",
                    subsystem=SUBSYSTEM,
                    hypothesis=hypothesis,
                    status=Status.SUSPECT,
                    severity=Severity.MEDIUM if n_shift < 0.1 * da else Severity.HIGH,
                    evidence=Evidence(
                        baseline={"features": da, "mean |mean|": float(np.abs(ma["mean"]).mean())},
                        candidate={"features": db, "mean |mean|": float(np.abs(mb["mean"]).mean())},
                        effect=float(np.max(np.abs(smd[np.isfinite(smd)])))
                        if np.isfinite(smd).any()
                        else None,
                        effect_label="largest |standardized mean difference|",
                        summary=f"{n_shift} of {da} observation features are distributed differently under the same "
                        f"random actions (|SMD| > {SMD_SHIFT} or spread ×{STD_RATIO}): "
                        + ", ".join(names)
                        + (
                            ""
                            if same_actions
                            else " (the action spaces differ, so the action sequences differ too)"
                        ),
                        details={"shifted": [int(i) for i in np.flatnonzero(shifted)]},
                    ),
                    remediation="Find what changed the shifted features (environment settings, wrappers, "
                    "preprocessing) and restore the baseline's; the shift is measured on identical action sequences.",
                    figures=["observation shift"],
                )
            )
        else:
            findings.append(
                Finding(
                    id="spaces/observations",
                    subsystem=SUBSYSTEM,
                    hypothesis=hypothesis,
                    status=Status.CLEARED,
                    evidence=Evidence(
                        baseline={"features": da},
                        candidate={"features": db},
                        effect=float(np.max(np.abs(smd))) if smd.size else 0.0,
                        effect_label="largest |standardized mean difference|",
                        summary=f"all {da} features agree under the same random actions (largest |SMD| "
                        f"{float(np.max(np.abs(smd))) if smd.size else 0.0:.3g}; {n_note})",
                    ),
                )
            )
    else:
        small, big, small_side = (ma, mb, "baseline") if da < db else (mb, ma, "candidate")
        align = stack_alignment(small, big)
        big_side = "candidate" if small_side == "baseline" else "baseline"
        if align is not None:
            tables["frame blocks vs the smaller observation"] = pd.DataFrame(
                {
                    "block": [f"{j + 1} of {align['k']}" for j in range(align["k"])],
                    "max |SMD| vs the other side": align["block_max_smd"],
                }
            )
            matrix = np.stack(
                [
                    smd_from_moments(
                        small["mean"],
                        small["var"],
                        big["mean"][j * min(da, db) : (j + 1) * min(da, db)],
                        big["var"][j * min(da, db) : (j + 1) * min(da, db)],
                    )
                    for j in range(align["k"])
                ]
            )
            figures["observation shift"] = plots.smd_heatmap(
                matrix,
                title=f"SMD of each of the {big_side}'s {align['k']} blocks vs the {small_side}'s features",
                rows=[f"block {j + 1}" for j in range(align["k"])],
            )
        if align is not None and align["matches"]:
            summary = (
                f"the {big_side}'s observation is {align['k']} copies of the {small_side}'s {min(da, db)} features "
                f"side by side ({max(da, db)} features; every block matches within |SMD| "
                f"{max(align['block_max_smd']):.2g}): frame stacking of {align['k']}"
            )
        else:
            summary = (
                f"observation sizes differ ({da} → {db} features) and the larger is not stacked copies of the "
                "smaller; features cannot be compared one to one"
            )
        findings.append(
            Finding(
                id="spaces/observation-shift",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline={"features": da},
                    candidate={"features": db},
                    effect=db / da if da else None,
                    effect_label="feature count ratio (candidate / baseline)",
                    summary=summary,
                    details={"alignment": align},
                ),
                remediation=(
                    "Disable frame stacking for a network that does not need history (or stack 2), and "
                    "compare again"
                    if align is not None and align["matches"]
                    else "Restore the baseline's observation layout, or compare the features that both share."
                ),
                figures=list(figures),
            )
        )
    return Section(
        title="Observation statistics under the same random actions",
        findings=findings,
        tables=tables,
        figures=figures,
        notes=[
            f"Seeded random-policy rollouts (env seed 0, actions from seed 1{', identical on both sides' if same_actions else ''}); "
            f"{n_note}. A feature is shifted when |SMD| > {SMD_SHIFT} or its spread differs ×{STD_RATIO}."
        ],
    )


def input_paths(res: ProbeResult) -> dict[str, Any]:
    """The ``network_input`` artifacts of one side: summary and per-feature arrays by path."""
    info = res.json("inputs")
    arrays = res.npz("inputs")
    return {"summary": info["paths"], "arrays": arrays, "n": info["n"], "features": info["features"]}


@audit_section(
    "spaces/network-input", SUBSYSTEM, "The network receives the same inputs in evaluation as in training"
)
def network_input(wb: Workbench, trust: bool = False) -> Section:
    """Within each subject: the first layer's input statistics (forward pre-hook) on observations normalized as
    training did (the checkpoint's saved statistics) vs as evaluation would (load_checkpoint's extras)."""
    from rlaudit.checkpointing import audit as ckpt_audit

    hypothesis = (
        "Within each setup, the network receives the same input distribution in evaluation as in training"
    )
    caps = ckpt_audit.capabilities(wb)
    missing = {side: [c for c in ("make_env", "load_checkpoint") if c not in caps[side]] for side in SIDES}
    for side in SIDES:
        if not (("train" in caps[side] and "config" in caps[side]) or "checkpoints" in caps[side]):
            missing[side] = [c for c in ("train", "checkpoints") if c not in caps[side]] + missing[side]
    if any(missing.values()):
        return Section.of(
            Finding.skipped(
                "spaces/network-input", SUBSYSTEM, hypothesis, {k: v for k, v in missing.items() if v}
            ),
            "What the network receives",
        )
    src = ckpt_audit.sources(wb)
    if (f := ckpt_audit._guard_sources(src, "spaces/network-input", hypothesis)) is not None:
        return Section.of(f, "What the network receives")
    results = {}
    for side in SIDES:
        recs = ckpt_audit.contents_of(wb, side, src[side]["paths"], trust)
        path = ckpt_audit.newest(recs, src[side]["paths"])
        results[side] = wb.run_side(
            side,
            probes.network_input,
            path=path,
            env_seed=0,
            rollout_steps=int(min(wb.profile.rollout_steps, 2000)),
            batch=1024,
            clip=10.0,
            trust=trust,
        )
    pair = Pair(baseline=results["baseline"], candidate=results["candidate"])
    if (f := pair.guard("spaces/network-input", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f, "What the network receives")
    data = {side: input_paths(results[side]) for side in SIDES}
    rows, verdict = [], {}
    for side in SIDES:
        d = data[side]
        for name in ("training", "evaluation", "raw"):
            s = d["summary"].get(name)
            if s:
                rows.append(
                    {
                        "side": side,
                        "path": name,
                        "layer": s["layer"],
                        "mean": s["mean"],
                        "std": s["std"],
                        "|x| max": s["abs_max"],
                        "clipped": s["clipped_fraction"],
                        "how": s["note"],
                    }
                )
        arr = d["arrays"]
        shifted, _ = shifted_features(
            arr["training|mean"], arr["training|std"], arr["evaluation|mean"], arr["evaluation|std"]
        )
        live = np.maximum(arr["training|std"], arr["evaluation|std"]) > 1e-6
        frac = float(shifted[live].mean()) if live.any() else 0.0
        verdict[side] = {
            "shifted": int(shifted.sum()),
            "live": int(live.sum()),
            "fraction": frac,
            "train": d["summary"]["training"],
            "eval": d["summary"]["evaluation"],
        }
    table = pd.DataFrame(rows)
    bad = {side: verdict[side]["fraction"] > SHIFTED_FRACTION for side in SIDES}
    findings = []
    for side in SIDES:
        if not bad[side]:
            continue
        v = verdict[side]
        other = "baseline" if side == "candidate" else "candidate"
        findings.append(
            Finding(
                id="spaces/network-input" if side == "candidate" else "spaces/network-input-baseline",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT if side == "candidate" and not bad[other] else Status.NOTED,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline={
                        "shifted features": verdict["baseline"]["shifted"],
                        "train std": verdict["baseline"]["train"]["std"],
                        "eval std": verdict["baseline"]["eval"]["std"],
                    },
                    candidate={
                        "shifted features": verdict["candidate"]["shifted"],
                        "train std": verdict["candidate"]["train"]["std"],
                        "eval std": verdict["candidate"]["eval"]["std"],
                    },
                    effect=v["fraction"],
                    effect_label="fraction of input features shifted (evaluation vs training)",
                    summary=f"the {side}'s first layer ({v['train']['layer']}) sees different inputs in evaluation than "
                    f"in training: {v['shifted']} of {v['live']} features shifted; input mean {v['train']['mean']:.3g} "
                    f"→ {v['eval']['mean']:.3g}, std {v['train']['std']:.3g} → {v['eval']['std']:.3g} "
                    f"({v['train']['note']} vs {v['eval']['note']}) — normalization applied in one path and not the "
                    "other, case 002's bug (its cause is in loading, see 04_checkpointing)",
                ),
                remediation=f"Feed the {side}'s network the same normalization at evaluation as in training: restore "
                "obs_rms from the checkpoint in load_checkpoint and apply it wherever the policy is run.",
                figures=["first-layer inputs"],
            )
        )
    if not findings:
        v = verdict["baseline"]
        findings.append(
            Finding(
                id="spaces/network-input",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline={"shifted features": verdict["baseline"]["shifted"]},
                    candidate={"shifted features": verdict["candidate"]["shifted"]},
                    effect=max(verdict["baseline"]["fraction"], verdict["candidate"]["fraction"]),
                    effect_label="fraction of input features shifted (evaluation vs training)",
                    summary=f"on both sides the first layer gets the same inputs in evaluation as in training "
                    f"({v['train']['note']}; input std {v['train']['std']:.3g} | "
                    f"{verdict['candidate']['train']['std']:.3g})",
                ),
            )
        )
    from rlaudit.spaces import plots

    return Section(
        title="What the network receives: training vs evaluation",
        findings=findings,
        tables={"first-layer input statistics": table},
        figures={"first-layer inputs": plots.input_paths_figure({s: data[s]["arrays"] for s in SIDES})},
        notes=[
            "Each side's newest checkpoint is loaded by its own load_checkpoint; the same raw observations (seeded "
            "random-policy rollout) are normalized as training did (statistics saved in the checkpoint file) and "
            "as evaluation would (the obs_rms load_checkpoint returns), clip ±10, and a forward pre-hook records "
            "what the first layer receives."
        ],
    )


def _pair_key(wb: Workbench) -> str:
    fps = wb.fingerprints
    return hashlib.sha256(f"{fps['baseline']}|{fps['candidate']}".encode()).hexdigest()[:16]


@audit_section(
    "spaces/preprocessing", SUBSYSTEM, "Preprocessing gives both networks inputs of the same size and cost"
)
def preprocessing(wb: Workbench) -> Section:
    """Frame stacking, dtype casts and scaling, with the memory and compute they cost: observation bytes per
    step, first-layer FLOPs, and the forward-pass time measured side by side (interleaved rounds)."""
    hypothesis = "Preprocessing gives both networks inputs of the same size, type and compute cost"
    obs = obs_pair(wb)
    if (f := obs.guard("spaces/preprocessing", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f, "Preprocessing and its cost")
    ia, ib = obs.baseline.json("spaces"), obs.candidate.json("spaces")
    repeats = max(3, int(wb.profile.timing_repeats))
    key = _pair_key(wb)
    rounds: dict[str, list[ProbeResult]] = {"baseline": [], "candidate": []}
    for r in range(repeats):  # interleaved: A then B in every round, so machine load hits both alike
        for side in SIDES:
            rounds[side].append(
                wb.run_side(
                    side,
                    probes.forward_timing,
                    round=r,
                    pair=key,
                    batch=int(ia["num_envs"] if side == "baseline" else ib["num_envs"]),
                )
            )
    for side in SIDES:
        bad = next((res for res in rounds[side] if not res.ok), None)
        if bad is not None:
            return Section.of(
                Pair(**{s: (bad if s == side else None) for s in SIDES}).guard(
                    "spaces/preprocessing", SUBSYSTEM, hypothesis
                ),
                "Preprocessing and its cost",
            )
    ra, rb = rounds["baseline"][0].result, rounds["candidate"][0].result
    # the 10th percentile of each round's calls: robust to the calls a busy machine preempts
    ta = np.array([res.result["p10_s"] for res in rounds["baseline"]])
    tb = np.array([res.result["p10_s"] for res in rounds["candidate"]])
    iv = stats.bootstrap_ratio_ci(tb, ta, np.median, n_boot=2000, seed=0)
    ratio, low, high = float(iv[0]), float(iv[1]), float(iv[2])
    bytes_a, bytes_b = ia["obs_bytes_per_vector_step"], ib["obs_bytes_per_vector_step"]
    flops_a, flops_b = ra["first_layer_flops"], rb["first_layer_flops"]
    table = pd.DataFrame(
        [
            {
                "quantity": "observation (as the env returns it)",
                "baseline": f"{'x'.join(map(str, ia['obs_shape']))} {ia['obs_dtype']}",
                "candidate": f"{'x'.join(map(str, ib['obs_shape']))} {ib['obs_dtype']}",
                "ratio": None,
            },
            {
                "quantity": "bytes per observation",
                "baseline": ia["obs_bytes"],
                "candidate": ib["obs_bytes"],
                "ratio": ib["obs_bytes"] / ia["obs_bytes"] if ia["obs_bytes"] else None,
            },
            {
                "quantity": "bytes per vector step (all envs)",
                "baseline": bytes_a,
                "candidate": bytes_b,
                "ratio": bytes_b / bytes_a if bytes_a else None,
            },
            {
                "quantity": "network input dtype",
                "baseline": ra["param_dtype"],
                "candidate": rb["param_dtype"],
                "ratio": None,
            },
            {
                "quantity": "first-layer FLOPs per observation",
                "baseline": flops_a,
                "candidate": flops_b,
                "ratio": flops_b / flops_a if flops_a else None,
            },
            {
                "quantity": "parameters",
                "baseline": ra["n_params"],
                "candidate": rb["n_params"],
                "ratio": rb["n_params"] / ra["n_params"] if ra["n_params"] else None,
            },
            {
                "quantity": f"forward pass (batch {ra['batch']} | {rb['batch']}), µs (p10 of calls, median of rounds)",
                "baseline": float(np.median(ta)) * 1e6,
                "candidate": float(np.median(tb)) * 1e6,
                "ratio": ratio,
            },
        ]
    )
    changes = []
    size_ratio = bytes_b / bytes_a if bytes_a else 1.0
    flops_ratio = flops_b / flops_a if flops_a else 1.0
    if not (1 / COST_RATIO <= size_ratio <= COST_RATIO):
        changes.append(f"×{size_ratio:.3g} observation bytes per step ({bytes_a:,} → {bytes_b:,})")
    flops_text = ""
    if not (1 / COST_RATIO <= flops_ratio <= COST_RATIO):
        flops_text = f"×{flops_ratio:.3g} first-layer FLOPs ({flops_a:,} → {flops_b:,} per observation)"
    if ia["obs_dtype"] != ib["obs_dtype"]:
        changes.append(
            f"observation dtype {ia['obs_dtype']} → {ib['obs_dtype']} (cast to {rb['param_dtype']} for the network)"
        )
    hi_a, hi_b = ia["observation_space"].get("high"), ib["observation_space"].get("high")
    if hi_a != hi_b and not isinstance(hi_a, dict):
        changes.append(f"observation scale: upper bound {hi_a} → {hi_b}")
    if changes and flops_text:
        changes.append(flops_text)  # the input changed: the first layer's cost follows it
    timed = f"forward pass ×{ratio:.3g} [{low:.3g}, {high:.3g}] (95% CI over {repeats} interleaved rounds)"
    timing_practical = (low > 1.0 or high < 1.0) and (ratio > COST_RATIO or ratio < 1 / COST_RATIO)
    d_a, d_b = ia["obs_shape"], ib["obs_shape"]
    stack = None
    if obs.ok and len(d_a) == len(d_b) == 1 and d_a != d_b:
        stack = stack_alignment(
            *(
                (obs.baseline.npz("moments"), obs.candidate.npz("moments"))
                if d_a[0] < d_b[0]
                else (obs.candidate.npz("moments"), obs.baseline.npz("moments"))
            )
        )
    cause = ""
    if stack is not None and stack["matches"]:
        cause = f"frame stacking of {stack['k']} ({'candidate' if d_b[0] > d_a[0] else 'baseline'}): "
    findings = []
    if changes:
        findings.append(
            Finding(
                id="spaces/preprocessing",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.MEDIUM,
                evidence=Evidence(
                    baseline={
                        "bytes/step": bytes_a,
                        "first-layer FLOPs": flops_a,
                        "forward µs": float(np.median(ta)) * 1e6,
                    },
                    candidate={
                        "bytes/step": bytes_b,
                        "first-layer FLOPs": flops_b,
                        "forward µs": float(np.median(tb)) * 1e6,
                    },
                    effect=ratio,
                    effect_label="forward-time ratio (candidate / baseline)",
                    ci=(low, high),
                    ci_level=0.95,
                    summary=cause
                    + "; ".join(changes)
                    + f"; {timed}"
                    + (
                        ""
                        if timing_practical
                        else " (the forward time of this small network barely moves: the cost "
                        "is in memory and the first layer)"
                    ),
                ),
                remediation=(
                    "Turn frame stacking off for an MLP that does not use history (case 002), or stack 2; "
                    if cause
                    else "Restore the baseline's preprocessing; "
                )
                + "the input size drives rollout memory and first-layer compute.",
                figures=["input cost"],
            )
        )
    elif flops_text:
        findings.append(
            Finding(
                id="spaces/preprocessing",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    baseline={"bytes/step": bytes_a, "first-layer FLOPs": flops_a},
                    candidate={"bytes/step": bytes_b, "first-layer FLOPs": flops_b},
                    effect=flops_ratio,
                    effect_label="first-layer FLOPs ratio (candidate / baseline)",
                    summary=f"same input ({bytes_a:,} bytes per vector step) but {flops_text}: the first layer's "
                    f"width changed, not the preprocessing (a knock-on of the architecture, see 01_agents); {timed}",
                ),
                remediation="Nothing to change in preprocessing; see the architecture findings in 01_agents.",
            )
        )
    elif timing_practical and ra["n_params"] != rb["n_params"]:
        findings.append(
            Finding(
                id="spaces/preprocessing",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    baseline=float(np.median(ta)),
                    candidate=float(np.median(tb)),
                    effect=ratio,
                    effect_label="forward-time ratio (candidate / baseline)",
                    ci=(low, high),
                    ci_level=0.95,
                    summary=f"same input size and first-layer cost, but {timed} with "
                    f"{ra['n_params']:,} → {rb['n_params']:,} parameters: the network changed, not the "
                    "preprocessing (see 01_agents)",
                ),
                remediation="Nothing to change in preprocessing; see the architecture findings in 01_agents.",
            )
        )
    else:
        identical = ra["n_params"] == rb["n_params"]
        findings.append(
            Finding(
                id="spaces/preprocessing",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline={"bytes/step": bytes_a, "first-layer FLOPs": flops_a},
                    candidate={"bytes/step": bytes_b, "first-layer FLOPs": flops_b},
                    effect=ratio,
                    effect_label="forward-time ratio (candidate / baseline)",
                    ci=(low, high),
                    ci_level=0.95,
                    summary=f"same input: {'x'.join(map(str, d_a))} {ia['obs_dtype']} ({ia['obs_bytes']:,} bytes per "
                    f"observation, {bytes_a:,} per vector step), first layer {flops_a:,} FLOPs per observation; {timed}"
                    + (
                        " (networks of identical size: any spread is measurement noise on a shared machine)"
                        if identical and timing_practical
                        else ""
                    ),
                ),
            )
        )
    from rlaudit.spaces import plots

    return Section(
        title="Preprocessing and what it costs",
        findings=findings,
        tables={"input cost": table},
        figures={"input cost": plots.cost_figure(table, ta, tb)},
        notes=[
            f"Forward passes of a fresh network on a batch of real observations (the subject's num_envs), "
            f"{repeats} rounds interleaved baseline/candidate, each the 10th percentile of 100 calls; measured on a shared "
            "machine, so only the ratio and its interval are read, never an absolute time. A timing difference "
            "counts only beyond ×1.15 with an interval that excludes 1."
        ],
    )


def audit_all(wb: Workbench, trust: bool = False) -> list[Section]:
    """Every spaces check, in notebook order."""
    return [definitions(wb), observations(wb), network_input(wb, trust=trust), preprocessing(wb)]


__all__ = [
    "audit_all",
    "definitions",
    "network_input",
    "observations",
    "preprocessing",
    "shifted_features",
    "smd_from_moments",
    "stack_alignment",
]
