"""The tests of :mod:`rlaudit.loss.terms`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlaudit.findings import Status
from rlaudit.loss.terms import (
    TARGET_SHIFTS,
    coefficient_changes,
    compare_terms,
    make_batch,
    solve_weights,
    sweep_batches,
    value_form_change,
)
from support.toys import ROLLOUT_CAPABILITIES, shape_subject

# ---------------------------------------------------------------------------------------------------------------
# Loss terms and gradients
# ---------------------------------------------------------------------------------------------------------------


def test_make_batch_puts_value_targets_near_the_values() -> None:
    values = np.linspace(-1, 1, 512)
    batch = make_batch([3], 4, 512, seed=0, values=values, logprobs=None)
    assert batch["obs"].shape == (512, 3)
    value_loss = 0.5 * np.mean((batch["returns"] - values) ** 2)
    assert value_loss < 0.01  # below any loss floor worth the name (the catalog's is 0.05)
    np.testing.assert_allclose(batch["logprobs"], -math.log(4), rtol=1e-6)


def test_compare_terms_flags_only_real_differences() -> None:
    t = compare_terms(
        {"baseline": {"loss": 1.0, "value_loss": 0.005}, "candidate": {"loss": 1.0000001, "value_loss": 0.05}}
    )
    assert t.set_index("term")["differs"].to_dict() == {"loss": False, "value_loss": True}


def _sweep_rows(
    policy_coef: float, value_coef: float, ent_coef: float, value_scale: float = 0.5
) -> list[dict[str, float]]:
    """Terms of a sweep by hand: batch 0, targets shifted by TARGET_SHIFTS (mse = (shift + 0.1)^2 + 0.01), then
    six batches whose terms vary independently."""
    rng = np.random.default_rng(0)
    rows = []
    mses = [0.02] + [(d + 0.1) ** 2 + 0.01 for d in TARGET_SHIFTS] + list(rng.uniform(1, 20, 6))
    for mse in mses:
        pg, ent = float(rng.normal(0, 0.3)), float(1.6 - rng.uniform(0, 0.05))
        v = value_scale * mse
        rows.append(
            {
                "policy_loss": pg,
                "value_loss": v,
                "entropy": ent,
                "loss": policy_coef * pg + value_coef * v - ent_coef * ent,
            }
        )
    return rows


def test_coefficients_are_solved_with_their_sign() -> None:
    base = solve_weights(_sweep_rows(1.0, 0.5, 0.01))
    assert base.exact and base.value_scale == 0.5 and base.value_form == "½·MSE"
    assert base.coefficients == pytest.approx({"policy_loss": 1.0, "value_loss": 0.5, "entropy": 0.01})
    flipped = solve_weights(_sweep_rows(1.0, 5.0, -0.01))
    changes = coefficient_changes({"baseline": base, "candidate": flipped})
    assert changes == [
        "value-loss coefficient 0.5 → 5 (×10)",
        "entropy coefficient 0.01 → -0.01: the sign flipped (the candidate's loss now rewards lower entropy)",
    ]
    assert coefficient_changes({"baseline": base, "candidate": base}) == []


def test_a_value_loss_without_one_half_is_named_and_compensation_is_seen() -> None:
    cleanrl = solve_weights(_sweep_rows(1.0, 0.5, 0.01, value_scale=0.5))
    sb3 = solve_weights(_sweep_rows(1.0, 0.25, 0.01, value_scale=1.0))
    assert sb3.value_form == "MSE (no ½, as in SB3)"
    text = value_form_change({"baseline": cleanrl, "candidate": sb3})
    assert "no ½" in text and "0.25 vs 0.25 — the same" in text
    sb3_default = solve_weights(_sweep_rows(1.0, 0.5, 0.01, value_scale=1.0))
    text = value_form_change({"baseline": cleanrl, "candidate": sb3_default})
    assert "0.25 vs 0.5" in text and "the same" not in text
    assert value_form_change({"baseline": sb3_default, "candidate": sb3_default}) == ""


def test_an_unreported_term_leaves_a_residual() -> None:
    rows = _sweep_rows(1.0, 0.5, 0.01)
    for i, r in enumerate(rows):
        r["loss"] += 0.3 * (i % 3)  # a term the subject does not report
    assert not solve_weights(rows).exact


def _solved(**switches: bool):
    """The built-in trainer's loss (with the given PPOImpl switches) over the sweep, solved as the check does."""
    import torch

    from rlaudit.demo.agent import Agent
    from rlaudit.demo.ppo import PPOImpl, compute_loss
    from rlaudit.loss.probes import batch_tensors, scalar_terms

    torch.manual_seed(0)
    policy = Agent(3, 2)
    draft = make_batch([3], 2, 256, seed=0, values=None, logprobs=None)
    with torch.no_grad():
        own = policy.get_value(torch.as_tensor(draft["obs"])).numpy().reshape(-1)
    groups: dict[int, dict[str, np.ndarray]] = {}
    for key, value in sweep_batches(make_batch([3], 2, 256, seed=0, values=own, logprobs=None), 2, 0).items():
        index, _, name = key[1:].partition("_")
        groups.setdefault(int(index), {})[name] = value
    impl = PPOImpl(**switches)
    rows = [
        scalar_terms(compute_loss({}, policy, batch_tensors(groups[i]), impl=impl)) for i in sorted(groups)
    ]
    return solve_weights(rows)


