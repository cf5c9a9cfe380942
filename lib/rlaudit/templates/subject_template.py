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
* Try it: `python -c "import subject"`, then
  `make report BASELINE=path/to/old/subject.py CANDIDATE=path/to/new/subject.py`.
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
#     """A freshly initialized policy network for these spaces.
#
#     Must return a torch.nn.Module: the same class and initialization train() uses. Seeding is done by
#     rlaudit (torch.manual_seed) before the call.
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
#     rewards, values, dones: arrays of shape (T, N) (T steps, N envs); dones[t] is 1 where the episode
#     ended at step t (after acting in s_t: no bootstrap from s_{t+1}). next_value: (N,), V(s_T).
#     Must return (advantages, returns), both (T, N), numpy or torch.
#     """
#     raise NotImplementedError


# def compute_loss(config: dict, policy, batch: dict):
#     """Your training loss on one minibatch.
#
#     batch: "obs" (B, ...) float, "actions" (B,), "logprobs" (B,) behaviour log-probabilities,
#     "advantages" (B,), "returns" (B,), "values" (B,) behaviour values.
#     Must return a dict of scalar tensors with key "loss" (the one you call backward() on), and
#     "policy_loss", "value_loss", "entropy" when your loss has them.
#     """
#     raise NotImplementedError


# def make_curriculum(config: dict):
#     """Your task curriculum, if you have one.
#
#     Must return an object with sample() -> task and update(task, score) -> None.
#     """
#     raise NotImplementedError


# def train(config: dict, steps: int, seed: int, recorder, **kw):
#     """Train for `steps` environment steps (all envs together) from seed `seed`.
#
#     Report through `recorder` (rlaudit.recorder.Recorder):
#         recorder.watch(policy, optimizer)          once, right after building them: records the
#                                                    effective learning rate, grad norms (before and after
#                                                    clipping) and per-layer update ratios at runtime
#         recorder.log(step, **scalars)              e.g. **{"losses/value_loss": v, "perf/sps": sps}
#         recorder.episode(step=step, env=i, **stats)  each finished episode: return=..., length=...
#         with recorder.phase("rollout"): ...        time the rollout and "update" phases
#     Write your own logs and checkpoints under recorder.run_dir (e.g. recorder.run_dir / "tb" and
#     recorder.run_dir / "checkpoints") so the logging and checkpointing audits can find them.
#     Optional keyword arguments: resume_from=<checkpoint path> (continue that run), env_fn=<callable>.
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
#     Must return (policy, extras): the torch.nn.Module with the weights loaded, and a dict that may hold
#     "obs_rms" ({"mean", "var", "count"}), "optimizer" (its state dict) and "step" (env steps so far).
#     To read checkpoints without running code hidden in pickles:
#         from rlaudit.safeload import load_checkpoint_safely
#     """
#     raise NotImplementedError


# def log_dir(config: dict, run_dir=None) -> str:
#     """The directory with your TensorBoard event files or CSV/JSONL scalar logs.
#
#     With run_dir: that run's (what train() wrote under recorder.run_dir). Must return a path string.
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
