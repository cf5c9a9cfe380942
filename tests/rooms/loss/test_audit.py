"""The loss room: reference GAE and its mistakes, probe environments, loss-term and gradient analysis, and the
detection matrix for the loss faults (with the identical pair staying quiet)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rlaudit.findings import Status
from rlaudit.loss import envs, gae
from rlaudit.loss.gradients import zero_gradients
from rlaudit.loss.terms import (
    TARGET_SHIFTS,
    coefficient_changes,
    compare_terms,
    make_batch,
    solve_weights,
    sweep_batches,
    value_form_change,
)

# ---------------------------------------------------------------------------------------------------------------
# Reference GAE and variants
# ---------------------------------------------------------------------------------------------------------------


def test_reference_gae_by_hand() -> None:
    # One env, three steps; the episode ends after step 1 (terminated); gamma 0.5, lambda 0.5.
    r = np.array([[1.0], [2.0], [4.0]])
    v = np.array([[0.5], [1.0], [2.0]])
    d = np.array([[0.0], [1.0], [0.0]])
    nv = np.array([8.0])
    adv, ret = gae.reference_gae(r, v, d, nv, gamma=0.5, gae_lambda=0.5)
    delta2 = 4.0 + 0.5 * 8.0 - 2.0  # 6
    delta1 = 2.0 - 1.0  # terminal: no bootstrap
    delta0 = 1.0 + 0.5 * 1.0 - 0.5  # 1
    a2 = delta2
    a1 = delta1  # the mask stops the recursion at the episode end
    a0 = delta0 + 0.25 * a1
    np.testing.assert_allclose(adv[:, 0], [a0, a1, a2])
    np.testing.assert_allclose(ret, adv + v)


def test_truncation_is_bootstrapped_from_the_final_value() -> None:
    r = np.array([[1.0]])
    v = np.array([[0.0]])
    d = np.array([[1.0]])
    adv, _ = gae.reference_gae(
        r, v, d, np.array([5.0]), 0.9, 0.95, truncated=np.array([[True]]), final_values=np.array([[2.0]])
    )
    assert adv[0, 0] == pytest.approx(1.0 + 0.9 * 2.0)
    adv_t, _ = gae.reference_gae(r, v, d, np.array([5.0]), 0.9, 0.95)
    assert adv_t[0, 0] == pytest.approx(1.0)


def test_every_variant_is_distinguishable_on_the_staged_inputs() -> None:
    x = gae.make_gae_inputs(0)
    outs = {
        v.name: v.fn(
            x["rewards"],
            x["values"],
            x["dones"],
            x["next_value"],
            0.99,
            0.95,
            x["truncated"],
            x["final_values"],
        )[0]
        for v in gae.VARIANTS
    }
    names = list(outs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert gae.max_error(outs[a], outs[b]) > 1e-2, f"{a} and {b} give the same advantages"


@pytest.mark.parametrize(("fault", "expected"), [(False, "correct"), (True, "bootstrap_current")])
def test_match_variants_names_the_builtin_trainers_gae(fault: bool, expected: str) -> None:
    from rlaudit.demo.ppo import PPOImpl, compute_advantages

    x = gae.make_gae_inputs(3)
    config = {"trainer": {"gamma": 0.97, "gae_lambda": 0.9}}
    rewards = gae.fold_truncation(x["rewards"], x["truncated"], x["final_values"], 0.97)
    adv, ret = compute_advantages(
        config,
        rewards,
        x["values"],
        x["dones"],
        x["next_value"],
        impl=PPOImpl(gae_bootstrap_current_value=fault),
    )
    passed = {**x, "rewards": rewards}
    rows = gae.match_variants(adv, ret, passed, 0.97, 0.9, with_truncation=False)
    assert [r["variant"] for r in rows if r["match"]] == [expected]
    assert not any(r["testable"] for r in rows if r["variant"].startswith("truncation"))


def test_the_impulse_reads_gamma_and_lambda_of_a_gae() -> None:
    x = gae.make_impulse_inputs(num_steps=6)
    adv, _ = gae.reference_gae(x["rewards"], x["values"], x["dones"], x["next_value"], 0.9, 0.5)
    # env 0: one reward at the end decays by gamma * lambda = 0.45 per step; env 1: the bootstrap weighs gamma
    np.testing.assert_allclose(adv[:, 0], 0.45 ** np.arange(5, -1, -1))
    np.testing.assert_allclose(adv[-1, 1], 0.9)
    reading = gae.implied_discount(adv)
    assert reading["geometric"] and reading["gamma"] == pytest.approx(0.9)
    assert reading["gae_lambda"] == pytest.approx(0.5) and reading["decay"] == pytest.approx(0.45)
    nstep = adv.copy()
    nstep[0, 0] = 0.0  # a kernel that is not geometric (e.g. n-step returns cut after five steps)
    assert not gae.implied_discount(nstep)["geometric"]


def test_a_discount_other_than_declared_is_solved_for() -> None:
    from rlaudit.loss.advantages import solve_discount

    x = gae.make_gae_inputs(5)
    adv, ret = gae.reference_gae(x["rewards"], x["values"], x["dones"], x["next_value"], 0.95, 0.8)
    arrays = {**x, "advantages": adv, "returns": ret}
    gamma, lam, err = solve_discount("correct", arrays, False, [(0.99, 0.95)])
    assert gamma == pytest.approx(0.95, abs=1e-6) and lam == pytest.approx(0.8, abs=1e-6) and err < 1e-6
    rows = gae.match_variants(adv, ret, x, 0.99, 0.95, with_truncation=False)
    assert not any(r["match"] for r in rows)  # with the declared 0.99/0.95 nothing matches


def test_find_discount_prefers_shallow_keys_and_ignores_non_numbers() -> None:
    cfg = {
        "trainer": {"gamma": 0.97, "gae_lambda": 0.9},
        "env": {"reward": {"gamma": "x"}},
        "other": {"lam": 2.0},
    }
    found = gae.find_discount(cfg)
    assert (found["gamma"], found["gamma_key"]) == (0.97, "trainer.gamma")
    assert (found["gae_lambda"], found["lambda_key"]) == (0.9, "trainer.gae_lambda")
    assert gae.find_discount({})["gamma"] is None


# ---------------------------------------------------------------------------------------------------------------
# Probe environments
# ---------------------------------------------------------------------------------------------------------------


def _step(env: envs.ProbeVecEnv, actions: list[int]):
    return env.step(np.array(actions, dtype=np.int64))


def test_constant_probe_pays_one_and_resets_every_step() -> None:
    env = envs.make_probe_env("constant", 3, seed=0)
    obs, _ = env.reset()
    assert obs.shape == (3, 1) and env.single_action_space.n == 1
    obs, r, term, trunc, info = _step(env, [0, 0, 0])
    np.testing.assert_array_equal(r, [1, 1, 1])
    assert term.all() and not trunc.any()
    np.testing.assert_array_equal(info["episode"]["r"], [1, 1, 1])
    assert info["_final_obs"].all() and info["final_obs"].shape == (3, 1)
    assert len(env.pop_episodes()["r"]) == 3


def test_discount_probe_is_two_steps_with_final_obs_one() -> None:
    env = envs.make_probe_env("discount", 2, seed=0)
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[:, 0], [0, 0])
    obs, r, term, _, info = _step(env, [0, 0])
    np.testing.assert_array_equal(obs[:, 0], [1, 1])
    np.testing.assert_array_equal(r, [1, 1])
    assert not term.any() and info == {}
    obs, _r, term, _, info = _step(env, [0, 0])
    assert term.all()
    np.testing.assert_array_equal(info["final_obs"][:, 0], [1, 1])  # the last observation of the episode
    np.testing.assert_array_equal(obs[:, 0], [0, 0])  # SAME_STEP autoreset: already the next episode's first
    np.testing.assert_array_equal(info["episode"]["r"], [2, 2])
    np.testing.assert_array_equal(info["episode"]["l"], [2, 2])


def test_policy_probes_reward_the_right_action() -> None:
    env = envs.make_probe_env("action", 2, seed=0)
    env.reset()
    _, r, *_ = _step(env, [1, 0])
    np.testing.assert_array_equal(r, [1, -1])
    env = envs.make_probe_env("observation_action", 64, seed=1)
    obs, _ = env.reset()
    match = (obs[:, 0] > 0).astype(np.int64)
    _, r, *_ = env.step(match)
    assert (r == 1).all()
    _, r, *_ = env.step(1 - (env._obs > 0).astype(np.int64))
    assert (r == -1).all()
    env = envs.make_probe_env("observation", 64, seed=1)
    obs, _ = env.reset()
    _, r, *_ = env.step(np.zeros(64, dtype=np.int64))
    np.testing.assert_array_equal(r, obs[:, 0])


def test_probe_env_rejects_bad_actions() -> None:
    env = envs.make_probe_env("action", 2, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset()
    with pytest.raises(ValueError, match="in \\[0, 2\\)"):
        env.step(np.array([0, 2]))


def test_judge_passes_learned_values_and_fails_wrong_ones() -> None:
    assert envs.judge("constant", np.array([0.97]), np.ones((1, 1)), 0.99)["passed"]
    assert not envs.judge("constant", np.array([0.7]), np.ones((1, 1)), 0.99)["passed"]
    ok = envs.judge("discount", np.array([1.99, 1.0]), np.ones((2, 1)), 0.99)
    assert ok["passed"]
    blown = envs.judge("discount", np.array([6.0, 1.0]), np.ones((2, 1)), 0.99)
    assert not blown["passed"] and "expected" in blown["reason"]
    probs = np.array([[0.02, 0.98]])
    assert envs.judge("action", np.array([0.9]), probs, 0.99)["passed"]
    assert not envs.judge("action", np.array([0.9]), np.array([[0.5, 0.5]]), 0.99)["passed"]


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


def test_loss_floor_zeroes_the_critic_gradient() -> None:
    import torch

    from rlaudit.demo.agent import Agent
    from rlaudit.demo.ppo import PPOImpl, compute_loss
    from rlaudit.loss.probes import batch_tensors, loss_and_gradients

    class Subject:
        def __init__(self, floor: float | None) -> None:
            self.impl = PPOImpl(value_loss_floor=floor)

        def compute_loss(self, config, policy, batch):
            return compute_loss(config, policy, batch, impl=self.impl)

    torch.manual_seed(0)
    policy = Agent(3, 2)
    with torch.no_grad():
        values = policy.get_value(torch.randn(64, 3)).numpy()
    batch = make_batch([3], 2, 64, seed=0, values=None, logprobs=None)
    batch["values"] = values.astype(np.float32)
    batch["returns"] = (values + 0.01).astype(np.float32)
    batch["obs"] = np.random.default_rng(0).normal(size=(64, 3)).astype(np.float32)
    for floor, expect_zero in ((None, False), (0.05, True)):
        _, rows = loss_and_gradients(Subject(floor), {}, policy, batch_tensors(batch))
        zeros = zero_gradients(pd.DataFrame(rows))
        critic = [p for p in zeros if p.startswith("critic")]
        assert bool(critic) is expect_zero, (floor, zeros)
        assert not [p for p in zeros if p.startswith("actor")]


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
# Detection matrix
# ---------------------------------------------------------------------------------------------------------------


LOSS_FAULTS = [
    f.id
    for f in __import__("rlaudit.demo.faults", fromlist=["CATALOG"]).CATALOG.values()
    if f.subsystem == "loss"
]


@pytest.mark.parametrize("fault", LOSS_FAULTS)
def test_loss_fault_is_flagged(make_wb, flagged, describe, fault: str) -> None:
    from rlaudit.loss import audit_all

    sections = audit_all(make_wb(f"builtin:reference+{fault}"))
    found = flagged(sections, "loss")
    errors = [f for s in sections for f in s.findings if f.status.value == "ERROR"]
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"
    assert not errors, describe(errors)


def test_identical_pair_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit.loss import audit_all

    sections = audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]


def test_advantages_quiet_across_input_seeds(make_wb, flagged, describe) -> None:
    from rlaudit.loss.audit import advantages

    wb = make_wb("builtin:reference")
    for seed in (1, 2, 3):
        section = advantages(wb, seed=seed)
        assert not flagged([section]), describe(section.findings)


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


def _shape_subject(make_env: Any) -> Any:
    """The Dict-observation fixture subject's policy and loss (its policy encodes any space) on ``make_env``."""
    from types import SimpleNamespace

    import dict_obs_subject as module  # tests/fixtures is on sys.path

    return SimpleNamespace(
        config=module.config,
        make_env=make_env or module.make_env,
        make_policy=module.make_policy,
        compute_advantages=module.compute_advantages,
        compute_loss=module.compute_loss,
    )


