"""Loss audit: advantages, loss terms, gradient flow and probe environments, side by side.

Case 003 is the model: weeks went to a lambda-return bootstrapped from ``V(s_t)`` instead of ``V(s_{t+1})``,
and to a ``torch.max(free_bits, loss)`` floor that sent zero gradient whenever the loss sat below it. Both are
invisible in a config and in a loss curve; both are obvious when the math is run on inputs whose answer is
known:

- advantages: each subject's ``compute_advantages`` on the same random inputs (episode ends, truncations)
  against the workbench's own GAE and its common mistakes (:mod:`rlaudit.loss.gae`);
- loss terms and gradient flow: each subject's ``compute_loss`` on one identical batch with the same weights,
  designed so that the value loss is small, as it is late in training (where a floor bites); then the same on
  a batch from the subject's own rollouts with a trained checkpoint, and the recorder's per-layer gradient
  norms over real training;
- probe environments (:mod:`rlaudit.loss.envs`): five tiny environments whose answers are known; the first
  rung that fails isolates the bug.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.loss import inputs as staged
from rlaudit.loss import plots, probes
from rlaudit.loss.envs import PROBE_NAMES, PROBES
from rlaudit.loss.gae import VARIANTS, make_gae_inputs, match_variants
from rlaudit.notebook import Section, audit_section
from rlaudit.trainer.common import SIDES, fmt, stack_tables
from rlaudit.trainer.runs import run_data, runs
from rlaudit.workbench import Pair, Workbench

SUBSYSTEM = "loss"
BATCH_SIZE = 512
VALUE_TARGET_NOISE = 0.1  # value targets = V(s) + N(0, 0.1): a value loss of ~0.005, as late in training
TERM_RTOL = 1e-4  # loss terms on identical inputs and weights agree to float32 rounding
PROBE_STEPS = (
    32_768  # probe-environment training: ~8 updates of the built-in PPO; the reference learns all five
)
DESCRIPTIONS = {v.name: v.description for v in VARIANTS}


def stage(wb: Workbench, arrays: Mapping[str, Any]) -> str:
    """Stage arrays in the workbench's cache; relative to its root when workers resolve that root too."""
    from rlaudit.paths import cache_dir

    root = wb.cache.root
    rel = staged.stage(arrays, root=root)
    return rel if root.resolve() == cache_dir().resolve() else str(root / rel)


def cache_relative(wb: Workbench, path: Any) -> str:
    """A path inside the cache as workers resolve it (relative to the root when they share it)."""
    from rlaudit.paths import cache_dir

    root = wb.cache.root.resolve()
    try:
        rel = str(path.resolve().relative_to(root))
    except ValueError:
        return str(path.resolve())
    return rel if root == cache_dir().resolve() else str(root / rel)


# -------------------------------------------------------------------------------------------------------------
# Advantages
# -------------------------------------------------------------------------------------------------------------


def fit_discount(
    advantages: np.ndarray,
    returns: np.ndarray,
    inputs: Mapping[str, np.ndarray],
    variant: str,
    with_truncation: bool,
) -> tuple[float, float, float]:
    """Least-squares gamma and lambda of a variant for a subject whose config does not name them.

    Returns:
        ``(gamma, lambda, max abs error)`` of the best fit over a grid refined once.
    """
    fn = next(v.fn for v in VARIANTS if v.name == variant)
    args = (inputs["rewards"], inputs["values"], inputs["dones"], inputs["next_value"])
    trunc = (inputs.get("truncated"), inputs.get("final_values")) if with_truncation else (None, None)

    def err(g: float, lam: float) -> float:
        a, r = fn(*args, g, lam, *trunc)
        return float(np.max(np.abs(a - advantages)) + np.max(np.abs(r - returns)))

    best = min((err(g, lam), g, lam) for g in np.linspace(0.8, 1.0, 41) for lam in np.linspace(0.0, 1.0, 41))
    _, g0, l0 = best
    fine = min(
        (err(g, lam), g, lam)
        for g in np.clip(np.linspace(g0 - 0.005, g0 + 0.005, 21), 0, 1)
        for lam in np.clip(np.linspace(l0 - 0.025, l0 + 0.025, 21), 0, 1)
    )
    return float(fine[1]), float(fine[2]), float(fine[0])


