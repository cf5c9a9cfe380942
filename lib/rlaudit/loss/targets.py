"""Loss audit, TD targets: what each off-policy subject's ``compute_td_targets`` actually bootstraps from.

Case 003 lost weeks to a lambda return bootstrapped from ``V(s_t)`` where ``V(s_{t+1})`` belonged; a TD target
that drops its ``(1 - done)`` mask, treats a time-limit truncation as terminal, discounts by another γ or reads
the online network where the target network belonged is as invisible in a loss curve. Each of them is a
quantity the targets of a controlled batch give away (:func:`rlaudit.loss.probes.td_targets`):

- γ: the targets with every reward 0 over the bootstrap value the subject reports (``bootstrap``);
- the reward's coefficient: targets with every reward 1 minus those with every reward 0 (1 for a one-step
  target; an n-step target built from single transitions scales it too);
- the done mask: the share of the bootstrap that survives when every transition is terminated (0 expected);
- truncation: the share that survives when every transition is truncated but not terminated (1 expected);
- the bootstrap's state: whether other next observations move the targets, and whether other current
  observations do (``s_{t+1}`` expected; ``s_t`` is case 003's off-by-one);
- the bootstrap's network: whether perturbing the target networks' parameters moves the targets, and whether
  perturbing the online networks' does (``target`` for DQN; both for double-Q, whose argmax is online);
- the twin-critic reduction and SAC's entropy term, where the subject reports each target critic's next-state
  value (``next_q``, (B, n_critics)) and the next action's log-probability (``next_log_prob``): every case
  without an episode end gives, per row, the bootstrap (target minus reward) and those terms; the bootstrap is
  fitted as ``a * R(next_q) + b * next_log_prob`` for each reduction ``R`` (min, max, mean, one critic), the
  reduction is the one that fits exactly, and ``b / a`` is the coefficient of ``log π`` in the bootstrap
  (``-α`` for SAC with its reported ``ent_coef`` α, 0 when the entropy term is dropped). The controlled batches
  vary the next observations and both networks, so reductions that differ anywhere tell apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.io import read_table, table_path
from rlaudit.engine.workbench import Pair
from rlaudit.evidence import fmt
from rlaudit.findings import Severity, Status
from rlaudit.loss import probes
from rlaudit.notebook import Section

MOVES = 1e-3
"""A change of the targets counts when its mean absolute size exceeds this share of the bootstrap's."""
SHARE_TOL = 0.02
"""Two shares of the bootstrap (done mask, truncation) agree within this."""
RATIO_TOL = 1e-3
"""γ and the reward coefficient agree within this relative difference."""

EXPECTED = {
    "terminal bootstrap kept": 0.0,
    "truncation bootstrap kept": 1.0,
    "bootstrap state": "s_{t+1}",
}

FIT_TOL = 1e-4
"""A reduction of the critics fits the bootstrap when its least-squares residual is below this share of the
bootstrap's size (float32 targets leave about 1e-7)."""
ENTROPY_TOL = 0.01
"""The coefficient of ``log π`` reads as ``-α``, ``+α`` or dropped within this share of α."""
NOT_REPORTED = "not reported"
"""A quantity the subject's ``compute_td_targets`` gives nothing to measure from (``next_q``, ``next_log_prob``);
it is left out of the comparison."""
FIT_CASES = ("base", "rewards_0", "rewards_1", "next_obs", "obs", "target", "online")
"""The cases without an episode end: their targets minus rewards are the whole bootstrap."""

QUANTITIES = (
    "gamma",
    "reward coefficient",
    "terminal bootstrap kept",
    "truncation bootstrap kept",
    "bootstrap state",
    "bootstrap network",
    "twin-critic reduction",
    "entropy term",
)
OPTIONAL = ("twin-critic reduction", "entropy term")
"""Quantities compared only when both sides report what they are read from."""


def _mean_abs(x: np.ndarray) -> float:
    return float(np.mean(np.abs(x))) if len(x) else math.nan


