"""Attribution: which changes explain the gap between baseline and candidate, measured, with intervals.

One module per concern:

- :mod:`~rlaudit.attribution.suspects`: the changes an experiment can undo in the candidate (config
  restores, built-in fixes, named variants) and how a set of them is composed into one subject to run;
- :mod:`~rlaudit.attribution.arms`: arms (the runs of one setup over shared seeds), the share of a gap an
  arm restores (:class:`~rlaudit.attribution.arms.Effect`), and the search's result;
- :mod:`~rlaudit.attribution.search`: the search itself (audit evidence first, interactions, group testing,
  sequential seeds) and :func:`~rlaudit.attribution.pair.attribute`;
- :mod:`~rlaudit.attribution.ranking`: audit evidence and its echoes, the ranked causes, the wording of a
  share, and the findings attribution writes;
- :mod:`~rlaudit.attribution.figures`: the forest plot, the learning curves and the throughput waterfall.

Import from the submodules. The names below are kept here for the commands that name this package
(``rlaudit audit`` ranks by :func:`rank_causes`, ``rlaudit bench`` runs :func:`bench_attribution`).
"""

from __future__ import annotations

from rlaudit.attribution.pair import attribute, bench_attribution
from rlaudit.attribution.ranking import rank_causes

__all__ = ["attribute", "bench_attribution", "rank_causes"]
