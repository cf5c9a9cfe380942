"""Loss audit, loss terms: both subjects' ``compute_loss`` on one identical batch with the same weights, and
the coefficient each term carries in the total.

The shared batch is designed so that the value loss is small, as it is late in training (where a floor such as
case 003's ``torch.max(free_bits, loss)`` bites). Beside it, a sweep of batches (value targets shifted by known
amounts, other advantages, behaviour log-probabilities and observations) lets the total be solved for the
weight of each term by least squares, on each side separately, so a verdict names the changed quantity:
"value-loss coefficient 0.5 → 5", "entropy coefficient 0.01 → -0.01: the sign flipped". The shifted targets
also give the scale of the value loss against the squared error (½ in CleanRL-style trainers; 1 in
Stable-Baselines3, whose value loss has no ½: a known factor 2 between the two styles, not a regression), or
show it has none (a Huber loss grows linearly there; one on per-batch normalized targets does not move), and a
last batch with the behaviour values moved shows whether the value loss is clipped around them. On the shared
batch a Huber or unclipped value loss equals the reference's, so only these forms tell them apart; a form
measured on one side only is a difference, never a clearance (:func:`rlaudit.evidence.coverage`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check, run_probe
from rlaudit.engine.workbench import SIDES, Pair, Workbench
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.loss import plots, probes
from rlaudit.loss.inputs import stage_for
from rlaudit.notebook import Section

BATCH_SIZE = 512
VALUE_TARGET_NOISE = 0.1  # value targets = V(s) + N(0, 0.1): a value loss of ~0.005, as late in training
TERM_RTOL = 1e-4  # loss terms on identical inputs and weights agree to float32 rounding
COEF_RTOL = 1e-3  # solved coefficients agree to this (relative), plus COEF_ATOL
COEF_ATOL = 1e-4
CORE_TERMS = ("loss", "policy_loss", "value_loss", "entropy")
TARGET_SHIFTS = (2.0, 3.0, 4.0, 5.0)
"""Value targets of the shared batch moved by these amounts (sweep batches 1-4): a squared error's second
difference over unit steps is 2 × its scale, whatever the targets were (large enough that a floor does not
bite)."""
FIT_BATCHES = 6
"""Further sweep batches with their own observations, actions, advantages, behaviour log-probabilities and
value targets, so that the terms vary independently."""
VALUE_OFFSET = 3.0
"""The last sweep batch is the shared batch with its behaviour values moved by this much and its targets kept: a
value loss clipped around the behaviour values (PPO's ``clip_vloss``, clip range ε well below 3) grows to about
½(3 - ε)², above any loss floor worth the name; an unclipped one does not move at all."""
OFFSET_BATCH = 1 + len(TARGET_SHIFTS) + FIT_BATCHES
"""Index of that batch in :func:`sweep_batches`."""
TERM_NAMES = {"policy_loss": "policy-loss", "value_loss": "value-loss", "entropy": "entropy"}


@dataclass
class SharedBatch:
    """The evidence of the loss-terms and gradient checks.

    Attributes:
        pair: The :func:`rlaudit.loss.probes.loss_terms` pair on the shared batch, or the snapshot pair when no
            batch fits both sides (then ``info["batch"]`` is None).
        info: ``weights`` (staged path or None), ``batch`` (staged path or None), ``batch_arrays``,
            ``reason`` (why no identical batch or weights), ``own_outputs`` (the batch's values and
            log-probabilities are the baseline network's own), ``output_gap`` (with shared weights: the largest
            difference between the two networks' values or log-probabilities on the batch; None when unknown).
        sweep: The :func:`rlaudit.loss.probes.term_sweep` pair (None when not asked for or no batch).
    """

    pair: Pair
    info: dict[str, Any]
    sweep: Pair | None = None

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        for pair in (self.pair, self.sweep):
            if pair is not None and (found := pair.guard(id, subsystem, hypothesis)) is not None:
                return found
        return None


def make_batch(
    obs_shape: list[int],
    n_actions: int,
    size: int,
    seed: int,
    values: np.ndarray | None,
    logprobs: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """A loss batch whose value targets sit close to the value predictions (a small value loss).

    Args:
        obs_shape: One observation's shape.
        n_actions: Discrete actions.
        size: Samples.
        seed: Seed of every draw.
        values: (size,) the network's own values on the batch's observations (None: drawn N(0, 1)).
        logprobs: (size,) its log-probabilities of the batch's actions (None: a uniform behaviour policy).

    Returns:
        ``obs`` (size, *obs_shape), ``actions``, ``logprobs``, ``advantages`` N(0, 1), ``returns`` =
        values + N(0, :data:`VALUE_TARGET_NOISE`), ``values``.
    """
    rng = np.random.default_rng(seed)
    obs = rng.normal(0.0, 1.0, (size, *obs_shape)).astype(np.float32)
    actions = rng.integers(0, n_actions, size).astype(np.int64)
    v = rng.normal(0.0, 1.0, size) if values is None else np.asarray(values, dtype=np.float64)
    lp = np.full(size, -math.log(n_actions)) if logprobs is None else np.asarray(logprobs, dtype=np.float64)
    return {
        "obs": obs,
        "actions": actions,
        "logprobs": lp.astype(np.float32),
        "advantages": rng.normal(0.0, 1.0, size).astype(np.float32),
        "returns": (v + rng.normal(0.0, VALUE_TARGET_NOISE, size)).astype(np.float32),
        "values": v.astype(np.float32),
    }


def sweep_batches(batch: Mapping[str, np.ndarray], n_actions: int, seed: int) -> dict[str, np.ndarray]:
    """The shared batch (0), its value targets shifted by :data:`TARGET_SHIFTS` (1-4), :data:`FIT_BATCHES`
    independent batches, and the shared batch with its behaviour values moved by :data:`VALUE_OFFSET`
    (:data:`OFFSET_BATCH`), as staged arrays ``b<k>_<name>``.

    The independent batches draw observations N(0, s²) with s from 0.5 to 16 (so the policy's entropy
    moves), behaviour log-probabilities off by N(0, σ²) (so the importance ratio, and the policy loss, moves),
    advantages of several scales and value targets N(0, r²) with r from 1.5 to 5.
    """
    rng = np.random.default_rng(seed + 7919)
    size = len(batch["actions"])
    obs_shape = batch["obs"].shape[1:]
    out: dict[str, np.ndarray] = {f"b0_{k}": np.asarray(v) for k, v in batch.items()}
    for i, shift in enumerate(TARGET_SHIFTS, start=1):
        for k, v in batch.items():
            out[f"b{i}_{k}"] = (np.asarray(v) + np.float32(shift)) if k == "returns" else np.asarray(v)
    obs_scales = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    logp_noise = (0.05, 0.8, 0.2, 0.5, 0.1, 0.3)
    adv_scales = (1.0, 0.3, 2.0, 0.7, 1.5, 3.0)
    target_scales = (2.0, 4.0, 1.5, 5.0, 3.0, 2.5)
    base = len(TARGET_SHIFTS) + 1
    for j in range(FIT_BATCHES):
        k = base + j
        out[f"b{k}_obs"] = rng.normal(0.0, obs_scales[j], (size, *obs_shape)).astype(np.float32)
        out[f"b{k}_actions"] = rng.integers(0, n_actions, size).astype(np.int64)
        out[f"b{k}_logprobs"] = (-math.log(n_actions) + rng.normal(0.0, logp_noise[j], size)).astype(
            np.float32
        )
        out[f"b{k}_advantages"] = rng.normal(0.2 * j, adv_scales[j], size).astype(np.float32)
        out[f"b{k}_returns"] = rng.normal(0.0, target_scales[j], size).astype(np.float32)
        out[f"b{k}_values"] = rng.normal(0.0, 1.0, size).astype(np.float32)
    for k, v in batch.items():
        out[f"b{OFFSET_BATCH}_{k}"] = (
            (np.asarray(v) + np.float32(VALUE_OFFSET)) if k == "values" else np.asarray(v)
        )
    return out


def shared_batch(wb: Workbench, seed: int = 0, *, sweep: bool = False) -> SharedBatch:
    """Stage the shared weights and batch, then run the loss probe (and with ``sweep`` the term sweep) on both
    sides. Without a batch that fits both (the spaces differ), the snapshot pair with the reason."""
    snap = run_probe(wb, probes.policy_snapshot, "loss: networks", seed=seed)
    info: dict[str, Any] = {
        "weights": None,
        "batch": None,
        "reason": None,
        "own_outputs": False,
        "output_gap": None,
    }
    if not snap.ok:
        return SharedBatch(snap, info)
    spaces = {s: snap[s].result for s in SIDES}
    structured = [s for s in SIDES if not spaces[s].get("obs_array", True)]
    if structured:
        info["reason"] = (
            f"the {' and '.join(structured)} observations are not one array (a Dict or Tuple space): the shared "
            "batch is an array of observations"
        )
        return SharedBatch(snap, info)
    if spaces["baseline"]["obs_shape"] != spaces["candidate"]["obs_shape"] or (
        spaces["baseline"]["n_actions"] != spaces["candidate"]["n_actions"]
    ):
        info["reason"] = (
            f"the spaces differ (observations {spaces['baseline']['obs_shape']} vs "
            f"{spaces['candidate']['obs_shape']}, actions {spaces['baseline']['n_actions']} vs "
            f"{spaces['candidate']['n_actions']}): no batch fits both"
        )
        return SharedBatch(snap, info)
    base_w, cand_w = snap["baseline"].npz("weights"), snap["candidate"].npz("weights")
    same_arch = set(base_w) == set(cand_w) and all(base_w[k].shape == cand_w[k].shape for k in base_w)
    weights = stage_for(wb, base_w) if same_arch else None
    if not same_arch:
        info["reason"] = "the networks' parameter names or shapes differ: each side keeps its own seeded init"
    info["weights"] = weights
    obs_shape, n_actions = spaces["baseline"]["obs_shape"], int(spaces["baseline"]["n_actions"] or 1)
    draft = make_batch(obs_shape, n_actions, BATCH_SIZE, seed, None, None)
    obs_rel = stage_for(wb, {"obs": draft["obs"], "actions": draft["actions"]})
    outputs = run_probe(
        wb, probes.policy_outputs, "loss: network outputs", obs=obs_rel, weights=weights, seed=seed
    )
    values = logprobs = None
    own = {side: outputs[side].npz("outputs") for side in SIDES if _has_outputs(outputs[side])}
    if "baseline" in own:
        values, logprobs = own["baseline"]["values"], own["baseline"]["logprobs"]
        info["own_outputs"] = True
        if weights is not None and "candidate" in own:
            info["output_gap"] = max(
                float(np.max(np.abs(own["candidate"][k] - own["baseline"][k])))
                for k in ("values", "logprobs")
            )
    batch = make_batch(obs_shape, n_actions, BATCH_SIZE, seed, values, logprobs)
    info["batch"] = stage_for(wb, batch)
    info["batch_arrays"] = batch
    pair = run_probe(wb, probes.loss_terms, "loss: terms", batch=info["batch"], weights=weights, seed=seed)
    swept = None
    if sweep:
        staged = stage_for(wb, sweep_batches(batch, n_actions, seed))
        swept = run_probe(
            wb, probes.term_sweep, "loss: term sweep", batches=staged, weights=weights, seed=seed
        )
    return SharedBatch(pair, info, swept)


def _has_outputs(result: Any) -> bool:
    return bool(result.ok and result.result.get("policy_api") and not result.result.get("weights_not_loaded"))


def compare_terms(terms: Mapping[str, Mapping[str, float]]) -> pd.DataFrame:
    """Both sides' loss terms with their difference: ``term, baseline, candidate, difference, ratio, differs``."""
    rows = []
    names = list(dict.fromkeys([*terms["baseline"], *terms["candidate"]]))
    for name in names:
        b, c = terms["baseline"].get(name), terms["candidate"].get(name)
        if b is None or c is None:
            rows.append(
                {
                    "term": name,
                    "baseline": b,
                    "candidate": c,
                    "difference": None,
                    "ratio": None,
                    "differs": True,
                }
            )
            continue
        diff = c - b
        rows.append(
            {
                "term": name,
                "baseline": b,
                "candidate": c,
                "difference": diff,
                "ratio": c / b if b else None,
                "differs": abs(diff) > TERM_RTOL * max(abs(b), abs(c)) + 1e-7,
            }
        )
    return pd.DataFrame(rows, columns=["term", "baseline", "candidate", "difference", "ratio", "differs"])


# -------------------------------------------------------------------------------------------------------------
# The coefficients, solved from the sweep
# -------------------------------------------------------------------------------------------------------------


@dataclass
class Weights:
    """How one side's total loss weighs its terms, solved from the sweep.

    Attributes:
        coefficients: Term -> its coefficient in the total, in the usual convention: ``loss = policy_coef *
            policy_loss + value_coef * value_loss - entropy_coef * entropy`` (an ``entropy_loss`` reported
            without ``entropy`` is read as SB3's ``-entropy``). Empty when not solvable.
        residual: Largest |total - weighted terms| over the batches, relative to the largest |total|.
        exact: The terms explain the total (residual below 1e-4).
        missing: Core terms the subject does not report (their share cannot be solved).
        value_scale: ``value_loss`` / mean squared error (0.5: ½·MSE; 1: MSE); None when not measurable.
        value_form: The value loss in words (``"½·MSE"``, ``"MSE (no ½, as in SB3)"``, ...).
        value_clip: The value loss is clipped around the behaviour values (True), does not depend on them
            (False), or None when not measurable.
        value_clip_form: How it depends on them, in words.
        reason: Why nothing could be solved (empty when solved).
    """

    coefficients: dict[str, float] = field(default_factory=dict)
    residual: float = math.nan
    exact: bool = False
    missing: list[str] = field(default_factory=list)
    value_scale: float | None = None
    value_form: str = "unknown"
    value_clip: bool | None = None
    value_clip_form: str = "unknown"
    reason: str = ""

    @property
    def value_weight(self) -> float | None:
        """The weight of the squared value error in the total: value coefficient × value scale."""
        coef = self.coefficients.get("value_loss")
        return coef * self.value_scale if coef is not None and self.value_scale is not None else None

    def text(self) -> str:
        """``"policy 1, value 0.5 (on ½·MSE), entropy 0.01"``."""
        if not self.coefficients:
            return f"not solvable ({self.reason})"
        parts = []
        for term, coef in self.coefficients.items():
            label = TERM_NAMES.get(term, term).replace("-loss", "")
            parts.append(
                f"{label} {fmt(coef)}" + (f" (on {self.value_form})" if term == "value_loss" else "")
            )
        return ", ".join(parts)


def solve_weights(rows: list[Mapping[str, float]]) -> Weights:
    """Solve the total for the coefficient of each term over the sweep's batches (least squares, no intercept).

    Args:
        rows: :func:`rlaudit.loss.probes.term_sweep`'s terms per batch, in the order of :func:`sweep_batches`.
    """
    out = Weights()
    out.value_scale, out.value_form = value_scale(rows)
    out.value_clip, out.value_clip_form = value_clipping(rows)
    if not rows or any("loss" not in r for r in rows):
        out.reason = "no total loss in every batch"
        return out
    columns: list[tuple[str, str, float]] = []  # (reported name, coefficient name, sign)
    for term in ("policy_loss", "value_loss"):
        if all(term in r for r in rows):
            columns.append((term, term, 1.0))
        else:
            out.missing.append(term)
    if all("entropy" in r for r in rows):
        columns.append(("entropy", "entropy", -1.0))
    elif all("entropy_loss" in r for r in rows):
        columns.append(("entropy_loss", "entropy", 1.0))
    else:
        out.missing.append("entropy")
    if not columns:
        out.reason = "no policy, value or entropy term reported"
        return out
    x = np.array([[r[name] for name, _, _ in columns] for r in rows], dtype=np.float64)
    y = np.array([r["loss"] for r in rows], dtype=np.float64)
    scale = np.maximum(np.abs(x).max(axis=0), 1e-12)
    if np.linalg.matrix_rank(x / scale, tol=1e-6) < len(columns):
        out.reason = "the reported terms did not vary independently over the batches"
        return out
    w, *_ = np.linalg.lstsq(x, y, rcond=None)
    out.residual = float(np.max(np.abs(y - x @ w)) / max(float(np.max(np.abs(y))), 1e-12))
    out.exact = out.residual < 1e-4
    # a term the total does not use solves to rounding noise (1e-9): call it 0
    top = max(float(np.max(np.abs(w))), 1e-12)
    out.coefficients = {
        coef: 0.0 if abs(wk) < 1e-6 * top else float(sign * wk)
        for (_, coef, sign), wk in zip(columns, w, strict=True)
    }
    return out


def value_scale(rows: list[Mapping[str, float]]) -> tuple[float | None, str]:
    """``value_loss`` against the squared error, from the batches whose targets moved by :data:`TARGET_SHIFTS`.

    A squared error ``s * mean((R + d - V)^2)`` has second difference ``2 s`` over unit steps of ``d``
    whatever ``R`` and ``V`` are; two second differences that agree give ``s``.

    Returns:
        ``(scale, words)``: ``(0.5, "½·MSE")``, ``(1.0, "MSE (no ½, as in SB3)")``, another scale, or
        ``(None, "not a squared error ...")``.
    """
    n = len(TARGET_SHIFTS)
    if len(rows) < n + 1 or any("value_loss" not in r for r in rows[1 : n + 1]):
        return None, "unknown (no value_loss reported)"
    losses = [float(r["value_loss"]) for r in rows[1 : n + 1]]
    first = [losses[i + 1] - losses[i] for i in range(n - 1)]
    second = [losses[i + 2] - 2 * losses[i + 1] + losses[i] for i in range(n - 2)]
    if not all(math.isfinite(v) for v in losses):
        return None, "not a squared error (not finite on the shifted targets)"
    # float32 rounding of losses of this size; a squared error's differences are of order 1
    noise = 1e-4 * max(max(abs(v) for v in losses), 1e-6)
    if all(abs(v) <= noise for v in first):
        return None, (
            "not a squared error: it does not move when the targets shift (the targets are normalized per batch, "
            "e.g. (R - mean R) / std R)"
        )
    if all(abs(v) <= noise for v in second):
        return None, (
            "not a squared error: it grows linearly with a large target error (a Huber / smooth-L1 or absolute "
            "error)"
        )
    if abs(second[0] - second[1]) > 1e-3 * max(abs(second[0]), 1e-9):
        return None, "not a plain squared error (its second difference changes with the target)"
    s = second[0] / 2
    if abs(s - 0.5) <= 1e-3:
        return 0.5, "½·MSE"
    if abs(s - 1.0) <= 1e-3:
        return 1.0, "MSE (no ½, as in SB3)"
    return s, f"{fmt(s)}·MSE"


def value_clipping(rows: list[Mapping[str, float]]) -> tuple[bool | None, str]:
    """Whether the value loss is clipped around the behaviour values, from the shared batch (0) and the same
    batch with its behaviour values moved by :data:`VALUE_OFFSET` (:data:`OFFSET_BATCH`).

    An unclipped value loss does not read the behaviour values at all; PPO's clipped one,
    ``max((V - R)², (V_old + clip(V - V_old, ±ε) - R)²)``, grows when they move away from the targets.

    Returns:
        ``(clipped, words)``; ``(None, ...)`` when the batches or the value loss are missing.
    """
    if len(rows) <= OFFSET_BATCH or any("value_loss" not in rows[i] for i in (0, OFFSET_BATCH)):
        return None, "unknown (no value_loss on the moved batch)"
    at, moved = float(rows[0]["value_loss"]), float(rows[OFFSET_BATCH]["value_loss"])
    if not (math.isfinite(at) and math.isfinite(moved)):
        return None, "unknown (not finite)"
    if abs(moved - at) <= 1e-5 * max(abs(at), abs(moved)) + 1e-7:
        return (
            False,
            f"unclipped (it stays at {fmt(at, 3)} when the behaviour values move by {fmt(VALUE_OFFSET)})",
        )
    return True, (
        f"clipped around the behaviour values (it moves {fmt(at, 3)} → {fmt(moved, 3)} when they move by "
        f"{fmt(VALUE_OFFSET)})"
    )


def same_coefficient(a: float, b: float) -> bool:
    return abs(a - b) <= COEF_RTOL * max(abs(a), abs(b)) + COEF_ATOL


def coefficient_changes(weights: Mapping[str, Weights]) -> list[str]:
    """Phrases for every coefficient that differs between the sides, with a sign flip said as such."""
    b, c = weights["baseline"], weights["candidate"]
    out = []
    for term in dict.fromkeys([*b.coefficients, *c.coefficients]):
        wb, wc = b.coefficients.get(term), c.coefficients.get(term)
        if wb is None or wc is None:
            continue
        if term == "value_loss" and _scales_differ(weights):
            # the value losses are on different scales (½·MSE vs MSE): what counts is the squared error's weight;
            # where one side's has no scale (Huber), value_form_change names the form instead
            if same_value_weight(weights) or b.value_weight is None or c.value_weight is None:
                continue
            out.append(
                f"weight of the squared value error {fmt(b.value_weight)} → {fmt(c.value_weight)} (value-loss "
                f"coefficient {fmt(wb)} on {b.value_form} → {fmt(wc)} on {c.value_form})"
            )
            continue
        if same_coefficient(wb, wc):
            continue
        phrase = f"{TERM_NAMES.get(term, term)} coefficient {fmt(wb)} → {fmt(wc)}"
        if wb * wc < 0:
            phrase += ": the sign flipped" + (
                " (the candidate's loss now rewards lower entropy)" if term == "entropy" and wc < 0 else ""
            )
        elif wb and wc:
            phrase += f" (×{fmt(wc / wb)})"
        out.append(phrase)
    return out


def same_value_weight(weights: Mapping[str, Weights] | None) -> bool:
    """Both sides weigh the squared value error equally in the total (coefficient × scale)."""
    if not weights:
        return False
    wb, wc = weights["baseline"].value_weight, weights["candidate"].value_weight
    return wb is not None and wc is not None and same_coefficient(wb, wc)


def _scales_differ(weights: Mapping[str, Weights]) -> bool:
    """The value losses' scales differ, or one side has a scale and the other none (another form)."""
    b, c = weights["baseline"].value_scale, weights["candidate"].value_scale
    if b is None or c is None:
        return (b is None) != (c is None)
    return not same_coefficient(b, c)


def value_form_change(weights: Mapping[str, Weights]) -> str:
    """A sentence when the two sides define the value loss on different scales or in different forms (empty when
    they do not)."""
    b, c = weights["baseline"], weights["candidate"]
    clip = value_clip_change(weights)
    if not _scales_differ(weights):
        return clip
    if b.value_scale is None or c.value_scale is None:
        text = (
            f"the value loss differs in form: baseline {b.value_form}; candidate {c.value_form} (no common scale, "
            "so its weight in the total cannot be compared)"
        )
        return text + (f"; {clip}" if clip else "")
    wb, wc = b.value_weight, c.value_weight
    text = (
        f"the value loss is {b.value_form} on the baseline and {c.value_form} on the candidate (SB3's value "
        "loss has no ½: a known factor 2 against CleanRL-style trainers)"
    )
    if wb is not None and wc is not None:
        text += f"; the weight of the squared value error in the total is {fmt(wb)} vs {fmt(wc)}" + (
            " — the same, so the setups train the critic alike" if same_value_weight(weights) else ""
        )
    return text + (f"; {clip}" if clip else "")


def value_clip_change(weights: Mapping[str, Weights]) -> str:
    """A sentence when one side clips the value loss around the behaviour values and the other does not."""
    b, c = weights["baseline"], weights["candidate"]
    if b.value_clip is None or c.value_clip is None or b.value_clip == c.value_clip:
        return ""
    return f"the baseline's value loss is {b.value_clip_form}, the candidate's {c.value_clip_form}"


def measured_quantities(
    weights: Mapping[str, Weights],
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, str]]]:
    """What the loss-terms check compares beyond the terms, per side, for :func:`rlaudit.evidence.coverage`:
    the value loss's scale and clipping and every solved coefficient, with their words."""
    values: dict[str, dict[str, Any]] = {}
    words: dict[str, dict[str, str]] = {}
    for s in SIDES:
        w = weights[s]
        values[s] = {
            "value-loss scale": w.value_scale,
            "value-loss clipping": w.value_clip,
            **{f"{TERM_NAMES.get(t, t)} coefficient": v for t, v in w.coefficients.items()},
        }
        words[s] = {"value-loss scale": w.value_form, "value-loss clipping": w.value_clip_form}
    return values, words


