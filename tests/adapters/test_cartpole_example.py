"""The worked CartPole example: two versions of one package (data/examples/cartpole/v1 and v2).

The two versions have the same package and module names, so each is exercised in a process of its own (as
rlaudit's workers do): a small script loads the subject through ``rlaudit.engine.subjects``, trains a few updates
with the real Recorder and prints what it saw as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlaudit.engine.paths import LIB_DIR, home
from rlaudit.engine.subjects import CAPABILITIES

EXAMPLE = home() / "data" / "examples" / "cartpole"

SCRIPT = r"""
import json, sys
import numpy as np
import torch
torch.set_num_threads(1)
from rlaudit.engine.subjects import capabilities, load_subject, parse_spec
from rlaudit.recorder import Recorder
from rlaudit.engine.io import read_table

subject_path, run_dir = sys.argv[1], sys.argv[2]
subject = load_subject(parse_spec(subject_path))
out = {"capabilities": sorted(capabilities(subject)), "module_file": sys.modules["cartpole_ppo"].__file__}
cfg = subject.config(overrides=["num_envs=2", "num_steps=16", "update_epochs=1", "num_minibatches=2"])
out["config"] = cfg
try:
    subject.config(overrides=["vf_coeff=1"])
except ValueError as exc:
    out["bad_override"] = str(exc)

env = subject.make_env(cfg, 0)
obs, _ = env.reset(seed=0)
out["obs_shape"] = list(obs.shape)
policy = subject.make_policy(cfg, env.single_observation_space, env.single_action_space)
opt = subject.make_optimizer(cfg, policy)
out["optimizer"] = [type(o).__name__ for o in (opt if isinstance(opt, tuple) else (opt,))]
env.close()

rec = Recorder(run_dir, sample_every=1, flush_seconds=0)
summary = subject.train(cfg, 64, 3, rec)
rec.close()
updates = read_table(f"{run_dir}/updates")
out["updates_lr"] = [float(x) for x in updates.sort_values("update")["lr"]]
out["episodes_cols"] = sorted(read_table(f"{run_dir}/episodes").columns) if summary["steps"] else []
out["scalar_names"] = sorted(set(read_table(f"{run_dir}/scalars")["name"]))
out["memory_rows"] = len(read_table(f"{run_dir}/memory"))
out["summary_steps"] = summary["steps"]

ckpts = subject.checkpoints(cfg, run_dir=run_dir)
out["checkpoints"] = [p.rsplit("/", 1)[-1] for p in ckpts]
loaded, extras = subject.load_checkpoint(cfg, ckpts[0])
out["ckpt_step"] = extras["step"]
from rlaudit.engine.safeload import load_checkpoint_safely
safe = load_checkpoint_safely(ckpts[0])
out["ckpt_matches"] = all(torch.equal(v, safe.group("agent")[k]) for k, v in loaded.state_dict().items())
rec2 = Recorder(run_dir + "-resumed", flush_seconds=0)
resumed = subject.train(cfg, 64, 3, rec2, resume_from=ckpts[1])
rec2.close()
out["resumed_steps"] = resumed["steps"]
out["resumed_lr"] = sorted(set(float(x) for x in read_table(run_dir + "-resumed/updates")["lr"]))
import gymnasium as gym


