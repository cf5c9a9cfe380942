"""The step and environment scrubber of 05_env: both sides' observations at the picked step of the picked
sub-environment side by side, the cells that differ outlined, and a timeline of where that sub-environment
differs (observations, rewards, episode ends) with the picked step marked.

It reads the ``env/equivalence`` evidence (both environments built and reset with one seed and stepped with one
action sequence, :func:`rlaudit.env.probes.equivalence`): the stored observations ``(S+1, N, D)`` and the
per-step rewards and episode ends. Everything a control shows is computed when the explorer is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rlaudit.env.equivalence import EQUIVALENCE, differs
from rlaudit.env.plots import SIDE_COLORS
from rlaudit.explore import Explorer, choice, nothing_to_explore, slider

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

HIGHLIGHT = "#C44E52"
"""Outline of a differing cell (not a side's colour)."""
MAX_ANNOTATED = 24
"""Vector observations with at most this many features show each value in its cell."""
MAX_OUTLINED = 64
"""Up to this many features each differing cell gets an outline; beyond it a translucent mask."""
TIMELINE_ROWS = ("observation", "reward", "episode end")


def frame_layout(shape: Any) -> tuple[int, int, int, str] | None:
    """``(height, width, channels, layout)`` when an observation of ``shape`` is an image (``HW``, ``HWC`` with
    1, 3 or 4 channels last, or ``CHW`` with up to 16 channels first, frame stacks included); None for vectors.

    Args:
        shape: The single observation space's shape (a list), or None (Dict and Tuple spaces).
    """
    if not shape or len(shape) not in (2, 3):
        return None
    dims = [int(d) for d in shape]
    if len(dims) == 2:
        h, w = dims
        return (h, w, 1, "HW") if min(h, w) >= 4 else None
    if dims[-1] in (1, 3, 4) and min(dims[0], dims[1]) >= 4:
        return dims[0], dims[1], dims[2], "HWC"
    if dims[0] <= 16 and min(dims[1], dims[2]) >= 4:
        return dims[1], dims[2], dims[0], "CHW"
    return None


def channel_of(flat: np.ndarray, layout: tuple[int, int, int, str], channel: int) -> np.ndarray:
    """One channel of flattened observations ``(..., D)`` as ``(..., H, W)``."""
    h, w, c, kind = layout
    lead = flat.shape[:-1]
    if kind == "HW":
        return flat.reshape(*lead, h, w)
    if kind == "HWC":
        return flat.reshape(*lead, h, w, c)[..., channel]
    return flat.reshape(*lead, c, h, w)[..., channel, :, :]


def scrubber_data(run_b: dict[str, np.ndarray], run_c: dict[str, np.ndarray]) -> dict[str, Any]:
    """What the scrubber indexes into, computed once.

    Args:
        run_b: The baseline's ``run.npz`` arrays: ``obs`` ``(S+1, N, D)``, ``reward``, ``terminated``,
            ``truncated`` ``(T, N)``; ``actions`` ``(T, N, ...)`` optional.
        run_c: The candidate's, same shapes.

    Returns:
        ``obs`` per side ``(S+1, N, D)`` (the steps both stored), ``cells`` ``(S+1, N, D)`` True where the
        observations differ, and ``timeline`` ``(N, 3, T+1)``: per env, the fraction of features that differ
        at each step (NaN past the stored steps), and 1/0 where the reward (or the episode end) that came with
        that step's observation differs (step 0, the reset, has none).
    """
    stored = min(len(run_b["obs"]), len(run_c["obs"]))
    obs = {"baseline": np.asarray(run_b["obs"][:stored]), "candidate": np.asarray(run_c["obs"][:stored])}
    cells = differs(obs["baseline"], obs["candidate"])
    steps = int(run_b["reward"].shape[0])
    n = int(run_b["reward"].shape[1])
    timeline = np.full((n, len(TIMELINE_ROWS), steps + 1), np.nan)
    timeline[:, 0, :stored] = cells.mean(axis=2).T if cells.shape[2] else 0.0
    timeline[:, 1, 1:] = differs(run_b["reward"], run_c["reward"]).T
    ends = differs(run_b["terminated"], run_c["terminated"]) | differs(run_b["truncated"], run_c["truncated"])
    timeline[:, 2, 1:] = ends.T
    timeline[:, 1:, 0] = 0.0
    return {
        "obs": obs,
        "cells": cells,
        "timeline": timeline,
        "reward": {"baseline": run_b["reward"], "candidate": run_c["reward"]},
        "ended": {
            side: np.asarray(run["terminated"], bool) | np.asarray(run["truncated"], bool)
            for side, run in (("baseline", run_b), ("candidate", run_c))
        },
        "actions": run_b["actions"] if "actions" in run_b else None,
        "stored": stored,
        "steps": steps,
        "num_envs": n,
    }


def first_difference(cells: np.ndarray) -> tuple[int, int] | None:
    """``(step, env)`` of the first observation cell that differs (lowest step, then env); None when none."""
    hits = np.argwhere(cells.any(axis=2))
    if not len(hits):
        return None
    return int(hits[0][0]), int(hits[0][1])


def _fmt(value: float) -> str:
    return f"{value:.3g}" if np.isfinite(value) else "nan"


def scrubber(
    run_b: dict[str, np.ndarray], run_c: dict[str, np.ndarray], shape: Any = None, seed: int = 0
) -> Explorer:
    """The scrubber over two equal-shaped equivalence runs (see :func:`scrubber_data`).

    Args:
        run_b: The baseline's ``run.npz`` arrays.
        run_c: The candidate's.
        shape: The single observation space's shape, to show image observations as images.
        seed: The seed both runs used (for the title).
    """
    data = scrubber_data(run_b, run_c)
    obs, cells, timeline = data["obs"], data["cells"], data["timeline"]
    stored, steps, n = data["stored"], data["steps"], data["num_envs"]
    dim = int(obs["baseline"].shape[2])
    first = first_difference(cells)
    layout = frame_layout(shape) if shape is not None and int(np.prod(shape)) == dim else None
    env_first = [np.flatnonzero(cells[:, i].any(axis=1)) for i in range(n)]
    env_options = [
        (f"env {i} (differs from step {hits[0]})" if len(hits) else f"env {i} (same)", i)
        for i, hits in enumerate(env_first)
    ]
    controls = [
        slider("step", 0, max(stored - 1, 0), first[0] if first else 0, step=1, label="step"),
        choice("env", env_options, first[1] if first else 0, label="environment"),
    ]
    if layout is not None and layout[2] > 1:
        controls.append(choice("channel", list(range(layout[2])), 0, label="channel"))

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        grid = fig.add_gridspec(2, 3 if layout else 1, height_ratios=[3, 1.3], hspace=0.55, wspace=0.15)
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.13, top=0.88)
        artists: dict[str, Any] = {}
        if layout is not None:
            h, w = layout[0], layout[1]
            panels = []
            for k, side in enumerate(("baseline", "candidate")):
                ax = fig.add_subplot(grid[0, k])
                image = ax.imshow(np.zeros((h, w)), cmap="gray", vmin=0, vmax=1, interpolation="nearest")
                ax.set_title(side, color=SIDE_COLORS[side], fontsize="medium")
                ax.set_xticks([])
                ax.set_yticks([])
                panels.append(image)
            ax = fig.add_subplot(grid[0, 2])
            mask = ax.imshow(np.zeros((h, w, 4)), interpolation="nearest")
            ax.set_title("differing pixels", color=HIGHLIGHT, fontsize="medium")
            ax.set_xticks([])
            ax.set_yticks([])
            artists.update(images=panels, mask=mask)
        else:
            ax = fig.add_subplot(grid[0, 0])
            image = ax.imshow(np.zeros((2, dim)), cmap="viridis", aspect="auto", interpolation="nearest")
            ax.set_yticks([0, 1], ["baseline", "candidate"])
            for tick, side in zip(ax.get_yticklabels(), ("baseline", "candidate"), strict=True):
                tick.set_color(SIDE_COLORS[side])
            ax.set_xlabel("observation feature (flattened index)")
            if dim <= 40:
                ax.set_xticks(range(dim))
            texts = []
            if dim <= MAX_ANNOTATED:
                texts = [
                    [ax.text(j, r, "", ha="center", va="center", fontsize="x-small") for j in range(dim)]
                    for r in range(2)
                ]
            boxes = []
            overlay = None
            if dim <= MAX_OUTLINED:
                from matplotlib.patches import Rectangle

                for j in range(dim):
                    box = Rectangle(
                        (j - 0.48, -0.48), 0.96, 1.96, fill=False, edgecolor=HIGHLIGHT, linewidth=2.2
                    )
                    ax.add_patch(box)
                    boxes.append(box)
            else:
                overlay = ax.imshow(np.zeros((2, dim, 4)), aspect="auto", interpolation="nearest")
            artists.update(ax_obs=ax, image=image, texts=texts, boxes=boxes, overlay=overlay)
        tax = fig.add_subplot(grid[1, :])
        line = tax.imshow(
            np.zeros((len(TIMELINE_ROWS), steps + 1)),
            cmap="Reds",
            vmin=0,
            vmax=1,
            aspect="auto",
            interpolation="nearest",
            extent=(-0.5, steps + 0.5, len(TIMELINE_ROWS) - 0.5, -0.5),
        )
        tax.set_yticks(range(len(TIMELINE_ROWS)), list(TIMELINE_ROWS), fontsize="small")
        tax.set_xlabel("environment step (0 = reset; red: differs)")
        cursor = tax.axvline(0, color="black", linewidth=1.5)
        if stored < steps + 1:
            tax.axvspan(stored - 0.5, steps + 0.5, color="#dddddd", zorder=0)
        artists.update(fig=fig, timeline=line, cursor=cursor, ax_time=tax)
        return artists

    def update(artists: dict[str, Any], values: dict[str, Any]) -> None:
        t = round(float(values["step"]))
        i = int(values["env"])
        a, b = obs["baseline"][t, i], obs["candidate"][t, i]
        diff = cells[t, i]
        if layout is not None:
            ch = int(values.get("channel", 0))
            pair = [channel_of(a, layout, ch), channel_of(b, layout, ch)]
            both = np.concatenate([p.ravel() for p in pair])
            low, high = (float(np.nanmin(both)), float(np.nanmax(both))) if both.size else (0.0, 1.0)
            for image, frame in zip(artists["images"], pair, strict=True):
                image.set_data(frame)
                image.set_clim(low, high if high > low else low + 1)
            differing = channel_of(diff.astype(float), layout, ch) > 0
            rgba = np.zeros((*differing.shape, 4))
            rgba[differing] = (0.77, 0.31, 0.32, 1.0)
            artists["mask"].set_data(rgba)
        else:
            both = np.vstack([a, b])
            artists["image"].set_data(both)
            finite = both[np.isfinite(both)]
            low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
            artists["image"].set_clim(low, high if high > low else low + 1)
            for r, row in enumerate(artists["texts"]):
                for j, text in enumerate(row):
                    text.set_text(_fmt(float(both[r, j])))
                    text.set_color("white" if both[r, j] < (low + high) / 2 else "black")
            for j, box in enumerate(artists["boxes"]):
                box.set_visible(bool(diff[j]))
            if artists["overlay"] is not None:
                rgba = np.zeros((2, dim, 4))
                rgba[:, diff] = (0.77, 0.31, 0.32, 0.55)
                artists["overlay"].set_data(rgba)
        artists["timeline"].set_data(np.nan_to_num(timeline[i], nan=0.0))
        artists["cursor"].set_xdata([t, t])
        count = int(diff.sum())
        gap = float(np.nanmax(np.abs(a.astype(float) - b.astype(float)))) if count else 0.0
        said = f"{count} of {dim} features differ (largest |candidate − baseline| {_fmt(gap)})"
        if t >= 1:
            actions = data["actions"]
            if actions is not None and t - 1 < len(actions):
                action = np.asarray(actions[t - 1, i])
                said += f"; after action {np.array2string(action, precision=3) if action.ndim else _fmt(float(action))}"
            rb, rc = data["reward"]["baseline"][t - 1, i], data["reward"]["candidate"][t - 1, i]
            eb, ec = data["ended"]["baseline"][t - 1, i], data["ended"]["candidate"][t - 1, i]
            said += f"; reward {_fmt(float(rb))} | {_fmt(float(rc))}"
            if eb or ec:
                said += f"; episode ended {'yes' if eb else 'no'} | {'yes' if ec else 'no'}"
        else:
            said += "; the reset (no action yet)"
        artists["fig"].suptitle(
            f"Step {t}, env {i} (seed {seed}, the same actions on both sides): {said}",
            fontsize="small",
        )

    return Explorer(
        title="Step and environment scrubber: both observations at one step, differing cells outlined",
        controls=controls,
        setup=setup,
        update=update,
        figsize=(9.0, 4.8),
    )


