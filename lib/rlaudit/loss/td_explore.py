"""The TD-target case picker of 09_loss: what each off-policy subject's ``compute_td_targets`` does to its
bootstrap under one controlled change of the batch, baseline and candidate side by side.

``loss/td-targets`` drives ``compute_td_targets`` with one batch and its variants (every transition terminated
or truncated, other current or next observations, the target or the online networks perturbed, every reward 0)
and reads the quantities from them. Here each variant is drawn against the base batch: per transition, the
bootstrap (target minus reward) of the base batch on x and that of the variant on y. A change that leaves the
bootstrap alone lies on the diagonal; a termination that ends the return lies on y = 0. So a dropped done mask
shows as the ``terminated`` case on the diagonal, case 003's off-by-one as ``other next observations`` on it,
and a bootstrap from the online network as ``target networks perturbed`` on it. The picker reads the cached
runs of ``loss/td-targets``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES
from rlaudit.explore import Explorer, choice, nothing_to_explore
from rlaudit.trainer.plots import SIDE_COLORS

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

DIAGONAL, ZERO, OFF = "on the diagonal", "on y = 0", "off the diagonal"


@dataclass(frozen=True)
class Case:
    """One controlled change of the batch: what it is, and where a one-step TD target puts its points."""

    label: str
    expected: str  # DIAGONAL, ZERO or OFF
    why: str
    reward: float | None = None  # the reward every transition of the case carries (None: the base batch's)


CASES: dict[str, Case] = {
    "terminated": Case("every transition terminated", ZERO, "a termination ends the return"),
    "truncated": Case("every transition truncated (time limit)", DIAGONAL, "a truncation still bootstraps"),
    "next_obs": Case("other next observations", OFF, "the bootstrap reads s_{t+1}"),
    "obs": Case("other current observations", DIAGONAL, "s_t does not enter the bootstrap"),
    "target": Case("target networks perturbed", OFF, "the target network gives the bootstrap"),
    "online": Case(
        "online networks perturbed", DIAGONAL, "the online network does not (double-Q's argmax does)"
    ),
    "rewards_0": Case("every reward 0", DIAGONAL, "the reward does not enter the bootstrap", reward=0.0),
}
"""The cases of the probe's ``td_cases`` table offered, in order, with what a one-step TD target does."""


def case_points(cases: pd.DataFrame) -> dict[str, dict[str, np.ndarray]]:
    """Per case of :data:`CASES` present (and finite), ``{"x": base bootstrap, "y": the case's bootstrap}``
    from one side's ``td_cases`` table (``case``, ``row``, ``target``, ``reward``: the base batch's rewards)."""
    by = {c: g.sort_values("row") for c, g in cases.groupby("case")}
    if "base" not in by:
        return {}
    reward = by["base"]["reward"].to_numpy(dtype=float)
    x = by["base"]["target"].to_numpy(dtype=float) - reward
    out = {}
    for name, case in CASES.items():
        if name not in by or len(by[name]) != len(x):
            continue
        target = by[name]["target"].to_numpy(dtype=float)
        if not np.isfinite(target).all():  # "target" without target networks
            continue
        y = target - (reward if case.reward is None else case.reward)
        out[name] = {"x": x, "y": y}
    return out


def moved(points: Mapping[str, np.ndarray]) -> float:
    """Mean |y - x| over mean |x|: how far the case moved the bootstrap, as a share of it."""
    scale = float(np.mean(np.abs(points["x"])))
    return float(np.mean(np.abs(points["y"] - points["x"]))) / max(scale, 1e-12)


def _share(value: float) -> str:
    """``"100%"``, ``"12.8%"``, ``"0%"``: a move as a share of the bootstrap."""
    pct = 100.0 * value
    return "0%" if abs(pct) < 0.05 else f"{pct:.3g}%"


def case_picker(sides: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]]) -> Explorer:
    """The explorer over both sides' :func:`case_points`; it starts on the case whose move differs most
    between the sides (what the report shows).

    Raises:
        ValueError: No case both sides have.
    """
    names = [n for n in CASES if all(n in sides[s] for s in SIDES)]
    if not names:
        raise ValueError("no TD-target case on both sides")
    shift = {n: abs(moved(sides["candidate"][n]) - moved(sides["baseline"][n])) for n in names}
    start = max(names, key=lambda n: (shift[n], -names.index(n)))
    options = [
        (
            f"{CASES[n].label} (moved {_share(moved(sides['baseline'][n]))} vs {_share(moved(sides['candidate'][n]))})",
            n,
        )
        for n in names
    ]

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        axes = fig.subplots(1, 2, sharex=True, sharey=True)
        fig.subplots_adjust(left=0.09, right=0.98, bottom=0.14, top=0.8, wspace=0.08)
        art: dict[str, Any] = {"axes": dict(zip(SIDES, axes, strict=True)), "points": {}, "lines": {}}
        for side, ax in art["axes"].items():
            art["points"][side] = ax.scatter([], [], s=12, alpha=0.7, color=SIDE_COLORS[side])
            (art["lines"][side],) = ax.plot([], [], color="0.4", linewidth=0.9, linestyle="--")
            ax.axhline(0.0, color="0.75", linewidth=0.8)
            ax.set_xlabel("base batch: bootstrap (target − reward)")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("this case: bootstrap")
        return art

    def update(art: dict[str, Any], values: dict[str, Any]) -> None:
        name = values["case"]
        case = CASES[name]
        both = np.concatenate([np.r_[p[name]["x"], p[name]["y"]] for p in sides.values()])
        low, high = float(both.min()), float(both.max())
        pad = 0.06 * (high - low) if high > low else 1.0
        for side, ax in art["axes"].items():
            pts = sides[side][name]
            art["points"][side].set_offsets(np.column_stack([pts["x"], pts["y"]]))
            art["lines"][side].set_data([low - pad, high + pad], [low - pad, high + pad])
            ax.set_xlim(low - pad, high + pad)
            ax.set_ylim(low - pad, high + pad)
            ax.set_title(f"{side}: moves {_share(moved(pts))} of the bootstrap", fontsize="small")
        art["axes"]["baseline"].figure.suptitle(
            f"{case.label}: a one-step TD target lies {case.expected} ({case.why})", fontsize="small"
        )

    return Explorer(
        title="TD-target case picker: the bootstrap under one controlled change, both sides",
        controls=[choice("case", options, start, label="case")],
        setup=setup,
        update=update,
        figsize=(9.0, 4.0),
    )


def td_explorer(wb: Workbench, seed: int = 0) -> Any:
    """The TD-target case picker (JupyterLab: live; the report: the case whose move differs most between the
    sides), from the cached ``loss/td-targets`` runs; a muted line saying why when there is nothing to pick."""
    from rlaudit.engine.io import read_table
    from rlaudit.loss import probes

    pair = wb.run(probes.td_targets, seed=seed)  # the check's cache entry, no progress bar
    if not pair.ok:
        return nothing_to_explore(
            "No TD-target case picker: compute_td_targets did not run on both sides (see loss/td-targets; an "
            "on-policy learner has none)."
        )
    sides = {s: case_points(read_table(pair[s].dir / "td_cases")) for s in SIDES}
    if not any(all(n in sides[s] for s in SIDES) for n in CASES):
        return nothing_to_explore("No TD-target case picker: no controlled case on both sides.")
    return case_picker(sides)


__all__ = ["CASES", "Case", "case_picker", "case_points", "moved", "td_explorer"]
