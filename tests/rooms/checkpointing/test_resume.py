"""The tests of :mod:`rlaudit.checkpointing.resume`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rlaudit.checkpointing.resume import continuity, resume_class


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


def test_a_value_learner_resuming_apart_is_told_about_its_replay_buffer(monkeypatch) -> None:
    """Both SB3 TD3 runs resumed 'broken': the note names the replay buffer, which SB3 saves apart from the
    model, beside the RNG states; a PPO pair's note does not."""
    from rlaudit.checkpointing import resume as module
    from rlaudit.findings import Status
    from support.runs import bench

    full = pd.DataFrame({"step": [1, 2, 3], "name": ["train/actor_loss"] * 3, "value": [43.0, 40.0, 38.0]})
    resumed = full[full["step"] > 1].assign(value=[9.5, 9.0])
    table = continuity(full, resumed)
    given = module.Resumes(
        classes={"baseline": "broken", "candidate": "broken"},
        points={"baseline": 1, "candidate": 1},
        tables={side: table.assign(side=side) for side in ("baseline", "candidate")},
    )
    monkeypatch.setattr(module, "dedicated_params", lambda wb: {"baseline": {"steps": 3, "seed": 0}})
    notes = {}
    for learner, capability in (("value", "compute_td_targets"), ("actor-critic", "compute_loss")):
        wb = bench()
        wb.capabilities = lambda side, load=True, cap=capability: frozenset({"train", cap})
        (finding,) = module.resume(wb, given=given).findings
        assert finding.status is Status.NOTED, finding.headline
        notes[learner] = finding.remediation
    assert "replay buffer" in notes["value"] and "save_replay_buffer" in notes["value"]
    assert "replay buffer" not in notes["actor-critic"] and notes["actor-critic"].startswith(
        "Save and restore RNG"
    )
