"""Checkpointing audit (notebook 04): what each setup saves, what its loader restores, which checkpoint it picks,
and whether a resumed run continues like the uninterrupted one.

Case 000 (H4.1-H4.3, H4.R1-R2) and case 002 ("only 58 of 82 pretrained tensors loaded", normalization
statistics not carried over) are the models. One module per concern:

- :mod:`rlaudit.checkpointing.sources`: where each side's checkpoints come from (short training runs, or the
  subject's existing checkpoints) and the guards of every check;
- :mod:`rlaudit.checkpointing.files`: how many checkpoints are written, and what the newest one holds;
- :mod:`rlaudit.checkpointing.loading`: loading fidelity, the round trip, and cross-version loading;
- :mod:`rlaudit.checkpointing.selection`: which checkpoint is "latest";
- :mod:`rlaudit.checkpointing.resume`: whether a resumed run continues the run.

Every file is read without executing it (:mod:`rlaudit.checkpointing.reading`).
"""

from __future__ import annotations

from rlaudit.checkpointing.files import contents, interval_of, piece_table, written
from rlaudit.checkpointing.loading import cross_version, loading, loading_problems, round_trip
from rlaudit.checkpointing.resume import continuity, resume, resume_class
from rlaudit.checkpointing.selection import selection
from rlaudit.checkpointing.sources import (
    capabilities,
    contents_of,
    fidelity,
    guard_sources,
    newest,
    own_fidelity,
    sources,
)
from rlaudit.engine.workbench import Workbench
from rlaudit.notebook import Section

_guard_sources = guard_sources  # the name other rooms reading checkpoints (10_spaces) use

__all__ = [
    "CHECKS",
    "audit_all",
    "capabilities",
    "contents",
    "contents_of",
    "continuity",
    "cross_version",
    "fidelity",
    "guard_sources",
    "interval_of",
    "loading",
    "loading_problems",
    "newest",
    "own_fidelity",
    "piece_table",
    "resume",
    "resume_class",
    "round_trip",
    "selection",
    "sources",
    "written",
]


CHECKS = (written, contents, loading, round_trip, cross_version, selection, resume)
"""Every checkpointing check, in notebook order."""


def audit_all(wb: Workbench, trust: bool = False) -> list[Section]:
    """Every checkpointing check, in notebook order (``trust``: unpickle objects in checkpoint files)."""
    return [run(wb, trust=trust) for run in CHECKS]
