"""sb3:<file.yaml> subjects (rlaudit.adapters.sb3): resolved config, training through the recorder, safe
checkpoints, and the example pair in data/examples/sb3. SB3 training here is a few hundred steps."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from rlaudit.adapters.sb3 import SB3SetupError, SB3Subject, read_setup
from rlaudit.engine.paths import home
from rlaudit.engine.subjects import capabilities

EXAMPLES = home() / "data" / "examples" / "sb3"
BASELINE = EXAMPLES / "ppo_cartpole.yaml"
REGRESSED = EXAMPLES / "ppo_cartpole_regressed.yaml"
TINY = ["n_envs=2", "n_steps=16", "batch_size=16", "n_epochs=1"]


def _write(tmp_path: Path, text: str, name: str = "setup.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- config --------------------------------------------------------------------------------------------------


def test_resolved_config_fills_in_sb3_defaults() -> None:
    cfg = SB3Subject(BASELINE).config()
    # given in the file
    assert (cfg["n_steps"], cfg["gae_lambda"], cfg["learning_rate"], cfg["clip_range"]) == (
        32,
        0.8,
        "lin_0.001",
        "lin_0.2",
    )
    # omitted: SB3's PPO.__init__ defaults
    assert (cfg["vf_coef"], cfg["max_grad_norm"], cfg["normalize_advantage"], cfg["target_kl"]) == (
        0.5,
        0.5,
        True,
        None,
    )
    # what the policy really builds when policy_kwargs leave it out
    assert cfg["policy_kwargs"]["net_arch"] == {"pi": [64, 64], "vf": [64, 64]}
    assert cfg["policy_kwargs"]["activation_fn"] == "torch.nn.Tanh"
    assert cfg["policy_kwargs"]["optimizer_class"] == "torch.optim.Adam"
    assert cfg["policy_kwargs"]["optimizer_kwargs"] == {"eps": 1e-5}
    assert cfg["normalize"]["norm_obs"] is False and cfg["normalize"]["gamma"] == 0.98
    json.dumps(cfg)


def test_example_pair_differs_in_exactly_the_regressed_keys() -> None:
    a, b = SB3Subject(BASELINE).config(), SB3Subject(REGRESSED).config()
    assert {k for k in a if a[k] != b[k]} == {"gae_lambda", "learning_rate"}
    assert (b["gae_lambda"], b["learning_rate"]) == (0.08, 0.0001)


def test_unknown_keys_are_listed_with_the_known_ones(tmp_path: Path) -> None:
    path = _write(tmp_path, "algo: ppo\nenv_id: CartPole-v1\ngae_lamda: 0.9\nfoo: 1\n")
    with pytest.raises(SB3SetupError) as info:
        SB3Subject(path)
    message = str(info.value)
    assert "'gae_lamda' (did you mean 'gae_lambda'?)" in message and "'foo'" in message
    assert (
        "Known keys: setup: algo, env_id" in message
        and "PPO hyperparameters: learning_rate, n_steps" in message
    )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("env_id: CartPole-v1\n", "does not say which algorithm"),
        ("algo: trpo\nenv_id: CartPole-v1\n", "unknown algorithm 'trpo'"),
        ("algo: ppo\n", "no env_id"),
        ("algo: ppo\nenv_id: CartPole-v1\npolicy_kwargs: {net_arc: [8]}\n", "policy_kwargs has unknown key"),
        ("algo: ppo\nenv_id: CartPole-v1\nlearning_rate: fast\n", "lin_0.001"),
        (
            "algo: ppo\nenv_id: CartPole-v1\npolicy_kwargs: {activation_fn: os.system}\n",
            "cannot resolve class",
        ),
        (
            "algo: ppo\nenv_id: CartPole-v1\npolicy_kwargs: \"dict(x=__import__('os'))\"\n",
            "does not evaluate code",
        ),
        ("algo: ppo\nenv_id: CartPole-v1\npolicy: TransformerPolicy\n", "not one of PPO's"),
        ("- a\n- b\n", "must be a mapping"),
        # rl-zoo's action noise: both keys, a known kind, for an algorithm that takes noise
        ("algo: td3\nenv_id: Pendulum-v1\nnoise_type: gaussian\nnoise_std: 0.1\n", "must be normal or orn"),
        ("algo: td3\nenv_id: Pendulum-v1\nnoise_type: normal\n", "needs noise_std"),
        ("algo: td3\nenv_id: Pendulum-v1\nnoise_std: 0.1\n", "without noise_type: add noise_type"),
        ("algo: td3\nenv_id: Pendulum-v1\nnoise_type: normal\nnoise_std: -1\n", "at least 0, got -1"),
        ("algo: ppo\nenv_id: Pendulum-v1\nnoise_type: normal\nnoise_std: 0.1\n", "PPO takes none"),
        (
            "algo: td3\nenv_id: Pendulum-v1\naction_noise: NormalActionNoise(mean=0, sigma=0.1)\n",
            "cannot build .* noise_type: normal",
        ),
    ],
)
def test_bad_setup_files(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(SB3SetupError, match=match):
        SB3Subject(_write(tmp_path, text))


def test_rl_zoo_layout_strings_and_algo_from_file_name(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "CartPole-v1:\n  n_envs: 4\n  n_timesteps: !!float 1e5\n  policy: 'MlpPolicy'\n"
        '  policy_kwargs: "dict(net_arch=[32], activation_fn=nn.ReLU, ortho_init=False)"\n'
        "  normalize: \"{'norm_obs': True, 'norm_reward': False}\"\n",
        name="ppo.yml",
    )
    cfg = SB3Subject(path).config()
    assert (cfg["algo"], cfg["env_id"], cfg["n_envs"], cfg["n_timesteps"]) == (
        "ppo",
        "CartPole-v1",
        4,
        100000,
    )
    assert (
        cfg["policy_kwargs"]["net_arch"] == [32] and cfg["policy_kwargs"]["activation_fn"] == "torch.nn.ReLU"
    )
    assert cfg["policy_kwargs"]["ortho_init"] is False
    assert (cfg["normalize"]["norm_obs"], cfg["normalize"]["norm_reward"]) == (True, False)


def test_overrides_through_the_subjects_own_mechanism() -> None:
    subject = SB3Subject(REGRESSED)
    cfg = subject.config(
        overrides=["gae_lambda=0.8", "learning_rate=lin_0.001", "policy_kwargs.ortho_init=false"]
    )
    assert cfg["gae_lambda"] == 0.8 and cfg["learning_rate"] == "lin_0.001"
    assert cfg["policy_kwargs"]["ortho_init"] is False
    with pytest.raises(ValueError, match="gae_lamda"):
        subject.config(overrides=["gae_lamda=0.8"])


def test_off_policy_algorithm_has_no_gae_capability(tmp_path: Path) -> None:
    subject = SB3Subject(_write(tmp_path, "algo: dqn\nenv_id: CartPole-v1\n"))
    caps = capabilities(subject)
    assert "compute_advantages" not in caps and {"config", "train", "make_env", "make_optimizer"} <= caps
    cfg = subject.config()
    assert cfg["buffer_size"] == 1_000_000 and cfg["policy_kwargs"]["net_arch"] == [64, 64]


def test_a2c_shows_the_optimizer_sb3_really_builds(tmp_path: Path) -> None:
    """The adapter once filled in SB3's TF-like RMSprop (eps inside the square root) where A2C builds torch's
    RMSprop, and trained with it: its A2C stayed at a random policy's return on CartPole after 30k steps, where
    SB3's own reaches about 185. The optimizer is now checked against the one SB3 builds itself."""
    from gymnasium import spaces
    from stable_baselines3 import A2C

    subject = SB3Subject(_write(tmp_path, "algo: a2c\nenv_id: CartPole-v1\nrms_prop_eps: 1.0e-4\n"))
    cfg = subject.config()
    sb3 = A2C("MlpPolicy", "CartPole-v1", rms_prop_eps=1e-4, device="cpu").policy.optimizer
    assert type(sb3).__name__ == "RMSprop"
    built = subject.build_model(cfg, 0).policy.optimizer
    policy = subject.make_policy(cfg, spaces.Box(-1.0, 1.0, (4,)), spaces.Discrete(2))
    for optimizer in (built, policy.optimizer):
        assert type(optimizer) is type(sb3) and optimizer.defaults == sb3.defaults
    assert cfg["policy_kwargs"]["optimizer_class"] == "torch.optim.RMSprop"
    assert cfg["policy_kwargs"]["optimizer_kwargs"] == {"alpha": 0.99, "eps": 1e-4, "weight_decay": 0}


