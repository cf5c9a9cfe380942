"""The variant and probe picker of 09_loss: each subject's ``compute_advantages`` against one advantage
estimator of :data:`rlaudit.loss.gae.VARIANTS` (the reference GAE or a known mistake), on one staged probe
input (the random inputs or the impulse), advantages or returns, both sides.

Left and middle, each side's answer against the picked variant's (computed with that side's own gamma and
lambda, as ``loss/advantages`` compares them): on the diagonal where the subject computes that variant. Right,
the environment where a side departs most from the variant, step by step, with its episode ends and
truncations. It reads the cached runs of ``loss/advantages``; the variants are computed once when the picker is
built, so a control change only indexes prepared arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rlaudit.checks import SIDES
from rlaudit.explore import Explorer, choice
from rlaudit.loss.gae import VARIANTS
from rlaudit.trainer.plots import SIDE_COLORS

if TYPE_CHECKING:
    from rlaudit.engine.workbench import Workbench

PROBES = {
    "random:advantages": "advantages on the random inputs",
    "random:returns": "returns on the random inputs",
    "impulse:advantages": "advantages on the impulse",
    "impulse:returns": "returns on the impulse",
}
"""The picker's probe options: ``"<staged input>:<quantity>"`` -> label."""
DESCRIPTIONS = {v.name: v.description for v in VARIANTS}


@dataclass
class SideAnswers:
    """One side's ``compute_advantages`` on the staged inputs, and how ``loss/advantages`` read it.

    Attributes:
        gamma, gae_lambda: The discount and lambda the side is compared under (declared, or solved).
        truncation: The side was given truncation flags (the truncation variants are testable).
        inputs: ``{"random" | "impulse": arrays}``: what it was given (``rewards``, ``values``, ``dones``,
            ``next_value``, ``truncated``, ``final_values``) and what it returned (``advantages``, ``returns``).
        matches: The variants it matches.
    """

    gamma: float
    gae_lambda: float
    truncation: bool
    inputs: dict[str, dict[str, np.ndarray]]
    matches: tuple[str, ...] = ()


def evidence(wb: Workbench, seed: int = 0) -> dict[str, SideAnswers] | None:
    """Both sides' answers from the cached ``loss/advantages`` runs, or None when a side has none."""
    from rlaudit.loss.advantages import advantage_pairs, read_estimator

    random, impulse = advantage_pairs(wb, seed=seed)
    if not (random.ok and impulse.ok):
        return None
    out = {}
    for side in SIDES:
        est = read_estimator(side, random[side], impulse[side])
        out[side] = SideAnswers(
            gamma=est.gamma,
            gae_lambda=est.gae_lambda,
            truncation=est.mode == "kwargs",
            inputs={"random": est.arrays, "impulse": impulse[side].npz("advantages")},
            matches=tuple(r["variant"] for r in est.rows if r["match"]),
        )
    return out


def variant_answers(side: SideAnswers) -> dict[tuple[str, str], dict[str, np.ndarray] | None]:
    """``{(variant, input): {"advantages", "returns"}}`` under the side's gamma and lambda (None: not testable,
    a truncation variant for a side given no truncation flags)."""
    out: dict[tuple[str, str], dict[str, np.ndarray] | None] = {}
    for variant in VARIANTS:
        for name, a in side.inputs.items():
            if variant.needs_truncation and not side.truncation:
                out[(variant.name, name)] = None
                continue
            trunc = (a.get("truncated"), a.get("final_values")) if side.truncation else (None, None)
            adv, ret = variant.fn(
                a["rewards"], a["values"], a["dones"], a["next_value"], side.gamma, side.gae_lambda, *trunc
            )
            out[(variant.name, name)] = {
                "advantages": np.asarray(adv, float),
                "returns": np.asarray(ret, float),
            }
    return out


def advantages_explorer(wb: Workbench, seed: int = 0) -> Any:
    """The variant and probe picker (JupyterLab: live; the report: the candidate's matched variant)."""
    return variant_picker(evidence(wb, seed=seed))


