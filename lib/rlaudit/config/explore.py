"""The config explorer of 14_config: every resolved key side by side, W&B-style: diff only, key search, and
a subsystem filter."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rlaudit.config.diff import load_diff
from rlaudit.explore import TableExplorer, choice, nothing_to_explore, text, toggle
from rlaudit.findings import notebook_name

if TYPE_CHECKING:
    import pandas as pd

    from rlaudit.engine.workbench import Workbench

ALL = "all subsystems"


def _cell(value: Any) -> str:
    """A config value as text; a key a side does not have shows as a dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return str(value)


def diff_explorer(table: pd.DataFrame) -> TableExplorer:
    """Controls over a config diff table (``key, subsystem, baseline, candidate, change``)."""
    frame = table.copy()
    frame.insert(2, "room", [notebook_name(s) for s in frame["subsystem"]])
    for side in ("baseline", "candidate"):
        frame[side] = frame[side].map(_cell)
    subsystems = sorted(set(frame["subsystem"]))

    def rows(values: dict[str, Any]) -> pd.DataFrame:
        out = frame
        if values["diff_only"]:
            out = out[out["change"] != "same"]
        if values["subsystem"] != ALL:
            out = out[out["subsystem"] == values["subsystem"]]
        query = values["search"].strip().lower()
        if query:
            out = out[out["key"].str.lower().str.contains(query, regex=False)]
        return out.reset_index(drop=True)

    return TableExplorer(
        title=f"Config explorer: {len(frame)} keys",
        controls=[
            toggle("diff_only", True, label="diff only"),
            text("search", "", label="key search"),
            choice("subsystem", [ALL, *subsystems], ALL, label="subsystem"),
        ],
        rows=rows,
    )


def config_explorer(wb: Workbench) -> Any:
    """The config explorer over both resolved configs (cached: the same probe as ``config/values``)."""

    _pair, diff = load_diff(wb)
    if diff is None:
        text_ = "No config explorer: a side's config did not resolve (see config/values)."
        return nothing_to_explore(text_)
    return diff_explorer(diff.table)


__all__ = ["config_explorer", "diff_explorer"]
