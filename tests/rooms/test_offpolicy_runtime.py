"""Off-policy learners across rooms: the recorder's off-policy tables, and the off-policy checks of four rooms
(optimizer targets and exploration, trainer replay ratio, memory replay) decided on one set of real (short,
in-process) DQN runs, built once here. The TD-target probe is tested in ``loss/test_targets.py``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from rlaudit.demo.subject import load
from rlaudit.engine.io import read_table
from rlaudit.findings import Status
from rlaudit.memory.replay import replay_buffer
from rlaudit.optimizer.exploration import exploration
from rlaudit.optimizer.targets import target_network
from rlaudit.profiles import get_profile
from rlaudit.recorder import NullRecorder, Recorder
from rlaudit.trainer.probes import RUN_SUBDIR
from rlaudit.trainer.replay import replay_ratio
from rlaudit.trainer.runs import RunData, TrainingRuns

# ---------------------------------------------------------------------------------------------------------------
# The recorder
# ---------------------------------------------------------------------------------------------------------------


class _Twin(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.online = torch.nn.Linear(3, 2)
        self.target = torch.nn.Linear(3, 2)


def _step(model: _Twin, opt: torch.optim.Optimizer) -> None:
    opt.zero_grad()
    model.online(torch.ones(4, 3)).sum().backward()
    opt.step()


@pytest.mark.parametrize("tau", [1.0, 0.25])
def test_the_recorder_measures_target_updates_it_is_never_told_of(tmp_path: Path, tau: float) -> None:
    torch.manual_seed(0)
    model = _Twin()
    opt = torch.optim.SGD(model.online.parameters(), lr=0.1)
    rec = Recorder(tmp_path, target_networks=lambda policy: {"target": "online"})
    rec.watch(model, opt)
    for i in range(1, 13):
        rec.log(i * 10)
        _step(model, opt)
        if i % 4 == 0:  # the trainer updates its target every 4 gradient steps and never tells the recorder
            with torch.no_grad():
                for t, o in zip(model.target.parameters(), model.online.parameters(), strict=True):
                    t.mul_(1 - tau).add_(o, alpha=tau)
    rec.close()
    targets = read_table(tmp_path / "targets")
    assert list(targets["source"].unique()) == ["measured"]
    assert targets["gradient_step"].tolist() == [4, 8, 12]
    np.testing.assert_allclose(targets["tau"], tau, rtol=1e-5)
    assert json.loads((tmp_path / "summary.json").read_text())["target_tensors"] == 2


def test_the_recorder_writes_the_off_policy_tables(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    rec.update(1000, gradient_steps=2, batch_size=32)
    rec.update(1008, gradient_steps=2, batch_size=32)
    rec.target_update(1008, 4, tau=0.005)
    rec.exploration(1000, epsilon=0.5)
    rec.exploration(1008, alpha=torch.tensor(0.2), target_entropy=-1.0)
    rec.replay(1008, size=1008, capacity=5000, nbytes=10_000, ages=np.arange(101), prioritized=False)
    rec.close()
    grads = read_table(tmp_path / "gradient_steps")
    assert grads["gradient_steps"].tolist() == [2, 2] and grads["batch_size"].tolist() == [32, 32]
    assert read_table(tmp_path / "targets")["tau"].tolist() == [0.005]
    expl = read_table(tmp_path / "exploration")
    assert expl["epsilon"].iloc[0] == 0.5 and math.isnan(expl["epsilon"].iloc[1])
    assert expl["alpha"].iloc[1] == pytest.approx(0.2)
    replay = read_table(tmp_path / "replay").iloc[0]
    assert (replay["age_p10"], replay["age_p50"], replay["age_p90"]) == (10.0, 50.0, 90.0)
    assert replay["age_n"] == 101 and replay["prioritized"] == 0.0
    assert json.loads((tmp_path / "summary.json").read_text())["gradient_steps"] == 4
    # a run that reports no actor updates keeps the table as before
    assert "actor_updates" not in grads


def test_the_recorder_keeps_the_actor_updates_of_each_training_phase(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    rec.update(1000, gradient_steps=1, batch_size=32, actor_updates=0)
    rec.update(1001, gradient_steps=1, batch_size=32, actor_updates=1)
    rec.update(1002, gradient_steps=3, batch_size=32)  # not reported this phase
    rec.close()
    actor = read_table(tmp_path / "gradient_steps")["actor_updates"].tolist()
    assert actor[:2] == [0, 1] and math.isnan(actor[2])
    NullRecorder().update(1, 1, 32, actor_updates=1)


def test_an_on_policy_run_writes_no_off_policy_tables(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    rec.log(10, loss=1.0)
    rec.close()
    assert not list(tmp_path.glob("replay*")) and not list(tmp_path.glob("targets*"))
    null = NullRecorder()
    null.update(1)
    null.target_update(1, 1)
    null.exploration(1, epsilon=0.1)
    null.replay(1, 1, 1)


# ---------------------------------------------------------------------------------------------------------------
# The runtime checks on artifacts of short in-process runs
# ---------------------------------------------------------------------------------------------------------------

STEPS = 3000
OVERRIDES = ["trainer.target_update_interval=25", "trainer.learning_starts=600"]


def _run(root: Path, spec: str, seed: int, watch_targets: bool = True) -> RunData:
    subject = load(spec)
    config = subject.config(OVERRIDES)
    out = root / f"{spec.replace(':', '_')}-{seed}-{watch_targets}"
    run_dir = out / RUN_SUBDIR
    run_dir.mkdir(parents=True)
    (out / "config.json").write_text(json.dumps(config))
    targets = (lambda policy: subject.target_networks(config, policy)) if watch_targets else None
    rec = Recorder(run_dir, target_networks=targets)
    try:
        summary = subject.train(config, STEPS, seed, rec)
    finally:
        rec.close()
    return RunData(side="", seed=seed, dir=out, result={"summary": summary, "seed": seed})


@pytest.fixture(scope="module")
def dqn_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunData]:
    root = tmp_path_factory.mktemp("dqn-runs")
    specs = {
        "reference": ("dqn", 0),
        "reference seed 1": ("dqn", 1),
        "target never": ("dqn+optimizer.target_never_updated", 0),
        "target every step": ("dqn+optimizer.target_every_step", 0),
        "epsilon stuck": ("dqn+optimizer.epsilon_stuck", 0),
        "recent replay": ("dqn+memory.replay_recent_only", 0),
        "replay ratio": ("dqn+trainer.replay_ratio_in_code", 0),
    }
    return {name: _run(root, spec, seed) for name, (spec, seed) in specs.items()}


WB = SimpleNamespace(profile=get_profile("smoke"), metric=None, short_train_steps=STEPS)


def _decide(check, baseline: RunData, candidate: RunData):
    (finding,) = check(
        WB, given=TrainingRuns(data={"baseline": [baseline], "candidate": [candidate]})
    ).findings
    return finding


@pytest.mark.parametrize("check", [target_network, exploration, replay_ratio, replay_buffer])
def test_two_seeds_of_the_reference_clear_every_runtime_check(dqn_runs, check) -> None:
    finding = _decide(check, dqn_runs["reference"], dqn_runs["reference seed 1"])
    assert finding.status is Status.CLEARED, finding.headline


@pytest.mark.parametrize(
    ("run", "check", "named"),
    [
        ("target never", target_network, "never, in"),
        ("target every step", target_network, "every 1 gradient steps"),
        ("epsilon stuck", exploration, "→ 1"),
        ("recent replay", replay_buffer, "median age of sampled transitions"),
        ("replay ratio", replay_ratio, "gradient steps per training phase 1 → 4"),
    ],
)
def test_each_runtime_fault_is_confirmed_naming_its_quantity(dqn_runs, run: str, check, named: str) -> None:
    finding = _decide(check, dqn_runs["reference"], dqn_runs[run])
    assert finding.status is Status.CONFIRMED, finding.headline
    assert named in finding.evidence.summary, finding.evidence.summary


def test_the_target_network_is_read_from_what_the_trainer_reports_without_target_networks(
    dqn_runs, tmp_path: Path
) -> None:
    reported = _run(tmp_path, "dqn", 0, watch_targets=False)
    finding = _decide(target_network, dqn_runs["reference"], reported)
    assert finding.status is Status.CLEARED, finding.headline
    assert "measured / reported" in finding.evidence.summary


def test_an_on_policy_run_skips_the_off_policy_checks_naming_the_table(tmp_path: Path) -> None:
    bare = tmp_path / "ppo"
    (bare / RUN_SUBDIR).mkdir(parents=True)
    run = RunData(side="", seed=0, dir=bare)
    for check, table in (
        (target_network, "targets"),
        (exploration, "exploration"),
        (replay_ratio, "gradient_steps"),
        (replay_buffer, "replay"),
    ):
        finding = _decide(check, run, run)
        assert finding.status is Status.SKIPPED, finding.headline
        assert f"`{table}` table" in finding.evidence.summary


def test_rollout_geometry_and_ppo_coefficients_do_not_apply_to_a_value_learner(dqn_runs) -> None:
    from rlaudit.optimizer.schedules import schedules
    from rlaudit.trainer.geometry import geometry

    runs = TrainingRuns(
        data={"baseline": [dqn_runs["reference"]], "candidate": [dqn_runs["reference seed 1"]]}
    )
    (rollout,) = geometry(WB, given=runs).findings
    assert (
        rollout.status is Status.SKIPPED and "not applicable to a value learner" in rollout.evidence.summary
    )
    found = {f.id: f for f in schedules(WB, given=runs).findings}
    assert found["optimizer/lr-schedule"].status is Status.CLEARED  # the learning rate, read by watch()
    for coefficient in ("optimizer/clip-schedule", "optimizer/ent-schedule"):
        assert found[coefficient].status is Status.SKIPPED
        assert "not applicable to a value learner" in found[coefficient].evidence.summary


def test_a_builtin_spec_names_its_faults_from_its_own_catalog() -> None:
    from rlaudit.demo.subject import faults_of, parse

    assert [f.subsystem for f in faults_of("dqn+optimizer.target_never_updated")] == ["optimizer"]
    assert parse("dqn+trainer.replay_ratio_in_code-trainer.replay_ratio_in_code") == ("dqn", [])
    with pytest.raises(ValueError, match=r"unknown DQN fault 'loss\.gae_bootstrap'"):
        parse("dqn+loss.gae_bootstrap")  # a PPO fault is no DQN fault
    with pytest.raises(ValueError, match="unknown fault"):
        parse("reference+loss.done_mask_dropped")


def test_a_target_network_out_of_every_param_group_is_not_frozen() -> None:
    import pandas as pd

    from rlaudit.optimizer import setup as oset

    def table(target: bool) -> pd.DataFrame:
        names = ["q_net.0.weight", "q_net.0.bias", "q_net_target.0.weight", "q_net_target.0.bias"]
        return pd.DataFrame(
            {
                "parameter": names,
                "numel": [8, 2, 8, 2],
                "requires_grad": [True] * 4,
                "group": [0, 0, -1, -1],
                "target": [False, False, target, target],
            }
        )

    named = oset.Built(coverage={s: table(True) for s in ("baseline", "candidate")})
    section = oset.coverage(WB, given=named)
    assert [f.status for f in section.findings] == [Status.CLEARED]
    assert "Target-network tensors" in " ".join(section.notes)
    unnamed = oset.Built(coverage={"baseline": table(True), "candidate": table(False)})
    (frozen,) = oset.coverage(WB, given=unnamed).findings
    assert frozen.id == "optimizer/frozen-candidate" and frozen.status is Status.CONFIRMED
