"""The tests of :mod:`rlaudit.loss.gradients`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rlaudit.loss.gradients import zero_gradients
from rlaudit.loss.terms import (
    make_batch,
)


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
