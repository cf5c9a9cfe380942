"""Spaces room: shift statistics, frame-stack alignment, first-layer inputs, and the spaces detection matrix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

from rlaudit import stats
from rlaudit.spaces.declared import bounds_violations
from rlaudit.spaces.observations import shifted_features, smd_from_moments, stack_alignment
from rlaudit.spaces.probes import declared_bounds, first_layer_flops, first_layer_inputs, normalize
from rlaudit.spaces.rollout import describe_space, feature_moments, random_actions, random_rollout
from support.load import aa_spec, busy_core

torch.set_num_threads(1)


def test_smd_from_moments_matches_the_sample_version() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(0.0, 1.0, size=(200, 3))
    b = rng.normal([0.0, 0.5, 2.0], [1.0, 1.0, 2.0], size=(300, 3))
    ma, mb = feature_moments(a), feature_moments(b)
    ours = smd_from_moments(ma["mean"], ma["var"], mb["mean"], mb["var"])
    np.testing.assert_allclose(ours, stats.standardized_mean_difference(b, a))
    assert smd_from_moments(np.array([1.0]), np.array([0.0]), np.array([1.0]), np.array([0.0]))[0] == 0.0
    assert np.isinf(smd_from_moments(np.array([1.0]), np.array([0.0]), np.array([2.0]), np.array([0.0]))[0])


def test_shifted_features_by_mean_or_spread_but_not_constants() -> None:
    mean_a, std_a = np.array([0.0, 0.0, 0.0, 5.0]), np.array([1.0, 1.0, 1.0, 0.0])
    mean_b, std_b = np.array([0.5, 0.0, 0.05, 5.0]), np.array([1.0, 0.3, 1.0, 0.0])
    shifted, smd = shifted_features(mean_a, std_a, mean_b, std_b)
    assert shifted.tolist() == [True, True, False, False]  # mean shift, spread ×0.3, small, constant
    assert smd[0] == pytest.approx(0.5)


def test_stack_alignment_recognises_k_copies() -> None:
    rng = np.random.default_rng(1)
    frame = rng.normal(size=(500, 6))
    stacked = np.concatenate([frame, frame, frame], axis=1)
    align = stack_alignment(feature_moments(frame), feature_moments(stacked))
    assert align["k"] == 3 and align["matches"] and max(align["block_max_smd"]) == 0.0
    other = np.concatenate([frame, frame + 3.0], axis=1)
    assert not stack_alignment(feature_moments(frame), feature_moments(other))["matches"]
    assert stack_alignment(feature_moments(frame), feature_moments(rng.normal(size=(10, 7)))) is None


def test_describe_space_and_random_actions_are_deterministic() -> None:
    box = spaces.Box(low=np.array([-1.0, 0.0], dtype=np.float32), high=np.array([1.0, 1.0], dtype=np.float32))
    desc = describe_space(box)
    assert desc["class"] == "Box" and desc["shape"] == [2] and desc["dtype"] == "float32"
    assert desc["low"] == {"values": [-1.0, 0.0]} and desc["high"] == 1.0 and desc["size"] == 2
    assert describe_space(spaces.Discrete(5))["n"] == 5
    a = random_actions(spaces.Discrete(5), 8, np.random.default_rng(3))
    b = random_actions(spaces.Discrete(5), 8, np.random.default_rng(3))
    assert a.tolist() == b.tolist() and a.min() >= 0 and a.max() < 5


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


class Line:
    """A plain (non-vector) env: the rollout resets it at episode ends itself."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(2, self.t / 10, np.float32), 0.0, self.t >= 3, False, {}


def test_random_rollout_of_a_plain_env_resets_at_episode_end() -> None:
    out = random_rollout(Line(), steps=7, seed=0, action_seed=1)
    assert out["num_envs"] == 1 and out["vector_steps"] == 7 and out["episodes"] == 2
    assert out["obs"].shape == (8, 2)
    assert out["obs"][:, 0].tolist() == pytest.approx([0.0, 0.1, 0.2, 0.0, 0.1, 0.2, 0.0, 0.1])


def test_frame_stacking_is_flagged(make_wb, flagged, describe) -> None:
    from rlaudit import spaces as room

    sections = room.audit_all(make_wb("builtin:reference+spaces.frame_stack"))
    found = {f.id: f for f in flagged(sections) if f.subsystem == "spaces"}
    assert {"spaces/definitions", "spaces/observation-shift", "spaces/preprocessing"} <= set(found), describe(
        f for s in sections for f in s.findings
    )
    assert "frame stacking of 4" in found["spaces/observation-shift"].evidence.summary
    assert "×4" in found["spaces/preprocessing"].evidence.summary


def test_observations_of_another_dtype_than_declared_are_flagged(make_wb, describe) -> None:
    from rlaudit.spaces import audit

    section = audit.definitions(make_wb("builtin:reference+spaces.obs_dtype"))
    (finding,) = section.findings
    assert finding.status.value == "SUSPECT", describe(section.findings)
    assert "candidate's environment emits" in finding.evidence.summary
    assert (
        "float64 against its declared Box" in finding.evidence.summary
        and "float32" in finding.evidence.summary
    )


