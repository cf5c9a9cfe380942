"""The agents room as a whole (``rlaudit.agents.audit``, its ``CHECKS``): each of its catalog faults is flagged,
the identical pair stays quiet; a frame stack is a noted knock-on, and a subject with only a network is audited.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

import textwrap

import pytest
import torch

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
