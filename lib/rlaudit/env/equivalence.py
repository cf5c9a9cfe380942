"""Same seed, same actions: where do the two environments first diverge? (env/equivalence)

Both environments are built and reset with one seed and stepped with one pre-generated action sequence
(:func:`rlaudit.env.probes.equivalence`); each side also replays itself, since a cross-version difference means
nothing when a side does not reproduce itself. The first step where observations, rewards, terminations,
truncations or reported episode returns differ says where to look.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, Check, check, on_side
from rlaudit.engine.workbench import Pair
from rlaudit.env import plots, probes
from rlaudit.env.analysis import sizes
from rlaudit.evidence import fmt
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section

FIELDS = ("obs", "reward", "terminated", "truncated", "episode")
FIELD_WORDS = {
    "obs": "observations",
    "reward": "rewards",
    "terminated": "terminations",
    "truncated": "truncations",
    "episode": "reported episode returns",
}

EQUIVALENCE = {
    "probe": probes.equivalence,
    "params": lambda wb, seed=0: {"seed": seed, "steps": sizes(wb.profile).equivalence_steps},
    "desc": "env equivalence",
    # The environment as each setup builds it: a curriculum's tasks, reward terms, seeding, observation wrappers
    # and the trainer's num_envs all change what it returns for the same actions.
    "reads": ("curriculum", "rewards", "seeding", "spaces", "trainer"),
}
"""The evidence of the equivalence check: both environments stepped with one seed and one action sequence."""


def self_consistency(digests: dict[str, Any]) -> tuple[int | None, list[str]]:
    """First step where a subject's two runs with the same seed differ, and in which fields (None: never)."""
    first, second = digests["first"], digests["second"]
    for t in range(len(first["obs"])):
        fields = []
        for name in FIELDS:
            seq_a, seq_b = first[name], second[name]
            idx = t if name == "obs" else t - 1
            if idx < 0 or idx >= len(seq_a):
                continue
            if seq_a[idx] != seq_b[idx]:
                fields.append(name)
        if fields:
            return t, fields
    return None, []


def structural_differences(facts_a: dict[str, Any], facts_b: dict[str, Any]) -> list[str]:
    """Differences that make the two environments incomparable from step 0 (shapes, spaces, num_envs)."""
    out = []
    if facts_a["num_envs"] != facts_b["num_envs"]:
        out.append(f"num_envs {facts_a['num_envs']} vs {facts_b['num_envs']}")
    oa, ob = facts_a["observation_space"], facts_b["observation_space"]
    if (oa.get("shape"), oa.get("kind")) != (ob.get("shape"), ob.get("kind")):
        out.append(
            f"observation shapes {oa.get('shape')} vs {ob.get('shape')} ({oa.get('kind')} vs {ob.get('kind')})"
        )
    aa, ab = facts_a["action_space"], facts_b["action_space"]
    if aa.get("repr") != ab.get("repr"):
        out.append(f"action spaces {aa.get('repr')} vs {ab.get('repr')} (so the action sequences differ)")
    return out


def differs(a: np.ndarray, b: np.ndarray, atol: float = 1e-6) -> np.ndarray:
    """Per (step, env), True where the values differ (NaN equals NaN; numbers within ``atol``)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    both_nan = np.isnan(a) & np.isnan(b)
    close = np.isclose(a, b, rtol=1e-6, atol=atol) | both_nan
    return ~close


def divergence_table(
    arrays_a: dict[str, np.ndarray],
    arrays_b: dict[str, np.ndarray],
    digests_a: dict[str, Any],
    digests_b: dict[str, Any],
    stored: int,
) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Compare two equal-shaped runs field by field.

    Args:
        arrays_a: The baseline's ``run.npz`` arrays: ``obs`` (S+1, N, D), ``reward``/``terminated``/
            ``truncated``/``episode_r`` (T, N).
        arrays_b: The candidate's, same shapes.
        digests_a: The baseline's first-run digests (per step and field; used beyond the stored obs).
        digests_b: The candidate's.
        stored: Steps of observations kept in the arrays (``S``).

    Returns:
        ``(table, fractions)``: one row per field with ``first_step`` (0 = reset; NaN when never),
        ``steps_differing``, ``cells_differing`` (step x env), ``max_abs_diff``; and per field the
        ``(T+1,)`` fraction of envs differing at each step (NaN where only a digest was compared).
    """
    steps = arrays_a["reward"].shape[0]
    n = arrays_a["reward"].shape[1]
    rows = []
    fractions: dict[str, np.ndarray] = {}
    for name in FIELDS:
        frac = np.zeros(steps + 1)
        max_abs = 0.0
        if name == "obs":
            a, b = arrays_a["obs"][: stored + 1], arrays_b["obs"][: stored + 1]
            cell = differs(a, b).any(axis=2)  # (S+1, N)
            frac[: stored + 1] = cell.mean(axis=1)
            if cell.any():
                max_abs = float(np.nanmax(np.abs(a.astype(float) - b.astype(float))))
            beyond = [t for t in range(stored + 1, steps + 1) if digests_a["obs"][t] != digests_b["obs"][t]]
            frac[stored + 1 :] = np.nan
            for t in beyond:
                frac[t] = 1.0  # a digest says "something differs", not how many envs
            cells = int(cell.sum()) + len(beyond) * n
        else:
            key = "episode_r" if name == "episode" else name
            a, b = arrays_a[key], arrays_b[key]
            cell = differs(a, b)
            frac[1:] = cell.mean(axis=1)
            cells = int(cell.sum())
            if cell.any():
                with np.errstate(invalid="ignore"):
                    diff = np.abs(
                        np.nan_to_num(a.astype(float), nan=0.0) - np.nan_to_num(b.astype(float), nan=0.0)
                    )
                max_abs = float(diff[cell].max())
        differing = np.flatnonzero(np.nan_to_num(frac, nan=0.0) > 0)
        rows.append(
            {
                "field": name,
                "first_step": int(differing[0]) if len(differing) else math.nan,
                "steps_differing": len(differing),
                "cells_differing": cells,
                "max_abs_diff": max_abs,
            }
        )
        fractions[FIELD_WORDS[name]] = frac
    return pd.DataFrame(rows), fractions


