"""The tests of :mod:`rlaudit.checkpointing.reading`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from rlaudit.checkpointing import reading


def test_step_counters_prefer_environment_steps_at_the_top_level() -> None:
    meta = {"update": 7, "global_step": 28672, "trainer_state": {"steps": 30000, "seed": 0}, "config": "{}"}
    assert reading.find_counters(meta) == {"global_step": 28672, "update": 7}
    assert reading.checkpoint_step(meta) == ("global_step", 28672)
    assert reading.checkpoint_step({"data": {"num_timesteps": 5}}) == ("data/num_timesteps", 5)
    assert reading.checkpoint_step({"lr": 0.1}) == (None, None)


def test_config_and_optimizer_and_normalizer_are_found() -> None:
    meta = {
        "config": json.dumps({"agent": {"hidden": 64}}),
        "optimizer": {"param_groups": [{"lr": 1e-3}]},
        "obs_rms": {"count": 12.0},
    }
    tensors = {
        "policy/w": torch.zeros(2, 3),
        "optimizer/state/0/exp_avg": torch.zeros(2, 3),
        "obs_rms/mean": torch.tensor([1.0, 2.0], dtype=torch.float64),
        "obs_rms/var": torch.tensor([4.0, 9.0], dtype=torch.float64),
    }
    assert reading.find_config(meta) == ("config", {"agent": {"hidden": 64}})
    assert reading.find_optimizer(meta, tensors) == {
        "path": "optimizer",
        "n_state_tensors": 1,
        "param_groups": 1,
    }
    norm = reading.find_normalizer(meta, tensors)
    assert norm["path"] == "obs_rms" and norm["count"] == 12.0
    np.testing.assert_array_equal(norm["var"], [4.0, 9.0])
    assert reading.find_normalizer({}, {"policy/w": torch.zeros(1)}) is None


def test_state_dict_is_found_by_names_then_by_shapes() -> None:
    tensors = {
        "policy/actor.0.weight": torch.zeros(4, 3),
        "policy/value_net.0.weight": torch.zeros(1, 4),
        "optimizer/state/0/exp_avg": torch.zeros(4, 3),
        "trainer_state/next_obs": torch.zeros(2, 3),
    }
    target = {"actor.0.weight": [4, 3], "critic.0.weight": [1, 4]}
    prefix, saved = reading.find_state_dict(tensors, target)
    assert prefix == "policy"
    mapping = reading.match_keys(list(target), target, saved)
    # critic.0.weight is absent by name: the renamed value_net.0.weight of the same shape stands in
    assert mapping == {"actor.0.weight": "actor.0.weight", "critic.0.weight": "value_net.0.weight"}
    assert reading.find_state_dict({"a/x": torch.zeros(9)}, {"w": [2, 2]}) == (None, {})


def test_plain_json_checkpoints_are_read_with_arrays_split_out(tmp_path: Path) -> None:
    path = tmp_path / "normalizer.json"
    path.write_text(json.dumps({"obs_rms": {"mean": [0.0, 1.0], "var": [1.0, 4.0], "count": 10}, "step": 5}))
    ckpt = reading.read(str(path))
    assert ckpt.format == "json" and ckpt.loaded
    assert reading.checkpoint_step(ckpt.metadata) == ("step", 5)
    norm = reading.find_normalizer(ckpt.metadata, ckpt.tensors)
    assert norm["count"] == 10.0 and norm["var"].tolist() == [1.0, 4.0]
