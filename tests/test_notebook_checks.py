"""Each room's notebook runs exactly its room's checks, in order: ``notebooks/NN_<room>.ipynb`` against
``rlaudit.<room>.audit.CHECKS``.

``rlaudit audit`` and the tests run a room through ``CHECKS`` (``audit_all``); a report runs its notebook. This
keeps the two the same: a check added to one and not the other, or moved, fails here. A check call is a call,
in any code cell, of a function declared with :func:`rlaudit.checks.check`, found by resolving the names the
notebook imports; calls are read in cell order, then source order.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ROOMS = [path for path in NOTEBOOKS if path.stem.split("_", 1)[1] != "summary"]


def _imports(tree: ast.AST) -> dict[str, Any]:
    """Names the cell's imports bind from rlaudit -> the module or object (``import a.b as c``, ``from a import
    b``)."""
    bound: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rlaudit") and alias.asname:
                    bound[alias.asname] = importlib.import_module(alias.name)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rlaudit"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                try:
                    value = importlib.import_module(f"{node.module}.{alias.name}")
                except ImportError:
                    value = getattr(module, alias.name)
                bound[alias.asname or alias.name] = value
    return bound


def _resolve(node: ast.expr, bound: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, bound)
        return None if base is None else getattr(base, node.attr, None)
    return None


def checks_called(nb: nbformat.NotebookNode) -> list[str]:
    """The ids of the checks a notebook calls, in cell order, then source order."""
    bound: dict[str, Any] = {}
    called: list[str] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(cell.source)
        bound.update(_imports(tree))
        calls = sorted(
            (n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)
        )
        for call in calls:
            spec = getattr(_resolve(call.func, bound), "spec", None)
            if spec is not None and hasattr(spec, "hypothesis"):
                called.append(spec.id)
    return called


def room_checks(room: str) -> list[str]:
    """The ids of ``rlaudit.<room>.audit.CHECKS``, in order."""
    return [check.spec.id for check in importlib.import_module(f"rlaudit.{room}.audit").CHECKS]


@pytest.mark.parametrize("path", ROOMS, ids=[p.stem for p in ROOMS])
def test_a_notebook_calls_exactly_its_rooms_checks_in_order(path: Path) -> None:
    room = path.stem.split("_", 1)[1]
    called, declared = checks_called(nbformat.read(path, as_version=4)), room_checks(room)
    assert called == declared, (
        f"{path.name} calls {called}, but rlaudit.{room}.audit.CHECKS is {declared}: add, remove or move the "
        "notebook's sections (docs/NOTEBOOK_TEMPLATE.md) or CHECKS so they agree"
    )


def test_every_room_has_a_notebook() -> None:
    from rlaudit.findings import SUBSYSTEMS

    assert [p.stem.split("_", 1)[1] for p in ROOMS] == list(SUBSYSTEMS)


def _notebook(*cells: str) -> nbformat.NotebookNode:
    return new_notebook(cells=[new_code_cell(source) for source in cells])


def test_calls_are_found_through_any_import_form_and_in_order() -> None:
    nb = _notebook(
        "import rlaudit.notebook as rn\nfrom rlaudit.trainer import audit\nfrom rlaudit.trainer.speed import speed",
        "geometry = session.add(audit.geometry(session.wb))",
        "s = session.add(speed(session.wb))\nm = session.add(audit.minibatches(session.wb))",
        "rn.explore_curves(audit.geometry)\nsession.finish()",  # a check named, not called, is no call
    )
    assert checks_called(nb) == ["trainer/geometry", "trainer/speed", "trainer/minibatches"]


def test_a_missing_or_moved_check_is_caught() -> None:
    from rlaudit.trainer.audit import CHECKS

    declared = room_checks("trainer")
    calls = [f"x = session.add(audit.{check.__name__}(session.wb))" for check in CHECKS]
    imports = "from rlaudit.trainer import audit"
    assert checks_called(_notebook(imports, *calls)) == declared
    assert checks_called(_notebook(imports, *calls[1:])) != declared
    assert checks_called(_notebook(imports, *reversed(calls))) != declared