def _first_values(arrays: dict[str, dict[str, np.ndarray]], fields: list[str], first: int) -> str:
    """`` (env i: a vs b)`` for the first env whose non-observation field differs at step ``first``."""
    for name in fields:
        key = {"episode": "episode_r"}.get(name, name)
        if name == "obs" or first == 0:
            continue
        a, b = arrays["baseline"][key][first - 1], arrays["candidate"][key][first - 1]
        ids = np.flatnonzero(differs(a, b))
        if len(ids):
            return f" (env {ids[0]}: {fmt(a[ids[0]].item())} vs {fmt(b[ids[0]].item())})"
    return ""


def divergence_origin(table: pd.DataFrame, arrays: dict[str, dict[str, np.ndarray]]) -> str:
    """Where the divergence starts, when the arrays can tell: at the reset, in the observations alone, or at the
    first observation of a new episode. Each points upstream of the step dynamics (what the env is asked to do:
    its seed, its task, how its observations are encoded); "" when none applies.

    Args:
        table: :func:`divergence_table`'s table.
        arrays: Per side, the ``run.npz`` arrays (``terminated``/``truncated`` ``(T, N)``, ``obs``).
    """
    differing = table.dropna(subset=["first_step"]).set_index("field")["first_step"]
    if differing.empty:
        return ""
    first = int(differing.min())
    only_obs = set(differing.index) == {"obs"}
    if only_obs:
        return (
            "only the observations differ, rewards and episode ends agree throughout: the observation encoding "
            "changed (normalization, stacking, features; see 10_spaces), not the dynamics"
        )
    if first == 0:
        return (
            "the divergence starts at the reset (step 0), before any action: the environments start from different "
            "states (seeded differently, or given another task or map), not different step dynamics"
        )
    if differing.get("obs") != first or first < 2:
        return ""
    # the first differing observation is the first of a new episode when that env's episode ended just before
    done = (
        arrays["baseline"]["terminated"] | arrays["baseline"]["truncated"]
    )  # (T, N), equal on both sides so far
    obs_a, obs_b = arrays["baseline"]["obs"], arrays["candidate"]["obs"]
    if first >= len(obs_a):
        return ""
    envs = np.flatnonzero(differs(obs_a[first], obs_b[first]).any(axis=-1))
    fresh = [int(i) for i in envs if done[max(0, first - 2) : first, i].any()]
    if envs.size and len(fresh) == envs.size:
        return (
            f"the divergence starts where a new episode begins (env {fresh[0]} had just reset): what the env starts "
            "from at that reset differs (a curriculum's task, the reset's seeding, or the state a reset rebuilds), "
            "not the step dynamics"
        )
    return ""


def _not_reproducible(c: Check, side: str, step: int, fields: list[str], seed: int) -> Finding:
    at = f"differs from itself at step {step}"
    return c.finding(
        Status.NOTED,
        Severity.MEDIUM,
        id=f"env/not-reproducible-{side}",
        hypothesis=f"The {side} environment is reproducible under a fixed seed",
        values=on_side(side, at),
        summary=f"the {side} environment built twice with seed {seed} differs from itself at step {step} "
        f"({', '.join(FIELD_WORDS[x] for x in fields)}): it is not seeded fully",
        details={"step": step, "fields": fields},
        remediation="Make `make_env(config, seed)` and `reset(seed=...)` the only sources of randomness in the "
        "environment (see 13_seeding for global-RNG dependence).",
    )


