"""Loss audit, advantages: each subject's ``compute_advantages`` against the reference GAE, its known mistakes,
and the discount and lambda it actually uses.

A sequence learner (Dreamer-style: lambda returns over replayed fixed-length sequences) offers
``compute_lambda_returns`` instead; its answer on the same inputs, put in the sequence convention
(:func:`rlaudit.loss.probes.lambda_returns`), is read as advantages ``returns - values`` and matched the same way.

Two staged inputs go to both subjects: random inputs with episode ends and truncations
(:func:`rlaudit.loss.gae.make_gae_inputs`), on which every variant of :data:`rlaudit.loss.gae.VARIANTS` gives
visibly different advantages, and crafted impulse inputs (:func:`rlaudit.loss.gae.make_impulse_inputs`), whose
answer reads off ``gamma`` and ``gamma * lambda`` directly. A side that matches no variant with the discount its
config declares is solved for the ``(gamma, lambda)`` under which it does match one (least squares on the
random inputs, started from the impulse reading), so the verdict names the changed quantity: "the reference
GAE with gamma 0.95, not the configured 0.99", or the mistake with its values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check, run_probe
from rlaudit.engine.workbench import SIDES, Pair, ProbeResult, Workbench
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.loss import plots, probes
from rlaudit.loss.gae import (
    VARIANTS,
    implied_discount,
    make_gae_inputs,
    make_impulse_inputs,
    match_variants,
)
from rlaudit.loss.inputs import stage_for
from rlaudit.notebook import Section

DESCRIPTIONS = {v.name: v.description for v in VARIANTS}
FIXED_LAMBDA = ("lambda_zero", "lambda_one")
"""Variants that ignore lambda: their fitted lambda would mean nothing (the reference GAE with a solved lambda
of 0 or 1 covers them)."""
REMEDIES = {
    None: "Compare compute_advantages line by line with rlaudit.loss.gae.reference_gae on the staged inputs.",
    "correct": "Use the configured gamma and gae_lambda in compute_advantages (a hard-coded or stale value "
    "overrides the config).",
    "bootstrap_current": "Bootstrap from the next state's value: use values[t + 1] (next_value at the last step) "
    "in delta_t, not values[t].",
    "bootstrap_current_return": "Mix in the next state's value: G_t = r_t + gamma * c_t * ((1 - lambda) * "
    "values[t + 1] + lambda * G_t+1), with the bootstrap value at the last step, not values[t].",
    "done_late": "Mask with the done flag of the same step t (the episode ended after acting in s_t), not t-1.",
    "done_early": "Mask with the done flag of step t, not t+1.",
    "no_done_mask": "Multiply the bootstrap and the lambda recursion by (1 - done_t).",
    "truncation_as_termination": "Bootstrap truncated steps with gamma * V(final_obs) instead of treating them "
    "as terminal.",
    "truncation_ignored": "Stop the bootstrap at truncations too (after adding gamma * V(final_obs)).",
    "lambda_zero": "Apply gae_lambda in the recursion A_t = delta_t + gamma * lambda * A_t+1.",
    "lambda_one": "Apply gae_lambda in the recursion A_t = delta_t + gamma * lambda * A_t+1.",
}


def advantage_pairs(wb: Workbench, seed: int = 0) -> list[Pair]:
    """The advantages probe on both sides: on the random inputs of ``seed``, then on the impulse inputs.

    A side that lacks ``compute_advantages`` runs :func:`rlaudit.loss.probes.lambda_returns` instead when it
    offers ``compute_lambda_returns`` (a sequence learner); a side with neither keeps the SKIPPED result that
    names ``compute_advantages``.
    """
    random_inputs = stage_for(wb, make_gae_inputs(seed))
    impulse_inputs = stage_for(wb, make_impulse_inputs())
    return [
        _with_lambda_returns(
            wb, run_probe(wb, probes.advantages, "loss: advantages", inputs=random_inputs), random_inputs
        ),
        _with_lambda_returns(
            wb,
            run_probe(wb, probes.advantages, "loss: advantages on an impulse", inputs=impulse_inputs),
            impulse_inputs,
        ),
    ]


def _with_lambda_returns(wb: Workbench, pair: Pair, inputs: str) -> Pair:
    """``pair`` with the lambda-returns probe's result for each side whose subject lacks compute_advantages."""
    run_each = getattr(wb, "run_each", None)
    sides = [side for side in SIDES if "compute_advantages" in (pair[side].missing or [])]
    if not sides or run_each is None:
        return pair
    results = run_each(
        probes.lambda_returns, [(side, {"inputs": inputs}) for side in sides], desc="loss: lambda returns"
    )
    chosen = {side: pair[side] for side in SIDES}
    for side, result in zip(sides, results, strict=True):
        if not result.missing:  # ran (or failed): the sequence learner's answer, or its error
            chosen[side] = result
    return Pair(**chosen)


