"""Tests for rlaudit.demo.curriculum: the sum tree, learning-progress and uniform sampling, the fault paths."""

from __future__ import annotations

import numpy as np
import pytest

from rlaudit.demo.arena import ArenaImpl
from rlaudit.demo.curriculum import (
    CurriculumConfig,
    LearningProgressCurriculum,
    RandomCurriculum,
    SumTree,
    TaskFamily,
    make_curriculum,
)

# --- sum tree ---------------------------------------------------------------------------------------------


def _brute_find(weights: np.ndarray, u: float) -> int:
    return int(np.searchsorted(np.cumsum(weights), u, side="right"))


def test_sum_tree_total_and_find_match_a_cumulative_search() -> None:
    rng = np.random.default_rng(0)
    weights = rng.random(13) * (rng.random(13) > 0.3)  # some zeros, capacity not a power of two
    tree = SumTree(13)
    for i, w in enumerate(weights):
        tree.set(i, float(w))
    assert tree.total == pytest.approx(weights.sum(), rel=1e-12)
    np.testing.assert_array_equal(tree.weights(), weights)
    for u in rng.random(500) * weights.sum():
        assert tree.find(u) == _brute_find(weights, u)


def test_sum_tree_never_returns_a_zero_weight_leaf() -> None:
    tree = SumTree(8)
    tree.set(2, 1.0)
    tree.set(5, 2.0)
    for u in (0.0, 0.999999, 1.0, 2.5, 2.999999999, 3.0, 3.5):  # 3.0 and 3.5 are past the total (rounding)
        assert tree.find(min(u, tree.total)) in (2, 5)


def test_sum_tree_rebuild_is_bit_identical_to_incremental_updates() -> None:
    rng = np.random.default_rng(1)
    weights = rng.random(100)
    incremental = SumTree(100)
    for i, w in enumerate(weights):
        incremental.set(i, float(w))
    rebuilt = SumTree(100)
    rebuilt.rebuild(weights)
    assert incremental._tree == rebuilt._tree


def test_sum_tree_rejects_bad_weights_and_indices() -> None:
    tree = SumTree(4)
    with pytest.raises(ValueError, match="non-negative"):
        tree.set(0, -1.0)
    with pytest.raises(ValueError, match="non-negative"):
        tree.set(0, float("nan"))
    with pytest.raises(IndexError):
        tree.set(4, 1.0)


def test_sum_tree_set_touches_one_path() -> None:
    tree = SumTree(1024)
    before = tree.nodes_touched
    tree.set(17, 1.0)
    assert tree.nodes_touched - before == tree.depth + 1 == 11


# --- learning progress ------------------------------------------------------------------------------------


def _brute_probabilities(cur: LearningProgressCurriculum) -> np.ndarray:
    scores = cur.task_scores()
    lp = np.abs(scores["fast"] - scores["slow"])
    n = cur.num_tasks
    if lp.sum() == 0:
        return np.full(n, 1.0 / n)
    return cur.explore / n + (1 - cur.explore) * lp / lp.sum()


def _brute_emas(scores: list[float], fast: float, slow: float) -> tuple[float, float]:
    f = s = scores[0]
    for x in scores[1:]:
        f += fast * (x - f)
        s += slow * (x - s)
    return f, s


def test_emas_follow_their_definition() -> None:
    cur = LearningProgressCurriculum(3, max_tasks=8, ema_fast=0.5, ema_slow=0.1, seed=0)
    history = [1.0, 3.0, 2.0, 6.0]
    for x in history:
        cur.update(1, x)
    fast, slow = _brute_emas(history, 0.5, 0.1)
    scores = cur.task_scores()
    assert scores["fast"][1] == pytest.approx(fast)
    assert scores["slow"][1] == pytest.approx(slow)
    np.testing.assert_array_equal(scores["count"], [0, 4, 0])


