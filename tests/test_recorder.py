"""Tests of the Recorder: what watch() measures, the tables it writes, and that writes are atomic."""

from __future__ import annotations

import inspect
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from rlaudit.engine import io as rio
from rlaudit.engine.io import read_table
from rlaudit.recorder import NullRecorder, Recorder, rss_bytes


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))


def _step(
    model: nn.Module, opt: torch.optim.Optimizer, clip: float | None = None, scale: float = 1.0
) -> float:
    """One optimizer step on a fixed batch; returns the global grad norm before clipping (by hand)."""
    x = torch.arange(6.0).reshape(2, 3)
    opt.zero_grad()
    (scale * model(x).pow(2).sum()).backward()
    norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters()))
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    return norm


def test_updates_table_records_lr_hyperparameters_and_grad_norms(tmp_path: Path) -> None:
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.1, eps=1e-5, betas=(0.8, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0 / (k + 1))
    rec = Recorder(tmp_path, sample_every=2)
    rec.watch(model, opt)
    norms = []
    for i in range(3):
        rec.log(100 * (i + 1), **{"losses/x": float(i)})
        norms.append(_step(model, opt, clip=0.5))
        sched.step()
    rec.close()
    updates = read_table(tmp_path / "updates")
    assert list(updates.columns[:4]) == ["update", "step", "group", "lr"]
    np.testing.assert_array_equal(updates["update"], [1, 2, 3])
    np.testing.assert_array_equal(updates.step, [100, 200, 300])
    np.testing.assert_allclose(updates.lr, [0.1, 0.05, 0.1 / 3])  # the runtime rate, not the configured one
    np.testing.assert_allclose(updates.eps, 1e-5)
    np.testing.assert_allclose(updates.beta1, 0.8)
    np.testing.assert_allclose(updates.beta2, 0.95)
    np.testing.assert_allclose(updates.grad_norm, norms, rtol=1e-5)  # before clipping
    np.testing.assert_allclose(updates.grad_norm_clipped, np.minimum(norms, 0.5), rtol=1e-4)
    assert all(n > 0.5 for n in norms)  # the clip did bite, so the two columns differ


def test_gradient_accumulation_and_explicit_pre_clip_norm(tmp_path: Path) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rec = Recorder(tmp_path)
    rec.watch(model, opt)
    x = torch.ones(2, 3)
    opt.zero_grad()
    model(x).sum().backward()
    model(x).sum().backward()  # accumulated: the recorded norm is the norm of the sum
    accumulated = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters()))
    opt.step()
    opt.zero_grad()
    model(x).sum().backward()
    rec.grad_norm(pre_clip=123.0)  # e.g. a trainer that unscales AMP gradients reports the true norm
    opt.step()
    rec.close()
    updates = read_table(tmp_path / "updates")
    assert updates.grad_norm[0] == pytest.approx(accumulated, rel=1e-5)
    assert updates.grad_norm[1] == 123.0
    np.testing.assert_allclose(updates.momentum, 0.9)


@pytest.mark.parametrize("clip", [None, 100.0])  # hooks alone, and the clip_grad_norm_ wrapper
def test_layers_table_is_sampled_and_measures_update_ratio(tmp_path: Path, clip: float | None) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = Recorder(tmp_path, sample_every=2)
    rec.watch(model, opt)
    expected = {}
    for update in range(1, 6):
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        x = torch.arange(6.0).reshape(2, 3)
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        grads = {n: float(p.grad.norm()) for n, p in model.named_parameters()}
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if update in (1, 3, 5):
            for n, p in model.named_parameters():
                w = float(before[n].norm())
                expected[(update, n)] = (
                    grads[n],
                    w,
                    float((p.detach() - before[n]).norm()) / w if w else 0.0,
                )
    rec.close()
    layers = read_table(tmp_path / "layers")
    assert sorted(set(layers["update"])) == [1, 3, 5]
    assert set(layers.layer) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    for row in layers.itertuples():
        g_norm, w_norm, ratio = expected[(row.update, row.layer)]
        assert row.grad_norm == pytest.approx(g_norm, rel=1e-5)
        assert row.weight_norm == pytest.approx(w_norm, rel=1e-5)
        if w_norm > 0:
            assert row.update_ratio == pytest.approx(ratio, rel=1e-4)


