"""The layer picker of 07_optimizer: one tensor's update ratio, gradient norm or weight norm over training,
baseline and candidate side by side (the recorder's ``layers`` table of the short runs ``update_ratios`` reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlaudit.explore import Explorer, curves_explorer, nothing_to_explore
from rlaudit.trainer.common import stack_tables
from rlaudit.trainer.runs import short_training_runs

if TYPE_CHECKING:
    import pandas as pd

    from rlaudit.engine.workbench import Workbench

QUANTITIES = {
    "update_ratio": "update ratio |dw|/|w|",
    "grad_norm": "gradient norm",
    "weight_norm": "weight norm",
}


def layer_table(layers: pd.DataFrame) -> pd.DataFrame:
    """``layers`` (side, seed, step, layer and the quantities) as tidy rows ``layer, quantity, side, seed,
    step, value`` for the quantities present."""
    present = [q for q in QUANTITIES if q in layers]
    tidy = layers.melt(
        id_vars=["side", "seed", "step", "layer"], value_vars=present, var_name="quantity", value_name="value"
    )
    tidy["quantity"] = tidy["quantity"].map(QUANTITIES)
    return tidy.dropna(subset=["value"]).reset_index(drop=True)


def layer_explorer(wb: Workbench) -> Any:
    """The layer picker (JupyterLab: live; the report: the first tensor's update ratio)."""

    layers = stack_tables(short_training_runs(wb).data, "layers")
    if layers.empty or not {"layer", "step"} <= set(layers):
        text = "No layer picker: no run wrote the recorder's layers table (see optimizer/update-ratios)."
        return nothing_to_explore(text)
    return curves_explorer(
        layer_table(layers),
        title="Layer picker: per-tensor statistics over training",
        pick=("layer", "quantity"),
        smooth=0.0,
    )


__all__ = ["Explorer", "layer_explorer", "layer_table"]
