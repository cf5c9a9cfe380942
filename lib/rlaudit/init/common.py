"""What every init check reads: freshly built networks on both sides (one cached run of
:func:`rlaudit.init.probes.init_stats`), on the observations the agents audit uses, and its seeds.
"""

from __future__ import annotations

from typing import Any

from rlaudit.agents.common import network_params
from rlaudit.engine.workbench import Workbench
from rlaudit.init import probes

__all__ = ["FRESH_NETWORKS", "init_params", "seeds_for"]


def init_params(wb: Workbench) -> dict[str, Any]:
    """Parameters of :func:`rlaudit.init.probes.init_stats`: the profile's seed count, at least 3 (schemes of
    one-row layers need 2) and at most 8, on the observations the agents audit uses."""
    return network_params(wb, at_least=3, at_most=8)


FRESH_NETWORKS = {"probe": probes.init_stats, "params": init_params, "desc": "init: fresh networks"}
"""The evidence every init check reads: freshly built networks on both sides (one cached run)."""


def seeds_for(wb: Workbench) -> list[int]:
    """Init seeds (see :func:`init_params`)."""
    return init_params(wb)["seeds"]