@pytest.mark.parametrize(
    ("switch", "named"),
    [
        ("value_loss_huber", "grows linearly with a large target error (a Huber / smooth-L1"),
        ("ignore_clip_vloss", "the candidate's unclipped"),
        ("normalize_returns", "does not move when the targets shift (the targets are normalized per batch"),
    ],
)
def test_a_value_loss_of_another_form_is_named_never_cleared(switch: str, named: str) -> None:
    from rlaudit.evidence import coverage
    from rlaudit.loss.terms import measured_quantities

    reference = _solved()
    assert reference.value_scale == 0.5 and reference.value_clip is True
    assert value_form_change({"baseline": reference, "candidate": reference}) == ""
    assert coverage(*measured_quantities({"baseline": reference, "candidate": reference})).complete
    regressed = {"baseline": reference, "candidate": _solved(**{switch: True})}
    assert named in value_form_change(regressed), value_form_change(regressed)
    # the coefficients still agree: only the form of the value loss gives the fault away
    assert regressed["candidate"].coefficients == pytest.approx(reference.coefficients, abs=1e-3)
    if switch != "ignore_clip_vloss":  # a loss with no squared-error scale has nothing to clear it on
        gaps = coverage(*measured_quantities(regressed))
        assert gaps.one_sided == {"value-loss scale": "baseline"}, gaps
        assert gaps.verdict().status is Status.SUSPECT


# ---------------------------------------------------------------------------------------------------------------
# Exact verdicts on subjects whose changed quantity is known
# ---------------------------------------------------------------------------------------------------------------


LOSS_SUBJECT = '''
"""A tiny actor-critic with a CleanRL-style loss; its coefficients and GAE discount are the constants below."""
import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from torch import nn

VF_COEF, ENT_COEF, VALUE_HALF, CODE_GAMMA, NORM_ADV = {vf}, {ent}, {half}, {gamma}, {norm}


def config():
    return {{"gamma": 0.99, "gae_lambda": 0.95, "vf_coef": VF_COEF, "ent_coef": ENT_COEF}}


class Walk(gym.Env):
    def __init__(self, seed):
        self.observation_space = spaces.Box(-1.0, 1.0, (4,), np.float32)
        self.action_space = spaces.Discrete(3)
        self.rng = np.random.default_rng(seed)

    def reset(self, *, seed=None, options=None):
        return self.rng.uniform(-1, 1, 4).astype(np.float32), {{}}

    def step(self, action):
        return self.rng.uniform(-1, 1, 4).astype(np.float32), 0.0, False, False, {{}}


def make_env(config, seed):
    return Walk(seed)


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
        self.critic = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        dist = torch.distributions.Categorical(logits=self.actor(x))
        action = dist.sample() if action is None else action
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


def make_policy(config, observation_space, action_space):
    return Agent()


def compute_advantages(config, rewards, values, dones, next_value):
    gamma, lam = CODE_GAMMA or config["gamma"], config["gae_lambda"]
    adv, last = np.zeros_like(rewards, dtype=np.float64), 0.0
    for t in reversed(range(len(rewards))):
        nxt = next_value if t == len(rewards) - 1 else values[t + 1]
        delta = rewards[t] + gamma * nxt * (1 - dones[t]) - values[t]
        last = delta + gamma * lam * (1 - dones[t]) * last
        adv[t] = last
    return adv, adv + values


def compute_loss(config, policy, batch):
    _, logp, ent, value = policy.get_action_and_value(batch["obs"], batch["actions"])
    ratio = (logp - batch["logprobs"]).exp()
    adv = batch["advantages"]
    if NORM_ADV:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg = torch.max(-adv * ratio, -adv * ratio.clamp(0.8, 1.2)).mean()
    v = ((value.view(-1) - batch["returns"]) ** 2).mean() * (0.5 if VALUE_HALF else 1.0)
    entropy = ent.mean()
    loss = pg + config["vf_coef"] * v - config["ent_coef"] * entropy
    return {{"loss": loss, "policy_loss": pg, "value_loss": v, "entropy": entropy}}
'''