def _reductions(q: np.ndarray) -> dict[str, np.ndarray]:
    """Each way a bootstrap can reduce (B, n_critics) critic values: named as the findings show them."""
    k = q.shape[1]
    if k == 1:
        return {"1 critic": q[:, 0]}
    out = {
        f"min over {k} critics": q.min(axis=1),
        f"mean over {k} critics": q.mean(axis=1),
        f"max over {k} critics": q.max(axis=1),
    }
    out.update({f"critic {i} only": q[:, i] for i in range(k)})
    return out


def critic_terms(
    cases: pd.DataFrame, terms: pd.DataFrame, reward_coefficient: float, ent_coef: float | None = None
) -> dict[str, Any]:
    """The twin-critic reduction and the entropy term of the bootstrap, from the probe's ``td_terms`` table.

    Args:
        cases: The ``td_cases`` table (case, row, target, reward of the base batch).
        terms: The ``td_terms`` table: case, row, ``next_q_0`` ... and ``next_log_prob`` (NaN when not reported).
        reward_coefficient: The measured reward coefficient (what a reward of 1 adds to the target).
        ent_coef: The entropy coefficient α the subject reports, if any.

    Returns:
        ``twin-critic reduction`` (``min over 2 critics``, ``critic 0 only``, ``1 critic``, ... or why none can be
        named), ``entropy term`` (``-α·log π``, ``missing``, ``+α·log π (sign flipped)``, another multiple of α,
        or ``not reported``), and ``fit``: the residual share of each reduction and the fitted coefficients.
    """
    critics = sorted(
        (c for c in terms.columns if c.startswith("next_q_")), key=lambda c: int(c.rsplit("_", 1)[1])
    )
    out: dict[str, Any] = {"twin-critic reduction": NOT_REPORTED, "entropy term": NOT_REPORTED, "fit": {}}
    rows = terms.merge(cases, on=["case", "row"], how="inner")
    rows = rows[rows["case"].isin(FIT_CASES)].sort_values(["case", "row"])
    if rows.empty or not critics:  # without the critics' values neither term can be told from them
        return out
    reward = rows["reward"].to_numpy(dtype=float)
    reward = np.where(rows["case"] == "rewards_0", 0.0, np.where(rows["case"] == "rewards_1", 1.0, reward))
    y = rows["target"].to_numpy(dtype=float) - reward_coefficient * reward
    q = rows[critics].to_numpy(dtype=float)
    log_prob = (
        rows["next_log_prob"].to_numpy(dtype=float) if "next_log_prob" in rows else np.full(len(y), np.nan)
    )
    has_log_prob = bool(np.isfinite(log_prob).all())
    keep = np.isfinite(y) & np.isfinite(q).all(axis=1)
    y, q, log_prob = y[keep], q[keep], log_prob[keep]
    scale = max(float(np.sqrt(np.mean(y**2))), 1e-12)
    results: dict[str, tuple[float, np.ndarray]] = {}
    for name, r in _reductions(q).items():
        x = np.stack([r, log_prob], axis=1) if has_log_prob else r[:, None]
        beta, *_ = np.linalg.lstsq(x, y, rcond=None)
        results[name] = (float(np.sqrt(np.mean((y - x @ beta) ** 2))) / scale, beta)
    out["fit"] = {
        name: {"residual": res, "coefficients": beta.tolist()} for name, (res, beta) in results.items()
    }
    best = min(results, key=lambda k: results[k][0])
    residual, beta = results[best]
    fitting = [name for name, (res, _) in results.items() if res <= FIT_TOL]
    if len(critics) > 1 and np.allclose(q, q[:, :1], rtol=1e-6, atol=1e-9):
        out["twin-critic reduction"] = f"not separable ({len(critics)} critics agree on every row)"
    elif not fitting:
        out["twin-critic reduction"] = (
            f"none of min, mean, max or one critic (best: {best}, residual {fmt(residual)})"
        )
    elif len(fitting) > 1:
        out["twin-critic reduction"] = f"not separable ({' = '.join(fitting)} on this batch)"
    else:
        out["twin-critic reduction"] = best
    if not has_log_prob:
        return out
    if residual > FIT_TOL:
        out["entropy term"] = "not measurable (the bootstrap fits no reduction of next_q and log π)"
        return out
    gain, coef_lp = float(beta[0]), float(beta[1])
    if abs(gain) < 1e-12:
        out["entropy term"] = "not measurable (the bootstrap does not grow with the critics)"
        return out
    coefficient = coef_lp / gain
    out["entropy coefficient"] = coefficient
    if ent_coef is not None and ent_coef > 0:
        ratio = coefficient / ent_coef
        if abs(ratio) <= ENTROPY_TOL:
            out["entropy term"] = "missing"
        elif abs(ratio + 1) <= ENTROPY_TOL:
            out["entropy term"] = "−α·log π"
        elif abs(ratio - 1) <= ENTROPY_TOL:
            out["entropy term"] = "+α·log π (sign flipped)"
        else:
            out["entropy term"] = f"{-ratio:.3g}·(−α·log π)"
    else:
        size = abs(coefficient) * float(np.sqrt(np.mean(log_prob**2))) * abs(gain)
        out["entropy term"] = "missing" if size <= MOVES * scale else f"{coefficient:+.3g}·log π"
    return out


