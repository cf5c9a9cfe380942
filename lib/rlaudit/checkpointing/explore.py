"""The checkpoint and tensor picker of 04_checkpointing: one tensor of one checkpoint, baseline and candidate
side by side on one colour scale, and candidate minus baseline beside them, so the elements that differ stand
out (equal elements are white).

It reads the values the ``checkpoint_contents`` probe kept of each side's checkpoints (the same files and the
same cached probe call as ``checkpointing/contents``; tensors within a size budget, see
:func:`rlaudit.checkpointing.probes.keep_values`). Checkpoints are paired by the step they hold when both
sides saved at the same steps, else by their rank in step order. When only one side has checkpoints, the picker
shows that side alone and says, in the other's panel, that it has none and where they were looked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rlaudit.checkpointing import probes
from rlaudit.explore import Explorer, choice, nothing_to_explore
from rlaudit.trainer.plots import SIDE_COLORS

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

SIDES = ("baseline", "candidate")
MISSING = "#dddddd"
MAX_LABELS = 48
"""Tensors of at most this many elements show each value in its cell."""


def as_matrix(values: np.ndarray) -> np.ndarray:
    """A tensor as a 2-D matrix to draw: a scalar as 1x1, a vector as one row, a tensor of 3 or more
    dimensions as its first dimension by the rest."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 0:
        return values.reshape(1, 1)
    if values.ndim == 1:
        return values.reshape(1, -1)
    return values.reshape(values.shape[0], -1)


