"""The tests of :mod:`rlaudit.spaces.probes`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from rlaudit.spaces.probes import declared_bounds, first_layer_flops, first_layer_inputs, normalize


def test_normalize_clips_like_vecnormalize() -> None:
    x = np.array([[0.0, 10.0]])
    out = normalize(x, np.array([0.0, 0.0]), np.array([1.0, 0.01]), clip=5.0)
    np.testing.assert_allclose(out, [[0.0, 5.0]])
    assert out.dtype == np.float32


def test_first_layer_inputs_are_what_the_network_received() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = torch.randn(6, 3)
    seen = first_layer_inputs(net, x)
    assert list(seen) == ["0"]
    np.testing.assert_allclose(seen["0"], x.double().numpy())
    from rlaudit.agents.nets import describe_modules, trace_forward

    trace = trace_forward(net, x)
    assert first_layer_flops(describe_modules(net), trace.calls, trace.obs_consumers()) == 2 * 3 * 4


def test_declared_bounds_count_what_leaves_them() -> None:
    box = spaces.Box(0.0, 1.0, (3,), np.float32)
    obs = np.array([[0.5, 0.2, 0.0], [1.0, 3.0, -0.5], [0.1, 0.9, 1.0 + 1e-9]], dtype=np.float64)
    out = declared_bounds(box, obs)
    assert out["low"].tolist() == [0.0] * 3 and out["high"].tolist() == [1.0] * 3
    assert out["outside"].tolist() == [0, 1, 1]  # 1 + 1e-9 is float rounding, not outside
    assert declared_bounds(spaces.Discrete(3), np.zeros((2, 1))) == {}


def test_the_observation_and_input_probes_read_a_dict_observation_subject(tmp_path: Path) -> None:
    import json

    import dict_obs_subject as subject

    from rlaudit.recorder import NullRecorder
    from rlaudit.spaces.probes import network_input, observations
    from support.probing import probe_context

    caps = ("config", "make_env", "make_policy", "load_checkpoint")
    observations(probe_context(subject, tmp_path / "obs", caps), rollout_steps=64, keep_rows=16)
    info = json.loads((tmp_path / "obs" / "spaces.json").read_text())
    assert info["observation_space"]["class"] == "Dict" and info["obs_shape"] == [2] and info["samples"] == 65
    config = subject.config()
    subject.train(config, 128, 0, NullRecorder(tmp_path / "run"))
    checkpoint = subject.checkpoints(config, tmp_path / "run")[0]
    network_input(probe_context(subject, tmp_path / "in", caps), path=checkpoint, rollout_steps=64, batch=16)
    paths = json.loads((tmp_path / "in" / "inputs.json").read_text())["paths"]
    # the first layers get the one-hot and concatenated observation (computed from it, not the dict itself)
    assert set(paths) == {"training", "evaluation", "raw"}
    assert paths["training"]["layer"] in ("actor.0", "critic.0")