@pytest.mark.parametrize("how", ["wrapped", "captured_before_watch"])
def test_clip_grad_norm_is_wrapped_while_watching_and_restored(tmp_path: Path, how: str) -> None:
    original = torch.nn.utils.clip_grad_norm_
    captured = torch.nn.utils.clip_grad_norm_  # like `from torch.nn.utils import clip_grad_norm_` at import
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rec = Recorder(tmp_path)
    rec.watch(model, opt)
    assert torch.nn.utils.clip_grad_norm_ is not original
    x = torch.arange(6.0).reshape(2, 3)
    norms = []
    for _ in range(3):
        opt.zero_grad()
        (3 * model(x).pow(2).sum()).backward()
        clip = nn.utils.clip_grad_norm_ if how == "wrapped" else captured
        norms.append(float(clip(model.parameters(), 0.1)))  # returns the norm before clipping
        opt.step()
    rec.close()
    assert torch.nn.utils.clip_grad_norm_ is original
    updates = read_table(tmp_path / "updates")
    np.testing.assert_allclose(updates.grad_norm, norms, rtol=1e-5)
    np.testing.assert_allclose(updates.grad_norm_clipped, 0.1, rtol=1e-4)


def test_post_clip_norm_is_measured_when_one_clip_does_not_cover_every_gradient(tmp_path: Path) -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    rec = Recorder(tmp_path)
    rec.watch(model, opt)
    truth = []
    for _ in range(2):
        opt.zero_grad()
        model(torch.ones(2, 3)).pow(2).sum().backward()
        for layer in model:  # each layer clipped on its own, as actor and critic often are
            nn.utils.clip_grad_norm_(layer.parameters(), 0.01)
        truth.append(
            float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()])))
        )
        opt.step()
    rec.close()
    updates = read_table(tmp_path / "updates")
    np.testing.assert_allclose(updates.grad_norm_clipped, truth, rtol=1e-5)
    assert truth[0] == pytest.approx(0.01 * 2**0.5, rel=1e-3)  # not the last clip's 0.01


def test_cpu_steps_per_second_leave_out_the_warm_up_before_the_first_update(tmp_path: Path) -> None:
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = Recorder(tmp_path)
    rec.watch(model, opt)
    start = time.process_time()
    while time.process_time() - start < 0.3:  # warm-up: CPU spent before any update
        pass
    for step in (100, 200, 300, 400):
        rec.log(step, x=1.0)
        opt.zero_grad()
        model(torch.ones(1, 2)).sum().backward()
        opt.step()
    rec.close()
    summary = json.loads((tmp_path / "summary.json").read_text())
    whole_run = summary["steps"] / summary["cpu_seconds"]
    assert summary["steps"] == 400 and summary["sps_cpu"] > 5 * whole_run


