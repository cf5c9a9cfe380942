"""Attribution: composing suspects into arms, effects, and the search against a simulated trainer (the real
search runs in the summary notebook, in `make report`, and in tests/rooms/test_two_faults_rank_on_top.py).
The ranking is tested in tests/attribution/test_ranking.py."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from rlaudit import stats
from rlaudit.attribution import suspects
from rlaudit.attribution.arms import SPS, Effect, attribution_scale
from rlaudit.attribution.engine import Engine
from rlaudit.attribution.ranking import rank_causes
from rlaudit.attribution.suspects import (
    Suspect,
    compose,
    compose_injection,
    fix_suspects,
    variant_suspects,
)
from rlaudit.engine.subjects import parse_spec
from rlaudit.findings import Evidence, Finding, Severity, Status
from support.attribution import REGRESSED_LIKE, SimSearch, fixes


def _suspect(name, subsystem, **kw):
    return Suspect(name=name, subsystem=subsystem, source=kw.pop("source", "fix"), **kw)


def test_compose_removes_builtin_faults_and_keeps_the_candidates_environment():
    cand = parse_spec("builtin:regressed", env={"OMP_NUM_THREADS": "1"})
    target, overrides = compose(
        cand,
        [
            _suspect("a", "loss", remove=("loss.gae_bootstrap",)),
            _suspect("b", "rewards", remove=("rewards.shaped_reward_lost",)),
        ],
    )
    assert target.text == "builtin:regressed-loss.gae_bootstrap,rewards.shaped_reward_lost"
    assert dict(target.env) == {"OMP_NUM_THREADS": "1"} and overrides == ()


def test_compose_config_restores_run_on_the_candidate_itself_with_overrides():
    cand = parse_spec("builtin:regressed")
    target, overrides = compose(
        cand, [_suspect("r", "rewards", source="config", overrides=("env.rewards.battery=0.8",))]
    )
    assert target == "candidate" and overrides == ("env.rewards.battery=0.8",)


def test_the_reverse_check_puts_one_change_into_the_baseline():
    base = parse_spec("builtin:reference", env={"OMP_NUM_THREADS": "1"})
    fix = _suspect(
        "fix loss.gae_bootstrap", "loss", remove=("loss.gae_bootstrap",), add=("loss.gae_bootstrap",)
    )
    target, overrides = compose_injection(base, fix)
    assert overrides == ()
    assert target.text == "builtin:reference+loss.gae_bootstrap" and dict(target.env) == {
        "OMP_NUM_THREADS": "1"
    }
    restore = _suspect(
        "r",
        "rewards",
        source="config",
        overrides=("env.rewards.battery=0.8",),
        inject=("env.rewards.battery=0",),
    )
    assert compose_injection(base, restore) == ("baseline", ("env.rewards.battery=0",))
    assert fix.injectable and restore.injectable and not _suspect("v", "loss", source="variant").injectable
    # a built-in fix is injectable only into a built-in baseline
    exposed = [{"id": "loss.gae_bootstrap", "subsystem": "loss"}]
    (only_fix,) = fix_suspects(exposed, {"loss": 2.0}, "mine:subject.py")
    assert only_fix.remove == ("loss.gae_bootstrap",) and not only_fix.injectable
    assert (only_fix.name, only_fix.subsystem, only_fix.prior) == ("fix loss.gae_bootstrap", "loss", 2.0)
    (both_ways,) = fix_suspects(exposed, {}, "builtin:reference")
    assert both_ways.add == ("loss.gae_bootstrap",) and both_ways.injectable


def test_a_named_variant_cannot_be_grouped():
    cand = parse_spec("builtin:regressed")
    v = _suspect("fix", "loss", source="variant", spec="builtin:reference")
    assert compose(cand, [v])[0].text == "builtin:reference"
    with pytest.raises(ValueError, match="cannot be combined"):
        compose(cand, [v, _suspect("r", "rewards", source="config", overrides=("a=1",))])


def test_a_new_kind_of_change_composes_through_its_registered_composer(monkeypatch):
    cand = parse_spec("builtin:regressed", env={"OMP_NUM_THREADS": "1"})
    hunk = _suspect("revert hunk 3", "loss", source="change", refs=("abc123:3",))
    # as in a process where rlaudit.changes (which registers the real one) was never imported
    monkeypatch.delitem(suspects.COMPOSERS, "change", raising=False)
    with pytest.raises(ValueError, match="no composer is registered"):
        compose(cand, [hunk])
    assert not hunk.injectable
    undo = lambda spec, group: spec.replace(label="without " + ",".join(r for s in group for r in s.refs))  # noqa: E731
    monkeypatch.setitem(suspects.COMPOSERS, "change", suspects.Composer(undo=undo))
    restore = _suspect("r", "rewards", source="config", overrides=("env.rewards.battery=0.8",))
    target, overrides = compose(cand, [hunk, restore])
    assert target.label == "without abc123:3" and dict(target.env) == {"OMP_NUM_THREADS": "1"}
    assert overrides == ("env.rewards.battery=0.8",)
    assert not hunk.injectable  # no reverse experiment without a put
    put = lambda spec, s: spec.replace(label="with " + s.refs[0])  # noqa: E731
    monkeypatch.setitem(suspects.COMPOSERS, "change", suspects.Composer(undo=undo, put=put))
    assert hunk.injectable and compose_injection(cand, hunk)[0].label == "with abc123:3"


def test_code_changes_are_searched_only_when_asked():
    assert suspects.change_suspects(None, {}, "off") == ([], [])
    with pytest.raises(ValueError, match="expected one of auto, off"):
        suspects.change_suspects(None, {}, "yes")


def test_variant_suspects_parse_names_and_subsystems():
    out = variant_suspects("fix gae@loss=builtin:reference, builtin:regressed", {"loss": 3.0})
    assert [(s.name, s.subsystem, s.spec, s.prior) for s in out] == [
        ("fix gae", "loss", "builtin:reference", 3.0),
        ("builtin:regressed", "trainer", "builtin:regressed", 0.0),
    ]
    with pytest.raises(ValueError, match="unknown subsystem"):
        variant_suspects("x@nowhere=builtin:reference", {})


def test_effect_verdicts():
    assert Effect(0.6, 0.3, 0.9, 1).verdict(0.2) == "cause"
    assert Effect(0.12, 0.07, 0.18, 1).verdict(0.2) == "minor"
    assert Effect(0.07, 0.01, 0.13, 1).verdict(0.2) == "no effect"  # not surely above 5%
    assert Effect(0.02, -0.05, 0.1, 1).verdict(0.2) == "no effect"
    assert Effect(0.18, 0.1, 0.25, 1).verdict(0.2) == "undecided"


def test_effect_decisions():
    assert Effect(0.6, 0.3, 0.9, 4).matters(0.2) and Effect(0.6, 0.3, 0.9, 4).decided(0.2)
    assert not Effect(0.05, -0.1, 0.15, 4).matters(0.2) and Effect(0.05, -0.1, 0.15, 4).decided(0.2)
    assert not Effect(0.3, 0.05, 0.6, 2).decided(0.2)  # straddles delta: more seeds


def test_seeds_to_decide_follow_the_shrinking_interval():
    # the cartpole restore: -66% (CI -360%..96%) at one seed is 2.28 wide on each side, 0.86 from 20%
    assert Effect(-0.66, -3.6, 0.96, 1).seeds_to_decide(0.2) == 8
    assert Effect(0.3, 0.05, 0.6, 2).seeds_to_decide(0.2) == 16  # half-width 0.275, 0.1 from delta
    assert Effect(0.6, 0.3, 0.9, 4).seeds_to_decide(0.2) == 4  # decided already: the seeds it has
    assert Effect(0.2, 0.0, 0.4, 3).seeds_to_decide(0.2) is None  # on the threshold: never decided


# ------------------------------------------------------------------------------------------------------------
# The search against a simulated trainer: each suspect restores a known share of each gap, with seed noise
# ------------------------------------------------------------------------------------------------------------


def _top(result, metric):
    return next(r["arm"] for r in result.ranking[metric] if r["single"])


def test_search_ranks_both_dominant_causes_first_with_a_third_of_a_full_sweep():
    search = SimSearch(
        fixes(REGRESSED_LIKE),
        heart={"gae": 1.1, "shaped": 0.44},
        sps={"full_scan": 0.9, "rebuild": 0.1, "interval": 0.04},
        budget=60,
        max_seeds=5,
    )
    result = search.run()
    assert _top(result, "heart.get") == "gae" and _top(result, "sps") == "full_scan"
    causes = {
        r["arm"] for rows in result.ranking.values() for r in rows if r["single"] and r["verdict"] == "cause"
    }
    assert causes == {"gae", "shaped", "full_scan"}
    spent = result.spent
    assert spent["runs"] == search.calls <= spent["budget"]
    assert spent["variant_runs"] * 3 <= spent["full_sweep_variant_runs"] == 30
    assert result.together["effects"]["heart.get"]["low"] > 0.8  # the causes together close the gap
    # the reverse check: the primary cause alone, put into the baseline, reproduces the learning gap
    reproduced = result.injected["gae"]["heart.get"]
    assert reproduced.low > 0.8 and reproduced.n == 1 and list(result.injected) == ["gae"]
    seeds = {a.name: a.n for a in result.arms}
    # the first places rest on two seeds; a runner-up already clear of them is not grown
    assert seeds["gae"] == seeds["full_scan"] == 2 and seeds["shaped"] == 1


def test_suspects_not_needed_to_explain_the_gaps_are_left_unmeasured():
    named = [
        ("gae", "loss", 6.5),
        ("full_scan", "curriculum", 6.0),
        ("lr", "optimizer", 4.5),
        ("x", "env", 3.0),
    ]
    search = SimSearch(fixes(named), heart={"gae": 1.0}, sps={"full_scan": 1.0}, max_seeds=5)
    result = search.run()
    assert {a.name for a in result.arms} == {
        "baseline",
        "candidate",
        "gae",
        "full_scan",
        "gae + full_scan",
        "inject gae",  # the reverse check of the primary cause
    }
    assert any("not needed to explain it" in n and "lr, x" in n for n in result.notes)


def test_a_first_place_gains_seeds_until_it_clears_the_runner_up():
    search = SimSearch(
        fixes(REGRESSED_LIKE[:3]), heart={"gae": 0.56, "rebuild": 0.44}, sps={"shaped": 1.0}, max_seeds=5
    )
    result = search.run()
    top, second = [r for r in result.ranking["heart.get"] if r["single"]][:2]
    assert top["arm"] == "gae" and second["arm"] == "rebuild"
    assert top["n"] >= 2 and second["n"] >= 2  # one seed each did not separate them
    assert top["low"] > second["high"] or (
        top["n"] == second["n"] == 5
        and any("which comes first is not established" in n for n in result.notes)
    )
    assert any(line.startswith("one more seed for a first place") for line in result.log)


def test_throughput_is_split_as_time_per_step_where_costs_add_up():
    # halving SPS (100 -> 50 steps/s) by two costs: a = 7.5 ms of the 10 ms lost per step, b = 2.5 ms. On the
    # SPS scale a alone would restore 60% (50 -> 80) and b 14% (50 -> 57): 74% "in all", never adding up.
    costs = np.array([[1 / 100.0], [1 / 50.0], [1 / 80.0], [1 / 57.142857]])
    assert np.allclose(attribution_scale(SPS, 1.0 / costs), costs)
    assert np.isnan(attribution_scale(SPS, np.array([0.0, np.nan]))).all()
    assert np.array_equal(attribution_scale("heart.get", np.array([2.0])), [2.0])
    search = SimSearch(
        fixes([("a", "curriculum", 5.0), ("b", "env", 4.0)]),
        heart={},
        sps={"a": 0.75, "b": 0.25},
        noise=(0.3, 300.0),
        max_seeds=5,
    )
    search.ends = {"heart.get": (0.5, 0.5), "sps": (60_000.0, 30_000.0)}
    result = search.run()
    share = {r["arm"]: r for r in result.ranking["sps"]}
    assert share["a"]["low"] < 0.75 < share["a"]["high"] and share["b"]["low"] < 0.25 < share["b"]["high"]
    assert result.together["effects"]["sps"]["low"] < 1.0 < result.together["effects"]["sps"]["high"]
    assert "stays unexplained" not in result.together["note"]


def test_a_small_measurable_share_is_minor_and_restored_with_the_causes_not_a_red_herring():
    search = SimSearch(
        fixes([("a", "curriculum", 5.0), ("b", "env", 4.0), ("c", "optimizer", 3.0)]),
        heart={},
        sps={"a": 0.8, "b": 0.12},
        noise=(0.3, 150.0),
        max_seeds=5,
    )
    search.ends["heart.get"] = (0.5, 0.5)
    result = search.run()
    verdicts = {r["arm"]: r["verdict"] for r in result.ranking["sps"]}
    assert verdicts == {"a": "cause", "b": "minor", "a + b": "cause"}  # c: not needed to explain the gap
    assert result.together["suspects"] == ["a", "b"]  # the minor contributor is restored with the cause
    assert result.together["effects"]["sps"]["high"] > 0.9
    ranked = {c.subsystem: c.verdict for c in rank_causes([], result)}
    assert ranked == {"curriculum": "primary", "env": "minor"}


def test_an_effect_on_the_threshold_stops_gaining_seeds():
    engine = Engine(None, max_seeds=5, delta=0.2)
    assert engine.futile(Effect(0.19, 0.10, 0.28, 2))  # 5 seeds would still straddle 20%
    assert not engine.futile(Effect(0.35, 0.15, 0.55, 2))  # 4 seeds could settle it
    assert engine.futile(Effect(0.35, 0.05, 0.65, 5))  # no seeds left


def test_one_seed_is_not_enough_to_give_up_where_the_profile_allows_more():
    """The SB3 DQN example's arm: one weak seed, 52% (-33%..151%), projected to need 9 seeds. A second seed
    is measured before futility is judged; at smoke (2 seeds at most) one seed still decides it, as before."""
    arm = Effect(0.52, -0.33, 1.51, 1)
    assert arm.seeds_to_decide(0.25) > 5
    assert not Engine(None, max_seeds=5, delta=0.25).futile(arm)
    assert Engine(None, max_seeds=5, delta=0.25).futile(dataclasses.replace(arm, n=2))
    assert Engine(None, max_seeds=2, delta=0.25).futile(Effect(0.19, 0.10, 0.28, 1))
    assert Engine(None, max_seeds=5, delta=0.2).futile(Effect(0.2, 0.0, 0.4, 1))  # on delta: never decided


def test_a_noisy_single_cause_gains_seeds_until_its_share_is_decided():
    """One suspect that restores the whole gap, with seed-to-seed noise about half the gap: the search grows it
    past one seed and decides it a cause. (Judged futile from its first seed, it stayed undecided at 1 seed.)"""
    search = SimSearch(
        fixes([("interval", "optimizer", 4.0)]),
        heart={"interval": 1.0},
        sps={},
        noise=(3.0, 800.0),
        budget=60,
        max_seeds=5,
    )
    search.ends["sps"] = (58_000.0, 58_000.0)
    result = search.run()
    arm = search.arms["interval"]
    assert arm.n >= 2
    assert {r["arm"]: r["verdict"] for r in result.ranking["heart.get"]} == {"interval": "cause"}


def test_group_testing_isolates_two_causes_among_many_suspects_without_audit_evidence():
    named = [(f"s{i}", "config", 0.0) for i in range(32)]
    search = SimSearch(fixes(named), heart={"s5": 0.9}, sps={"s12": 0.85}, budget=200, max_seeds=5)
    result = search.run()
    assert _top(result, "heart.get") == "s5" and _top(result, "sps") == "s12"
    assert any(line.startswith("group test: s0 + s1") for line in result.log)  # screened as a group first
    # far fewer runs than 32 arms at 5 seeds, and fewer than 32 arms at even the 2-seed minimum
    assert result.spent["variant_runs"] * 3 <= result.spent["full_sweep_variant_runs"]
    assert result.spent["variant_runs"] < result.spent["min_sweep_variant_runs"]


def test_a_suspect_that_is_not_a_cause_is_cleared_and_named_a_red_herring():
    search = SimSearch(
        fixes(REGRESSED_LIKE[:3]), heart={"gae": 1.0}, sps={"shaped": 1.0}, budget=60, max_seeds=5
    )
    result = search.run()
    for metric in ("heart.get", "sps"):
        rebuild = next(r for r in result.ranking[metric] if r["arm"] == "rebuild")
        assert rebuild["verdict"] == "no effect" and rebuild["high"] < 0.2
    causes = rank_causes([], result)
    assert [c.verdict for c in causes if c.subsystem == "env"] == ["red herring"]


def test_the_budget_caps_the_runs_and_says_what_was_left_untried():
    named = [(f"s{i}", "config", 3.0) for i in range(10)]
    search = SimSearch(fixes(named), heart={"s9": 1.0}, sps={"s9": 1.0}, budget=16, max_seeds=5)
    result = search.run()
    assert search.calls == result.spent["runs"] <= 16
    assert any("budget" in n for n in result.notes)


def test_no_gap_no_experiments():
    search = SimSearch(fixes(REGRESSED_LIKE), heart={}, sps={}, budget=60, max_seeds=5)
    search.ends = {"heart.get": (0.5, 0.5), "sps": (30_000.0, 30_000.0)}
    result = search.run()
    # no variant is tried; the two sides alone may gain seeds (up to three times the profile's) while the
    # noise makes the candidate look worse, and the notes say so
    assert result.spent["variant_runs"] == 0
    assert search.calls == 2 * search.arms["baseline"].n <= 2 * search.engine.gap_seeds
    assert (search.calls > 10) == any("unsettled at 5 seeds" in n for n in result.notes)
    assert all(g["note"].startswith("No measurable") and not g["measurable"] for g in result.gaps.values())
    sps = result.gaps["sps"]["note"]
    assert "e+0" not in sps and re.search(
        r"how much worse the candidate is: [+-]?[\d,.]+, 95% CI [+-]?[\d,.]+\.\.[+-]?[\d,.]+;", sps
    ), sps
    assert "worse by -" not in sps  # an SB3 TD3 summary read "the candidate is worse by -16.5"


def test_an_unsettled_gap_gains_seeds_on_both_sides_until_it_is_measured():
    # a two-point gap under one point of noise per run: five seeds leave its interval reaching zero
    search = SimSearch(fixes(REGRESSED_LIKE), heart={"gae": 1.0}, sps={}, max_seeds=5, noise=(1.0, 800.0))
    search.ends = {"heart.get": (7.0, 5.0), "sps": (30_000.0, 30_000.0)}
    result = search.run()
    b, c = search.arms["baseline"], search.arms["candidate"]
    assert 5 < b.n == c.n <= search.engine.gap_seeds
    assert result.gaps["heart.get"]["measurable"] and result.gaps["heart.get"]["low"] > 0
    assert any(
        f"unsettled at 5 seeds per side; grown to {b.n}" in n and "(settled)" in n for n in result.notes
    )
    assert _top(result, "heart.get") == "gae"
    # the same search capped at the profile's seeds leaves it unmeasured
    capped = SimSearch(
        fixes(REGRESSED_LIKE), heart={"gae": 1.0}, sps={}, max_seeds=5, gap_seeds=5, noise=(1.0, 800.0)
    )
    capped.ends = search.ends
    assert not capped.run().gaps["heart.get"]["measurable"]


def test_a_gap_too_small_to_settle_within_the_cap_says_how_many_seeds_it_would_need():
    search = SimSearch(fixes(REGRESSED_LIKE), heart={"gae": 1.0}, sps={}, max_seeds=5, noise=(1.0, 800.0))
    search.ends = {"heart.get": (6.9, 5.0), "sps": (30_000.0, 30_000.0)}
    search.engine.gap_seeds = 6
    result = search.run()
    assert search.arms["baseline"].n == 5 and not result.gaps["heart.get"]["measurable"]
    assert any("would need more than the search may add (heart.get about" in n for n in result.notes)


def test_pooled_intervals_give_two_seed_arms_the_noise_the_other_arms_measured():
    rng = np.random.default_rng(0)
    b = 10.0 + rng.normal(0, 1.0, 8)
    c = 0.0 + rng.normal(0, 1.0, 8)
    lucky = np.array([5.0, 5.01])  # two seeds that happen to agree: a plain bootstrap would be ~0.001 wide
    iv = stats.fractions_restored_pooled(b, c, {"v": lucky + c[:2]}, seed=0)["v"]
    assert iv.low < iv.point < iv.high and iv.high - iv.low > 0.1
    again = stats.fractions_restored_pooled(b, c, {"v": lucky + c[:2]}, seed=0)["v"]
    assert again == iv  # reproducible for a seed
    with pytest.raises(ValueError, match="more than the candidate"):
        stats.fractions_restored_pooled(b[:2], c[:2], {"v": lucky.tolist() * 2}, seed=0)


def test_no_effect_on_sps_does_not_clear_a_subsystem_when_the_learning_gap_is_not_measurable():
    search = SimSearch(
        fixes(REGRESSED_LIKE[:2]),
        heart={},
        sps={"rebuild": 1.0},
        noise=(0.3, 500.0),
        budget=60,
        max_seeds=5,
    )
    search.ends["heart.get"] = (0.5, 0.5)  # no learning gap (a smoke run learns nothing yet)
    result = search.run()
    gae = next(r for r in result.ranking["sps"] if r["arm"] == "gae")
    assert gae["verdict"] == "no effect"
    flagged = [Finding("loss/advantages", "loss", "h", Status.CONFIRMED, Severity.HIGH, Evidence())]
    verdicts = {c.subsystem: c.verdict for c in rank_causes(flagged, result)}
    assert verdicts["loss"] != "red herring" and verdicts["env"] == "primary"


def test_a_metric_where_lower_is_better_is_attributed_with_the_right_sign():
    named = fixes(REGRESSED_LIKE[:3])
    search = SimSearch(
        named, heart={"gae": 1.0}, sps={}, metric="loss:lower", noise=(0.05, 300.0), max_seeds=5
    )
    search.ends = {"loss": (1.0, 3.0), "sps": (30_000.0, 30_000.0)}  # the candidate's loss is higher: worse
    result = search.run()
    gap = result.gaps["loss"]
    assert gap["direction"] == "lower" and gap["measurable"] and 1.8 < gap["worse_by"] < 2.2
    assert gap["low"] > 0 and result.primary.direction == "lower"
    top = result.ranking["loss"][0]
    assert top["arm"] == "gae" and top["verdict"] == "cause" and 0.8 < top["point"] < 1.2
    assert next(r for r in result.ranking["loss"] if r["arm"] == "rebuild")["verdict"] == "no effect"
    first = rank_causes([], result)[0]
    assert (first.subsystem, first.verdict) == ("loss", "primary")
    assert result.label("loss") == "loss (lower is better)"
    # the same runs read as higher-is-better: the candidate is better, and there is nothing to explain
    search = SimSearch(named, heart={"gae": 1.0}, sps={}, metric="loss", noise=(0.05, 300.0), max_seeds=5)
    search.ends = {"loss": (1.0, 3.0), "sps": (30_000.0, 30_000.0)}
    result = search.run()
    assert result.gaps["loss"]["better"] and not result.gaps["loss"]["measurable"]
    assert "measurably better" in result.gaps["loss"]["note"] and result.spent["variant_runs"] == 0


def test_a_primary_metric_named_like_throughput_is_refused():
    with pytest.raises(ValueError, match="perf/sps"):
        Engine(None, metric="sps")


def test_a_builtin_subject_offers_its_faults_as_fixes_through_its_worker_probe(tmp_path):
    from rlaudit.attribution.probes import fixes as fixes_probe
    from rlaudit.demo import faults as catalog
    from rlaudit.demo.subject import load
    from support.probing import probe_context

    subject = load("regressed-env.rebuild_on_reset")
    got = fixes_probe(probe_context(subject, tmp_path / "a", (), config={}))
    assert got["exposed"] and [f["id"] for f in got["fixes"]] == [
        f for f in catalog.REGRESSED if f != "env.rebuild_on_reset"
    ]
    assert all(f["subsystem"] == catalog.CATALOG[f["id"]].subsystem for f in got["fixes"])
    named = fix_suspects(got["fixes"], {"loss": 3.0}, "builtin:reference")
    assert [s.remove for s in named] == [(f["id"],) for f in got["fixes"]] and all(
        s.injectable for s in named
    )
    # a subject without fixes() offers none
    assert fixes_probe(probe_context(object(), tmp_path / "b", (), config={})) == {
        "fixes": [],
        "exposed": False,
    }
