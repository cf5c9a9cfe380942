"""The built-in subjects' configuration: one dataclass per section, nested into :class:`DemoConfig`.

``DemoConfig().to_dict()`` is what the reference subject's ``config()`` returns and what its Hydra YAML tree
resolves to. ``from_dict`` is strict: a key the dataclasses do not know is an error naming it (a typo in an
override must not silently fall back to a default), and a missing key keeps its default.

PPO field names and defaults follow CleanRL's ``ppo.py`` where it has them. Two were tuned for the arena on a
2-core CPU: the rollout shape (256 environments x 16 steps, a 4096-step batch in 4 minibatches; CleanRL's
4 x 128 leaves the per-step Python and inference overhead unamortized) and the learning rate (5e-3 annealed
linearly to 0; 2.5e-4 and 1e-3 learn far too slowly within the report's 1M-step runs). With them the
reference passes half of the scripted expert's heart.get at about 200k steps (see
:mod:`rlaudit.bench.trainer`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rlaudit.demo.arena import ArenaConfig, CurriculumConfig
from rlaudit.demo.sections import ConfigSection

SCHEDULE_KINDS = ("constant", "linear", "cosine")


@dataclass
class AgentConfig(ConfigSection):
    """The actor-critic network (:class:`rlaudit.demo.agent.Agent`)."""

    section: ClassVar[str] = "agent"

    hidden_size: int = 64  # width of every hidden layer, in both actor and critic
    num_layers: int = 2  # hidden layers per network (actor and critic are separate MLPs)
    activation: str = "tanh"  # hidden nonlinearity: tanh | relu
    ortho_init: bool = True  # PPO init: orthogonal, gain sqrt(2) hidden / 0.01 policy / 1.0 value, zero bias

    def validate(self) -> None:
        if self.activation not in ("tanh", "relu"):
            raise ValueError(f"agent.activation must be tanh or relu, got {self.activation!r}")


@dataclass
class TrainerConfig(ConfigSection):
    """PPO rollout and update settings (CleanRL names)."""

    section: ClassVar[str] = "trainer"

    num_envs: int = 256  # parallel environments in the vector env
    num_steps: int = 16  # steps per environment per rollout (batch = num_envs * num_steps)
    update_epochs: int = 4  # passes over each rollout batch
    num_minibatches: int = 4  # minibatches per epoch (minibatch = batch / num_minibatches)
    gamma: float = 0.99  # discount factor
    gae_lambda: float = 0.95  # GAE lambda (bias-variance trade-off of the advantage estimate)
    clip_coef: float = 0.2  # PPO surrogate clipping epsilon (also the value clipping range)
    clip_vloss: bool = True  # clip the value loss around the rollout's values, as in the PPO reference code
    vf_coef: float = 0.5  # weight of the value loss in the total loss
    ent_coef: float = 0.01  # weight of the entropy bonus (its start value when ent_schedule is not constant)
    max_grad_norm: float = 0.5  # global gradient-norm clipping threshold
    norm_adv: bool = True  # normalize advantages per minibatch
    anneal_lr: bool = True  # decay the learning rate over training
    lr_schedule: str = "linear"  # shape of the decay when anneal_lr: linear | cosine
    lr_final_fraction: float = 0.0  # learning rate at the end of training, as a fraction of optimizer.lr
    ent_schedule: str = "constant"  # entropy coefficient schedule: constant | linear | cosine
    ent_coef_final: float = 0.0  # entropy coefficient at the end of training (when ent_schedule != constant)
    clip_schedule: str = "constant"  # clipping epsilon schedule: constant | linear | cosine
    clip_coef_final: float = 0.1  # clipping epsilon at the end of training (when clip_schedule != constant)
    target_kl: float | None = None  # stop an update's epochs early when approx KL exceeds this (None: never)
    normalize_obs: bool = True  # running mean/std observation normalization (statistics saved in checkpoints)
    obs_clip: float = 10.0  # clip normalized observations to +-obs_clip (SB3 VecNormalize's default)
    checkpoint_interval: int = 25  # save a checkpoint every this many updates (and after the last one)
    torch_threads: int = 1  # torch intra-op threads while training
    device: str = "cpu"  # torch device of the network and the update: cpu, cuda, cuda:N or auto

    def validate(self) -> None:
        for name in ("lr_schedule", "ent_schedule", "clip_schedule"):
            kind = getattr(self, name)
            if kind not in SCHEDULE_KINDS:
                raise ValueError(f"trainer.{name} must be one of {SCHEDULE_KINDS}, got {kind!r}")
        for name in ("num_envs", "num_steps", "update_epochs", "num_minibatches", "checkpoint_interval"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"trainer.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.num_envs * self.num_steps < 2 * self.num_minibatches:
            raise ValueError(
                f"trainer batch num_envs*num_steps={self.num_envs * self.num_steps} is too small for "
                f"num_minibatches={self.num_minibatches} (each minibatch needs >= 2 samples for advantage "
                "normalization); raise num_steps or lower num_minibatches"
            )


@dataclass
class OptimizerConfig(ConfigSection):
    """The optimizer (Adam, as in the PPO reference code)."""

    section: ClassVar[str] = "optimizer"

    name: str = "adam"  # optimizer: adam (the only one the demo trainer builds)
    lr: float = 5e-3  # learning rate at the start of training (annealed by trainer.anneal_lr)
    eps: float | None = 1e-5  # Adam epsilon (1e-5, not PyTorch's 1e-8: PPO detail 3); null: PyTorch's
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])  # Adam (beta1, beta2)
    weight_decay: float = 0.0  # L2 penalty added by Adam

    def validate(self) -> None:
        if self.name != "adam":
            raise ValueError(
                f"optimizer.name must be 'adam' (the only one the demo builds), got {self.name!r}"
            )
        if self.betas is not None:
            if len(self.betas) != 2:
                raise ValueError(f"optimizer.betas must be [beta1, beta2], got {self.betas!r}")
            self.betas = [float(b) for b in self.betas]


@dataclass
class LoggingConfig(ConfigSection):
    """What the trainer reports and where."""

    section: ClassVar[str] = "logging"

    log_interval: int = 1  # write scalars every this many updates
    return_window: int = 100  # charts/episodic_return and env/* average the last this many episodes
    tensorboard: bool = True  # write TensorBoard events to <run_dir>/tb
    run_dir: str = ""  # where TensorBoard events and checkpoints go without a recorder ("": nowhere)


@dataclass
class DemoConfig:
    """The whole configuration of a built-in subject, one section per concern."""

    env: ArenaConfig = field(default_factory=ArenaConfig)  # the arena gridworld
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)  # each episode's map variant
    agent: AgentConfig = field(default_factory=AgentConfig)  # the actor-critic network
    trainer: TrainerConfig = field(default_factory=TrainerConfig)  # PPO
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)  # Adam
    logging: LoggingConfig = field(default_factory=LoggingConfig)  # TensorBoard, windows, run dir

    def to_dict(self) -> dict[str, Any]:
        """A nested, JSON-serializable dict (``json.loads(json.dumps(d)) == d``)."""
        return {f.name: getattr(self, f.name).to_dict() for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DemoConfig:
        """Build from a (possibly partial) nested dict; unknown sections or keys raise ``ValueError``."""
        if not isinstance(d, dict):
            raise TypeError(f"config must be a dict of sections, got {type(d).__name__}")
        sections = {f.name: f.default_factory for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - set(sections))
        if unknown:
            raise ValueError(
                f"unknown config section(s) {unknown}; expected some of {sorted(sections)}. "
                "Check the spelling or remove them."
            )
        return cls(**{name: section.from_dict(d.get(name, {})) for name, section in sections.items()})  # type: ignore[attr-defined]

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)
