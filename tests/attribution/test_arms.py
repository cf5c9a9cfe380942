"""A throughput share rests on runs timed at a similar load, or it is no verdict: steps per CPU-second drift with
the machine's contention between batches, and a share's interval only knows the seed-to-seed spread within one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlaudit.attribution.arms import LOAD, LOAD_RATIO, SPS, Arm, Effect, run_load, sps_incomparable
from rlaudit.attribution.figures import INCOMPARABLE_LABEL, forest_plot, sps_waterfall
from rlaudit.attribution.ranking import attribution_findings, rank_causes
from rlaudit.attribution.summary import executive_summary
from rlaudit.findings import Status
from rlaudit.trainer.runs import RunData
from support.attribution import REGRESSED_LIKE, SimSearch, fixes

REASON = "not comparable: the arm was timed at load 4.6 per core, the baseline and candidate at 1.2"


def _arm(name: str, *loads: float) -> Arm:
    return Arm(name, name, measured=[{SPS: 1000.0, LOAD: x} for x in loads])


def test_runs_at_similar_loads_compare_and_runs_at_distant_ones_say_both_loads():
    base = (_arm("baseline", 1.2, 1.2), _arm("candidate", 1.2, 1.25))
    assert sps_incomparable([_arm("a", 1.3, 1.4)], base) == ""
    reason = sps_incomparable([_arm("a", 4.6)], base)
    assert reason.startswith(REASON) and reason.endswith("so that every run is timed at a similar load")
    # spare cores (under one runnable thread per core) are all alike: a quiet machine compares with itself
    assert sps_incomparable([_arm("a", 0.05)], (_arm("baseline", 0.9), _arm("candidate", 0.5))) == ""
    # the edge of the rule is LOAD_RATIO on max(1, load per core)
    assert sps_incomparable([_arm("a", LOAD_RATIO * 0.99)], (_arm("baseline", 1.0),)) == ""
    assert sps_incomparable([_arm("a", LOAD_RATIO * 1.01)], (_arm("baseline", 1.0),)) != ""
    # the two sides timed apart from each other are named as a range
    split = sps_incomparable([_arm("a", 1.0)], (_arm("baseline", 1.0), _arm("candidate", 3.0)))
    assert "the baseline and candidate at 1.0..3.0" in split


def test_unknown_loads_keep_the_comparison_as_before(tmp_path):
    assert sps_incomparable([_arm("a", math.nan)], (_arm("baseline", 1.0), _arm("candidate", 1.0))) == ""
    assert sps_incomparable([_arm("a", 5.0)], (_arm("baseline", math.nan),)) == ""
    assert sps_incomparable([Arm("a", "a", measured=[{SPS: 1.0}])], (_arm("baseline", 1.0),)) == ""
    # a run recorded before summary.json carried the load reads as unknown
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text('{"steps": 10, "sps_cpu": 5.0}')
    assert math.isnan(run_load(RunData("candidate", 0, tmp_path)))
    (tmp_path / "run" / "summary.json").write_text('{"steps": 10, "load_per_core": 2.5}')
    assert run_load(RunData("candidate", 0, tmp_path)) == 2.5


def test_an_incomparable_share_is_undecided_and_no_seeds_would_settle_it():
    clear = Effect(point=1.3, low=0.3, high=3.8, n=1, family=6)
    assert clear.verdict(0.2) == "cause" and clear.matters(0.2)
    e = Effect(point=1.3, low=0.3, high=3.8, n=1, family=6, incomparable=REASON)
    assert e.verdict(0.2) == "undecided"
    assert not (e.matters(0.2) or e.contributes(0.2) or e.decided(0.2))
    assert e.seeds_to_decide(0.2) is None
    none = Effect(point=-1.0, low=-4.3, high=-0.9, n=1, incomparable=REASON)
    assert none.verdict(0.2) == "undecided"  # never "no effect" either


class LoadedSearch(SimSearch):
    """The simulated search with each run's load per core: the two sides at ``sides``, every other arm at
    ``arms`` (None: the runs carry no load, as before the recorder measured it)."""

    def __init__(self, sides: float | None, arms: float | None) -> None:
        super().__init__(
            fixes(REGRESSED_LIKE[:4]),
            heart={"gae": 1.0},
            sps={"full_scan": 0.9, "rebuild": 0.1},
            budget=60,
            max_seeds=5,
        )
        self.loads = (sides, arms)

    def measure(self, calls):
        out = super().measure(calls)
        sides, arms = self.loads
        for (arm, _), (_, row) in zip(calls, out, strict=True):
            load = sides if arm.name in ("baseline", "candidate") else arms
            if load is not None:
                row[LOAD] = load
        return out


def _verdicts(result, metric=SPS):
    return {r["arm"]: (r["verdict"], round(r["point"], 6)) for r in result.ranking[metric]}


def test_throughput_shares_at_similar_loads_keep_their_verdicts():
    before = LoadedSearch(None, None).run()
    similar = LoadedSearch(1.2, 1.4).run()
    assert _verdicts(before)["full_scan"][0] == "cause"
    assert _verdicts(similar) == _verdicts(before)
    assert _verdicts(similar, "heart.get") == _verdicts(before, "heart.get")
    assert not any(r["incomparable"] for r in similar.ranking[SPS])


def test_throughput_shares_at_another_load_are_undecided_and_say_why():
    result = LoadedSearch(1.2, 4.6).run()
    rows = {r["arm"]: r for r in result.ranking[SPS]}
    assert rows["full_scan"]["verdict"] == "undecided" and rows["full_scan"]["incomparable"].startswith(
        REASON
    )
    assert rows["full_scan"]["needed"] is None  # no number of seeds settles a load difference
    assert all(r["verdict"] == "undecided" for r in rows.values())
    # the learning gap, measured on the same runs, is unaffected by the machine's load
    assert _verdicts(result, "heart.get")["gae"][0] == "cause"

    findings = {f.id: f for f in attribution_findings(result)}
    full_scan = findings["summary/attribution-full_scan"]
    assert full_scan.status is Status.SUSPECT  # neither CONFIRMED nor "measurably no cause"
    assert REASON in full_scan.evidence.summary
    # a suspect with no learning share and an incomparable throughput share is not cleared as a red herring
    assert findings["summary/attribution-shaped"].status is Status.SUSPECT
    verdicts = {c.subsystem: c.verdict for c in rank_causes(list(findings.values()), result)}
    assert verdicts["curriculum"] == "undecided" and verdicts["loss"] == "primary"
    assert verdicts["rewards"] == "undecided"  # never "red herring"

    summary = executive_summary(list(findings.values()), result, 0.2)
    sps_sentence = next(s for s in summary["sentences"] if s.startswith("steps per CPU-second"))
    assert (
        "Primary cause" not in sps_sentence
        and "Undecided, so not named as causes: 4 shares" in sps_sentence
        and REASON in sps_sentence
    )
    assert "rewards" not in summary["red_herrings"]


def test_figures_do_not_draw_an_incomparable_share_as_decided():
    result = LoadedSearch(1.2, 4.6).run()
    forest = forest_plot(result)
    panel = next(ax for ax in forest.axes if ax.get_title().startswith("steps per CPU-second"))
    assert panel.get_legend() is not None
    assert [t.get_text() for t in panel.get_legend().get_texts()] == [INCOMPARABLE_LABEL]
    waterfall = sps_waterfall(result)
    title = waterfall.axes[0].get_title()
    assert INCOMPARABLE_LABEL in title
    bars = [t.get_text() for t in waterfall.axes[0].get_yticklabels()]
    assert "full_scan" not in bars  # only decided causes are drawn as steps

    decided = sps_waterfall(LoadedSearch(1.2, 1.4).run())
    assert "full_scan" in [t.get_text() for t in decided.axes[0].get_yticklabels()]
    assert INCOMPARABLE_LABEL not in decided.axes[0].get_title()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def test_loads_are_not_attributed_as_a_metric():
    result = LoadedSearch(1.2, 1.4).run()
    assert LOAD not in result.metrics and set(result.ranking) <= {"heart.get", SPS}
    assert np.allclose(result.arms[0].values(LOAD), 1.2)


def _engine_with(sides: float, **arms: tuple[float, float]):
    """An engine whose two sides ran 2 seeds at load ``sides`` (58k and 33.5k steps per CPU-second), and arms
    ``name=(steps per CPU-second, load)``."""
    from rlaudit.attribution.engine import Engine

    engine = Engine(None, runner=lambda calls: [], metric="heart.get", max_seeds=2)
    b, c = engine.base_arms()
    for arm, sps in ((b, 58_000.0), (c, 33_500.0)):
        for s in range(2):
            arm.add(None, {"heart.get": 1.0, SPS: sps + 100.0 * s, LOAD: sides})
    for name, (sps, load) in arms.items():
        engine.arms[name] = Arm(name, name)
        for s in range(2):
            engine.arms[name].add(None, {"heart.get": 1.0, SPS: sps + 100.0 * s, LOAD: load})
    return engine


def _sps_values(engine, *names):
    from rlaudit.attribution.arms import attribution_scale

    return {n: attribution_scale(SPS, engine.arms[n].values(SPS)) for n in names}


def test_the_engine_marks_each_share_by_the_arms_it_rests_on():
    engine = _engine_with(1.2, quiet=(55_000.0, 1.3), busy=(55_000.0, 4.6))
    effects = engine.pooled(SPS, _sps_values(engine, "quiet", "busy"))
    assert effects["quiet"].incomparable == "" and effects["quiet"].verdict(0.2) == "cause"
    assert effects["busy"].incomparable.startswith(REASON) and effects["busy"].verdict(0.2) == "undecided"
    # the primary metric is not a timing: its shares never depend on the load
    assert all(not e.incomparable for e in engine.pooled("heart.get", {"busy": np.ones(2)}).values())
    # a share measured on other arms than its name (a reverse check, a contrast) names them
    effects = engine.pooled(
        SPS, {"inject": _sps_values(engine, "quiet")["quiet"]}, {"inject": [engine.arms["busy"]]}
    )
    assert effects["inject"].incomparable.startswith(REASON)

    class Contrast:  # a strategy whose family member "quiet - busy" rests on both arms
        def rests_on(self, name):
            return [engine.arms["quiet"], engine.arms["busy"]]

    engine.strategy = Contrast()  # type: ignore[assignment]
    effects = engine.pooled(SPS, {"quiet - busy": _sps_values(engine, "quiet")["quiet"]})
    assert "its arms were timed at load 1.3..4.6 per core" in effects["quiet - busy"].incomparable


def test_an_incomparable_share_is_never_ruled_out():
    from rlaudit.attribution.explore import label_at

    low = Effect(point=-1.0, low=-4.3, high=-0.9, n=1)
    assert low.below(0.2) and label_at(low, 0.2) == "no effect"
    low.incomparable = REASON
    assert not low.below(0.2) and label_at(low, 0.2) == "undecided"