def scrubber_explorer(wb: Workbench, *, seed: int = 0) -> Any:
    """The scrubber over the ``env/equivalence`` runs of ``wb`` (JupyterLab: live; the report: the first
    step and environment where the observations differ, or step 0 of env 0 when none do).

    Returns:
        An :class:`~rlaudit.explore.Explorer`, or a muted line saying why there is nothing to scrub.
    """

    pair = wb.run(EQUIVALENCE["probe"], **EQUIVALENCE["params"](wb, seed=seed))
    failed = [side for side in ("baseline", "candidate") if not pair[side].ok]
    if failed:
        return nothing_to_explore(
            f"Nothing to scrub: the equivalence run failed or could not run on the {' and '.join(failed)} "
            "(see env/equivalence)."
        )
    facts = {side: pair[side].json("facts") for side in ("baseline", "candidate")}
    runs = {side: pair[side].npz("run") for side in ("baseline", "candidate")}
    shapes = {side: runs[side]["obs"].shape[1:] for side in runs}
    if shapes["baseline"] != shapes["candidate"]:
        return nothing_to_explore(
            "Nothing to scrub cell by cell: the environments differ in shape (num_envs x features "
            f"{tuple(shapes['baseline'])} | {tuple(shapes['candidate'])}; see env/equivalence)."
        )
    shape = facts["baseline"]["observation_space"].get("shape")
    return scrubber(runs["baseline"], runs["candidate"], shape=shape, seed=seed)


__all__ = ["Explorer", "first_difference", "frame_layout", "scrubber", "scrubber_data", "scrubber_explorer"]
