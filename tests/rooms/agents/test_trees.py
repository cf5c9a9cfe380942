"""The tests of :mod:`rlaudit.agents.trees`."""

from __future__ import annotations

import math

from support.toys import mlp


def tree(obs: int, widths: tuple[int, ...] = (16,), act: str = "Tanh", n_actions: int = 3) -> dict:
    """A ``tree.json`` of one actor block: obs -> widths... -> n_actions."""
    names = [f"actor.{2 * i}" for i in range(len(widths) + 1)]
    recs = mlp(names, [obs, *widths, n_actions], act=act)
    for i, r in enumerate(recs):
        r["order"] = i
        r["n_params"] = 0
    total = sum(math.prod(shape) for r in recs for shape in r["params"].values())
    return {
        "modules": recs,
        "order": [r["path"] for r in recs],
        "obs_consumers": ["actor.0"],
        "heads": {"policy": names[-1], "value": None},
        "obs_size": obs,
        "n_actions": n_actions,
        "blocks": {"actor": total, "total": total},
    }


def test_input_resize_that_follows_the_observation_is_a_knock_on() -> None:
    from rlaudit.agents.trees import compare_trees

    cmp = compare_trees(tree(10), tree(40))
    assert cmp["real"] == []
    assert len(cmp["knock_on"]) == 1
    cmp = compare_trees(tree(10), {**tree(10), "obs_size": 12})  # input 10 no longer equals the observation
    assert cmp["knock_on"] == [] and cmp["real"] == []  # same layers: nothing resized


def test_changed_quantities_name_width_depth_activation_and_parameters() -> None:
    from rlaudit.agents.trees import changed_quantities

    # 10->64->64->3 = 704 + 4160 + 195 = 5059 parameters; 10->16->16->3 = 176 + 272 + 51 = 499
    assert changed_quantities(tree(10, (64, 64)), tree(10, (16, 16))) == [
        "hidden width 64 → 16",
        "parameters 5,059 → 499",
    ]
    assert changed_quantities(tree(10, (64, 64)), tree(10, (64, 64), act="ReLU")) == [
        "activation Tanh → ReLU"
    ]
    assert (
        changed_quantities(tree(10, (64, 64)), tree(10, (64, 64, 64)))[0] == "hidden layers per block 2 → 3"
    )
    assert changed_quantities(tree(10, (64, 64)), tree(10, (64, 64))) == []
