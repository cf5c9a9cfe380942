"""rlaudit subject: how rlaudit sees your training setup.

Each commented-out function below is one *capability*. Uncomment (and fill in) the ones your trainer can
offer; rlaudit calls those that exist and reports every check that needs a missing one as SKIPPED, naming
the capability, never as an ERROR. As written, this file has no capabilities at all.

A good order: config() and train() first (the config, trainer, optimizer and logging audits), then
make_env() and make_policy() (env, spaces, agents, init), then the rest.

Rules of the game:
* Every function takes the resolved config dict first: the one config() returns (rlaudit passes it back).
* This file runs in its own process, started in this directory with this directory first on sys.path,
  so `import my_trainer` finds your package here. Baseline and candidate never share a process.
* Keep imports inside the functions when they are slow; rlaudit imports this file once per process.
* Try it: `python -c "import subject"` (with your trainer's packages installed), then
  `make report BASELINE=path/to/old/subject.py CANDIDATE=path/to/new/subject.py`.
* Your own pins (gymnasium==0.29.1, numpy<2, ...): give each side `requirements:` (a pip requirements file)
  and `system_site_packages: true` (reuse the installed torch) in a pair file; rlaudit builds that virtual
  environment once, caches it, and runs this file there. Gymnasium 0.29.x and 1.x both work.

What each notebook reads (a check whose capability or recorder table is missing is SKIPPED, naming it):

  notebook          capabilities                                   recorder calls in train()
  01_agents         make_env, make_policy                          -
  02_trainer        config, train; total_steps (optional: runs     episode (the learning curves: the
                    no longer than your own)                       primary metric), phase (the speed table:
                                                                   your own phase names), watch and
                                                                   log(step) before each update (batch
                                                                   geometry: optimizer steps per update),
                                                                   minibatch (optional: sample coverage),
                                                                   update (off-policy: the replay ratio)
  03_logging        train, log_dir                                 log: a logged `charts/episodic_return` is
                                                                   compared with the episodes the recorder
                                                                   saw (that one check is SKIPPED without
                                                                   it)
  04_checkpointing  train, checkpoints, load_checkpoint;           -
                    train(resume_from=) for resume continuity
  05_env            config, make_env                               -
  06_curriculum     config, make_curriculum                        -
  07_optimizer      config, make_env, make_policy,                 watch (learning rate, grad norms and
                    make_optimizer; train for what ran;            update ratios as they ran); off-policy:
                    target_networks (off-policy)                   target_update (or target_networks, which
                                                                   the recorder measures), exploration
  08_init           make_env, make_policy                          -
  09_loss           compute_advantages (a sequence learner:        -
                    compute_lambda_returns), compute_loss,
                    make_env, make_policy (with the interface
                    below);
                    train(env_fn=), checkpoints, load_checkpoint
                    for the probe environments; off-policy:
                    compute_td_targets (target_networks to tell
                    target from online), compute_td_loss
  10_spaces         make_env, make_policy, load_checkpoint         -
  11_rewards        config, make_env                               -
  12_memory         config, make_env; train                        nothing: the recorder samples memory on
                                                                   its own (sample_memory adds samples);
                                                                   off-policy: replay (the replay buffer)
  13_seeding        config, train, make_env, make_policy            episode (the primary metric's spread
                                                                   over seeds)
  14_config         config (config(overrides=) for the override    -
                    check), config_keys
  15_summary        config(overrides=), train, metrics             episode (or the declared metric)

The primary metric (the learning gap every audit and the summary measure) is the episodic return you pass
to recorder.episode(**{"return": r}) unless metrics() declares another; `rlaudit report --metric NAME`
overrides it. recorder.episode alone is enough for every audit that needs returns; only the logging
audit's check of the logged return reads a logged `charts/episodic_return`.

Off-policy learners (DQN, SAC, TD3, anything with a replay buffer or target networks) add three capabilities,
target_networks, compute_td_targets and compute_td_loss (below), and four recorder calls in train(): update, target_update,
exploration, replay. A check that reads them is SKIPPED on an on-policy subject, naming what is missing.

Sequence learners (Dreamer-style world-model actor-critics that learn from replayed fixed-length sequences)
offer compute_lambda_returns instead of compute_advantages: the loss audit reads their lambda returns against
the same reference estimator and names the mistake (case 003's V(s_t) bootstrap) or the gamma and lambda used.

The policy interface the loss checks drive (CleanRL's): policy.get_action_and_value(obs, action=None) ->
(action, logprob, entropy, value) on a batch, and policy.get_value(obs) -> value. A policy without it still
gets the advantage, loss-term and gradient checks on a shared batch.
"""

