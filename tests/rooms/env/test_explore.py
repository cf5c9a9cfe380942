"""05_env's step and environment scrubber: the picked step and sub-environment's observations are what the
cells show, exactly the differing cells are outlined, the timeline is the picked env's, image observations
are drawn as images per channel, and a pair it cannot scrub gets a line saying why."""

from __future__ import annotations

import json
import types

import matplotlib
import numpy as np
import pytest

from rlaudit.engine.store import ProbeResult
from rlaudit.engine.workbench import Pair
from rlaudit.env import explore as env_explore

matplotlib.use("Agg")  # tests only: no display here

STEPS, ENVS, DIM = 12, 3, 4


def runs(obs_c_edit=None, reward_edit=None) -> tuple[dict, dict]:
    """Two equal runs (obs value = step + env/10 + feature/100), then the candidate edited in place."""
    t, n, d = np.meshgrid(np.arange(STEPS + 1), np.arange(ENVS), np.arange(DIM), indexing="ij")
    obs = (t + n / 10 + d / 100).astype(np.float32)
    base = {
        "obs": obs,
        "reward": np.ones((STEPS, ENVS)),
        "terminated": np.zeros((STEPS, ENVS), bool),
        "truncated": np.zeros((STEPS, ENVS), bool),
    }
    cand = {k: v.copy() for k, v in base.items()}
    if obs_c_edit is not None:
        obs_c_edit(cand["obs"])
    if reward_edit is not None:
        reward_edit(cand["reward"])
    return base, cand


def outlined(ex: env_explore.Explorer) -> list[int]:
    return [j for j, box in enumerate(ex._artists["boxes"]) if box.get_visible()]


def test_the_cells_show_the_picked_step_and_env_and_outline_exactly_what_differs() -> None:
    def edit(obs):
        obs[5:, 1, 2] += 1.0  # env 1, feature 2 differs from step 5 on
        obs[8, 2, 0] = -3.0  # env 2, feature 0 differs at step 8 only

    base, cand = runs(edit, lambda r: r.__setitem__((6, 1), 0.5))  # env 1's reward at step 7
    base["actions"] = np.arange(STEPS * ENVS).reshape(STEPS, ENVS)  # the same actions on both sides
    ex = env_explore.scrubber(base, cand, seed=3)
    # the starting view is the first difference: step 5, env 1
    assert ex.values == {"step": 5.0, "env": 1}
    ex.figure()
    image = np.asarray(ex._artists["image"].get_array())
    np.testing.assert_allclose(image, np.vstack([base["obs"][5, 1], cand["obs"][5, 1]]), rtol=1e-6)
    assert outlined(ex) == [2]
    texts = [t.get_text() for t in ex._artists["texts"][1]]
    assert texts[2] == f"{cand['obs'][5, 1, 2]:.3g}"

    ex.set(step=2)
    assert outlined(ex) == []
    np.testing.assert_allclose(np.asarray(ex._artists["image"].get_array())[0], base["obs"][2, 1], rtol=1e-6)
    assert list(ex._artists["cursor"].get_xdata()) == [2, 2]

    ex.set(step=8, env=2)
    assert outlined(ex) == [0]
    ex.set(step=9)
    assert outlined(ex) == []

    # the timeline is the picked env's: env 1 differs in observations from step 5, in the reward at step 7
    ex.set(env=1, step=7)
    timeline = np.asarray(ex._artists["timeline"].get_array())
    np.testing.assert_array_equal(timeline[0] > 0, np.arange(STEPS + 1) >= 5)
    np.testing.assert_array_equal(np.flatnonzero(timeline[1]), [7])
    assert "after action 19; reward 1 | 0.5" in ex._artists["fig"]._suptitle.get_text()  # action[6, 1]
    assert "seed 3" in ex._artists["fig"]._suptitle.get_text()
    assert ex.drawn == {"step": 7.0, "env": 1}