@pytest.mark.expensive  # a knock-on check beyond the detection matrix: one more training run
def test_normalizer_not_restored_shows_as_a_labelled_knock_on(make_wb, describe) -> None:
    from rlaudit.spaces import audit

    section = audit.network_input(make_wb("builtin:reference+checkpointing.normalizer_not_restored"))
    finding = next(f for f in section.findings if f.id == "spaces/network-input")
    assert finding.status.value == "SUSPECT", describe(section.findings)
    assert "04_checkpointing" in finding.evidence.summary and "case 002" in finding.evidence.summary


def test_reference_against_itself_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit import spaces as room

    sections = room.audit_all(make_wb("builtin:reference"))
    findings = [f for s in sections for f in s.findings]
    assert not flagged(sections), describe(findings)
    # timings may stay inconclusive (NOTED) on a loaded machine; everything else is shown equal
    timing = {"spaces/preprocessing"}
    assert all(f.status.value == "CLEARED" for f in findings if f.id not in timing), describe(findings)


TOY = textwrap.dedent(
    """
    import numpy as np
    import gymnasium as gym
    from gymnasium import spaces
    from torch import nn


    SCALE = 1.0


    def config():
        return {"hidden": 6}


    class Env(gym.Env):
        def __init__(self, seed):
            self.observation_space = spaces.Box(0.0, 1.0, (5,), np.float32)
            self.action_space = spaces.Discrete(3)
            self.rng = np.random.default_rng(seed)
            self.t = 0

        def reset(self, *, seed=None, options=None):
            if seed is not None:
                self.rng = np.random.default_rng(seed)
            self.t = 0
            return self.rng.random(5).astype(np.float32), {}

        def step(self, action):
            self.t += 1
            obs = self.rng.random(5).astype(np.float32) * (1 + int(action)) / 3
            obs[3] *= SCALE  # SCALE > 1: feature 3 leaves the declared Box(0, 1)
            return obs, 0.0, False, self.t >= 10, {}


    def make_env(config, seed):
        return Env(seed)


    def make_policy(config, observation_space, action_space):
        return nn.Sequential(nn.Linear(5, config["hidden"]), nn.Tanh(), nn.Linear(config["hidden"], 3))
    """
)


def test_toy_subject_runs_and_skips_what_needs_a_checkpoint(make_wb, describe, tmp_path: Path) -> None:
    from rlaudit import spaces as room

    path = tmp_path / "toy" / "subject.py"
    path.parent.mkdir()
    path.write_text(TOY)
    sections = room.audit_all(make_wb(str(path), baseline=str(path)))
    by_id = {f.id: f for s in sections for f in s.findings}
    assert by_id["spaces/network-input"].status.value == "SKIPPED"
    assert "load_checkpoint" in by_id["spaces/network-input"].evidence.summary
    others = [f for i, f in by_id.items() if i != "spaces/network-input"]
    assert not [f for f in others if f.status.is_flag or f.status.value == "ERROR"], describe(others)
    for check in ("spaces/definitions", "spaces/observation-bounds", "spaces/observations"):
        assert by_id[check].status.value == "CLEARED", describe(others)


def test_declared_bounds_count_what_leaves_them() -> None:
    box = spaces.Box(0.0, 1.0, (3,), np.float32)
    obs = np.array([[0.5, 0.2, 0.0], [1.0, 3.0, -0.5], [0.1, 0.9, 1.0 + 1e-9]], dtype=np.float64)
    out = declared_bounds(box, obs)
    assert out["low"].tolist() == [0.0] * 3 and out["high"].tolist() == [1.0] * 3
    assert out["outside"].tolist() == [0, 1, 1]  # 1 + 1e-9 is float rounding, not outside
    assert declared_bounds(spaces.Discrete(3), np.zeros((2, 1))) == {}


def test_bounds_violations_name_the_feature_and_the_range_seen() -> None:
    moments = {
        "min": np.array([0.0, 0.0, -2.0]),
        "max": np.array([1.0, 100.0, 1.0]),
        "low": np.array([0.0, 0.0, -1.0]),
        "high": np.array([1.0, 1.0, 1.0]),
        "outside": np.array([0, 30, 5]),
        "n": np.asarray(100),
    }
    table = bounds_violations(moments)
    assert table["feature"].tolist() == [1, 2]  # feature 1 is 99 widths out, feature 2 half a width
    assert table["seen max"][0] == 100.0 and table["excess"][0] == pytest.approx(99.0)
    assert table["outside"].tolist() == pytest.approx([0.3, 0.05])
    assert bounds_violations({**moments, "outside": np.zeros(3)}).empty


def test_an_observation_far_outside_its_box_is_flagged_with_feature_and_range(
    make_wb, describe, tmp_path: Path
) -> None:
    from rlaudit.spaces import audit

    paths = []
    for name, scale in (("inside", 1.0), ("outside", 300.0)):
        path = tmp_path / name / "subject.py"
        path.parent.mkdir()
        path.write_text(TOY.replace("SCALE = 1.0", f"SCALE = {scale}"))
        paths.append(str(path))
    section = audit.observation_bounds(make_wb(paths[1], baseline=paths[0]))
    (finding,) = section.findings
    assert finding.status.value == "SUSPECT" and finding.severity.value == "HIGH", describe(section.findings)
    assert "obs[3]" in finding.evidence.summary and "declared 0..1" in finding.evidence.summary
    assert finding.evidence.baseline == "inside its bounds"