@pytest.mark.parametrize(
    ("algo", "env_id"),
    [("ppo", "CartPole-v1"), ("a2c", "CartPole-v1"), ("dqn", "CartPole-v1"), ("sac", "Pendulum-v1"),
     ("td3", "Pendulum-v1"), ("ddpg", "Pendulum-v1")],
)  # fmt: skip
def test_the_model_built_is_the_one_sb3_builds_from_the_same_setup(
    tmp_path: Path, algo: str, env_id: str
) -> None:
    """What the adapter trains must be what SB3 trains from the same setup: the same networks, initialized alike
    from the same seed, and every optimizer of the same class with the same settings."""
    import stable_baselines3 as sb3
    import torch

    subject = SB3Subject(_write(tmp_path, f"algo: {algo}\nenv_id: {env_id}\n"))
    ours = subject.build_model(subject.config(), seed=3).policy
    plain = getattr(sb3, algo.upper())("MlpPolicy", env_id, seed=3, device="cpu").policy
    theirs = plain.state_dict()
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.items()
    }
    for name, tensor in ours.state_dict().items():
        assert torch.equal(tensor, theirs[name]), name
    optimizers = lambda policy: {  # noqa: E731  the policy's optimizer, or the actor's and critic's
        name: (type(module.optimizer), module.optimizer.defaults)
        for name, module in policy.named_modules()
        if isinstance(getattr(module, "optimizer", None), torch.optim.Optimizer)
    }
    assert optimizers(ours) and optimizers(ours) == optimizers(plain)


