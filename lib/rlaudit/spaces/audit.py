"""Spaces audit (notebook 10): the observation and action spaces, the observations themselves, what the network
actually receives on the training and evaluation paths, and what preprocessing costs.

Case 002 is the model: behaviour cloning trained on normalized observations while RL fed raw ones, and frame
stacking quadrupled the input of an MLP that did not need it. Observations come from seeded random-policy
rollouts in which both subjects play the same action sequence (when their action spaces are equal), so an
identical environment gives identical statistics and any shift is real.

The checks live by concern: :mod:`rlaudit.spaces.declared` (the spaces and their bounds),
:mod:`rlaudit.spaces.observations` (observation statistics), :mod:`rlaudit.spaces.inputs` (training vs
evaluation inputs), :mod:`rlaudit.spaces.cost` (what preprocessing costs); this module lists them in notebook
order.
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.notebook import Section
from rlaudit.spaces.cost import preprocessing
from rlaudit.spaces.declared import definitions, observation_bounds
from rlaudit.spaces.inputs import network_input
from rlaudit.spaces.observations import observations

__all__ = [
    "CHECKS",
    "audit_all",
    "definitions",
    "network_input",
    "observation_bounds",
    "observations",
    "preprocessing",
]

CHECKS = (definitions, observation_bounds, observations, network_input, preprocessing)
"""Every spaces check, in notebook order."""


def audit_all(wb: Workbench, trust: bool = False) -> list[Section]:
    """Every spaces check, in notebook order (``trust``: unpickle objects in checkpoint files)."""
    return run_checks(wb, CHECKS, trust=trust)
