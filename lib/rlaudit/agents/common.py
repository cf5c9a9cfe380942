"""What every agents check reads: the network probe on both sides (one cached run), its parameters, and the
two module trees it records.

:func:`network_params` is shared with the init room, whose fresh networks are built on the same observations.
"""

from __future__ import annotations

from typing import Any

from rlaudit.agents import probes
from rlaudit.engine.workbench import Pair, Workbench

__all__ = ["NETWORK", "network_params", "seeds_for", "tree_pair"]


def network_params(wb: Workbench, *, at_least: int = 2, at_most: int = 5) -> dict[str, Any]:
    """Parameters of the fresh-network probes (agents' and init's): torch seeds (the profile's seed count
    clipped to ``[at_least, at_most]``), the environment seed, the rollout that provides observations, and the
    observation batch."""
    return {
        "seeds": list(range(max(at_least, min(int(wb.profile.seeds), at_most)))),
        "env_seed": 0,
        "rollout_steps": int(wb.profile.rollout_steps),
        "batch": 512,
    }


NETWORK = {"probe": probes.network, "params": network_params, "desc": "agents: networks"}
"""The evidence every agents check reads: the network probe on both sides (one cached run)."""


def seeds_for(wb: Workbench) -> list[int]:
    """Network seeds for the structural audits: the profile's seed count, at least 2 and at most 5."""
    return network_params(wb)["seeds"]


def tree_pair(pair: Pair) -> tuple[dict[str, Any], dict[str, Any]]:
    """The baseline's and the candidate's module trees, as the network probe recorded them."""
    return pair.baseline.json("tree"), pair.candidate.json("tree")