# -- env, optimizer, advantages ------------------------------------------------------------------------------


def test_make_env_speaks_the_gymnasium_vector_api() -> None:
    subject = SB3Subject(BASELINE)
    cfg = subject.config(overrides=["n_envs=2"])
    env = subject.make_env(cfg, 0)
    obs, info = env.reset(seed=0)
    assert obs.shape == (2, 4) and info == {}
    finished = 0
    for _ in range(200):
        obs, rewards, terminations, _truncations, info = env.step(env.action_space.sample())
        assert rewards.shape == (2,) and terminations.dtype == bool
        if "_final_obs" in info:
            finished += int(info["_final_obs"].sum())
            assert info["episode"]["r"][info["_episode"]].min() >= 1
    assert finished > 0
    env.close()


def test_policy_interface_and_optimizer_schedule() -> None:
    subject = SB3Subject(BASELINE)
    cfg = subject.config()
    venv_env = subject.make_env(cfg, 0)
    policy = subject.make_policy(cfg, venv_env.single_observation_space, venv_env.single_action_space)
    venv_env.close()
    import torch

    action, logprob, entropy, value = policy.get_action_and_value(torch.zeros(5, 4))
    assert action.shape == logprob.shape == entropy.shape == value.shape == (5,)
    values, logprob2, entropy2 = policy.evaluate_actions(torch.zeros(5, 4), action)  # SB3's own path agrees
    assert torch.allclose(logprob, logprob2) and torch.allclose(entropy, entropy2)
    assert torch.allclose(policy.get_value(torch.zeros(5, 4)), values.flatten())
    optimizer, scheduler = subject.make_optimizer(cfg, policy)
    lrs = []
    for _ in range(3):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()  # no gradients: a no-op, but keeps torch's step-order check quiet
        scheduler.step()
    # after k rollouts of n_steps * n_envs = 256 steps SB3's rate is lin(1 - k * 256 / 100000)
    assert lrs == pytest.approx([1e-3, 1e-3 * (1 - 256 / 1e5), 1e-3 * (1 - 512 / 1e5)])
    regressed = SB3Subject(REGRESSED)
    assert not isinstance(
        regressed.make_optimizer(regressed.config(), policy), tuple
    )  # constant: no scheduler


