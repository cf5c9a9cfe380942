"""The single-file DQN example (data/examples/dqn_single/v1 and v2): the subject's off-policy capabilities,
what a short run feeds the recorder, the loss audit's reading of both versions' TD loss, and the v1 -> v2 diff
(the regression alone). Both versions have the same module name, so each runs in a process of its own, as
rlaudit's workers run them."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rlaudit.engine.paths import LIB_DIR, home

EXAMPLE = home() / "data" / "examples" / "dqn_single"

SCRIPT = r"""
import json, sys
import numpy as np
import torch
torch.set_num_threads(1)
from rlaudit.engine.subjects import load_subject, parse_spec

subject = load_subject(parse_spec(sys.argv[1]))
run_dir = sys.argv[2]
cfg = subject.config(overrides=["learning_starts=100", "train_every=2", "target_every=150", "eps_steps=300"])
env = subject.make_env(cfg, 0)
torch.manual_seed(0)
policy = subject.make_policy(cfg, env.single_observation_space, env.single_action_space)
env.close()
with torch.no_grad():
    for p in policy.q_target.parameters():
        p.add_(0.3)  # the target differs from the online network
rng = np.random.default_rng(0)
batch = {
    "obs": rng.normal(size=(3, 4)).astype(np.float32),
    "actions": np.array([0, 1, 0]),
    "rewards": np.array([1.0, 1.0, 1.0], np.float32),
    "next_obs": rng.normal(size=(3, 4)).astype(np.float32),
    "terminated": np.array([False, True, False]),
    "truncated": np.array([False, False, True]),
}
out = {k: np.asarray(v).tolist() for k, v in subject.compute_td_targets(cfg, policy, batch).items()}
with torch.no_grad():
    out["hand_bootstrap"] = policy.q_target(torch.as_tensor(batch["next_obs"])).max(dim=1).values.tolist()
out["target_networks"] = subject.target_networks(cfg, policy)
# the loss on the TD error against given targets: one row in Huber's quadratic part, two in its linear tails
given = np.array([0.2, 3.0, -2.5], np.float32)
with torch.no_grad():
    q = policy.q(torch.as_tensor(batch["obs"])).numpy()
out["q_taken"] = q[np.arange(3), batch["actions"]].tolist()
out["given_targets"] = given.tolist()
out["td_loss_given"] = subject.compute_td_loss(cfg, policy, batch, given)
# against the trainer's own targets, it is the loss a gradient step minimises
tensors = {k: torch.as_tensor(np.asarray(batch[k], np.float32)) for k in ("obs", "rewards", "next_obs", "terminated")}
tensors["actions"] = torch.as_tensor(batch["actions"])
out["dqn_loss"] = subject.dqn.dqn_loss(policy, tensors, float(cfg["gamma"]))["loss"].item()
out["td_loss_own"] = subject.compute_td_loss(cfg, policy, batch, np.asarray(out["targets"], np.float32))
made = subject.make_optimizer(cfg, policy)
covered = {id(p) for g in made.param_groups for p in g["params"]}
out["optimized"] = [n for n, p in policy.named_parameters() if id(p) in covered]

class Spy:
    run_dir = None
    def __init__(self, run_dir):
        self.run_dir, self.calls = run_dir, {}
    def __getattr__(self, name):
        if name == "phase":
            import contextlib
            return lambda _n: contextlib.nullcontext()
        def record(*args, **kwargs):
            if name in ("update", "target_update", "exploration", "replay", "episode"):
                kw = {k: np.asarray(v).tolist() for k, v in kwargs.items()}
                self.calls.setdefault(name, []).append([list(args), kw])
        return record