def advantage_verdicts(pair: Pair) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """Every variant's error for each side's advantages, and per side the variants it matches."""
    frames, per_side = [], {}
    for side in SIDES:
        res = pair[side]
        arrays = res.npz("advantages")
        mode = res.result["mode"]
        with_trunc = mode == "kwargs"
        gamma, lam = res.result.get("gamma"), res.result.get("gae_lambda")
        fitted = gamma is None or lam is None
        if fitted:
            gamma, lam, _ = fit_discount(
                arrays["advantages"], arrays["returns"], arrays, "correct", with_trunc
            )
        rows = match_variants(
            arrays["advantages"], arrays["returns"], arrays, gamma, lam, with_truncation=with_trunc
        )
        frame = pd.DataFrame(rows)
        frame.insert(0, "side", side)
        frames.append(frame)
        per_side[side] = {
            "matches": [r["variant"] for r in rows if r["match"]],
            "gamma": gamma,
            "gae_lambda": lam,
            "fitted": fitted,
            "mode": mode,
            "correct_error": next(r["adv_error"] for r in rows if r["variant"] == "correct"),
            "arrays": arrays,
        }
    return pd.concat(frames, ignore_index=True), per_side


@audit_section("loss/advantages", SUBSYSTEM, "Both setups compute advantages and returns correctly")
def advantages(wb: Workbench, seed: int = 0) -> Section:
    """Each subject's ``compute_advantages`` against the reference GAE and its known mistakes, on shared inputs.

    Args:
        seed: Seed of the random inputs (64 steps x 8 environments, episode ends and truncations).
    """
    hypothesis = "Both setups compute advantages and returns correctly"
    rel = stage(wb, make_gae_inputs(seed))
    pair = wb.run(probes.advantages, inputs=rel)
    if (f := pair.guard("loss/advantages", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    table, verdict = advantage_verdicts(pair)
    findings: list[Finding] = []

    def described(side: str) -> str:
        v = verdict[side]
        if "correct" in v["matches"]:
            return "the reference GAE"
        wrong = [m for m in v["matches"] if m != "correct"]
        if wrong:
            return f"`{wrong[0]}` ({DESCRIPTIONS[wrong[0]]})"
        return f"no known variant (max error {fmt(v['correct_error'])} against the reference)"

    for side in SIDES:
        v = verdict[side]
        if "correct" in v["matches"]:
            continue
        wrong = [m for m in v["matches"] if m != "correct"]
        is_candidate = side == "candidate"
        findings.append(
            Finding(
                id=f"loss/advantages-{side}",
                subsystem=SUBSYSTEM,
                hypothesis=f"The {side} computes advantages and returns correctly",
                status=(Status.CONFIRMED if wrong else Status.SUSPECT) if is_candidate else Status.NOTED,
                severity=Severity.CRITICAL if is_candidate else Severity.MEDIUM,
                evidence=Evidence(
                    baseline=described("baseline"),
                    candidate=described("candidate"),
                    effect=v["correct_error"],
                    effect_label="largest |advantage - reference advantage|",
                    summary=f"the {side}'s compute_advantages matches {described(side)} "
                    f"(gamma {fmt(v['gamma'])}, lambda {fmt(v['gae_lambda'])}"
                    + (", fitted" if v["fitted"] else "")
                    + f"); the {'baseline' if is_candidate else 'candidate'}'s matches "
                    + described("baseline" if is_candidate else "candidate"),
                    details={"matches": v["matches"], "mode": v["mode"]},
                ),
                remediation=_advantage_remedy(wrong[0] if wrong else None),
                figures=["advantages vs reference"],
            )
        )
    if not findings:
        modes = {v["mode"] for v in verdict.values()}
        trunc_note = (
            "truncation handling tested through truncation flags"
            if modes == {"kwargs"}
            else "truncations passed with the bootstrap folded into the rewards (compute_advantages takes no "
            "truncation flags, so the caller's share of it is not tested here)"
        )
        findings.append(
            Finding(
                id="loss/advantages",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=verdict["baseline"]["correct_error"],
                    candidate=verdict["candidate"]["correct_error"],
                    effect_label="largest |advantage - reference advantage|",
                    summary=f"both match the reference GAE (max error {fmt(verdict['baseline']['correct_error'])} and "
                    f"{fmt(verdict['candidate']['correct_error'])}; gamma {fmt(verdict['baseline']['gamma'])}/"
                    f"{fmt(verdict['candidate']['gamma'])}, lambda {fmt(verdict['baseline']['gae_lambda'])}/"
                    f"{fmt(verdict['candidate']['gae_lambda'])}); {trunc_note}",
                ),
            )
        )
    shown = table.pivot_table(
        index="variant", columns="side", values="adv_error", aggfunc="first", dropna=False
    )
    shown = shown.reindex([v.name for v in VARIANTS]).reset_index()
    shown.insert(1, "description", [DESCRIPTIONS[n] for n in shown["variant"]])
    for side in SIDES:
        shown[f"{side} matches"] = shown["variant"].isin(verdict[side]["matches"])
    notes = [
        f"Inputs: 64 steps x 8 environments drawn with seed {seed} (sparse rewards, spread values, episode ends "
        "with some truncations), staged once and handed to both workers. Each side is compared with the reference "
        "computed with its own gamma and lambda (read from its config).",
        "A variant that matches names the mistake: `bootstrap_current` is case 003's lambda returns from V(s_t).",
    ]
    return Section(
        title="Advantages and returns against the reference GAE",
        findings=findings,
        tables={"advantage errors by variant": shown},
        figures={"advantages vs reference": plots.advantages_figure(verdict)},
        notes=notes,
    )


def _advantage_remedy(variant: str | None) -> str:
    return {
        None: "Compare compute_advantages line by line with rlaudit.loss.gae.reference_gae on the staged inputs.",
        "bootstrap_current": "Bootstrap from the next state's value: use values[t + 1] (next_value at the last step) "
        "in delta_t, not values[t].",
        "done_late": "Mask with the done flag of the same step t (the episode ended after acting in s_t), not t-1.",
        "done_early": "Mask with the done flag of step t, not t+1.",
        "no_done_mask": "Multiply the bootstrap and the lambda recursion by (1 - done_t).",
        "truncation_as_termination": "Bootstrap truncated steps with gamma * V(final_obs) instead of treating them "
        "as terminal.",
        "truncation_ignored": "Stop the bootstrap at truncations too (after adding gamma * V(final_obs)).",
        "lambda_zero": "Apply gae_lambda in the recursion A_t = delta_t + gamma * lambda * A_t+1.",
        "lambda_one": "Apply gae_lambda in the recursion A_t = delta_t + gamma * lambda * A_t+1.",
    }.get(variant, "Fix compute_advantages to match the reference GAE.")


# -------------------------------------------------------------------------------------------------------------
# Loss terms and gradient flow on one shared batch
# -------------------------------------------------------------------------------------------------------------


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


def shared_batch(wb: Workbench, seed: int) -> tuple[Pair, dict[str, Any]]:
    """Stage the shared weights and batch, then run the loss probe on both sides.

    Returns:
        ``(pair, info)``; ``info``: ``weights`` (staged path or None), ``batch``, ``reason`` (why no identical
        batch or weights), ``snapshot`` (the snapshot pair).
    """
    snap = wb.run(probes.policy_snapshot, seed=seed)
    info: dict[str, Any] = {"snapshot": snap, "weights": None, "batch": None, "reason": None}
    if not snap.ok:
        return snap, info
    spaces = {s: snap[s].result for s in SIDES}
    if spaces["baseline"]["obs_shape"] != spaces["candidate"]["obs_shape"] or (
        spaces["baseline"]["n_actions"] != spaces["candidate"]["n_actions"]
    ):
        info["reason"] = (
            f"the spaces differ (observations {spaces['baseline']['obs_shape']} vs {spaces['candidate']['obs_shape']}, "
            f"actions {spaces['baseline']['n_actions']} vs {spaces['candidate']['n_actions']}): no batch fits both"
        )
        return snap, info
    base_w, cand_w = snap["baseline"].npz("weights"), snap["candidate"].npz("weights")
    same_arch = set(base_w) == set(cand_w) and all(base_w[k].shape == cand_w[k].shape for k in base_w)
    weights = stage(wb, base_w) if same_arch else None
    if not same_arch:
        info["reason"] = "the networks' parameter names or shapes differ: each side keeps its own seeded init"
    info["weights"] = weights
    obs_shape, n_actions = spaces["baseline"]["obs_shape"], int(spaces["baseline"]["n_actions"] or 1)
    draft = make_batch(obs_shape, n_actions, BATCH_SIZE, seed, None, None)
    obs_rel = stage(wb, {"obs": draft["obs"], "actions": draft["actions"]})
    out = wb.run_side("baseline", probes.policy_outputs, obs=obs_rel, weights=weights, seed=seed)
    values = logprobs = None
    if out.ok and out.result.get("policy_api"):
        arrays = out.npz("outputs")
        values, logprobs = arrays["values"], arrays["logprobs"]
    batch = make_batch(obs_shape, n_actions, BATCH_SIZE, seed, values, logprobs)
    info["batch"] = stage(wb, batch)
    info["batch_arrays"] = batch
    pair = wb.run(probes.loss_terms, batch=info["batch"], weights=weights, seed=seed)
    return pair, info


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


CORE_TERMS = ("loss", "policy_loss", "value_loss", "entropy")


@audit_section("loss/terms", SUBSYSTEM, "The loss terms agree on one identical batch with the same weights")
def loss_terms(wb: Workbench, seed: int = 0) -> Section:
    """Policy, value, entropy and total loss of both subjects on one batch (staged once), with shared weights."""
    hypothesis = "The loss terms agree on one identical batch with the same weights"
    pair, info = shared_batch(wb, seed)
    if (f := pair.guard("loss/terms", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    if info["batch"] is None:
        return Section.of(
            Finding(
                id="loss/terms",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                evidence=Evidence(summary=f"not compared: {info['reason']}"),
                remediation="See 10_spaces for the space change; compare the losses after aligning the spaces.",
            )
        )
    shared = all(pair[s].result.get("shared_weights") for s in SIDES)
    terms = {s: pair[s].json("terms") for s in SIDES}
    table = compare_terms(terms)
    core = table[table["term"].isin(CORE_TERMS)]
    differing = core[core["differs"]]
    findings = []
    if len(differing) and shared:
        parts = [
            f"{r['term']} {fmt(r['baseline'], 4)} → {fmt(r['candidate'], 4)}"
            + (f" (x{fmt(r['ratio'])})" if r["ratio"] is not None and r["ratio"] > 0 else "")
            for r in differing.to_dict("records")
        ]
        only_total = set(differing["term"]) == {"loss"}
        worst = differing.iloc[0] if only_total else differing[differing["term"] != "loss"].iloc[0]
        findings.append(
            Finding(
                id="loss/terms",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline={r["term"]: r["baseline"] for r in core.to_dict("records")},
                    candidate={r["term"]: r["candidate"] for r in core.to_dict("records")},
                    effect=float(worst["difference"]) if worst["difference"] is not None else None,
                    effect_label=f"{worst['term']} candidate - baseline",
                    summary="same batch, same weights, different loss: "
                    + "; ".join(parts)
                    + (
                        " (only the total differs: the coefficients that weight the terms changed)"
                        if only_total
                        else ""
                    ),
                    details={"terms": table.to_dict("records")},
                ),
                remediation="Diff the candidate's compute_loss against the baseline's for the terms named "
                "(coefficients, clipping, reductions, floors).",
                figures=["loss terms"],
            )
        )
    elif len(differing):
        findings.append(
            Finding(
                id="loss/terms",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                evidence=Evidence(
                    summary=f"the terms differ, but the networks differ too ({info['reason']}), so the "
                    "comparison is not like for like",
                    details={"terms": table.to_dict("records")},
                ),
                remediation="Compare after aligning the architectures (01_agents).",
            )
        )
    else:
        findings.append(
            Finding(
                id="loss/terms",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline={r["term"]: r["baseline"] for r in core.to_dict("records")},
                    candidate={r["term"]: r["candidate"] for r in core.to_dict("records")},
                    summary="identical terms on the shared batch: "
                    + ", ".join(f"{r['term']} {fmt(r['baseline'], 4)}" for r in core.to_dict("records")),
                ),
            )
        )
    return Section(
        title="Loss terms on one identical batch",
        findings=findings,
        tables={"loss terms": table},
        figures={"loss terms": plots.terms_figure(core)},
        notes=[_batch_note(info, shared)],
    )


def _batch_note(info: Mapping[str, Any], shared: bool) -> str:
    return (
        f"Batch: {BATCH_SIZE} samples, observations N(0, 1), uniform actions, advantages N(0, 1); behaviour "
        "log-probabilities and values are the shared network's own (importance ratio 1), and the value targets are "
        f"the values plus N(0, {VALUE_TARGET_NOISE}) noise, so the value loss is small (~0.005), as late in training. "
        "That is where a loss floor such as case 003's torch.max(free_bits, loss) bites: above the floor the gradient "
        "flows, below it none does. "
        + (
            "Both networks were loaded with the baseline's initial weights."
            if shared
            else f"Weights: {info.get('reason')}."
        )
    )


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
    terms = [
        t for t in ("loss", "policy_loss", "value_loss", "entropy") if t in wide.columns.get_level_values(0)
    ]
    wide = wide[[(t, s) for t in terms for s in SIDES if (t, s) in wide.columns]]
    wide.columns = [f"{t} {s}" for t, s in wide.columns]
    return wide.reset_index()


def _zero_grad_finding(
    fid: str,
    where: str,
    zeros: Mapping[str, list[str]],
    per_term: Mapping[str, Mapping[str, list[str]]],
    n_params: int,
) -> Finding | None:
    new = [p for p in zeros["candidate"] if p not in zeros["baseline"]]
    if not new:
        return None
    silent_terms = [
        t
        for t, z in per_term.get("candidate", {}).items()
        if t != "loss" and set(new) <= set(z) and not set(new) <= set(per_term.get("baseline", {}).get(t, []))
    ]
    heads = sorted({p.split(".")[0] for p in new})
    return Finding(
        id=fid,
        subsystem=SUBSYSTEM,
        hypothesis=f"Every parameter receives gradient from the loss ({where})",
        status=Status.CONFIRMED,
        severity=Severity.CRITICAL,
        evidence=Evidence(
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
        ),
        remediation="Replace the floor with a straight-through form, e.g. `loss + (floor - loss).clamp(min=0).detach()`, "
        "so the value stays floored but the gradient flows (or remove the floor).",
        figures=["gradient norms"],
    )


@audit_section("loss/gradient-flow", SUBSYSTEM, "Every parameter receives gradient from the loss")
def gradient_flow(wb: Workbench, seed: int = 0) -> Section:
    """Per-parameter gradient norms of the loss on the shared batch, on a batch from the subject's own
    rollouts with its trained checkpoint, and from the recorder's per-layer norms during real training."""
    hypothesis = "Every parameter receives gradient from the loss"
    pair, info = shared_batch(wb, seed)
    if (f := pair.guard("loss/gradient-flow", SUBSYSTEM, hypothesis)) is not None:
        return Section.of(f)
    findings: list[Finding] = []
    tables: dict[str, Any] = {}
    figures: dict[str, Any] = {}
    counts: dict[str, str] = {}
    if info["batch"] is not None:
        grads = {s: pair[s].table("gradients") for s in SIDES}
        zeros = {s: zero_gradients(grads[s]) for s in SIDES}
        for side in SIDES:
            total = int((grads[side]["term"] == "loss").sum())
            counts[side] = f"{total - len(zeros[side])}/{total}"
        per_term = {s: {t: zero_gradients(grads[s], t) for t in grads[s]["term"].unique()} for s in SIDES}
        n_params = int((grads["candidate"]["term"] == "loss").sum())
        found = _zero_grad_finding(
            "loss/gradient-flow", "on the shared batch (small value error)", zeros, per_term, n_params
        )
        if found:
            findings.append(found)
        table = gradient_table(pair)
        tables["gradient norms (shared batch)"] = table
        figures["gradient norms"] = plots.gradient_figure(table)
    # A batch from real rollouts, with the trained checkpoint of the first shared short run when there is one.
    short = run_data(runs(wb, short=True))
    rollout = _rollout_pair(wb, short, seed)
    if rollout is not None and rollout.ok and all(rollout[s].result.get("policy_api") for s in SIDES):
        grads = {s: rollout[s].table("gradients") for s in SIDES}
        zeros = {s: zero_gradients(grads[s]) for s in SIDES}
        per_term = {s: {t: zero_gradients(grads[s], t) for t in grads[s]["term"].unique()} for s in SIDES}
        n_params = int((grads["candidate"]["term"] == "loss").sum())
        found = _zero_grad_finding(
            "loss/gradient-flow-rollouts", "on a batch from real rollouts", zeros, per_term, n_params
        )
        if found:
            findings.append(found)
        tables["real-rollout batch"] = pd.DataFrame(
            [
                {
                    "side": s,
                    **{
                        k: rollout[s].result.get(k) for k in ("samples", "value_target_rmse", "advantage_std")
                    },
                    **{
                        f"term {k}": v
                        for k, v in rollout[s].result.get("terms", {}).items()
                        if k in CORE_TERMS
                    },
                    "zero-gradient tensors": len(zeros[s]),
                }
                for s in SIDES
            ]
        )
    training = _training_zero_fraction(short)
    if training is not None and not training.empty:
        tables["zero-gradient share in training"] = training
        flagged = training[(training["candidate"] >= 0.25) & (training["baseline"] == 0)]
        if len(flagged):
            findings.append(
                Finding(
                    id="loss/gradient-flow-training",
                    subsystem=SUBSYSTEM,
                    hypothesis="Every parameter receives gradient during training",
                    status=Status.CONFIRMED,
                    severity=Severity.HIGH,
                    evidence=Evidence(
                        baseline=0.0,
                        candidate=float(flagged["candidate"].max()),
                        effect=float(flagged["candidate"].max()),
                        effect_label="largest share of sampled optimizer steps with zero gradient",
                        summary=f"in real training, {len(flagged)} tensor(s) of the candidate got zero gradient on up to "
                        f"{flagged['candidate'].max():.0%} of the sampled optimizer steps ({', '.join(flagged['layer'][:4])}); "
                        "never on the baseline",
                    ),
                    remediation="See the shared-batch finding: a floor or clamp in the loss stops the gradient.",
                )
            )
    if not any(f.status.is_flag for f in findings):
        findings.append(
            Finding(
                id="loss/gradient-flow",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=counts.get("baseline"),
                    candidate=counts.get("candidate"),
                    effect_label="parameter tensors with non-zero gradient on the shared batch",
                    summary=f"every parameter tensor gets non-zero gradient on both sides ({counts.get('baseline', '—')} "
                    f"and {counts.get('candidate', '—')}): on the shared batch with a small value error"
                    + (", on a batch from real rollouts" if "real-rollout batch" in tables else "")
                    + (
                        " and in the recorded training steps"
                        if "zero-gradient share in training" in tables
                        else ""
                    ),
                ),
            )
        )
    notes = [
        _batch_note(info, all(pair[s].result.get("shared_weights") for s in SIDES))
        if info["batch"] is not None
        else f"No shared batch: {info['reason']}.",
        "A real-rollout batch is checked as well: early in training, or with a fresh network, value errors are large "
        "and a floor on the value loss never bites, so its zero gradient only shows on a batch like the shared one "
        "(or late in real training).",
    ]
    return Section(title="Gradient flow", findings=findings, tables=tables, figures=figures, notes=notes)