def solve_discount(
    variant: str, arrays: Mapping[str, np.ndarray], with_truncation: bool, starts: list[tuple[float, float]]
) -> tuple[float, float, float]:
    """The ``(gamma, lambda)`` under which ``variant`` best reproduces a subject's advantages and returns.

    Least squares over ``[0, 1]^2`` (scipy's trust-region reflective solver) from each start, the best kept.

    Args:
        variant: A name of :data:`rlaudit.loss.gae.VARIANTS`.
        arrays: What the subject was given (``rewards``, ``values``, ``dones``, ``next_value``, and with
            truncation ``truncated``, ``final_values``) and what it returned (``advantages``, ``returns``),
            all (T, N) but ``next_value`` (N,).
        with_truncation: The subject received truncation flags.
        starts: ``(gamma, lambda)`` starting points.

    Returns:
        ``(gamma, lambda, max abs error of advantages and returns)``.
    """
    from scipy.optimize import least_squares

    fn = next(v.fn for v in VARIANTS if v.name == variant)
    args = (arrays["rewards"], arrays["values"], arrays["dones"], arrays["next_value"])
    trunc = (arrays.get("truncated"), arrays.get("final_values")) if with_truncation else (None, None)
    target = np.concatenate([arrays["advantages"].reshape(-1), arrays["returns"].reshape(-1)])

    def residual(x: np.ndarray) -> np.ndarray:
        adv, ret = fn(*args, float(x[0]), float(x[1]), *trunc)
        return np.concatenate([adv.reshape(-1), ret.reshape(-1)]) - target

    best = (math.nan, math.nan, math.inf)
    for start in starts:
        x0 = np.clip(np.asarray(start, dtype=float), 1e-6, 1 - 1e-6)
        fit = least_squares(residual, x0, bounds=([0.0, 0.0], [1.0, 1.0]), xtol=1e-12, ftol=1e-12)
        err = float(np.max(np.abs(residual(fit.x))))
        if err < best[2]:
            best = (float(fit.x[0]), float(fit.x[1]), err)
    return best


