"""Loss audit, gradient flow: does every parameter receive gradient from the loss?

Three views, each of which catches what the others miss: the shared batch of :mod:`rlaudit.loss.terms` (a
small value error, where a floor on the value loss bites), a batch from each subject's own rollouts with its
trained checkpoint, and the recorder's per-layer gradient norms over real training.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check
from rlaudit.engine.workbench import SIDES, Pair, Workbench
from rlaudit.evidence import pct
from rlaudit.findings import Finding, Severity, Status
from rlaudit.loss import plots, probes
from rlaudit.loss.inputs import cache_relative
from rlaudit.loss.terms import CORE_TERMS, SharedBatch, batch_note, shared_batch
from rlaudit.notebook import Section

TRAINING_ZERO_SHARE = 0.25
"""A tensor whose gradient is exactly zero on at least this share of the sampled optimizer steps (and never on
the baseline) is CONFIRMED: a floor or clamp that bites during real training."""


def zero_gradients(gradients: pd.DataFrame, term: str = "loss") -> list[str]:
    """Parameters whose gradient from ``term`` is exactly zero (or None)."""
    part = gradients[gradients["term"] == term]
    return part[(part["grad_norm"] == 0) | part["grad_is_none"].astype(bool)]["parameter"].tolist()


def gradient_table(pair: Pair) -> pd.DataFrame:
    """One row per parameter tensor: the gradient norm of the total loss and of each term, on both sides."""
    frames = [pair[s].table("gradients").assign(side=s) for s in SIDES]
    long = pd.concat(frames, ignore_index=True)
    wide = long.pivot_table(
        index="parameter", columns=["term", "side"], values="grad_norm", aggfunc="first", sort=False
    )
    terms = [t for t in CORE_TERMS if t in wide.columns.get_level_values(0)]
    wide = wide[[(t, s) for t in terms for s in SIDES if (t, s) in wide.columns]]
    wide.columns = [f"{t} {s}" for t, s in wide.columns]
    return wide.reset_index()


def zero_gradient_view(grads: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """Per side, the tensors with zero gradient from the total and from each term, and the tensor count."""
    return {
        "zeros": {s: zero_gradients(grads[s]) for s in SIDES},
        "per_term": {s: {t: zero_gradients(grads[s], t) for t in grads[s]["term"].unique()} for s in SIDES},
        "n_params": int((grads["candidate"]["term"] == "loss").sum()),
    }


def _zero_grad_finding(c: Check, fid: str, where: str, view: Mapping[str, Any]) -> Finding | None:
    """CONFIRMED when candidate tensors get exactly zero gradient that the baseline's do not."""
    zeros, per_term, n_params = view["zeros"], view["per_term"], view["n_params"]
    new = [p for p in zeros["candidate"] if p not in zeros["baseline"]]
    if not new:
        return None
    silent_terms = [
        t
        for t, z in per_term.get("candidate", {}).items()
        if t != "loss" and set(new) <= set(z) and not set(new) <= set(per_term.get("baseline", {}).get(t, []))
    ]
    heads = sorted({p.split(".")[0] for p in new})
    return c.finding(
        Status.CONFIRMED,
        Severity.CRITICAL,
        id=fid,
        hypothesis=f"Every parameter receives gradient from the loss ({where})",
        baseline=len(zeros["baseline"]),
        candidate=len(zeros["candidate"]),
        effect=float(len(new)) / max(1, n_params),
        effect_label="fraction of parameter tensors with zero gradient",
        summary=f"{where}: {len(new)} of {n_params} parameter tensors of the candidate get exactly zero gradient "
        f"({', '.join(new[:6])}{' ...' if len(new) > 6 else ''}; module {', '.join(heads)})"
        + (
            f", and the {', '.join(silent_terms)} term sends none: a max/clamp/floor selects a constant there "
            "(case 003's free-bits torch.max)"
            if silent_terms
            else ""
        )
        + "; on the baseline they all get gradient",
        details={"parameters": new, "silent_terms": silent_terms},
        remediation="Replace the floor with a straight-through form, e.g. `loss + (floor - loss).clamp(min=0)"
        ".detach()`, so the value stays floored but the gradient flows (or remove the floor).",
        figures=["gradient norms"],
    )


