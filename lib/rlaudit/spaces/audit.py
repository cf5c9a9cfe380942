"""Spaces audit (notebook 10): the observation and action spaces, the observations themselves, what the network
actually receives on the training and evaluation paths, and what preprocessing costs.

Case 002 is the model: behaviour cloning trained on normalized observations while RL fed raw ones, and frame
stacking quadrupled the input of an MLP that did not need it. Observations come from seeded random-policy
rollouts in which both subjects play the same action sequence (when their action spaces are equal), so an
identical environment gives identical statistics and any shift is real.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import timing
from rlaudit.checks import SIDES, Check, Missing, check, run_probe
from rlaudit.evidence import fmt, pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.spaces import probes
from rlaudit.workbench import Pair, Workbench

SMD_SHIFT = 0.2
"""|Standardized mean difference| above which a feature counts as shifted (0.1 is the usual balance check;
0.2 leaves room for rollout noise in environments that are not bit-identical)."""
STD_RATIO = 1.5
"""A feature whose spread differs by more than this factor (either way) also counts as shifted."""
SHIFTED_FRACTION = 0.10
"""A side whose first layer sees more than this fraction of features shifted between training and evaluation
is SUSPECT."""
COST_RATIO = timing.PRACTICAL_RATIO
"""Input bytes, first-layer FLOPs or forward time differing by more than 15% is a practical difference."""


def obs_pair(wb: Workbench) -> Pair:
    """The :func:`rlaudit.spaces.probes.observations` probe on both sides (cached)."""
    return run_probe(
        wb,
        probes.observations,
        "spaces: observations",
        env_seed=0,
        rollout_steps=int(wb.profile.rollout_steps),
        keep_rows=1024,
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


def _sides_text(info: dict[str, Any]) -> dict[str, str]:
    return {
        "observation": _space_text(info["observation_space"]),
        "action": _space_text(info["action_space"]),
    }


@check("spaces/definitions", title="Observation and action spaces", needs=obs_pair, reads=("env",))
def definitions(c: Check, pair: Pair) -> Section:
    """Both setups define the same observation and action spaces.

    Observation and action spaces side by side: class, shape, dtype, bounds, n.
    """
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
    sides = {"baseline": _sides_text(ia), "candidate": _sides_text(ib)}
    if diffs:
        structural = [d for d in diffs if d[1] in ("class", "shape", "n", "nvec", "dtype")]
        size_a, size_b = ia["observation_space"].get("size"), ib["observation_space"].get("size")
        ratio = (size_b / size_a) if size_a and size_b else None
        finding = c.finding(
            Status.SUSPECT,
            Severity.HIGH if structural else Severity.MEDIUM,
            **sides,
            effect=ratio,
            effect_label="observation size ratio (candidate / baseline)" if ratio else "",
            summary="the spaces differ: "
            + "; ".join(f"{w.split('_')[0]} {f}: {va} → {vb}" for w, f, va, vb in diffs),
            details={"differences": [list(map(str, d)) for d in diffs]},
            remediation="Make the candidate's environment produce the baseline's observation and action spaces "
            "(undo the wrapper or setting that changed them), or confirm the change is intended.",
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            **sides,
            summary=f"same spaces: observation {sides['baseline']['observation']}, action "
            f"{sides['baseline']['action']}",
        )
    return c.section(finding, tables={"spaces": pd.DataFrame(rows)})


def bounds_violations(moments: Any) -> pd.DataFrame:
    """Features whose observed values left the declared bounds, most out of range first.

    Args:
        moments: One side's ``moments.npz`` (``min``, ``max``, ``n``, and ``low``, ``high``, ``outside``).

    Returns:
        ``feature`` (index), ``declared low``, ``declared high``, ``seen min``, ``seen max``, ``outside``
        (fraction of observations out of bounds), ``excess`` (how far beyond the bounds, in units of the
        declared width when it is finite, else absolute). Empty when every value stayed inside.
    """
    columns = ["feature", "declared low", "declared high", "seen min", "seen max", "outside", "excess"]
    outside = np.asarray(moments["outside"])
    idx = np.flatnonzero(outside > 0)
    if not idx.size:
        return pd.DataFrame(columns=columns)
    low, high = np.asarray(moments["low"])[idx], np.asarray(moments["high"])[idx]
    seen_min, seen_max = np.asarray(moments["min"])[idx], np.asarray(moments["max"])[idx]
    beyond = np.maximum(np.maximum(low - seen_min, 0.0), np.maximum(seen_max - high, 0.0))
    width = high - low
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.where(np.isfinite(width) & (width > 0), beyond / width, beyond)
    table = pd.DataFrame(
        {
            "feature": idx,
            "declared low": low,
            "declared high": high,
            "seen min": seen_min,
            "seen max": seen_max,
            "outside": outside[idx] / max(int(moments["n"]), 1),
            "excess": excess,
        },
        columns=columns,
    )
    return table.sort_values("excess", ascending=False, ignore_index=True)


def _violation_text(table: pd.DataFrame, limit: int = 4) -> str:
    """``obs[3] seen 0..100 (declared 0..1, 12% of observations outside)``, for the worst features."""
    parts = [
        f"obs[{int(r['feature'])}] seen {fmt(r['seen min'])}..{fmt(r['seen max'])} (declared "
        f"{fmt(r['declared low'])}..{fmt(r['declared high'])}, {pct(r['outside'])} of observations outside)"
        for r in table.head(limit).to_dict("records")
    ]
    more = len(table) - limit
    return ", ".join(parts) + (f" and {more} more feature{'s' if more != 1 else ''}" if more > 0 else "")


@check(
    "spaces/observation-bounds",
    title="Observations inside their declared space",
    needs=obs_pair,
    reads=("env",),
)
def observation_bounds(c: Check, pair: Pair) -> Section:
    """Every observation stays inside its declared observation space, on both sides.

    Per feature, the range of values seen in the seeded random-policy rollout against the declared Box
    bounds: a network (or a normalizer, a clip) sized for the declared range misreads values outside it.
    """
    moments = {s: pair[s].npz("moments") for s in SIDES}
    lacking = [s for s in SIDES if "outside" not in moments[s]]
    if len(lacking) == len(SIDES):
        c.missing(
            "declared observation bounds (a Box observation space)",
            "Nothing to add for Dict, Tuple or Discrete observations; a Box space's low/high are what this check "
            "compares observations with.",
            lacking,
        )
    seen = {
        s: bounds_violations(moments[s]) if s not in lacking else pd.DataFrame(columns=["feature", "excess"])
        for s in SIDES
    }
    found = {s: set(seen[s]["feature"].astype(int)) for s in SIDES}
    worst = max((float(seen[s]["excess"].max()) for s in SIDES if len(seen[s])), default=0.0)
    sides = {
        s: (_violation_text(seen[s]) if len(seen[s]) else "inside its bounds")
        if s not in lacking
        else "no bounds"
        for s in SIDES
    }
    n_obs = {s: int(moments[s]["n"]) for s in SIDES}
    tables = {f"out of bounds ({s})": seen[s] for s in SIDES if len(seen[s])}
    if not found["baseline"] and not found["candidate"]:
        finding = c.finding(
            Status.CLEARED,
            baseline=sides["baseline"],
            candidate=sides["candidate"],
            effect=0.0,
            effect_label="features seen outside their declared bounds",
            summary=f"every observation stayed inside its declared bounds ({n_obs['baseline']} | "
            f"{n_obs['candidate']} observations under the same random actions)",
        )
        return c.section(finding, tables=tables)
    # Severity rests on the evidence alone (how far outside), whichever side it is on.
    severity = Severity.HIGH if worst > 1.0 else Severity.MEDIUM
    excess = {s: dict(zip(seen[s]["feature"].astype(int), seen[s]["excess"], strict=True)) for s in SIDES}
    worse = {
        s: {f for f, e in excess[s].items() if e > 2 * excess[o].get(f, 0.0) + 0.5 or f not in excess[o]}
        for s, o in (("baseline", "candidate"), ("candidate", "baseline"))
    }
    differ = bool(worse["baseline"] or worse["candidate"])
    flagged_side = "candidate" if worse["candidate"] else "baseline"
    if differ:
        status = Status.SUSPECT if flagged_side == "candidate" else Status.NOTED
        other = "baseline" if flagged_side == "candidate" else "candidate"
        summary = (
            f"the {flagged_side}'s observations leave the declared space: {sides[flagged_side]}; the {other}'s "
            + (f"leave it elsewhere: {sides[other]}" if found[other] else "stay inside")
        )
        remediation = (
            f"Find what changed the scale of these features in the {flagged_side}'s environment (a reward or "
            "count fed into the observation, a missing normalization or clip) and restore the baseline's, or "
            "declare the bounds the values really take."
        )
    else:
        status = Status.NOTED
        summary = f"both setups' observations leave the declared space alike: {sides['candidate']}"
        remediation = "Not a difference between the setups; declare the bounds the values really take."
    finding = c.finding(
        status,
        severity,
        baseline=sides["baseline"],
        candidate=sides["candidate"],
        effect=float(len(worse[flagged_side]) if differ else len(found["candidate"])),
        effect_label=f"features further out of bounds in the {flagged_side}"
        if differ
        else "features out of bounds",
        summary=summary,
        details={s: seen[s].to_dict("records") for s in SIDES},
        remediation=remediation,
    )
    return c.section(
        finding,
        tables=tables,
        notes=[
            "Values seen in the seeded random-policy rollout (the same actions on both sides) against the Box "
            "bounds each environment declares; excess is the distance beyond the bounds in units of the declared "
            "width."
        ],
    )


@check(
    "spaces/observations",
    title="Observation statistics under the same random actions",
    needs=obs_pair,
    reads=("curriculum", "env"),
)
def observations(c: Check, pair: Pair) -> Section:
    """Both environments produce identically distributed observations under the same random actions.

    Per-feature statistics of raw observations from the same seeded random-policy rollout on both sides.
    """
    from rlaudit.spaces import plots

    ia, ib = pair.baseline.json("spaces"), pair.candidate.json("spaces")
    ma, mb = pair.baseline.npz("moments"), pair.candidate.npz("moments")
    same_actions = ia["action_space"] == ib["action_space"]
    da, db = int(np.size(ma["mean"])), int(np.size(mb["mean"]))
    n_note = f"{int(ma['n'])} | {int(mb['n'])} observations"
    notes = [
        f"Seeded random-policy rollouts (env seed 0, actions from seed 1"
        f"{', identical on both sides' if same_actions else ''}); {n_note}. A feature is shifted when |SMD| > "
        f"{SMD_SHIFT} or its spread differs ×{STD_RATIO}."
    ]
    if da != db:
        return _stacked_observations(c, ma, mb, notes)
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
    figure = plots.smd_heatmap(smd, title="Standardized mean difference per feature (candidate − baseline)")
    n_shift = int(shifted.sum())
    largest = float(np.max(np.abs(smd))) if smd.size else 0.0
    if n_shift:
        names = [f"obs[{i}] ({smd[i]:+.2f})" for i in order[:n_shift][:8]]
        finite = smd[np.isfinite(smd)]
        finding = c.finding(
            Status.SUSPECT,
            Severity.MEDIUM if n_shift < 0.1 * da else Severity.HIGH,
            id="spaces/observation-shift",
            baseline={"features": da, "mean |mean|": float(np.abs(ma["mean"]).mean())},
            candidate={"features": db, "mean |mean|": float(np.abs(mb["mean"]).mean())},
            effect=float(np.max(np.abs(finite))) if finite.size else None,
            effect_label="largest |standardized mean difference|",
            summary=f"{n_shift} of {da} observation features are distributed differently under the same "
            f"random actions (|SMD| > {SMD_SHIFT} or spread ×{STD_RATIO}): "
            + ", ".join(names)
            + ("" if same_actions else " (the action spaces differ, so the action sequences differ too)"),
            details={"shifted": [int(i) for i in np.flatnonzero(shifted)]},
            remediation="Find what changed the shifted features (environment settings, wrappers, "
            "preprocessing) and restore the baseline's; the shift is measured on identical action sequences.",
            figures=["observation shift"],
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            baseline={"features": da},
            candidate={"features": db},
            effect=largest,
            effect_label="largest |standardized mean difference|",
            summary=f"all {da} features agree under the same random actions (largest |SMD| {largest:.3g}; "
            f"{n_note})",
        )
    return c.section(
        finding,
        tables={"per-feature statistics (largest shift first)": table.head(40)},
        figures={"observation shift": figure},
        notes=notes,
    )


def _stacked_observations(
    c: Check, ma: dict[str, np.ndarray], mb: dict[str, np.ndarray], notes: list[str]
) -> Section:
    """Observations of different sizes: is the larger one copies of the smaller side by side (frame stacking)?"""
    from rlaudit.spaces import plots

    da, db = int(np.size(ma["mean"])), int(np.size(mb["mean"]))
    small, big, small_side = (ma, mb, "baseline") if da < db else (mb, ma, "candidate")
    big_side = "candidate" if small_side == "baseline" else "baseline"
    d = min(da, db)
    align = stack_alignment(small, big)
    tables: dict[str, Any] = {}
    figures: dict[str, Any] = {}
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
                    big["mean"][j * d : (j + 1) * d],
                    big["var"][j * d : (j + 1) * d],
                )
                for j in range(align["k"])
            ]
        )
        figures["observation shift"] = plots.smd_heatmap(
            matrix,
            title=f"SMD of each of the {big_side}'s {align['k']} blocks vs the {small_side}'s features",
            rows=[f"block {j + 1}" for j in range(align["k"])],
        )
    stacked = align is not None and align["matches"]
    if stacked:
        summary = (
            f"the {big_side}'s observation is {align['k']} copies of the {small_side}'s {d} features side by side "
            f"({max(da, db)} features; every block matches within |SMD| {max(align['block_max_smd']):.2g}): "
            f"frame stacking of {align['k']}"
        )
    else:
        summary = (
            f"observation sizes differ ({da} → {db} features) and the larger is not stacked copies of the "
            "smaller; features cannot be compared one to one"
        )
    finding = c.finding(
        Status.SUSPECT,
        Severity.HIGH,
        id="spaces/observation-shift",
        baseline={"features": da},
        candidate={"features": db},
        effect=db / da if da else None,
        effect_label="feature count ratio (candidate / baseline)",
        summary=summary,
        details={"alignment": align},
        remediation="Disable frame stacking for a network that does not need history (or stack 2), and compare "
        "again"
        if stacked
        else "Restore the baseline's observation layout, or compare the features that both share.",
        figures=list(figures),
    )
    return c.section(finding, tables=tables, figures=figures, notes=notes)


def input_paths(res: Any) -> dict[str, Any]:
    """The ``network_input`` artifacts of one side: summary and per-feature arrays by path."""
    info = res.json("inputs")
    arrays = res.npz("inputs")
    return {"summary": info["paths"], "arrays": arrays, "n": info["n"], "features": info["features"]}


@dataclass
class Stopped:
    """Evidence that stops a check before its body: a SKIPPED or ERROR finding made elsewhere, re-filed under
    the check's own id, subsystem and hypothesis by the check's guard."""

    finding: Finding

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding:
        self.finding.id, self.finding.subsystem, self.finding.hypothesis = id, subsystem, hypothesis
        return self.finding


def network_input_pair(wb: Workbench, trust: bool = False) -> Pair | Stopped:
    """The :func:`rlaudit.spaces.probes.network_input` probe on each side's newest checkpoint.

    Checkpoints come from the checkpointing room's sources (a short training run, or the subject's own
    ``checkpoints``).

    Raises:
        Missing: A side lacks ``make_env``/``load_checkpoint``, or both ``train`` and ``checkpoints``.
    """
    from rlaudit.checkpointing import audit as ckpt_audit

    caps = ckpt_audit.capabilities(wb)
    needed = {
        side: [f"`{cap}`" for cap in ("make_env", "load_checkpoint") if cap not in caps[side]]
        + (
            []
            if ("train" in caps[side] and "config" in caps[side]) or "checkpoints" in caps[side]
            else ["`train` or `checkpoints`"]
        )
        for side in SIDES
    }
    lacking = [side for side in SIDES if needed[side]]
    if lacking:
        names = list(dict.fromkeys(n for side in lacking for n in needed[side]))
        raise Missing(
            ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0],
            "Implement load_checkpoint(config, path) -> (policy, extras) and make_env(config, seed), and either "
            "train(...) writing checkpoints under recorder.run_dir or checkpoints(config) listing them, so a "
            "trained network can be loaded and fed (see `rlaudit new-subject`).",
            lacking,
        )
    src = ckpt_audit.sources(wb)
    stop = ckpt_audit._guard_sources(src, "spaces/network-input", "")
    if stop is not None:
        return Stopped(stop)
    results = {}
    for side in SIDES:
        recs = ckpt_audit.contents_of(wb, side, src[side]["paths"], trust)
        results[side] = wb.run_side(
            side,
            probes.network_input,
            path=ckpt_audit.newest(recs, src[side]["paths"]),
            env_seed=0,
            rollout_steps=int(min(wb.profile.rollout_steps, 2000)),
            batch=1024,
            clip=10.0,
            trust=trust,
        )
    return Pair(baseline=results["baseline"], candidate=results["candidate"])


def _input_verdict(data: dict[str, Any]) -> dict[str, Any]:
    """One side's evaluation-vs-training shift of the first layer's inputs."""
    arr = data["arrays"]
    shifted, _ = shifted_features(
        arr["training|mean"], arr["training|std"], arr["evaluation|mean"], arr["evaluation|std"]
    )
    live = np.maximum(arr["training|std"], arr["evaluation|std"]) > 1e-6
    return {
        "shifted": int(shifted.sum()),
        "live": int(live.sum()),
        "fraction": float(shifted[live].mean()) if live.any() else 0.0,
        "train": data["summary"]["training"],
        "eval": data["summary"]["evaluation"],
    }


@check(
    "spaces/network-input",
    title="What the network receives: training vs evaluation",
    needs=network_input_pair,
    reads=("checkpointing",),
)
def network_input(c: Check, pair: Pair) -> Section:
    """Within each setup, the network receives the same input distribution in evaluation as in training.

    Within each subject: the first layer's input statistics (forward pre-hook) on observations normalized as
    training did (the checkpoint's saved statistics) vs as evaluation would (load_checkpoint's extras).
    """
    from rlaudit.spaces import plots

    data = {side: input_paths(pair[side]) for side in SIDES}
    rows = [
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
        for side in SIDES
        for name in ("training", "evaluation", "raw")
        if (s := data[side]["summary"].get(name))
    ]
    verdict = {side: _input_verdict(data[side]) for side in SIDES}
    evidence = {
        side: {
            "shifted features": verdict[side]["shifted"],
            "train std": verdict[side]["train"]["std"],
            "eval std": verdict[side]["eval"]["std"],
        }
        for side in SIDES
    }
    bad = {side: verdict[side]["fraction"] > SHIFTED_FRACTION for side in SIDES}
    findings = []
    for side in (s for s in SIDES if bad[s]):
        v = verdict[side]
        other = "baseline" if side == "candidate" else "candidate"
        findings.append(
            c.finding(
                Status.SUSPECT if side == "candidate" and not bad[other] else Status.NOTED,
                Severity.HIGH,
                id="spaces/network-input" if side == "candidate" else "spaces/network-input-baseline",
                **evidence,
                effect=v["fraction"],
                effect_label="fraction of input features shifted (evaluation vs training)",
                summary=f"the {side}'s first layer ({v['train']['layer']}) sees different inputs in evaluation than "
                f"in training: {v['shifted']} of {v['live']} features shifted; input mean {v['train']['mean']:.3g} "
                f"→ {v['eval']['mean']:.3g}, std {v['train']['std']:.3g} → {v['eval']['std']:.3g} "
                f"({v['train']['note']} vs {v['eval']['note']}) — normalization applied in one path and not the "
                "other, case 002's bug (its cause is in loading, see 04_checkpointing)",
                remediation=f"Feed the {side}'s network the same normalization at evaluation as in training: restore "
                "obs_rms from the checkpoint in load_checkpoint and apply it wherever the policy is run.",
                figures=["first-layer inputs"],
            )
        )
    if not findings:
        v = verdict["baseline"]
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline={"shifted features": verdict["baseline"]["shifted"]},
                candidate={"shifted features": verdict["candidate"]["shifted"]},
                effect=max(verdict["baseline"]["fraction"], verdict["candidate"]["fraction"]),
                effect_label="fraction of input features shifted (evaluation vs training)",
                summary=f"on both sides the first layer gets the same inputs in evaluation as in training "
                f"({v['train']['note']}; input std {v['train']['std']:.3g} | "
                f"{verdict['candidate']['train']['std']:.3g})",
            )
        )
    return c.section(
        findings,
        tables={"first-layer input statistics": pd.DataFrame(rows)},
        figures={"first-layer inputs": plots.input_paths_figure({s: data[s]["arrays"] for s in SIDES})},
        notes=[
            "Each side's newest checkpoint is loaded by its own load_checkpoint; the same raw observations (seeded "
            "random-policy rollout) are normalized as training did (statistics saved in the checkpoint file) and "
            "as evaluation would (the obs_rms load_checkpoint returns), clip ±10, and a forward pre-hook records "
            "what the first layer receives."
        ],
    )


def audit_all(wb: Workbench, trust: bool = False) -> list[Section]:
    """Every spaces check, in notebook order (the cost of preprocessing is :mod:`rlaudit.spaces.cost`)."""
    from rlaudit.spaces.cost import preprocessing

    return [
        definitions(wb),
        observation_bounds(wb),
        observations(wb),
        network_input(wb, trust=trust),
        preprocessing(wb),
    ]