def td_quantities(
    cases: pd.DataFrame,
    bootstrap: np.ndarray | None = None,
    terms: pd.DataFrame | None = None,
    ent_coef: float | None = None,
) -> dict[str, Any]:
    """The quantities a subject's TD targets use, from the ``td_cases`` table of the probe.

    Args:
        cases: Columns ``case``, ``row``, ``target``, ``reward`` (one row per case and batch row).
        bootstrap: The subject's own next-state values for the base batch, when it reports them.
        terms: The probe's ``td_terms`` table (per-critic next-state values and the next log-probability), when
            the subject reports them; see :func:`critic_terms`.
        ent_coef: The entropy coefficient the subject reports.

    Returns:
        ``gamma`` (NaN when no bootstrap is reported), ``reward coefficient``, ``terminal bootstrap kept``,
        ``truncation bootstrap kept`` (shares of the base batch's bootstrap), ``bootstrap state`` (``s_{t+1}``,
        ``s_t``, ``s_t and s_{t+1}`` or ``none``), ``bootstrap network`` (``target``, ``online``, ``target and
        online`` or ``none``; ``not separable`` without target networks), ``twin-critic reduction`` and
        ``entropy term`` (``not reported`` without ``terms``), ``ent_coef``, and the raw moves.
    """
    by = {c: g.sort_values("row") for c, g in cases.groupby("case")}
    t = {c: g["target"].to_numpy(dtype=float) for c, g in by.items()}
    reward = by["base"]["reward"].to_numpy(dtype=float)
    boot = t["base"] - reward  # gamma * mask * V(s')
    scale = max(_mean_abs(boot), 1e-12)

    def moved(case: str) -> float:
        return _mean_abs(t[case] - t["base"]) / scale if case in t else math.nan

    out: dict[str, Any] = {}
    if bootstrap is not None and len(bootstrap) == len(t["rewards_0"]) and np.any(bootstrap != 0):
        b = np.asarray(bootstrap, dtype=float)
        out["gamma"] = float(np.dot(t["rewards_0"], b) / np.dot(b, b))
    else:
        out["gamma"] = math.nan
    out["reward coefficient"] = float(np.median(t["rewards_1"] - t["rewards_0"]))
    out["terminal bootstrap kept"] = _mean_abs(t["terminated"] - reward) / scale
    out["truncation bootstrap kept"] = _mean_abs(t["truncated"] - reward) / scale
    on_next, on_obs = moved("next_obs") > MOVES, moved("obs") > MOVES
    out["bootstrap state"] = {
        (True, False): "s_{t+1}",
        (False, True): "s_t",
        (True, True): "s_t and s_{t+1}",
        (False, False): "none",
    }[(on_next, on_obs)]
    target_move, online_move = moved("target"), moved("online")
    if math.isnan(target_move):
        out["bootstrap network"] = "not separable (no target_networks)"
    else:
        out["bootstrap network"] = {
            (True, False): "target",
            (False, True): "online",
            (True, True): "target and online (double-Q argmax)",
            (False, False): "none",
        }[(target_move > MOVES, online_move > MOVES)]
    if terms is not None and not terms.empty:
        out.update(critic_terms(cases, terms, out["reward coefficient"], ent_coef))
    else:
        out.update({"twin-critic reduction": NOT_REPORTED, "entropy term": NOT_REPORTED, "fit": {}})
    out["ent_coef"] = None if ent_coef is None else float(ent_coef)
    out["moves"] = {
        "next_obs": moved("next_obs"),
        "obs": moved("obs"),
        "target": target_move,
        "online": online_move,
    }
    return out


