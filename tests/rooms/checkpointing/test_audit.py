"""Checkpointing room: reading checkpoints safely, finding their pieces, resume continuity, and the detection
matrix for the checkpointing faults."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

from rlaudit.checkpointing import reading
from rlaudit.checkpointing.files import interval_of
from rlaudit.checkpointing.probes import renamed
from rlaudit.checkpointing.resume import continuity, resume_class

torch.set_num_threads(1)


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


def test_renamed_crosses_the_digit_boundary_and_keeps_padding() -> None:
    assert renamed("model_7.pt", 9) == "model_9.pt"
    assert renamed("ckpt_step_0007.pt", 10) == "ckpt_step_0010.pt"
    assert renamed("run3/model_12.pt", 10) == "run3/model_10.pt"
    assert renamed("latest.pt", 9) is None


def test_interval_is_the_median_gap() -> None:
    assert interval_of([20480, 28672]) == 8192
    assert interval_of([100, 200, 300, 500]) == 100
    assert interval_of([7]) is None


def test_resume_continuity_classes() -> None:
    full = pd.DataFrame(
        {
            "step": [1, 2, 3, 1, 2, 3, 2],
            "name": ["loss"] * 3 + ["kl"] * 3 + ["perf/sps"],
            "value": [1.0, 0.8, 0.6, 0.01, 0.02, 0.03, 5000.0],
        }
    )
    exact = full[full["step"] > 1]
    table = continuity(full, exact)
    assert set(table["name"]) == {"loss", "kl"}  # timing metrics are left out
    assert resume_class(table) == "exact"
    off = exact.assign(value=exact["value"] * np.where(exact["name"] == "loss", 1.5, 1.0))
    assert resume_class(continuity(full, off)) == "broken"
    slight = exact.assign(value=exact["value"] * (1 + 1e-3))
    assert resume_class(continuity(full, slight)) == "approximate"
    assert resume_class(continuity(full, full.iloc[:0])) == "unknown"


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


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (
            "checkpointing.partial_load",
            {
                "checkpointing/partial-load",
                "checkpointing/round-trip",
                "checkpointing/cross-version",
                "checkpointing/resume",
            },
        ),
        (
            "checkpointing.normalizer_not_restored",
            {"checkpointing/normalizer-not-restored", "checkpointing/resume"},
        ),
        ("checkpointing.lexicographic_sort", {"checkpointing/selection"}),
    ],
)
def test_checkpointing_faults_are_flagged(make_wb, flagged, describe, fault: str, expected: set[str]) -> None:
    from rlaudit import checkpointing

    sections = checkpointing.audit_all(make_wb(f"builtin:reference+{fault}"))
    found = {f.id for f in flagged(sections, "checkpointing")}
    assert expected <= found, f"{fault}: expected {expected}, flagged {found}\n" + describe(
        f for s in sections for f in s.findings
    )


def test_partial_load_counts_the_tensors(make_wb) -> None:
    from rlaudit.checkpointing.loading import loading

    section = loading(make_wb("builtin:reference+checkpointing.partial_load"))
    finding = next(f for f in section.findings if f.id == "checkpointing/partial-load")
    assert "6 of 12" in finding.evidence.summary and "at-init" in finding.evidence.summary


def test_changed_interval_is_found_but_honestly_low(make_wb, flagged, describe) -> None:
    from rlaudit import checkpointing

    sections = checkpointing.audit_all(make_wb("builtin:reference+checkpointing.interval_changed"))
    findings = [f for s in sections for f in s.findings]
    interval = [f for f in findings if f.id == "checkpointing/interval"]
    assert interval, describe(findings)
    assert interval[0].status.value in ("NOTED", "SUSPECT") and interval[0].severity.value == "LOW"
    assert "costs little" in interval[0].evidence.summary
    assert not [f for f in flagged(sections) if f.severity.value != "LOW"], describe(findings)


def test_reference_against_itself_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit import checkpointing

    sections = checkpointing.audit_all(make_wb("builtin:reference"))
    findings = [f for s in sections for f in s.findings]
    assert not flagged(sections), describe(findings)
    assert all(f.status.value == "CLEARED" for f in findings), describe(findings)


TOY = textwrap.dedent(
    """
    import numpy as np
    import gymnasium as gym
    from gymnasium import spaces
    from torch import nn


    def config():
        return {"hidden": 4}


    class Env(gym.Env):
        def __init__(self, seed):
            self.observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
            self.action_space = spaces.Discrete(2)
            self.rng = np.random.default_rng(seed)

        def reset(self, *, seed=None, options=None):
            if seed is not None:
                self.rng = np.random.default_rng(seed)
            return self.rng.uniform(-1, 1, 3).astype(np.float32), {}

        def step(self, action):
            return self.rng.uniform(-1, 1, 3).astype(np.float32), 0.0, False, False, {}


    def make_env(config, seed):
        return Env(seed)


    def make_policy(config, observation_space, action_space):
        return nn.Sequential(nn.Linear(3, config["hidden"]), nn.ReLU(), nn.Linear(config["hidden"], 2))
    """
)


def test_subject_without_checkpoint_capabilities_is_skipped_by_name(
    make_wb, describe, tmp_path: Path
) -> None:
    from rlaudit import checkpointing

    path = tmp_path / "toy" / "subject.py"
    path.parent.mkdir()
    path.write_text(TOY)
    sections = checkpointing.audit_all(make_wb(str(path), baseline="builtin:reference"))
    findings = [f for s in sections for f in s.findings]
    assert findings and all(f.status.value == "SKIPPED" for f in findings), describe(findings)
    loading = next(f for f in findings if f.id == "checkpointing/loading")
    assert "load_checkpoint" in loading.evidence.summary and "candidate" in loading.evidence.summary
    assert "baseline" not in loading.evidence.details["missing"]


class _Selections:
    """Stands in for the selection probe's pair: ``pair[side].json("selection")``."""

    def __init__(self, data: dict[str, dict[str, Any]]) -> None:
        self.data = data

    def __getitem__(self, side: str) -> Any:
        return SimpleNamespace(json=lambda name: self.data[side])