from __future__ import annotations

# from pathlib import Path
# from typing import Any
#
# HERE = Path(__file__).resolve().parent


# def config(overrides: list[str] | None = None) -> dict:
#     """The fully resolved training config, exactly as your trainer uses it.
#
#     Must return a JSON-serializable dict (nesting allowed): numbers, strings, booleans, None, lists,
#     dicts. Resolve everything: interpolations, defaults your code fills in, values derived at startup.
#     A value left out here cannot be compared; a default applied silently is what the config audit hunts.
#
#     overrides: Hydra-style strings "dotted.key=value" (value in YAML syntax, e.g. "trainer.lr=3e-4").
#     Accept it if your config mechanism can apply overrides: attribution uses it to restore one
#     subsystem's keys to the baseline's values. Helpers for configs you already have:
#         from rlaudit.adapters.configs import load_config, to_plain, apply_overrides
#         return load_config(HERE / "conf", overrides)                    # a Hydra tree, YAML, JSON, TOML
#         return apply_overrides(to_plain(MyConfig()), overrides)         # a dataclass or pydantic model
#     """
#     raise NotImplementedError


# def make_env(config: dict, seed: int):
#     """The training environment, seeded with `seed`.
#
#     Must return a gymnasium.vector.VectorEnv (preferred: the one train() uses, same wrappers, same
#     number of envs) or a single gymnasium.Env. reset(seed=seed) must make it reproducible.
#     """
#     raise NotImplementedError


# def make_policy(config: dict, observation_space, action_space):
#     """A freshly initialized policy network for these spaces (one environment's spaces, e.g. a vector
#     env's single_observation_space and single_action_space).
#
#     Must return a torch.nn.Module: the same class and initialization train() uses, on the device train()
#     uses (read it from your config; rlaudit's probes move their inputs to the module's device). Seeding is
#     done by rlaudit (torch.manual_seed) before the call.
#     """
#     raise NotImplementedError


# def make_optimizer(config: dict, policy):
#     """The optimizer train() would build for `policy`.
#
#     Must return a torch.optim.Optimizer, or (optimizer, scheduler) when you use a
#     torch.optim.lr_scheduler; rlaudit steps the scheduler to read the learning-rate curve.
#     """
#     raise NotImplementedError


# def compute_advantages(config: dict, rewards, values, dones, next_value):
#     """Your advantage estimator (GAE for PPO) on a given rollout.
#
#     rewards, values, dones: float32 numpy arrays of shape (T, N) (T steps, N envs); dones[t] is 1 where
#     the episode ended at step t (after acting in s_t: no bootstrap from s_{t+1}). next_value: (N,), V(s_T).
#     Must return (advantages, returns), both (T, N), numpy or torch.
#     """
#     raise NotImplementedError


# def compute_lambda_returns(config: dict, rewards, values, continues, bootstrap):
#     """A sequence learner's lambda returns (instead of compute_advantages): what your critic and actor
#     regress on for a batch of replayed sequences (T steps, B sequences), gamma and lambda from your config.
#
#     rewards, values, continues: float32 numpy arrays (T, B); values[t] is V(s_t); continues[t] is 1 when the
#     episode continues after step t and 0 when it ended there (a learned continue probability is replaced by
#     these flags; multiply by your own gamma). bootstrap: (B,), V of the state after the last step.
#     Must return the returns, (T, B), numpy or torch:
#         G_t = r_t + gamma * continues_t * ((1 - lambda) * V(s_t+1) + lambda * G_t+1),  G_T = bootstrap,
#     computed by your own code. If your code returns T - 1 returns (its last state only bootstraps), pass it
#     values + [bootstrap] as the T + 1 states so that it returns T. There are no truncation flags: a
#     time-limit cut arrives as continues 0 with gamma * V(final state) already added to its reward.
#     """
#     raise NotImplementedError


# def compute_loss(config: dict, policy, batch: dict):
#     """Your training loss on one minibatch.
#
#     batch: torch tensors: "obs" (B, ...) float32, "actions" (B,) int64 for discrete actions or
#     (B, action_dim) float32 for continuous ones, "logprobs" (B,) behaviour log-probabilities,
#     "advantages" (B,), "returns" (B,), "values" (B,) behaviour values.
#     Must return a dict of scalar tensors with key "loss" (the one you call backward() on), and
#     "policy_loss", "value_loss", "entropy" when your loss has them.
#     """
#     raise NotImplementedError