def pair_checkpoints(files: dict[str, list[dict[str, Any]]]) -> list[tuple[str, Any, Any]]:
    """``(label, baseline file, candidate file)`` in step order: by equal steps when both sides saved at the
    same steps, else by rank in step order (a side with fewer checkpoints gets None for the rest).

    Args:
        files: Per side, ``{"name", "step", ...}`` records (any order; ``step`` None when unknown).
    """

    def order(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(records, key=lambda r: (r.get("step") is None, r.get("step") or 0, r["name"]))

    b, c = order(files["baseline"]), order(files["candidate"])
    out = []
    for i in range(max(len(b), len(c))):
        rb = b[i] if i < len(b) else None
        rc = c[i] if i < len(c) else None

        def word(r: dict[str, Any] | None) -> str:
            if r is None:
                return "none"
            return f"{r['name']} (step {r['step']:,})" if r.get("step") is not None else r["name"]

        same = (
            rb is not None
            and rc is not None
            and rb.get("step") == rc.get("step")
            and rb["name"] == rc["name"]
        )
        label = f"#{i + 1}: {word(rb)}" if same else f"#{i + 1}: {word(rb)} | {word(rc)}"
        out.append((label, rb, rc))
    return out


def tensor_explorer(
    files: dict[str, list[dict[str, Any]]],
    arrays: dict[str, dict[str, np.ndarray]],
    atol: float = 0.0,
    absent: dict[str, str] | None = None,
) -> Explorer:
    """The picker over both sides' kept checkpoint tensors (or one side's, when the other has none).

    Args:
        files: Per side, the ``values.json`` records of its checkpoints, each with ``name``, ``step`` (from
            ``contents.json``; None when unknown), ``tensors`` (``key``, ``array``, ``shape``, ``dtype``) and
            ``left_out`` (``key``, ``shape``, ``reason``).
        arrays: Per side, the ``values.npz`` arrays the records name.
        atol: Elements within this of each other count as equal.
        absent: Per side without any checkpoint, why (shown in its panel); default "no checkpoints".

    Raises:
        ValueError: Neither side kept any tensor.
    """
    pairs = pair_checkpoints(files)
    none = {side: (absent or {}).get(side, "no checkpoints") for side in SIDES if not files[side]}
    keys: dict[str, set[str]] = {}  # key -> the sides any of whose checkpoints hold it
    for side in SIDES:
        for record in files[side]:
            for t in record.get("tensors", []) + record.get("left_out", []):
                keys.setdefault(t["key"], set()).add(side)
    if not keys:
        raise ValueError("neither side's checkpoints hold a tensor rlaudit could read")
    lookup: dict[tuple[int, str], dict[str, Any]] = {}
    for p, (_label, rb, rc) in enumerate(pairs):
        for key in keys:
            entry: dict[str, Any] = {}
            for side, record in (("baseline", rb), ("candidate", rc)):
                if record is None:
                    entry[side] = (None, none.get(side, "no checkpoint at this rank"))
                    continue
                found = next((t for t in record.get("tensors", []) if t["key"] == key), None)
                if found is not None:
                    entry[side] = (np.asarray(arrays[side][found["array"]]), found["dtype"])
                    continue
                out = next((t for t in record.get("left_out", []) if t["key"] == key), None)
                entry[side] = (None, f"not kept: {out['reason']}" if out else "absent from this checkpoint")
            lookup[(p, key)] = entry
    # what each pick shows, computed once: both matrices, their difference, counts
    prepared: dict[tuple[int, str], dict[str, Any]] = {}
    for (p, key), entry in lookup.items():
        (vb, why_b), (vc, why_c) = entry["baseline"], entry["candidate"]
        shown: dict[str, Any] = {
            "baseline": as_matrix(vb) if vb is not None else None,
            "candidate": as_matrix(vc) if vc is not None else None,
            "why": {"baseline": why_b, "candidate": why_c},
            "diff": None,
            "text": "",
            "differs": False,
        }
        if vb is not None and vc is not None:
            if vb.shape == vc.shape:
                delta = as_matrix(vc) - as_matrix(vb)
                differing = ~(np.isclose(vc, vb, rtol=0.0, atol=atol) | (np.isnan(vb) & np.isnan(vc)))
                n = int(differing.sum())
                shown["differs"] = n > 0
                shown["diff"] = np.where(as_matrix(differing), delta, 0.0)
                gap = float(np.nanmax(np.abs(delta))) if n else 0.0
                shown["text"] = (
                    f"{n:,} of {vb.size:,} elements differ (largest |candidate − baseline| {gap:.3g})"
                    if n
                    else ("the one element is equal" if vb.size == 1 else f"all {vb.size:,} elements equal")
                )
            else:
                shown["differs"] = True
                shown["text"] = (
                    f"shapes differ: {'x'.join(map(str, vb.shape)) or 'scalar'} | "
                    f"{'x'.join(map(str, vc.shape)) or 'scalar'}"
                )
        else:
            shown["text"] = "; ".join(
                f"{side}: {shown['why'][side]}" for side in SIDES if entry[side][0] is None
            )
        prepared[(p, key)] = shown

    def key_label(key: str) -> str:
        where = keys[key]
        if len(where) < 2 and not none:  # with one side alone, every tensor is that side's
            return f"{key} ({next(iter(where))} only)"
        differs = any(prepared[(p, key)]["differs"] for p in range(len(pairs)))
        return f"{key}  ◆ differs" if differs else key

    checkpoint_options = [(label, p) for p, (label, _, _) in enumerate(pairs)]
    key_options = [(key_label(k), k) for k in keys]
    start = next((k for k in keys if prepared[(len(pairs) - 1, k)]["diff"] is not None), next(iter(keys)))

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        from matplotlib import colormaps
        from matplotlib.ticker import MaxNLocator

        axes = fig.subplots(1, 3)
        fig.subplots_adjust(left=0.06, right=0.9, bottom=0.12, top=0.8, wspace=0.6)
        images, notes = {}, {}
        for ax, name in zip(axes, (*SIDES, "difference"), strict=True):
            cmap = colormaps["RdBu_r" if name == "difference" else "viridis"].with_extremes(bad=MISSING)
            images[name] = ax.imshow(np.zeros((1, 1)), cmap=cmap, aspect="auto", interpolation="nearest")
            color = SIDE_COLORS.get(name, "black")
            ax.set_title(
                name if name != "difference" else "candidate − baseline", color=color, fontsize="medium"
            )
            ax.set_xlabel("column (flattened trailing dims)", fontsize="small")
            ax.set_ylabel("row", fontsize="small")
            ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True, min_n_ticks=1))
            ax.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True, min_n_ticks=1))
            notes[name] = ax.text(
                0.5, 0.5, "", transform=ax.transAxes, ha="center", va="center", fontsize="small", wrap=True
            )
        labels = {
            name: [ax.text(0, 0, "", ha="center", va="center", fontsize="x-small") for _ in range(MAX_LABELS)]
            for ax, name in zip(axes, (*SIDES, "difference"), strict=True)
        }
        for image, label in ((images["candidate"], "value"), (images["difference"], "difference")):
            bar = fig.colorbar(image, ax=image.axes, fraction=0.08, pad=0.03)
            bar.set_label(label, fontsize="small")
        return {"fig": fig, "images": images, "notes": notes, "labels": labels}

    def show(image: Any, matrix: np.ndarray | None, labels: list[Any]) -> None:
        data = matrix if matrix is not None else np.full((1, 1), np.nan)
        rows, cols = data.shape
        image.set_data(np.ma.masked_invalid(data))
        image.set_extent((-0.5, cols - 0.5, rows - 0.5, -0.5))
        image.axes.set_xlim(-0.5, cols - 0.5)
        image.axes.set_ylim(rows - 0.5, -0.5)
        small = matrix is not None and data.size <= MAX_LABELS
        for n, text in enumerate(labels):
            if small and n < data.size:
                i, j = divmod(n, cols)
                text.set_position((j, i))
                text.set_text(f"{data[i, j]:.3g}")
                text.set_visible(True)
            else:
                text.set_visible(False)

    def update(artists: dict[str, Any], values: dict[str, Any]) -> None:
        p, key = int(values["checkpoint"]), values["tensor"]
        shown = prepared[(p, key)]
        both = [m for m in (shown["baseline"], shown["candidate"]) if m is not None and m.size]
        finite = np.concatenate([m[np.isfinite(m)] for m in both]) if both else np.array([])
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if high <= low:  # one value everywhere: centre it on the scale
            pad = max(abs(low) * 0.05, 1e-6)
            low, high = low - pad, high + pad
        for side in SIDES:
            show(artists["images"][side], shown[side], artists["labels"][side])
            artists["images"][side].set_clim(low, high)
            artists["notes"][side].set_text("" if shown[side] is not None else shown["why"][side])
        diff = shown["diff"]
        show(artists["images"]["difference"], diff, artists["labels"]["difference"])
        bound = float(np.nanmax(np.abs(diff))) if diff is not None and diff.size else 0.0
        artists["images"]["difference"].set_clim(-(bound or 1.0), bound or 1.0)
        artists["notes"]["difference"].set_text(
            "" if diff is not None and bound > 0 else ("equal" if diff is not None else "not comparable")
        )
        if bound == 0:
            for text in artists["labels"]["difference"]:
                text.set_visible(False)
        dtypes = {side: lookup[(p, key)][side][1] if shown[side] is not None else "—" for side in SIDES}
        artists["fig"].suptitle(
            f"{key} in checkpoint {pairs[p][0]}\n{shown['text']} · dtype {dtypes['baseline']} | {dtypes['candidate']}",
            fontsize="small",
        )

    return Explorer(
        title="Checkpoint and tensor picker: one saved tensor on both sides, and where they differ",
        controls=[
            choice("checkpoint", checkpoint_options, len(pairs) - 1, label="checkpoint"),
            choice("tensor", key_options, start, label="tensor"),
        ],
        setup=setup,
        update=update,
        figsize=(10.0, 4.4),
    )