def _weights_of(shared: SharedBatch) -> dict[str, Weights] | None:
    if shared.sweep is None or not shared.sweep.ok:
        return None
    return {s: solve_weights(shared.sweep[s].json("terms")) for s in SIDES}


def networks_differ(terms: Mapping[str, Mapping[str, float]], info: Mapping[str, Any]) -> str:
    """With shared weights: a phrase when the two networks compute different outputs (empty when they agree).

    Measured directly when both networks expose ``get_action_and_value`` (their values and log-probabilities on
    the batch with the same weights), else read from the entropy term (the same weights and observations give
    the same entropy unless the network differs).
    """
    gap = info.get("output_gap")
    if gap is not None:
        if gap <= 1e-5:
            return ""
        evidence = f"values or log-probabilities differ by up to {fmt(gap)}"
    else:
        b, c = terms["baseline"].get("entropy"), terms["candidate"].get("entropy")
        if b is None or c is None or same_coefficient(b, c):
            return ""
        evidence = f"entropy {fmt(b, 5)} → {fmt(c, 5)}"
    return (
        f"the networks compute different outputs with the same weights ({evidence}): the network itself changed "
        "(see 01_agents), so the terms differ through it"
    )


def advantage_handling(policy_loss: float | None, batch: Mapping[str, np.ndarray] | None) -> str:
    """How a loss treats the advantages, from its policy loss on the shared batch at importance ratio 1.

    There the clipped surrogate is ``-mean(A')``: 0 when ``A'`` is normalized per batch, ``-mean(A)`` when the
    raw advantages are used. Returns ``"normalized"``, ``"raw"`` or ``""`` (neither, or unknown).
    """
    if policy_loss is None or batch is None:
        return ""
    mean = float(np.mean(batch["advantages"].astype(np.float64)))
    if abs(policy_loss) <= 1e-5:
        return "normalized"
    if abs(policy_loss + mean) <= 1e-4 * max(1.0, abs(mean)):
        return "raw"
    return ""