def test_probabilities_match_a_brute_force_distribution() -> None:
    rng = np.random.default_rng(2)
    cur = LearningProgressCurriculum(20, max_tasks=64, ema_fast=0.3, ema_slow=0.05, explore=0.1, seed=3)
    np.testing.assert_allclose(cur.probabilities(), np.full(20, 0.05))  # no progress yet: uniform
    for _ in range(400):
        task = int(rng.integers(20))
        cur.update(task, float(rng.random() * task))  # noisier scores on higher tasks
    expected = _brute_probabilities(cur)
    np.testing.assert_allclose(cur.probabilities(), expected, rtol=1e-10, atol=1e-12)
    assert cur.probabilities().sum() == pytest.approx(1.0)


def test_sampling_follows_learning_progress() -> None:
    cur = LearningProgressCurriculum(4, max_tasks=16, ema_fast=0.2, ema_slow=0.02, explore=0.1, seed=4)
    for i in range(60):
        cur.update(0, 5.0)  # mastered: constant score, no progress
        cur.update(1, 0.0)  # hopeless: constant score, no progress
        cur.update(2, 0.1 * i)  # improving: the fast average runs ahead of the slow one
    samples = np.array([cur.sample() for _ in range(4000)])
    freq = np.bincount(samples, minlength=4) / len(samples)
    assert freq[2] > 0.85
    # the others only get the exploration floor, explore / n = 0.025 each
    assert all(0.01 < freq[t] < 0.045 for t in (0, 1, 3))


def test_empirical_sampling_matches_probabilities() -> None:
    rng = np.random.default_rng(5)
    cur = LearningProgressCurriculum(8, max_tasks=8, ema_fast=0.3, ema_slow=0.05, explore=0.2, seed=6)
    for _ in range(200):
        t = int(rng.integers(8))
        cur.update(t, float(rng.normal(t, 1.0)))
    p = cur.probabilities()
    n = 20000
    counts = np.bincount([cur.sample() for _ in range(n)], minlength=8)
    # 5 standard errors of a binomial count: fails for a wrong distribution, not for sampling noise
    assert np.all(np.abs(counts - n * p) < 5 * np.sqrt(n * p * (1 - p)) + 1)


def test_cost_per_episode_is_logarithmic_in_the_pool_size() -> None:
    work = {}
    for max_tasks in (16, 256, 4096):
        cur = LearningProgressCurriculum(max_tasks, max_tasks=max_tasks, seed=7)
        rng = np.random.default_rng(8)
        for _ in range(50):  # warm up so that sampling goes through the tree
            cur.update(int(rng.integers(max_tasks)), float(rng.random()))
        before = cur.work
        for _ in range(100):
            cur.update(cur.sample(), float(rng.random()))
        work[max_tasks] = (cur.work - before) / 100
        depth = cur._tree.depth
        assert (
            work[max_tasks] <= 2 * depth + 2
        )  # update: one leaf-to-root path; sample: one root-to-leaf path
        assert cur.slots_scanned == 0
    # 256x more slots cost only a few more nodes per episode
    assert work[4096] - work[16] <= 2 * (12 - 4) + 1


def test_full_scan_reads_every_slot_on_every_update_with_the_same_distribution() -> None:
    rng = np.random.default_rng(9)
    updates = [(int(rng.integers(10)), float(rng.random() * 3)) for _ in range(150)]
    ref = LearningProgressCurriculum(10, max_tasks=256, seed=10)
    scan = LearningProgressCurriculum(10, max_tasks=256, seed=10, impl=ArenaImpl(curriculum_full_scan=True))
    ref_samples, scan_samples = [], []
    for task, score in updates:
        before = scan.slots_scanned
        ref.update(task, score)
        scan.update(task, score)
        assert scan.slots_scanned - before == 256  # all max_tasks slots, though only 10 are active
        ref_samples.append(ref.sample())
        scan_samples.append(scan.sample())
    assert ref.slots_scanned == 0
    assert ref_samples == scan_samples
    np.testing.assert_array_equal(ref.probabilities(), scan.probabilities())
    assert scan.work > 20 * ref.work  # O(max_tasks) against O(log max_tasks) per episode