ROLLOUT_CAPABILITIES = ("config", "make_env", "make_policy", "compute_advantages", "compute_loss")


def test_the_rollout_batch_is_collected_from_a_plain_env(tmp_path: Path) -> None:
    """A plain ``gymnasium.Env`` (not a vector env) is rolled out as a vector env of one: before, the probe
    wrote no gradients and ``loss/gradient-flow`` raised FileNotFoundError reading them."""
    import gymnasium as gym

    from rlaudit.engine.io import read_table
    from rlaudit.loss.probes import rollout_loss
    from support.probing import probe_context

    subject = _shape_subject(lambda config, seed: gym.make("CartPole-v1"))
    ctx = probe_context(subject, tmp_path / "out", ROLLOUT_CAPABILITIES)
    result = rollout_loss(ctx, seed=0, steps=64)
    assert result["samples"] == 64 and "unsupported" not in result
    grads = read_table(tmp_path / "out" / "gradients")
    assert set(grads["term"]) >= {"loss", "value_loss"} and (grads["grad_norm"] > 0).any()


def test_a_dict_observation_space_says_the_rollout_batch_is_unsupported(tmp_path: Path) -> None:
    from rlaudit.engine.io import table_path
    from rlaudit.loss.probes import rollout_loss
    from support.probing import probe_context

    ctx = probe_context(_shape_subject(None), tmp_path / "out", ROLLOUT_CAPABILITIES)
    result = rollout_loss(ctx, seed=0, steps=64)
    assert result == {"policy_api": True, "unsupported": "a Dict observation space"}
    assert table_path(tmp_path / "out" / "gradients") is None