def env_fn(n, seed):
    # what rlaudit's probes hand in: an env that reports its own episode statistics
    makers = [lambda: gym.make("CartPole-v1") for _ in range(n)]
    vec = gym.vector.SyncVectorEnv(makers, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    return gym.wrappers.vector.RecordEpisodeStatistics(vec)


rec3 = Recorder(run_dir + "-envfn", flush_seconds=0)
out["env_fn_steps"] = subject.train(cfg, 32, 0, rec3, env_fn=env_fn)["steps"]
rec3.close()
out["log_dir_files"] = sorted(p.name for p in __import__("pathlib").Path(subject.log_dir(cfg, run_dir=run_dir)).iterdir())

adv, ret = subject.compute_advantages(
    cfg, np.ones((2, 2)), np.zeros((2, 2)), np.array([[1.0, 0.0], [0.0, 0.0]]), np.zeros(2)
)
out["advantages"] = adv.tolist()

# ratio 1 (the batch's logprobs are the policy's own): policy_loss = -mean(advantages as the loss uses them)
torch.manual_seed(0)
batch_obs = torch.randn(4, 4)
actions = torch.tensor([0, 1, 0, 1])
with torch.no_grad():
    _, logprobs, _, values = loaded.get_action_and_value(batch_obs, actions)
batch = {"obs": batch_obs, "actions": actions, "logprobs": logprobs, "values": values,
         "advantages": torch.tensor([1.0, 2.0, 3.0, 4.0]), "returns": values}
losses = subject.compute_loss(cfg, loaded, batch)
out["loss_keys"] = sorted(losses)
out["policy_loss"] = float(losses["policy_loss"])
print("RESULT " + json.dumps(out))
"""


def _start(version: str, tmp_path: Path) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(LIB_DIR)
    env["OMP_NUM_THREADS"] = "1"
    script = tmp_path / "probe_example.py"
    script.write_text(SCRIPT)
    return subprocess.Popen(
        [
            sys.executable,
            str(script),
            str(EXAMPLE / version / "subject.py"),
            str(tmp_path / f"run-{version}"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _result(proc: subprocess.Popen[str]) -> dict:
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    line = next(x for x in stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    # one process per version (they cannot share one), both at once
    procs = {v: _start(v, tmp_path_factory.mktemp(v)) for v in ("v1", "v2")}
    return {v: _result(p) for v, p in procs.items()}


def test_same_package_names_in_both_versions() -> None:
    for rel in ("subject.py", "cartpole_ppo/__init__.py", "cartpole_ppo/train.py"):
        assert (EXAMPLE / "v1" / rel).is_file() and (EXAMPLE / "v2" / rel).is_file()
    assert (EXAMPLE / "README.md").is_file()


def test_pair_file_names_both_versions() -> None:
    from rlaudit.engine.subjects import load_pair_file

    baseline, candidate = load_pair_file(EXAMPLE / "pair.yaml")
    assert baseline.target == str(EXAMPLE / "v1" / "subject.py") and baseline.label == "cartpole v1"
    assert candidate.target == str(EXAMPLE / "v2" / "subject.py")


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_subject_exposes_every_capability_and_trains_with_the_recorder(results: dict, version: str) -> None:
    out = results[version]
    assert out["module_file"].startswith(str(EXAMPLE / version))  # its own package, not the other version's
    # every capability but a curriculum and metrics() (the example relies on the default: the episodic return),
    # the off-policy ones (a PPO has no target networks or TD targets) and a sequence learner's lambda returns
    off_policy = {"target_networks", "compute_td_targets", "compute_td_loss", "compute_lambda_returns"}
    assert set(out["capabilities"]) == set(CAPABILITIES) - {"make_curriculum", "metrics"} - off_policy
    assert out["config"]["num_envs"] == 2 and out["config"]["num_steps"] == 16
    assert "vf_coeff" in out["bad_override"] and "vf_coef" in out["bad_override"]
    assert out["obs_shape"] == [2, 4]
    assert out["optimizer"] == ["Adam", "LambdaLR"]
    # 64 steps of 32 per update: 2 PPO updates of 2 minibatches each, the learning rate annealed from 1.0 to
    # 0.5 of 2.5e-3 between them, as the recorder saw it on each optimizer step
    assert out["summary_steps"] == 64
    assert out["updates_lr"] == pytest.approx([2.5e-3, 2.5e-3, 1.25e-3, 1.25e-3])
    assert {"losses/value_loss", "losses/policy_loss", "charts/learning_rate", "perf/sps"} <= set(
        out["scalar_names"]
    )
    assert out["checkpoints"] == ["ckpt_00000064.pt", "ckpt_00000032.pt"]  # latest first; half-way kept
    assert out["ckpt_step"] == 64 and out["ckpt_matches"]
    # once per update by the trainer, and by the recorder itself every half second of the run and at its end:
    # how many of the latter depends on how fast this machine is right now
    assert out["memory_rows"] >= 3
    # resumed from the half-way checkpoint, the run trains only its second update, at the annealed rate
    assert out["resumed_steps"] == 64 and out["resumed_lr"] == pytest.approx([1.25e-3])
    assert out["env_fn_steps"] == 32  # train(env_fn=...) accepts an env that reports episodes itself
    assert out["log_dir_files"] == ["scalars.csv"]
    # GAE, gamma 0.99, lambda 0.95; env 0 ended at t=0: A[0,0] = r = 1 (no bootstrap), A[1,0] = 1
    # env 1 never ended: A[1,1] = 1, A[0,1] = 1 + 0.99 * 0.95 * 1
    assert [a for row in out["advantages"] for a in row] == pytest.approx([1.0, 1.9405, 1.0, 1.0])
    assert out["loss_keys"] == ["approx_kl", "clipfrac", "entropy", "loss", "policy_loss", "value_loss"]


def test_the_regression_is_visible_through_the_capabilities(results: dict) -> None:
    v1, v2 = results["v1"], results["v2"]
    changed = {k for k in v1["config"] if v1["config"][k] != v2["config"][k]}
    assert changed == {"vf_coef"}  # the config shows the typo ...
    assert (v1["config"]["vf_coef"], v2["config"]["vf_coef"]) == (0.5, 5.0)
    assert (
        v1["config"]["norm_adv"] is True and v2["config"]["norm_adv"] is True
    )  # ... but not the dropped flag
    # at ratio 1 the policy loss is -mean(advantages used): 0 after normalization, -2.5 without
    assert v1["policy_loss"] == pytest.approx(0.0, abs=1e-6)
    assert v2["policy_loss"] == pytest.approx(-2.5)


def test_config_audit_finds_the_typo_end_to_end(tmp_cache: Path) -> None:
    from rlaudit.config import audit
    from rlaudit.engine.workbench import Workbench

    with Workbench(
        baseline=str(EXAMPLE / "v1" / "subject.py"),
        candidate=str(EXAMPLE / "v2" / "subject.py"),
        profile="smoke",
    ) as wb:
        _pair, diff = audit.load_diff(wb)
        assert diff is not None
        changed = diff.changed()
        assert list(changed["key"]) == ["vf_coef"]
        assert changed.iloc[0]["subsystem"] == "loss"  # from the subject's config_keys()