def _loss_subject(
    directory: Path,
    name: str,
    vf: float = 0.5,
    ent: float = 0.01,
    half: bool = True,
    gamma: float | None = None,
    norm: bool = True,
) -> str:
    path = directory / name / "subject.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LOSS_SUBJECT.format(vf=vf, ent=ent, half=half, gamma=gamma, norm=norm))
    return str(path)


@pytest.fixture(scope="module")
def loss_subjects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("loss_subjects")
    return {
        "baseline": _loss_subject(root, "baseline"),
        "changed": _loss_subject(root, "changed", vf=5.0, ent=-0.01, gamma=0.95),
        "sb3_style": _loss_subject(root, "sb3_style", vf=0.25, half=False),
        "raw_advantages": _loss_subject(root, "raw_advantages", norm=False),
    }


def test_the_verdicts_name_the_changed_coefficients_and_discount(make_wb, loss_subjects) -> None:
    from rlaudit.findings import Status
    from rlaudit.loss.advantages import advantages
    from rlaudit.loss.terms import loss_terms

    wb = make_wb(loss_subjects["changed"], baseline=loss_subjects["baseline"])
    (terms,) = loss_terms(wb).findings
    assert terms.status is Status.SUSPECT and terms.reads == ["agents"], terms.evidence.summary
    assert "value-loss coefficient 0.5 → 5 (×10)" in terms.evidence.summary
    assert "entropy coefficient 0.01 → -0.01: the sign flipped" in terms.evidence.summary
    (adv,) = advantages(wb).findings
    assert adv.id == "loss/advantages-candidate" and adv.status is Status.CONFIRMED, adv.evidence.summary
    assert "the reference GAE with gamma 0.95, lambda 0.95, solved from its answers" in adv.evidence.summary
    assert "the config declares gamma 0.99" in adv.evidence.summary


def test_a_value_loss_without_one_half_that_the_coefficient_compensates_is_only_noted(
    make_wb, loss_subjects
) -> None:
    from rlaudit.findings import Status
    from rlaudit.loss.terms import loss_terms

    (terms,) = loss_terms(make_wb(loss_subjects["sb3_style"], baseline=loss_subjects["baseline"])).findings
    assert terms.status is Status.NOTED, terms.evidence.summary
    assert "MSE (no ½, as in SB3)" in terms.evidence.summary and "the same" in terms.evidence.summary


def test_advantages_no_longer_normalized_are_named(make_wb, loss_subjects) -> None:
    from rlaudit.findings import Status
    from rlaudit.loss.terms import loss_terms

    (terms,) = loss_terms(
        make_wb(loss_subjects["raw_advantages"], baseline=loss_subjects["baseline"])
    ).findings
    assert terms.status is Status.SUSPECT, terms.evidence.summary
    summary = terms.evidence.summary
    assert (
        "the baseline normalizes the advantages per batch but the candidate uses the raw advantages"
        in summary
    )
    assert "coefficient" not in summary.split(" — ")[0] and "network" not in summary


# ---------------------------------------------------------------------------------------------------------------
# Subject shapes the contract allows: a plain gymnasium.Env, a Dict observation space
# ---------------------------------------------------------------------------------------------------------------


def test_a_dict_observation_space_gets_no_shared_batch_and_says_why(tmp_path: Path) -> None:
    """The shared batch is an array of observations drawn for the snapshot's ``obs_shape``: fed to a policy
    built for a Dict space it raised in the subject's loss (loss/terms and loss/gradient-flow were ERROR)."""
    from rlaudit.engine.store import ProbeResult
    from rlaudit.loss.probes import policy_snapshot
    from rlaudit.loss.terms import shared_batch
    from support.probing import probe_context

    ctx = probe_context(shape_subject(None), tmp_path / "out", ROLLOUT_CAPABILITIES)
    snapshot = policy_snapshot(ctx, seed=0)
    assert snapshot["obs_array"] is False

    class Bench:
        """Answers the snapshot probe with the Dict subject's result on both sides."""

        def run(self, probe: Any, **params: Any) -> Any:
            from rlaudit.engine.workbench import Pair

            assert probe is policy_snapshot, "nothing past the snapshot may run on a Dict observation space"
            return Pair(
                *(
                    ProbeResult(side, "s", "p", params, True, result=snapshot)
                    for side in ("baseline", "candidate")
                )
            )

    info = shared_batch(Bench(), seed=0).info
    assert info["batch"] is None
    assert info["reason"].startswith("the baseline and candidate observations are not one array (a Dict")