def _rollout_pair(wb: Workbench, short: Mapping[str, list[Any]], seed: int) -> Pair | None:
    """The rollout-loss probe on both sides, each with its own first short run's checkpoint (when it has one)."""
    results = {}
    for side in SIDES:
        checkpoint = None
        if short.get(side) and short[side][0].checkpoints:
            checkpoint = cache_relative(wb, short[side][0].checkpoints[0])
        results[side] = wb.run_side(side, probes.rollout_loss, seed=seed, steps=2048, checkpoint=checkpoint)
    return Pair(baseline=results["baseline"], candidate=results["candidate"])


def _training_zero_fraction(short: Mapping[str, list[Any]]) -> pd.DataFrame | None:
    """Per tensor: the share of sampled optimizer steps in which its gradient norm was exactly zero."""
    layers = stack_tables(short, "layers")
    if layers.empty:
        return None
    layers["zero"] = layers["grad_norm"] == 0
    share = layers.groupby(["layer", "side"])["zero"].mean().unstack("side")
    for side in SIDES:
        if side not in share:
            share[side] = np.nan
    return share[list(SIDES)].reset_index()


# -------------------------------------------------------------------------------------------------------------
# Probe environments
# -------------------------------------------------------------------------------------------------------------


@audit_section("loss/probe-envs", SUBSYSTEM, "Both setups learn the five probe environments")
def probe_envs(wb: Workbench, seed: int = 0, steps: int = PROBE_STEPS) -> Section:
    """Train each subject on each probe environment (``train(..., env_fn=...)``) and judge what it learned."""
    hypothesis = "Both setups learn the five probe environments"
    pairs = wb.run_many(
        probes.probe_env_run,
        [dict(probe=p, steps=steps, seed=seed) for p in PROBE_NAMES],
        desc="probe environments",
    )
    for pair in pairs:
        if (f := pair.guard("loss/probe-envs", SUBSYSTEM, hypothesis)) is not None:
            return Section.of(f)
    rows = []
    for name, pair in zip(PROBE_NAMES, pairs, strict=True):
        for side in SIDES:
            r = pair[side].result
            rows.append(
                {
                    "probe": f"{PROBES[name].index}. {name}",
                    "name": name,
                    "side": side,
                    "supported": r.get("supported", False),
                    "passed": bool(r.get("passed", False)),
                    "value_error": r.get("value_error"),
                    "p_good": r.get("p_good"),
                    "reason": r.get("reason"),
                    "isolates": PROBES[name].isolates,
                }
            )
    table = pd.DataFrame(rows)
    unsupported = sorted(set(table[~table["supported"]]["side"]))
    if unsupported:
        reason = table[~table["supported"]]["reason"].iloc[0]
        return Section.of(
            Finding(
                id="loss/probe-envs",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.NOTED,
                evidence=Evidence(summary=f"not run on {', '.join(unsupported)}: {reason}"),
                remediation="Give train() an env_fn=(num_envs, seed) -> VectorEnv argument to run the probes.",
            ),
            title="Probe environments",
        )
    findings = []
    passed = {s: table[table["side"] == s].set_index("name")["passed"] for s in SIDES}
    fails = [n for n in PROBE_NAMES if passed["baseline"][n] and not passed["candidate"][n]]
    both = [n for n in PROBE_NAMES if not passed["baseline"][n] and not passed["candidate"][n]]
    if fails:
        first = fails[0]
        row = table[(table["name"] == first) & (table["side"] == "candidate")].iloc[0]
        findings.append(
            Finding(
                id="loss/probe-envs",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CONFIRMED
                if len(fails) >= 2 or (row["value_error"] or 0) > 0.5
                else Status.SUSPECT,
                severity=Severity.HIGH,
                evidence=Evidence(
                    baseline=f"{int(passed['baseline'].sum())}/5 passed",
                    candidate=f"{int(passed['candidate'].sum())}/5 passed",
                    effect=float(len(fails)),
                    effect_label="probes the baseline passes and the candidate fails",
                    summary=f"the candidate fails {', '.join(fails)} (the baseline passes {'it' if len(fails) == 1 else 'them'}); the first failing rung, "
                    f"{PROBES[first].index}. {first}, isolates {PROBES[first].isolates}: {row['reason']}",
                    details={"failed": fails},
                ),
                remediation=f"Look at {PROBES[first].isolates} in the candidate; the probe reproduces it in seconds "
                f"(rlaudit.loss.envs.make_probe_env('{first}', num_envs, seed)).",
                figures=["probe grid"],
            )
        )
    if both:
        findings.append(
            Finding(
                id="loss/probe-envs-both",
                subsystem=SUBSYSTEM,
                hypothesis="The baseline learns every probe environment",
                status=Status.NOTED,
                severity=Severity.LOW,
                evidence=Evidence(
                    summary=f"both sides fail {', '.join(both)} in {steps:,} steps: either a shared bug or "
                    "too short a run for these settings"
                ),
                remediation="Rerun the probes with more steps (probe_envs(wb, steps=...)) before reading the failure.",
            )
        )
    if not fails and not both:
        findings.append(
            Finding(
                id="loss/probe-envs",
                subsystem=SUBSYSTEM,
                hypothesis=hypothesis,
                status=Status.CLEARED,
                evidence=Evidence(
                    baseline=f"{int(passed['baseline'].sum())}/5 passed",
                    candidate=f"{int(passed['candidate'].sum())}/5 passed",
                    summary=f"both learn all five probes in {steps:,} steps (largest value error "
                    f"{fmt(table['value_error'].max())})",
                ),
            )
        )
    notes = [
        "The ladder of Andy Jones' 'Debugging RL, Without the Agonizing Pain': each rung adds one thing to learn, "
        "so the first rung that fails isolates the bug. Pass: value within 0.1 of its target on probes 1-3 (0.3 on "
        "4-5, where the target moves with the policy), and the rewarded action's probability at least 0.9.",
        f"Each subject trains {steps:,} steps per probe with seed {seed} through its own train(env_fn=...); the final "
        "checkpoint is loaded with load_checkpoint and read on every probe state.",
    ]
    shown = table.drop(columns=["name"])
    return Section(
        title="Probe environments",
        findings=findings,
        tables={"probe grid": shown},
        figures={"probe grid": plots.probe_grid_figure(table)},
        notes=notes,
    )


def audit_all(wb: Workbench) -> list[Section]:
    """Every loss check, in notebook order."""
    return [advantages(wb), loss_terms(wb), gradient_flow(wb), probe_envs(wb)]