def test_scalars_episodes_phases_memory_and_summary(tmp_path: Path) -> None:
    rec = Recorder(tmp_path)
    rec.log(10, **{"charts/episodic_return": 1.5, "perf/sps": 100.0})
    rec.episode(step=10, env=2, **{"return": 1.0, "length": 5, "heart.get": 2, "task": "size5"})
    rec.episode(step=12, **{"return": 2.0, "length": 7})  # no heart.get, no env
    with rec.phase("rollout"):
        for _ in range(3):
            with rec.phase("env"):
                time.sleep(0.001)
        with rec.phase("inference"):
            pass
    with rec.phase("update"):
        time.sleep(0.002)
    rec.sample_memory(12)
    rec.close()
    rec.close()  # idempotent
    scalars = read_table(tmp_path / "scalars")
    assert list(scalars.columns) == ["step", "name", "value"]
    assert dict(zip(scalars.name, scalars.value, strict=True)) == {
        "charts/episodic_return": 1.5,
        "perf/sps": 100.0,
    }
    episodes = read_table(tmp_path / "episodes")
    assert list(episodes.columns[:2]) == ["step", "env"]
    np.testing.assert_array_equal(episodes.env, [2, -1])
    np.testing.assert_array_equal(episodes["return"], [1.0, 2.0])
    assert episodes["heart.get"][0] == 2 and math.isnan(episodes["heart.get"][1])
    assert list(episodes.task) == ["size5", ""]
    phases = read_table(tmp_path / "phases").set_index("name")
    assert phases.loc["rollout/env", "count"] == 3 and phases.loc["rollout/inference", "count"] == 1
    assert phases.loc["rollout", "seconds"] >= phases.loc["rollout/env", "seconds"] >= 0.003
    assert phases.loc["update", "seconds"] >= 0.002
    memory = read_table(tmp_path / "memory")
    # the first recorder call samples on its own (step 10); the explicit call adds step 12
    assert list(memory.step) == [10, 12] and memory.rss_bytes.min() > 10_000_000  # Python with torch: > 10 MB
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["steps"] == 12 and summary["episodes"] == 2 and summary["updates"] == 0
    assert summary["sps"] > 0 and summary["torch_threads"] == torch.get_num_threads()
    assert {"steps", "seconds", "sps", "updates", "episodes", "torch_threads"} <= set(summary)
    # steps per CPU-second of this process (no optimizer steps here, so over the whole run)
    assert summary["cpu_seconds"] > 0 and summary["sps_cpu"] == pytest.approx(12 / summary["cpu_seconds"])


def test_memory_is_sampled_without_sample_memory_calls(tmp_path: Path) -> None:
    # A trainer that only reports episodes still gets a memory table spanning its run.
    rec = Recorder(tmp_path, memory_seconds=0.05)
    for step in range(0, 1001, 100):
        rec.episode(step=step, **{"return": 1.0})
        time.sleep(0.06)
    rec.close()
    memory = read_table(tmp_path / "memory")
    assert list(memory.step) == list(range(0, 1001, 100))
    assert (np.diff(memory.seconds) > 0).all()


def test_memory_samples_are_rate_limited_and_end_at_the_last_step(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, memory_seconds=3600.0)
    for step in range(1, 501):
        rec.log(step, loss=1.0)
    rec.sample_memory(250)  # an explicit call always samples
    rec.close()
    memory = read_table(tmp_path / "memory")
    assert list(memory.step) == [1, 250, 500]  # first call, explicit call, the run's end at close
    off = Recorder(tmp_path / "off", memory_seconds=None)
    off.log(7, loss=1.0)
    off.close()
    assert list(read_table(tmp_path / "off" / "memory").step) == [7]  # only the end of the run
    with pytest.raises(ValueError, match="memory_seconds"):
        Recorder(tmp_path, memory_seconds=0.0)


def test_empty_run_writes_readable_empty_tables(tmp_path: Path) -> None:
    Recorder(tmp_path).close()
    for name in ("scalars", "episodes", "updates", "layers", "phases", "memory"):
        assert len(read_table(tmp_path / name)) == 0


def test_tables_are_flushed_while_running(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, flush_seconds=0.0)
    rec.log(1, a=1.0)
    assert len(read_table(tmp_path / "scalars")) == 1  # on disk before close: a crash would keep it
    rec.log(2, a=2.0)
    assert len(read_table(tmp_path / "scalars")) == 2
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary files left behind
    rec.close()
    lazy = Recorder(tmp_path / "lazy", flush_seconds=3600.0)
    lazy.log(1, a=1.0)
    assert not (tmp_path / "lazy").exists()
    lazy.close()
    assert len(read_table(tmp_path / "lazy" / "scalars")) == 1


