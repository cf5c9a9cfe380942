"""Memory audit (notebook 12): does memory grow, where, and how big are the buffers?

Case 004's label dictionary gained an entry per episode and was never pruned; case 003's investigation was
skewed by zombie processes holding 30 GB. A leak is a growth slope whose interval excludes zero and exceeds a
practical threshold (:mod:`rlaudit.memory.common`); one module per concern:

- :mod:`rlaudit.memory.rss`: the slope of resident memory over a long rollout and over the shared training
  runs (the recorder samples resident memory by itself), the candidate's against the baseline's;
- :mod:`rlaudit.memory.growth`: where it grows: tracemalloc allocation sites inside the subject's code,
  object types, containers reachable from the environment, each against the baseline's counterpart;
- :mod:`rlaudit.memory.buffers`: the rollout buffers the configs imply, side by side.

The worker-side measurements are in :mod:`rlaudit.memory.probes`.
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.memory.buffers import buffers
from rlaudit.memory.common import BYTES_PER_1000_EPISODES, ENTRIES_PER_1000_EPISODES, RSS_PER_1000_STEPS
from rlaudit.memory.growth import compare_growth, growth_per_episode, growth_sites
from rlaudit.memory.rss import (
    MIN_TRAINING_SPAN,
    RSS_NOTE,
    RSS_OUTCOMES,
    growth_difference,
    leak_verdict,
    rss_rollout,
    rss_slope,
    rss_training,
)
from rlaudit.notebook import Section

__all__ = ["CHECKS", "audit_all"]
__all__ += ["BYTES_PER_1000_EPISODES", "ENTRIES_PER_1000_EPISODES", "RSS_PER_1000_STEPS"]
__all__ += ["MIN_TRAINING_SPAN", "RSS_NOTE", "RSS_OUTCOMES", "growth_difference", "leak_verdict"]
__all__ += ["rss_rollout", "rss_slope", "rss_training"]
__all__ += ["buffers", "compare_growth", "growth_per_episode", "growth_sites"]


CHECKS = (rss_rollout, rss_training, growth_sites, buffers)
"""Every memory check, in notebook order."""


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every memory check, in notebook order."""
    return run_checks(wb, CHECKS, seed=seed)
