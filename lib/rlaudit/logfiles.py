"""Read the scalars a trainer wrote to its logs: TensorBoard event files, CSV and JSONL, as one tidy table.

``read_scalars(path)`` returns ``DataFrame(step, tag, value, wall_time)`` for a file or a directory (searched
recursively), whatever the format:

- **TensorBoard** ``events.out.tfevents.*``: the TFRecord framing is parsed here and each record decoded with
  TensorBoard's own ``Event`` protocol buffer, so TensorFlow is never needed. Both the TF1 form of a scalar
  (``simple_value``) and the TF2/PyTorch tensor form (a one-element numeric tensor) are read. We do not use
  ``EventAccumulator``: by default it keeps a reservoir sample of 10,000 scalars per tag, and on a restart it
  *purges* the events after the restart step instead of keeping the latest write, which is the opposite of
  what an audit of a resumed run wants. A truncated last record (a run killed mid-write) ends that file.
- **CSV**: long form (columns ``step``, ``tag``/``name``/``metric``, ``value``) or wide form (a step column
  such as ``step``, ``global_step`` or SB3's ``time/total_timesteps``, and one column per tag).
- **JSONL**: one object per line, long form (``{"step", "tag", "value"}``) or wide form (``{"step": 10,
  "losses/value_loss": 0.3, ...}``; nested objects are flattened with ``/``).

A resumed run writes some steps twice (a second event file, or appended rows): :func:`dedupe_latest` keeps,
for each ``(tag, step)``, the latest write (largest wall time; among equal or unknown wall times the one read
last, files taken in order of their first write).
"""

from __future__ import annotations

import csv
import json
import math
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

COLUMNS = ("step", "tag", "value", "wall_time")

EVENT_MARKER = "tfevents"
STEP_COLUMNS = (
    "step",
    "global_step",
    "steps",
    "timestep",
    "timesteps",
    "time/total_timesteps",
    "total_timesteps",
    "_step",
    "env_step",
    "global_steps",
)
WALL_COLUMNS = ("wall_time", "walltime", "timestamp", "_timestamp")
TAG_COLUMNS = ("tag", "name", "metric", "key")


@dataclass
class LogFile:
    """One log file found under a log directory.

    Attributes:
        path: The file.
        format: ``tensorboard``, ``csv`` or ``jsonl``.
        bytes: Its size.
        scalars: Scalar values read from it (before de-duplication).
        records: TensorBoard records / CSV rows / JSONL lines read.
        truncated: True when the file ended in the middle of a record (the writer was killed).
        first_wall_time: Wall time of its first record, when the format has one.
    """

    path: Path
    format: str
    bytes: int
    scalars: int = 0
    records: int = 0
    truncated: bool = False
    first_wall_time: float | None = None
    rows: list[tuple[int, str, float, float]] = field(default_factory=list, repr=False)


def log_format(path: str | Path) -> str | None:
    """``tensorboard``, ``csv``, ``jsonl`` or None (not a scalar log this module reads)."""
    name = Path(path).name
    if EVENT_MARKER in name:
        return "tensorboard"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    return None


def find_log_files(path: str | Path) -> list[Path]:
    """Scalar log files at ``path`` (the file itself, or every readable file under a directory), sorted.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"no log file or directory at {root}; check the subject's log_dir()")
    if root.is_file():
        return [root] if log_format(root) else []
    return sorted(p for p in root.rglob("*") if p.is_file() and log_format(p) is not None)


# -------------------------------------------------------------------------------------------------------------
# TensorBoard
# -------------------------------------------------------------------------------------------------------------


def iter_tfrecords(path: str | Path) -> Iterator[bytes]:
    """The records of a TFRecord file (``uint64 length, uint32 crc, data, uint32 crc``), in order.

    The checksums are not verified: a writer killed mid-record leaves a short tail, which the length check
    catches (raised as ``_Truncated`` for :func:`read_event_file` to record).
    """
    with open(path, "rb") as f:
        while True:
            header = f.read(12)
            if len(header) < 12:
                if header:
                    raise _Truncated
                return
            (length,) = struct.unpack("<Q", header[:8])
            data = f.read(length)
            footer = f.read(4)
            if len(data) < length or len(footer) < 4:
                raise _Truncated
            yield data


class _Truncated(Exception):
    """The file ended in the middle of a record."""


def _scalar_of(value: Any) -> float | None:
    """The float of a summary value when it is a scalar (TF1 simple_value or a one-element numeric tensor)."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind != "tensor":
        return None
    from tensorboard.util import tensor_util

    try:
        array = tensor_util.make_ndarray(value.tensor)
    except Exception:  # an unknown dtype: not a scalar we can read
        return None
    if array.size != 1 or array.dtype.kind not in "biuf":
        return None
    return float(array.reshape(-1)[0])


