"""Rewards audit (notebook 11): scale, shaping and components, declared and measured.

Case 001's shaped rewards vanished in a config rewrite (battery 0.8 became absent), and case 002's navigation
shaping (0.0001 per pixel) was cancelled by a 0.01 time penalty. One module per concern:

- :mod:`rlaudit.rewards.settings`: the reward settings of both resolved configs (penalties, clipping,
  normalization, scales, components), removed, added or changed;
- :mod:`rlaudit.rewards.components`: what each component actually pays at runtime, and whether one drowns
  another (two checks, which read the same rollouts);
- :mod:`rlaudit.rewards.ranges`: the reward range and the values paid, before and after the environments'
  wrappers.

The worker-side measurements are in :mod:`rlaudit.rewards.probes`.
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.notebook import Section
from rlaudit.rewards.components import components, relative_magnitudes
from rlaudit.rewards.ranges import lost_values, range_needs, range_table, reward_range, value_table
from rlaudit.rewards.settings import (
    SETTING_FLAGS,
    SETTINGS_ADDED,
    SUBSYSTEM,
    SettingFlag,
    change_text,
    reward_settings,
    setting_kind,
    settings,
)

__all__ = ["CHECKS", "audit_all", "components", "relative_magnitudes", "reward_range", "settings"]
__all__ += ["SETTINGS_ADDED", "SETTING_FLAGS", "SUBSYSTEM", "SettingFlag", "change_text", "reward_settings"]
__all__ += ["lost_values", "range_needs", "range_table", "setting_kind", "value_table"]


CHECKS = (settings, components, reward_range, relative_magnitudes)
"""Every rewards check, in notebook order."""


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every rewards check, in notebook order."""
    return run_checks(wb, CHECKS, seed=seed)