@dataclass
class Estimator:
    """What one side's ``compute_advantages`` computes.

    Attributes:
        side: ``baseline`` or ``candidate``.
        mode: How truncations reached it (see :func:`rlaudit.loss.probes.advantages`).
        capability: What was read: ``compute_advantages``, or ``compute_lambda_returns`` (advantages are its
            returns minus the values).
        declared: ``(gamma, lambda)`` its config declares (None where it names none).
        variant: The variant it matches (``correct`` for the reference GAE), None when none does.
        gamma, gae_lambda: The values under which it matches (declared, or solved); for no match, the
            impulse reading when there is one.
        solved: The values were solved for (the declared ones did not reproduce it).
        error: Largest |advantage - reference advantage| with the declared (or solved) values.
        impulse: :func:`rlaudit.loss.gae.implied_discount` of its answer on the impulse inputs.
        rows: :func:`rlaudit.loss.gae.match_variants` rows at ``(gamma, gae_lambda)``.
        arrays: The random inputs and its answer.
    """

    side: str
    mode: str
    capability: str
    declared: tuple[float | None, float | None]
    variant: str | None
    gamma: float
    gae_lambda: float
    solved: bool
    error: float
    impulse: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def right(self) -> bool:
        """The reference GAE with the declared discount (or, with none declared, any discount)."""
        return self.variant == "correct" and not (self.solved and None not in self.declared)

    @property
    def key(self) -> tuple[Any, ...]:
        """What makes two estimators the same: the variant and its (rounded) values."""
        return (self.variant, round(self.gamma, 3), round(self.gae_lambda, 3))

    def values_text(self) -> str:
        return f"gamma {fmt(self.gamma, 4)}, lambda {fmt(self.gae_lambda, 4)}"

    def describe(self) -> str:
        """One phrase: what it computes, with the discount and lambda it uses."""
        gamma_d, lambda_d = self.declared
        declared = (
            f"the config declares gamma {fmt(gamma_d, 4)}, lambda {fmt(lambda_d, 4)}"
            if None not in self.declared
            else "the config names no gamma or lambda"
        )
        if self.variant is None:
            return (
                f"no known variant (max error {fmt(self.error)} against the reference GAE); "
                + self._impulse_text()
            )
        name = (
            "the reference GAE"
            if self.variant == "correct"
            else f"`{self.variant}` ({DESCRIPTIONS[self.variant]})"
        )
        if not self.solved:
            return f"{name} ({self.values_text()})"
        return f"{name} with {self.values_text()}, solved from its answers ({declared})"

    def _impulse_text(self) -> str:
        imp = self.impulse
        if imp.get("decay") is None:
            return "its answer to a single reward does not decay geometrically"
        text = f"a single reward's advantage decays by {fmt(imp['decay'], 4)} per step (gamma × lambda)"
        if imp.get("gamma"):
            text += f" and the bootstrap value weighs {fmt(imp['gamma'], 4)} (gamma)"
            if imp.get("gae_lambda") is not None:
                text += f": gamma {fmt(imp['gamma'], 4)}, lambda {fmt(imp['gae_lambda'], 4)}"
        if not imp.get("geometric"):
            text += " (not geometric at every step: not a GAE recursion)"
        return text


def read_estimator(side: str, random: ProbeResult, impulse: ProbeResult) -> Estimator:
    """Which estimator a side's ``compute_advantages`` is, from its answers on both staged inputs."""
    arrays = random.npz("advantages")
    mode = random.result["mode"]
    cap = random.result.get("capability", "compute_advantages")
    with_trunc = mode == "kwargs"
    declared = (random.result.get("gamma"), random.result.get("gae_lambda"))
    reading = implied_discount(impulse.npz("advantages")["advantages"])
    adv, ret = arrays["advantages"], arrays["returns"]
    if None not in declared:
        gamma, lam = float(declared[0]), float(declared[1])  # type: ignore[arg-type]
        rows = match_variants(adv, ret, arrays, gamma, lam, with_truncation=with_trunc)
        matches = [r["variant"] for r in rows if r["match"]]
        if matches:
            variant = "correct" if "correct" in matches else matches[0]
            return Estimator(
                side, mode, cap, declared, variant, gamma, lam, False, _error(rows), reading, rows, arrays
            )
    starts = [(0.99, 0.95), (0.9, 0.5)]
    if None not in declared:
        starts.insert(0, (float(declared[0]), float(declared[1])))  # type: ignore[arg-type]
    if reading.get("gamma") and reading.get("gae_lambda") is not None and 0 <= reading["gae_lambda"] <= 1:
        starts.insert(0, (reading["gamma"], reading["gae_lambda"]))
    for v in VARIANTS:
        if v.name in FIXED_LAMBDA or (v.needs_truncation and not with_trunc):
            continue
        gamma, lam, _ = solve_discount(v.name, arrays, with_trunc, starts)
        if not math.isfinite(gamma):
            continue
        rows = match_variants(adv, ret, arrays, gamma, lam, with_truncation=with_trunc)
        if next(r for r in rows if r["variant"] == v.name)["match"]:
            return Estimator(
                side, mode, cap, declared, v.name, gamma, lam, True, _error(rows), reading, rows, arrays
            )
    gamma = reading.get("gamma") or (declared[0] if declared[0] is not None else 0.99)
    lam = reading.get("gae_lambda")
    lam = lam if lam is not None and 0 <= lam <= 1 else (declared[1] if declared[1] is not None else 0.95)
    rows = match_variants(adv, ret, arrays, float(gamma), float(lam), with_truncation=with_trunc)
    return Estimator(
        side, mode, cap, declared, None, float(gamma), float(lam), True, _error(rows), reading, rows, arrays
    )