def advantage_change(terms: Mapping[str, Mapping[str, float]], info: Mapping[str, Any]) -> str:
    """A sentence when one side normalizes the advantages and the other does not (empty otherwise)."""
    if not info.get("own_outputs") or info.get("output_gap") is None or info["output_gap"] > 1e-5:
        return ""  # the importance ratio is 1 only where the batch's log-probabilities are the network's own
    batch = info.get("batch_arrays")
    ways = {s: advantage_handling(terms[s].get("policy_loss"), batch) for s in SIDES}
    if "" in ways.values() or ways["baseline"] == ways["candidate"]:
        return ""
    said = {"normalized": "normalizes the advantages per batch", "raw": "uses the raw advantages"}
    mean = float(np.mean(batch["advantages"])) if batch is not None else float("nan")
    return (
        f"the baseline {said[ways['baseline']]} but the candidate {said[ways['candidate']]} (at importance ratio 1 "
        f"the policy loss is -mean of the advantages it uses: {fmt(terms['baseline']['policy_loss'])} → "
        f"{fmt(terms['candidate']['policy_loss'])}, the raw mean being {fmt(-mean)})"
    )


@check(
    "loss/terms",
    title="Loss terms on one identical batch",
    needs=lambda wb, seed=0: shared_batch(wb, seed, sweep=True),
    reads=("agents",),
)
def loss_terms(c: Check, shared: SharedBatch, seed: int = 0) -> Section:
    """The loss terms agree on one identical batch with the same weights.

    Policy, value, entropy and total loss of both subjects on one batch (staged once), with shared weights,
    and the coefficient of each term solved from a sweep of batches.
    """
    info = shared.info
    if info["batch"] is None:
        return c.section(
            c.finding(
                Status.NOTED,
                summary=f"not compared: {info['reason']}",
                remediation="See 10_spaces for the space change; compare the losses after aligning the spaces.",
            )
        )
    pair = shared.pair
    shared_weights = all(pair[s].result.get("shared_weights") for s in SIDES)
    terms = {s: pair[s].json("terms") for s in SIDES}
    table = compare_terms(terms)
    core = table[table["term"].isin(CORE_TERMS)]
    differing = core[core["differs"]]
    weights = _weights_of(shared)
    changed = coefficient_changes(weights) if weights else []
    form = value_form_change(weights) if weights else ""
    coef_text = (
        f" Coefficients solved from {len(shared.sweep['baseline'].json('terms'))} batches: "  # type: ignore[index]
        f"baseline {weights['baseline'].text()}; candidate {weights['candidate'].text()}."
        if weights
        else ""
    )
    common = {
        "baseline": {r["term"]: r["baseline"] for r in core.to_dict("records")},
        "candidate": {r["term"]: r["candidate"] for r in core.to_dict("records")},
        "details": {
            "terms": table.to_dict("records"),
            "coefficients": {s: w.coefficients for s, w in weights.items()} if weights else None,
            "value_scale": {s: w.value_scale for s, w in weights.items()} if weights else None,
            "residual": {s: w.residual for s, w in weights.items()} if weights else None,
        },
    }
    if len(differing) and shared_weights:
        finding = _terms_differ(c, differing, terms, changed, form, weights, info, common)
    elif len(differing) or changed:
        finding = _networks_differ(c, changed, form, info, common)
    elif form:
        # identical terms on the shared batch (small errors, behaviour values the network's own), yet the value
        # loss takes another form where the sweep moved the targets or the behaviour values
        finding = c.finding(
            Status.SUSPECT,
            Severity.HIGH,
            **common,
            summary=f"same terms on the shared batch, but {form}",
            remediation="Restore the baseline's value loss in the candidate's compute_loss (its form: squared "
            "error, clipping around the behaviour values, raw returns as targets).",
            figures=["loss terms"],
        )
    else:
        quantities, words = measured_quantities(weights) if weights else (None, None)
        finding = c.finding(
            Status.CLEARED,
            values=common,
            details=common["details"],
            measured=quantities,
            measured_words=words,
            summary="identical terms on the shared batch: "
            + ", ".join(f"{r['term']} {fmt(r['baseline'], 4)}" for r in core.to_dict("records"))
            + (f"; the same coefficients: {weights['baseline'].text()}" if weights and not changed else ""),
        )
    tables: dict[str, Any] = {
        "loss terms": table.rename(
            columns={
                "baseline": "baseline value on the shared batch",
                "candidate": "candidate value on the shared batch",
                "difference": "candidate − baseline",
                "ratio": "candidate / baseline",
            }
        )
    }
    if weights:
        tables["coefficients (solved)"] = coefficient_table(weights)
    return c.section(
        finding,
        tables=tables,
        figures={"loss terms": plots.terms_figure(core)},
        notes=[batch_note(info, shared_weights) + coef_text],
    )


