"""The tests of :mod:`rlaudit.loss.probes`."""

from __future__ import annotations

from pathlib import Path

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