def test_compute_advantages_is_sb3s_gae() -> None:
    subject = SB3Subject(BASELINE)  # gamma 0.98, gae_lambda 0.8
    rewards = np.ones((3, 1))
    values = np.zeros((3, 1))
    dones = np.array([[0.0], [1.0], [0.0]])  # the episode ended at t = 1
    adv, ret = subject.compute_advantages(subject.config(), rewards, values, dones, np.array([2.0]))
    # t=2: 1 + 0.98 * 2 = 2.96; t=1: ended -> 1; t=0: 1 + 0.98 * 0.8 * 1 = 1.784
    assert adv[:, 0] == pytest.approx([1.784, 1.0, 2.96])
    assert ret[:, 0] == pytest.approx(adv[:, 0])


# -- training, checkpoints, logs -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[SB3Subject, dict, Path]]:
    """Both example setups trained for 64 steps (2 rollouts), the baseline with VecNormalize on."""
    import torch

    from rlaudit.recorder import Recorder

    torch.set_num_threads(1)
    runs = {}
    for name, path, extra in (
        ("baseline", BASELINE, ["normalize.norm_obs=true"]),
        ("regressed", REGRESSED, []),
    ):
        subject = SB3Subject(path)
        cfg = subject.config(overrides=TINY + extra)
        run_dir = tmp_path_factory.mktemp(name)
        recorder = Recorder(run_dir, sample_every=1, flush_seconds=0)
        summary = subject.train(cfg, 64, 0, recorder)
        recorder.close()
        assert summary["steps"] == 64
        runs[name] = (subject, cfg, run_dir)
    return runs


def test_runtime_learning_rate_decays_only_in_the_baseline(trained: dict) -> None:
    from rlaudit.engine.io import read_table

    lrs = {}
    for name, (_, _, run_dir) in trained.items():
        updates = read_table(run_dir / "updates")
        assert (updates["grad_norm"] >= updates["grad_norm_clipped"] - 1e-9).all()
        lrs[name] = sorted(set(updates["lr"].round(12)), reverse=True)
    # SB3 sets the rate after each rollout of 32 steps, from progress_remaining = 1 - 32/64, then 1 - 64/64
    assert lrs["baseline"] == pytest.approx([5e-4, 0.0])
    assert lrs["regressed"] == pytest.approx([1e-4])


def test_recorder_tables_tensorboard_and_scalars(trained: dict) -> None:
    from rlaudit.engine.io import read_table

    subject, cfg, run_dir = trained["baseline"]
    names = set(read_table(run_dir / "scalars")["name"])
    assert {
        "losses/value_loss",
        "losses/policy_loss",
        "losses/entropy",
        "charts/learning_rate",
        "perf/sps",
        "charts/ent_coef",
    } <= names
    # the log files use the recorder's names (so the logging audit can compare them name by name)
    import csv

    with open(run_dir / "tb" / "progress.csv") as f:
        header = next(csv.reader(f))
    assert {"losses/value_loss", "losses/entropy", "perf/sps", "charts/ent_coef"} <= set(header)
    assert not any(h.startswith("train/value") for h in header)
    assert len(read_table(run_dir / "memory")) >= 2  # sampled once per rollout
    # each update's losses under the step at which it was computed: one value per (step, name)
    scalars = read_table(run_dir / "scalars")
    assert not scalars.duplicated(["step", "name"]).any()
    assert sorted(scalars[scalars["name"] == "losses/value_loss"]["step"]) == [32, 64]
    episodes = read_table(run_dir / "episodes")
    assert len(episodes) > 0 and {"return", "length"} <= set(episodes.columns)
    assert set(read_table(run_dir / "phases")["name"]) == {"rollout", "update"}
    log_dir = Path(subject.log_dir(cfg, run_dir=run_dir))
    assert log_dir == run_dir / "tb" and (log_dir / "progress.csv").is_file()
    assert any(p.name.startswith("events.out.tfevents") for p in log_dir.iterdir())


