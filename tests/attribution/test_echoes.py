"""The tests of :mod:`rlaudit.attribution.echoes`: a subsystem flagged only by checks that read a measured
cause's changes, found from the findings and rechecked on the runs that restore the cause."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rlaudit.attribution import echoes
from rlaudit.attribution.arms import Arm
from rlaudit.attribution.ranking import Cause, Strength
from rlaudit.engine.store import ProbeResult
from rlaudit.findings import Evidence, Finding, Severity, Status
from support.runs import bench, fake_run

GRADIENT_STEPS = 2000


def _finding(fid: str, reads: list[str]) -> Finding:
    finding = Finding(fid, fid.split("/")[0], "h", Status.CONFIRMED, Severity.HIGH, Evidence(summary="s"))
    finding.reads = reads
    return finding


REPLAY = _finding("trainer/replay-ratio", ["memory"])
TARGET = _finding("optimizer/target-network", ["trainer"])
SHARE = {"return": {"point": 1.0, "low": 0.92, "high": 1.08, "n": 2}}


def _causes(trainer_verdict: str = "primary", optimizer_independent: int = 0) -> list[Cause]:
    trainer = Cause("trainer", 11.0, SHARE, [REPLAY], trainer_verdict, Strength(score=4.5, independent=1))
    optimizer = Cause(
        "optimizer", 0.4, {}, [TARGET], "flagged (unmeasured)", Strength(independent=optimizer_independent)
    )
    return [trainer, optimizer]


def test_an_unmeasured_subsystem_whose_findings_all_read_a_measured_cause_is_an_echo() -> None:
    assert echoes.echo_only(_causes()) == {"optimizer": (["trainer"], ["optimizer/target-network"])}
    assert echoes.echo_only(_causes(optimizer_independent=1)) == {}  # a finding of its own: a cause to fix
    assert (
        echoes.echo_only(_causes(trainer_verdict="flagged (unmeasured)")) == {}
    )  # nothing measured upstream


def _targets(tmp: Path, every: int, seed: int) -> ProbeResult:
    """A training run's result whose target network was copied every ``every`` gradient steps (4 env steps
    apart), as the recorder measured it."""
    grads = np.arange(every, GRADIENT_STEPS + 1, every)
    table = {
        "step": 4 * grads,
        "gradient_step": grads,
        "tau": np.ones(len(grads)),
        "source": ["measured"] * len(grads),
    }
    summary = {
        "steps": 4 * GRADIENT_STEPS,
        "seconds": 1.0,
        "gradient_steps": GRADIENT_STEPS,
        "target_tensors": 4,
    }
    run = fake_run(tmp, seed=seed, summary=summary, tables={"targets": table})
    return ProbeResult(
        "arm", "spec", "rlaudit.trainer.probes:train_run", {}, ok=True, result=run.result, dir=run.dir
    )


def _result(tmp: Path, restored_every: int) -> SimpleNamespace:
    """Attribution that measured 'restore trainer config' as the cause: the baseline copies every 100 gradient
    steps, and so does the restore arm when the optimizer only echoed the trainer (``restored_every`` 100)."""
    base = Arm("baseline", "baseline", results=[_targets(tmp, 100, s) for s in (0, 1)])
    arm = Arm(
        "restore trainer config", "candidate", results=[_targets(tmp, restored_every, s) for s in (0, 1)]
    )
    row = {"arm": arm.name, "single": True, "subsystems": ["trainer"], "point": 1.0}
    return SimpleNamespace(arms=[base, arm], ranking={"return": [row]})


@pytest.mark.parametrize(("restored_every", "cleared"), [(100, True), (400, False)])
def test_the_echo_is_rechecked_on_the_runs_that_restore_its_cause(
    tmp_path: Path, restored_every: int, cleared: bool
) -> None:
    (echo,) = echoes.recheck(bench(), _result(tmp_path, restored_every), _causes())
    assert echo.arm == "restore trainer config" and list(echo.rechecked) == ["optimizer/target-network"]
    again = echo.rechecked["optimizer/target-network"]
    assert again is not None and again.id == "optimizer/target-network"
    assert echo.cleared is cleared and bool(echo.still_flagged) is not cleared
    sentence = echo.sentence()
    if cleared:
        assert sentence.startswith(
            "Optimizer was flagged only by checks that read trainer's changes (optimizer/target-network); on the "
            "runs that restore trainer (restore trainer config) they clear ("
        )
        assert sentence.endswith("so optimizer has nothing of its own to fix.")
    else:
        assert sentence.startswith("Optimizer still differs on the runs that restore trainer")
        assert "hard copy every 400 gradient steps" in sentence and "fix it after trainer" in sentence


def test_an_echo_not_rechecked_is_set_aside_until_its_cause_is_fixed() -> None:
    echo = echoes.Echo(
        "optimizer", ["trainer"], ["optimizer/target-network"], {"optimizer/target-network": None}
    )
    assert not echo.cleared and not echo.still_flagged
    assert echo.sentence() == (
        "Optimizer is flagged only by checks that read trainer's changes (optimizer/target-network), which "
        "attribution measured as a cause: fix trainer, then re-audit optimizer before changing it."
    )


def test_only_checks_of_training_runs_can_be_rechecked() -> None:
    assert echoes.reads_training_runs(TARGET) is not None
    assert (
        echoes.reads_training_runs(_finding("init/schemes", ["agents"])) is None
    )  # fresh networks, not runs
    assert echoes.reads_training_runs(_finding("nothing/such-check", [])) is None


def test_the_ranked_table_names_an_echo_as_such(tmp_path: Path, monkeypatch) -> None:
    from rlaudit.attribution import summary as module

    monkeypatch.setattr(module, "rank_causes", lambda findings, result, delta: _causes())
    (cleared,) = echoes.recheck(bench(), _result(tmp_path, 100), _causes())
    rows = module.executive_summary([REPLAY, TARGET], None, 0.2, echoes=[cleared])["causes"]
    assert [(r["subsystem"], r["verdict"]) for r in rows] == [
        ("trainer", "primary"),
        ("optimizer", "echo of trainer"),
    ]
    rows = module.executive_summary([REPLAY, TARGET], None, 0.2)["causes"]  # not rechecked
    assert rows[1]["verdict"] == "flagged (echo of trainer?)"
