"""A DQN on the arena, written to be read top to bottom (in the spirit of CleanRL's ``dqn.py``).

The built-in off-policy subject (``builtin:dqn``): an ε-greedy Q-network learns from a uniform replay buffer,
regressing ``Q(s, a)`` on the one-step TD target ``r + γ (1 - terminated) max_a' Q_target(s', a')`` with a
Huber loss; the target network is a hard copy of the online one every ``target_update_interval`` gradient
steps (or a Polyak average when ``tau < 1``). Truncated episodes (the arena only truncates) bootstrap from
their final observation.

:class:`DQNImpl` holds the code paths the fault catalog (:data:`rlaudit.demo.dqn_faults.FAULTS`) switches:
regressions drawn from the case files and from what moves off-policy results (case 003's bootstrap off by
one, a dropped done mask, a squared error where the Huber loss belonged, a target network never or always
updated, replay sampling biased to the newest transitions, ε stuck at its start, a replay ratio changed in
code). The config is untouched by them, so only runtime behaviour and the subject's own ``compute_td_targets``
and ``compute_td_loss`` give them away.

``trainer.device`` puts the networks and the gradient steps on a device (``cpu``, ``cuda``, ``cuda:N``, ``auto``);
the environments and the replay buffer stay in host memory, and each sampled batch moves to the device.

Everything the training loop reports goes through the recorder: episodes, optimizer steps (``watch``),
gradient steps against env steps (``update``), target-network copies (``target_update``), ε
(``exploration``) and the replay buffer with the ages of sampled transitions (``replay``).
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from rlaudit.devices import is_cuda, module_device, resolve_device, to_device, to_numpy

# -- configuration ---------------------------------------------------------------------------------------------


def default_config() -> dict[str, Any]:
    """The DQN recipe as a nested dict (the arena's own map, no curriculum)."""
    from rlaudit.demo.config import DemoConfig

    env = DemoConfig().to_dict()["env"]
    return {
        "env": env,
        "curriculum": {"kind": "none"},
        "agent": {"hidden_size": 64, "num_layers": 2},
        "trainer": {
            "total_steps": 30_000,  # the run's length, all environments together
            "num_envs": 4,
            "buffer_size": 20_000,  # replay capacity, in transitions
            "learning_starts": 1_000,  # env steps of random play before the first gradient step
            "train_freq": 8,  # env steps between two training phases (all envs together)
            "gradient_steps": 1,  # gradient steps per training phase
            "batch_size": 64,
            "gamma": 0.95,
            "double_q": False,
            "target_update_interval": 100,  # gradient steps between two hard copies (tau == 1)
            "tau": 1.0,  # Polyak coefficient; 1.0 is a hard copy
            "start_e": 1.0,
            "end_e": 0.05,
            "exploration_fraction": 0.4,  # share of the run over which ε decays linearly
            "max_grad_norm": 10.0,
            "torch_threads": 1,
            "device": "cpu",  # torch device of the networks and the gradient steps: cpu, cuda, cuda:N or auto
        },
        "optimizer": {"lr": 5e-4, "eps": 1e-8},
        "logging": {"run_dir": "", "log_every": 2_000},
    }


CONFIG_KEYS: dict[str, list[str]] = {
    "rewards": ["env.rewards.*", "env.time_penalty"],
    "spaces": ["env.frame_stack", "env.obs_*"],
    "curriculum": ["curriculum.*"],
    "env": ["env.*"],
    "agents": ["agent.*"],
    "loss": ["trainer.gamma", "trainer.double_q"],
    "optimizer": [
        "optimizer.*",
        "trainer.max_grad_norm",
        "trainer.target_update_interval",
        "trainer.tau",
        "trainer.start_e",
        "trainer.end_e",
        "trainer.exploration_fraction",
    ],
    "memory": ["trainer.buffer_size", "trainer.torch_threads"],
    "trainer": ["trainer.*"],
    "logging": ["logging.*"],
}
"""Which flattened config keys belong to which audited subsystem (first matching pattern wins)."""


def resolve_config(overrides: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The default config with ``dotted.key=value`` overrides (values parsed as Hydra parses them)."""
    from rlaudit.demo.pyconfig import apply_overrides

    config = apply_overrides(default_config(), overrides)
    trainer = config["trainer"]
    for key in (
        "num_envs",
        "buffer_size",
        "batch_size",
        "train_freq",
        "gradient_steps",
        "target_update_interval",
    ):
        if not isinstance(trainer[key], int) or isinstance(trainer[key], bool) or trainer[key] < 1:
            raise ValueError(f"trainer.{key} must be an integer >= 1, got {trainer[key]!r}")
    if not 0.0 < float(trainer["tau"]) <= 1.0:
        raise ValueError(f"trainer.tau must be in (0, 1] (1 is a hard copy), got {trainer['tau']!r}")
    return config


@dataclass(frozen=True)
class DQNImpl:
    """Code paths of the DQN trainer. The defaults are the correct behaviour."""

    # Case 003: the bootstrap value is read at s_t where s_{t+1} belonged (max_a Q_target(s_t, a)).
    bootstrap_from_current: bool = False
    # The (1 - terminated) factor is gone: terminal transitions bootstrap as if the episode went on.
    drop_done_mask: bool = False
    # The copy into the target network was lost in a refactor: it keeps its initial weights.
    target_never_updated: bool = False
    # The target network is copied after every gradient step (it is the online network, one step late).
    target_every_step: bool = False
    # Batches are drawn from the newest transitions only (a ring-buffer index bug).
    replay_recent_only: bool = False
    # ε is computed from a progress that never advances: it stays at its start value.
    epsilon_stuck: bool = False
    # Gradient steps per training phase hard-coded in the loop, whatever the config says (0: the config's).
    gradient_steps_in_code: int = 0
    # The TD error's Huber loss was replaced by a squared error (MSE): large errors pull quadratically.
    td_loss_mse: bool = False


REPLAY_EVERY = 10
"""The replay buffer is reported every ``REPLAY_EVERY`` training phases (the first one included)."""
RECENT_WINDOW = 4
"""``replay_recent_only`` draws from the newest ``RECENT_WINDOW * batch_size`` transitions."""


# -- the network -------------------------------------------------------------------------------------------------


class QNetwork(nn.Module):
    """An MLP from observations to one Q-value per action."""

    def __init__(self, obs_dim: int, n_actions: int, hidden_size: int, num_layers: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = obs_dim
        for _ in range(num_layers):
            layers += [nn.Linear(width, hidden_size), nn.ReLU()]
            width = hidden_size
        layers.append(nn.Linear(width, n_actions))
        self.net = nn.Sequential(*layers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)


class DQNPolicy(nn.Module):
    """The online Q-network and its target network, one module (what ``make_policy`` returns)."""

    def __init__(self, obs_dim: int, n_actions: int, hidden_size: int, num_layers: int) -> None:
        super().__init__()
        self.q_net = QNetwork(obs_dim, n_actions, hidden_size, num_layers)
        self.q_net_target = copy.deepcopy(self.q_net)
        self.n_actions = n_actions

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.q_net(obs)

    @torch.no_grad()
    def act(self, obs: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
        """ε-greedy actions for a batch of observations."""
        q = self.q_net(to_device(obs, module_device(self.q_net), torch.float32))
        greedy = to_numpy(q.argmax(dim=1))
        explore = rng.random(len(obs)) < epsilon
        return np.where(explore, rng.integers(0, self.n_actions, len(obs)), greedy)


def make_policy(config: Mapping[str, Any], observation_space: Any, action_space: Any) -> DQNPolicy:
    """The policy for the given single-environment spaces, on ``trainer.device`` (uses torch's global RNG for
    its init)."""
    shape = getattr(observation_space, "shape", None)
    n = getattr(action_space, "n", None)
    if not shape or n is None:
        raise TypeError(
            f"the DQN needs a Box observation space and a Discrete action space, got {observation_space!r} "
            f"and {action_space!r}"
        )
    agent = config["agent"]
    policy = DQNPolicy(int(np.prod(shape)), int(n), int(agent["hidden_size"]), int(agent["num_layers"]))
    return policy.to(resolve_device(config["trainer"].get("device", "cpu")))


def make_optimizer(config: Mapping[str, Any], policy: DQNPolicy) -> torch.optim.Optimizer:
    """Adam over the online network only (the target network follows by copies, never by gradients)."""
    section = config["optimizer"]
    # the fused kernel does Adam's arithmetic in one call instead of a Python loop over the tensors
    return torch.optim.Adam(
        policy.q_net.parameters(), lr=float(section["lr"]), eps=float(section["eps"]), fused=True
    )


def target_networks(config: Mapping[str, Any], policy: DQNPolicy) -> dict[str, str]:
    return {"q_net_target": "q_net"}


# -- the TD target -----------------------------------------------------------------------------------------------


def td_targets(
    policy: DQNPolicy,
    obs: torch.Tensor,
    rewards: torch.Tensor,
    next_obs: torch.Tensor,
    terminated: torch.Tensor,
    gamma: float,
    double_q: bool,
    impl: DQNImpl,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(targets, bootstrap)``: the one-step TD targets and the next-state values they bootstrap from.

    Truncated transitions are not terminal: their ``next_obs`` is the episode's final observation and they
    bootstrap from it like any other.
    """
    with torch.no_grad():
        bootstrap_obs = obs if impl.bootstrap_from_current else next_obs
        target_q = policy.q_net_target(bootstrap_obs)
        if double_q:
            best = policy.q_net(bootstrap_obs).argmax(dim=1, keepdim=True)
            bootstrap = target_q.gather(1, best).squeeze(1)
        else:
            bootstrap = target_q.max(dim=1).values
        mask = torch.ones_like(rewards) if impl.drop_done_mask else 1.0 - terminated.float()
        return rewards + gamma * mask * bootstrap, bootstrap


def compute_td_targets(
    config: Mapping[str, Any], policy: DQNPolicy, batch: Mapping[str, Any], *, impl: DQNImpl
) -> dict[str, np.ndarray]:
    """The subject capability: the targets of :func:`td_targets` for a batch of numpy arrays (computed on the
    policy's device, returned as numpy)."""
    trainer = config["trainer"]
    device = module_device(policy)

    def tensor(name: str) -> torch.Tensor:
        return to_device(np.asarray(batch[name]), device, torch.float32)

    targets, bootstrap = td_targets(
        policy,
        tensor("obs"),
        tensor("rewards"),
        tensor("next_obs"),
        tensor("terminated"),
        float(trainer["gamma"]),
        bool(trainer["double_q"]),
        impl,
    )
    return {"targets": to_numpy(targets), "bootstrap": to_numpy(bootstrap)}


# -- the loss on the TD error -----------------------------------------------------------------------------------


def q_taken(policy: DQNPolicy, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``Q(s, a)`` of the online network for the actions taken."""
    return policy.q_net(obs).gather(1, actions.long().reshape(-1, 1)).squeeze(1)


def td_loss(q: torch.Tensor, targets: torch.Tensor, impl: DQNImpl) -> torch.Tensor:
    """The critic's loss on the TD error: Huber (smooth L1, threshold 1), averaged over the batch."""
    if impl.td_loss_mse:
        return F.mse_loss(q, targets)
    return F.smooth_l1_loss(q, targets)


def compute_td_loss(
    config: Mapping[str, Any], policy: DQNPolicy, batch: Mapping[str, Any], targets: Any, *, impl: DQNImpl
) -> float:
    """The subject capability: the loss a gradient step minimises on ``batch`` against ``targets`` (B,)."""
    device = module_device(policy)
    obs = to_device(np.asarray(batch["obs"]), device, torch.float32)
    actions = to_device(np.asarray(batch["actions"]), device, torch.long)
    goal = to_device(np.asarray(targets), device, torch.float32).reshape(-1)
    with torch.no_grad():
        return float(td_loss(q_taken(policy, obs, actions), goal, impl))


# -- the replay buffer -------------------------------------------------------------------------------------------


class ReplayBuffer:
    """A ring buffer of transitions, with the env step each one was inserted at (for the ages of samples)."""

    def __init__(self, capacity: int, obs_dim: int) -> None:
        self.capacity = int(capacity)
        self.obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), dtype=np.float32)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=bool)
        self.inserted = np.zeros(capacity, dtype=np.int64)
        self.pos = 0
        self.size = 0

    @property
    def nbytes(self) -> int:
        arrays = (self.obs, self.next_obs, self.actions, self.rewards, self.terminated, self.inserted)
        return int(sum(a.nbytes for a in arrays))

    def add(self, obs, next_obs, actions, rewards, terminated, step: int) -> None:
        """Store one vector step's transitions (one row per environment), overwriting the oldest."""
        rows = (self.pos + np.arange(len(obs))) % self.capacity
        self.obs[rows], self.next_obs[rows] = obs, next_obs
        self.actions[rows], self.rewards[rows], self.terminated[rows] = actions, rewards, terminated
        self.inserted[rows] = step
        self.pos = int(rows[-1] + 1) % self.capacity
        self.size = min(self.size + len(obs), self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator, impl: DQNImpl) -> np.ndarray:
        """Indices of a batch: uniform over what the buffer holds."""
        if impl.replay_recent_only:
            window = min(self.size, RECENT_WINDOW * batch_size)
            return (self.pos - 1 - rng.integers(0, window, batch_size)) % self.capacity
        return rng.integers(0, self.size, batch_size)


