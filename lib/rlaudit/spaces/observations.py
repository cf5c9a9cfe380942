"""Observations under the same random actions (spaces/observations): per-feature statistics of both sides'
observations, and when their sizes differ, whether the larger is stacked copies of the smaller.

Observations come from seeded random-policy rollouts in which both subjects play the same action sequence (when
their action spaces are equal, :func:`obs_pair`), so an identical environment gives identical statistics and
any shift is real. A feature is shifted when its standardized mean difference or its spread ratio is beyond a
practical threshold (:func:`shifted_features`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check, run_probe
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.spaces import probes

SMD_SHIFT = 0.2
"""|Standardized mean difference| above which a feature counts as shifted (0.1 is the usual balance check;
0.2 leaves room for rollout noise in environments that are not bit-identical)."""
STD_RATIO = 1.5
"""A feature whose spread differs by more than this factor (either way) also counts as shifted."""


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
            "mean (baseline)": ma["mean"][order],
            "mean (candidate)": mb["mean"][order],
            "std (baseline)": np.sqrt(ma["var"][order]),
            "std (candidate)": np.sqrt(mb["var"][order]),
            "standardized mean difference (candidate − baseline)": smd[order],
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
