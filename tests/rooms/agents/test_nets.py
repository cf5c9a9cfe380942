"""The tests of :mod:`rlaudit.agents.nets`."""

from __future__ import annotations

import torch
from torch import nn

from rlaudit.agents.nets import describe_modules, find_heads, parse_extra_repr, trace_forward


def test_parse_extra_repr_keeps_keys_and_positional_args() -> None:
    assert parse_extra_repr("in_features=4, out_features=2, bias=True") == {
        "in_features": "4",
        "out_features": "2",
        "bias": "True",
    }
    assert parse_extra_repr("3, 8, kernel_size=(3, 3), stride=(1, 1)") == {
        "arg0": "3",
        "arg1": "8",
        "kernel_size": "(3, 3)",
        "stride": "(1, 1)",
    }
    assert parse_extra_repr("") == {}


class SharedTrunk(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU())
        self.pi = nn.Linear(8, 4)
        self.vf = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.encoder(x)
        return self.pi(h), self.vf(h)


def test_trace_finds_heads_input_layer_and_shared_trunk() -> None:
    torch.manual_seed(0)
    net = SharedTrunk()
    trace = trace_forward(net, torch.randn(5, 6))
    heads = find_heads(trace, describe_modules(net), n_actions=4)
    assert heads == {"policy": "pi", "value": "vf"}
    assert trace.obs_consumers() == ["encoder.0"]
    assert trace.upstream("pi") & trace.upstream("vf") == {"encoder.0", "encoder.1"}
    assert [c["out_shape"] for c in trace.calls] == [[5, 8], [5, 8], [5, 4], [5, 1]]


def test_a_dict_observation_is_fed_as_a_dict_and_its_input_layers_found() -> None:
    """A policy for a Dict observation space takes a dict of batched tensors; its first layers receive the
    encoded observation (one-hot, concatenated), which no module produced: they are its input layers."""
    import dict_obs_subject as subject  # tests/fixtures is on sys.path
    import numpy as np

    from rlaudit.agents.nets import as_tensors, call_policy

    env = subject.make_env(subject.config(), 0)
    policy = subject.make_policy(subject.config(), env.observation_space, env.action_space)
    obs = as_tensors({"position": np.zeros((5, 1), np.float32), "goal": np.array([0, 1, 1, 0, 1])})
    assert call_policy(policy, obs) == "get_action_and_value"
    trace = trace_forward(policy, obs)
    assert trace.obs_consumers() == []
    assert sorted(trace.input_layers()) == ["actor.0", "critic.0"]
    assert trace.inputs["actor.0"].shape == (5, 3)  # the position and the goal one-hot


def test_input_layers_are_the_observation_consumers_when_there_are_some() -> None:
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    trace = trace_forward(net, torch.zeros(3, 4))
    assert trace.input_layers() == trace.obs_consumers() == ["0"]
