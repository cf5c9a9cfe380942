"""The loss room: reference GAE and its mistakes, probe environments, loss-term and gradient analysis, and the
detection matrix for the loss faults (with the identical pair staying quiet)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rlaudit.findings import Finding
from rlaudit.loss import envs, gae
from rlaudit.loss.audit import compare_terms, make_batch, zero_gradients


def flagged(sections: Iterable[Any]) -> list[Finding]:
    """SUSPECT/CONFIRMED findings of Sections (as tests/audits/conftest.py's helper, which is not importable)."""
    return [f for s in sections for f in s.findings if f.status.is_flag]


def describe(findings: Iterable[Finding]) -> str:
    return "\n".join(f"{f.id}: {f.headline}" for f in findings)


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


# ---------------------------------------------------------------------------------------------------------------
# Detection matrix
# ---------------------------------------------------------------------------------------------------------------


LOSS_FAULTS = [
    f.id
    for f in __import__("rlaudit.demo.faults", fromlist=["CATALOG"]).CATALOG.values()
    if f.subsystem == "loss"
]


@pytest.mark.parametrize("fault", LOSS_FAULTS)
def test_loss_fault_is_flagged(make_wb, fault: str) -> None:
    from rlaudit.loss import audit_all

    sections = audit_all(make_wb(f"builtin:reference+{fault}"))
    found = [f for f in flagged(sections) if f.subsystem == "loss"]
    errors = [f for s in sections for f in s.findings if f.status.value == "ERROR"]
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"
    assert not errors, describe(errors)


def test_identical_pair_is_quiet(make_wb) -> None:
    from rlaudit.loss import audit_all

    sections = audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]


def test_advantages_quiet_across_input_seeds(make_wb) -> None:
    from rlaudit.loss.audit import advantages

    wb = make_wb("builtin:reference")
    for seed in (1, 2, 3):
        section = advantages(wb, seed=seed)
        assert not flagged([section]), describe(section.findings)
