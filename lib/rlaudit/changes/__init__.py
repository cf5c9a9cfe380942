"""Culprit finding in code changes: which commit, which hunk, and how much of the gap it explains.

When the baseline and the candidate are two versions of one source (two ``git:`` refs of one repository, two
directories holding versions of one package, or a subject's directory against a ``git:`` ref), the difference
between them is a *change set* (:mod:`rlaudit.changes.changeset`): the commits between them and each file's
unified-diff hunks, each mapped to its enclosing function or class and to a subsystem. A *hybrid*
(:mod:`rlaudit.changes.hybrids`) is one side with a subset of hunks applied or reverted, materialized in the
cache as a real subject. The search (:mod:`rlaudit.changes.culprit`) bisects the commits with noisy pooled
intervals, then isolates the hunks inside each culprit commit by group testing, and measures the share of each
gap every culprit restores when reverted and reproduces when applied alone to the baseline.
:mod:`rlaudit.changes.trace` records which functions of the subject's files a probe executes (priors).

Submodules are imported where used: :mod:`rlaudit.changes.probes` runs inside subjects' processes, so this
package imports nothing at import time.
"""

from __future__ import annotations

from typing import Any


def suspects(wb: Any, priors: Any, **search: Any) -> tuple[list[Any], list[str]]:
    """The change search's culprits as attribution suspects (see :func:`rlaudit.changes.search.suspects`;
    ``search`` holds attribution's ``delta``, ``budget`` and ``seed``).

    Attribution looks this name up on the package (:func:`rlaudit.attribution.suspects.change_suspects`);
    the search itself is imported only when called.
    """
    from rlaudit.changes.search import suspects as find

    return find(wb, priors, **search)
