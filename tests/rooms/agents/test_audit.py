"""Agents room: structural alignment, tracing, and the detection matrix for the agents faults."""

from __future__ import annotations

import itertools
import math
import textwrap

import pytest
import torch
from torch import nn

from rlaudit.agents import align as al
from rlaudit.agents.nets import describe_modules, find_heads, parse_extra_repr, trace_forward

torch.set_num_threads(1)


TOY_SUBJECT = textwrap.dedent(
    '''
    """A toy subject with only config, make_env and make_policy (no training, no checkpoints)."""
    import numpy as np
    import gymnasium as gym
    from gymnasium import spaces
    import torch
    from torch import nn


    def config():
        return {"hidden": 8, "obs": 4, "actions": 3}


    class Walk(gym.Env):
        """Four noisy features, three actions; episodes of 20 steps."""

        def __init__(self, seed):
            self.observation_space = spaces.Box(-1.0, 1.0, (4,), np.float32)
            self.action_space = spaces.Discrete(3)
            self.rng = np.random.default_rng(seed)
            self.t = 0

        def reset(self, *, seed=None, options=None):
            if seed is not None:
                self.rng = np.random.default_rng(seed)
            self.t = 0
            return self.rng.uniform(-1, 1, 4).astype(np.float32), {}

        def step(self, action):
            self.t += 1
            obs = np.clip(self.rng.normal(0.1 * int(action), 0.5, 4), -1, 1).astype(np.float32)
            return obs, 0.0, False, self.t >= 20, {}


    def make_env(config, seed):
        return Walk(seed)


    def make_policy(config, observation_space, action_space):
        return nn.Sequential(nn.Linear(4, config["hidden"]), nn.Tanh(), nn.Linear(config["hidden"], 3))
    '''
)


