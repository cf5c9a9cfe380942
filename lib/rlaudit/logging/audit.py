"""Logging audit (notebook 03): what was written to the logs against what happened in training.

Case 002 trained blind: its TensorBoard files existed and held zero scalars. Case 000 asked whether the
statistics' averaging had changed. Each subject's own logs (TensorBoard, CSV or JSONL under its ``log_dir``,
read by :mod:`rlaudit.logfiles`) are read once with the shared training runs (:mod:`rlaudit.logging.logged`);
one module per check:

- :mod:`rlaudit.logging.scalars`: which scalars exist on each side, and which were removed, added or renamed;
- :mod:`rlaudit.logging.truth`: the logged episodic return and primary metric against the episodes the
  recorder saw, matched against the ways they could have been averaged (the last N episodes, all so far,
  those since the previous log, reward per step): a different definition shows as a systematic gap, named;
- :mod:`rlaudit.logging.frequency`: how often each side logs and what it costs.

Absolute imports only: this package is ``rlaudit.logging``; ``import logging`` in any rlaudit module still
resolves to the standard library.
"""

from __future__ import annotations

from rlaudit.checks import run_checks
from rlaudit.engine.workbench import Workbench
from rlaudit.logging.frequency import frequency, frequency_table
from rlaudit.logging.logged import Logged, logged, run_logs, side_logs
from rlaudit.logging.scalars import (
    DROPPED_SCALARS,
    LOG_DIR_HOW,
    REMOVED_TAGS,
    RENAMED_TAGS,
    presence,
    tag_changes,
)
from rlaudit.logging.truth import (
    MATCH_RTOL,
    RETURN_TAGS,
    WINDOWS,
    definitions,
    find_tag,
    logged_statistic,
    match_definitions,
    statistics,
    truth,
    truth_finding,
    truth_id,
)
from rlaudit.notebook import Section

__all__ = ["CHECKS", "Logged", "audit_all", "logged", "run_logs", "side_logs"]
__all__ += ["DROPPED_SCALARS", "LOG_DIR_HOW", "REMOVED_TAGS", "RENAMED_TAGS", "presence", "tag_changes"]
__all__ += ["MATCH_RTOL", "RETURN_TAGS", "WINDOWS", "definitions", "find_tag", "logged_statistic"]
__all__ += ["match_definitions", "statistics", "truth", "truth_finding", "truth_id"]
__all__ += ["frequency", "frequency_table"]


CHECKS = (presence, truth, frequency)
"""Every logging check, in notebook order."""


def audit_all(wb: Workbench) -> list[Section]:
    """Every logging check, in notebook order."""
    return run_checks(wb, CHECKS)
