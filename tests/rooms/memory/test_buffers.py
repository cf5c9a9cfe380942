"""The tests of :mod:`rlaudit.memory.buffers`: the rollout buffers the configs imply, side by side, decided on
hand-built probe results of both sides."""

from __future__ import annotations

from rlaudit.engine.store import ProbeResult
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Severity, Status
from rlaudit.memory.buffers import buffers
from support.runs import bench


def _sizes(num_envs: int, num_steps: int, obs: int) -> dict:
    """What the buffer-sizes probe returns: float32 observations, and one float per step for the rest."""
    per_step = num_envs * num_steps
    return {
        "num_envs_config": num_envs,
        "num_envs_built": num_envs,
        "num_steps": num_steps,
        "obs_size": obs,
        "buffers": {"obs": 4 * per_step * obs, "rewards": 4 * per_step, "values": 4 * per_step},
    }


def _pair(baseline: dict, candidate: dict) -> Pair:
    probe = "rlaudit.memory.probes:buffer_sizes"
    return Pair(
        ProbeResult("baseline", "b", probe, {}, True, result=baseline),
        ProbeResult("candidate", "c", probe, {}, True, result=candidate),
    )


def test_the_same_shapes_are_cleared_with_the_total() -> None:
    (finding,) = buffers(bench(), given=_pair(_sizes(8, 128, 10), _sizes(8, 128, 10))).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert "(same shapes)" in finding.evidence.summary
    assert finding.evidence.effect == 1.0


def test_a_fourfold_buffer_is_noted_as_a_knock_on_naming_what_changed() -> None:
    (finding,) = buffers(bench(), given=_pair(_sizes(8, 128, 10), _sizes(32, 128, 10))).findings
    assert finding.status is Status.NOTED and finding.severity is Severity.MEDIUM, finding.headline
    assert finding.evidence.effect == 4.0
    assert "num_envs (config) 8 -> 32" in finding.evidence.summary and "knock-on" in finding.evidence.summary


def test_a_change_within_a_factor_of_two_is_cleared_naming_it() -> None:
    (finding,) = buffers(bench(), given=_pair(_sizes(8, 128, 10), _sizes(8, 128, 12))).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert "observation size 10 -> 12" in finding.evidence.summary


def test_a_config_without_a_rollout_length_is_noted_saying_what_to_name() -> None:
    empty = {**_sizes(8, 0, 10), "buffers": {}}
    (finding,) = buffers(bench(), given=_pair(empty, _sizes(8, 128, 10))).findings
    assert finding.status is Status.NOTED, finding.headline
    assert "Name the rollout length num_steps" in finding.remediation