@pytest.fixture(scope="session")
def toy_spec(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A subject file with only ``config``, ``make_env`` and ``make_policy`` (shared by the room tests)."""
    directory = tmp_path_factory.mktemp("toy_structural")
    path = directory / "subject.py"
    path.write_text(TOY_SUBJECT)
    return str(path)


def rec(path: str, cls: str, kind: str, params: dict | None = None, settings: dict | None = None) -> dict:
    return {
        "path": path,
        "cls": cls,
        "kind": kind,
        "params": params or {},
        "settings": settings or {},
        "block": path.split(".")[0],
        "order": 0,
    }


def mlp(names: list[str], widths: list[int], act: str = "Tanh") -> list[dict]:
    out = []
    for i, (name, (a, b)) in enumerate(zip(names, itertools.pairwise(widths), strict=True)):
        out.append(rec(name, "Linear", "linear", {"weight": [b, a], "bias": [b]}, {"in_features": str(a)}))
        if i < len(widths) - 2:
            out.append(rec(f"{name}_act", act, "activation"))
    return out


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


def test_a_rename_alone_is_only_renamed() -> None:
    a = mlp(["fc1", "fc2", "fc3"], [10, 64, 64, 5])
    b = mlp(["encoder.0", "encoder.2", "head"], [10, 64, 64, 5])
    pairs = al.align(a, b)
    assert len(pairs) == len(a)
    assert all(p.a is not None and p.b is not None for p in pairs)
    assert {p.change for p in pairs} == {"renamed"}


def test_resize_and_kind_change_are_labelled() -> None:
    a = mlp(["l1", "l2", "l3"], [10, 64, 64, 5], act="Tanh")
    b = mlp(["l1", "l2", "l3"], [10, 16, 16, 5], act="ReLU")
    changes = [p.change for p in al.align(a, b)]
    assert changes == ["resized", "kind", "resized", "kind", "resized"]


def test_an_added_layer_is_one_insertion_not_a_cascade() -> None:
    a = mlp(["l1", "l2", "l3"], [10, 64, 64, 5])
    b = mlp(["l1", "l2", "lx", "l3"], [10, 64, 64, 64, 5])
    pairs = al.align(a, b)
    added = [p for p in pairs if p.change == "added"]
    assert len(added) == 2  # one Linear and its activation
    assert all(p.change in ("same", "added") for p in pairs)


def test_block_summary_and_hidden_widths() -> None:
    recs = mlp(["actor.0", "actor.2", "actor.4"], [10, 64, 64, 5])
    assert al.block_summary(recs) == {"actor": "10→64→64→5 (Tanh)"}
    assert al.hidden_widths(recs) == [64, 64]


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


def tree(obs: int, widths: tuple[int, ...] = (16,), act: str = "Tanh", n_actions: int = 3) -> dict:
    """A ``tree.json`` of one actor block: obs -> widths... -> n_actions."""
    names = [f"actor.{2 * i}" for i in range(len(widths) + 1)]
    recs = mlp(names, [obs, *widths, n_actions], act=act)
    for i, r in enumerate(recs):
        r["order"] = i
        r["n_params"] = 0
    total = sum(math.prod(shape) for r in recs for shape in r["params"].values())
    return {
        "modules": recs,
        "order": [r["path"] for r in recs],
        "obs_consumers": ["actor.0"],
        "heads": {"policy": names[-1], "value": None},
        "obs_size": obs,
        "n_actions": n_actions,
        "blocks": {"actor": total, "total": total},
    }


def test_input_resize_that_follows_the_observation_is_a_knock_on() -> None:
    from rlaudit.agents.trees import compare_trees

    cmp = compare_trees(tree(10), tree(40))
    assert cmp["real"] == []
    assert len(cmp["knock_on"]) == 1
    cmp = compare_trees(tree(10), {**tree(10), "obs_size": 12})  # input 10 no longer equals the observation
    assert cmp["knock_on"] == [] and cmp["real"] == []  # same layers: nothing resized


def test_changed_quantities_name_width_depth_activation_and_parameters() -> None:
    from rlaudit.agents.trees import changed_quantities

    # 10->64->64->3 = 704 + 4160 + 195 = 5059 parameters; 10->16->16->3 = 176 + 272 + 51 = 499
    assert changed_quantities(tree(10, (64, 64)), tree(10, (16, 16))) == [
        "hidden width 64 → 16",
        "parameters 5,059 → 499",
    ]
    assert changed_quantities(tree(10, (64, 64)), tree(10, (64, 64), act="ReLU")) == [
        "activation Tanh → ReLU"
    ]
    assert (
        changed_quantities(tree(10, (64, 64)), tree(10, (64, 64, 64)))[0] == "hidden layers per block 2 → 3"
    )
    assert changed_quantities(tree(10, (64, 64)), tree(10, (64, 64))) == []


@pytest.mark.parametrize("fault", ["agents.hidden_size", "agents.activation"])
def test_agents_faults_are_flagged_with_the_changed_quantity(make_wb, flagged, describe, fault: str) -> None:
    from rlaudit import agents

    sections = agents.audit_all(make_wb(f"builtin:reference+{fault}"))
    found = flagged(sections, "agents")
    assert found, f"{fault} not flagged; findings:\n{describe(f for s in sections for f in s.findings)}"
    arch = next(f for f in found if f.id == "agents/architecture")
    expected = {"agents.hidden_size": "hidden width 64 → 16", "agents.activation": "activation Tanh → ReLU"}
    assert arch.evidence.summary.startswith(expected[fault]), arch.evidence.summary


@pytest.mark.expensive  # a knock-on check beyond the detection matrix: one more subject
def test_frame_stacking_is_a_noted_knock_on_in_agents(make_wb, flagged, describe) -> None:
    from rlaudit import agents

    sections = agents.audit_all(make_wb("builtin:reference+spaces.frame_stack"))
    findings = [f for s in sections for f in s.findings]
    assert not flagged(sections), describe(findings)
    noted = [f for f in findings if f.id == "agents/io-follows-spaces"]
    assert noted and "observation" in noted[0].evidence.summary


def test_reference_against_itself_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit import agents

    sections = agents.audit_all(make_wb("builtin:reference"))
    findings = [f for s in sections for f in s.findings]
    assert not flagged(sections), describe(findings)
    arch = next(f for f in findings if f.id == "agents/architecture")
    assert arch.status.value == "CLEARED" and "2 hidden layers of 64" in arch.evidence.summary


def test_toy_subject_with_only_a_network_is_audited(make_wb, describe, toy_spec: str) -> None:
    from rlaudit import agents

    sections = agents.audit_all(make_wb(toy_spec, baseline=toy_spec))
    findings = [f for s in sections for f in s.findings]
    assert all(f.status.value == "CLEARED" for f in findings), describe(findings)


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
