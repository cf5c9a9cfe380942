"""Tests of the demo PPO's checkpoints: format, loading, exact resume, and the checkpoint fault code paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from rlaudit.demo import checkpoint as ckpt
from rlaudit.demo import ppo
from rlaudit.demo.config import DemoConfig
from rlaudit.engine.io import read_table
from rlaudit.recorder import Recorder


def tiny_config(**trainer: Any) -> dict[str, Any]:
    cfg = DemoConfig().to_dict()
    cfg["agent"]["hidden_size"] = 16
    cfg["trainer"].update(num_envs=4, num_steps=16, update_epochs=2, num_minibatches=2, checkpoint_interval=2)
    cfg["trainer"].update(trainer)
    cfg["logging"]["tensorboard"] = False
    return cfg


STEPS = 4 * 16 * 4  # four updates


def train(tmp_path: Path, name: str, cfg: dict[str, Any], **kw: Any) -> tuple[dict[str, Any], Path]:
    run_dir = tmp_path / name
    rec = Recorder(run_dir)
    try:
        out = ppo.train(cfg, STEPS, 7, rec, **kw)
    finally:
        rec.close()
    return out, run_dir


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    return train(tmp_path_factory.mktemp("ckpt"), "ref", tiny_config())


def test_checkpoints_are_written_every_interval_and_load_weights_only(reference_run) -> None:
    out, _ = reference_run
    names = sorted(Path(p).name for p in out["checkpoints"])
    assert names == ["model_2.pt", "model_4.pt"]
    data = torch.load(out["checkpoints"][-1], weights_only=True)  # raises on any pickled object
    assert data["format"] == ckpt.CHECKPOINT_FORMAT
    assert data["update"] == 4 and data["global_step"] == STEPS
    assert json.loads(data["config"]) == DemoConfig.from_dict(tiny_config()).to_dict()
    assert set(data["obs_rms"]) == {"mean", "var", "count"}
    assert data["obs_rms"]["count"] > STEPS  # updated on every observation
    assert "state" in data["optimizer"] and "param_groups" in data["optimizer"]
    assert set(data["policy"]) == {
        n
        for n, _ in ppo.make_policy(
            tiny_config(), _box(data["spaces"]["obs_dim"]), _disc()
        ).named_parameters()
    }


def _box(obs_dim: int):
    from gymnasium.spaces import Box

    return Box(0, 1, (obs_dim,), np.float32)


def _disc():
    from gymnasium.spaces import Discrete

    return Discrete(5)


def test_load_checkpoint_restores_policy_and_extras(reference_run) -> None:
    out, _ = reference_run
    path = out["checkpoints"][-1]
    data = torch.load(path, weights_only=True)
    policy, extras = ppo.load_checkpoint(tiny_config(), path)
    for name, tensor in policy.state_dict().items():
        assert torch.equal(tensor, data["policy"][name]), name
    assert extras["global_step"] == extras["step"] == STEPS and extras["update"] == 4
    np.testing.assert_array_equal(extras["obs_rms"]["mean"], data["obs_rms"]["mean"].numpy())
    assert extras["obs_rms"]["count"] == data["obs_rms"]["count"]
    assert extras["optimizer_state"]["param_groups"][0]["eps"] == 1e-5
    assert extras["config"]["trainer"]["num_envs"] == 4


def test_read_checkpoint_rejects_other_files(tmp_path: Path) -> None:
    torch.save({"weights": torch.zeros(2)}, tmp_path / "model_1.pt")
    with pytest.raises(ValueError, match="not a demo PPO checkpoint"):
        ckpt.read_checkpoint(tmp_path / "model_1.pt")
    with pytest.raises(FileNotFoundError, match="list_checkpoints"):
        ckpt.read_checkpoint(tmp_path / "missing.pt")


def test_resume_continues_the_same_run(tmp_path: Path, reference_run) -> None:
    out, run_dir = reference_run
    first = next(p for p in out["checkpoints"] if p.endswith("model_2.pt"))
    resumed, resumed_dir = train(tmp_path, "resumed", tiny_config(), resume_from=first)
    assert [Path(p).name for p in resumed["checkpoints"]] == ["model_4.pt"]
    a = torch.load(out["checkpoints"][-1], weights_only=True)
    b = torch.load(resumed["checkpoints"][-1], weights_only=True)
    for name in a["policy"]:
        assert torch.equal(a["policy"][name], b["policy"][name]), name
    np.testing.assert_array_equal(a["obs_rms"]["mean"], b["obs_rms"]["mean"])
    # the losses of updates 3 and 4 are those of the uninterrupted run
    s_a, s_b = read_table(run_dir / "scalars"), read_table(resumed_dir / "scalars")
    for name in ("losses/value_loss", "losses/policy_loss", "charts/episodic_return", "env/ore.get"):
        va = s_a[(s_a.name == name) & (s_a.step > 2 * 64)].value.to_numpy()
        vb = s_b[s_b.name == name].value.to_numpy()
        np.testing.assert_array_equal(va, vb, err_msg=name)
    # the episodes played after the resume are the same episodes
    e_a, e_b = read_table(run_dir / "episodes"), read_table(resumed_dir / "episodes")
    e_a = e_a[e_a.step > 2 * 64].reset_index(drop=True)
    np.testing.assert_array_equal(e_a["return"], e_b["return"])
    np.testing.assert_array_equal(e_a["task"], e_b["task"])


def test_list_checkpoints_latest_first_and_the_lexicographic_fault(tmp_path: Path) -> None:
    directory = ckpt.checkpoint_dir(tmp_path)
    directory.mkdir(parents=True)
    for update in (2, 9, 10, 11):
        (directory / f"model_{update}.pt").write_bytes(b"")
    (directory / "notes.txt").write_text("not a checkpoint")
    names = [Path(p).name for p in ppo.list_checkpoints(tmp_path)]
    assert names == ["model_11.pt", "model_10.pt", "model_9.pt", "model_2.pt"]
    bad = [
        Path(p).name
        for p in ppo.list_checkpoints(tmp_path, impl=ppo.PPOImpl(checkpoint_sort_lexicographic=True))
    ]
    assert bad[0] == "model_9.pt"
    assert ppo.list_checkpoints(tmp_path / "nothing") == []


def test_key_prefix_fault_leaves_the_critic_at_init(reference_run) -> None:
    out, _ = reference_run
    path = out["checkpoints"][-1]
    saved = torch.load(path, weights_only=True)["policy"]
    cfg = tiny_config()
    obs_dim = torch.load(path, weights_only=True)["spaces"]["obs_dim"]
    torch.manual_seed(123)
    fresh = ppo.make_policy(cfg, _box(obs_dim), _disc()).state_dict()
    torch.manual_seed(123)
    policy, _ = ppo.load_checkpoint(cfg, path, impl=ppo.PPOImpl(checkpoint_key_prefix_mismatch=True))
    state = policy.state_dict()
    critic = [k for k in state if k.startswith("critic.")]
    actor = [k for k in state if k.startswith("actor.")]
    assert critic and actor
    for k in critic:  # silently not loaded: still the fresh initialization
        assert torch.equal(state[k], fresh[k]) and not torch.equal(state[k], saved[k]), k
    for k in actor:
        assert torch.equal(state[k], saved[k]), k


def test_old_key_names_are_mapped_on_load(reference_run, tmp_path: Path) -> None:
    out, _ = reference_run
    data = torch.load(out["checkpoints"][-1], weights_only=True)
    data["policy"] = {
        k.replace("critic.", "value_net.").replace("actor.", "policy_net."): v
        for k, v in data["policy"].items()
    }
    path = tmp_path / "model_4.pt"
    torch.save(data, path)
    policy, _ = ppo.load_checkpoint(tiny_config(), path)
    assert torch.equal(policy.state_dict()["critic.0.weight"], data["policy"]["value_net.0.weight"])


def test_normalizer_fault_is_not_restored(reference_run) -> None:
    out, _ = reference_run
    path = out["checkpoints"][-1]
    _, good = ppo.load_checkpoint(tiny_config(), path)
    _, bad = ppo.load_checkpoint(tiny_config(), path, impl=ppo.PPOImpl(restore_obs_normalizer=False))
    assert good["obs_rms"]["count"] > 1
    assert np.abs(good["obs_rms"]["mean"]).max() > 0
    np.testing.assert_array_equal(bad["obs_rms"]["mean"], 0.0)
    np.testing.assert_array_equal(bad["obs_rms"]["var"], 1.0)
    assert bad["obs_rms"]["count"] < 1


def test_resume_with_normalizer_fault_diverges(tmp_path: Path, reference_run) -> None:
    out, _ = reference_run
    first = next(p for p in out["checkpoints"] if p.endswith("model_2.pt"))
    bad, _ = train(
        tmp_path, "bad", tiny_config(), resume_from=first, impl=ppo.PPOImpl(restore_obs_normalizer=False)
    )
    a = torch.load(out["checkpoints"][-1], weights_only=True)
    b = torch.load(bad["checkpoints"][-1], weights_only=True)
    assert not np.allclose(a["obs_rms"]["mean"].numpy(), b["obs_rms"]["mean"].numpy())


def test_capture_and_restore_object_state() -> None:
    class Inner:
        def __init__(self) -> None:
            self.counts = np.zeros(3, dtype=np.int64)
            self.rng = np.random.default_rng(5)

    class Env:
        def __init__(self) -> None:
            self.grid = np.zeros((2, 2), dtype=np.uint8)
            self.flat = self.grid.reshape(-1)  # a view that must stay a view
            self.t = 0
            self.inner = Inner()
            self.log: list[tuple[np.ndarray, int]] = []
            # rows as opaque 16-byte records (a fast-gather trick): a dtype torch has no tensor for
            self.rows = np.zeros((2, 4), dtype=np.float32).view(np.dtype((np.void, 16))).reshape(-1)

    env = Env()
    env.grid[0, 1] = 3
    env.t = 11
    env.inner.counts += 2
    env.log.append((np.arange(2), 4))
    env.rows.view(np.float32)[5] = 2.5
    state = ckpt.capture_state(env)
    expected_draw = np.random.default_rng(5).random()
    env.inner.rng.random()
    env.grid[:] = 0
    env.t = 0
    env.inner.counts[:] = 0
    env.log.clear()
    env.rows.view(np.float32)[:] = 0.0
    # survives a weights_only round trip
    path_state = _roundtrip(state)
    ckpt.restore_state(env, path_state)
    assert env.grid[0, 1] == 3 and env.flat[1] == 3 and env.t == 11
    np.testing.assert_array_equal(env.inner.counts, 2)
    assert env.inner.rng.random() == expected_draw
    np.testing.assert_array_equal(env.rows.view(np.float32), [0, 0, 0, 0, 0, 2.5, 0, 0])
    np.testing.assert_array_equal(env.log[0][0], [0, 1])
    assert env.log[0][1] == 4


def _roundtrip(value: Any) -> Any:
    import io

    buf = io.BytesIO()
    torch.save(value, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)
