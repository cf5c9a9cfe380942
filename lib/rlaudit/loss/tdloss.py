"""Loss audit, the loss on the TD error: which function of the TD error each off-policy critic minimises.

SB3's DQN regresses Q on its TD targets with a Huber loss (smooth L1, threshold 1), CleanRL's DQN and every
SAC or TD3 critic with a squared error. A refactor that swaps one for the other, moves Huber's threshold, sums
over the batch where it averaged or drops a ½ changes learning with nothing in the config. The probe
(:func:`rlaudit.loss.probes.td_loss`) records the subject's own loss with every target shifted by ``s`` (every
row of its batch sharing one TD error), and the curve ``L(s) - L(0)`` gives the loss away without reading Q:

- the form: quadratic tails (``L(1000) / L(100)`` about 100: a squared error) or linear ones (about 10: Huber,
  smooth L1, absolute error);
- Huber's threshold, where the quadratic turns linear: the straight tail ``S |s| + b`` crosses zero at
  ``b = -S κ / 2`` (κ 0 is the absolute error);
- the scale against the canonical per-row loss (``F.mse_loss``, ``F.smooth_l1_loss(beta=κ)``, ``F.l1_loss``,
  each averaged over the batch): ½ for ``0.5 * mse``, 2 for two critics' losses summed (TD3), the batch size
  for a sum over rows instead of a mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.io import read_table
from rlaudit.engine.workbench import Pair
from rlaudit.evidence import fmt
from rlaudit.findings import Severity, Status
from rlaudit.loss import probes
from rlaudit.notebook import Section

NEAR, FAR = 100.0, 1000.0
"""The two shifts whose losses give the tail: their ratio is 100 for a quadratic and 10 for a linear one."""
QUADRATIC_GROWTH = 50.0
"""A tail growing by more than this from ``NEAR`` to ``FAR`` (10x the shift) is quadratic."""
LINEAR_GROWTH = (8.0, 20.0)
"""One growing by a factor in this range is linear (Huber: 10 plus a little for the threshold); one that grows
less (a loss capped at some error) has no named form."""
THRESHOLD_TOL = 0.05
"""Two Huber thresholds agree within this relative difference (or 0.02 absolute)."""
SCALE_TOL = 0.02
"""Two scales agree within this relative difference."""
QUAD_TOL = 0.05
"""Huber's quadratic part agrees with its tail (coefficient ``S / 2κ``) within this relative difference."""
L1_THRESHOLD = 0.02
"""A linear tail whose threshold is below this is the absolute error (L1)."""

QUANTITIES = ("form", "threshold", "scale")


def _tail(f: Mapping[float, float], sign: float) -> tuple[float, float, float]:
    """``(growth, slope, threshold)`` of one side's tail (``sign`` +1 or -1)."""
    near, far = f[sign * NEAR], f[sign * FAR]
    growth = far / near if near > 0 else math.inf
    slope = (far - near) / (FAR - NEAR)
    intercept = far - slope * FAR  # the straight tail S |s| + b: Huber's b is -S κ / 2
    threshold = -2.0 * intercept / slope if slope > 0 else math.nan
    return growth, slope, threshold