def variant_picker(sides: dict[str, SideAnswers] | None) -> Any:
    """The explorer over both sides' answers (see :func:`advantages_explorer`), or a line saying why there is none."""
    from rlaudit.display import RichText

    if not sides or set(sides) != set(SIDES):
        text = "No variant picker: compute_advantages gave no answers on both sides (see loss/advantages)."
        return RichText(f'<p class="rl-muted">{text}</p>', text)
    computed = {side: variant_answers(sides[side]) for side in SIDES}
    names = [v.name for v in VARIANTS]
    wrong = [v for v in sides["candidate"].matches if v != "correct"] or [
        v for v in sides["baseline"].matches if v != "correct"
    ]
    start = wrong[0] if wrong else "correct"

    def setup(fig: Any, values: dict[str, Any]) -> Any:
        axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 1.6]})
        fig.subplots_adjust(left=0.06, right=0.99, bottom=0.25, top=0.8, wspace=0.35)
        art: dict[str, Any] = {"axes": dict(zip(SIDES, axes[:2], strict=True)), "ax_t": axes[2]}
        art["scatter"], art["diagonal"], art["note"] = {}, {}, {}
        for side in SIDES:
            ax = art["axes"][side]
            art["scatter"][side] = ax.scatter([], [], s=8, alpha=0.6, color=SIDE_COLORS[side])
            art["diagonal"][side] = ax.plot([], [], color="black", linewidth=0.8, linestyle="--")[0]
            art["note"][side] = ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center", va="center",
                                        fontsize=8, color="grey", wrap=True)  # fmt: skip
            ax.grid(alpha=0.3)
        ax_t = art["ax_t"]
        art["subject"] = {
            s: ax_t.plot([], [], color=SIDE_COLORS[s], linewidth=1.6, label=s)[0] for s in SIDES
        }
        art["variant"] = {
            s: ax_t.plot(
                [], [], color=SIDE_COLORS[s], linestyle=":", linewidth=1.6, label=f"variant ({s}'s γ, λ)"
            )[0]
            for s in SIDES
        }
        art["ends"] = ax_t.vlines([], 0, 1, color="grey", linewidth=0.8, label="episode end")
        art["truncs"] = ax_t.vlines(
            [], 0, 1, color="#8e44ad", linestyle="--", linewidth=0.8, label="truncation"
        )
        ax_t.set_xlabel("step t")
        ax_t.grid(alpha=0.3)
        ax_t.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=3, fontsize="x-small")
        art["caption"] = fig.text(0.06, 0.93, "", fontsize=9)
        return art

    def update(art: dict[str, Any], values: dict[str, Any]) -> None:
        variant = values["variant"]
        source, quantity = values["probe"].split(":")
        worst: dict[str, float] = {}
        column_err: dict[str, np.ndarray] = {}
        for side in SIDES:
            ax = art["axes"][side]
            theirs = sides[side].inputs[source][quantity].astype(float)
            ref = computed[side][(variant, source)]
            if ref is None:
                art["scatter"][side].set_offsets(np.empty((0, 2)))
                art["diagonal"][side].set_data([], [])
                art["note"][side].set_text(
                    "not testable: this side's\ncompute_advantages gets\nno truncation flags"
                )
                ax.set_title(f"{side}: not testable", fontsize="small")
                continue
            expected = ref[quantity]
            art["note"][side].set_text("")
            art["scatter"][side].set_offsets(np.column_stack([expected.reshape(-1), theirs.reshape(-1)]))
            both = np.concatenate([expected.reshape(-1), theirs.reshape(-1)])
            lo, hi = float(both.min()), float(both.max())
            pad = 0.05 * (hi - lo) or 0.05
            art["diagonal"][side].set_data([lo - pad, hi + pad], [lo - pad, hi + pad])
            ax.set_xlim(lo - pad, hi + pad)
            ax.set_ylim(lo - pad, hi + pad)
            diff = np.abs(theirs - expected)
            worst[side] = float(diff.max())
            column_err[side] = diff.max(axis=0)
            scale = max(1.0, float(np.abs(expected).max()))
            same = worst[side] <= 1e-4 * scale
            ax.set_title(
                f"{side}: {'matches' if same else 'differs'} (max |diff| {worst[side]:.3g})",
                fontsize="small",
                color="black" if same else "#c0392b",
            )
            ax.set_xlabel(f"{variant}: {quantity}")
            ax.set_ylabel(f"the {side}'s {quantity}")
        # the environment (column) where either side departs most from the variant
        errs = [e for e in column_err.values()]
        col = int(np.argmax(np.max(np.vstack(errs), axis=0))) if errs else 0
        ax_t = art["ax_t"]
        ys = []
        for side in SIDES:
            theirs = sides[side].inputs[source][quantity][:, col].astype(float)
            steps = np.arange(len(theirs))
            art["subject"][side].set_data(steps, theirs)
            ys.append(theirs)
            ref = computed[side][(variant, source)]
            if ref is None:
                art["variant"][side].set_data([], [])
            else:
                art["variant"][side].set_data(steps, ref[quantity][:, col])
                ys.append(ref[quantity][:, col])
        arrays = sides["baseline"].inputs[source]
        allv = np.concatenate(ys)
        lo, hi = float(allv.min()), float(allv.max())
        pad = 0.05 * (hi - lo) or 0.05
        truncated = np.asarray(arrays.get("truncated", np.zeros_like(arrays["dones"])), bool)[:, col]
        dones = np.asarray(arrays["dones"], bool)[:, col] & ~truncated
        art["ends"].set_segments([[(t, lo - pad), (t, hi + pad)] for t in np.flatnonzero(dones)])
        art["truncs"].set_segments([[(t, lo - pad), (t, hi + pad)] for t in np.flatnonzero(truncated)])
        ax_t.set_xlim(-0.5, len(arrays["dones"]) - 0.5)
        ax_t.set_ylim(lo - pad, hi + pad)
        ax_t.set_ylabel(quantity)
        ax_t.set_title(
            f"environment {col} (the largest difference)\n{PROBES[values['probe']]}", fontsize="small"
        )
        art["caption"].set_text(f"{variant}: {DESCRIPTIONS[variant]}")

    return Explorer(
        title="Variant and probe picker: each side's compute_advantages against an advantage estimator",
        controls=[
            choice("variant", names, value=start, label="variant"),
            choice(
                "probe", [(label, key) for key, label in PROBES.items()], label="probe input and quantity"
            ),
        ],
        setup=setup,
        update=update,
        figsize=(11.0, 4.2),
    )


__all__ = ["PROBES", "SideAnswers", "advantages_explorer", "evidence", "variant_answers", "variant_picker"]
