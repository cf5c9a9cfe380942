"""A subject pinned to Gymnasium 0.29.1, in a virtual environment of its own (the Pendulum example).

``data/examples/pendulum/pair.yaml`` gives both sides ``requirements.txt`` (gymnasium==0.29.1 and the
NumPy 1.26 it was released against) with ``system_site_packages: true``, so the environment is built once per
test session by :mod:`rlaudit.adapters.venv` (installing those two; torch comes from the interpreter running
the tests)
and the probes run there with rlaudit reached through ``PYTHONPATH``: the env rollout, the spaces
observations, a loss probe environment and a short training run.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from rlaudit.adapters.venv import interpreter_for
from rlaudit.engine.paths import home
from rlaudit.engine.subjects import load_pair_file

PAIR = home() / "data" / "examples" / "pendulum" / "pair.yaml"


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from rlaudit.engine.workbench import Workbench

    cache = tmp_path_factory.mktemp("gym029-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RLAUDIT_CACHE", str(cache))
        mp.setenv("RLAUDIT_TORCH_THREADS", "1")
        started = time.perf_counter()
        python = interpreter_for(load_pair_file(str(PAIR))[0])  # builds the environment (once)
        build_seconds = time.perf_counter() - started
        wb = Workbench(pair_file=str(PAIR), profile="smoke", jobs=1)
        wb.python, wb.build_seconds = python, build_seconds  # type: ignore[attr-defined]
        try:
            yield wb
        finally:
            wb.close()


def test_the_environment_has_gymnasium_029_numpy_1_and_the_installed_torch(workbench: object) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    code = (
        "import gymnasium, numpy, torch; print(gymnasium.__version__, numpy.__version__, torch.__version__)"
    )
    proc = subprocess.run(
        [workbench.python, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=True
    )
    assert proc.stdout.split() == ["0.29.1", "1.26.4", torch.__version__]
    marker = json.loads((Path(workbench.python).parent.parent / ".rlaudit-venv.json").read_text())
    assert marker["system_site_packages"] is True


def test_env_rollout_reads_the_029_autoreset_and_episode_statistics(workbench: object) -> None:
    from rlaudit.env import probes

    pair = workbench.run(probes.rollout, seed=0, steps=450)
    for side in ("baseline", "candidate"):
        res = pair[side]
        assert res.ok, res.error
        assert res.json("facts")["autoreset_mode"] == "same_step"  # 0.29's only mode
        episodes = res.table("episodes")
        assert len(episodes) >= 8  # 4 envs x 200-step Pendulum episodes in 450 vector steps
        assert episodes["final_obs"].all()  # handed over as info["final_observation"]
        # RecordEpisodeStatistics around each sub-env: read from 0.29's final_info object array
        assert (episodes["reported.r"] - episodes["return"]).abs().max() < 1e-3
        assert set(episodes["length"]) == {200}


def test_spaces_observations_in_the_029_environment(workbench: object) -> None:
    from rlaudit.spaces import probes

    pair = workbench.run(probes.observations, env_seed=0, rollout_steps=800)
    res = pair["baseline"]
    assert res.ok, res.error
    spaces = res.json("spaces")
    assert json.dumps(spaces).count("Box") >= 2  # Box observations and Box actions


def test_loss_probe_environment_trains_a_029_trainer(workbench: object) -> None:
    from rlaudit.loss import probes

    res = workbench.run_side("baseline", probes.probe_env_run, probe="constant", steps=4096, seed=0)
    assert res.ok, res.error
    result = res.result
    assert result["supported"] is True
    # 2 updates of 2048 steps on one-step episodes: every step ends an episode, read from final_info
    assert result["episodes"] == 4096
    assert len(result["values"]) == 1


def test_short_training_run_records_everything_in_the_029_environment(workbench: object) -> None:
    from rlaudit.trainer import probes
    from rlaudit.trainer.runs import RunData

    res = workbench.run_side("candidate", probes.train_run, steps=4096, seed=0)
    assert res.ok, res.error
    run = RunData.from_result(res)
    episodes = run.table("episodes")
    assert len(episodes) == 20 and set(episodes["length"]) == {200}  # 4 envs x 5 episodes of 200 steps
    assert len(run.table("memory")) >= 2  # sampled by the recorder on its own
    assert {"collect/act", "collect/env", "learn"} <= set(run.table("phases")["name"])
    assert res.result["checkpoints"]
