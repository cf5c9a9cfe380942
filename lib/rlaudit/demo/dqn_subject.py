"""The built-in off-policy subjects: ``builtin:dqn`` and ``builtin:dqn+<fault>[,<fault>...]``.

A DQN of its own (:mod:`rlaudit.demo.dqn`) on the arena, exposing the off-policy capabilities of the subject
contract (``target_networks``, ``compute_td_targets``, ``compute_td_loss``) besides the usual ones, with its own fault catalog
(:data:`FAULTS`): each a code path switched in :class:`rlaudit.demo.dqn.DQNImpl`, never a config change or a
marker an audit could read. ``rlaudit faults`` lists the PPO catalog; this one is listed here and in the
README's "Off-policy learners".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Any

from rlaudit.demo.faults import Fault

FAULTS: list[Fault] = [
    Fault(
        "loss.bootstrap_off_by_one",
        "loss",
        "The TD target bootstraps from max_a Q_target(s_t, a) where s_{t+1} belonged (case 003's V(s_t)).",
        "003",
        "code",
        "learning",
        dqn={"bootstrap_from_current": True},
    ),
    Fault(
        "loss.done_mask_dropped",
        "loss",
        "The (1 - terminated) factor of the TD target is gone: terminal transitions bootstrap.",
        "-",
        "code",
        "learning",
        dqn={"drop_done_mask": True},
    ),
    Fault(
        "loss.td_mse",
        "loss",
        "The TD error's Huber loss (smooth L1) was replaced by a squared error: large errors pull quadratically.",
        "-",
        "code",
        "learning",
        dqn={"td_loss_mse": True},
    ),
    Fault(
        "optimizer.target_never_updated",
        "optimizer",
        "The copy into the target network was lost: it keeps its initial weights for the whole run.",
        "-",
        "code",
        "learning",
        dqn={"target_never_updated": True},
    ),
    Fault(
        "optimizer.target_every_step",
        "optimizer",
        "The target network is copied after every gradient step instead of every target_update_interval.",
        "-",
        "code",
        "learning",
        dqn={"target_every_step": True},
    ),
    Fault(
        "optimizer.epsilon_stuck",
        "optimizer",
        "ε is computed from a progress that never advances: it stays at its start value (1.0, random play).",
        "-",
        "code",
        "learning",
        dqn={"epsilon_stuck": True},
    ),
    Fault(
        "memory.replay_recent_only",
        "memory",
        "Batches are drawn from the newest transitions only instead of uniformly over the buffer.",
        "000",
        "code",
        "learning",
        dqn={"replay_recent_only": True},
    ),
    Fault(
        "trainer.replay_ratio_in_code",
        "trainer",
        "Four gradient steps per training phase are hard-coded in the loop, whatever gradient_steps says.",
        "-",
        "code",
        "both",
        dqn={"gradient_steps_in_code": 4},
    ),
]
"""The off-policy fault catalog (ids ``<subsystem>.<name>``, as the PPO catalog's)."""

CATALOG: dict[str, Fault] = {f.id: f for f in FAULTS}


def get(fault_ids: Iterable[str]) -> list[Fault]:
    """Look DQN faults up by id.

    Raises:
        ValueError: An unknown id, with the closest known ids.
    """
    out = []
    for fid in fault_ids:
        if fid not in CATALOG:
            close = difflib.get_close_matches(fid, CATALOG, n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"unknown DQN fault {fid!r}.{hint} The DQN faults are: {', '.join(CATALOG)}")
        out.append(CATALOG[fid])
    return out


class DQNSubject:
    """DQN on the arena with a set of faults; every method is a capability of the subject contract."""

    def __init__(self, faults: Sequence[Fault] = ()) -> None:
        self.faults = tuple(faults)
        self._switches: dict[str, Any] = {}
        for fault in self.faults:
            self._switches.update(fault.dqn)

    @cached_property
    def _impl(self):  # -> DQNImpl (torch is imported on first use only)
        from rlaudit.demo.dqn import DQNImpl

        return DQNImpl(**self._switches)

    def __repr__(self) -> str:
        return f"DQNSubject(faults=[{','.join(f.id for f in self.faults)}])"

    def fixes(self) -> list[dict[str, str]]:
        """The faults this subject carries, one fix each (``{"id", "subsystem"}``): attribution tries each as
        ``builtin:dqn+<others>`` (:func:`rlaudit.attribution.probes.fixes`), as it does for the PPO subjects."""
        return [{"id": f.id, "subsystem": f.subsystem} for f in self.faults]

    def config(self, overrides: Sequence[str] | None = None) -> dict[str, Any]:
        from rlaudit.demo.dqn import resolve_config

        return resolve_config(list(overrides or []))

    def metrics(self) -> list[dict[str, Any]]:
        return [
            {"name": "heart.get", "direction": "higher", "source": "episode", "primary": True},
            {"name": "return", "direction": "higher", "source": "episode"},
        ]

    def config_keys(self) -> dict[str, list[str]]:
        from rlaudit.demo.dqn import CONFIG_KEYS

        return {k: list(v) for k, v in CONFIG_KEYS.items()}

    def total_steps(self, config: dict[str, Any]) -> int:
        return int(config["trainer"]["total_steps"])

    def make_env(self, config: dict[str, Any], seed: int):
        from rlaudit.demo.dqn import make_envs

        return make_envs(config, seed)

    def make_policy(self, config: dict[str, Any], observation_space: Any, action_space: Any):
        from rlaudit.demo.dqn import make_policy

        return make_policy(config, observation_space, action_space)

    def make_optimizer(self, config: dict[str, Any], policy: Any):
        from rlaudit.demo.dqn import make_optimizer

        return make_optimizer(config, policy)

    def target_networks(self, config: dict[str, Any], policy: Any) -> dict[str, str]:
        from rlaudit.demo.dqn import target_networks

        return target_networks(config, policy)

    def compute_td_targets(
        self, config: dict[str, Any], policy: Any, batch: dict[str, Any]
    ) -> dict[str, Any]:
        from rlaudit.demo.dqn import compute_td_targets

        return compute_td_targets(config, policy, batch, impl=self._impl)

    def compute_td_loss(
        self, config: dict[str, Any], policy: Any, batch: dict[str, Any], targets: Any
    ) -> float:
        from rlaudit.demo.dqn import compute_td_loss

        return compute_td_loss(config, policy, batch, targets, impl=self._impl)

    def train(
        self, config: dict[str, Any], steps: int, seed: int, recorder: Any = None, **kwargs: Any
    ) -> dict:
        """Train the DQN; kwargs: ``env_fn=`` (replace the arena: ``env_fn(num_envs, seed)``)."""
        from rlaudit.demo.dqn import train

        return train(config, steps, seed, recorder, impl=self._impl, **kwargs)