def test_a_rollout_batch_that_was_not_measured_is_named_not_read() -> None:
    from rlaudit.engine.store import ProbeResult
    from rlaudit.engine.workbench import Pair
    from rlaudit.loss.gradients import _rollout_unmeasured

    def result(side: str, **summary: Any) -> ProbeResult:
        return ProbeResult(side, "s", "rlaudit.loss.probes:rollout_loss", {}, True, result=summary)

    measured = result("baseline", policy_api=True, samples=64)
    assert _rollout_unmeasured(Pair(measured, result("candidate", policy_api=True, samples=64))) == ""
    dict_obs = Pair(measured, result("candidate", policy_api=True, unsupported="a Dict observation space"))
    assert _rollout_unmeasured(dict_obs) == (
        "candidate: a Dict observation space (the rollout batch holds array observations)"
    )
    lacking = ProbeResult("candidate", "s", "p", {}, False, missing=["compute_loss"])
    assert _rollout_unmeasured(Pair(measured, lacking)) == "candidate lacks compute_loss"


def test_a_dict_observation_space_gets_no_shared_batch_and_says_why(tmp_path: Path) -> None:
    """The shared batch is an array of observations drawn for the snapshot's ``obs_shape``: fed to a policy
    built for a Dict space it raised in the subject's loss (loss/terms and loss/gradient-flow were ERROR)."""
    from rlaudit.engine.store import ProbeResult
    from rlaudit.loss.probes import policy_snapshot
    from rlaudit.loss.terms import shared_batch
    from support.probing import probe_context

    ctx = probe_context(_shape_subject(None), tmp_path / "out", ROLLOUT_CAPABILITIES)
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