def test_checkpoint_round_trip_without_unpickling(trained: dict) -> None:
    import torch

    from rlaudit.engine.safeload import load_checkpoint_safely

    subject, cfg, run_dir = trained["baseline"]
    paths = subject.checkpoints(cfg, run_dir=run_dir)
    assert [Path(p).name for p in paths] == ["model_64.zip", "model_32.zip"]
    policy, extras = subject.load_checkpoint(cfg, paths[0])
    saved = load_checkpoint_safely(paths[0]).group("policy")
    assert all(torch.equal(v, saved[k]) for k, v in policy.state_dict().items())
    assert extras["step"] == 64 and set(extras["optimizer"]) == {"state", "param_groups"}
    assert "data/policy_class" in extras["skipped"]
    assert extras["obs_rms"]["mean"].shape == (4,) and extras["obs_rms"]["count"] > 1  # from the .npz
    assert (run_dir / "checkpoints" / "vecnormalize_64.pkl").is_file()  # SB3's own file too


def test_resume_continues_the_step_counter(trained: dict, tmp_path: Path) -> None:
    from rlaudit.recorder import Recorder

    subject, cfg, run_dir = trained["baseline"]
    paths = subject.checkpoints(cfg, run_dir=run_dir)
    assert [Path(p).name for p in paths] == ["model_64.zip", "model_32.zip"]  # the end, and half-way
    recorder = Recorder(tmp_path / "resumed", flush_seconds=0)
    # resume the 64-step run from its middle: the run's length stays 64, so 32 more steps are trained
    summary = subject.train(cfg, 64, 0, recorder, resume_from=paths[1])
    recorder.close()
    assert summary["steps"] == 64
    from rlaudit.engine.io import read_table

    updates = read_table(tmp_path / "resumed" / "updates")
    assert sorted(set(updates["lr"].round(12))) == pytest.approx(
        [0.0]
    )  # progress continued: the last rollout


def test_models_listed_in_the_setup_and_malicious_normalizer(tmp_path: Path, trained: dict) -> None:
    """Existing artifacts named in the YAML load safely; a booby-trapped vecnormalize.pkl is refused."""
    subject, cfg, run_dir = trained["regressed"]
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(subject.checkpoints(cfg, run_dir=run_dir)[0], models / "ppo_final.zip")
    marker = tmp_path / "PWNED"

    class Payload:
        def __reduce__(self):
            return (exec, (f"open({str(marker)!r}, 'w').write('x')",))

    (models / "vecnormalize.pkl").write_bytes(pickle.dumps(Payload()))
    setup = _write(tmp_path, REGRESSED.read_text() + "models: [models/ppo_final.zip]\n")
    user = SB3Subject(setup)
    ucfg = user.config(overrides=TINY)
    assert user.checkpoints(ucfg) == [str(models / "ppo_final.zip")]
    from rlaudit.engine.safeload import UnsafeCheckpointError

    with pytest.raises(UnsafeCheckpointError, match=r"builtins\.exec.*trust=True"):
        user.load_checkpoint(ucfg, user.checkpoints(ucfg)[0])
    assert not marker.exists()


# -- end to end through the workbench ----------------------------------------------------------------------------


def test_config_audit_finds_the_regression(tmp_cache: Path) -> None:
    from rlaudit.config import audit
    from rlaudit.engine.workbench import Workbench

    with Workbench(baseline=f"sb3:{BASELINE}", candidate=f"sb3:{REGRESSED}", profile="smoke") as wb:
        _pair, diff = audit.load_diff(wb)
        assert diff is not None
        changed = diff.changed().set_index("key")
        assert set(changed.index) == {"gae_lambda", "learning_rate"}
        assert changed.loc["gae_lambda", "subsystem"] == "loss"
        assert changed.loc["learning_rate", "subsystem"] == "optimizer"
        section = audit.values(wb)
        suspects = {f.id for f in section.findings if f.status.name == "SUSPECT"}
        assert {"config/changed-loss", "config/changed-optimizer"} <= suspects