def _error(rows: list[dict[str, Any]]) -> float:
    """The reference variant's largest advantage error."""
    value = next(r["adv_error"] for r in rows if r["variant"] == "correct")
    return float(value) if value is not None else math.nan


def estimator_table(est: Mapping[str, Estimator]) -> pd.DataFrame:
    """Per side: declared and impulse-read discount, the matched variant and the values it matches under."""
    return pd.DataFrame(
        [
            {
                "side": side,
                "declared gamma": e.declared[0],
                "declared lambda": e.declared[1],
                "impulse gamma": e.impulse.get("gamma"),
                "impulse gamma×lambda": e.impulse.get("decay"),
                "matches": e.variant or "no known variant",
                "gamma": e.gamma,
                "lambda": e.gae_lambda,
                "solved": e.solved,
                "max error vs reference": e.error,
            }
            for side, e in est.items()
        ]
    )


def _side_finding(c: Check, side: str, est: Mapping[str, Estimator]) -> Finding:
    """The finding for one side whose estimator is not the reference GAE with its declared discount."""
    e, other = est[side], est["baseline" if side == "candidate" else "candidate"]
    if side == "candidate":
        named = e.variant is not None
        status = Status.CONFIRMED if named else Status.SUSPECT
        severity = Severity.HIGH if e.variant == "correct" else Severity.CRITICAL
    else:
        status, severity = Status.NOTED, Severity.MEDIUM
    return c.finding(
        status,
        severity,
        id=f"loss/advantages-{side}",
        hypothesis=f"The {side} computes advantages and returns correctly",
        baseline=est["baseline"].describe(),
        candidate=est["candidate"].describe(),
        effect=e.error,
        effect_label="largest |advantage - reference advantage| (declared discount)",
        summary=f"the {side}'s {e.capability} matches {e.describe()}; the {other.side}'s {other.capability} "
        f"matches {other.describe()}",
        details={
            "variant": e.variant,
            "gamma": e.gamma,
            "gae_lambda": e.gae_lambda,
            "solved": e.solved,
            "declared": list(e.declared),
            "impulse": e.impulse,
            "mode": e.mode,
            "capability": e.capability,
        },
        remediation=remedy(e),
        figures=["advantages vs reference"],
    )


@check("loss/advantages", title="Advantages and returns against the reference GAE", needs=advantage_pairs)
def advantages(c: Check, pairs: list[Pair], seed: int = 0) -> Section:
    """Both setups compute advantages and returns correctly.

    Each subject's ``compute_advantages`` against the reference GAE and its known mistakes, on shared inputs.

    Args:
        seed: Seed of the random inputs (64 steps x 8 environments, episode ends and truncations).
    """
    random, impulse = pairs
    est = {side: read_estimator(side, random[side], impulse[side]) for side in SIDES}
    findings: list[Finding] = []
    if all(e.right for e in est.values()):
        findings.append(_both_right(c, est))
    elif est["baseline"].key == est["candidate"].key:
        findings.append(
            c.finding(
                Status.NOTED,
                Severity.MEDIUM,
                baseline=est["baseline"].describe(),
                candidate=est["candidate"].describe(),
                effect=est["candidate"].error,
                effect_label="largest |advantage - reference advantage| (declared discount)",
                summary=f"both sides compute {est['candidate'].describe()}{_read_from(est)}: the same on both "
                "sides, so not the difference between them, but not the reference GAE with the declared discount",
                remediation=remedy(est["candidate"]) + " (in both setups)",
            )
        )
    else:
        findings.extend(_side_finding(c, side, est) for side in SIDES if not est[side].right)
    return c.section(
        findings,
        tables={
            "advantage errors by variant": _variant_table(est),
            "discount and lambda": estimator_table(est),
        },
        figures={"advantages vs reference": plots.advantages_figure(_figure_input(est))},
        notes=[
            f"Inputs: 64 steps x 8 environments drawn with seed {seed} (sparse rewards, spread values, episode "
            "ends with some truncations), and an impulse (one reward at the last step; a bootstrap value of 1), "
            "staged once and handed to both workers. Each side is compared with the reference computed with its "
            "own config's gamma and lambda; a side that matches nothing with those is solved for the gamma and "
            "lambda under which a variant reproduces its answers.",
            "A variant that matches names the mistake: `bootstrap_current_return` is case 003's lambda returns "
            "mixing in V(s_t), `bootstrap_current` the same slip in GAE's TD error.",
            "A sequence learner's compute_lambda_returns gets the same inputs with continues = 1 - dones and "
            "bootstrap = next_value; its advantages are its returns minus the values.",
        ],
    )