def test_the_environment_options_say_which_envs_differ_and_from_when() -> None:
    base, cand = runs(lambda obs: obs[4:, 0, 1].__iadd__(2.0))
    ex = env_explore.scrubber(base, cand)
    labels = [label for label, _ in ex.control("env").options]
    assert labels == ["env 0 (differs from step 4)", "env 1 (same)", "env 2 (same)"]


def test_identical_runs_start_at_the_reset_with_nothing_outlined() -> None:
    base, cand = runs()
    ex = env_explore.scrubber(base, cand)
    assert ex.values == {"step": 0.0, "env": 0}
    ex.figure()
    assert outlined(ex) == []
    assert "0 of 4 features differ" in ex._artists["fig"]._suptitle.get_text()


@pytest.mark.parametrize(
    ("shape", "layout"),
    [
        ([4], None),
        ([84, 84], (84, 84, 1, "HW")),
        ([64, 64, 3], (64, 64, 3, "HWC")),
        ([4, 84, 84], (84, 84, 4, "CHW")),
        ([2, 3], None),
        (None, None),
    ],
)
def test_image_observations_are_recognised_by_their_shape(shape, layout) -> None:
    assert env_explore.frame_layout(shape) == layout


def test_image_observations_are_drawn_per_channel_with_the_differing_pixels_marked() -> None:
    rng = np.random.default_rng(0)
    obs = rng.random((STEPS + 1, ENVS, 2 * 8 * 8)).astype(np.float32)
    cand_obs = obs.copy()
    cand_obs[3:, 0, 64 + 8 * 2 + 5] = 5.0  # channel 1, row 2, column 5 (CHW)
    base, _ = runs()
    ex = env_explore.scrubber({**base, "obs": obs}, {**base, "obs": cand_obs}, shape=[2, 8, 8])
    assert [c.name for c in ex.controls] == ["step", "env", "channel"]
    ex.figure()
    mask = np.asarray(ex._artists["mask"].get_array())[..., 3] > 0
    assert not mask.any()  # channel 0 is the same
    ex.set(channel=1)
    mask = np.asarray(ex._artists["mask"].get_array())[..., 3] > 0
    assert np.argwhere(mask).tolist() == [[2, 5]]
    np.testing.assert_allclose(
        np.asarray(ex._artists["images"][1].get_array()), cand_obs[3, 0].reshape(2, 8, 8)[1], rtol=1e-6
    )


def fake_wb(pair: Pair) -> types.SimpleNamespace:
    profile = types.SimpleNamespace(name="smoke")
    return types.SimpleNamespace(profile=profile, run=lambda probe, **params: pair)


def failed(side: str) -> ProbeResult:
    return ProbeResult(
        side=side, spec="x", probe="rlaudit.env.probes:equivalence", params={}, ok=False, missing=["make_env"]
    )


def test_a_pair_it_cannot_scrub_gets_a_line_saying_why(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(env_explore, "EQUIVALENCE", {"probe": None, "params": lambda wb, seed=0: {}})
    out = env_explore.scrubber_explorer(
        fake_wb(Pair(baseline=failed("baseline"), candidate=failed("candidate")))
    )
    assert "Nothing to scrub" in out.text and "baseline and candidate" in out.text

    # different observation widths: no cell-by-cell comparison
    results = {}
    for side, dim in (("baseline", 4), ("candidate", 6)):
        d = tmp_path / side
        d.mkdir()
        np.savez(d / "run.npz", obs=np.zeros((3, 2, dim), np.float32), reward=np.zeros((2, 2)))
        (d / "facts.json").write_text(json.dumps({"observation_space": {"shape": [dim]}}))
        results[side] = ProbeResult(side=side, spec="x", probe="p", params={}, ok=True, dir=d)
    out = env_explore.scrubber_explorer(fake_wb(Pair(**results)))
    assert "differ in shape" in out.text and "(2, 4) | (2, 6)" in out.text
