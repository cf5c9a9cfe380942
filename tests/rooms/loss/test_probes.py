"""The tests of :mod:`rlaudit.loss.probes`."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from support.toys import ROLLOUT_CAPABILITIES, shape_subject

# ---------------------------------------------------------------------------------------------------------------
# Subject shapes the contract allows: a plain gymnasium.Env, a Dict observation space
# ---------------------------------------------------------------------------------------------------------------


def test_the_rollout_batch_is_collected_from_a_plain_env(tmp_path: Path) -> None:
    """A plain ``gymnasium.Env`` (not a vector env) is rolled out as a vector env of one: before, the probe
    wrote no gradients and ``loss/gradient-flow`` raised FileNotFoundError reading them."""
    import gymnasium as gym

    from rlaudit.engine.io import read_table
    from rlaudit.loss.probes import rollout_loss
    from support.probing import probe_context

    subject = shape_subject(lambda config, seed: gym.make("CartPole-v1"))
    ctx = probe_context(subject, tmp_path / "out", ROLLOUT_CAPABILITIES)
    result = rollout_loss(ctx, seed=0, steps=64)
    assert result["samples"] == 64 and "unsupported" not in result
    grads = read_table(tmp_path / "out" / "gradients")
    assert set(grads["term"]) >= {"loss", "value_loss"} and (grads["grad_norm"] > 0).any()


def test_a_dict_observation_space_says_the_rollout_batch_is_unsupported(tmp_path: Path) -> None:
    from rlaudit.engine.io import table_path
    from rlaudit.loss.probes import rollout_loss
    from support.probing import probe_context

    ctx = probe_context(shape_subject(None), tmp_path / "out", ROLLOUT_CAPABILITIES)
    result = rollout_loss(ctx, seed=0, steps=64)
    assert result == {"policy_api": True, "unsupported": "a Dict observation space"}
    assert table_path(tmp_path / "out" / "gradients") is None


def test_a_staged_action_takes_the_shape_of_the_action_space() -> None:
    from gymnasium import spaces

    from rlaudit.loss.probes import action_tensor

    staged = np.array([0, 1, 0], dtype=np.int64)
    discrete = action_tensor(staged, spaces.Discrete(2))
    assert discrete.dtype == torch.long and tuple(discrete.shape) == (3,)
    one = action_tensor(staged, spaces.Box(-2.0, 2.0, (1,)))
    assert one.dtype == torch.float32 and tuple(one.shape) == (3, 1) and one[:, 0].tolist() == [0.0, 1.0, 0.0]
    two = action_tensor(np.array([0.5, -1.0], dtype=np.float32), spaces.Box(-2.0, 2.0, (2,)))
    assert two.tolist() == [[0.5, 0.5], [-1.0, -1.0]]
    given = action_tensor(np.ones((2, 2), dtype=np.float32), spaces.Box(-2.0, 2.0, (2,)))
    assert tuple(given.shape) == (2, 2)
    assert action_tensor(staged, None).dtype == torch.long  # no space known: as before


def test_a_continuous_policy_scores_the_staged_batch_it_was_given(tmp_path: Path) -> None:
    """An SB3 PPO with gSDE on Pendulum ended loss/terms in an ERROR ("SVD did not converge"): the behaviour
    log-probabilities were taken with (B,) actions, which a (B, 1) Gaussian broadcasts to (B, B), and were off by
    hundreds from what the loss computed; every importance ratio over- or underflowed and the terms were NaN."""
    from rlaudit.adapters.sb3.subject import SB3Subject
    from rlaudit.loss.probes import batch_tensors
    from rlaudit.loss.terms import make_batch

    setup = tmp_path / "ppo_pendulum.yaml"
    setup.write_text("algo: ppo\nenv_id: Pendulum-v1\nn_envs: 2\nuse_sde: true\nsde_sample_freq: 4\n")
    subject = SB3Subject(setup)
    cfg = subject.config()
    env = subject.make_env(cfg, 0)
    torch.manual_seed(0)
    policy = subject.make_policy(cfg, env.single_observation_space, env.single_action_space)
    draft = make_batch([3], 1, 64, 0, None, None)
    space = env.single_action_space
    with torch.no_grad():
        _, logprob, _, value = policy.get_action_and_value(
            torch.as_tensor(draft["obs"]),
            batch_tensors({"actions": draft["actions"]}, "cpu", space)["actions"],
        )
    batch = make_batch([3], 1, 64, 0, value.reshape(-1).numpy(), logprob.reshape(-1).numpy())
    terms = subject.compute_loss(cfg, policy, batch_tensors(batch, "cpu", space))
    assert all(math.isfinite(float(v)) for v in terms.values())
    assert abs(float(terms["approx_kl"])) < 1e-5  # the ratio is 1: the loss scores what the batch holds
