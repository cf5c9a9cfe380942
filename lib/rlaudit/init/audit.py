"""Init audit (notebook 08): how each setup initializes its network, and what the policy looks like at step 0.

Case 000 listed "weight initialization scheme changed (Xavier, He, ...)" and "bias initialization differs" as
hypotheses without a way to test them. Here each side builds its network with several torch seeds
(:mod:`rlaudit.init.common`, one probe run both checks read). One module per check:

- :mod:`rlaudit.init.layer_schemes`: every parameter's scheme and gain (inferred by :mod:`rlaudit.init.schemes`),
  compared layer by layer (matched by structure, as in 01_agents) and against the PPO details;
- :mod:`rlaudit.init.policy_at_init`: the freshly built policy on real observations: entropy relative to its
  maximum, logit scale, value scale.
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.init.common import FRESH_NETWORKS, init_params, seeds_for
from rlaudit.init.layer_schemes import (
    PPO_DETAILS,
    compare_init,
    infer_all,
    parameter_statistics,
    roles,
    schemes,
)
from rlaudit.init.policy_at_init import (
    ENTROPY_GAP,
    SCALE_RATIO,
    output_stats,
    policy_at_init,
    scale_comparison,
)
from rlaudit.notebook import Section

__all__ = [
    "CHECKS", "ENTROPY_GAP", "FRESH_NETWORKS", "PPO_DETAILS", "SCALE_RATIO", "audit_all", "compare_init",
    "infer_all", "init_params", "output_stats", "parameter_statistics", "policy_at_init", "roles",
    "scale_comparison", "schemes", "seeds_for",
]  # fmt: skip

CHECKS = (schemes, policy_at_init)
"""Every init check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every init check, in notebook order."""
    return run_checks(wb, CHECKS)