def _rollout_pair(wb: Workbench, short: Mapping[str, list[Any]], seed: int) -> Pair:
    """The rollout-loss probe on both sides, each with its own first short run's checkpoint (when it has one)."""
    results = {}
    for side in SIDES:
        checkpoint = None
        if short.get(side) and short[side][0].checkpoints:
            checkpoint = cache_relative(wb, short[side][0].checkpoints[0])
        results[side] = wb.run_side(side, probes.rollout_loss, seed=seed, steps=2048, checkpoint=checkpoint)
    return Pair(baseline=results["baseline"], candidate=results["candidate"])


def _rollout_unmeasured(rollout: Pair) -> str:
    """Why the real-rollout batch has no gradients to read ("" when both sides have them).

    A probe error here is no reason to fail the check: the shared batch and the training runs still speak,
    and the note says what was not measured.
    """
    reasons = []
    for side in SIDES:
        result = rollout[side]
        if result.missing:
            reasons.append(f"{side} lacks {', '.join(result.missing)}")
        elif not result.ok:
            reasons.append(f"{side}: the rollout-loss probe failed ({result.error})")
        elif not result.result.get("policy_api"):
            reasons.append(f"{side}: the policy has no get_action_and_value")
        elif result.result.get("unsupported"):
            reasons.append(
                f"{side}: {result.result['unsupported']} (the rollout batch holds array observations)"
            )
    return "; ".join(reasons)


def training_zero_share(short: Mapping[str, list[Any]]) -> pd.DataFrame | None:
    """Per tensor: the share of sampled optimizer steps in which its gradient norm was exactly zero (None when
    no run recorded per-layer gradient norms)."""
    from rlaudit.trainer.common import stack_tables

    layers = stack_tables(short, "layers")
    if layers.empty or not {"layer", "grad_norm"} <= set(layers.columns):
        return None
    layers["zero"] = layers["grad_norm"] == 0
    share = layers.groupby(["layer", "side"])["zero"].mean().unstack("side")
    for side in SIDES:
        if side not in share:
            share[side] = np.nan
    return share[list(SIDES)].reset_index()


def _rollout_table(rollout: Pair, view: Mapping[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "side": s,
                **{k: rollout[s].result.get(k) for k in ("samples", "value_target_rmse", "advantage_std")},
                **{f"term {k}": v for k, v in rollout[s].result.get("terms", {}).items() if k in CORE_TERMS},
                "zero-gradient tensors": len(view["zeros"][s]),
            }
            for s in SIDES
        ]
    )


FLOW_IN_TRAINING = {
    "id": "loss/gradient-flow-training",
    "hypothesis": "Every parameter receives gradient during training",
}
"""A secondary finding of the gradient-flow check: parameters that get no gradient in the recorded training runs."""