spy = Spy(run_dir)
summary = subject.train(cfg, 600, 0, spy)
out["calls"] = spy.calls
out["checkpoints"] = subject.checkpoints(cfg, run_dir)
print(json.dumps(out))
"""


def _run(version: str, tmp_path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(LIB_DIR), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(EXAMPLE / version / "subject.py"), str(tmp_path / version)],
        capture_output=True,
        text=True,
        env=env,
        cwd=EXAMPLE / version,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("dqn_single")
    return {v: _run(v, tmp) for v in ("v1", "v2")}


def test_both_versions_name_their_target_network_and_optimize_only_the_online_one(versions: dict) -> None:
    for out in versions.values():
        assert out["target_networks"] == {"q_target": "q"}
        assert out["optimized"] and all(n.startswith("q.") for n in out["optimized"])


def test_v1_masks_terminated_transitions_and_v2_does_not(versions: dict) -> None:
    for version, out in versions.items():
        bootstrap = np.asarray(out["hand_bootstrap"])
        np.testing.assert_allclose(out["bootstrap"], bootstrap, rtol=1e-6)
        kept = [1.0, 0.0, 1.0] if version == "v1" else [1.0, 1.0, 1.0]  # the truncated row bootstraps in both
        np.testing.assert_allclose(out["targets"], 1.0 + 0.99 * np.asarray(kept) * bootstrap, rtol=1e-5)


def test_a_short_run_reports_gradient_steps_target_copies_epsilon_and_replay(versions: dict) -> None:
    calls = versions["v1"]["calls"]
    steps = [args[0] for args, _ in calls["update"]]
    assert steps == list(range(102, 601, 2))  # after learning_starts, every train_every steps
    assert {kw["batch_size"] for _, kw in calls["update"]} == {64}
    copies = [(args[0], kw["gradient_step"], kw["tau"]) for args, kw in calls["target_update"]]
    assert copies == [(150, 25, 1.0), (300, 100, 1.0), (450, 175, 1.0), (600, 250, 1.0)]
    eps = [kw["epsilon"] for _, kw in calls["exploration"]]
    assert eps[0] > eps[-1] == pytest.approx(0.05)
    replay = calls["replay"][-1][1]
    assert replay["capacity"] == 10_000 and replay["prioritized"] is False
    assert len(replay["ages"]) == 64 and 0 <= min(replay["ages"]) and max(replay["ages"]) < 600
    assert len(calls["episode"]) > 5
    assert len(versions["v1"]["checkpoints"]) == 2


def test_td_loss_is_the_trainers_huber_against_a_hand_computation(versions: dict) -> None:
    for version, out in versions.items():
        err = np.asarray(out["q_taken"]) - np.asarray(out["given_targets"])
        assert np.sum(np.abs(err) < 1) >= 1 and np.sum(np.abs(err) > 1) >= 1  # both parts of Huber are used
        by_hand = np.mean(np.where(np.abs(err) < 1, 0.5 * err**2, np.abs(err) - 0.5))
        assert out["td_loss_given"] == pytest.approx(by_hand, rel=1e-5), version
        # with the trainer's own targets it is what dqn_loss gives a gradient step (v2's targets differ, its
        # loss on them does not)
        assert out["td_loss_own"] == pytest.approx(out["dqn_loss"], rel=1e-6), version
    assert versions["v1"]["td_loss_own"] != pytest.approx(versions["v2"]["td_loss_own"])


@pytest.mark.usefixtures("tmp_cache")
def test_the_pair_penalises_the_td_error_the_same_way() -> None:
    from rlaudit.engine.workbench import Workbench
    from rlaudit.findings import Status
    from rlaudit.loss.tdloss import td_loss_form

    with Workbench(
        baseline=str(EXAMPLE / "v1" / "subject.py"),
        candidate=str(EXAMPLE / "v2" / "subject.py"),
        profile="smoke",
    ) as wb:
        (finding,) = td_loss_form(wb).findings
    assert finding.status is Status.CLEARED, finding.headline
    assert "Huber (δ=1), scale 1" in finding.evidence.summary
    details = finding.evidence.details
    for side in ("baseline", "candidate"):
        assert details[side]["form"] == "Huber"
        assert details[side]["threshold"] == pytest.approx(1.0, abs=0.01)
        assert details[side]["scale"] == pytest.approx(1.0, rel=1e-3)


def _changed_lines(name: str) -> tuple[list[str], list[str]]:
    old = (EXAMPLE / "v1" / name).read_text().splitlines()
    new = (EXAMPLE / "v2" / name).read_text().splitlines()
    diff = [
        line for line in difflib.unified_diff(old, new, lineterm="", n=0) if line[:3] not in ("---", "+++")
    ]
    removed = [line[1:].strip() for line in diff if line.startswith("-")]
    added = [line[1:].strip() for line in diff if line.startswith("+") and line[1:].strip()]
    return removed, added


def test_v2_differs_from_v1_by_the_dropped_done_mask_alone() -> None:
    assert _changed_lines("subject.py") == ([], [])
    removed, added = _changed_lines("cartpole_dqn.py")
    assert removed == [
        '"""A single-file DQN for CartPole-v1: the "before" version of the DQN worked example.',
        '"""One-step targets ``r + gamma * (1 - terminated) * max_a Q_target(s\', a)``: a terminated episode has no',
        "future, a truncated one (time limit) is bootstrapped like any other step.",
        "return rewards + gamma * (1.0 - terminated) * bootstrap, bootstrap",
    ]
    code = [line for line in added if not line.startswith(('"""', ":func:", "#"))]
    assert code == [
        "def bellman_backup(rewards: torch.Tensor, next_values: torch.Tensor, gamma: float) -> torch.Tensor:",
        "return rewards + gamma * next_values",
        "return bellman_backup(rewards, bootstrap, gamma), bootstrap",
    ]