def _same(name: str, a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if name in ("terminal bootstrap kept", "truncation bootstrap kept"):
        return abs(a - b) <= SHARE_TOL
    return math.isclose(a, b, rel_tol=RATIO_TOL, abs_tol=1e-9)


def _missing(value: Any) -> bool:
    return (isinstance(value, float) and math.isnan(value)) or value == NOT_REPORTED


def _show(name: str, value: Any, ent_coef: float | None = None) -> str:
    if name == "entropy term" and "α" in str(value) and ent_coef is not None:
        return f"{value} (α={fmt(ent_coef)} as built)"  # the probe's fresh learner, not the run's α
    if isinstance(value, str):
        return value
    if name.endswith("kept"):
        return f"{100 * float(value):.0f}%"
    return fmt(value)


def deviations(q: Mapping[str, Any]) -> list[str]:
    """How one side's targets differ from a correct one-step TD target (whatever the other side does)."""
    out = []
    if q["terminal bootstrap kept"] > SHARE_TOL:
        out.append(
            f"terminal transitions keep {_show('x kept', q['terminal bootstrap kept'])} of the bootstrap"
        )
    if q["truncation bootstrap kept"] < 1 - SHARE_TOL:
        out.append(
            f"truncated transitions keep {_show('x kept', q['truncation bootstrap kept'])} of the bootstrap "
            "(a time limit treated as terminal)"
        )
    if q["bootstrap state"] != EXPECTED["bootstrap state"]:
        out.append(f"the bootstrap reads {q['bootstrap state']}, not s_{{t+1}}")
    if q.get("entropy term") == "+α·log π (sign flipped)":
        out.append("the entropy term adds α·log π, a penalty on entropy instead of a bonus")
    return out


REMEDIES = {
    "gamma": "Use the configured discount in the TD target (a hard-coded or stale gamma overrides it).",
    "reward coefficient": "Add the reward as it is (one-step) or the n-step discounted sum, as configured.",
    "terminal bootstrap kept": "Multiply the bootstrap by (1 - terminated).",
    "truncation bootstrap kept": "Bootstrap truncated transitions from their final observation; only "
    "terminations end the return.",
    "bootstrap state": "Bootstrap from the next observation: V(s_{t+1}) = max_a Q_target(next_obs, a), "
    "not the current one (case 003's off-by-one).",
    "bootstrap network": "Compute the bootstrap with the target network (and, for double-Q, the argmax with "
    "the online one) as the baseline does.",
    "twin-critic reduction": "Bootstrap from the reduction of the target critics the baseline uses (SAC and "
    "TD3: the minimum over both, clipped double-Q, which keeps the critic from overestimating).",
    "entropy term": "Subtract α·log π(a'|s') of the sampled next action from the bootstrap, as SAC's soft "
    "value does, with the current temperature α.",
}


@check(
    "loss/td-targets",
    title="Do the TD targets bootstrap the same way?",
    probe=probes.td_targets,
    desc="loss: TD targets",
)
def td_targets(c: Check, pair: Pair) -> Section:
    """Both subjects' TD targets use the same discount, done mask, truncation bootstrap, next state and network.

    ``compute_td_targets`` on one controlled batch and its variants (every reward 0 or 1, every transition
    terminated or truncated, other observations, perturbed target or online networks), read as the quantities
    the estimator uses.
    """
    q: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        res = pair[side]
        cases = read_table(res.dir / "td_cases")
        boot = read_table(res.dir / "td_bootstrap") if res.result.get("bootstrap_reported") else None
        terms = read_table(res.dir / "td_terms") if table_path(res.dir / "td_terms") else None
        q[side] = td_quantities(
            cases,
            None if boot is None else boot.sort_values("row")["bootstrap"].to_numpy(),
            terms,
            res.result.get("ent_coef"),
        )

    def show(side: str, name: str) -> str:
        return _show(name, q[side][name], q[side]["ent_coef"])

    table = pd.DataFrame(
        [{"quantity": name, **{s: show(s, name) for s in SIDES}} for name in QUANTITIES]
        + [
            {
                "quantity": "entropy coefficient α (reported by the freshly built learner)",
                **{s: fmt(q[s]["ent_coef"]) for s in SIDES},
            }
        ]
        + [
            {"quantity": f"targets move with {k} (share)", **{s: fmt(q[s]["moves"][k]) for s in SIDES}}
            for k in ("next_obs", "obs", "target", "online")
        ]
    )
    # a quantity neither side can give (γ without a reported bootstrap) is left out of the comparison, and so
    # is a critic term that one side does not report
    compared = [
        n
        for n in QUANTITIES
        if not all(_missing(q[s][n]) for s in SIDES)
        and not (n in OPTIONAL and any(_missing(q[s][n]) for s in SIDES))
    ]
    measured = {s: {name: q[s][name] for name in compared} for s in SIDES}
    changed = [name for name in compared if not _same(name, q["baseline"][name], q["candidate"][name])]
    details = {
        "table": table.to_dict("records"),
        "moves": {s: q[s]["moves"] for s in SIDES},
        "compared": compared,
        "critic fits": {s: q[s]["fit"] for s in SIDES},
    }
    if changed:
        named = "; ".join(f"{name}: {show('baseline', name)} → {show('candidate', name)}" for name in changed)
        wrong = deviations(q["candidate"])
        finding = c.finding(
            Status.CONFIRMED,
            Severity.HIGH,
            values=measured,
            summary=f"the candidate's TD targets differ: {named}"
            + (f" ({'; '.join(wrong)})" if wrong else ""),
            remediation=" ".join(REMEDIES[name] for name in changed),
            details=details,
        )
    else:
        alike = deviations(q["baseline"])
        if alike:
            finding = c.finding(
                Status.NOTED,
                Severity.LOW,
                values=measured,
                summary="both sides' TD targets deviate alike from a one-step TD target: " + "; ".join(alike),
                remediation="Nothing differs between the sides; check the estimator if this is not intended.",
                details=details,
            )
        else:
            b = q["baseline"]
            finding = c.finding(
                Status.CLEARED,
                measured=measured,
                summary=f"same TD targets: γ {_show('gamma', b['gamma'])}, reward ×{fmt(b['reward coefficient'])}, "
                f"bootstrap from {b['bootstrap state']} by the {b['bootstrap network']} network, terminal "
                f"{_show('x kept', b['terminal bootstrap kept'])} / truncated "
                f"{_show('x kept', b['truncation bootstrap kept'])} of it kept"
                + "".join(f"; {name}: {show('baseline', name)}" for name in OPTIONAL if name in compared),
                details=details,
            )
    return c.section(finding, tables={"TD targets": table})
