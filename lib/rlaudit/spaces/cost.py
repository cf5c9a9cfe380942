"""What preprocessing costs (notebook 10, last section): observation bytes per step, first-layer FLOPs and the
forward pass's CPU time, measured side by side.

Case 002's frame stacking quadrupled the input of an MLP that did not need it: four times the rollout memory
and first-layer compute, for no information the network used. The size and FLOPs come from the spaces and the
network's structure; the forward time from :func:`rlaudit.spaces.probes.forward_timing`, run for both sides
in one batch of interleaved rounds, in CPU time normalized by the calibration workload timed beside each
block (:mod:`rlaudit.timing`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd

from rlaudit import timing
from rlaudit.checks import SIDES, Check, check
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.evidence import fmt, ratio
from rlaudit.findings import Severity, Status
from rlaudit.notebook import Section
from rlaudit.spaces import probes
from rlaudit.spaces.observations import obs_pair, stack_alignment

COST_RATIO = timing.PRACTICAL_RATIO
"""Input bytes, first-layer FLOPs or forward time differing by more than 15% is a practical difference."""


def pair_key(wb: Workbench) -> str:
    """A short key naming this (baseline, candidate) pair, so timing rounds are only compared within a pair."""
    fps = wb.fingerprints
    return hashlib.sha256(f"{fps['baseline']}|{fps['candidate']}".encode()).hexdigest()[:16]


def timing_rounds(wb: Workbench, batches: dict[str, int]) -> list[Pair]:
    """The forward-pass timing rounds of both sides, asked for in one batch (baseline and candidate
    alternate), so both are measured over the same stretch of time.

    Args:
        batches: Per side, the observations per forward call (its number of environments).
    """
    repeats = max(3, int(wb.profile.timing_repeats))
    key = pair_key(wb)
    calls = [
        (side, {"round": r, "pair": key, "batch": int(batches[side])})
        for r in range(repeats)
        for side in SIDES
    ]
    results = wb.run_each(probes.forward_timing, calls, desc="spaces: forward-pass timing")
    return [Pair(baseline=results[i], candidate=results[i + 1]) for i in range(0, len(results), 2)]


def preprocessing_evidence(wb: Workbench) -> list[Pair]:
    """The observations pair, then the timing rounds (none when the observations failed: the guard reports it)."""
    obs = obs_pair(wb)
    if not obs.ok:
        return [obs]
    batches = {side: obs[side].json("spaces")["num_envs"] for side in SIDES}
    return [obs, *timing_rounds(wb, batches)]


def forward_ratio(rounds: list[Pair], seed: int = 0) -> Any:
    """Candidate / baseline forward-pass cost in calibration units, with a bootstrap interval over blocks.

    Returns:
        :class:`rlaudit.stats.Interval` of ``(median block / median calibration)`` of the candidate over the
        baseline's (:func:`rlaudit.timing.ratio_of_ratios`).
    """
    pooled = {
        side: {
            part: np.concatenate([np.asarray(r[side].result[part], dtype=float) for r in rounds])
            for part in ("block_s", "calib_s")
        }
        for side in SIDES
    }
    cand, base = pooled["candidate"], pooled["baseline"]
    return timing.ratio_of_ratios(
        cand["block_s"], cand["calib_s"], base["block_s"], base["calib_s"], seed=seed
    )


def cost_table(ia: dict, ib: dict, ra: dict, rb: dict, per_call: dict[str, float], iv: Any) -> pd.DataFrame:
    """Input and compute side by side: shapes, bytes, dtype, FLOPs, parameters, forward CPU time."""

    def row(quantity: str, a: Any, b: Any, numeric: bool = True) -> dict[str, Any]:
        return {
            "quantity": quantity,
            "baseline": a,
            "candidate": b,
            "ratio": (b / a if a else None) if numeric else None,
        }

    return pd.DataFrame(
        [
            row(
                "observation (as the env returns it)",
                f"{'x'.join(map(str, ia['obs_shape']))} {ia['obs_dtype']}",
                f"{'x'.join(map(str, ib['obs_shape']))} {ib['obs_dtype']}",
                numeric=False,
            ),
            row("bytes per observation", ia["obs_bytes"], ib["obs_bytes"]),
            row(
                "bytes per vector step (all envs)",
                ia["obs_bytes_per_vector_step"],
                ib["obs_bytes_per_vector_step"],
            ),
            row("network input dtype", ra["param_dtype"], rb["param_dtype"], numeric=False),
            row("first-layer FLOPs per observation", ra["first_layer_flops"], rb["first_layer_flops"]),
            row("parameters", ra["n_params"], rb["n_params"]),
            {
                "quantity": f"forward pass (batch {ra['batch']} | {rb['batch']}), CPU µs per call",
                "baseline": per_call["baseline"] * 1e6,
                "candidate": per_call["candidate"] * 1e6,
                "ratio": iv.point,
            },
        ]
    )


@check(
    "spaces/preprocessing",
    title="Preprocessing and what it costs",
    needs=preprocessing_evidence,
    reads=("agents",),  # the first layer's FLOPs and the forward time follow the architecture
)
def preprocessing(c: Check, evidence: list[Pair]) -> Section:
    """Preprocessing gives both networks inputs of the same size, type and compute cost.

    Frame stacking, dtype casts and scaling, with the memory and compute they cost: observation bytes per
    step, first-layer FLOPs, and the forward pass's calibrated CPU time measured side by side.
    """
    from rlaudit.spaces import plots

    obs, rounds = evidence[0], evidence[1:]
    ia, ib = obs.baseline.json("spaces"), obs.candidate.json("spaces")
    ra, rb = rounds[0].baseline.result, rounds[0].candidate.result
    iv = forward_ratio(rounds)
    speed = timing.judge_speed(iv, COST_RATIO)
    per_call = {s: float(np.median([r[s].result["per_call_s"] for r in rounds])) for s in SIDES}
    bytes_a, bytes_b = ia["obs_bytes_per_vector_step"], ib["obs_bytes_per_vector_step"]
    flops_a, flops_b = ra["first_layer_flops"], rb["first_layer_flops"]
    table = cost_table(ia, ib, ra, rb, per_call, iv)
    changes = []
    size_ratio = bytes_b / bytes_a if bytes_a else 1.0
    flops_ratio = flops_b / flops_a if flops_a else 1.0
    if not (1 / COST_RATIO <= size_ratio <= COST_RATIO):
        changes.append(f"×{size_ratio:.3g} observation bytes per step ({bytes_a:,} → {bytes_b:,})")
    flops_text = ""
    if not (1 / COST_RATIO <= flops_ratio <= COST_RATIO):
        flops_text = f"×{flops_ratio:.3g} first-layer FLOPs ({flops_a:,} → {flops_b:,} per observation)"
    if ia["obs_dtype"] != ib["obs_dtype"]:
        changes.append(
            f"observation dtype {ia['obs_dtype']} → {ib['obs_dtype']} (cast to {rb['param_dtype']} for the network)"
        )
    hi_a, hi_b = ia["observation_space"].get("high"), ib["observation_space"].get("high")
    if hi_a != hi_b and not isinstance(hi_a, dict):
        changes.append(f"observation scale: upper bound {hi_a} → {hi_b}")
    if changes and flops_text:
        changes.append(flops_text)  # the input changed: the first layer's cost follows it
    timed = f"forward pass {ratio(*iv)} (95% CI, CPU time in calibration units over {len(rounds)} rounds)"
    d_a, d_b = ia["obs_shape"], ib["obs_shape"]
    stack = None
    if len(d_a) == len(d_b) == 1 and d_a != d_b:
        small, big = (obs.baseline, obs.candidate) if d_a[0] < d_b[0] else (obs.candidate, obs.baseline)
        stack = stack_alignment(small.npz("moments"), big.npz("moments"))
    cause = ""
    if stack is not None and stack["matches"]:
        cause = f"frame stacking of {stack['k']} ({'candidate' if d_b[0] > d_a[0] else 'baseline'}): "
    size_sides = {
        s: {"bytes/step": b, "first-layer FLOPs": f}
        for s, b, f in (("baseline", bytes_a, flops_a), ("candidate", bytes_b, flops_b))
    }
    timed_ratio = {
        "effect": iv.point,
        "effect_label": "forward-time ratio (candidate / baseline)",
        "ci": iv[1:],
    }
    if changes:
        finding = c.finding(
            Status.SUSPECT,
            Severity.MEDIUM,
            **{s: {**size_sides[s], "forward µs": per_call[s] * 1e6} for s in SIDES},
            **timed_ratio,
            summary=cause
            + "; ".join(changes)
            + f"; {timed}"
            + (
                ""
                if speed.different
                else " (the forward time of this small network barely moves: the cost is in memory and the first "
                "layer)"
            ),
            remediation=(
                "Turn frame stacking off for an MLP that does not use history (case 002), or stack 2; "
                if cause
                else "Restore the baseline's preprocessing; "
            )
            + "the input size drives rollout memory and first-layer compute.",
            figures=["input cost"],
        )
    elif flops_text:
        finding = c.finding(
            Status.NOTED,
            Severity.LOW,
            **size_sides,
            effect=flops_ratio,
            effect_label="first-layer FLOPs ratio (candidate / baseline)",
            summary=f"same input ({bytes_a:,} bytes per vector step) but {flops_text}: the first layer's "
            f"width changed, not the preprocessing (a knock-on of the architecture, see 01_agents); {timed}",
            remediation="Nothing to change in preprocessing; see the architecture findings in 01_agents.",
        )
    elif speed.different and ra["n_params"] != rb["n_params"]:
        finding = c.finding(
            Status.NOTED,
            Severity.LOW,
            values=per_call,
            **timed_ratio,
            summary=f"same input size and first-layer cost, but {timed} with {ra['n_params']:,} → "
            f"{rb['n_params']:,} parameters: the network changed, not the preprocessing (see 01_agents)",
            remediation="Nothing to change in preprocessing; see the architecture findings in 01_agents.",
        )
    else:
        same_input = (
            f"same input: {'x'.join(map(str, d_a))} {ia['obs_dtype']} ({ia['obs_bytes']:,} bytes per observation, "
            f"{bytes_a:,} per vector step), first layer {flops_a:,} FLOPs per observation"
        )
        if speed.equivalent:
            finding = c.finding(
                Status.CLEARED,
                **size_sides,
                **timed_ratio,
                summary=f"{same_input}; {timed}, within ×{fmt(1 / COST_RATIO)}..×{fmt(COST_RATIO)}",
            )
        else:
            finding = c.finding(
                Status.NOTED,
                Severity.INFO,
                **size_sides,
                **timed_ratio,
                summary=f"{same_input}; but the forward time is inconclusive: {timed} is neither within "
                f"×{fmt(1 / COST_RATIO)}..×{fmt(COST_RATIO)} nor credibly beyond it; "
                + speed.settle("timing rounds"),
                remediation="Rerun at a profile with more timing repeats (standard or thorough) to settle the "
                "forward time.",
            )
    return c.section(
        finding,
        tables={"input cost": table.rename(columns={"ratio": "candidate / baseline"})},
        figures={"input cost": plots.cost_figure(table, *_per_call_samples(rounds))},
        notes=[
            f"Forward passes of a fresh network on a batch of real observations (the subject's num_envs), "
            f"{len(rounds)} rounds per side asked for in one batch, each {ra.get('calls', 10)} calls per block "
            "timed in CPU time with a calibration workload beside every block; only the ratio in calibration "
            f"units and its interval are read. A timing difference counts only beyond ×{fmt(COST_RATIO)} with an "
            "interval that excludes 1."
        ],
    )


def _per_call_samples(rounds: list[Pair]) -> tuple[np.ndarray, np.ndarray]:
    """Per side, every block's CPU seconds per call (for the figure)."""
    out = []
    for side in SIDES:
        values = [
            np.asarray(r[side].result["block_s"], dtype=float) / r[side].result["calls"] for r in rounds
        ]
        out.append(np.concatenate(values))
    return out[0], out[1]
