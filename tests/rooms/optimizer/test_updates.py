"""The tests of :mod:`rlaudit.optimizer.updates`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rlaudit.findings import Status
from rlaudit.optimizer import updates as oup
from support.runs import bench, evidence, fake_run


def test_clipping_stats_count_clipped_steps_and_threshold_breaches() -> None:
    updates = pd.DataFrame(
        {"group": 0, "grad_norm": [0.2, 0.8, 1.5, 0.4], "grad_norm_clipped": [0.2, 0.5, 0.5, 0.4]}
    )
    st = oup.clipping_stats(updates, threshold=0.5)
    assert st["fraction_clipped"] == pytest.approx(0.5) and st["over_threshold"] == 0
    unclipped = pd.DataFrame({"group": 0, "grad_norm": [0.2, 0.8], "grad_norm_clipped": [0.2, 0.8]})
    assert oup.clipping_stats(unclipped, threshold=0.5)["over_threshold"] == 1


def test_update_ratio_table_pairs_layers() -> None:
    rng = np.random.default_rng(0)
    rows = [
        {"side": s, "layer": layer, "update_ratio": scale * rng.uniform(0.9, 1.1)}
        for s, scale in (("baseline", 1e-3), ("candidate", 5e-3))
        for layer in ("a", "b")
        for _ in range(20)
    ]
    table = oup.update_ratio_table(pd.DataFrame(rows)).set_index("layer")
    assert table.loc["a", "ratio"] == pytest.approx(5.0, rel=0.15)
    assert table.loc["a", "low"] > 3.0


def _clipped_run(tmp: Path, seed: int, pre: list[float], post: list[float]) -> Any:
    n = len(pre)
    updates = {
        "update": np.arange(1, n + 1),
        "step": np.arange(1, n + 1) * 64,
        "group": np.zeros(n, int),
        "lr": np.ones(n),
        "grad_norm": pre,
        "grad_norm_clipped": post,
    }
    run = fake_run(tmp, seed=seed, config={"trainer": {"max_grad_norm": 0.5}})
    from rlaudit.engine.io import write_table

    write_table(run.run_dir / "updates", updates)
    return run


def test_clip_shares_clear_only_inside_the_margin_and_a_missing_watch_is_skipped(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pre = rng.uniform(0.1, 1.0, 400)
    post = np.minimum(pre, 0.5)
    same = [_clipped_run(tmp_path, 0, pre.tolist(), post.tolist())]
    other = [_clipped_run(tmp_path, 1, (pre * 1.02).tolist(), np.minimum(pre * 1.02, 0.5).tolist())]
    (finding,) = oup.gradient_clipping(bench(), given=evidence(same, other)).findings
    assert finding.status is Status.CLEARED
    low, high = finding.evidence.ci
    assert -0.25 < low <= finding.evidence.effect <= high < 0.25
    few = [_clipped_run(tmp_path, 2, [0.2, 0.9], [0.2, 0.5])]
    fewer = [_clipped_run(tmp_path, 3, [0.9, 0.2], [0.5, 0.2])]
    (open_,) = oup.gradient_clipping(bench(), given=evidence(few, fewer)).findings
    assert open_.status is Status.NOTED and "inconclusive" in open_.evidence.summary
    silent = [fake_run(tmp_path, seed=4)]
    silent[0].run_dir.joinpath("updates.parquet").unlink(missing_ok=True)
    silent[0].run_dir.joinpath("updates.npz").unlink(missing_ok=True)
    (skipped,) = oup.gradient_clipping(bench(), given=evidence(same, silent)).findings
    assert skipped.status is Status.SKIPPED and "recorder.watch" in skipped.remediation


def test_a_frozen_layer_is_counted_once_among_those_that_move_differently() -> None:
    """A layer the candidate no longer moves is both three-fold off and frozen: the summary said "18 of 9
    tensors move at a different rate" when every tensor of a zero-learning-rate candidate was both."""
    from rlaudit.optimizer.updates import different_layers, update_ratio_table

    rng = np.random.default_rng(0)
    rows = []
    for layer, candidate_scale in (("actor.weight", 0.0), ("critic.weight", 1.0)):
        for side, scale in (("baseline", 1.0), ("candidate", candidate_scale)):
            for value in 0.01 * scale * (1.0 + 0.1 * rng.random(8)):
                rows.append({"layer": layer, "side": side, "update_ratio": value})
    table = update_ratio_table(pd.DataFrame(rows))
    assert different_layers(table) == ["actor.weight"]