def test_a_crash_during_a_flush_keeps_the_previous_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = Recorder(tmp_path, flush_seconds=3600.0)
    rec.log(1, a=1.0)
    rec.flush()
    rec.log(2, a=2.0)
    real = rio.write_table
    written: list[str] = []

    def dying_write(stem, columns):
        # write half of the new file into the temporary path, then die, as a killed process would
        path = Path(stem).with_suffix(".parquet" if rio._have_pyarrow() else ".npz")
        with rio.atomic_path(path) as tmp:
            tmp.write_bytes(b"PAR1 half a file")
            written.append(str(tmp))
            raise KeyboardInterrupt

    monkeypatch.setattr("rlaudit.recorder.write_table", dying_write)
    with pytest.raises(KeyboardInterrupt):
        rec.flush()
    monkeypatch.setattr("rlaudit.recorder.write_table", real)
    assert written
    scalars = read_table(tmp_path / "scalars")
    np.testing.assert_array_equal(scalars.value, [1.0])  # the old table, whole
    assert not Path(written[0]).exists()


def test_watch_twice_is_an_error_and_close_removes_hooks(tmp_path: Path) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = Recorder(tmp_path)
    rec.watch(model, opt)
    with pytest.raises(RuntimeError, match="once"):
        rec.watch(model, opt)
    _step(model, opt)
    rec.close()
    _step(model, opt)  # no hooks any more: nothing recorded, nothing raised
    assert len(read_table(tmp_path / "updates")) == 1


def test_null_recorder_has_the_same_api() -> None:
    public = {n for n, v in inspect.getmembers(Recorder) if callable(v) and not n.startswith("_")}
    assert public <= {n for n in dir(NullRecorder) if not n.startswith("_")}
    null = NullRecorder()
    assert null.run_dir is None
    null.watch(_model(), torch.optim.SGD(_model().parameters(), lr=0.1))
    null.log(1, a=1.0)
    null.episode(step=1, **{"return": 1.0})
    with null.phase("rollout"), null.phase("env"):
        pass
    null.sample_memory(1)
    null.close()


def test_rss_bytes_is_positive() -> None:
    assert rss_bytes() > 0


def test_log_without_scalars_stamps_the_following_optimizer_steps(tmp_path: Path) -> None:
    net = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    rec = Recorder(tmp_path)
    rec.watch(net, opt)
    for rollout_end in (2048, 4096):
        rec.log(rollout_end)  # the rollout's last step, before its update
        for _ in range(2):
            opt.zero_grad()
            net(torch.ones(1, 2)).sum().backward()
            opt.step()
    rec.close()
    assert list(read_table(tmp_path / "updates").step) == [2048, 2048, 4096, 4096]
    assert len(read_table(tmp_path / "scalars")) == 0


def test_columns_give_the_tables_without_reading_files(tmp_path: Path) -> None:
    rec = Recorder(tmp_path, flush_seconds=3600.0)
    rec.log(5, **{"losses/value_loss": 0.5})
    rec.episode(step=5, env=1, **{"return": -200.0})
    assert rec.columns("scalars")["name"].tolist() == ["losses/value_loss"]
    assert rec.columns("episodes")["return"].tolist() == [-200.0]
    assert not tmp_path.joinpath("scalars.parquet").exists()  # nothing flushed yet
    with pytest.raises(ValueError, match="unknown recorder table 'rewards'"):
        rec.columns("rewards")
    rec.close()


def test_summary_records_the_load_per_core_the_steady_state_was_timed_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 2-core machine whose one-minute load average is 2.0 at the first update and 6.0 at the close
    loads = iter([1.0, 2.0, 6.0])  # at construction (no update yet), at the first update, at the close
    monkeypatch.setattr("os.getloadavg", lambda: (next(loads), 0.0, 0.0))
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = Recorder(tmp_path)
    rec.watch(model, opt)
    for step in (100, 200):
        rec.log(step, x=1.0)
        _step_once(model, opt)
    rec.close()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["load_per_core"] == pytest.approx(0.5 * (2.0 + 6.0) / 2)  # the warm-up's load left out

    def no_load_average() -> tuple[float, float, float]:
        raise OSError("no load average on this platform")

    monkeypatch.setattr("os.getloadavg", no_load_average)
    rec = Recorder(tmp_path / "unknown")
    rec.log(10, x=1.0)
    rec.close()
    assert json.loads((tmp_path / "unknown" / "summary.json").read_text())["load_per_core"] is None


def _step_once(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    opt.zero_grad()
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
