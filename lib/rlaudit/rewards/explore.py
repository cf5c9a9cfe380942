"""The reward-component picker of 11_rewards: what one component paid, episode by episode, under a fixed policy,
baseline and candidate side by side, next to its measured reward per event (the rollouts and the fit the
``rewards/components`` check reads), so a component that vanished or changed scale shows as the candidate's
points leaving the baseline's."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlaudit.display import format_number
from rlaudit.env.plots import SIDE_COLORS
from rlaudit.explore import Explorer, choice, nothing_to_explore, toggle
from rlaudit.rewards.components import PER_STEP, compare_components, component_weights

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

SIDES = ("baseline", "candidate")
PAID, EVENTS = "reward per episode (fitted)", "events per episode"


def episode_values(episodes: pd.DataFrame, weights: pd.DataFrame, component: str) -> dict[str, np.ndarray]:
    """One component, episode by episode: ``events`` (its count, or the length for the per-step term) and
    ``paid`` (events x the side's measured reward per event; NaN when the weight could not be measured)."""
    if component == PER_STEP:
        events = episodes["length"].to_numpy(dtype=float)
    else:
        col = f"reported.{component}"
        events = episodes[col].to_numpy(dtype=float) if col in episodes else np.full(len(episodes), np.nan)
    row = weights[weights["component"] == component]
    weight = float(row["weight"].iloc[0]) if len(row) else math.nan
    return {"events": events, "paid": events * weight}


def components_explorer(
    episodes: Mapping[str, Mapping[str, pd.DataFrame]], *, seed: int = 0, n_boot: int = 1000
) -> Explorer:
    """The component picker over the fixed-policy rollouts' episodes.

    Args:
        episodes: policy -> side -> the rollout's ``episodes`` table (``return``, ``length``,
            ``reported.<count>``).
        seed: Seed of the weights' bootstrap (the check's, so the intervals are the table's).
        n_boot: Bootstrap resamples.

    Raises:
        ValueError: No policy has episodes on both sides.
    """
    policies = [p for p, sides in episodes.items() if all(len(sides.get(s, ())) for s in SIDES)]
    if not policies:
        raise ValueError("no fixed-policy rollout finished an episode on both sides")
    weights = {
        p: {s: component_weights(episodes[p][s], seed=seed, n_boot=n_boot) for s in SIDES} for p in policies
    }
    verdicts = {
        p: compare_components(weights[p]["baseline"], weights[p]["candidate"]).set_index("component")
        for p in policies
    }
    reported = (c for p in policies for s in SIDES for c in weights[p][s]["component"] if c != PER_STEP)
    names = [*dict.fromkeys(reported), PER_STEP]
    # Changed components first: the one a user came to see.
    rank = {"vanished": 0, "rescaled": 1, "unmeasurable": 2, "new": 3, "same": 4}
    first = policies[0]

    def verdict_of(policy: str, comp: str) -> str:
        table = verdicts[policy]
        return str(table.loc[comp, "verdict"]) if comp in table.index else "not reported"

    position = {c: i for i, c in enumerate(names)}
    names = sorted(names, key=lambda c: (rank.get(verdict_of(first, c), 5), position[c]))
    options = [(f"{c} ({verdict_of(first, c)})", c) for c in names]
    series = {
        (p, s, c): episode_values(episodes[p][s], weights[p][s], c)
        for p in policies
        for s in SIDES
        for c in names
    }

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        left, right = fig.subplots(1, 2, width_ratios=[3, 1])
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.14, top=0.86, wspace=0.28)
        artists: dict[str, Any] = {
            "left": left,
            "right": right,
            "points": {},
            "means": {},
            "weights": {},
            "cis": {},
        }
        for i, side in enumerate(SIDES):
            color = SIDE_COLORS[side]
            artists["points"][side] = left.scatter([], [], s=10, color=color, alpha=0.55, label=side)
            (artists["means"][side],) = left.plot(
                [], [], color=color, linewidth=2.0, label=f"{side}, running mean"
            )
            (artists["cis"][side],) = right.plot([i, i], [0.0, 0.0], color=color, linewidth=2.5)
            (artists["weights"][side],) = right.plot([i], [0.0], "o", color=color, markersize=7)
        left.axhline(0.0, color="black", linewidth=0.6)
        right.axhline(0.0, color="black", linewidth=0.6)
        right.set_xticks([0, 1], list(SIDES))
        right.set_xlim(-0.6, 1.6)
        right.set_ylabel("reward per event (95% interval)")
        left.set_xlabel("episode (in the order it finished)")
        left.grid(alpha=0.3)
        right.grid(alpha=0.3, axis="y")
        left.legend(loc="upper right", fontsize="x-small", framealpha=0.85)
        return artists

    def update(artists: dict[str, Any], values: dict[str, Any]) -> None:
        policy, comp, paid = values["policy"], values["component"], values["quantity"] == PAID
        left, right = artists["left"], artists["right"]
        ys_all, xs_max, text = [], 1.0, []
        for i, side in enumerate(SIDES):
            y = series[(policy, side, comp)]["paid" if paid else "events"]
            x = np.arange(1, len(y) + 1, dtype=float)
            ok = np.isfinite(y)
            artists["points"][side].set_offsets(
                np.column_stack([x[ok], y[ok]]) if ok.any() else np.empty((0, 2))
            )
            running = np.cumsum(np.where(ok, y, 0.0)) / np.maximum(np.cumsum(ok), 1)
            shown = ok.any() and values["running_mean"]
            artists["means"][side].set_data(x[ok], running[ok]) if shown else artists["means"][side].set_data(
                [], []
            )
            ys_all.append(y[ok])
            xs_max = max(xs_max, float(len(y)))
            row = weights[policy][side]
            row = row[row["component"] == comp]
            w = float(row["weight"].iloc[0]) if len(row) else math.nan
            lo = float(row["ci_low"].iloc[0]) if len(row) else math.nan
            hi = float(row["ci_high"].iloc[0]) if len(row) else math.nan
            artists["weights"][side].set_data([i], [w] if math.isfinite(w) else [np.nan])
            artists["cis"][side].set_data([i, i], [lo, hi] if math.isfinite(lo) else [np.nan, np.nan])
            mean = float(np.mean(y[ok])) if ok.any() else math.nan
            text.append(f"{side} {format_number(mean)}" if math.isfinite(mean) else f"{side} not measured")
        ys = np.concatenate(ys_all) if ys_all else np.array([])
        if ys.size:
            y0, y1 = float(min(ys.min(), 0.0)), float(max(ys.max(), 0.0))
            pad = 0.08 * (y1 - y0) if y1 > y0 else 1.0
            left.set_ylim(y0 - pad, y1 + pad)
        left.set_xlim(0, xs_max + 1)
        unit = (
            "reward per episode (events × fit)"
            if paid
            else ("steps per episode" if comp == PER_STEP else "events per episode")
        )
        left.set_ylabel(unit)
        left.set_title(f"{comp} under the {policy} policy: mean {', '.join(text)}", fontsize="small")
        bounds = [
            v
            for side in SIDES
            for v in (*artists["cis"][side].get_ydata(), *artists["weights"][side].get_ydata())
            if np.isfinite(v)
        ]
        if bounds:
            b0, b1 = min(min(bounds), 0.0), max(max(bounds), 0.0)
            pad = 0.1 * (b1 - b0) if b1 > b0 else 1.0
            right.set_ylim(b0 - pad, b1 + pad)
        verdict = verdict_of(policy, comp)
        scale = verdicts[policy].loc[comp, "ratio"] if comp in verdicts[policy].index else math.nan
        tail = f", ×{format_number(scale)}" if isinstance(scale, float) and math.isfinite(scale) else ""
        right.set_title(f"per event: {verdict}{tail}", fontsize="small")

    controls = [
        choice("component", options, names[0], label="component"),
        choice("policy", policies, first, label="policy"),
        choice("quantity", [PAID, EVENTS], PAID, label="show"),
        toggle("running_mean", True, label="running mean"),
    ]
    return Explorer(
        title="Reward-component picker: what each component paid, episode by episode",
        controls=controls,
        setup=setup,
        update=update,
        figsize=(9.0, 3.8),
    )


def component_explorer(wb: Workbench, seed: int = 0) -> Any:
    """The component picker (JupyterLab: live; the report: the most changed component under the random
    policy), read from the cached fixed-policy rollouts; a muted line saying why when there is nothing to pick."""
    from rlaudit.env import probes
    from rlaudit.env.analysis import POLICIES, rollout_params

    # the components check's cache entries, read without its progress bars
    pairs = [wb.run(probes.rollout, **rollout_params(wb.profile, seed, policy)) for policy in POLICIES]
    episodes = {
        policy: {s: pair[s].table("episodes") for s in SIDES}
        for policy, pair in zip(POLICIES, pairs, strict=True)
        if pair.ok
    }
    usable = {p: e for p, e in episodes.items() if all(len(e[s]) for s in SIDES)}
    if not usable:
        return nothing_to_explore(
            "No component picker: no fixed-policy rollout finished an episode on both sides (see 05_env)."
        )
    return components_explorer(usable, seed=seed)


__all__ = ["Explorer", "component_explorer", "components_explorer", "episode_values"]
