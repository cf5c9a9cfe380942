"""rlaudit.engine.safeload: checkpoints are read without running code hidden in pickles.

The malicious pickles here would write a file when unpickled; every test checks that the file never appears
and that the result names the globals the pickle would have imported and how to opt in (trust=True).
"""

from __future__ import annotations

import base64
import collections
import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from rlaudit.engine.safeload import (
    SAFE_PICKLE_GLOBALS,
    UnsafeCheckpointError,
    detect_format,
    load_checkpoint_safely,
    load_pickle_safely,
    pickle_globals,
    unsafe_message,
)


class _Payload:
    """Unpickling this runs ``exec`` on code that creates ``marker`` (the classic pickle exploit)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


class Normalizer:
    """A benign class instance, as a user's own normalizer pickle would hold."""

    def __init__(self) -> None:
        self.mean = np.arange(3, dtype=np.float64)
        self.count = 7.0


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "PWNED"


def _assert_refused(result, marker: Path, path: Path) -> None:
    assert not marker.exists(), "unpickling ran the payload"
    assert result.loaded is False
    assert "builtins.exec" in result.unsafe_globals
    assert (
        "trust=True" in result.message and "builtins.exec" in result.message and str(path) in result.message
    )


# -- static inspection ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_pickle_globals_names_the_payload_at_every_protocol(protocol: int, marker: Path) -> None:
    data = pickle.dumps({"x": _Payload(marker)}, protocol=protocol)
    assert pickle_globals(data) == ["builtins.exec"]
    assert not marker.exists()


def test_pickle_globals_follows_memoized_module_names() -> None:
    # protocol 4 memoizes "numpy" and fetches it with BINGET for the second STACK_GLOBAL (numpy.dtype)
    data = pickle.dumps({"a": np.arange(3.0), "o": collections.OrderedDict(k=1)}, protocol=4)
    names = pickle_globals(data)
    assert "numpy.dtype" in names and "numpy.ndarray" in names and "collections.OrderedDict" in names
    assert all(n in SAFE_PICKLE_GLOBALS for n in names)


def test_unsafe_message_reads_like_the_style_guide() -> None:
    msg = unsafe_message("data/x.pt", ["foo.Bar"])
    assert msg.startswith(
        "checkpoint data/x.pt holds a pickled object of class foo.Bar; rlaudit loads only tensors"
    )
    assert "trust=True" in msg
    assert "pickled calls to builtins.exec" in unsafe_message("y.pkl", ["builtins.exec"])


# -- torch files ---------------------------------------------------------------------------------------------


def test_torch_checkpoint_tensors_flattened_and_metadata_plain(tmp_path: Path) -> None:
    net = torch.nn.Linear(2, 3)
    opt = torch.optim.Adam(net.parameters(), lr=0.1)
    net(torch.ones(1, 2)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "step": 5, "name": "run"}, path)
    ckpt = load_checkpoint_safely(path)
    assert ckpt.format == "torch" and ckpt.loaded and ckpt.unsafe_globals == [] and ckpt.message == ""
    assert set(ckpt.group("model")) == {"weight", "bias"}
    assert torch.equal(ckpt.tensors["model/weight"], net.weight.detach())
    assert "optimizer/state/0/exp_avg" in ckpt.tensors
    assert ckpt.metadata["step"] == 5 and ckpt.metadata["name"] == "run"
    assert ckpt.metadata["optimizer"]["param_groups"][0]["lr"] == 0.1
    json.dumps(ckpt.metadata)  # plain: JSON-serializable
    assert ckpt.arrays()["model/bias"].shape == (3,)


def test_numpy_arrays_inside_a_torch_checkpoint_load(tmp_path: Path, marker: Path) -> None:
    # torch's weights-only unpickler refuses numpy arrays by default; observation statistics often are ones
    path = tmp_path / "np.pt"
    torch.save({"w": torch.ones(2), "obs_rms": {"mean": np.zeros(3), "count": np.float64(4.0)}}, path)
    ckpt = load_checkpoint_safely(path)
    assert ckpt.loaded and np.array_equal(ckpt.tensors["obs_rms/mean"], np.zeros(3))
    assert ckpt.metadata["obs_rms"]["count"] == 4.0
    bad = tmp_path / "np_bad.pt"
    torch.save({"mean": np.zeros(3), "x": _Payload(marker)}, bad)
    result = load_checkpoint_safely(bad)
    _assert_refused(result, marker, bad)
    assert result.unsafe_globals == ["builtins.exec"]  # the numpy constructors are not reported as unsafe


