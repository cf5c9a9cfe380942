"""SB3's off-policy learners through the adapter (rlaudit.adapters.sb3.offpolicy): TD targets against a hand
computation from the policy's own networks, the target networks, and what a short training run feeds the
recorder. Training here is a few hundred environment steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from rlaudit.adapters.sb3 import SB3Subject
from rlaudit.engine.paths import home
from rlaudit.recorder import NullRecorder, Recorder

EXAMPLES = home() / "data" / "examples" / "sb3"


def _setup(tmp_path: Path, text: str) -> tuple[SB3Subject, dict]:
    path = tmp_path / "setup.yaml"
    path.write_text(text)
    subject = SB3Subject(path)
    return subject, subject.config()


def _policy(subject: SB3Subject, cfg: dict, seed: int = 0) -> Any:
    env = subject.make_env(cfg, seed)
    try:
        torch.manual_seed(seed)
        return subject.make_policy(cfg, env.single_observation_space, env.single_action_space)
    finally:
        env.close()


def _batch(obs_dim: int, act_dim: int | None, n: int = 6, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    actions = (
        rng.integers(0, 2, n) if act_dim is None else rng.uniform(-1, 1, (n, act_dim)).astype(np.float32)
    )
    return {
        "obs": rng.normal(size=(n, obs_dim)).astype(np.float32),
        "actions": actions,
        "rewards": rng.normal(size=n).astype(np.float32),
        "next_obs": rng.normal(size=(n, obs_dim)).astype(np.float32),
        "terminated": np.array([False, True, False, False, True, False][:n]),
        "truncated": np.array([False, False, True, False, False, False][:n]),
    }


DQN = "algo: dqn\nenv_id: CartPole-v1\ngamma: 0.9\npolicy_kwargs: {net_arch: [16]}\n"
SAC = "algo: sac\nenv_id: Pendulum-v1\ngamma: 0.95\nent_coef: auto_0.3\npolicy_kwargs: {net_arch: [16]}\n"
TD3 = (
    "algo: td3\nenv_id: Pendulum-v1\ngamma: 0.97\ntarget_policy_noise: 0.4\ntarget_noise_clip: 0.3\n"
    "policy_kwargs: {net_arch: [16]}\n"
)


DDPG = "algo: ddpg\nenv_id: Pendulum-v1\npolicy_kwargs: {net_arch: [16]}\n"


def test_target_networks_name_each_target_and_its_online_module(tmp_path: Path) -> None:
    for text, expected in (
        (DQN, {"q_net_target": "q_net"}),
        (SAC, {"critic_target": "critic"}),
        (TD3, {"critic_target": "critic", "actor_target": "actor"}),
    ):
        subject, cfg = _setup(tmp_path, text)
        policy = _policy(subject, cfg)
        assert subject.target_networks(cfg, policy) == expected
        names = dict(policy.named_parameters())
        for target, online in expected.items():
            # the prefixes pair tensors one to one, with the same shapes
            pairs = [
                (n, n.replace(target + ".", online + ".", 1)) for n in names if n.startswith(target + ".")
            ]
            assert pairs and all(names[a].shape == names[b].shape for a, b in pairs)
    ppo = SB3Subject(EXAMPLES / "ppo_cartpole.yaml")
    assert ppo.target_networks is None and ppo.compute_td_targets is None and ppo.compute_td_loss is None


def test_dqn_targets_are_the_max_of_the_target_network_masked_by_termination(tmp_path: Path) -> None:
    subject, cfg = _setup(tmp_path, DQN)
    policy = _policy(subject, cfg)
    with torch.no_grad():  # target and online differ, so which one gives the bootstrap is visible
        for p in policy.q_net_target.parameters():
            p.add_(0.5)
    batch = _batch(4, None)
    out = subject.compute_td_targets(cfg, policy, batch)
    with torch.no_grad():
        q_next = policy.q_net_target(torch.as_tensor(batch["next_obs"])).numpy().max(axis=1)
        q_online = policy.q_net(torch.as_tensor(batch["next_obs"])).numpy().max(axis=1)
    assert not np.allclose(q_next, q_online)
    done = batch["terminated"].astype(np.float64)  # the truncated row (index 2) bootstraps
    expected = batch["rewards"] + (1 - done) * 0.9 * q_next
    np.testing.assert_allclose(out["targets"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["bootstrap"], q_next, rtol=1e-6)
    assert out["targets"][2] != pytest.approx(batch["rewards"][2])
    assert out["targets"][1] == pytest.approx(batch["rewards"][1])
    # without SB3's timeout handling a truncation ends the return
    cfg_trunc = {**cfg, "replay_buffer_kwargs": {"handle_timeout_termination": False}}
    assert subject.compute_td_targets(cfg_trunc, policy, batch)["targets"][2] == pytest.approx(
        batch["rewards"][2]
    )
    # n-step returns: gamma ** n
    cfg_n = {**cfg, "n_steps": 3}
    np.testing.assert_allclose(
        subject.compute_td_targets(cfg_n, policy, batch)["targets"],
        batch["rewards"] + (1 - done) * 0.9**3 * q_next,
        rtol=1e-5,
    )


def test_sac_targets_twin_min_and_entropy_term_with_a_seeded_next_action(tmp_path: Path) -> None:
    subject, cfg = _setup(tmp_path, SAC)
    policy = _policy(subject, cfg)
    batch = {**_batch(3, 1), "seed": 7}
    state = torch.random.get_rng_state()
    out = subject.compute_td_targets(cfg, policy, batch)
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's random state is untouched
    next_obs = torch.as_tensor(batch["next_obs"])
    with torch.no_grad():
        torch.manual_seed(7)
        # SAC samples a' ~ pi(s') with its reparametrized squashed Gaussian
        mean, log_std, _ = policy.actor.get_action_dist_params(next_obs)
        dist = policy.actor.action_dist.proba_distribution(mean, log_std)
        a = dist.get_actions()
        logp = dist.log_prob(a)
        q1, q2 = (q.flatten().numpy() for q in policy.critic_target(next_obs, a))
    alpha = 0.3  # auto_0.3 starts at 0.3
    bootstrap = np.minimum(q1, q2) - alpha * logp.numpy()
    expected = batch["rewards"] + (1 - batch["terminated"]) * 0.95 * bootstrap
    np.testing.assert_allclose(out["targets"], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["next_q"], np.stack([q1, q2], axis=1), rtol=1e-5)
    assert float(out["ent_coef"]) == pytest.approx(alpha)
    # the same seed gives the same targets; another seed another next action
    again = subject.compute_td_targets(cfg, policy, batch)["targets"]
    other = subject.compute_td_targets(cfg, policy, {**batch, "seed": 8})["targets"]
    np.testing.assert_array_equal(out["targets"], again)
    assert not np.allclose(out["targets"], other)
    # the temperature training reached (kept on the policy by the adapter) replaces the starting value
    policy.rlaudit_ent_coef = 0.05
    later = subject.compute_td_targets(cfg, policy, batch)
    np.testing.assert_allclose(
        later["bootstrap"], np.minimum(q1, q2) - 0.05 * logp.numpy(), rtol=1e-5, atol=1e-5
    )


def test_td3_targets_smooth_the_target_policy_with_clipped_seeded_noise(tmp_path: Path) -> None:
    subject, cfg = _setup(tmp_path, TD3)
    policy = _policy(subject, cfg)
    batch = {**_batch(3, 1), "seed": 3}
    out = subject.compute_td_targets(cfg, policy, batch)
    next_obs = torch.as_tensor(batch["next_obs"])
    with torch.no_grad():
        torch.manual_seed(3)
        noise = torch.randn(len(batch["rewards"]), 1) * 0.4
        a = (policy.actor_target(next_obs) + noise.clamp(-0.3, 0.3)).clamp(-1, 1)
        q1, q2 = (q.flatten().numpy() for q in policy.critic_target(next_obs, a))
    expected = batch["rewards"] + (1 - batch["terminated"]) * 0.97 * np.minimum(q1, q2)
    np.testing.assert_allclose(out["targets"], expected, rtol=1e-5, atol=1e-5)
    # the online actor plays no part in the target
    with torch.no_grad():
        for p in policy.actor.parameters():
            p.mul_(3.0)
    np.testing.assert_allclose(subject.compute_td_targets(cfg, policy, batch)["targets"], out["targets"])


@pytest.mark.parametrize(("text", "act_dim"), [(DQN, None), (SAC, 1), (TD3, 1)])
def test_td_loss_is_the_critic_loss_of_train_against_a_hand_computation(
    tmp_path: Path, text: str, act_dim: int | None
) -> None:
    subject, cfg = _setup(tmp_path, text)
    policy = _policy(subject, cfg)
    batch = _batch(4 if act_dim is None else 3, act_dim)
    targets = np.random.default_rng(5).normal(scale=3.0, size=6)
    obs = torch.as_tensor(batch["obs"])
    with torch.no_grad():
        if act_dim is None:
            currents = [policy.q_net(obs).numpy()[np.arange(6), batch["actions"]]]
        else:
            currents = [q.flatten().numpy() for q in policy.critic(obs, torch.as_tensor(batch["actions"]))]
    errors = [c - targets for c in currents]
    if act_dim is None:  # DQN: Huber (smooth L1, threshold 1), averaged
        (e,) = errors
        expected = np.mean(np.where(np.abs(e) < 1, 0.5 * e**2, np.abs(e) - 0.5))
    else:  # SAC halves the sum of its two critics' mean squared errors; TD3 does not
        assert len(errors) == 2
        expected = sum(np.mean(e**2) for e in errors) * (0.5 if text == SAC else 1.0)
    assert subject.compute_td_loss(cfg, policy, batch, targets) == pytest.approx(expected, rel=1e-5)


def test_on_policy_setup_has_no_td_targets(tmp_path: Path) -> None:
    from rlaudit.adapters.sb3.offpolicy import compute_td_targets

    cfg = SB3Subject(EXAMPLES / "ppo_cartpole.yaml").config()
    with pytest.raises(TypeError, match="off-policy"):
        compute_td_targets(cfg, None, {})


class SpyRecorder(NullRecorder):
    """A recorder that keeps the off-policy calls the adapter makes (the tables they write are the
    recorder's own business, tested with it)."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(run_dir)
        self.calls: dict[str, list[tuple[int, dict]]] = {
            "update": [],
            "target_update": [],
            "exploration": [],
            "replay": [],
        }

    def update(self, step: int, **kw: Any) -> None:
        self.calls["update"].append((step, kw))

    def target_update(self, step: int, **kw: Any) -> None:
        self.calls["target_update"].append((step, kw))

    def exploration(self, step: int, **kw: Any) -> None:
        self.calls["exploration"].append((step, kw))

    def replay(self, step: int, **kw: Any) -> None:
        self.calls["replay"].append((step, kw))


def test_dqn_training_feeds_gradient_steps_target_copies_epsilon_and_replay(tmp_path: Path) -> None:
    subject, cfg = _setup(
        tmp_path,
        DQN + "learning_starts: 100\ntrain_freq: 50\ngradient_steps: 4\nbatch_size: 8\n"
        "target_update_interval: 100\nbuffer_size: 1000\nexploration_fraction: 0.5\n",
    )
    spy = SpyRecorder(tmp_path / "run")
    subject.train(cfg, 400, 0, spy)
    updates = spy.calls["update"]
    # train() runs after each 50-step rollout once past learning_starts: 150, 200, ..., 400
    assert [s for s, _ in updates] == list(range(150, 401, 50))
    assert all(kw == {"gradient_steps": 4, "batch_size": 8} for _, kw in updates)
    # hard copies every 100 env steps (during collection, before that rollout's train()), with the number
    # of gradient steps taken by then: train() ran at 150 (4 steps), 200 and 250 (12), 300 and 350 (20)
    targets = spy.calls["target_update"]
    assert [s for s, _ in targets] == [100, 200, 300, 400]
    assert [kw["tau"] for _, kw in targets] == [1.0] * 4
    assert [kw["gradient_step"] for _, kw in targets] == [0, 4, 12, 20]
    eps = [kw["epsilon"] for _, kw in spy.calls["exploration"]]
    assert eps[0] > eps[-1] and eps[-1] == pytest.approx(0.05)
    replay = spy.calls["replay"]
    assert [kw["size"] for _, kw in replay] == [s for s, _ in updates]
    assert all(kw["capacity"] == 1000 for _, kw in replay)
    # 1000 rows of a 4-float observation twice, action, reward, done, timeout
    assert replay[0][1]["nbytes"] >= 1000 * 4 * 4 * 2
    ages = replay[-1][1]["ages"]
    assert len(ages) == 4 * 8 and ages.min() >= 0 and ages.max() < 400
    # everything SB3 wrapped is put back
    import stable_baselines3.dqn.dqn as dqn_module
    from stable_baselines3.common.utils import polyak_update

    assert dqn_module.polyak_update is polyak_update


def test_sac_training_feeds_alpha_target_entropy_and_polyak_updates(tmp_path: Path) -> None:
    subject, cfg = _setup(tmp_path, SAC + "learning_starts: 50\nbatch_size: 8\nbuffer_size: 500\n")
    spy = SpyRecorder(tmp_path / "run")
    subject.train(cfg, 120, 0, spy)
    updates = spy.calls["update"]
    assert [s for s, _ in updates] == list(range(51, 121))
    assert all(kw["actor_updates"] == kw["gradient_steps"] == 1 for _, kw in updates)  # SAC: every step
    targets = spy.calls["target_update"]
    assert len(targets) == len(updates) and {kw["tau"] for _, kw in targets} == {0.005}
    assert [kw["gradient_step"] for _, kw in targets] == list(range(1, len(updates) + 1))
    explore = spy.calls["exploration"]
    assert explore[0][1]["target_entropy"] == -1.0  # -dim(action space)
    alphas = [kw["alpha"] for _, kw in explore]
    assert alphas[0] < 0.3 and alphas[-1] < alphas[0]  # the automatic temperature moved from its start
    # the model zip carries the temperature (SAC keeps it on the model, not the policy), read without pickles
    final = subject.checkpoints(cfg, tmp_path / "run")[0]
    policy, extras = subject.load_checkpoint(cfg, final)
    assert policy.rlaudit_ent_coef == pytest.approx(alphas[-1], rel=1e-6)
    assert extras["step"] == 120 and extras["optimizer"] is not None


def test_td3_records_one_target_update_per_delayed_actor_step(tmp_path: Path) -> None:
    subject, cfg = _setup(tmp_path, TD3 + "learning_starts: 50\nbatch_size: 8\nbuffer_size: 500\n")
    spy = SpyRecorder(tmp_path / "run")
    subject.train(cfg, 110, 0, spy)
    n = sum(kw["gradient_steps"] for _, kw in spy.calls["update"])
    targets = spy.calls["target_update"]
    # policy_delay 2: critic and actor targets move together every second gradient step
    assert len(targets) == n // 2 and all(kw["gradient_step"] % 2 == 0 for _, kw in targets)
    # ... and so does the actor, counted on its optimizer: 0.5 actor updates per gradient step
    assert sum(kw["actor_updates"] for _, kw in spy.calls["update"]) / n == pytest.approx(0.5, abs=1 / n)
    (tmp_path / "every").mkdir()
    subject, cfg = _setup(
        tmp_path / "every", TD3 + "learning_starts: 50\nbatch_size: 8\nbuffer_size: 500\npolicy_delay: 1\n"
    )
    spy = SpyRecorder(tmp_path / "run_every")
    subject.train(cfg, 80, 0, spy)
    updates = spy.calls["update"]
    assert updates and all(kw["actor_updates"] == kw["gradient_steps"] for _, kw in updates)


def test_td3_and_ddpg_record_the_sigma_of_the_noise_they_explore_by(tmp_path: Path) -> None:
    """rl-zoo's noise_type and noise_std build SB3's action noise; the run records its σ, and a learner
    without noise records σ 0 (its actions are the actor's own)."""
    short = "learning_starts: 50\nbatch_size: 8\nbuffer_size: 500\n"
    sigmas = {}
    for name, text in (
        ("normal", TD3 + short + "noise_type: normal\nnoise_std: 0.3\n"),
        ("ou", DDPG + short + "noise_type: ornstein-uhlenbeck\nnoise_std: 0.2\n"),
        ("none", TD3 + short),
    ):
        (tmp_path / name).mkdir()
        subject, cfg = _setup(tmp_path / name, text)
        model = subject.build_model(cfg, 0)
        spy = SpyRecorder(tmp_path / name / "run")
        subject.train(cfg, 80, 0, spy)
        recorded = [kw["action_noise"] for _, kw in spy.calls["exploration"]]
        assert recorded, name
        sigmas[name] = (sorted({round(s, 9) for s in recorded}), type(model.action_noise).__name__)
    assert sigmas == {
        "normal": ([0.3], "NormalActionNoise"),
        "ou": ([0.2], "OrnsteinUhlenbeckActionNoise"),
        "none": ([0.0], "NoneType"),
    }


def test_a_td3_checkpoint_round_trips_through_what_its_actor_outputs(tmp_path: Path) -> None:
    """A TD3 policy's forward gives actions, with no policy or value head to compare: the round trip compares
    what the forward pass outputs (an SB3 TD3 report said "round trip not comparable: baseline: ; candidate: ")."""
    from rlaudit.checkpointing import probes
    from support.probing import probe_context

    subject, cfg = _setup(tmp_path, TD3 + "learning_starts: 50\nbatch_size: 8\nbuffer_size: 500\n")
    subject.train(cfg, 80, 0, NullRecorder(tmp_path / "run"))
    checkpoint = subject.checkpoints(cfg, tmp_path / "run")[0]
    caps = ("config", "make_env", "make_policy", "load_checkpoint")
    ctx = probe_context(subject, tmp_path / "out", caps, config=cfg)
    assert probes.load_fidelity(ctx, path=checkpoint, rollout_steps=32, batch=8)["round_trip"] is True
    heads = json.loads((tmp_path / "out" / "fidelity.json").read_text())["round_trip"]["heads"]
    assert heads and all(name.startswith("output of actor.") for name in heads), heads
    assert all(h["max_abs_diff"] == 0.0 and h["scale"] > 0 for h in heads.values())


def test_action_noise_on_discrete_actions_is_a_clear_error(tmp_path: Path) -> None:
    from rlaudit.adapters.sb3 import SB3SetupError
    from rlaudit.adapters.sb3.runtime import action_noise_of

    subject, cfg = _setup(
        tmp_path, SAC.replace("Pendulum-v1", "CartPole-v1") + "noise_type: normal\nnoise_std: 0.1\n"
    )
    env = subject.make_env(cfg, 0)
    try:
        with pytest.raises(SB3SetupError, match="continuous actions, but CartPole-v1 has Discrete"):
            action_noise_of(cfg, env.single_action_space)
    finally:
        env.close()


def test_a_real_recorder_times_collection_and_training(tmp_path: Path) -> None:
    subject, cfg = _setup(
        tmp_path, DQN + "learning_starts: 100\ntrain_freq: 50\ngradient_steps: 4\nbatch_size: 8\n"
    )
    with Recorder(tmp_path / "run") as recorder:
        subject.train(cfg, 300, 0, recorder)
        phases = recorder.phase_totals()
    assert {"rollout", "update", "update/train"} <= set(phases)
    assert phases["update/train"][0] == 4  # train() at 150, 200, 250, 300


def test_actor_critic_optimizers_cover_actor_and_critic_but_no_target(tmp_path: Path) -> None:
    for text in (SAC, TD3):
        subject, cfg = _setup(tmp_path, text)
        policy = _policy(subject, cfg)
        made = subject.make_optimizer(cfg, policy)
        optimizer = made[0] if isinstance(made, tuple) else made
        assert type(optimizer) is type(policy.critic.optimizer) and len(optimizer.param_groups) == 2
        covered = {id(p) for g in optimizer.param_groups for p in g["params"]}
        targets = tuple(t + "." for t in subject.target_networks(cfg, policy))
        for name, p in policy.named_parameters():
            # SAC's critic shares no features extractor with the actor here; every online tensor is optimized
            assert (id(p) in covered) != name.startswith(targets), name
        assert optimizer.param_groups[0]["lr"] == policy.actor.optimizer.param_groups[0]["lr"]


def test_dqn_example_pair_differs_only_in_the_target_update_interval() -> None:
    a = SB3Subject(EXAMPLES / "dqn_cartpole.yaml").config()
    b = SB3Subject(EXAMPLES / "dqn_cartpole_regressed.yaml").config()
    assert {k for k in a if a[k] != b[k]} == {"target_update_interval"}
    assert (a["target_update_interval"], b["target_update_interval"]) == (10, 10_000)
    # rl-zoo's CartPole-v1 entry
    assert (a["train_freq"], a["gradient_steps"], a["batch_size"], a["n_timesteps"]) == (256, 128, 64, 50_000)


def test_sac_example_pair_differs_only_in_the_target_entropy() -> None:
    a = SB3Subject(EXAMPLES / "sac_pendulum.yaml").config()
    b = SB3Subject(EXAMPLES / "sac_pendulum_regressed.yaml").config()
    assert {k for k in a if a[k] != b[k]} == {"target_entropy"}
    assert (a["target_entropy"], b["target_entropy"]) == ("auto", 0.68)
    assert (a["algo"], a["env_id"], a["n_timesteps"], a["learning_rate"]) == (
        "sac",
        "Pendulum-v1",
        10_000,
        1e-3,
    )


@pytest.mark.parametrize(
    ("setup", "key", "room"),
    [
        ("dqn_cartpole.yaml", "target_update_interval", "optimizer"),
        ("dqn_cartpole.yaml", "tau", "optimizer"),
        ("dqn_cartpole.yaml", "target_entropy", "optimizer"),
        ("dqn_cartpole.yaml", "exploration_fraction", "optimizer"),
        ("dqn_cartpole.yaml", "noise_std", "optimizer"),
        ("dqn_cartpole.yaml", "noise_type", "optimizer"),
        ("sac_pendulum.yaml", "ent_coef", "optimizer"),  # SAC's α
        ("ppo_cartpole.yaml", "ent_coef", "loss"),  # PPO's entropy bonus
        ("dqn_cartpole.yaml", "policy_delay", "trainer"),
        ("dqn_cartpole.yaml", "target_policy_noise", "loss"),
    ],
)
def test_off_policy_keys_are_filed_where_they_are_measured(setup: str, key: str, room: str) -> None:
    """The optimizer room measures the target network, ε, α and the action noise at runtime, the trainer
    room TD3's delayed actor updates, the loss room the TD target TD3 smooths: a change to their keys is filed
    there (and restored by that room's attribution arm)."""
    from rlaudit.config.diff import diff_configs

    subject = SB3Subject(EXAMPLES / setup)
    table = diff_configs({key: 1}, {key: 2}, subject.config_keys()).table
    assert table.set_index("key").loc[key, "subsystem"] == room


def test_the_td_target_probe_reads_sac_and_td3_as_clipped_double_q_and_sac_entropy(tmp_path: Path) -> None:
    from rlaudit.engine.io import read_table
    from rlaudit.engine.subjects import capabilities
    from rlaudit.loss import probes as loss_probes
    from rlaudit.loss.targets import td_quantities
    from rlaudit.probe import ProbeContext

    for text, entropy in ((SAC, "−α·log π"), (TD3, "not reported")):
        (tmp_path / cfg_name(text)).mkdir()
        subject, cfg = _setup(tmp_path / cfg_name(text), text)
        out = tmp_path / cfg_name(text) / "probe"
        out.mkdir()
        ctx = ProbeContext(subject, cfg, out, "sb3", frozenset(capabilities(subject)))
        result = loss_probes.td_targets(ctx, seed=0, batch_size=32)
        assert result["critics_reported"] == 2
        q = td_quantities(
            read_table(out / "td_cases"),
            read_table(out / "td_bootstrap")["bootstrap"].to_numpy(),
            read_table(out / "td_terms"),
            result["ent_coef"],
        )
        assert q["twin-critic reduction"] == "min over 2 critics", q["fit"]
        assert q["entropy term"] == entropy
        if text == SAC:
            assert result["ent_coef"] == pytest.approx(0.3)
            assert q["entropy coefficient"] == pytest.approx(-0.3, rel=1e-4)


def cfg_name(text: str) -> str:
    return text.split("\n", 1)[0].split(": ")[1]
