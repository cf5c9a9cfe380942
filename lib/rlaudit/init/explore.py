"""The layer picker of 08_init: one parameter's initialization, measured on both sides against what the PPO
details expect for its role (orthogonal √2 hidden, 0.01 policy head, 1.0 value head, zero biases).

Left, the singular values of every fresh network (flat at the gain for an orthogonal matrix), both sides
overlaid, and the expected gain as a line; right, the std of the entries at every seed beside the std the
expected scheme gives that shape. Everything comes from the one cached probe run both init checks read
(``init_stats``); a control change only indexes prepared arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, probe_evidence
from rlaudit.explore import Explorer, choice, nothing_to_explore, toggle
from rlaudit.init import probes
from rlaudit.init.common import init_params
from rlaudit.init.schemes import PPO_EXPECTED, STANDARD_GAINS
from rlaudit.trainer.plots import SIDE_COLORS

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

EXPECTED_COLOR = "#333333"


@dataclass
class Layer:
    """One parameter, matched across sides, with what the picker draws.

    Attributes:
        label: The picker's option (differing parameters marked ``≠``).
        names: Parameter name per side (None where a side lacks it).
        role: ``hidden``, ``policy head``, ``value head``, ``bias``, ``norm`` or ``other``.
        scheme: The inferred scheme phrase per side.
        same: Both sides initialize it alike (the schemes check's verdict for it).
        spectra: Per side, the singular values of each seed (descending); empty for vectors.
        stds: Per side, ``(seeds, std of the entries)``.
        shape: ``(fan_out, fan_in)`` of the weight matrix (per side), for the expected std.
    """

    label: str
    names: dict[str, str | None]
    role: str
    scheme: dict[str, str]
    same: bool
    spectra: dict[str, list[np.ndarray]] = field(default_factory=dict)
    stds: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    shape: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def expected(self) -> tuple[str, float] | None:
        """``(scheme, gain)`` the PPO details prescribe for the role, None where they say nothing."""
        return PPO_EXPECTED.get(self.role)

    def expected_text(self) -> str:
        exp = self.expected
        if exp is None:
            return f"the PPO details prescribe nothing for a {self.role} parameter"
        kind, gain = exp
        if kind == "zeros":
            return "expected (PPO, bias): zeros"
        name = next((k for k, v in STANDARD_GAINS.items() if math.isclose(v, gain)), f"{gain:.3g}")
        return f"expected (PPO, {self.role}): orthogonal, gain {name}"

    def expected_std(self, side: str) -> float | None:
        """The entry std the expected scheme gives this side's shape: an orthogonal (out, in) matrix with gain g
        has g² min(out, in) as its squared norm, so std g / √max(out, in); zeros: 0."""
        exp = self.expected
        shape = self.shape.get(side)
        if exp is None or not shape:
            return None
        kind, gain = exp
        if kind == "zeros":
            return 0.0
        if len(shape) < 2:
            return None
        return gain / math.sqrt(max(shape[0], int(np.prod(shape[1:]))))


def _shape(text: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in str(text).split("x") if d) if text else ()


def layers(
    table: pd.DataFrame,
    params: dict[str, pd.DataFrame],
    singular: dict[str, dict[str, np.ndarray]],
) -> list[Layer]:
    """The picker's rows, from the schemes check's table and the probe's per-seed artifacts.

    Args:
        table: :func:`rlaudit.init.layer_schemes.compare_init` (parameter, candidate, role, shape b/c,
            scheme b/c, same).
        params: Per side, the probe's ``params`` rows (seed, name, std).
        singular: Per side, the probe's ``singular.npz`` (``"<seed>|<name>"`` -> singular values).
    """
    out = []
    for r in table.to_dict("records"):
        names = {
            "baseline": None if r["parameter"] == "—" else r["parameter"],
            "candidate": None if r["candidate"] == "—" else r["candidate"],
        }
        shown = names["baseline"] or names["candidate"]
        if names["baseline"] and names["candidate"] and names["baseline"] != names["candidate"]:
            shown = f"{names['baseline']} | {names['candidate']}"
        layer = Layer(
            label=f"{'' if r['same'] else '≠ '}{shown} ({r['role']})",
            names=names,
            role=str(r["role"]),
            scheme={"baseline": r["scheme b"] or "absent", "candidate": r["scheme c"] or "absent"},
            same=bool(r["same"]),
        )
        for side, col in zip(SIDES, ("shape b", "shape c"), strict=True):
            name = names[side]
            layer.shape[side] = _shape(r.get(col))
            if name is None:
                layer.spectra[side], layer.stds[side] = [], (np.zeros(0), np.zeros(0))
                continue
            rows = params[side][params[side]["name"] == name].sort_values("seed")
            layer.stds[side] = (rows["seed"].to_numpy(dtype=float), rows["std"].to_numpy(dtype=float))
            layer.spectra[side] = [
                np.asarray(singular[side][key], dtype=float)
                for key in (f"{int(s)}|{name}" for s in rows["seed"])
                if key in singular[side]
            ]
        out.append(layer)
    return out


def evidence(
    wb: Workbench,
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], dict[str, dict[str, np.ndarray]]] | None:
    """The schemes table and per-side artifacts of the cached fresh-network probe, or None when a side has none."""
    from rlaudit.init.layer_schemes import compare_init

    pair = probe_evidence(probes.init_stats, init_params, "init: fresh networks")(wb)
    if not pair.ok:
        return None
    params = {s: pd.DataFrame(pair[s].json("params")) for s in SIDES}
    table = compare_init(
        pair.baseline.json("tree"), pair.candidate.json("tree"), params["baseline"], params["candidate"]
    )
    return table, params, {s: pair[s].npz("singular") for s in SIDES}


def scheme_explorer(wb: Workbench) -> Any:
    """The layer picker (JupyterLab: live; the report: the first parameter initialized differently)."""

    found = evidence(wb)
    rows = layers(*found) if found is not None else []
    if not rows:
        text = (
            "No layer picker: the fresh-network probe wrote no parameters on both sides (see init/schemes)."
        )
        return nothing_to_explore(text)
    return layer_picker(rows)


def layer_picker(rows: list[Layer]) -> Explorer:
    """The explorer over prepared :class:`Layer` rows (see :func:`scheme_explorer`)."""
    options = [(layer.label, i) for i, layer in enumerate(rows)]
    # the report's figure: the first parameter initialized differently, else the first matrix (a spectrum)
    first = next((i for i, layer in enumerate(rows) if not layer.same), None)
    if first is None:
        first = next((i for i, layer in enumerate(rows) if any(layer.spectra.values())), 0)

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        from matplotlib.ticker import MaxNLocator

        ax_sv, ax_std = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.27, top=0.86, wspace=0.3)
        most = max([len(s) for layer in rows for side in SIDES for s in [layer.spectra.get(side, [])]] + [1])
        lines = {
            side: [
                ax_sv.plot([], [], color=SIDE_COLORS[side], alpha=0.7, linestyle=style)[0]
                for _ in range(most)
            ]
            for side, style in zip(SIDES, ("-", "--"), strict=True)
        }
        for side in SIDES:
            lines[side][0].set_label(side)
        expected_sv = ax_sv.axhline(
            np.nan, color=EXPECTED_COLOR, linestyle=":", linewidth=1.5, label="expected"
        )
        vector_note = ax_sv.text(
            0.5, 0.5, "", transform=ax_sv.transAxes, ha="center", va="center", fontsize=9, color="grey"
        )
        ax_sv.set_xlabel("singular value index (largest first)")
        ax_sv.legend(loc="lower right", fontsize="small")
        ax_sv.grid(alpha=0.3)
        points = {
            side: ax_std.plot(
                [], [], "o", color=SIDE_COLORS[side], markersize=6, label=f"{side} (each seed)"
            )[0]
            for side in SIDES
        }
        expected_std = {
            side: ax_std.plot(
                [],
                [],
                color=EXPECTED_COLOR,
                linestyle=":" if side == "baseline" else "-.",
                linewidth=1.5,
                label=f"expected for the {side}'s shape",
            )[0]
            for side in SIDES
        }
        ax_std.set_xlabel("torch seed")
        ax_std.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax_std.set_ylabel("std of the entries")
        ax_std.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), fontsize="x-small", ncol=2)
        ax_std.grid(alpha=0.3)
        caption = fig.text(0.08, 0.02, "", fontsize=8, va="bottom")
        return {
            "ax_sv": ax_sv, "ax_std": ax_std, "lines": lines, "expected_sv": expected_sv,
            "vector_note": vector_note, "points": points, "expected_std": expected_std, "caption": caption,
        }  # fmt: skip

    def update(art: dict[str, Any], values: dict[str, Any]) -> None:
        layer = rows[int(values["parameter"])]
        exp = layer.expected
        gain = exp[1] if exp is not None and exp[0] == "orthogonal" else None
        scale = gain if values["relative"] and gain else 1.0
        top = 0.0
        for side in SIDES:
            spectra = layer.spectra.get(side, [])
            for i, line in enumerate(art["lines"][side]):
                if i < len(spectra):
                    v = spectra[i] / scale
                    line.set_data(np.arange(1, len(v) + 1), v)
                    line.set_marker("." if len(v) < 3 else "")
                    line.set_visible(True)
                    top = max(top, float(np.max(v)) if v.size else 0.0)
                else:
                    line.set_data([], [])
                    line.set_visible(False)
        longest = max((len(s) for side in SIDES for s in layer.spectra.get(side, [])), default=0)
        ax_sv = art["ax_sv"]
        if gain is not None and longest:
            art["expected_sv"].set_ydata([gain / scale, gain / scale])
            art["expected_sv"].set_visible(True)
            top = max(top, gain / scale)
        else:
            art["expected_sv"].set_visible(False)
        art["vector_note"].set_text(
            "" if longest else "a vector (or absent): no spectrum; its entries' std is on the right"
        )
        ax_sv.set_xlim(0.5, max(longest, 1) + 0.5)
        # from zero: a flat (orthogonal) spectrum must look flat, not magnified by an offset axis
        ax_sv.set_ylim(0.0, top * 1.15 if top > 0 else 1.0)
        ax_sv.set_ylabel("singular value / expected gain" if scale != 1.0 else "singular value")
        names = layer.names
        title = names["baseline"] or "—"
        if names["candidate"] != names["baseline"]:
            title += f" | {names['candidate'] or '—'}"
        verdict = "same scheme and gain" if layer.same else "initialized differently"
        ax_sv.set_title(
            f"{title} ({layer.role}): {verdict}", fontsize="small", color="black" if layer.same else "#c0392b"
        )
        ax_std = art["ax_std"]
        ys, xs = [], []
        for side in SIDES:
            seeds, stds = layer.stds.get(side, (np.zeros(0), np.zeros(0)))
            art["points"][side].set_data(seeds, stds)
            xs.extend(seeds.tolist())
            ys.extend(stds.tolist())
        low, high = (min(xs) - 0.5, max(xs) + 0.5) if xs else (-0.5, 0.5)
        for side in SIDES:
            expected = layer.expected_std(side)
            line = art["expected_std"][side]
            if expected is None:
                line.set_data([], [])
                line.set_visible(False)
            else:
                line.set_data([low, high], [expected, expected])
                line.set_visible(True)
                ys.append(expected)
        finite = [y for y in ys if math.isfinite(y)]
        top_std = max(finite, default=0.0)
        ax_std.set_xlim(low, high)
        ax_std.set_ylim(0.0, top_std * 1.2 if top_std > 0 else 1.0)
        ax_std.set_title("entry std, measured and expected", fontsize="small")
        art["caption"].set_text(
            f"baseline: {layer.scheme['baseline']}   ·   candidate: {layer.scheme['candidate']}\n"
            f"{layer.expected_text()}"
        )

    return Explorer(
        title="Layer picker: initialization scheme and gain, both sides against the PPO expectation",
        controls=[
            choice("parameter", options, value=first, label="parameter"),
            toggle("relative", False, label="singular values relative to the expected gain"),
        ],
        setup=setup,
        update=update,
        figsize=(9.0, 4.6),
    )


__all__ = ["Layer", "evidence", "layer_picker", "layers", "scheme_explorer"]
