"""rlaudit.engine.io: tables round-trip in both formats."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlaudit.engine import io


def test_npz_tables_take_any_column_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without pyarrow (a subject's environment may lack it) tables are .npz; np.savez's keyword form cannot
    # store a column named "file", which the memory audit's allocation sites have.
    monkeypatch.setattr(io, "_have_pyarrow", lambda: False)
    path = io.write_table(tmp_path / "sites", {"file": np.array(["a.py", "b.py"]), "size": np.arange(2)})
    assert path.suffix == ".npz"
    table = io.read_table(tmp_path / "sites")
    assert list(table["file"]) == ["a.py", "b.py"] and list(table["size"]) == [0, 1]