# def target_networks(config: dict, policy) -> dict:
#     """Off-policy learners: which modules of `policy` (what make_policy returns) are target networks.
#
#     Must return {target parameter-name prefix: online prefix} over policy.named_parameters(), e.g.
#     {"q_net_target": "q_net"} (DQN) or {"critic_target": "critic", "actor_target": "actor"} (TD3).
#     The optimizer audit then measures how the target follows the online network (hard copy every N
#     gradient steps, or Polyak tau) and never reports the target's parameters as frozen.
#     """
#     raise NotImplementedError


# def compute_td_targets(config: dict, policy, batch: dict) -> dict:
#     """Off-policy learners: the targets your critic regresses on, for a batch, computed exactly as the
#     training step does, with the target networks as they are inside `policy` (rlaudit perturbs them to
#     learn which network gives the bootstrap).
#
#     batch: numpy arrays with leading dim B: "obs", "actions", "rewards" (B,), "next_obs", "terminated"
#     (B,) bool, "truncated" (B,) bool (a time limit: next_obs is the episode's final observation), and
#     "seed" (int) for stochastic targets (SAC's next-action sample).
#     Must return {"targets": (B,)}; add "bootstrap": (B,), the next-state value before discount and mask,
#     so the loss audit can read your discount. Actor-critics with several critics add "next_q":
#     (B, n_critics), each target critic's value of the next action (the audit names the reduction: min,
#     mean, one critic), and SAC adds "next_log_prob": (B,), log pi of that action, and "ent_coef", the
#     temperature alpha in use (the audit checks the bootstrap's -alpha * log pi term). Sequence learners
#     (lambda returns) return "targets" (T, B) for (T, B) inputs.
#     """
#     raise NotImplementedError


# def compute_td_loss(config: dict, policy, batch: dict, targets) -> float:
#     """Off-policy learners: the critic loss your training step minimises on `batch` against `targets`,
#     computed exactly as the training step does (the same loss function on the TD error, Huber or squared,
#     and the same reduction: mean or sum over the batch, a 0.5 factor, every critic's loss summed).
#
#     batch: as for compute_td_targets (read "obs" and "actions"); targets: (B,) numpy array, what the critic
#     regresses on (rlaudit passes your own targets shifted by a constant, to read the loss's form).
#     Must return the loss as a float (or a 0-d tensor). No gradient is needed.
#     """
#     raise NotImplementedError


# def make_curriculum(config: dict):
#     """Your task curriculum, if you have one.
#
#     Must return an object with sample() -> task and update(task, score) -> None.
#     """
#     raise NotImplementedError


# def train(config: dict, steps: int, seed: int, recorder, env_fn=None, resume_from=None):
#     """Train for `steps` environment steps (all envs together) from seed `seed`.
#
#     `seed` wins over any seed in the config: rlaudit trains several seeds of one config.
#     Report through `recorder` (rlaudit.recorder.Recorder):
#         recorder.watch(policy, optimizer)          once, right after building them: records the
#                                                    effective learning rate, grad norms (before and after
#                                                    clipping) and per-layer update ratios at runtime
#         recorder.episode(step=step, env=i, **{"return": r, "length": n})
#                                                    each finished episode ("return" is a Python keyword,
#                                                    hence the dict); add any other statistic by name
#                                                    (**{"heart.get": 3}). This alone feeds every audit
#                                                    that needs returns.
#         recorder.log(step, **scalars)              e.g. **{"losses/value_loss": v, "perf/sps": sps};
#                                                    call recorder.log(step) (scalars optional) after each
#                                                    rollout, before its update: the optimizer steps that
#                                                    follow are stamped with that env step (the trainer
#                                                    audit's batch geometry reads them)
#         with recorder.phase("rollout"): ...        time your phases, with your own names (nested
#                                                    phases are recorded as "rollout/env")
#         recorder.sample_memory(step)               optional: the recorder samples memory on its own
#         recorder.minibatch(epoch, indices)         optional: the sample indices of each minibatch
#     Off-policy learners also report:
#         recorder.update(step, gradient_steps=n, batch_size=b, actor_updates=k)
#                                                    after each training phase: n gradient steps at env
#                                                    step `step` (replay ratio, learning_starts, train_freq);
#                                                    actor-critics add k, the actor's optimizer steps among
#                                                    them (TD3 delays them: n / policy_delay)
#         recorder.target_update(step, gradient_step, tau=1.0)
#                                                    each target-network update (1.0: hard copy); with
#                                                    target_networks the recorder measures them itself
#         recorder.exploration(step, epsilon=e, alpha=a, target_entropy=h, action_noise=s)
#                                                    the exploration parameters in force (any of them;
#                                                    s: σ of the noise TD3 or DDPG adds to actions)
#         recorder.replay(step, size, capacity, nbytes=n, ages=step - inserted_at[idx])
#                                                    the replay buffer, and the ages of a sampled batch
#     Write your own logs and checkpoints under recorder.run_dir (e.g. recorder.run_dir / "tb" and
#     recorder.run_dir / "checkpoints") so the logging and checkpointing audits can find them.
#
#     Optional keyword arguments (declare those you support): env_fn is passed only to a train() that
#     declares it; a train() without resume_from is reported as not resumable.
#     env_fn: a callable env_fn(num_envs: int, seed: int) -> gymnasium.vector.VectorEnv that replaces your
#         environment: call it where you would build yours, with your own number of environments and the
#         run's seed, and build the policy from its single_observation_space / single_action_space. The
#         loss audit passes its probe environments this way (Box observations of shape (1,), Discrete(1)
#         or Discrete(2) actions, episodes of one or two steps, same-step autoreset with the final
#         observation and episode statistics in the installed Gymnasium's layout: info["final_info"]
#         under 0.29, info["episode"] and info["final_info"] under 1.x). load_checkpoint must then rebuild
#         the policy from what the checkpoint holds, not from make_env.
#     resume_from: a checkpoint path (one checkpoints() listed); continue that run from it.
#     May return a small dict summary; the recorder's tables are what rlaudit reads.
#     """
#     raise NotImplementedError