def loss_form(table: pd.DataFrame) -> dict[str, Any]:
    """The form, threshold and scale of a TD loss from its curve.

    Args:
        table: The probe's ``td_loss`` table: ``shift`` (relative to the shift where the loss is least, both
            signs of each of :data:`rlaudit.loss.probes.TD_LOSS_SHIFTS`) and ``loss``.

    Returns:
        ``form`` (``MSE``, ``Huber``, ``L1``, ``asymmetric`` or ``other``), ``threshold`` (Huber's κ; 0 for L1,
        NaN otherwise), ``scale`` (against the canonical averaged loss: the squared error's coefficient, or
        the tail's slope), ``growth`` and ``slope`` per side, and ``curve`` (shift -> ``L(s) - L(0)``).
    """
    shift = table["shift"].to_numpy(dtype=float)
    loss = table["loss"].to_numpy(dtype=float)
    zero = float(loss[np.argmin(np.abs(shift))])
    f = {float(s): float(v) - zero for s, v in zip(shift, loss, strict=True)}
    for needed in (NEAR, FAR):
        if needed not in f or -needed not in f:
            raise ValueError(f"the td_loss table lacks the shifts ±{needed:g}; it has {sorted(f)}")
    tails = {"right": _tail(f, 1.0), "left": _tail(f, -1.0)}
    kinds = {
        side: "quadratic"
        if g > QUADRATIC_GROWTH
        else "linear"
        if LINEAR_GROWTH[0] <= g <= LINEAR_GROWTH[1]
        else "other"
        for side, (g, _, _) in tails.items()
    }
    out: dict[str, Any] = {
        "growth": {side: t[0] for side, t in tails.items()},
        "slope": {side: t[1] for side, t in tails.items()},
        "curve": f,
        "threshold": math.nan,
    }
    right, left = tails["right"], tails["left"]
    if kinds["right"] != kinds["left"] or not math.isclose(right[1], left[1], rel_tol=SCALE_TOL):
        out.update(form="asymmetric", scale=math.nan)
    elif kinds["right"] == "quadratic":
        coefficient = (f[10.0] + f[-10.0]) / 200.0
        out.update(form="MSE", scale=coefficient)
        # a squared error is quadratic everywhere: the loss at ±1 has the tail's coefficient too
        if not math.isclose((f[1.0] + f[-1.0]) / 2.0, coefficient, rel_tol=QUAD_TOL):
            out["form"] = "other"
    elif kinds["right"] == "linear":
        slope = (right[1] + left[1]) / 2.0
        threshold = max(0.0, (right[2] + left[2]) / 2.0)
        out.update(scale=slope)
        if threshold < L1_THRESHOLD:
            out.update(form="L1", threshold=0.0)
        else:
            out.update(form="Huber", threshold=threshold)
            # below the threshold Huber is (S / 2κ) s²: check it on the largest shift inside it
            inside = [s for s in probes.TD_LOSS_SHIFTS if 0 < s <= 0.5 * threshold]
            if inside:
                s = max(inside)
                if not math.isclose((f[s] + f[-s]) / (2 * s * s), slope / (2 * threshold), rel_tol=QUAD_TOL):
                    out["form"] = "other"
    else:
        out.update(form="other", scale=math.nan)
    return out


def label(q: Mapping[str, Any]) -> str:
    """``MSE``, ``Huber (δ=1)``, ``L1``, ... with the scale when it is not 1 (``MSE ×0.5``)."""
    form = q["form"]
    name = f"Huber (δ={fmt(q['threshold'])})" if form == "Huber" else form
    scale = q.get("scale", math.nan)
    if isinstance(scale, float) and math.isfinite(scale) and not math.isclose(scale, 1.0, rel_tol=SCALE_TOL):
        name += f" ×{fmt(scale)}"
    return name


def scale_change(ratio: float, batch_size: int) -> str:
    """Words for a candidate scale ``ratio`` times the baseline's."""
    if math.isclose(ratio, batch_size, rel_tol=SCALE_TOL):
        return f"mean → sum over {batch_size} rows"
    if math.isclose(ratio, 1.0 / batch_size, rel_tol=SCALE_TOL):
        return f"sum → mean over {batch_size} rows"
    if math.isclose(ratio, 2.0, rel_tol=SCALE_TOL):
        return "scale ×2 (a 0.5 factor dropped, or a second critic's loss added)"
    if math.isclose(ratio, 0.5, rel_tol=SCALE_TOL):
        return "scale ×0.5 (a 0.5 factor added, or a critic's loss dropped)"
    return f"scale ×{fmt(ratio)}"


def compare(b: Mapping[str, Any], c: Mapping[str, Any], batch_size: int) -> list[tuple[str, str]]:
    """What differs between two sides' loss forms, as ``(quantity, words)``; empty when they agree."""
    if b["form"] != c["form"]:
        return [("form", f"{label(b)} → {label(c)}")]
    if b["form"] in ("other", "asymmetric"):
        # no named form: the curves themselves must agree
        same = all(
            math.isclose(b["curve"][s], c["curve"].get(s, math.nan), rel_tol=SCALE_TOL, abs_tol=1e-9)
            for s in b["curve"]
        )
        return [] if same else [("form", f"the loss curve differs ({b['form']} on both sides)")]
    out = []
    if b["form"] == "Huber" and not math.isclose(
        b["threshold"], c["threshold"], rel_tol=THRESHOLD_TOL, abs_tol=0.02
    ):
        out.append(("threshold", f"Huber threshold δ {fmt(b['threshold'])} → {fmt(c['threshold'])}"))
    if not math.isclose(b["scale"], c["scale"], rel_tol=SCALE_TOL):
        out.append(("scale", scale_change(c["scale"] / b["scale"], batch_size)))
    return out


REMEDIES = {
    "form": "Restore the baseline's loss on the TD error (SB3's DQN: F.smooth_l1_loss; CleanRL's DQN, SAC and "
    "TD3: F.mse_loss): a squared error lets a few large TD errors dominate the gradient, a Huber or absolute "
    "error clips their pull.",
    "threshold": "Use the baseline's Huber threshold (smooth_l1_loss beta / huber_loss delta): it sets where a "
    "TD error stops pulling quadratically.",
    "scale": "Reduce the critic loss as the baseline does (mean over the batch, the same factor, the same "
    "critics summed): the scale multiplies the gradient, which gradient clipping and SGD do not undo.",
}


