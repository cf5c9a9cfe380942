"""The fault catalog: named regressions drawn from the case files, each a real code path or config change.

A fault is applied in one of two ways, never as a marker an audit could read:

- ``kind="config"``: the resolved config changes (a key dropped, a value rewritten), exactly as a config
  refactor would change it; the config audit is expected to see these.
- ``kind="code"``: a switch in :class:`rlaudit.demo.arena.ArenaImpl` or :class:`rlaudit.demo.ppo.PPOImpl`
  selects the regressed code path; the config is untouched, so only runtime behavior gives it away.

``effect`` says what the fault costs: ``learning`` (final heart.get), ``throughput`` (SPS), ``both``,
``observability`` (what is logged or saved, not training itself), ``reproducibility`` (same seed, different
run), or ``none`` (no cost to the default run: a red herring, or a trap for later experiments).
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Fault:
    """One named regression.

    Attributes:
        id: ``<subsystem>.<name>``.
        subsystem: The audited subsystem it belongs to.
        description: One sentence: what the regressed code or config does.
        case: The case file it comes from (``"001"``), summarized in ``docs/CASES.md``.
        kind: ``config`` or ``code``.
        effect: ``learning``, ``throughput``, ``both``, ``observability``, ``reproducibility`` or ``none``.
        arena: ArenaImpl fields to set (code faults on the environment side).
        ppo: PPOImpl fields to set (code faults on the trainer side).
        dqn: DQNImpl fields to set (code faults of the off-policy subject, :mod:`rlaudit.demo.dqn_subject`).
        overrides: Config overrides (Hydra syntax) that the regressed recipe bakes in (config faults); they are
            applied through the subject's own config mechanism before any user override, so a user's override
            (or an attribution experiment's restore) still wins.
    """

    id: str
    subsystem: str
    description: str
    case: str
    kind: str
    effect: str
    arena: dict[str, Any] = field(default_factory=dict)
    ppo: dict[str, Any] = field(default_factory=dict)
    dqn: dict[str, Any] = field(default_factory=dict)
    overrides: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, str]:
        """The catalog entry as ``rlaudit faults`` lists it: the text fields, not the code paths it switches."""
        return {
            name: getattr(self, name) for name in ("id", "subsystem", "description", "case", "kind", "effect")
        }


_FAULTS: list[Fault] = [
    # --- agents
    Fault(
        "agents.hidden_size",
        "agents",
        "The hidden layers shrank from 64 to 16 units during the config rewrite.",
        "000",
        "config",
        "learning",
        overrides=("agent.hidden_size=16",),
    ),
    Fault(
        "agents.activation",
        "agents",
        "The hidden activation changed from tanh to ReLU.",
        "000",
        "config",
        "learning",
        overrides=("agent.activation=relu",),
    ),
    # --- trainer
    Fault(
        "trainer.num_envs_heuristic",
        "trainer",
        "The number of environments comes from a memory heuristic "
        "(6 GB per env) that yields 14 instead of the configured value.",
        "002",
        "code",
        "both",
        ppo={"num_envs_from_memory_heuristic": True},
    ),
    Fault(
        "trainer.debug_batch",
        "trainer",
        "An automatic debug mode, switched on by a platform check, cuts the rollout batch.",
        "000",
        "code",
        "learning",
        ppo={"debug_batch_cut": True},
    ),
    Fault(
        "trainer.minibatch_no_shuffle",
        "trainer",
        "The minibatch order is an index range where the per-epoch permutation was: every minibatch is "
        "a block of consecutive time steps, the same blocks in every epoch.",
        "-",
        "code",
        "learning",
        ppo={"minibatch_no_shuffle": True},
    ),
    # --- logging
    Fault(
        "logging.tensorboard_empty",
        "logging",
        "TensorBoard event files are created but hold zero scalars.",
        "002",
        "code",
        "observability",
        ppo={"drop_tensorboard_scalars": True},
    ),
    Fault(
        "logging.return_window",
        "logging",
        "The logged episodic return is averaged over the wrong window, "
        "so it disagrees with the episodes actually played.",
        "000",
        "code",
        "observability",
        ppo={"return_window_bug": True},
    ),
    # --- checkpointing
    Fault(
        "checkpointing.partial_load",
        "checkpointing",
        "Loading maps checkpoint keys through a wrong prefix "
        "with strict=False, so some tensors silently stay at their initialization.",
        "002",
        "code",
        "learning",
        ppo={"checkpoint_key_prefix_mismatch": True},
    ),
    Fault(
        "checkpointing.lexicographic_sort",
        "checkpointing",
        "Checkpoint selection sorts file names as strings, so model_9 is picked as the latest over model_10.",
        "000",
        "code",
        "learning",
        ppo={"checkpoint_sort_lexicographic": True},
    ),
    Fault(
        "checkpointing.normalizer_not_restored",
        "checkpointing",
        "Observation-normalizer statistics are "
        "not restored when a checkpoint is loaded, so the network sees differently scaled inputs.",
        "002",
        "code",
        "learning",
        ppo={"restore_obs_normalizer": False},
    ),
    Fault(
        "checkpointing.interval_changed",
        "checkpointing",
        "Checkpoints are written every 5 updates instead of every 25 (a changed default that costs little).",
        "001",
        "config",
        "none",
        overrides=("trainer.checkpoint_interval=5",),
    ),
    # --- env
    Fault(
        "env.rebuild_on_reset",
        "env",
        "The whole vectorized environment is rebuilt whenever any of its environments resets, "
        "wasting time at every reset.",
        "001",
        "code",
        "throughput",
        arena={"rebuild_on_reset": True},
    ),
    Fault(
        "env.desync_truncates",
        "env",
        "desync_episodes truncates every episode at a random length instead "
        "of randomizing only the first one.",
        "001",
        "code",
        "learning",
        arena={"desync_truncates": True},
    ),
    # --- curriculum
    Fault(
        "curriculum.full_scan",
        "curriculum",
        "The learning-progress curriculum invalidates its cache and "
        "scans every task slot on every episode (O(max_tasks)).",
        "004",
        "code",
        "throughput",
        arena={"curriculum_full_scan": True},
    ),
    # --- optimizer
    Fault(
        "optimizer.lr_schedule_missing",
        "optimizer",
        "The config still asks for learning-rate annealing but "
        "the code path that applies it is disabled, so the rate stays flat.",
        "000/001",
        "code",
        "learning",
        ppo={"ignore_lr_schedule": True},
    ),
    Fault(
        "optimizer.adam_eps_default",
        "optimizer",
        "Adam's eps became null in the config rewrite, so "
        "the optimizer falls back to PyTorch's 1e-8 instead of PPO's 1e-5.",
        "000",
        "config",
        "learning",
        overrides=("optimizer.eps=null",),
    ),
    # --- init
    Fault(
        "init.orthogonal_dropped",
        "init",
        "Orthogonal initialization (gain sqrt 2 hidden, 0.01 policy, "
        "1.0 value) is skipped, leaving PyTorch's default init.",
        "000",
        "code",
        "none",
        ppo={"skip_orthogonal_init": True},
    ),
    # --- loss
    Fault(
        "loss.gae_bootstrap",
        "loss",
        "GAE bootstraps from V(s_t) instead of V(s_t+1).",
        "003",
        "code",
        "learning",
        ppo={"gae_bootstrap_current_value": True},
    ),
    Fault(
        "loss.value_floor",
        "loss",
        "The value loss is floored with torch.max, so the value head gets zero "
        "gradient whenever its loss is below the floor.",
        "003",
        "code",
        "learning",
        ppo={"value_loss_floor": 1.0},
    ),
    Fault(
        "loss.value_huber",
        "loss",
        "The value loss became F.smooth_l1_loss (Huber) in a refactor that took it for ½·MSE: the same below "
        "an error of 1, linear above it, so large value errors get a bounded gradient.",
        "-",
        "code",
        "learning",
        ppo={"value_loss_huber": True},
    ),
    Fault(
        "loss.value_unclipped",
        "loss",
        "The value loss is no longer clipped around the rollout's values: the config still asks for "
        "clip_vloss, but the code reads the switch from a key the rewritten config no longer has.",
        "000",
        "code",
        "learning",
        ppo={"ignore_clip_vloss": True},
    ),
    Fault(
        "loss.value_normalized_returns",
        "loss",
        "The advantage-normalization line was applied to the value targets too: the critic regresses onto "
        "returns normalized per minibatch while GAE reads its outputs as raw returns.",
        "003",
        "code",
        "learning",
        ppo={"normalize_returns": True},
    ),
    # --- spaces
    Fault(
        "spaces.frame_stack",
        "spaces",
        "Frame stacking of 4 observations is switched on, quadrupling the "
        "input size for an MLP that does not need it.",
        "002",
        "config",
        "throughput",
        overrides=("env.frame_stack=4",),
    ),
    Fault(
        "spaces.obs_dtype",
        "spaces",
        "The observation buffer is allocated without its dtype, so the environment emits float64 observations "
        "against its declared float32 Box.",
        "-",
        "code",
        "none",
        arena={"obs_default_dtype": True},
    ),
    # --- rewards
    Fault(
        "rewards.shaped_reward_lost",
        "rewards",
        "The battery's shaped reward was lost in the config rewrite (0.8 became 0).",
        "001",
        "config",
        "learning",
        overrides=("env.rewards.battery=0.0",),
    ),
    # --- memory
    Fault(
        "memory.label_dict_growth",
        "memory",
        "A dictionary of per-episode task labels gains an entry every episode and is never pruned.",
        "004",
        "code",
        "throughput",
        arena={"label_dict_growth": True},
    ),
    # --- seeding
    Fault(
        "seeding.torch_unseeded",
        "seeding",
        "torch's global generator is never seeded, so initial weights "
        "and action sampling differ between runs with the same seed.",
        "000",
        "code",
        "reproducibility",
        ppo={"seed_torch": False},
    ),
    # --- config
    Fault(
        "config.override_ignored",
        "config",
        "Config resolution re-applies the recipe's trainer defaults "
        "after the overrides, silently dropping overrides of trainer keys.",
        "001",
        "code",
        "none",
    ),
]

CATALOG: dict[str, Fault] = {f.id: f for f in _FAULTS}

# builtin:regressed = the reference's config system rewritten in Python, plus these faults: learning
# regressions from three subsystems, two throughput regressions, and a red herring.
REGRESSED: tuple[str, ...] = (
    "optimizer.lr_schedule_missing",
    "loss.gae_bootstrap",
    "rewards.shaped_reward_lost",
    "env.rebuild_on_reset",
    "curriculum.full_scan",
    "checkpointing.interval_changed",
)


def get(fault_ids: Iterable[str]) -> list[Fault]:
    """Look faults up by id.

    Raises:
        ValueError: An unknown id, with the closest known ids and how to list them all.
    """
    out = []
    for fid in fault_ids:
        if fid not in CATALOG:
            close = difflib.get_close_matches(fid, CATALOG, n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"unknown fault {fid!r}.{hint} Run `rlaudit faults` for the catalog.")
        out.append(CATALOG[fid])
    return out


def run_faults(args: argparse.Namespace) -> int:
    """``rlaudit faults [--json]``."""
    if args.json:
        print(json.dumps([f.to_dict() for f in _FAULTS], indent=2))
        return 0
    width = max(len(f.id) for f in _FAULTS)
    print(f"{'id':<{width}}  {'kind':<6}  {'effect':<13}  {'case':<7}  description")
    for f in _FAULTS:
        mark = "*" if f.id in REGRESSED else " "
        print(f"{f.id:<{width}}  {f.kind:<6}  {f.effect:<13}  {f.case:<7}  {f.description}{mark}")
    print(
        f"\n{len(_FAULTS)} faults over {len({f.subsystem for f in _FAULTS})} subsystems; "
        "* = part of builtin:regressed. Use builtin:reference+<id>[,<id>...] for any combination."
    )
    return 0