@check("env/equivalence", title="Same seed, same actions: where do the environments diverge?", **EQUIVALENCE)
def equivalence(c: Check, pair: Pair, *, seed: int = 0) -> Section:
    """With the same seed and the same actions, both environments produce the same observations, rewards,
    terminations and truncations.

    Step both environments K steps with one pre-generated action sequence; report the first difference.
    """
    steps = sizes(c.profile).equivalence_steps
    facts = {s: pair[s].json("facts") for s in SIDES}
    digests = {s: pair[s].json("digests") for s in SIDES}
    notes = [
        f"Both environments were built with seed {seed}, reset with seed {seed}, and stepped {steps} times "
        f"with the same actions drawn from `np.random.default_rng({seed})`."
    ]
    findings: list[Finding] = []
    for side in SIDES:
        step, fields = self_consistency(digests[side])
        if step is not None:
            findings.append(_not_reproducible(c, side, step, fields, seed))

    structural = structural_differences(facts["baseline"], facts["candidate"])
    if structural:
        shape_keys = ("num_envs", "observation_space", "action_space")
        findings.append(
            c.finding(
                Status.SUSPECT,
                Severity.HIGH,
                baseline={k: facts["baseline"][k] for k in shape_keys},
                candidate={k: facts["candidate"][k] for k in shape_keys},
                effect=0.0,
                effect_label="first differing step",
                summary="the environments differ at step 0: " + "; ".join(structural),
                details={"structural": structural},
                remediation="Build the candidate's environment with the baseline's shape settings (or confirm "
                "the change is intended and retrain the policy for it).",
            )
        )
        return c.section(findings, notes=notes)

    arrays = {s: pair[s].npz("run") for s in SIDES}
    stored = int(min(digests["baseline"]["stored"], digests["candidate"]["stored"]))
    table, fractions = divergence_table(
        arrays["baseline"],
        arrays["candidate"],
        digests["baseline"]["first"],
        digests["candidate"]["first"],
        stored,
    )
    n = int(facts["baseline"]["num_envs"])
    differing = table.dropna(subset=["first_step"])
    figures: dict[str, Any] = {}
    if differing.empty:
        findings.append(
            c.finding(
                Status.CLEARED,
                baseline=f"{steps} steps x {n} envs",
                candidate=f"{steps} steps x {n} envs",
                effect=0.0,
                effect_label="cells differing",
                summary=f"identical for {steps} steps x {n} envs: observations, rewards, terminations, "
                "truncations and reported episode returns",
                remediation="Nothing to do: the environment's dynamics are the same.",
            )
        )
    else:
        findings.append(_divergence_finding(c, table, arrays, steps, n))
        figures["divergence"] = plots.divergence(fractions)
    return c.section(findings, tables={"first difference per field": table}, figures=figures, notes=notes)


def _divergence_finding(
    c: Check, table: pd.DataFrame, arrays: dict[str, dict[str, np.ndarray]], steps: int, n: int
) -> Finding:
    """The SUSPECT finding of two environments that diverge: where, in what, and what it points at."""
    differing = table.dropna(subset=["first_step"])
    dynamics = differing[differing["field"] != "episode"]
    first = int(differing["first_step"].min())
    at_first = differing[differing["first_step"] == first]["field"].tolist()
    words = ", ".join(FIELD_WORDS[x] for x in at_first)
    envs_text = _first_values(arrays, at_first, first)
    if dynamics.empty:
        summary = (
            f"same dynamics for {steps} steps, but the reported episode returns differ from step {first}"
            f"{envs_text}: the environment reports different episode statistics for the same episodes"
        )
        remediation = (
            "Read the finished episode's statistics before anything resets them (case 001: an environment "
            "recreated on reset lost the episode's rewards); see the episode-statistics check below."
        )
    else:
        summary = f"the environments diverge at step {first} ({words}){envs_text}"
        if set(at_first) == {"reward"}:
            summary += " while observations and episode ends still agree: the reward function changed (see 11_rewards)"
        first_dyn = int(dynamics["first_step"].min())
        if first_dyn > first:
            later = dynamics[dynamics["first_step"] == first_dyn]["field"].tolist()
            summary += (
                f"; the dynamics follow at step {first_dyn} ({', '.join(FIELD_WORDS[x] for x in later)})"
            )
        origin = divergence_origin(table, arrays)
        if origin:
            summary += f"; {origin}"
        remediation = (
            "Diff the environment code between versions starting from what produces the "
            f"{FIELD_WORDS[at_first[0]]} (episode ends, resets, reward function); the checks below narrow it down."
        )
    return c.finding(
        Status.SUSPECT,
        Severity.HIGH,
        baseline="reference trajectory",
        candidate=f"first difference at step {first}: {words}",
        effect=float(first),
        effect_label="first differing step",
        summary=summary,
        details={"table": table.to_dict("records"), "steps": steps, "num_envs": n},
        remediation=remediation,
        figures=["divergence"],
    )
