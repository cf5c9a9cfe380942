"""The checkpointing room as a whole (``rlaudit.checkpointing.audit``, its ``CHECKS``): each of its catalog faults
is flagged, the identical pair stays quiet; a changed interval is found but honestly low, a subject without
checkpoints is skipped by name, and an A/A pair with a busy core raises no flag.

The tests of one check or helper are in ``test_<module>.py`` beside this file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)


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


@pytest.mark.expensive  # two short training runs, a resume and the loaders of an A/A pair under load
def test_an_aa_pair_with_the_other_core_busy_raises_no_flag(audit_cache: str, flagged, describe) -> None:
    """Resume continuity compares recorded scalars: timing metrics (SPS, seconds) must never count."""
    from rlaudit import checkpointing
    from rlaudit.engine.workbench import Workbench
    from support.load import aa_spec, busy_core

    with busy_core(), Workbench("builtin:reference", aa_spec("checkpointing"), profile="smoke") as wb:
        sections = checkpointing.audit_all(wb)
    assert not flagged(sections), describe(f for s in sections for f in s.findings)