def test_unknown_key_through_the_worker_is_a_clear_error(tmp_path: Path, tmp_cache: Path) -> None:
    from rlaudit.config import probes
    from rlaudit.engine.workbench import Workbench

    bad = _write(tmp_path, BASELINE.read_text() + "n_step: 64\n")
    with Workbench(baseline=f"sb3:{BASELINE}", candidate=f"sb3:{bad}", profile="smoke") as wb:
        pair = wb.run(probes.resolved_config)
        assert pair.baseline.ok and not pair.candidate.ok
        assert "unknown key(s) 'n_step' (did you mean 'n_steps'?)" in str(pair.candidate.error)


def test_bad_sb3_specs() -> None:
    from rlaudit.engine.subjects import parse_spec

    with pytest.raises(FileNotFoundError, match=r"SB3 setup file 'nope\.yaml'"):
        parse_spec("sb3:nope.yaml")
    with pytest.raises(ValueError, match=r"sb3:<file\.yaml>"):
        parse_spec("sb3:")


def test_read_setup_is_the_flat_file() -> None:
    data = read_setup(BASELINE)
    assert data["algo"] == "ppo" and data["n_steps"] == 32 and "vf_coef" not in data


# -- compute_loss: SB3's inline loss, re-derived -------------------------------------------------------------


def _one_sb3_update(subject: SB3Subject, cfg: dict, total: int) -> tuple[dict, dict, dict, float]:
    """One rollout and one ``train()`` of SB3 itself, on a batch made off-policy on purpose.

    The buffer's behaviour log-probabilities and values are perturbed before ``train()`` so that the ratio is
    not 1 and the value clipping bites: every branch of the loss then shows in what SB3 logs.

    Returns:
        ``(batch, weights, logged, progress)``: the batch as the contract's arrays, the policy's weights before
        the update, SB3's logged ``train/*`` values, and the run's progress at the update (0 -> 1).
    """
    import copy

    import torch
    from stable_baselines3.common.logger import Logger

    torch.set_num_threads(1)
    model = subject.build_model(cfg, seed=0)
    model.set_logger(Logger(folder=None, output_formats=[]))  # records name_to_value, writes nothing
    total, callback = model._setup_learn(total, None)
    callback.on_training_start(locals(), globals())
    assert model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
    model._update_current_progress_remaining(model.num_timesteps, total)
    buf = model.rollout_buffer
    rng = np.random.default_rng(0)
    buf.log_probs += rng.normal(0.0, 0.3, buf.log_probs.shape).astype(np.float32)
    buf.values += rng.normal(0.0, 0.3, buf.values.shape).astype(np.float32)
    batch = {
        "obs": buf.observations.reshape(-1, 4).copy(),
        "actions": buf.actions.reshape(-1).copy(),
        "logprobs": buf.log_probs.reshape(-1).copy(),
        "advantages": buf.advantages.reshape(-1).copy(),
        "returns": buf.returns.reshape(-1).copy(),
        "values": buf.values.reshape(-1).copy(),
    }
    weights = copy.deepcopy(model.policy.state_dict())
    model.train()
    progress = 1.0 - model._current_progress_remaining
    model.env.close()
    return batch, weights, dict(model.logger.name_to_value), progress


def _terms(subject: SB3Subject, cfg: dict, weights: dict, batch: dict, progress: float) -> dict[str, float]:
    from gymnasium import spaces

    policy = subject.make_policy(cfg, spaces.Box(-np.inf, np.inf, (4,), np.float32), spaces.Discrete(2))
    policy.load_state_dict(weights)
    return {
        k: float(v.detach()) for k, v in subject.compute_loss(cfg, policy, batch, progress=progress).items()
    }