def test_legacy_torch_format_is_read_and_scanned(tmp_path: Path, marker: Path) -> None:
    good, bad = tmp_path / "legacy.pt", tmp_path / "legacy_bad.pt"
    torch.save({"w": torch.ones(2)}, good, _use_new_zipfile_serialization=False)
    torch.save({"w": torch.ones(2), "x": _Payload(marker)}, bad, _use_new_zipfile_serialization=False)
    ckpt = load_checkpoint_safely(good)
    assert ckpt.format == "torch-legacy" and torch.equal(ckpt.tensors["w"], torch.ones(2))
    _assert_refused(load_checkpoint_safely(bad), marker, bad)


def test_malicious_torch_checkpoint_is_never_unpickled(tmp_path: Path, marker: Path) -> None:
    path = tmp_path / "x.pt"
    torch.save({"model": {"w": torch.zeros(2)}, "extra": _Payload(marker)}, path)
    result = load_checkpoint_safely(path)
    _assert_refused(result, marker, path)
    assert result.tensors == {}
    with pytest.raises(UnsafeCheckpointError) as info:
        result.raise_if_unloaded()
    assert info.value.globals == ["builtins.exec"]
    assert not marker.exists()


def test_trusted_torch_checkpoint_with_an_object_loads(tmp_path: Path) -> None:
    path = tmp_path / "obj.pt"
    torch.save({"norm": Normalizer(), "w": torch.ones(2)}, path)
    refused = load_checkpoint_safely(path)
    assert not refused.loaded and any(g.endswith(".Normalizer") for g in refused.unsafe_globals)
    trusted = load_checkpoint_safely(path, trust=True)
    assert trusted.loaded and trusted.trusted
    assert np.array_equal(trusted.tensors["norm/mean"], np.arange(3.0))
    assert trusted.metadata["norm"]["count"] == 7.0
    assert trusted.metadata["norm"]["__class__"].endswith("Normalizer")


# -- safetensors, numpy ----------------------------------------------------------------------------------------


def test_safetensors_with_metadata(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "model.safetensors"
    save_file({"a.weight": torch.ones(2, 2)}, str(path), metadata={"step": "100"})
    ckpt = load_checkpoint_safely(path)
    assert ckpt.format == "safetensors" and ckpt.metadata == {"step": "100"}
    assert torch.equal(ckpt.tensors["a.weight"], torch.ones(2, 2))


def test_npz_and_object_arrays(tmp_path: Path) -> None:
    plain, objects = tmp_path / "stats.npz", tmp_path / "objects.npz"
    np.savez(plain, mean=np.zeros(3), var=np.ones(3))
    np.savez(objects, weird=np.array([{"a": 1}], dtype=object))
    ckpt = load_checkpoint_safely(plain)
    assert ckpt.format == "npz" and set(ckpt.tensors) == {"mean", "var"}
    refused = load_checkpoint_safely(objects)
    assert not refused.loaded and "trust=True" in refused.message
    assert load_checkpoint_safely(objects, trust=True).loaded


# -- plain pickles (normalizers) -------------------------------------------------------------------------------


def test_malicious_normalizer_pickle_is_never_unpickled(tmp_path: Path, marker: Path) -> None:
    path = tmp_path / "vecnormalize.pkl"
    path.write_bytes(pickle.dumps(_Payload(marker)))
    result = load_checkpoint_safely(path)
    assert result.format == "pickle"
    _assert_refused(result, marker, path)
    with pytest.raises(UnsafeCheckpointError):
        load_pickle_safely(path.read_bytes(), source=str(path))
    assert not marker.exists()


def test_pickle_of_arrays_and_containers_loads_without_trust(tmp_path: Path) -> None:
    path = tmp_path / "stats.pkl"
    path.write_bytes(
        pickle.dumps({"mean": np.arange(4.0), "count": np.float64(3.0), "od": collections.OrderedDict(a=1)})
    )
    ckpt = load_checkpoint_safely(path)
    assert ckpt.loaded and not ckpt.trusted
    assert np.array_equal(ckpt.tensors["mean"], np.arange(4.0))
    assert ckpt.metadata == {"count": 3.0, "od": {"a": 1}}
    assert type(ckpt.metadata["count"]) is float


def test_benign_object_pickle_needs_trust_then_loads(tmp_path: Path) -> None:
    path = tmp_path / "norm.pkl"
    path.write_bytes(pickle.dumps(Normalizer()))
    refused = load_checkpoint_safely(path)
    assert not refused.loaded and refused.tensors == {}
    assert "Normalizer" in refused.message and "trust=True" in refused.message
    trusted = load_checkpoint_safely(path, trust=True)
    assert trusted.loaded and np.array_equal(trusted.tensors["mean"], np.arange(3.0))
    assert isinstance(trusted.objects[""], Normalizer)


def test_sb3_vecnormalize_pickle(tmp_path: Path) -> None:
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    venv = VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=0))
    venv.reset()
    for _ in range(5):
        venv.step(np.zeros(2, dtype=np.int64))
    path = tmp_path / "vecnormalize.pkl"
    venv.save(str(path))
    refused = load_checkpoint_safely(path)
    assert not refused.loaded
    assert "stable_baselines3.common.vec_env.vec_normalize.VecNormalize" in refused.unsafe_globals
    trusted = load_checkpoint_safely(path, trust=True)
    np.testing.assert_allclose(trusted.tensors["obs_rms/mean"], venv.obs_rms.mean)
    venv.close()