def read_event_file(path: str | Path) -> LogFile:
    """Every scalar of one TensorBoard event file as rows ``(step, tag, value, wall_time)``."""
    from tensorboard.compat.proto import event_pb2

    p = Path(path)
    log = LogFile(path=p, format="tensorboard", bytes=p.stat().st_size)
    try:
        for raw in iter_tfrecords(p):
            log.records += 1
            event = event_pb2.Event()
            try:
                event.ParseFromString(raw)
            except Exception:  # a corrupt record: skip it, keep reading
                continue
            if log.first_wall_time is None:
                log.first_wall_time = float(event.wall_time)
            if event.WhichOneof("what") != "summary":
                continue
            for value in event.summary.value:
                number = _scalar_of(value)
                if number is None:
                    continue
                log.rows.append((int(event.step), str(value.tag), number, float(event.wall_time)))
    except _Truncated:
        log.truncated = True
    log.scalars = len(log.rows)
    return log


# -------------------------------------------------------------------------------------------------------------
# CSV and JSONL
# -------------------------------------------------------------------------------------------------------------


def _number(text: Any) -> float | None:
    if isinstance(text, bool):
        return float(text)
    if isinstance(text, int | float):
        return float(text)
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _pick(columns: Iterable[str], choices: Iterable[str]) -> str | None:
    lowered = {c.lower(): c for c in columns}
    for name in choices:
        if name in lowered:
            return lowered[name]
    return None


def _flatten(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(_flatten(value, name))
        else:
            out[name] = value
    return out


def _rows_from_records(records: list[dict[str, Any]], log: LogFile) -> None:
    """Turn parsed CSV rows / JSONL objects into scalar rows of ``log``.

    Each record is read on its own (a JSONL file may mix forms): long form when it has a tag and a value
    field, wide form (every other numeric field is a tag) otherwise. Records without a step use their index.
    """
    for index, record in enumerate(records):
        keys = [k for k, v in record.items() if v not in (None, "")]
        step_col = _pick(keys, STEP_COLUMNS)
        wall_col = _pick(keys, WALL_COLUMNS)
        tag_col = _pick(keys, TAG_COLUMNS)
        value_col = _pick(keys, ("value", "scalar", "val"))
        step_value = _number(record.get(step_col)) if step_col else float(index)
        if step_value is None or not math.isfinite(step_value):
            continue
        step = int(step_value)
        wall = _number(record.get(wall_col)) if wall_col else None
        wall = float("nan") if wall is None else wall
        if log.first_wall_time is None and math.isfinite(wall):
            log.first_wall_time = wall
        if tag_col and value_col:
            value = _number(record.get(value_col))
            if value is not None:
                log.rows.append((step, str(record[tag_col]), value, wall))
            continue
        for key, raw in record.items():
            if key in (step_col, wall_col):
                continue
            value = _number(raw)
            if value is not None:
                log.rows.append((step, key, value, wall))


def read_csv_file(path: str | Path) -> LogFile:
    """Scalars of a CSV log (long or wide form, see the module docstring)."""
    p = Path(path)
    log = LogFile(path=p, format="csv", bytes=p.stat().st_size)
    with open(p, newline="", encoding="utf-8", errors="replace") as f:
        records = [dict(row) for row in csv.DictReader(f)]
    log.records = len(records)
    _rows_from_records(records, log)
    log.scalars = len(log.rows)
    return log


def read_jsonl_file(path: str | Path) -> LogFile:
    """Scalars of a JSONL log (one object per line; a broken last line, a killed writer, is skipped)."""
    p = Path(path)
    log = LogFile(path=p, format="jsonl", bytes=p.stat().st_size)
    records: list[dict[str, Any]] = []
    with open(p, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                log.truncated = True
                continue
            if isinstance(obj, dict):
                records.append(_flatten(obj))
    log.records = len(records)
    _rows_from_records(records, log)
    log.scalars = len(log.rows)
    return log


_READERS = {"tensorboard": read_event_file, "csv": read_csv_file, "jsonl": read_jsonl_file}


def read_log_files(path: str | Path) -> list[LogFile]:
    """Every scalar log file under ``path``, read, in the order of their first write (mtime as a fallback)."""
    files = [_READERS[log_format(p) or ""](p) for p in find_log_files(path)]

    def order(log: LogFile) -> tuple[float, str]:
        first = log.first_wall_time
        return (
            first if first is not None and math.isfinite(first) else log.path.stat().st_mtime,
            str(log.path),
        )

    return sorted(files, key=order)


# -------------------------------------------------------------------------------------------------------------
# The table
# -------------------------------------------------------------------------------------------------------------


def empty_scalars() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "step": pd.Series([], dtype=np.int64),
            "tag": pd.Series([], dtype=object),
            "value": pd.Series([], dtype=np.float64),
            "wall_time": pd.Series([], dtype=np.float64),
        }
    )


