"""The tests of :mod:`rlaudit.checkpointing.probes`."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rlaudit.checkpointing.probes import renamed


def test_renamed_crosses_the_digit_boundary_and_keeps_padding() -> None:
    assert renamed("model_7.pt", 9) == "model_9.pt"
    assert renamed("ckpt_step_0007.pt", 10) == "ckpt_step_0010.pt"
    assert renamed("run3/model_12.pt", 10) == "run3/model_10.pt"
    assert renamed("latest.pt", 9) is None


MARKER = Path("/tmp/rlaudit-test-unpickled-marker")


class Sneaky:
    """Unpickling this runs code: it writes a marker file (what a malicious checkpoint could do)."""

    def __reduce__(self):
        return (Path.write_text, (MARKER, "executed"))


def test_a_pickled_object_is_reported_with_its_classes_and_never_executed(tmp_path: Path) -> None:
    from rlaudit.checkpointing import probes
    from rlaudit.probe import ProbeContext

    MARKER.unlink(missing_ok=True)
    path = tmp_path / "model_1.pt"
    torch.save({"policy": {"w": torch.zeros(2)}, "extra": Sneaky()}, path)
    ctx = ProbeContext(subject=object(), config={}, out=tmp_path / "out", spec="test")
    (tmp_path / "out").mkdir()
    probes.checkpoint_contents(ctx, paths=[str(path)])
    record = json.loads((tmp_path / "out" / "contents.json").read_text())[0]
    assert record["loaded"] is False
    assert any("write_text" in g or "Path" in g for g in record["unsafe_globals"]), record
    assert "trust=True" in record["message"]
    assert not MARKER.exists(), "reading the checkpoint executed code from it"


def test_contents_of_a_plain_checkpoint(tmp_path: Path) -> None:
    from rlaudit.checkpointing import probes
    from rlaudit.probe import ProbeContext

    path = tmp_path / "model_3.pt"
    torch.save({"policy": {"w": torch.ones(2, 2)}, "global_step": 300, "config": "{}"}, path)
    (tmp_path / "out").mkdir()
    ctx = ProbeContext(subject=object(), config={}, out=tmp_path / "out", spec="test")
    probes.checkpoint_contents(ctx, paths=[str(path)])
    record = json.loads((tmp_path / "out" / "contents.json").read_text())[0]
    assert record["loaded"] and record["step"] == 300
    assert record["optimizer"] is None and record["normalizer"] is None


def test_load_fidelity_round_trips_a_dict_observation_policy(tmp_path: Path) -> None:
    """The round trip feeds the loaded and the saved network a fixed observation batch: for a Dict
    observation space a dict of batched arrays (before: TypeError building a float array of dicts)."""
    import dict_obs_subject as subject  # tests/fixtures is on sys.path

    from rlaudit.checkpointing import probes
    from rlaudit.recorder import NullRecorder
    from support.probing import probe_context

    config = subject.config()
    subject.train(config, 128, 0, NullRecorder(tmp_path / "run"))
    checkpoint = subject.checkpoints(config, tmp_path / "run")[0]
    caps = ("config", "make_env", "make_policy", "load_checkpoint")
    ctx = probe_context(subject, tmp_path / "out", caps)
    result = probes.load_fidelity(ctx, path=checkpoint, rollout_steps=64, batch=16)
    assert result["counts"] == {"loaded": 8} and result["round_trip"] is True
    fidelity = json.loads((tmp_path / "out" / "fidelity.json").read_text())
    assert fidelity["round_trip"]["batch"] == 16
    assert all(h["max_abs_diff"] == 0.0 for h in fidelity["round_trip"]["heads"].values())
