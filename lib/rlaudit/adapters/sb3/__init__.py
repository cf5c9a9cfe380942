"""``sb3:<file.yaml>``: a Stable-Baselines3 setup, described in rl-zoo style, as an rlaudit subject.

The YAML file names the algorithm, the Gymnasium environment and the hyperparameters the way rl-baselines3-zoo
writes them (``learning_rate: lin_0.001``, ``policy_kwargs: "dict(net_arch=[64, 64])"``), plus optional
artifacts the user already has::

    algo: ppo                       # ppo | a2c | dqn | sac | td3 | ddpg
    env_id: CartPole-v1
    n_envs: 8
    n_timesteps: 100000             # the run length the setup was tuned for
    policy: MlpPolicy
    normalize: false                # true, or {norm_obs: true, norm_reward: false, ...} (VecNormalize)
    n_steps: 32                     # ... any keyword argument of the algorithm's __init__
    learning_rate: lin_0.001
    policy_kwargs: {net_arch: [64, 64], activation_fn: tanh}
    models: [runs/ppo_final.zip]    # existing model zips (checkpoints), optional
    tensorboard_log: runs/tb        # existing TensorBoard directory, optional

An rl-zoo hyperparameter file keyed by the environment id (``CartPole-v1: {...}``) works too, with ``algo:``
beside it (or the algorithm as the file's name, ``ppo.yml``). Unknown keys are an error that lists the known
ones. Relative paths resolve against the YAML file's directory.

:class:`SB3Subject` implements the subject contract with SB3's own code paths: ``config()`` is the setup with
every omitted hyperparameter filled in from the algorithm's (and policy's, and VecNormalize's) ``__init__``
defaults, so a key left out shows SB3's default; ``train`` runs ``model.learn`` with a callback that feeds the
recorder (``recorder.watch(model.policy, optimizer)``, episodes from the Monitor infos, scalars from SB3's
logger); ``make_env`` wraps SB3's VecEnv stack (Monitor, VecNormalize) in the Gymnasium vector API;
``load_checkpoint`` reads model zips without unpickling (:mod:`rlaudit.engine.safeload`). For PPO and A2C,
``compute_advantages`` is SB3's own GAE and ``compute_loss`` re-derives the loss that ``train()`` writes inline
(SB3 has no loss function to call) from ``policy.evaluate_actions`` and the resolved hyperparameters. For DQN,
SAC, TD3 and DDPG, ``target_networks`` names the target modules, ``compute_td_targets`` re-derives the critic's
targets of each ``train()``, ``compute_td_loss`` its critic loss against given targets, and a run feeds the recorder's off-policy tables (gradient steps, target-network
updates, epsilon and alpha, replay fill and sample ages).

Modules: :mod:`~rlaudit.adapters.sb3.setup` (reading and resolving the file),
:mod:`~rlaudit.adapters.sb3.runtime` (SB3 objects, the environment wrapper, the recorder's callback and
logger), :mod:`~rlaudit.adapters.sb3.loss` (GAE and the loss, as SB3 computes them inline),
:mod:`~rlaudit.adapters.sb3.offpolicy` (TD targets, target networks and the recorder's off-policy tables),
:mod:`~rlaudit.adapters.sb3.subject` (the subject).
"""

from __future__ import annotations

from rlaudit.adapters.sb3.loss import compute_advantages, compute_loss
from rlaudit.adapters.sb3.runtime import SB3_SCALAR_NAMES, SB3VectorEnv, make_vec_env, rename_scalars
from rlaudit.adapters.sb3.setup import (
    ALGORITHMS,
    ON_POLICY,
    SETUP_KEYS,
    SB3SetupError,
    hyperparameter_defaults,
    read_setup,
    resolve_class,
    resolve_setup,
)
from rlaudit.adapters.sb3.subject import SB3Subject, load

__all__ = [
    "ALGORITHMS",
    "ON_POLICY",
    "SB3_SCALAR_NAMES",
    "SETUP_KEYS",
    "SB3SetupError",
    "SB3Subject",
    "SB3VectorEnv",
    "compute_advantages",
    "compute_loss",
    "hyperparameter_defaults",
    "load",
    "make_vec_env",
    "read_setup",
    "rename_scalars",
    "resolve_class",
    "resolve_setup",
]