def _figure(q: Mapping[str, Mapping[str, Any]]):  # -> Figure
    from rlaudit.trainer.plots import SIDE_COLORS, figure

    fig, axes = figure(1, width=5.2, height=3.4)
    ax = axes[0]
    for side in SIDES:
        curve = q[side]["curve"]
        xs = sorted(s for s in curve if s > 0)
        ys = [(curve[s] + curve[-s]) / 2 for s in xs]
        ax.loglog(xs, ys, marker="o", ms=3, color=SIDE_COLORS[side], label=f"{side}: {label(q[side])}")
    ax.set_xlabel("target shift |s| (TD error)")
    ax.set_ylabel("L(s) − L(0)")
    ax.set_title("critic loss against the TD error (slope 2: squared, 1: linear)", fontsize=9)
    ax.legend(fontsize=8)
    return fig


def _measured(q: Mapping[str, Any]) -> dict[str, Any]:
    """What a clearance compares: the form, and its threshold and scale, or, for no named form, the curve's far
    end (the curves are compared point by point)."""
    if q["form"] in ("other", "asymmetric"):
        return {"form": q["form"], f"L(±{fmt(FAR)})": (q["curve"][FAR] + q["curve"][-FAR]) / 2}
    return {
        "form": q["form"],
        "scale": q["scale"],
        **({"threshold": q["threshold"]} if q["form"] == "Huber" else {}),
    }


@check(
    "loss/td-loss-form",
    title="Is the TD error penalised the same way?",
    probe=probes.td_loss,
    desc="loss: TD loss form",
)
def td_loss_form(c: Check, pair: Pair) -> Section:
    """Both critics minimise the same function of the TD error: same form, Huber threshold and scale.

    ``compute_td_loss`` on one batch whose rows share a transition, against the subject's own targets shifted
    by ±0.25 to ±1000: quadratic or linear growth, where it turns, and its scale (mean or sum, a ½, two critics).
    """
    q = {side: loss_form(read_table(pair[side].dir / "td_loss")) for side in SIDES}
    batch_size = int(pair["baseline"].result.get("batch_size", 0))
    shifts = sorted(s for s in q["baseline"]["curve"] if s > 0)
    table = pd.DataFrame(
        [
            {"quantity": "form", **{s: label(q[s]) for s in SIDES}},
            {"quantity": "Huber threshold", **{s: fmt(q[s]["threshold"]) for s in SIDES}},
            {"quantity": "scale", **{s: fmt(q[s]["scale"]) for s in SIDES}},
            {
                "quantity": f"L({fmt(FAR)}) / L({fmt(NEAR)})",
                **{s: fmt(float(np.mean(list(q[s]["growth"].values())))) for s in SIDES},
            },
            {"quantity": "TD error at L's minimum", **{s: fmt(pair[s].result.get("centre")) for s in SIDES}},
        ]
    )
    curve = pd.DataFrame(
        [
            {"shift": f"±{fmt(x)}", **{s: fmt((q[s]["curve"][x] + q[s]["curve"][-x]) / 2) for s in SIDES}}
            for x in shifts
        ]
    )
    measured = {s: _measured(q[s]) for s in SIDES}
    details = {
        "table": table.to_dict("records"),
        "batch_size": batch_size,
        **{s: {k: q[s][k] for k in ("form", "threshold", "scale", "growth", "slope")} for s in SIDES},
    }
    changed = compare(q["baseline"], q["candidate"], batch_size)
    figures = {"TD loss curve": _figure(q)}
    tables = {"TD loss form": table, "L(s) - L(0)": curve}
    if changed:
        severity = Severity.MEDIUM if {k for k, _ in changed} == {"scale"} else Severity.HIGH
        finding = c.finding(
            Status.CONFIRMED,
            severity,
            values=measured,
            summary="the candidate's critic loss on the TD error differs: "
            + "; ".join(w for _, w in changed),
            remediation=" ".join(REMEDIES[k] for k in dict.fromkeys(k for k, _ in changed)),
            details=details,
            figures=list(figures),
        )
    else:
        finding = c.finding(
            Status.CLEARED,
            measured=measured,
            summary=f"same loss on the TD error: {label(q['baseline'])}, scale {fmt(q['baseline']['scale'])} "
            f"(mean over the batch is 1), over shifts ±{fmt(shifts[0])} to ±{fmt(shifts[-1])}",
            details=details,
            figures=list(figures),
        )
    return c.section(finding, tables=tables, figures=figures)
