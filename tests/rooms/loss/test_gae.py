"""The tests of :mod:`rlaudit.loss.gae`."""

from __future__ import annotations

import numpy as np
import pytest

from rlaudit.loss import gae

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


def test_case_003s_lambda_returns_by_hand() -> None:
    # One env, two steps, no episode end; gamma 0.5, lambda 0.5; V(s_0) = 2, V(s_1) = 4, V(s_2) = 8.
    r, v, d, nv = np.array([[1.0], [0.0]]), np.array([[2.0], [4.0]]), np.zeros((2, 1)), np.array([8.0])
    _, ret = gae.reference_gae(r, v, d, nv, 0.5, 0.5)
    g1 = 0.0 + 0.5 * (0.5 * 8.0 + 0.5 * 8.0)  # the last step bootstraps from V(s_2) = 8
    np.testing.assert_allclose(ret[:, 0], [1.0 + 0.5 * (0.5 * 4.0 + 0.5 * g1), g1])
    adv, ret = gae.reference_gae(r, v, d, nv, 0.5, 0.5, bootstrap="current_return")
    g1 = 0.0 + 0.5 * (0.5 * 4.0 + 0.5 * 8.0)  # (1 - lambda) mixes in V(s_1), the step's own state
    np.testing.assert_allclose(ret[:, 0], [1.0 + 0.5 * (0.5 * 2.0 + 0.5 * g1), g1])
    np.testing.assert_allclose(adv, ret - v)


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