def checkpoint_explorer(wb: Workbench, trust: bool = False) -> Any:
    """The picker over the checkpoints ``checkpointing/contents`` reads (JupyterLab: live; the report: the
    newest pair's first tensor both sides hold). When one side has checkpoints and the other none (a side
    that stopped saving them), it shows the one side's tensors and says the other has none.

    Returns:
        An :class:`~rlaudit.explore.Explorer`, or a muted line saying why there is nothing to pick.
    """
    from rlaudit.checkpointing.sources import sources

    src = sources(wb)
    stop = src.guard("checkpointing/contents", "checkpointing", "Checkpoints to explore")
    have = [side for side in SIDES if src[side]["paths"]]
    one_sided = len(have) == 1 and all(not src[s]["missing"] and src[s]["error"] is None for s in SIDES)
    if stop is not None and not one_sided:
        return nothing_to_explore(f"No checkpoint picker: {stop.evidence.summary or stop.status.value}.")
    absent = {
        side: f"the {side} has no checkpoints (looked in {src[side]['origin'] or 'no source'})"
        for side in SIDES
        if side not in have
    }
    files: dict[str, list[dict[str, Any]]] = {side: [] for side in absent}
    arrays: dict[str, dict[str, np.ndarray]] = {side: {} for side in absent}
    for side in have:
        res = wb.run_side(side, probes.checkpoint_contents, paths=list(src[side]["paths"]), trust=trust)
        if not res.ok:
            return nothing_to_explore(
                f"No checkpoint picker: reading the {side}'s checkpoints failed (see checkpointing/contents)."
            )
        steps = {r["index"]: r.get("step") for r in res.json("contents")}
        files[side] = [{**r, "step": steps.get(r["index"])} for r in res.json("values")]
        arrays[side] = res.npz("values")
    try:
        return tensor_explorer(files, arrays, absent=absent)
    except ValueError as exc:
        return nothing_to_explore(f"No checkpoint picker: {exc}.")


__all__ = ["Explorer", "as_matrix", "checkpoint_explorer", "pair_checkpoints", "tensor_explorer"]