# -- training ----------------------------------------------------------------------------------------------------


def epsilon_at(trainer: Mapping[str, Any], step: int, total: int, impl: DQNImpl) -> float:
    """Linear decay from ``start_e`` to ``end_e`` over ``exploration_fraction`` of the run."""
    start, end = float(trainer["start_e"]), float(trainer["end_e"])
    progress = 0 if impl.epsilon_stuck else step
    span = max(1.0, float(trainer["exploration_fraction"]) * total)
    return max(end, start + (end - start) * progress / span)


def make_envs(config: Mapping[str, Any], seed: int, arena_impl: Any = None):
    from rlaudit.demo.arena import make_arena

    return make_arena(dict(config), int(config["trainer"]["num_envs"]), seed, impl=arena_impl)


def train(
    config: Mapping[str, Any],
    steps: int,
    seed: int,
    recorder: Any = None,
    *,
    impl: DQNImpl,
    arena_impl: Any = None,
    env_fn: Callable[..., Any] | None = None,
) -> dict[str, Any]:
    """Train for ``steps`` environment steps (all environments together) and return a summary.

    On CUDA torch's deterministic algorithms are switched on (warn-only) for the run, with cuBLAS's workspace
    setting, so that a seed repeats its run on the same card."""
    from rlaudit.recorder import NullRecorder

    tc = config["trainer"]
    rec = recorder if recorder is not None else NullRecorder()
    device = resolve_device(tc.get("device", "cpu"))
    prev_threads = torch.get_num_threads()
    prev_deterministic = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    torch.set_num_threads(int(tc["torch_threads"]))
    if is_cuda(device):
        # cuBLAS reads its workspace setting when it first runs; with it, matmuls repeat bit for bit
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    envs = env_fn(int(tc["num_envs"]), seed) if env_fn is not None else make_envs(config, seed, arena_impl)
    try:
        num_envs = envs.num_envs
        policy = make_policy(config, envs.single_observation_space, envs.single_action_space)
        optimizer = make_optimizer(config, policy)
        rec.watch(policy, optimizer)
        buffer = ReplayBuffer(int(tc["buffer_size"]), int(np.prod(envs.single_observation_space.shape)))
        gradient_steps = impl.gradient_steps_in_code or int(tc["gradient_steps"])
        gamma, double_q, tau = float(tc["gamma"]), bool(tc["double_q"]), float(tc["tau"])
        batch_size, interval = int(tc["batch_size"]), int(tc["target_update_interval"])
        pop_episodes = getattr(envs, "pop_episodes", None)
        returns = np.zeros(num_envs)
        lengths = np.zeros(num_envs, dtype=np.int64)
        finished_returns: list[float] = []
        updates, phases, losses = 0, 0, []
        obs, _ = envs.reset(seed=seed)
        global_step, next_train = 0, int(tc["learning_starts"])
        start = time.perf_counter()
        while global_step < steps:
            # -- act and store
            with rec.phase("rollout"):
                epsilon = epsilon_at(tc, global_step, steps, impl)
                if global_step < int(tc["learning_starts"]):
                    actions = rng.integers(0, envs.single_action_space.n, num_envs)
                else:
                    actions = policy.act(obs, epsilon, rng)
                next_obs, rewards, terminated, truncated, info = envs.step(actions)
                global_step += num_envs
                rec.log(global_step)
                done = terminated | truncated
                # the transition's next state is the episode's last observation, not the reset one
                real_next = next_obs.copy()
                if done.any() and "final_obs" in info:
                    ended = np.flatnonzero(info["_final_obs"])
                    real_next[ended] = np.stack([np.asarray(info["final_obs"][i]) for i in ended])
                buffer.add(obs, real_next, actions, rewards, terminated, global_step)
                obs = next_obs
                returns += rewards
                lengths += 1
                if done.any():
                    finished_returns += _record_episodes(
                        rec, global_step, done, returns, lengths, pop_episodes
                    )
                    returns[done], lengths[done] = 0.0, 0
            # -- learn
            if global_step < next_train:
                continue
            next_train = global_step + int(tc["train_freq"])
            rec.exploration(global_step, epsilon=epsilon)
            with rec.phase("learn"):
                for _ in range(gradient_steps):
                    idx = buffer.sample(batch_size, rng, impl)
                    b_obs = torch.from_numpy(buffer.obs[idx]).to(device)
                    targets, _ = td_targets(
                        policy,
                        b_obs,
                        torch.from_numpy(buffer.rewards[idx]).to(device),
                        torch.from_numpy(buffer.next_obs[idx]).to(device),
                        torch.from_numpy(buffer.terminated[idx]).to(device),
                        gamma,
                        double_q,
                        impl,
                    )
                    q = q_taken(policy, b_obs, torch.from_numpy(buffer.actions[idx]).to(device))
                    loss = td_loss(q, targets, impl)
                    optimizer.zero_grad()
                    loss.backward()
                    nn.utils.clip_grad_norm_(policy.q_net.parameters(), float(tc["max_grad_norm"]))
                    optimizer.step()
                    updates += 1
                    losses.append(loss.detach())  # read back every few hundred steps, not at each one
                    # -- the target network
                    if impl.target_never_updated:
                        pass
                    elif impl.target_every_step or (tau == 1.0 and updates % interval == 0):
                        policy.q_net_target.load_state_dict(policy.q_net.state_dict())
                        rec.target_update(global_step, updates, 1.0)
                    elif tau < 1.0:
                        with torch.no_grad():
                            for t, o in zip(
                                policy.q_net_target.parameters(), policy.q_net.parameters(), strict=True
                            ):
                                t.mul_(1.0 - tau).add_(o, alpha=tau)
                        rec.target_update(global_step, updates, tau)
            rec.update(global_step, gradient_steps, batch_size)
            phases += 1
            if phases % REPLAY_EVERY == 1:  # the buffer and the ages of the last batch, every few phases
                ages = global_step - buffer.inserted[idx]
                rec.replay(
                    global_step, buffer.size, buffer.capacity, buffer.nbytes, ages=ages, prioritized=False
                )
            if updates % 250 < gradient_steps:
                losses = losses[-250:]
                td = float(torch.stack(losses).mean()) if losses else float("nan")
                rec.log(global_step, **{"losses/td_loss": td, "charts/epsilon": epsilon})
        seconds = time.perf_counter() - start
        return {
            "steps": global_step,
            "updates": updates,
            "sps": global_step / seconds if seconds > 0 else 0.0,
            "episodes": len(finished_returns),
            "final_return": float(np.mean(finished_returns[-20:])) if finished_returns else None,
            "num_envs": num_envs,
            "batch_size": batch_size,
        }
    finally:
        envs.close()
        torch.set_num_threads(prev_threads)
        torch.use_deterministic_algorithms(prev_deterministic[0], warn_only=prev_deterministic[1])


def _record_episodes(rec, step, done, returns, lengths, pop_episodes) -> list[float]:
    """One ``recorder.episode`` per finished episode (the arena's own statistics when it keeps them)."""
    if pop_episodes is not None:
        episodes = pop_episodes()
        names = {"r": "return", "l": "length"}
        keys = [k for k in episodes if k not in ("vector_step", "env")]
        for i in range(len(episodes["env"])):
            stats = {names.get(k, k): episodes[k][i].item() for k in keys}
            rec.episode(step=step, env=int(episodes["env"][i]), **stats)
        return [float(r) for r in episodes["r"]]
    for env in np.flatnonzero(done):
        rec.episode(step=step, env=int(env), **{"return": float(returns[env]), "length": int(lengths[env])})
    return [float(returns[env]) for env in np.flatnonzero(done)]