# def checkpoints(config: dict, run_dir=None) -> list[str]:
#     """Checkpoint paths in the order your code would pick them (the one it loads first, first).
#
#     With run_dir: the checkpoints train() wrote under that run directory. Without: those your config
#     points at. Must return a list of strings (possibly empty).
#     """
#     raise NotImplementedError


# def load_checkpoint(config: dict, path: str):
#     """Load a checkpoint the way your code does when it resumes or evaluates.
#
#     Must return (policy, extras): the torch.nn.Module with the weights loaded (on your training device), and
#     a dict that may hold "obs_rms" ({"mean", "var", "count"}), "optimizer" (its state dict) and "step" (env
#     steps so far).
#     To read checkpoints without running code hidden in pickles:
#         from rlaudit.engine.safeload import load_checkpoint_safely
#     """
#     raise NotImplementedError


# def log_dir(config: dict, run_dir=None) -> str:
#     """The directory with your TensorBoard event files or CSV/JSONL scalar logs.
#
#     With run_dir: that run's (what train() wrote under recorder.run_dir). Must return a path string.
#     """
#     raise NotImplementedError


# def metrics() -> list[dict]:
#     """What "trains worse" is measured by (optional; default: the episodic return from recorder.episode).
#
#     Must return a list of {"name", "direction", "source", "primary"}: name of an episode statistic you
#     pass to recorder.episode ("return", "heart.get") or of a scalar you pass to recorder.log
#     ("charts/success_rate"); direction "higher" or "lower" (is better); source "episode" or "scalar";
#     exactly one with primary True. Example:
#         [{"name": "return", "direction": "higher", "source": "episode", "primary": True},
#          {"name": "losses/value_loss", "direction": "lower", "source": "scalar"}]
#     """
#     raise NotImplementedError


# def total_steps(config: dict) -> int:
#     """How long one of your own training runs is, in environment steps (optional).
#
#     Must return a positive int (all environments together), or None when this config has no fixed length.
#     rlaudit trains no longer than this: a trainer whose learning rate anneals over 50k steps is compared
#     over 50k steps, not the profile's 300k, where both sides may have converged. Example:
#         return int(config["total_timesteps"])
#     """
#     raise NotImplementedError


# def config_keys() -> dict[str, list[str]]:
#     """Which config keys belong to which subsystem (optional; rlaudit guesses from names otherwise).
#
#     Must return {subsystem: [glob patterns over flattened dotted keys]}, subsystems from: agents, trainer,
#     logging, checkpointing, env, curriculum, optimizer, init, loss, spaces, rewards, memory, seeding,
#     config. Example: {"optimizer": ["trainer.lr*", "trainer.adam_*"], "env": ["env.*"]}.
#     """
#     raise NotImplementedError