def test_forward_timing_stays_quiet_on_an_aa_pair_with_a_busy_core(audit_cache, describe) -> None:
    from rlaudit.engine.workbench import Workbench
    from rlaudit.spaces import cost

    # fresh: every timing round is measured now, while the busy loop competes for the cores
    wb = Workbench("builtin:reference", aa_spec("spaces-timing"), profile="smoke", fresh=True)
    try:
        with busy_core() as proc:
            section = cost.preprocessing(wb)
            assert proc.poll() is None
    finally:
        wb.close()
    (finding,) = section.findings
    assert not finding.status.is_flag and finding.status.value != "ERROR", describe(section.findings)
    low, high = finding.evidence.ci
    assert low <= finding.evidence.effect <= high


def _emitting(tmp_path: Path, name: str, emit: str) -> str:
    """The toy subject, its observations passed through ``emit`` (Python source of a function of ``obs``)."""
    source = (
        TOY.replace("SCALE = 1.0", f"SCALE = 1.0\nEMIT = {emit}")
        .replace(
            "return self.rng.random(5).astype(np.float32), {}",
            "return EMIT(self.rng.random(5).astype(np.float32)), {}",
        )
        .replace("return obs, 0.0, False", "return EMIT(obs), 0.0, False")
    )
    path = tmp_path / name / "subject.py"
    path.parent.mkdir()
    path.write_text(source)
    return str(path)


def test_observations_unlike_their_declared_space_are_flagged_never_cleared(
    make_wb, describe, tmp_path: Path
) -> None:
    from rlaudit.spaces import audit

    # the candidate declares Box(5,) float32 like the baseline but emits 6 int64 features (a count appended,
    # the cast forgotten): nothing else differs, so only the declaration gives it away
    baseline = _emitting(tmp_path, "declared", "lambda obs: obs")
    candidate = _emitting(tmp_path, "emits-int64", "lambda obs: (np.append(obs, 1.0) * 10).astype(np.int64)")
    wb = make_wb(candidate, baseline=baseline)
    (definitions,) = audit.definitions(wb).findings
    assert definitions.status.value == "SUSPECT" and definitions.severity.value == "HIGH", describe(
        [definitions]
    )
    summary = definitions.evidence.summary
    assert "candidate" in summary and "[6] int64" in summary and "Box [5] float32" in summary, summary
    (bounds,) = audit.observation_bounds(wb).findings
    # the bounds could be held against the baseline's observations only: that is no agreement
    assert bounds.status.value == "SUSPECT", describe([bounds])
    assert "not measured on the candidate" in bounds.evidence.summary, bounds.evidence.summary


# ---------------------------------------------------------------------------------------------------------------
# A Dict observation space from a plain gymnasium.Env (the shape fixture): observations stay a tree
# ---------------------------------------------------------------------------------------------------------------


def test_a_dict_observation_rollout_keeps_its_keys_and_rows() -> None:
    """Before, ``np.asarray`` of dict observations made an object array, and the fixed batch fed to the
    networks raised ``TypeError: float() argument must be ... not 'dict'`` (checkpointing, agents, init and
    spaces probes all build it)."""
    import dict_obs_subject as subject  # tests/fixtures is on sys.path

    from rlaudit.spaces.rollout import describe_row, flat_rows, obs_rows, policy_batch

    env = subject.make_env(subject.config(), 0)
    rollout = random_rollout(env, steps=40, seed=0, action_seed=1)
    obs = rollout["obs"]
    assert (
        set(obs) == {"position", "goal"} and obs["position"].shape == (41, 1) and obs["goal"].shape == (41,)
    )
    assert obs_rows(obs) == 41 and flat_rows(obs).shape == (41, 2)
    assert set(np.unique(obs["goal"])) <= {0, 1}
    batch = policy_batch(obs, 8)
    assert batch["position"].shape == (8, 1) and batch["goal"].dtype == np.float32
    np.testing.assert_array_equal(batch["position"][[0, -1]], obs["position"][[0, -1]])
    row = describe_row(obs)
    assert row["shape"] == [2] and row["nbytes"] == 4 + 8 and "goal" in row["dtype"]


def test_an_array_observation_rollout_is_unchanged() -> None:
    from rlaudit.spaces.rollout import describe_row, flat_rows, policy_batch

    obs = np.arange(24, dtype=np.uint8).reshape(6, 2, 2)
    assert flat_rows(obs).dtype == np.uint8 and flat_rows(obs).shape == (6, 4)
    np.testing.assert_array_equal(policy_batch(obs, 3), obs[[0, 2, 5]].astype(np.float32))
    assert describe_row(obs) == {"dtype": "uint8", "shape": [2, 2], "nbytes": 4}


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
