"""The log readers: TensorBoard (both scalar encodings), CSV and JSONL, de-duplication of resumed runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rlaudit.logfiles import dedupe_latest, log_inventory, read_scalars


def _write_events(path: Path, events: list[tuple[float, int, str, float, bool]]) -> Path:
    """Write an event file with TensorBoard's own record writer.

    Args:
        events: ``(wall_time, step, tag, value, as_tensor)``; ``as_tensor`` writes the TF2 tensor form.
    """
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter
    from tensorboard.util import tensor_util

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        writer = RecordWriter(f)
        writer.write(
            event_pb2.Event(
                wall_time=events[0][0] if events else 0.0, file_version="brain.Event:2"
            ).SerializeToString()
        )
        for wall, step, tag, value, as_tensor in events:
            if as_tensor:
                v = summary_pb2.Summary.Value(
                    tag=tag, tensor=tensor_util.make_tensor_proto(np.float32(value))
                )
                v.metadata.plugin_data.plugin_name = "scalars"
            else:
                v = summary_pb2.Summary.Value(tag=tag, simple_value=value)
            ev = event_pb2.Event(wall_time=wall, step=step, summary=summary_pb2.Summary(value=[v]))
            writer.write(ev.SerializeToString())
        writer.flush()
    return path


def test_tensorboard_simple_and_tensor_scalars(tmp_path: Path) -> None:
    _write_events(
        tmp_path / "events.out.tfevents.1.host",
        [(10.0, 1, "a", 0.5, False), (11.0, 2, "a", 0.25, False), (12.0, 2, "b", 3.0, True)],
    )
    df = read_scalars(tmp_path)
    assert list(df.columns) == ["step", "tag", "value", "wall_time"]
    assert df.to_dict("records") == [
        {"step": 1, "tag": "a", "value": 0.5, "wall_time": 10.0},
        {"step": 2, "tag": "a", "value": 0.25, "wall_time": 11.0},
        {"step": 2, "tag": "b", "value": 3.0, "wall_time": 12.0},
    ]


def test_more_than_ten_thousand_scalars_are_all_kept(tmp_path: Path) -> None:
    # EventAccumulator's default size guidance keeps a 10,000-value reservoir per tag; we keep everything.
    _write_events(
        tmp_path / "events.out.tfevents.2.host", [(float(i), i, "x", float(i), False) for i in range(12_000)]
    )
    df = read_scalars(tmp_path)
    assert len(df) == 12_000
    assert df["step"].tolist() == list(range(12_000))


def test_resumed_run_keeps_the_latest_write(tmp_path: Path) -> None:
    # The first run logged steps 1..3; it was resumed from step 2, which rewrote steps 2 and 3.
    _write_events(
        tmp_path / "events.out.tfevents.100.a", [(100.0 + s, s, "r", float(s), False) for s in (1, 2, 3)]
    )
    _write_events(
        tmp_path / "events.out.tfevents.200.b", [(200.0 + s, s, "r", 10.0 * s, False) for s in (2, 3, 4)]
    )
    df = read_scalars(tmp_path)
    assert df["step"].tolist() == [1, 2, 3, 4]
    assert df["value"].tolist() == [1.0, 20.0, 30.0, 40.0]
    raw = read_scalars(tmp_path, dedupe=False)
    assert len(raw) == 6


def test_truncated_event_file_keeps_complete_records(tmp_path: Path) -> None:
    path = _write_events(
        tmp_path / "events.out.tfevents.3.host", [(1.0, s, "a", float(s), False) for s in range(5)]
    )
    data = path.read_bytes()
    path.write_bytes(data[:-7])  # the writer died in the middle of the last record
    df = read_scalars(path)
    assert df["step"].tolist() == [0, 1, 2, 3]
    inv = log_inventory(tmp_path)
    assert inv["truncated"].tolist() == [True]


def test_empty_event_file_has_zero_scalars(tmp_path: Path) -> None:
    _write_events(tmp_path / "tb" / "events.out.tfevents.4.host", [])
    df = read_scalars(tmp_path)
    assert df.empty and list(df.columns) == ["step", "tag", "value", "wall_time"]
    inv = log_inventory(tmp_path)
    assert inv["scalars"].tolist() == [0] and inv["bytes"].iloc[0] > 0


def test_torch_summary_writer_round_trip(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path))
    for step in range(3):
        writer.add_scalar("charts/episodic_return", step * 0.5, step)
    writer.close()
    df = read_scalars(tmp_path)
    assert df["tag"].unique().tolist() == ["charts/episodic_return"]
    assert df["value"].tolist() == [0.0, 0.5, 1.0]


def test_csv_long_and_wide(tmp_path: Path) -> None:
    (tmp_path / "long.csv").write_text("step,tag,value\n1,a,0.5\n2,a,0.75\n2,b,nan\n")
    (tmp_path / "progress.csv").write_text(
        "time/total_timesteps,rollout/ep_rew_mean,train/loss,note\n100,1.5,0.2,x\n200,2.5,,y\n"
    )
    df = read_scalars(tmp_path)
    got = {(r.tag, r.step): r.value for r in df.itertuples()}
    assert got[("a", 1)] == 0.5 and got[("a", 2)] == 0.75
    assert math.isnan(got[("b", 2)])
    assert got[("rollout/ep_rew_mean", 100)] == 1.5 and got[("rollout/ep_rew_mean", 200)] == 2.5
    assert ("train/loss", 200) not in got  # an empty cell is no scalar
    assert "note" not in set(df["tag"])  # text columns are not scalars
    assert df["wall_time"].isna().all()


def test_jsonl_long_wide_nested_and_broken_line(tmp_path: Path) -> None:
    lines = [
        {"step": 1, "tag": "x", "value": 2.0, "wall_time": 5.0},
        {"global_step": 3, "losses": {"value_loss": 0.1}, "timestamp": 6.0},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + '\n{"step": 4, "x": '
    (tmp_path / "metrics.jsonl").write_text(text)
    df = read_scalars(tmp_path / "metrics.jsonl")
    assert df.to_dict("records") == [
        {"step": 3, "tag": "losses/value_loss", "value": 0.1, "wall_time": 6.0},
        {"step": 1, "tag": "x", "value": 2.0, "wall_time": 5.0},
    ]


def test_dedupe_without_wall_times_keeps_the_last_row() -> None:
    import pandas as pd

    df = pd.DataFrame(
        {"step": [1, 1, 2], "tag": ["a", "a", "a"], "value": [1.0, 2.0, 3.0], "wall_time": [np.nan] * 3}
    )
    assert dedupe_latest(df)["value"].tolist() == [2.0, 3.0]


def test_missing_path_says_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="log_dir"):
        read_scalars(tmp_path / "nope")
