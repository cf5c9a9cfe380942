"""Seeding audit (notebook 13): same seed, same run? Different seeds, different runs? And how many seeds does
a comparison need?

Case 000's torch generator was never seeded (a call whose name reads like ``manual_seed`` drew a fresh seed
from the OS), so two runs with the same seed started from different weights. Each subject runs seeded
replicas in fresh interpreters and in its worker (:mod:`rlaudit.seeding.replica`, driven by
:mod:`rlaudit.seeding.probes`); one module per check, the first two sharing one probe run and its
comparison (:mod:`rlaudit.seeding.common`):

- :mod:`rlaudit.seeding.determinism`: two fresh processes with the same seed give the same run, and two
  seeds give different ones (hash randomization and process-level state included);
- :mod:`rlaudit.seeding.generators`: the worker's seeded replica, with Python's, NumPy's and torch's global
  generators moved, names the generator that leaks in;
- :mod:`rlaudit.seeding.variance`: the run-to-run variance of the primary metric over the shared training
  runs and, from it, the seeds needed to detect or to clear an effect (:mod:`rlaudit.seeding.power`).
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.notebook import Section
from rlaudit.seeding.common import (
    compare_replicas,
    describe_difference,
    replica_errors,
    replicas_pair,
    replicas_params,
)
from rlaudit.seeding.determinism import SEED_IGNORED, fresh_processes, same_seed_report
from rlaudit.seeding.generators import global_rng, rng_verdict
from rlaudit.seeding.variance import POWER_TABLE, final_values, variance, variance_table

__all__ = [
    "CHECKS",
    "POWER_TABLE",
    "SEED_IGNORED",
    "audit_all",
    "compare_replicas",
    "describe_difference",
    "final_values",
    "fresh_processes",
    "global_rng",
    "replica_errors",
    "replicas_pair",
    "replicas_params",
    "rng_verdict",
    "same_seed_report",
    "variance",
    "variance_table",
]


CHECKS = (fresh_processes, global_rng, variance)
"""Every seeding check, in notebook order."""


def audit_all(wb: Workbench, *, seed: int = 0) -> list[Section]:
    """Every seeding check, in notebook order."""
    return run_checks(wb, CHECKS, seed=seed)
