"""The tests of :mod:`rlaudit.logging.truth`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rlaudit.findings import Status
from rlaudit.logging import audit as la
from rlaudit.metrics import Metric
from support.runs import bench, checker, evidence, fake_run

EPISODES = pd.DataFrame(
    {"step": [10, 10, 20, 30, 30, 30], "return": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "length": [2, 2, 1, 1, 1, 4]}
)


def test_definitions_by_hand() -> None:
    defs = la.definitions(EPISODES, "return", [10, 20, 30])
    np.testing.assert_allclose(defs["all episodes so far"], [1.5, 2.0, 3.5])
    np.testing.assert_allclose(defs["episodes since the previous log"], [1.5, 3.0, 5.0])
    np.testing.assert_allclose(defs["last 1 episodes"], [2.0, 3.0, 6.0])
    np.testing.assert_allclose(defs["last 10 episodes"], defs["all episodes so far"])
    np.testing.assert_allclose(defs["reward per step since the previous log"], [3 / 4, 3.0, 15 / 6])
    assert np.isnan(la.definitions(EPISODES, "return", [5])["all episodes so far"][0])


def test_match_definitions_tells_a_running_mean_from_a_window() -> None:
    rng = np.random.default_rng(0)
    steps = np.repeat(np.arange(1, 61) * 10, 5)
    episodes = pd.DataFrame({"step": steps, "return": rng.normal(np.linspace(0, 5, len(steps)), 0.5)})
    logs = np.arange(1, 61) * 10
    window = la.definitions(episodes, "return", logs)["last 20 episodes"]
    running = la.definitions(episodes, "return", logs)["all episodes so far"]
    for values, expected in ((window, "last 20 episodes"), (running, "all episodes so far")):
        logged = pd.DataFrame({"seed": 0, "step": logs, "value": values})
        table = la.match_definitions(logged, {0: episodes}, "return")
        matches = table[table["match"]]["definition"].tolist()
        assert expected in matches
        # windows longer than the whole run are the running mean too; nothing else may match
        assert all(m == expected or int(m.split()[1]) >= len(episodes) for m in matches), matches
    # A running mean lags an improving agent: against the window it is systematically low.
    logged = pd.DataFrame({"seed": 0, "step": logs, "value": running})
    gap = (
        la.match_definitions(logged, {0: episodes}, "return")
        .set_index("definition")
        .loc["last 20 episodes", "relative_gap"]
    )
    assert gap < -0.1


def test_truth_finding_confirms_a_different_definition() -> None:
    base = pd.DataFrame(
        {
            "definition": ["last 100 episodes", "all episodes so far"],
            "max_error": [0.0, 0.3],
            "mean_gap": [0.0, -0.2],
            "relative_gap": [0.0, -0.2],
            "points": [7, 7],
            "match": [True, False],
        }
    )
    cand = pd.DataFrame(
        {
            "definition": ["last 100 episodes", "all episodes so far"],
            "max_error": [0.3, 0.0],
            "mean_gap": [-0.2, 0.0],
            "relative_gap": [-0.25, 0.0],
            "points": [7, 7],
            "match": [False, True],
        }
    )
    tags = {s: ("charts/episodic_return", "log files") for s in ("baseline", "candidate")}
    c = checker("logging/truth")
    finding = la.truth_finding(c, "return", "episodic return", {"baseline": base, "candidate": cand}, tags)
    assert finding.status is Status.CONFIRMED and "-25%" in finding.evidence.summary
    same = la.truth_finding(c, "return", "episodic return", {"baseline": base, "candidate": base}, tags)
    assert same.status is Status.CLEARED


def test_truth_quiet_on_seed_shifted_pairs(make_wb, flagged, describe) -> None:
    """Runs of the same subject with other seeds: the logged statistics are defined the same way."""
    from rlaudit.trainer.runs import run_data, runs

    wb = make_wb("builtin:reference")
    every = run_data(runs(wb, seeds=range(4)))["baseline"]
    section = la.truth(wb, given=evidence(every[:2], every[2:]))
    assert not flagged([section]), describe(section.findings)
    assert all(f.status is Status.CLEARED for f in section.findings), describe(section.findings)


def test_truth_uses_the_primary_metric_and_skips_naming_what_to_log(tmp_path: Path) -> None:
    # A trainer that reports episodes but logs nothing: SKIPPED for each statistic, naming the scalar to log.
    runs = [fake_run(tmp_path, seed=i, metric=[1.0] * 8, metric_name="return") for i in range(2)]
    section = la.truth(bench(Metric("return", primary=True)), given=evidence(runs, runs))
    (finding,) = section.findings
    assert finding.id == "logging/truth-return" and finding.status is Status.SKIPPED
    assert "charts/episodic_return" in finding.evidence.summary and "recorder.log" in finding.remediation
    custom = la.truth(bench(Metric("score", primary=True)), given=evidence(runs, runs))
    ids = {f.id: f for f in custom.findings}
    assert set(ids) == {"logging/truth-return", "logging/truth-score"}
    assert "no episodes reporting `score`" in ids["logging/truth-score"].evidence.summary