@check(
    "loss/gradient-flow",
    title="Gradient flow",
    needs=lambda wb, seed=0: shared_batch(wb, seed),
    reads=("agents", "init"),
)
def gradient_flow(c: Check, shared: SharedBatch, seed: int = 0) -> Section:
    """Every parameter receives gradient from the loss.

    Per-parameter gradient norms of the loss on the shared batch, on a batch from the subject's own
    rollouts with its trained checkpoint, and from the recorder's per-layer norms during real training.
    """
    from rlaudit.trainer.runs import run_data, runs

    pair, info = shared.pair, shared.info
    findings: list[Finding] = []
    tables: dict[str, Any] = {}
    figures: dict[str, Any] = {}
    counts: dict[str, str] = {}
    if info["batch"] is not None:
        view = zero_gradient_view({s: pair[s].table("gradients") for s in SIDES})
        for side in SIDES:
            counts[side] = f"{view['n_params'] - len(view['zeros'][side])}/{view['n_params']}"
        found = _zero_grad_finding(c, "loss/gradient-flow", "on the shared batch (small value error)", view)
        findings.extend([found] if found else [])
        table = gradient_table(pair)
        tables["gradient norms (shared batch)"] = table
        figures["gradient norms"] = plots.gradient_figure(table)
    # A batch from real rollouts, with the trained checkpoint of the first shared short run when there is one.
    short = run_data(runs(c.wb, short=True))
    rollout = _rollout_pair(c.wb, short, seed)
    unmeasured = _rollout_unmeasured(rollout)
    if not unmeasured:
        view = zero_gradient_view({s: rollout[s].table("gradients") for s in SIDES})
        found = _zero_grad_finding(c, "loss/gradient-flow-rollouts", "on a batch from real rollouts", view)
        findings.extend([found] if found else [])
        tables["real-rollout batch"] = _rollout_table(rollout, view)
    training = training_zero_share(short)
    if training is not None and not training.empty:
        tables["zero-gradient share in training"] = training
        flagged = training[(training["candidate"] >= TRAINING_ZERO_SHARE) & (training["baseline"] == 0)]
        if len(flagged):
            worst = float(flagged["candidate"].max())
            findings.append(
                c.finding(
                    Status.CONFIRMED,
                    Severity.HIGH,
                    **FLOW_IN_TRAINING,
                    baseline=0.0,
                    candidate=worst,
                    effect=worst,
                    effect_label="largest share of sampled optimizer steps with zero gradient",
                    summary=f"in real training, {len(flagged)} tensor(s) of the candidate got zero gradient on up "
                    f"to {pct(worst)} of the sampled optimizer steps ({', '.join(flagged['layer'][:4])}); never "
                    "on the baseline",
                    remediation="See the shared-batch finding: a floor or clamp in the loss stops the gradient.",
                )
            )
    if not any(f.status.is_flag for f in findings):
        findings.append(_all_flow(c, counts, tables))
    notes = [
        batch_note(info, all(pair[s].result.get("shared_weights") for s in SIDES))
        if info["batch"] is not None
        else f"No shared batch: {info['reason']}.",
        "A real-rollout batch is checked as well: early in training, or with a fresh network, value errors are "
        "large and a floor on the value loss never bites, so its zero gradient only shows on a batch like the "
        "shared one (or late in real training).",
    ]
    if unmeasured:
        notes.append(f"No batch from real rollouts: {unmeasured}.")
    return c.section(findings, tables=tables, figures=figures, notes=notes)


def _all_flow(c: Check, counts: Mapping[str, str], tables: Mapping[str, Any]) -> Finding:
    views = [
        view
        for view, key in (
            ("on the shared batch with a small value error", "gradient norms (shared batch)"),
            ("on a batch from real rollouts", "real-rollout batch"),
            ("in the recorded training steps", "zero-gradient share in training"),
        )
        if key in tables
    ]
    if not views:
        c.missing(
            "gradient to inspect (no shared batch, no rollout batch, no per-layer gradient norms in training)",
            "give the subject make_env, make_policy and compute_loss with matching spaces on both sides, a policy "
            "with get_action_and_value, or call recorder.watch(policy, optimizer) in train()",
        )
    return c.finding(
        Status.CLEARED,
        baseline=counts.get("baseline"),
        candidate=counts.get("candidate"),
        effect_label="parameter tensors with non-zero gradient on the shared batch",
        summary=f"every parameter tensor gets non-zero gradient on both sides ({counts.get('baseline', '—')} "
        f"and {counts.get('candidate', '—')}): "
        + ", ".join(views[:-1])
        + (" and " if len(views) > 1 else "")
        + views[-1],
    )
