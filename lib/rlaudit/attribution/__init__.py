"""Attribution: which changes explain the gap between baseline and candidate, measured, with intervals.

One engine, two strategies on it, and what they read and write; one module per concern:

- :mod:`~rlaudit.attribution.engine`: the engine every search runs on (arms and their runs, the budget, the
  two sides' gaps, sequential seeds, pooled intervals) and the :class:`~rlaudit.attribution.engine.Strategy`
  protocol a search implements;
- :mod:`~rlaudit.attribution.arms`: arms (the runs of one setup over shared seeds; a change search's
  :class:`~rlaudit.attribution.arms.ChangeArm`), the share of a gap an arm restores
  (:class:`~rlaudit.attribution.arms.Effect`), and the screening's result;
- :mod:`~rlaudit.attribution.screening`: restores suspects by subsystem (audit evidence first, interactions,
  group testing); :mod:`~rlaudit.attribution.suspects`: the changes it can undo (config restores, built-in
  fixes, named variants, code changes) and how a set of them becomes one subject to run;
  :func:`~rlaudit.attribution.pair.attribute` gathers the suspects and runs it;
- :mod:`~rlaudit.attribution.bisection`: bisects the commits between two versions of one source, then
  isolates the hunks (:mod:`~rlaudit.attribution.grouping`, :mod:`~rlaudit.attribution.culprits`);
  :mod:`~rlaudit.attribution.code_changes` runs it on a workbench and hands its culprits to the screening;
- :mod:`~rlaudit.attribution.ranking`: audit evidence and its echoes, the ranked causes, the wording of a
  share, and the findings attribution writes;
- :mod:`~rlaudit.attribution.figures`, :mod:`~rlaudit.attribution.summary` (the summary room, notebook 15)
  and :mod:`~rlaudit.attribution.culprit_report` (its change-search section);
- :mod:`~rlaudit.attribution.probes`: what a subject offers to undo in itself (``fixes()``), read in its
  worker.

The model of a code change it searches (trees, hunks, change sets, hybrids) is :mod:`rlaudit.changes`, which
imports nothing from here. Import from the submodules. The names below are kept here for the commands that
name this package (``rlaudit audit`` ranks by :func:`rank_causes`, ``rlaudit bench`` runs
:func:`bench_attribution`); they are imported on first use, since :mod:`~rlaudit.attribution.probes` runs in
subjects' own processes and importing this package must pull in nothing heavy there.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "attribute": "rlaudit.attribution.pair",
    "bench_attribution": "rlaudit.attribution.pair",
    "rank_causes": "rlaudit.attribution.ranking",
}

__all__ = ["attribute", "bench_attribution", "rank_causes"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rlaudit.attribution' has no attribute {name!r}")
