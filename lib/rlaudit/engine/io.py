"""Atomic file writes and tidy tables that both sides of the worker boundary can read.

Probes run inside a subject's own Python, which may have only numpy, torch and gymnasium: tables are written
as parquet when pyarrow is importable there and as ``.npz`` otherwise; :func:`read_table` reads either.
Every write goes to a temporary file in the same directory and is renamed into place, so a reader never sees
a half-written file, even when the writer is killed mid-write.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np


class ArtifactReadError(ValueError):
    """An artifact file that is there but cannot be read (truncated, corrupt, or not the format it claims).

    The message names the file; :attr:`remediation` says what to do (a finding built from this error shows
    it instead of the generic advice about probe limits).

    Attributes:
        path: The file.
        remediation: What to do about it.
    """

    def __init__(self, path: str | Path, cause: BaseException) -> None:
        self.path = Path(path)
        self.remediation = (
            f"The file {self.path} is damaged or not what its name says. Rerun: a cached entry whose checksums "
            "no longer match is recomputed; if it persists, delete that directory or rerun with --fresh."
        )
        super().__init__(f"could not read {self.path}: {type(cause).__name__}: {cause}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one.

    The file gets the usual permissions (0666 less the umask), not mkstemp's private 0600, so reports can be
    served and shared.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, value: Any) -> Path:
    from rlaudit.findings import jsonable

    return atomic_write_text(path, json.dumps(jsonable(value), indent=2, ensure_ascii=False))


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write to (by any library); on success it is renamed to ``path``.

    Use for writers that want a file name rather than bytes (``np.savez``, ``torch.save``, pyarrow).
    The temporary name keeps the final suffix so such libraries do not append their own.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{uuid.uuid4().hex[:8]}.tmp{path.suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary directory; on success it replaces ``path`` as a whole.

    Readers check for ``path`` (or a marker file inside it) and so never see a partial artifact set. If
    ``path`` already exists when the block ends (another process finished first), the new copy is dropped.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        try:
            os.rename(tmp, path)
        except OSError:
            if not path.exists():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def write_table(path_stem: str | Path, columns: Mapping[str, Any]) -> Path:
    """Write equal-length 1-D columns as a table, atomically.

    Args:
        path_stem: Destination without suffix; ``.parquet`` or ``.npz`` is appended.
        columns: Column name -> 1-D array-like (numbers, bools or strings), all the same length.

    Returns:
        The path written.
    """
    arrays = {name: np.asarray(col) for name, col in columns.items()}
    lengths = {name: a.shape[0] if a.ndim else 1 for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"table columns must have equal lengths, got {lengths}")
    stem = Path(path_stem)
    if _have_pyarrow():
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = stem.with_suffix(".parquet")
        table = pa.table({name: a.reshape(-1) for name, a in arrays.items()})
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
        return path
    path = stem.with_suffix(".npz")
    with atomic_path(path) as tmp:
        # What np.savez writes, without passing columns as keyword arguments: a column named "file" (savez's
        # own first parameter, e.g. an allocation site's file) would raise TypeError there.
        import zipfile

        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, a in arrays.items():
                with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                    np.lib.format.write_array(f, np.asanyarray(a.reshape(-1)), allow_pickle=False)
    return path


def table_path(path_stem: str | Path) -> Path | None:
    """The file :func:`write_table` wrote for ``path_stem`` (parquet or npz), or None."""
    stem = Path(path_stem)
    if stem.suffix in (".parquet", ".npz") and stem.exists():
        return stem
    for suffix in (".parquet", ".npz"):
        candidate = stem.with_suffix(suffix)
        if candidate.exists():
            return candidate
    return None


def read_table(path_stem: str | Path):  # -> pandas.DataFrame (pandas is imported lazily)
    """Read a table written by :func:`write_table` as a pandas DataFrame.

    Raises:
        FileNotFoundError: Neither ``<stem>.parquet`` nor ``<stem>.npz`` exists.
    """
    import pandas as pd

    path = table_path(path_stem)
    if path is None:
        raise FileNotFoundError(f"no table at {path_stem} (.parquet or .npz); was the probe run?")
    try:
        if path.suffix == ".parquet":
            return pd.read_parquet(path)
        with np.load(path, allow_pickle=False) as data:
            return pd.DataFrame({k: data[k] for k in data.files})
    except Exception as exc:  # pyarrow, zipfile and numpy raise many types; each must name the file
        raise ArtifactReadError(path, exc) from exc


def read_npz(path: str | Path) -> dict[str, Any]:
    """The arrays of an ``.npz`` file, loaded into memory.

    Raises:
        FileNotFoundError: No such file.
        ArtifactReadError: The file is there but unreadable (truncated, not a zip), naming it.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise ArtifactReadError(path, exc) from exc


def read_json(path: str | Path) -> Any:
    """A JSON file, parsed.

    Raises:
        FileNotFoundError: No such file.
        ArtifactReadError: The file is there but not valid JSON (e.g. truncated), naming it.
    """
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise ArtifactReadError(path, exc) from exc