def _picks(digit_test: dict[str, Any]) -> dict[str, Any]:
    return {
        "picks": ["ckpt/model_2.pt", "ckpt/model_1.pt"],
        "steps": [8192, 4096],
        "highest_index": 0,
        "latest_is_highest": True,
        "digit_test": digit_test,
    }


def test_selection_that_could_not_test_the_digit_boundary_never_clears() -> None:
    from rlaudit.checkpointing.selection import Selections, selection
    from rlaudit.checks import Check

    tested = {
        "tested": True,
        "older": "ckpt/model_9.pt",
        "newer": "ckpt/model_10.pt",
        "picked": "ckpt/model_10.pt",
        "correct": True,
    }
    untested = {
        "tested": False,
        "reason": "checkpoints() takes no run_dir=, so a scratch directory cannot be listed",
    }
    body = selection.__wrapped__
    both = body(
        Check(selection.spec, None),
        Selections(_Selections({"baseline": _picks(tested), "candidate": _picks(tested)})),
    )
    assert [f.status.value for f in both.findings] == ["CLEARED"]
    assert "order model_10 before model_9" in both.findings[0].evidence.summary
    half = body(
        Check(selection.spec, None),
        Selections(_Selections({"baseline": _picks(tested), "candidate": _picks(untested)})),
    )
    (finding,) = half.findings
    assert (
        finding.status.value == "NOTED"
        and "model_10" not in finding.evidence.summary.split("(picked")[0][:40]
    )
    assert (
        "candidate: the model_9 vs model_10 order (checkpoints() takes no run_dir="
        in finding.evidence.summary
    )


@pytest.mark.expensive  # two short training runs, a resume and the loaders of an A/A pair under load
def test_an_aa_pair_with_the_other_core_busy_raises_no_flag(audit_cache: str, flagged, describe) -> None:
    """Resume continuity compares recorded scalars: timing metrics (SPS, seconds) must never count."""
    from rlaudit import checkpointing
    from rlaudit.engine.workbench import Workbench
    from support.load import aa_spec, busy_core

    with busy_core(), Workbench("builtin:reference", aa_spec("checkpointing"), profile="smoke") as wb:
        sections = checkpointing.audit_all(wb)
    assert not flagged(sections), describe(f for s in sections for f in s.findings)


def _entries(baseline: int, candidate: int) -> dict[str, dict[str, Any]]:
    def one(n: int) -> dict[str, Any]:
        paths = [f"ckpt/model_{i}.pt" for i in range(n)]
        return {"run": None, "paths": paths, "origin": "a dedicated run", "missing": [], "error": None}

    return {"baseline": one(baseline), "candidate": one(candidate)}


def test_a_side_without_checkpoints_is_skipped_lost_or_noted() -> None:
    from rlaudit.checkpointing.sources import guard_sources

    assert guard_sources(_entries(2, 2), "checkpointing/x", "h") is None
    neither = guard_sources(_entries(0, 0), "checkpointing/x", "h")
    assert (
        neither is not None
        and neither.status.value == "SKIPPED"
        and "either side" in neither.evidence.summary
    )
    lost = guard_sources(_entries(2, 0), "checkpointing/x", "h")
    assert lost is not None and (lost.status.value, lost.severity.value) == ("SUSPECT", "HIGH")
    assert "no longer saves checkpoints" in lost.evidence.summary
    gained = guard_sources(_entries(0, 2), "checkpointing/x", "h")
    assert gained is not None and (gained.status.value, gained.severity.value) == ("NOTED", "LOW")


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
