"""The model of a code change: what differs between two versions of one source, and subjects built from parts.

When the baseline and the candidate are two versions of one source (two ``git:`` refs of one repository, two
directories holding versions of one package, or a subject's directory against a ``git:`` ref), the difference
between them is a *change set* (:mod:`rlaudit.changes.changeset`): the commits between them and each file's
unified-diff hunks (:mod:`rlaudit.changes.hunks`, read from :mod:`rlaudit.changes.trees`), each mapped to its
enclosing function or class (:mod:`rlaudit.changes.scopes`) and to a subsystem with a prior
(:mod:`rlaudit.changes.priors`). A *hybrid* (:mod:`rlaudit.changes.hybrids`) is one side with a subset of hunks
applied or reverted, materialized in the cache as a real subject; :mod:`rlaudit.changes.targets` names the
subjects a search runs (commit checkouts and hybrids). :mod:`rlaudit.changes.trace` records which functions of
the subject's files a probe executes (priors), run in the subject's process by :mod:`rlaudit.changes.probes`.

The search over a change set (which commit, which hunk, how much of the gap) is attribution's:
:mod:`rlaudit.attribution.bisection`, on the attribution engine. This package imports nothing from
:mod:`rlaudit.attribution` (``tests/test_architecture.py``). Submodules are imported where used:
:mod:`rlaudit.changes.probes` runs inside subjects' processes, so this package imports nothing at import time.
"""