def test_ppo_compute_loss_matches_what_sb3_train_computes() -> None:
    subject = SB3Subject(BASELINE)  # clip_range lin_0.2
    # one epoch over one minibatch of the whole rollout: SB3's logged means are that minibatch's terms
    cfg = subject.config(
        overrides=[
            "n_envs=2",
            "n_steps=16",
            "batch_size=32",
            "n_epochs=1",
            "clip_range_vf=0.1",
            "ent_coef=0.01",
            "vf_coef=0.7",
        ]
    )
    batch, weights, logged, progress = _one_sb3_update(subject, cfg, total=64)
    assert progress == pytest.approx(0.5)  # 32 of 64 steps: the schedule is half-way, clip 0.1
    assert logged["train/clip_range"] == pytest.approx(0.1)
    terms = _terms(subject, cfg, weights, batch, progress)
    assert terms["policy_loss"] == pytest.approx(logged["train/policy_gradient_loss"], rel=1e-5, abs=1e-7)
    assert terms["value_loss"] == pytest.approx(logged["train/value_loss"], rel=1e-5)
    assert terms["entropy_loss"] == pytest.approx(logged["train/entropy_loss"], rel=1e-5)
    assert terms["entropy"] == pytest.approx(-logged["train/entropy_loss"], rel=1e-5)
    assert terms["loss"] == pytest.approx(logged["train/loss"], rel=1e-5)
    assert terms["approx_kl"] == pytest.approx(float(logged["train/approx_kl"]), rel=1e-4)
    assert terms["clipfrac"] == pytest.approx(logged["train/clip_fraction"])
    assert 0.0 < terms["clipfrac"] < 1.0  # the clipped branch was exercised, not only the ratio-1 one
    # the comparison can fail: the schedule's value and the value clipping each change the terms
    at_start = _terms(subject, cfg, weights, batch, 0.0)
    assert at_start["policy_loss"] != pytest.approx(terms["policy_loss"], rel=1e-3)
    unclipped = _terms(subject, {**cfg, "clip_range_vf": None}, weights, batch, progress)
    assert unclipped["value_loss"] != pytest.approx(terms["value_loss"], rel=1e-3)


def test_a2c_compute_loss_matches_what_sb3_train_computes(tmp_path: Path) -> None:
    subject = SB3Subject(_write(tmp_path, "algo: a2c\nenv_id: CartPole-v1\n"))
    cfg = subject.config(overrides=["n_envs=2", "n_steps=8", "normalize_advantage=true", "ent_coef=0.01"])
    batch, weights, logged, progress = _one_sb3_update(subject, cfg, total=64)
    terms = _terms(subject, cfg, weights, batch, progress)
    assert terms["policy_loss"] == pytest.approx(logged["train/policy_loss"], rel=1e-5, abs=1e-7)
    assert terms["value_loss"] == pytest.approx(logged["train/value_loss"], rel=1e-5)
    assert terms["entropy_loss"] == pytest.approx(logged["train/entropy_loss"], rel=1e-5)
    assert "approx_kl" not in terms and "clipfrac" not in terms
    raw = _terms(subject, {**cfg, "normalize_advantage": False}, weights, batch, progress)
    assert raw["policy_loss"] != pytest.approx(terms["policy_loss"], rel=1e-3)


def test_off_policy_setup_has_no_loss_capability(tmp_path: Path) -> None:
    subject = SB3Subject(_write(tmp_path, "algo: sac\nenv_id: Pendulum-v1\n"))
    assert "compute_loss" not in capabilities(subject)
    assert "compute_loss" in capabilities(SB3Subject(BASELINE))


def test_loss_audit_compares_sb3_loss_terms(tmp_path: Path, tmp_cache: Path) -> None:
    """The loss-terms audit runs on an SB3 pair (it used to be SKIPPED) and sees a changed coefficient."""
    from rlaudit.engine.workbench import Workbench
    from rlaudit.findings import Status
    from rlaudit.loss import audit as loss_audit

    heavier_value = _write(tmp_path, BASELINE.read_text() + "vf_coef: 1.0\n", name="vf.yaml")
    with Workbench(baseline=f"sb3:{BASELINE}", candidate=f"sb3:{heavier_value}", profile="smoke") as wb:
        section = loss_audit.loss_terms(wb)
    (finding,) = section.findings
    assert finding.status == Status.SUSPECT, finding.evidence.summary
    # same weights, same batch: the terms agree and only their weighted sum moved
    assert "only the total differs" in finding.evidence.summary
    assert finding.evidence.baseline["value_loss"] == pytest.approx(finding.evidence.candidate["value_loss"])
    assert finding.evidence.baseline["loss"] != pytest.approx(finding.evidence.candidate["loss"])
