"""What the network receives on the training and the evaluation path, within each setup (spaces/network-input).

Case 002 is the model: behaviour cloning trained on normalized observations while RL fed raw ones. Each side's
newest checkpoint (from the checkpointing room's sources) is loaded by its own ``load_checkpoint`` and fed the
same raw observations normalized both ways; a forward pre-hook records the first layer's inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import SIDES, Check, Missing, check
from rlaudit.engine.workbench import Pair, Workbench
from rlaudit.findings import Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.spaces import probes
from rlaudit.spaces.observations import shifted_features

SHIFTED_FRACTION = 0.10
"""A side whose first layer sees more than this fraction of features shifted between training and evaluation
is SUSPECT."""


def input_paths(res: Any) -> dict[str, Any]:
    """The ``network_input`` artifacts of one side: summary and per-feature arrays by path."""
    info = res.json("inputs")
    arrays = res.npz("inputs")
    return {"summary": info["paths"], "arrays": arrays, "n": info["n"], "features": info["features"]}


@dataclass
class Stopped:
    """Evidence that stops a check before its body: a SKIPPED or ERROR finding made elsewhere, re-filed under
    the check's own id, subsystem and hypothesis by the check's guard."""

    finding: Finding

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding:
        self.finding.id, self.finding.subsystem, self.finding.hypothesis = id, subsystem, hypothesis
        return self.finding


def network_input_pair(wb: Workbench, trust: bool = False) -> Pair | Stopped:
    """The :func:`rlaudit.spaces.probes.network_input` probe on each side's newest checkpoint.

    Checkpoints come from the checkpointing room's sources (a short training run, or the subject's own
    ``checkpoints``).

    Raises:
        Missing: A side lacks ``make_env``/``load_checkpoint``, or both ``train`` and ``checkpoints``.
    """
    from rlaudit.checkpointing import audit as ckpt_audit

    caps = ckpt_audit.capabilities(wb)
    needed = {
        side: [f"`{cap}`" for cap in ("make_env", "load_checkpoint") if cap not in caps[side]]
        + (
            []
            if ("train" in caps[side] and "config" in caps[side]) or "checkpoints" in caps[side]
            else ["`train` or `checkpoints`"]
        )
        for side in SIDES
    }
    lacking = [side for side in SIDES if needed[side]]
    if lacking:
        names = list(dict.fromkeys(n for side in lacking for n in needed[side]))
        raise Missing(
            ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0],
            "Implement load_checkpoint(config, path) -> (policy, extras) and make_env(config, seed), and either "
            "train(...) writing checkpoints under recorder.run_dir or checkpoints(config) listing them, so a "
            "trained network can be loaded and fed (see `rlaudit new-subject`).",
            lacking,
        )
    src = ckpt_audit.sources(wb)
    stop = ckpt_audit.guard_sources(src, "spaces/network-input", "")
    if stop is not None:
        return Stopped(stop)
    results = {}
    for side in SIDES:
        recs = ckpt_audit.contents_of(wb, side, src[side]["paths"], trust)
        results[side] = wb.run_side(
            side,
            probes.network_input,
            path=ckpt_audit.newest(recs, src[side]["paths"]),
            env_seed=0,
            rollout_steps=int(min(wb.profile.rollout_steps, 2000)),
            batch=1024,
            clip=10.0,
            trust=trust,
        )
    return Pair(baseline=results["baseline"], candidate=results["candidate"])


def input_shift(
    train_mean: np.ndarray, train_std: np.ndarray, eval_mean: np.ndarray, eval_std: np.ndarray
) -> dict[str, Any]:
    """How many of the first layer's input features shift between the training and the evaluation path.

    The population is every feature but those that are one and the same constant on both paths (they carry
    nothing, and padding would dilute the fraction): the features that vary on either path, and the constants
    that differ between them (normalized to 0 on one path and raw on the other, a shift too).

    Returns:
        ``shifted`` (features shifted), ``compared`` (the population, which holds every shifted feature),
        ``varying`` (features of it with a spread on either path), ``features`` (all of them), ``fraction``
        (``shifted / compared``, 0 when nothing is compared) and ``sentence``, the counts in words.
    """
    shifted, _ = shifted_features(train_mean, train_std, eval_mean, eval_std)
    varying = np.maximum(np.asarray(train_std, float), np.asarray(eval_std, float)) > 1e-6
    compared = varying | shifted
    n_shifted, n_compared, n_varying = int(shifted.sum()), int(compared.sum()), int(varying.sum())
    n_features = int(np.size(shifted))
    constants = n_compared - n_varying
    parts = [f"{n_varying} vary"] + ([f"{constants} constant and differ"] if constants else [])
    if n_features > n_compared:
        parts.append(f"{n_features - n_compared} identical constants left out")
    return {
        "shifted": n_shifted,
        "compared": n_compared,
        "varying": n_varying,
        "features": n_features,
        "fraction": n_shifted / n_compared if n_compared else 0.0,
        "sentence": f"{n_shifted} of {n_compared} features shifted ({', '.join(parts)})",
    }


def _input_verdict(data: dict[str, Any]) -> dict[str, Any]:
    """One side's evaluation-vs-training shift of the first layer's inputs."""
    arr = data["arrays"]
    return {
        **input_shift(
            arr["training|mean"], arr["training|std"], arr["evaluation|mean"], arr["evaluation|std"]
        ),
        "train": data["summary"]["training"],
        "eval": data["summary"]["evaluation"],
    }


@check(
    "spaces/network-input",
    title="What the network receives: training vs evaluation",
    needs=network_input_pair,
    reads=("checkpointing",),
)
def network_input(c: Check, pair: Pair) -> Section:
    """Within each setup, the network receives the same input distribution in evaluation as in training.

    Within each subject: the first layer's input statistics (forward pre-hook) on observations normalized as
    training did (the checkpoint's saved statistics) vs as evaluation would (load_checkpoint's extras).
    """
    from rlaudit.spaces import plots

    data = {side: input_paths(pair[side]) for side in SIDES}
    unfed = [side for side in SIDES if not {"training", "evaluation"} <= set(data[side]["summary"])]
    if unfed:
        c.missing(
            "first layer that takes the observation (no module received it or a tensor computed from it alone)",
            "Run the observation through an nn.Module layer (nn.Linear, nn.Conv2d) first in the policy, so "
            "its input can be read on the training and evaluation paths.",
            unfed,
        )
    rows = [
        {
            "side": side,
            "path": name,
            "layer": s["layer"],
            "mean": s["mean"],
            "std": s["std"],
            "|x| max": s["abs_max"],
            "clipped": s["clipped_fraction"],
            "how": s["note"],
        }
        for side in SIDES
        for name in ("training", "evaluation", "raw")
        if (s := data[side]["summary"].get(name))
    ]
    verdict = {side: _input_verdict(data[side]) for side in SIDES}
    evidence = {
        side: {
            "shifted features": verdict[side]["shifted"],
            "features compared": verdict[side]["compared"],
            "train std": verdict[side]["train"]["std"],
            "eval std": verdict[side]["eval"]["std"],
        }
        for side in SIDES
    }
    bad = {side: verdict[side]["fraction"] > SHIFTED_FRACTION for side in SIDES}
    findings = []
    for side in (s for s in SIDES if bad[s]):
        v = verdict[side]
        other = "baseline" if side == "candidate" else "candidate"
        findings.append(
            c.finding(
                Status.SUSPECT if side == "candidate" and not bad[other] else Status.NOTED,
                Severity.HIGH,
                id="spaces/network-input" if side == "candidate" else "spaces/network-input-baseline",
                **evidence,
                effect=v["fraction"],
                effect_label="fraction of input features shifted (evaluation vs training)",
                summary=f"the {side}'s first layer ({v['train']['layer']}) sees different inputs in evaluation than "
                f"in training: {v['sentence']}; input mean {v['train']['mean']:.3g} "
                f"→ {v['eval']['mean']:.3g}, std {v['train']['std']:.3g} → {v['eval']['std']:.3g} "
                f"({v['train']['note']} vs {v['eval']['note']}) — normalization applied in one path and not the "
                "other, case 002's bug (its cause is in loading, see 04_checkpointing)",
                remediation=f"Feed the {side}'s network the same normalization at evaluation as in training: restore "
                "obs_rms from the checkpoint in load_checkpoint and apply it wherever the policy is run.",
                figures=["first-layer inputs"],
            )
        )
    if not findings:
        v = verdict["baseline"]
        findings.append(
            c.finding(
                Status.CLEARED,
                **{
                    side: {k: evidence[side][k] for k in ("shifted features", "features compared")}
                    for side in SIDES
                },
                effect=max(verdict["baseline"]["fraction"], verdict["candidate"]["fraction"]),
                effect_label="fraction of input features shifted (evaluation vs training)",
                summary=f"on both sides the first layer gets the same inputs in evaluation as in training "
                f"({v['train']['note']}; input std {v['train']['std']:.3g} | "
                f"{verdict['candidate']['train']['std']:.3g})",
            )
        )
    return c.section(
        findings,
        tables={"first-layer input statistics": pd.DataFrame(rows)},
        figures={"first-layer inputs": plots.input_paths_figure({s: data[s]["arrays"] for s in SIDES})},
        notes=[
            "Each side's newest checkpoint is loaded by its own load_checkpoint; the same raw observations (seeded "
            "random-policy rollout) are normalized as training did (statistics saved in the checkpoint file) and "
            "as evaluation would (the obs_rms load_checkpoint returns), clip ±10, and a forward pre-hook records "
            "what the first layer receives."
        ],
    )