# -- SB3 zips ------------------------------------------------------------------------------------------------


def _torch_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _sb3_zip(path: Path, *, serialized: bytes | None = None, policy: bytes | None = None) -> Path:
    """A zip laid out the way SB3's ``model.save`` writes one."""
    data = {
        "num_timesteps": 1024,
        "gamma": 0.99,
        "policy_class": {
            ":type:": "<class 'abc.ABCMeta'>",
            ":serialized:": base64.b64encode(serialized or pickle.dumps(collections.OrderedDict)).decode(),
            "__module__": "stable_baselines3.common.policies",
        },
    }
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data", json.dumps(data))
        zf.writestr("policy.pth", policy or _torch_bytes({"mlp.0.weight": torch.ones(2, 2)}))
        zf.writestr(
            "policy.optimizer.pth", _torch_bytes({"state": {}, "param_groups": [{"lr": 3e-4, "params": [0]}]})
        )
        zf.writestr("pytorch_variables.pth", _torch_bytes({}))
        zf.writestr("_stable_baselines3_version", "2.9.2")
    return path


def test_sb3_zip_reads_tensors_and_data_and_names_serialized_classes(tmp_path: Path) -> None:
    ckpt = load_checkpoint_safely(_sb3_zip(tmp_path / "model.zip"))
    assert ckpt.format == "sb3" and ckpt.loaded
    assert torch.equal(ckpt.group("policy")["mlp.0.weight"], torch.ones(2, 2))
    assert ckpt.metadata["data"]["num_timesteps"] == 1024
    assert ckpt.metadata["data"]["policy_class"]["__module__"] == "stable_baselines3.common.policies"
    assert ckpt.metadata["serialized"]["policy_class"] == ["collections.OrderedDict"]
    assert ckpt.metadata["sb3_version"] == "2.9.2"
    assert ckpt.skipped == ["data/policy_class"]


def test_malicious_serialized_entry_in_sb3_zip(tmp_path: Path, marker: Path) -> None:
    path = _sb3_zip(tmp_path / "model.zip", serialized=pickle.dumps(_Payload(marker)))
    result = load_checkpoint_safely(path)
    assert not marker.exists()
    assert result.loaded  # the weights are tensors: they load; the pickled entry is skipped and named
    assert "builtins.exec" in result.unsafe_globals and result.metadata["serialized"]["policy_class"] == [
        "builtins.exec"
    ]
    assert "trust=True" in result.message and "policy_class" in result.message


def test_malicious_policy_pth_in_sb3_zip(tmp_path: Path, marker: Path) -> None:
    path = _sb3_zip(tmp_path / "model.zip", policy=_torch_bytes({"w": torch.ones(1), "x": _Payload(marker)}))
    result = load_checkpoint_safely(path)
    assert not marker.exists()
    assert not result.loaded and "policy.pth" in result.skipped
    assert "builtins.exec" in result.unsafe_globals and "trust=True" in result.message
    with pytest.raises(UnsafeCheckpointError):
        result.raise_if_unloaded()


def test_real_sb3_model_zip(tmp_path: Path) -> None:
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", "CartPole-v1", n_steps=16, batch_size=16, device="cpu", seed=0)
    path = tmp_path / "ppo.zip"
    model.save(path)
    ckpt = load_checkpoint_safely(path)
    assert ckpt.loaded and ckpt.format == "sb3"
    state = model.policy.state_dict()
    loaded = ckpt.group("policy")
    assert set(loaded) == set(state)
    assert all(torch.equal(loaded[k], state[k]) for k in state)
    assert (
        "stable_baselines3.common.policies.ActorCriticPolicy" in ckpt.metadata["serialized"]["policy_class"]
    )
    assert ckpt.metadata["data"]["n_steps"] == 16
    model.env.close()


# -- bad input -----------------------------------------------------------------------------------------------


def test_missing_and_unrecognized_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_checkpoint_safely(tmp_path / "nope.pt")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"hello world, not a checkpoint")
    with pytest.raises(ValueError, match="unrecognized format"):
        detect_format(junk)
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(ValueError, match=r"readme\.txt"):
        load_checkpoint_safely(other_zip)