def test_label_dictionary_grows_with_episodes_only_on_the_regressed_path() -> None:
    family = TaskFamily.from_config(CurriculumConfig())
    ref = LearningProgressCurriculum(len(family), seed=0, tasks=family)
    leak = LearningProgressCurriculum(
        len(family), seed=0, tasks=family, impl=ArenaImpl(label_dict_growth=True)
    )
    for i in range(500):
        ref.update(i % 4, 1.0)
        leak.update(i % 4, 1.0)
    assert ref.label_entries() == 4  # bounded by the tasks seen
    assert leak.label_entries() == 500  # one per episode, never pruned
    assert "size=5" in next(iter(leak._labels))


def test_update_rejects_tasks_outside_the_family() -> None:
    cur = LearningProgressCurriculum(3, max_tasks=4, seed=0)
    with pytest.raises(ValueError, match=r"not in this curriculum's range \[0, 3\)"):
        cur.update(3, 1.0)


def test_pool_must_hold_the_family() -> None:
    with pytest.raises(ValueError, match="max_tasks=4 slots"):
        LearningProgressCurriculum(5, max_tasks=4)


def test_seeded_curricula_are_reproducible() -> None:
    a = LearningProgressCurriculum(6, max_tasks=8, seed=11)
    b = LearningProgressCurriculum(6, max_tasks=8, seed=np.random.default_rng(11))
    for i in range(50):
        a.update(i % 6, float(i % 5))
        b.update(i % 6, float(i % 5))
    assert [a.sample() for _ in range(100)] == [b.sample() for _ in range(100)]


# --- uniform ----------------------------------------------------------------------------------------------


def test_random_curriculum_is_uniform_and_counts_episodes() -> None:
    cur = RandomCurriculum(5, seed=0)
    counts = np.bincount([cur.sample() for _ in range(5000)], minlength=5)
    assert counts.min() > 850 and counts.max() < 1150
    cur.update(2, 3.0)
    assert cur.episodes == 1
    np.testing.assert_allclose(cur.probabilities(), 0.2)


# --- config and family ------------------------------------------------------------------------------------


def test_task_family_is_the_cartesian_product() -> None:
    cfg = CurriculumConfig(sizes=[5, 7], mines=[1, 2, 3], altar_costs=[1, 2])
    family = TaskFamily.from_config(cfg)
    assert len(family) == 2 * 3 * 1 * 1 * 2 * 2
    assert family.task(0) == {
        "size": 5,
        "mines": 1,
        "generators": 1,
        "altars": 1,
        "walls": 0,
        "altar_cost": 1,
    }
    assert family.label(len(family) - 1) == "size=7 mines=3 generators=1 altars=1 walls=2 altar_cost=2"


def test_task_family_rejects_maps_too_small_for_their_objects() -> None:
    with pytest.raises(ValueError, match="needs 6 cells"):
        TaskFamily.single(size=2, mines=2, generators=1, altars=1, walls=1, altar_cost=1)


def test_curriculum_config_round_trip_and_unknown_keys() -> None:
    cfg = CurriculumConfig(kind="random", max_tasks=32, sizes=[6])
    assert CurriculumConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['max_task'\].*known keys: \[.*'max_tasks'"):
        CurriculumConfig.from_dict({"max_task": 8})
    with pytest.raises(ValueError, match="kind must be one of"):
        CurriculumConfig(kind="lp")
    with pytest.raises(ValueError, match="explore must be in"):
        CurriculumConfig(explore=1.5)


def test_make_curriculum_builds_each_kind() -> None:
    lp = make_curriculum({"kind": "learning_progress", "max_tasks": 64}, seed=0)
    assert isinstance(lp, LearningProgressCurriculum) and lp.max_tasks == 64 and len(lp.tasks) == 16
    assert isinstance(make_curriculum(CurriculumConfig(kind="random"), seed=0), RandomCurriculum)
    assert make_curriculum({"kind": "none"}) is None
    whole = make_curriculum({"env": {}, "curriculum": {"kind": "random"}, "trainer": {}}, seed=0)
    assert isinstance(whole, RandomCurriculum)  # a subject's make_curriculum(config) gets the whole config
    with pytest.raises(ValueError, match="max_tasks=8 slots"):
        make_curriculum({"max_tasks": 8})