def remedy(e: Estimator) -> str:
    """What to change so that ``e`` computes the reference GAE (or lambda returns) with its declared discount."""
    if e.variant is None and e.capability == "compute_lambda_returns":
        return (
            "Compare compute_lambda_returns line by line with the returns of rlaudit.loss.gae.reference_gae on "
            "the staged inputs (continues = 1 - dones, bootstrap = next_value)."
        )
    return REMEDIES.get(e.variant, REMEDIES[None])


def _read_from(est: Mapping[str, Estimator]) -> str:
    """`` (read from ...)`` naming the capabilities read, when one side's is not compute_advantages."""
    caps = {e.capability for e in est.values()}
    if caps == {"compute_advantages"}:
        return ""
    if len(caps) == 1:
        return f" (read from {caps.pop()})"
    return " (read from " + ", ".join(f"the {side}'s {e.capability}" for side, e in est.items()) + ")"


def _both_right(c: Check, est: Mapping[str, Estimator]) -> Finding:
    modes = {e.mode for e in est.values()}
    caps = {e.capability for e in est.values()}
    takes_no_flags = (
        "compute_advantages takes no truncation flags"
        if caps == {"compute_advantages"}
        else "the sequence convention of compute_lambda_returns has no truncation flags"
    )
    trunc_note = (
        "truncation handling tested through truncation flags"
        if modes == {"kwargs"}
        else f"truncations passed with the bootstrap folded into the rewards ({takes_no_flags}, so the caller's "
        "share of it is not tested here)"
    )
    b, k = est["baseline"], est["candidate"]
    differ = (b.gamma, b.gae_lambda) != (k.gamma, k.gae_lambda)
    return c.finding(
        Status.CLEARED,
        baseline=b.error,
        candidate=k.error,
        effect_label="largest |advantage - reference advantage|",
        summary=f"both match the reference GAE{_read_from(est)} (max error {fmt(b.error)} and {fmt(k.error)}; gamma "
        f"{fmt(b.gamma)}/{fmt(k.gamma)}, lambda {fmt(b.gae_lambda)}/{fmt(k.gae_lambda)}"
        + (", each its own config's: a config difference, see 14_config" if differ else "")
        + (", solved: the configs name neither" if b.solved or k.solved else "")
        + f"); {trunc_note}",
    )


def _variant_table(est: Mapping[str, Estimator]) -> pd.DataFrame:
    frames = [pd.DataFrame(e.rows).assign(side=side) for side, e in est.items()]
    table = pd.concat(frames, ignore_index=True)
    shown = table.pivot_table(
        index="variant", columns="side", values="adv_error", aggfunc="first", dropna=False
    )
    shown = shown.reindex([v.name for v in VARIANTS]).reset_index()
    shown.insert(1, "description", [DESCRIPTIONS[n] for n in shown["variant"]])
    for side, e in est.items():
        shown[f"{side} matches"] = shown["variant"].isin([r["variant"] for r in e.rows if r["match"]])
    return shown


def _figure_input(est: Mapping[str, Estimator]) -> dict[str, dict[str, Any]]:
    return {
        side: {
            "arrays": e.arrays,
            "mode": e.mode,
            "gamma": e.gamma,
            "gae_lambda": e.gae_lambda,
            "matches": [r["variant"] for r in e.rows if r["match"]],
        }
        for side, e in est.items()
    }
