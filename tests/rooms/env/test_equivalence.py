"""The tests of :mod:`rlaudit.env.equivalence`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rlaudit.env import equivalence

# ---------------------------------------------------------------------------------------------------------
# Analysis functions
# ---------------------------------------------------------------------------------------------------------


def _digests(values: list[str]) -> dict[str, list[str]]:
    return {
        "obs": ["o", *values],
        "reward": values,
        "terminated": values,
        "truncated": values,
        "episode": values,
    }


def test_self_consistency_finds_the_first_differing_step() -> None:
    same = {"first": _digests(["a", "b", "c"]), "second": _digests(["a", "b", "c"])}
    assert equivalence.self_consistency(same) == (None, [])
    other = {"first": _digests(["a", "b", "c"]), "second": _digests(["a", "x", "c"])}
    step, fields = equivalence.self_consistency(other)
    assert step == 2 and "reward" in fields and "obs" in fields


def test_structural_differences_name_shapes_and_env_counts() -> None:
    facts = {
        "num_envs": 4,
        "observation_space": {"shape": [10], "kind": "Box"},
        "action_space": {"repr": "D(5)"},
    }
    other = {**facts, "num_envs": 2, "observation_space": {"shape": [40], "kind": "Box"}}
    out = equivalence.structural_differences(facts, other)
    assert any("num_envs 4 vs 2" in o for o in out) and any("[10] vs [40]" in o for o in out)
    assert equivalence.structural_differences(facts, dict(facts)) == []


def test_divergence_table_reports_the_first_step_per_field() -> None:
    steps, n = 4, 2
    a = {
        "obs": np.zeros((steps + 1, n, 3), dtype=np.float32),
        "reward": np.zeros((steps, n)),
        "terminated": np.zeros((steps, n), dtype=bool),
        "truncated": np.zeros((steps, n), dtype=bool),
        "episode_r": np.full((steps, n), np.nan),
    }
    b = {k: v.copy() for k, v in a.items()}
    b["reward"][2, 1] = 0.8  # step 3, env 1
    b["obs"][4, 0, 2] = 1.0  # step 4
    dig = {"obs": ["x"] * (steps + 1)}
    table, fractions = equivalence.divergence_table(a, b, dig, dig, stored=steps)
    first = dict(zip(table["field"], table["first_step"], strict=True))
    assert first["reward"] == 3 and first["obs"] == 4 and np.isnan(first["terminated"])
    assert fractions["rewards"][3] == 0.5


def test_divergence_origin_points_upstream_where_the_arrays_can_tell() -> None:
    steps, n = 6, 2
    done = np.zeros((steps, n), dtype=bool)
    done[2, 1] = True  # env 1's episode ends with the third action (same_step: obs 3 starts the next one)
    base = {"obs": np.zeros((steps + 1, n, 2)), "terminated": done, "truncated": np.zeros_like(done)}
    cand = {**base, "obs": base["obs"].copy()}
    cand["obs"][3, 1] = 1.0
    table = pd.DataFrame({"field": ["obs", "reward"], "first_step": [3, 4]})
    assert "new episode begins (env 1" in equivalence.divergence_origin(
        table, {"baseline": base, "candidate": cand}
    )
    at_reset = pd.DataFrame({"field": ["obs", "reward"], "first_step": [0, 2]})
    assert "at the reset" in equivalence.divergence_origin(at_reset, {"baseline": base, "candidate": cand})
    only_obs = pd.DataFrame({"field": ["obs", "reward"], "first_step": [3, np.nan]})
    assert "observation encoding" in equivalence.divergence_origin(
        only_obs, {"baseline": base, "candidate": cand}
    )
    # env 0 differs in the middle of an episode: the dynamics changed, nothing upstream to point at
    cand["obs"][3, 1], cand["obs"][5, 0] = 0.0, 1.0
    table = pd.DataFrame({"field": ["obs", "reward"], "first_step": [5, 6]})
    assert equivalence.divergence_origin(table, {"baseline": base, "candidate": cand}) == ""
