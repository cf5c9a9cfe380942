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
  perturbing the online networks' does (``target`` for DQN; both for double-Q, whose argmax is online).
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

QUANTITIES = (
    "gamma",
    "reward coefficient",
    "terminal bootstrap kept",
    "truncation bootstrap kept",
    "bootstrap state",
    "bootstrap network",
)


def _mean_abs(x: np.ndarray) -> float:
    return float(np.mean(np.abs(x))) if len(x) else math.nan


def td_quantities(cases: pd.DataFrame, bootstrap: np.ndarray | None = None) -> dict[str, Any]:
    """The quantities a subject's TD targets use, from the ``td_cases`` table of the probe.

    Args:
        cases: Columns ``case``, ``row``, ``target``, ``reward`` (one row per case and batch row).
        bootstrap: The subject's own next-state values for the base batch, when it reports them.

    Returns:
        ``gamma`` (NaN when no bootstrap is reported), ``reward coefficient``, ``terminal bootstrap kept``,
        ``truncation bootstrap kept`` (shares of the base batch's bootstrap), ``bootstrap state`` (``s_{t+1}``,
        ``s_t``, ``s_t and s_{t+1}`` or ``none``), ``bootstrap network`` (``target``, ``online``, ``target and
        online`` or ``none``; ``not separable`` without target networks), and the raw moves.
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
    return isinstance(value, float) and math.isnan(value)


def _show(name: str, value: Any) -> str:
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
        q[side] = td_quantities(
            cases, None if boot is None else boot.sort_values("row")["bootstrap"].to_numpy()
        )
    table = pd.DataFrame(
        [{"quantity": name, **{s: _show(name, q[s][name]) for s in SIDES}} for name in QUANTITIES]
        + [
            {"quantity": f"targets move with {k} (share)", **{s: fmt(q[s]["moves"][k]) for s in SIDES}}
            for k in ("next_obs", "obs", "target", "online")
        ]
    )
    # a quantity neither side can give (γ without a reported bootstrap) is left out of the comparison
    compared = [n for n in QUANTITIES if not all(_missing(q[s][n]) for s in SIDES)]
    measured = {s: {name: q[s][name] for name in compared} for s in SIDES}
    changed = [name for name in compared if not _same(name, q["baseline"][name], q["candidate"][name])]
    details = {"table": table.to_dict("records"), "moves": {s: q[s]["moves"] for s in SIDES}}
    if changed:
        named = "; ".join(
            f"{name}: {_show(name, q['baseline'][name])} → {_show(name, q['candidate'][name])}"
            for name in changed
        )
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
                f"{_show('x kept', b['truncation bootstrap kept'])} of it kept",
                details=details,
            )
    return c.section(finding, tables={"TD targets": table})
