"""The built-in subjects: ``builtin:reference``, ``builtin:regressed`` and any fault combination.

Spec grammar (after ``builtin:``): a base, ``reference`` or ``regressed``, followed by any number of
``+<fault>[,<fault>...]`` (add faults) and ``-<fault>[,<fault>...]`` (remove faults):

- ``reference``: PPO on the arena, configured by a Hydra YAML tree (``conf/``) composed with Hydra's API;
- ``regressed``: the "dehydrated" version, configured by a Python recipe (:mod:`rlaudit.demo.pyconfig`),
  plus the faults in :data:`rlaudit.demo.faults.REGRESSED`;
- ``reference+loss.gae_bootstrap``: the reference with one fault; ``regressed-env.rebuild_on_reset``: the
  regressed subject with one fault fixed (what an attribution experiment's variant looks like);
- ``dqn``: the off-policy subject, a DQN on the arena (:mod:`rlaudit.demo.dqn_subject`), with faults from its
  own catalog (``dqn+loss.done_mask_dropped``).

A subject is an ordinary object exposing every capability of the subject contract; a user's own
``subject.py`` can import :func:`load` and wrap or extend one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from rlaudit.demo import faults as fault_catalog
from rlaudit.demo.faults import Fault

CONF_DIR = Path(__file__).resolve().parent / "conf"
BASES = ("reference", "regressed")
OFF_POLICY_BASES = ("dqn",)

# Which flattened config keys belong to which audited subsystem; the first matching pattern wins, so the
# specific patterns come before the section-wide ones.
CONFIG_KEYS: dict[str, list[str]] = {
    "rewards": ["env.rewards.*", "env.time_penalty"],
    "spaces": ["env.frame_stack", "env.obs_*", "trainer.normalize_obs", "trainer.obs_clip"],
    "curriculum": ["curriculum.*"],
    "env": ["env.*"],
    "init": ["agent.ortho_init"],
    "agents": ["agent.*"],
    "checkpointing": ["trainer.checkpoint_interval"],
    "optimizer": ["optimizer.*", "trainer.anneal_lr", "trainer.lr_*", "trainer.max_grad_norm"],
    "loss": [
        "trainer.gamma",
        "trainer.gae_lambda",
        "trainer.clip_*",
        "trainer.vf_coef",
        "trainer.ent_*",
        "trainer.norm_adv",
        "trainer.target_kl",
    ],
    "memory": ["trainer.torch_threads"],
    "trainer": ["trainer.*"],
    "logging": ["logging.*"],
}


def parse(rest: str) -> tuple[str, list[str]]:
    """``"regressed-env.rebuild_on_reset"`` -> ``("regressed", [<the regressed faults but that one>])``.

    Raises:
        ValueError: Unknown base or fault, or a malformed spec, saying what is expected.
    """
    match = re.fullmatch(r"([a-z_]+)((?:[+-][^+-]+)*)", rest.strip())
    if not match or match.group(1) not in BASES + OFF_POLICY_BASES:
        raise ValueError(
            f"builtin subject {rest!r} is not understood; expected builtin:reference or builtin:regressed (PPO) "
            "or builtin:dqn (off-policy), "
            "optionally followed by +<fault>[,<fault>...] and/or -<fault>[,<fault>...] "
            "(e.g. builtin:reference+loss.gae_bootstrap). Run `rlaudit faults` for the fault ids."
        )
    base = match.group(1)
    active = list(fault_catalog.REGRESSED) if base == "regressed" else []
    catalog: Any = fault_catalog
    if base in OFF_POLICY_BASES:
        from rlaudit.demo import dqn_subject as catalog
    for sign, ids in re.findall(r"([+-])([^+-]+)", match.group(2)):
        names = [i.strip() for i in ids.split(",") if i.strip()]
        catalog.get(names)  # validates, with a did-you-mean
        for name in names:
            if sign == "+" and name not in active:
                active.append(name)
            elif sign == "-":
                if name not in active:
                    raise ValueError(
                        f"builtin:{rest}: cannot remove fault {name!r}, the subject does not have it "
                        f"(it has: {', '.join(active) or 'none'})"
                    )
                active.remove(name)
    return base, active


def faults_of(rest: str) -> list[Fault]:
    """The faults a ``builtin:`` spec carries (the part after ``builtin:``), from its base's own catalog: the
    PPO catalog for ``reference``/``regressed``, :data:`rlaudit.demo.dqn_subject.CATALOG` for ``dqn``."""
    base, names = parse(rest)
    if base in OFF_POLICY_BASES:
        from rlaudit.demo import dqn_subject

        return dqn_subject.get(names)
    return fault_catalog.get(names)


def load(rest: str) -> Any:
    """Build the subject named by a ``builtin:`` spec (the part after ``builtin:``)."""
    base, names = parse(rest)
    if base in OFF_POLICY_BASES:
        from rlaudit.demo.dqn_subject import DQNSubject, get

        return DQNSubject(get(names))
    return BuiltinSubject(base, fault_catalog.get(names))


class BuiltinSubject:
    """PPO on the arena with a config system (Hydra or Python) and a set of faults.

    Every method is a capability of the subject contract (see ``docs/ARCHITECTURE.md``).
    """

    def __init__(self, base: str, faults: Sequence[Fault] = ()) -> None:
        if base not in BASES:
            raise ValueError(f"unknown builtin base {base!r}; expected one of {BASES}")
        self.base = base
        self.faults = tuple(faults)
        self._arena_switches: dict[str, Any] = {}
        self._ppo_switches: dict[str, Any] = {}
        for fault in self.faults:
            self._arena_switches.update(fault.arena)
            self._ppo_switches.update(fault.ppo)
        self._config_overrides = [o for fault in self.faults for o in fault.overrides]
        self._restore_trainer_defaults = any(f.id == "config.override_ignored" for f in self.faults)
        self.config_source = "hydra" if base == "reference" else "python"

    # The code paths are built on first use: config-only probes never import torch (1-2 s per worker).
    @cached_property
    def _arena_impl(self):  # -> ArenaImpl
        from rlaudit.demo.arena import ArenaImpl

        return ArenaImpl(**self._arena_switches)

    @cached_property
    def _ppo_impl(self):  # -> PPOImpl
        from rlaudit.demo.ppo import PPOImpl

        return PPOImpl(**self._ppo_switches)

    def __repr__(self) -> str:
        names = ",".join(f.id for f in self.faults)
        return f"BuiltinSubject({self.base!r}, faults=[{names}])"

    # -- config ------------------------------------------------------------------------------------------

    def _resolve(self, overrides: Sequence[str]) -> dict[str, Any]:
        if self.base == "reference":
            return compose_hydra(overrides)
        from rlaudit.demo.pyconfig import arena_recipe

        return arena_recipe(overrides)

    def config(self, overrides: Sequence[str] | None = None) -> dict[str, Any]:
        """The resolved config; ``overrides`` are ``dotted.key=value`` strings (Hydra syntax)."""
        user = list(overrides or [])
        resolved = self._resolve(self._config_overrides + user)
        if self._restore_trainer_defaults and user:
            # The recipe re-applies its trainer defaults after the caller's overrides (case 001's "restored
            # defaults"): every trainer override is silently lost.
            resolved["trainer"] = self._resolve(self._config_overrides)["trainer"]
        return resolved

    def metrics(self) -> list[dict[str, Any]]:
        """The arena's hearts per episode decide (cases 000/001), then the shaped return."""
        return [
            {"name": "heart.get", "direction": "higher", "source": "episode", "primary": True},
            {"name": "return", "direction": "higher", "source": "episode"},
        ]

    def config_keys(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in CONFIG_KEYS.items()}

    def fixes(self) -> list[dict[str, str]]:
        """The faults this subject carries, in its spec's order: one fix each, ``{"id", "subsystem"}``.

        Attribution reads this through the worker (:func:`rlaudit.attribution.probes.fixes`) and tries each
        fix as the spec with the fault removed (``builtin:regressed-<id>``), or, on a built-in baseline, added
        (``builtin:reference+<id>``): the built-in analog of a fix commit.
        """
        return [{"id": f.id, "subsystem": f.subsystem} for f in self.faults]

    # -- the pieces of the trainer ----------------------------------------------------------------------

    def make_env(self, config: dict[str, Any], seed: int):  # -> gymnasium.vector.VectorEnv
        """The vectorized arena exactly as :meth:`train` builds it (same number of envs)."""
        from rlaudit.demo import ppo
        from rlaudit.demo.arena import make_arena

        num_envs = ppo.resolve_num_envs(ppo.demo_config(config), self._ppo_impl)
        return make_arena(config, num_envs, seed, impl=self._arena_impl)

    def make_policy(self, config: dict[str, Any], observation_space: Any, action_space: Any):
        from rlaudit.demo import ppo

        return ppo.make_policy(config, observation_space, action_space, impl=self._ppo_impl)

    def make_optimizer(self, config: dict[str, Any], policy: Any):
        from rlaudit.demo import ppo

        return ppo.make_optimizer(config, policy)

    def compute_advantages(
        self, config: dict[str, Any], rewards: Any, values: Any, dones: Any, next_value: Any
    ):
        from rlaudit.demo import ppo

        return ppo.compute_advantages(config, rewards, values, dones, next_value, impl=self._ppo_impl)

    def compute_loss(self, config: dict[str, Any], policy: Any, batch: dict[str, Any]):
        from rlaudit.demo import ppo

        return ppo.compute_loss(config, policy, batch, impl=self._ppo_impl)

    def make_curriculum(self, config: dict[str, Any], seed: int = 0):
        """The curriculum the arena uses, seeded so that the same scores give the same choices."""
        from rlaudit.demo.arena import make_curriculum

        return make_curriculum(config, seed=seed, impl=self._arena_impl)

    def train(
        self, config: dict[str, Any], steps: int, seed: int, recorder: Any = None, **kwargs: Any
    ) -> dict:
        """Train PPO; kwargs: ``resume_from=`` (a checkpoint of this run), ``env_fn=`` (replace the arena)."""
        from rlaudit.demo import ppo

        return ppo.train(
            config, steps, seed, recorder, impl=self._ppo_impl, arena_impl=self._arena_impl, **kwargs
        )

    # -- artifacts of a run ------------------------------------------------------------------------------

    @staticmethod
    def _run_dir(config: dict[str, Any], run_dir: str | Path | None) -> Path:
        chosen = run_dir or config.get("logging", {}).get("run_dir")
        if not chosen:
            raise ValueError(
                "no run directory: pass run_dir= (the recorder's run_dir of a train() call) or set "
                "logging.run_dir in the config"
            )
        return Path(chosen)

    def checkpoints(self, config: dict[str, Any], run_dir: str | Path | None = None) -> list[str]:
        """The run's checkpoints in the order this subject picks them (its "latest" first)."""
        from rlaudit.demo import ppo

        return ppo.list_checkpoints(self._run_dir(config, run_dir), impl=self._ppo_impl)

    def load_checkpoint(self, config: dict[str, Any], path: str | Path):
        from rlaudit.demo import ppo

        return ppo.load_checkpoint(config, path, impl=self._ppo_impl)

    def log_dir(self, config: dict[str, Any], run_dir: str | Path | None = None) -> str:
        return str(self._run_dir(config, run_dir) / "tb")


def compose_hydra(overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Compose the reference's YAML tree with Hydra's compose API into a plain, resolved dict."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]