def dedupe_latest(df: pd.DataFrame) -> pd.DataFrame:
    """Keep one row per ``(tag, step)``: the latest write.

    "Latest" is the largest ``wall_time``; rows without one (or with equal ones) are ordered by their
    position in ``df``, later rows winning. The result is sorted by tag, then step.

    Args:
        df: Columns ``step``, ``tag``, ``value``, ``wall_time``, in read order.
    """
    if df.empty:
        return df.reset_index(drop=True)
    work = df.reset_index(drop=True).copy()
    work["_order"] = np.arange(len(work))
    work["_wall"] = work["wall_time"].fillna(-np.inf)
    work = work.sort_values(["_wall", "_order"], kind="stable")
    work = work.drop_duplicates(["tag", "step"], keep="last")
    work = work.sort_values(["tag", "step"], kind="stable").drop(columns=["_order", "_wall"])
    return work.reset_index(drop=True)


def scalars_frame(logs: Iterable[LogFile], dedupe: bool = True) -> pd.DataFrame:
    """The rows of several read log files as one table (de-duplicated by default)."""
    rows = [row for log in logs for row in log.rows]
    if not rows:
        return empty_scalars()
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df["step"] = df["step"].astype(np.int64)
    df["value"] = df["value"].astype(np.float64)
    df["wall_time"] = df["wall_time"].astype(np.float64)
    return dedupe_latest(df) if dedupe else df


def read_scalars(path: str | Path, dedupe: bool = True) -> pd.DataFrame:
    """Every scalar logged under ``path`` (a log file or a directory searched recursively).

    Args:
        path: A TensorBoard event file, a CSV or JSONL file, or a directory holding any mix of them.
        dedupe: Keep only the latest write of each ``(tag, step)`` (resumed runs write some steps twice).

    Returns:
        ``DataFrame(step int64, tag str, value float64, wall_time float64 (NaN when the format has none))``,
        sorted by tag and step; empty (with those columns) when the files hold no scalars.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    return scalars_frame(read_log_files(path), dedupe=dedupe)


def log_inventory(path: str | Path) -> pd.DataFrame:
    """One row per log file: ``file`` (relative to ``path``), ``format``, ``bytes``, ``records``,
    ``scalars`` (before de-duplication), ``tags``, ``truncated``."""
    root = Path(path)
    rows = []
    for log in read_log_files(root):
        rel = log.path.relative_to(root) if root.is_dir() else Path(log.path.name)
        rows.append(
            {
                "file": str(rel),
                "format": log.format,
                "bytes": log.bytes,
                "records": log.records,
                "scalars": log.scalars,
                "tags": len({r[1] for r in log.rows}),
                "truncated": log.truncated,
            }
        )
    return pd.DataFrame(rows, columns=["file", "format", "bytes", "records", "scalars", "tags", "truncated"])
