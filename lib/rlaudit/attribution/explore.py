"""The arm picker of 15_summary: any attribution arm's learning curves over the baseline's and the
candidate's, and a threshold slider that relabels every arm as a cause, a minor contributor or no effect."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlaudit.attribution.arms import minor_floor
from rlaudit.explore import Explorer, curves_explorer, nothing_to_explore, slider

if TYPE_CHECKING:
    from rlaudit.attribution.arms import Attribution

KINDS = {"config": "config restore", "fix": "built-in fault", "change": "hunk", "variant": "variant"}
"""Suspect sources as the picker names an arm's kind."""


def arm_kind(result: Attribution, arm: Any) -> str:
    """What an arm restores, in words: config restore, built-in fault, hunk, variant (or several, joined)."""
    sources = {s.name: s.source for s in result.suspects}
    kinds = dict.fromkeys(
        KINDS.get(sources.get(name, ""), sources.get(name, "") or "variant") for name in arm.suspects
    )
    return " + ".join(kinds) or "variant"


def label_at(effect: Any, threshold: float) -> str:
    """An arm's verdict at a threshold (the share of the gap that counts as meaningful), as the ranking decides
    it at ``delta``: a cause when its interval excludes zero and its share reaches the threshold; a minor
    contributor when it surely restores a quarter of it but surely less than it; no effect when surely less;
    undecided whatever its interval when its runs were timed at too different loads (``incomparable``)."""
    if effect is None or not np.isfinite(effect.point):
        return "not measured"
    if getattr(effect, "incomparable", ""):
        return "undecided"
    if effect.low > 0 and effect.point >= threshold:
        return "cause"
    if effect.low > minor_floor(threshold) and effect.high < threshold:
        return "minor"
    if effect.high < threshold:
        return "no effect"
    return "undecided"


def arm_curves(result: Attribution) -> pd.DataFrame:
    """Every arm's runs on the primary metric: ``name, arm, seed, step, seconds, value``."""
    from rlaudit.trainer.learning import wall_clock
    from rlaudit.trainer.runs import RunData

    metric = result.primary
    frames = []
    for arm in result.arms:
        if arm.injects:
            continue  # a reverse check runs the baseline with a change put in: not a restore of the candidate
        for seed, res in enumerate(arm.results):
            if res is None or not res.ok:
                continue
            run = RunData.from_result(res, arm.name)
            series = run.metric(metric)
            if series.empty:
                continue
            ws, wt = wall_clock(run)
            seconds = np.interp(series["step"].to_numpy(dtype=float), ws, wt)
            frames.append(series.assign(name=metric.name, arm=arm.name, seed=seed, seconds=seconds))
    columns = ["name", "arm", "seed", "step", "seconds", "value"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def arm_explorer(result: Attribution | None, delta: float = 0.2) -> Any:
    """The arm picker (JupyterLab: live; the report: the static learning-curves figure at the first arm)."""

    if result is None:
        text = "No attribution ran, so there are no arms to explore."
        return nothing_to_explore(text)
    table = arm_curves(result)
    metric = result.primary.name
    arms = [a for a in result.arms if not a.injects and a.name not in ("baseline", "candidate")]
    options = [(f"{a.name} ({arm_kind(result, a)})", a.name) for a in arms if (table["arm"] == a.name).any()]
    if table.empty or not options:
        text = f"No arm's runs reported {metric}: nothing to overlay."
        return nothing_to_explore(text)
    effects = {a.name: result.effects.get(a.name, {}).get(metric) for a in arms}

    def annotate(artists: dict[str, Any], values: dict[str, Any]) -> None:
        threshold = values["threshold"]
        labels = {name: label_at(e, threshold) for name, e in effects.items()}
        counts = {
            k: sum(v == k for v in labels.values()) for k in ("cause", "minor", "no effect", "undecided")
        }
        lines = [f"at {threshold:.0%} of the gap: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n)]
        picked = values.get("overlay", "")
        effect = effects.get(picked)
        if picked and effect is not None:
            lines.append(
                f"{picked}: {labels[picked]} (restores {effect.point:.0%} [{effect.low:.0%}, {effect.high:.0%}])"
            )
        if "note" not in artists:
            artists["note"] = artists["ax"].text(
                0.01,
                0.01,
                "",
                transform=artists["ax"].transAxes,
                fontsize="small",
                va="bottom",
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"},
            )
        artists["note"].set_text("\n".join(lines))

    ex = curves_explorer(
        table.rename(columns={"arm": "group"}),
        title=f"Arm picker: {metric}, baseline and candidate with any attribution arm",
        group="group",
        overlay="arm",
        overlay_options=options,
        extra=[slider("threshold", 0.05, 0.95, delta, step=0.05, label="cause threshold")],
        annotate=annotate,
    )
    ex.control("overlay").value = options[0][1]  # the batch figure shows the first arm
    return ex


__all__ = ["Explorer", "arm_curves", "arm_explorer", "arm_kind", "label_at"]
