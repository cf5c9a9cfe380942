"""Agents audit (notebook 01): the network each setup builds, compared layer by layer.

Case 000 checked hidden sizes, nonlinearities and connectivity by reading configs; here the network itself is
built by each subject's ``make_policy`` in its own process, traced on real observations, and the two module
lists are aligned by structure (:mod:`rlaudit.agents.align`, :mod:`rlaudit.agents.trees`). All checks read the
one network probe (:mod:`rlaudit.agents.common`). One module per check:

- :mod:`rlaudit.agents.architecture`: layers added, removed, resized or changed in kind (SUSPECT, with the
  changed quantity named), a renamed module NOTED;
- :mod:`rlaudit.agents.execution`: call order and shapes on real observations, trunks, input and head sizes;
- :mod:`rlaudit.agents.activations`: per-layer activation statistics at initialization, judged over seeds.
"""

from __future__ import annotations

from rlaudit.agents.activations import (
    ACTIVATION_SCALE,
    DEAD_JUMP,
    DEAD_UNITS,
    STAT_COLUMNS,
    STD_RATIO,
    activation_table,
    activations,
    std_ratios,
)
from rlaudit.agents.architecture import IO_FOLLOWS_SPACES, RENAMED, architecture
from rlaudit.agents.common import NETWORK, network_params, seeds_for
from rlaudit.agents.execution import IO_SIZES, REPEATED_CALLS, TRUNK, execution
from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.notebook import Section

__all__ = [
    "ACTIVATION_SCALE", "CHECKS", "DEAD_JUMP", "DEAD_UNITS", "IO_FOLLOWS_SPACES", "IO_SIZES", "NETWORK", "RENAMED",
    "REPEATED_CALLS", "STAT_COLUMNS", "STD_RATIO", "TRUNK", "activation_table", "activations", "architecture",
    "audit_all", "execution", "network_params", "seeds_for", "std_ratios",
]  # fmt: skip

CHECKS = (architecture, execution, activations)
"""Every agents check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every agents check, in notebook order."""
    return run_checks(wb, CHECKS)