def _terms_differ(
    c: Check,
    differing: pd.DataFrame,
    terms: Mapping[str, Mapping[str, float]],
    changed: list[str],
    form: str,
    weights: Mapping[str, Weights] | None,
    info: Mapping[str, Any],
    common: Mapping[str, Any],
) -> Finding:
    """SUSPECT: same batch and weights, different loss; the summary says which quantity changed."""
    parts = [
        f"{r['term']} {fmt(r['baseline'], 4)} → {fmt(r['candidate'], 4)}"
        + (f" (×{fmt(r['ratio'])})" if r["ratio"] is not None and r["ratio"] > 0 else "")
        for r in differing.to_dict("records")
    ]
    only_total = set(differing["term"]) == {"loss"}
    worst = differing.iloc[0] if only_total else differing[differing["term"] != "loss"].iloc[0]
    why = []
    if changed:
        why.append("; ".join(changed))
    if form:
        why.append(form)
    network = networks_differ(terms, info)
    advantages = "" if network else advantage_change(terms, info)
    why += [text for text in (network, advantages) if text]
    if not why and weights and not only_total:
        why.append(_same_weights_text(weights, terms, info))
    summary = "same batch, same weights, different loss: " + (
        "only the total differs: " if only_total else ""
    )
    summary += "; ".join(why) + (" — " if why else "") + "; ".join(parts)
    # a known factor 2 of the value loss that the coefficients compensate is not a regression
    compensated = (
        bool(form)
        and not changed
        and not network
        and same_value_weight(weights)
        and set(differing["term"]) <= {"value_loss"}
    )
    return c.finding(
        Status.NOTED if compensated else Status.SUSPECT,
        Severity.LOW if compensated else Severity.HIGH,
        **common,
        effect=float(worst["difference"]) if worst["difference"] is not None else None,
        effect_label=f"{worst['term']} candidate - baseline",
        summary=summary,
        remediation=_remedy(changed, advantages),
        figures=["loss terms"],
    )


