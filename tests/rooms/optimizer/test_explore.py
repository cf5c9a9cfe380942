"""The layer picker of 07_optimizer (``rlaudit.optimizer.explore``): one dropdown per picked column."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd

from rlaudit import explore

matplotlib.use("Agg")  # tests only: no display here (the library itself never sets a backend)


def test_the_layer_picker_offers_one_dropdown_per_picked_column() -> None:
    from rlaudit.optimizer.explore import layer_table

    rows = []
    for side, scale in (("baseline", 1.0), ("candidate", 10.0)):
        for step in (1, 2, 3):
            for layer in ("actor.0.weight", "critic.0.weight"):
                rows.append(
                    {"side": side, "seed": 0, "step": step, "layer": layer, "grad_norm": scale * step,
                     "weight_norm": 5.0, "update_ratio": scale * 0.01}
                )  # fmt: skip
    table = layer_table(pd.DataFrame(rows))
    assert set(table["quantity"]) == {"update ratio |dw|/|w|", "gradient norm", "weight norm"}
    ex = explore.curves_explorer(table, title="layers", pick=("layer", "quantity"), smooth=0.0)
    assert [c.name for c in ex.controls[:2]] == ["layer", "quantity"]
    ex.set(layer="critic.0.weight", quantity="gradient norm")
    x, y = ex._artists["lines"]["candidate"].get_data()
    np.testing.assert_allclose(y, 10.0 * np.asarray(x))  # the candidate's gradient norm, 10 x step
    assert ex._artists["ax"].get_ylabel() == "critic.0.weight · gradient norm"
