"""The environment room: rollout helpers, the analysis functions, and the detection matrix for env faults."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium import spaces

from rlaudit import stats, timing
from rlaudit.demo.faults import CATALOG
from rlaudit.env import audit, episodes, equivalence, resets
from rlaudit.env import throughput as speed
from rlaudit.env.rollout import (
    EpisodeTracker,
    Policy,
    VecView,
    digest,
    find_key,
    flat_obs,
    reported_episode_stats,
    sample_actions,
    with_value,
)
from support.invariants import SUBJECTS_WITHOUT_AN_ENVIRONMENT, audited_without_an_environment
from support.load import aa_spec, busy_core
from support.probing import probe_context

ENV_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "env")


# ---------------------------------------------------------------------------------------------------------
# Rollout helpers
# ---------------------------------------------------------------------------------------------------------


class Countdown(gym.Env):
    """A single env: observation is the steps left; reward 1 per step; terminates after ``length`` steps."""

    def __init__(self, length: int = 3) -> None:
        self.length = length
        self.observation_space = spaces.Box(0, 10, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.left = length

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.left = self.length
        return np.array([self.left], dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.left -= 1
        done = self.left == 0
        info = {"episode": {"r": float(self.length), "l": self.length}} if done else {}
        return np.array([self.left], dtype=np.float32), 1.0, done, False, info


def test_find_key_prefers_earlier_names_and_skips_bools() -> None:
    config = {"env": {"num_envs": True}, "trainer": {"n_envs": 8, "num_envs": 64}}
    assert find_key(config, ("num_envs", "n_envs")) == "trainer.num_envs"
    assert find_key(config, ("missing",)) is None
    changed = with_value(config, "trainer.num_envs", 4)
    assert changed["trainer"]["num_envs"] == 4 and config["trainer"]["num_envs"] == 64


def test_flat_obs_concatenates_dicts_in_key_order() -> None:
    obs = {"b": np.ones((2, 2)), "a": np.zeros((2, 1))}
    out = flat_obs(obs, 2)
    assert out.shape == (2, 3)
    assert out[0].tolist() == [0.0, 1.0, 1.0]


def test_sample_actions_depend_on_the_seed_only() -> None:
    space = spaces.Discrete(5, start=1)
    a = sample_actions(space, 4, np.random.default_rng(3), size=6)
    b = sample_actions(space, 4, np.random.default_rng(3), size=6)
    assert a.shape == (6, 4) and (a == b).all() and a.min() >= 1 and a.max() <= 5
    box = sample_actions(spaces.Box(-2, 2, shape=(3,)), 2, np.random.default_rng(0))
    assert box.shape == (2, 3) and np.abs(box).max() <= 2
    assert digest(a) == digest(b) != digest(a + 1)


def test_wsls_policy_repeats_only_rewarded_actions() -> None:
    pol = Policy("wsls", spaces.Discrete(1000), 2, seed=0)
    first = pol.act(None)
    second = pol.act(np.array([1.0, 0.0]))
    assert second[0] == first[0]  # won: stay
    assert second[1] != first[1]  # lost: shift (a fresh draw out of 1000)


def test_single_env_episodes_are_tracked_and_reported() -> None:
    view = VecView(Countdown(3))
    assert view.num_envs == 1 and view.mode == "single"
    view.reset(seed=0)
    tracker = EpisodeTracker(1)
    for t in range(7):
        tracker.update(t, view.step(np.array([0])))
    cols = tracker.log.columns()
    assert cols["length"].tolist() == [3, 3]
    assert cols["return"].tolist() == [3.0, 3.0]
    assert cols["reported.r"].tolist() == [3.0, 3.0]
    assert cols["first"].tolist() == [True, False]
    assert cols["terminated"].all() and cols["final_obs"].all()


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_vector_autoreset_modes_give_the_same_episodes(mode: str) -> None:
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    am = AutoresetMode.NEXT_STEP if mode == "next_step" else AutoresetMode.SAME_STEP
    env = SyncVectorEnv([lambda: Countdown(2), lambda: Countdown(3)], autoreset_mode=am)
    view = VecView(env)
    assert view.mode == mode
    view.reset(seed=0)
    tracker = EpisodeTracker(2)
    for t in range(12):
        tracker.update(t, view.step(np.zeros(2, dtype=np.int64)))
    cols = tracker.log.columns()
    by_env = {e: cols["length"][cols["env"] == e].tolist() for e in (0, 1)}
    assert set(by_env[0]) == {2} and set(by_env[1]) == {3}
    assert np.all(cols["return"] == cols["length"])  # reward 1 per live step: reset steps are not counted


def test_reported_stats_read_the_masked_vector_layout() -> None:
    info = {
        "episode": {"r": np.array([1.5, 9.0]), "l": np.array([4, 9])},
        "_episode": np.array([True, False]),
    }
    out = reported_episode_stats(info, 2, np.array([True, False]))
    assert out == [{"r": 1.5, "l": 4.0}, {}]


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


def test_stat_mismatch_counts_lost_episode_returns() -> None:
    eps = pd.DataFrame(
        {
            "env": [0, 1, 2, 3],
            "end": [5, 6, 7, 8],
            "return": [0.1, 0.9, 0.0, 2.0],
            "length": [5, 6, 7, 8],
            "reported.r": [0.1, 0.0, 0.0, 0.0],
            "reported.l": [5, 6, 7, 8],
        }
    )
    out = episodes.stat_mismatch(eps)
    assert out["reported"] == 4 and out["return_mismatch"] == 0.5 and out["length_mismatch"] == 0.0
    assert out["example"] == {"env": 1, "end_step": 6, "reported_return": 0.0, "return_paid": 0.9}


def _booked(reported: list[float], paid: list[float], **extra: list[float]) -> pd.DataFrame:
    n = len(paid)
    return pd.DataFrame(
        {
            "env": range(n),
            "end": range(n),
            "return": paid,
            "length": [10] * n,
            "reported.r": reported,
            **extra,
        }
    )


def test_stats_reading_tells_a_reward_scale_from_lost_statistics() -> None:
    # a scaling wrapper outside the env's bookkeeping: the learner gets a tenth of what the env books
    scaled = episodes.stats_reading(_booked([1.0, 2.0, 0.5, 3.0], [0.1, 0.2, 0.05, 0.3]))
    assert scaled["kind"] == episodes.TRANSFORMED and scaled["scale"] == pytest.approx(0.1)
    assert episodes.transform_text(scaled) == "×0.1"
    # case 001: the accumulators recreated on reset report nothing for most episodes
    lost = episodes.stats_reading(_booked([0.0, 0.0, 0.5, 0.0], [0.9, 0.4, 0.5, 1.3]))
    assert lost["kind"] == episodes.LOST and lost["zeroed"] == 1.0
    # the env books episodes of other lengths than the learner sees: another reading again
    ends = episodes.stats_reading(_booked([1.0, 2.0], [0.5, 2.0], **{"reported.l": [4.0, 10.0]}))
    assert ends["kind"] == episodes.BOUNDARIES
    assert episodes.stats_reading(_booked([1.0, 2.0], [1.0, 2.0]))["kind"] == "match"


def test_the_rollout_of_a_reward_scaling_wrapper_reads_as_transformed(tmp_path: Any) -> None:
    # The env books its own returns in info["episode"]; a wrapper outside scales what the learner receives.
    from types import SimpleNamespace

    from gymnasium.wrappers import TransformReward

    from rlaudit.engine.io import read_table
    from rlaudit.env import probes

    subject = SimpleNamespace(
        config=lambda: {}, make_env=lambda config, seed: TransformReward(Countdown(3), lambda r: 0.1 * r)
    )
    ctx = probe_context(subject, tmp_path / "scaled", ("config", "make_env"), config={})
    probes.rollout(ctx, seed=0, steps=30, policy="random")
    reading = episodes.stats_reading(read_table(tmp_path / "scaled" / "episodes"))
    assert reading["kind"] == episodes.TRANSFORMED and reading["scale"] == pytest.approx(0.1)


def test_episode_stats_reads_a_reward_scale_as_a_rewards_change_not_lost_statistics() -> None:
    from types import SimpleNamespace

    from rlaudit.checks import Check

    booked = [1.0, 2.0, 0.5, 3.0, 1.5]
    tables = {"baseline": _booked(booked, booked), "candidate": _booked(booked, [0.1 * r for r in booked])}
    pair = {side: SimpleNamespace(table=lambda name, t=t: t) for side, t in tables.items()}
    c = Check(audit.episode_stats.spec, SimpleNamespace(profile=None, metric=None))
    (finding,) = audit.episode_stats.__wrapped__(c, pair).findings
    assert finding.status.value == "SUSPECT" and finding.severity.value == "MEDIUM"
    assert "×0.1" in finding.evidence.summary and "not lost statistics" in finding.evidence.summary
    assert finding.evidence.details["knock_on"] and finding.reads == ["rewards"]


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


def test_proportion_difference_keeps_width_at_zero() -> None:
    # Newcombe's hybrid score interval: 0/10 vs 0/10 spans the Wilson bound 1.96^2 / (10 + 1.96^2) either way
    d, low, high = resets.proportion_difference(0, 10, 0, 10)
    assert d == 0.0 and high == pytest.approx(1.96**2 / (10 + 1.96**2)) and low == pytest.approx(-high)
    # 9/10 vs 1/10: Wilson [0.5958, 0.9821] and [0.0179, 0.4042], so 0.8 -/+ sqrt(0.3042^2 + 0.3042^2)
    d, low, high = resets.proportion_difference(9, 10, 1, 10)
    assert d == pytest.approx(0.8) and low == pytest.approx(0.3698, abs=1e-4)
    assert high == pytest.approx(0.8 + np.hypot(0.9821 - 0.9, 0.1 - 0.0179), abs=1e-4)


def test_repeats_to_settle_scales_with_the_squared_width() -> None:
    from rlaudit.env.analysis import repeats_to_settle

    # half-width ln(1.25/0.8)/2 against room ln 1.15: 5 * (0.2231 / 0.1398)^2 = 12.7
    assert repeats_to_settle(5, 1.0, 0.8, 1.25, 1.15) == 13
    assert repeats_to_settle(5, 1.2, 1.0, 1.4, 1.15) is None  # the estimate is beyond the margin already


def test_reset_spread_separates_desync_from_truncating_every_episode() -> None:
    steps = pd.DataFrame({"ended": np.ones(300, dtype=int)})
    good = pd.DataFrame(
        {
            "env": [0, 1, 0, 1],
            "end": [10, 50, 109, 149],
            "length": [11, 51, 99, 99],
            "truncated": True,
            "first": [True, True, False, False],
        }
    )
    bad = pd.DataFrame(
        {
            "env": [0, 1, 0, 1],
            "end": [10, 50, 40, 90],
            "length": [11, 51, 30, 40],
            "truncated": True,
            "first": [True, True, False, False],
        }
    )
    assert resets.reset_spread(good, steps)["early_fraction"] == 0.0
    out = resets.reset_spread(bad, steps)
    assert out["limit"] == 51 and out["early_fraction"] == 1.0


def test_compare_samples_needs_a_practical_and_credible_shift() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(10, 1, 300)
    assert not episodes.compare_samples(rng.normal(10, 1, 300), base, seed=0)["differs"]
    assert not episodes.compare_samples(base + 0.05, base, seed=0)["differs"]  # real but not practical
    shifted = episodes.compare_samples(base - 3, base, seed=0)
    assert shifted["differs"] and shifted["ci"][1] < 0


def test_throughput_ratio_of_a_twice_slower_candidate() -> None:
    jitter = (0.98, 1.0, 1.03, 0.99, 1.01)
    frames = {
        side: pd.DataFrame(
            {
                "requested": 0,
                "num_envs": 8,
                "repeat": range(5),
                "env_steps": 1000,
                "seconds": [secs * j for j in jitter],
                "calib_seconds": 0.001,
            }
        )
        for side, secs in (("baseline", 1.0), ("candidate", 2.0))
    }
    ratios = speed.throughput_ratios(speed.throughput_table(frames), seed=0)
    row = ratios.iloc[0]
    assert abs(row["ratio"] - 0.5) < 0.02 and row["ci_high"] < 1
    assert timing.slower(stats.Interval(row["ratio"], row["ci_low"], row["ci_high"]))


def test_a_speed_difference_is_believed_only_when_a_repeat_agrees() -> None:
    slow, slower_still = stats.Interval(0.79, 0.67, 0.99), stats.Interval(0.6, 0.5, 0.7)
    quiet, fast = stats.Interval(0.98, 0.9, 1.05), stats.Interval(1.4, 1.2, 1.6)
    assert timing.confirmed(slow, slower_still) is slow  # both slower: the one nearer to 1
    assert timing.confirmed(slower_still, slow) is slow
    assert timing.confirmed(slow, quiet) is None  # a burst of load on one batch: not believed
    assert timing.confirmed(slow, fast) is None
    assert timing.confirmed(fast, stats.Interval(1.3, 1.2, 1.4)) == stats.Interval(1.3, 1.2, 1.4)


def test_bootstrap_diff_and_ratio_of_ratios_reproduce_with_a_seed() -> None:
    a, b = np.arange(10.0), np.arange(10.0) + 5
    iv = stats.bootstrap_diff(a, b, seed=1)
    assert iv.point == -5.0 and iv == stats.bootstrap_diff(a, b, seed=1) and iv.high < 0
    r = timing.ratio_of_ratios([4.0] * 5, [1.0] * 5, [2.0] * 5, [1.0] * 5, seed=0)
    assert r.point == 2.0 and timing.costlier(r, 1.5)
    assert not timing.slower(stats.Interval(0.95, 0.8, 1.1))
    assert timing.faster(stats.Interval(1.5, 1.3, 1.7))


def reference_rollout(tmp_path: Any, seed: int, policy: str) -> pd.DataFrame:
    """The shared rollout probe, in this process, on builtin:reference."""
    from rlaudit.demo.subject import load
    from rlaudit.engine.io import read_table
    from rlaudit.env import probes

    out = tmp_path / f"{seed}-{policy}"
    ctx = probe_context(load("reference"), out, ("config", "make_env"), spec="builtin:reference")
    probes.rollout(ctx, seed=seed, steps=300, policy=policy)
    return read_table(out / "episodes")


def test_distribution_rule_is_quiet_between_two_seeds_of_one_env(tmp_path: Any) -> None:
    # A real null: the same environment under different seeds differs only by sampling noise.
    for policy in ("random", "wsls"):
        a, b = reference_rollout(tmp_path, 11, policy), reference_rollout(tmp_path, 12, policy)
        for col in ("length", "return"):
            cmp = episodes.compare_samples(a[col].to_numpy(), b[col].to_numpy(), seed=0)
            assert not cmp["differs"], (policy, col, cmp)
        assert episodes.stat_mismatch(a)["return_mismatch"] == 0.0  # the reference reports what it pays


# ---------------------------------------------------------------------------------------------------------
# Detection matrix and A/A (smoke profile, shared artifact cache)
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ENV_FAULTS)
def test_env_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "env")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    sections = audit.audit_all(bench(aa_spec()))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]


def test_statistical_and_timing_checks_stay_quiet_on_other_seeds(
    bench: Any, flagged: Any, describe: Any
) -> None:
    wb = bench(aa_spec())
    for seed in (1,):
        sections = [
            audit.distributions(wb, seed=seed),
            audit.reset_cost(wb, seed=seed),
            audit.throughput(wb, seed=seed),
        ]
        assert not flagged(sections), f"seed {seed}: " + describe(flagged(sections))


def test_timing_checks_stay_quiet_with_a_busy_core(bench: Any, flagged: Any, describe: Any) -> None:
    # A fresh seed so that every timing probe is measured now, while the busy loop competes for the cores.
    wb = bench(aa_spec())
    with busy_core() as proc:
        sections = [audit.throughput(wb, seed=7), audit.reset_cost(wb, seed=7)]
        assert proc.poll() is None
    assert not flagged(sections), describe(flagged(sections))


@pytest.mark.parametrize("subject", SUBJECTS_WITHOUT_AN_ENVIRONMENT)
def test_a_subject_without_an_environment_gets_a_finding_per_check_naming_what_is_missing(
    make_wb: Any, subject: str
) -> None:
    audited_without_an_environment(audit.audit_all, make_wb, subject)


def test_probe_sizes_come_from_the_profiles_column_with_floors_from_the_profile() -> None:
    from rlaudit.env.analysis import sizes
    from rlaudit.profiles import PROFILES

    smoke, standard = sizes(PROFILES["smoke"]), sizes(PROFILES["standard"])
    assert (smoke.equivalence_steps, standard.equivalence_steps) == (96, 512)
    assert sizes(PROFILES["standard"].replace(name="custom")) == standard  # another name: the standard column
    # rollout_steps: at least the column's floor, a twentieth of the profile's rollout steps when more
    assert sizes(PROFILES["standard"].replace(rollout_steps=100_000)).rollout_steps == 5_000
    assert sizes(PROFILES["smoke"].replace(rollout_steps=100)).rollout_steps == 1_000
    assert sizes(PROFILES["smoke"].replace(timing_repeats=12)).timing_repeats == 12