def _remedy(changed: list[str], advantages: str) -> str:
    fixes = []
    if changed:
        fixes.append(
            "restore the baseline's coefficients in the candidate's loss (" + "; ".join(changed) + ")"
        )
    if advantages:
        fixes.append("treat the advantages as the baseline does (normalized per minibatch, or not)")
    if not fixes:
        return (
            "Diff the candidate's compute_loss against the baseline's for the terms named (clipping, reductions, "
            "floors)."
        )
    text = "; ".join(fixes)
    return text[0].upper() + text[1:] + "."


def _same_weights_text(
    weights: Mapping[str, Weights], terms: Mapping[str, Mapping[str, float]], info: Mapping[str, Any]
) -> str:
    """The coefficients agree, so a term itself changed; for the value loss, compare it with its own scale
    times the batch's squared error (a floor or clamp shows as a value loss far above it)."""
    text = f"the coefficients agree ({weights['baseline'].text()}), so a term itself is computed differently"
    batch = info.get("batch_arrays")
    scale = weights["candidate"].value_scale
    value = terms["candidate"].get("value_loss")
    same_outputs = info.get("output_gap") is not None and info["output_gap"] <= 1e-5
    if batch is not None and same_outputs and scale is not None and value is not None:
        mse = float(np.mean((batch["returns"].astype(np.float64) - batch["values"]) ** 2))
        expected = scale * mse
        if not same_coefficient(value, expected) and abs(value - expected) > 1e-6:
            text += (
                f": the candidate's value loss reads {fmt(value, 4)} where its {weights['candidate'].value_form} of "
                f"this batch is {fmt(expected, 4)}"
                + (
                    " — floored or clamped from below (see the gradient-flow check)"
                    if value > expected
                    else ""
                )
            )
    return text


def _networks_differ(
    c: Check, changed: list[str], form: str, info: Mapping[str, Any], common: Mapping[str, Any]
) -> Finding:
    """Without shared weights the terms are not like for like; the coefficients still are."""
    if changed:
        return c.finding(
            Status.SUSPECT,
            Severity.HIGH,
            **common,
            summary="the loss weighs its terms differently: "
            + "; ".join(changed)
            + (f"; {form}" if form else "")
            + f" (solved from the sweep; the terms themselves are not compared: {info['reason']})",
            remediation="Restore the baseline's coefficients in the candidate's loss: " + "; ".join(changed),
            figures=["loss terms"],
        )
    return c.finding(
        Status.NOTED,
        **common,
        summary=f"the terms differ, but the networks differ too ({info['reason']}), so the comparison is not "
        "like for like" + (f"; {form}" if form else "; the coefficients of the terms agree"),
        remediation="Compare after aligning the architectures (01_agents).",
    )


def coefficient_table(weights: Mapping[str, Weights]) -> pd.DataFrame:
    """Per term, each side's solved coefficient; the value loss's scale and the fit's residual."""
    rows = []
    for term in dict.fromkeys([*weights["baseline"].coefficients, *weights["candidate"].coefficients]):
        rows.append(
            {
                "term": TERM_NAMES.get(term, term),
                **{s: weights[s].coefficients.get(term) for s in SIDES},
            }
        )
    rows.append({"term": "value loss / squared error", **{s: weights[s].value_scale for s in SIDES}})
    rows.append({"term": "weight of the squared value error", **{s: weights[s].value_weight for s in SIDES}})
    rows.append({"term": "fit residual (relative)", **{s: weights[s].residual for s in SIDES}})
    return pd.DataFrame(rows)


def batch_note(info: Mapping[str, Any], shared: bool) -> str:
    """How the shared batch was built (and whether both networks got the baseline's weights)."""
    return (
        f"Batch: {BATCH_SIZE} samples, observations N(0, 1), uniform actions, advantages N(0, 1); behaviour "
        "log-probabilities and values are the shared network's own (importance ratio 1), and the value targets are "
        f"the values plus N(0, {VALUE_TARGET_NOISE}) noise, so the value loss is small (~0.005), as late in "
        "training. That is where a loss floor such as case 003's torch.max(free_bits, loss) bites: above the floor "
        "the gradient flows, below it none does. "
        + (
            "Both networks were loaded with the baseline's initial weights."
            if shared
            else f"Weights: {info.get('reason')}."
        )
    )
