"""The package's import graph, read from the source with ``ast``: the attribution engine and the model of a code
change stay apart, and attribution reaches the built-in subjects only through what they expose.

Every import counts, also those inside functions (a lazy import is still a dependency)."""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

from rlaudit.engine.paths import PACKAGE_DIR

PACKAGE = "rlaudit"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str) -> set[str]:
    """Every ``rlaudit`` module ``path`` imports (``from rlaudit.x import y`` counts ``rlaudit.x.y`` too,
    since ``y`` may be a submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            out.add(source)
            out.update(f"{source}.{a.name}" for a in node.names)
    return {m for m in out if m == PACKAGE or m.startswith(PACKAGE + ".")}


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the ``rlaudit`` modules it imports, over every module of the package (read once)."""
    return {
        _module_name(path): _imports(path, _module_name(path)) for path in sorted(PACKAGE_DIR.rglob("*.py"))
    }


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _edges(graph: dict[str, set[str]], source: str, target: str) -> list[str]:
    """``"a -> b"`` for every import from a module of package ``source`` into package ``target``."""
    return sorted(
        f"{m} -> {dep}"
        for m, deps in graph.items()
        if _within(m, source)
        for dep in deps
        if _within(dep, target)
    )


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Top-level package (``rlaudit.attribution``, ``rlaudit.changes``, ...) -> the top-level packages and
    modules it imports."""

    def top(m: str) -> str:
        return ".".join(m.split(".")[:2])

    out: dict[str, set[str]] = {}
    for m, deps in graph.items():
        out.setdefault(top(m), set()).update(top(d) for d in deps if top(d) != top(m))
    return out


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """A path of imports from ``start`` to ``goal`` (None when there is none)."""
    seen = {start}
    stack = [(start, [start])]
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph.get(node, ())):
            if nxt == goal:
                return [*path, nxt]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_the_graph_is_read_from_the_source() -> None:
    graph = import_graph()
    assert "rlaudit.attribution.engine" in graph and "rlaudit.changes.hunks" in graph
    # the reader sees what a lazy import inside a function names
    assert "rlaudit.changes.trace" in graph["rlaudit.changes.probes"]


def test_the_model_of_a_code_change_imports_nothing_from_attribution() -> None:
    assert _edges(import_graph(), "rlaudit.changes", "rlaudit.attribution") == []


def test_attribution_and_the_change_model_form_no_cycle() -> None:
    packages = _package_graph(import_graph())
    for a, b in (("rlaudit.attribution", "rlaudit.changes"), ("rlaudit.changes", "rlaudit.attribution")):
        there = _reaches(packages, a, b)
        back = _reaches(packages, b, a)
        assert there is None or back is None, (
            f"cycle: {' -> '.join(there or [])} and {' -> '.join(back or [])}"
        )


def test_attribution_imports_nothing_from_the_demo() -> None:
    assert _edges(import_graph(), "rlaudit.attribution", "rlaudit.demo") == []


def test_attributions_probe_pulls_in_nothing_heavy_in_a_subjects_process() -> None:
    # rlaudit.attribution.probes runs in the subject's own interpreter, which may lack numpy or scipy
    code = (
        "import sys, rlaudit.attribution.probes; "
        "print(sorted(m for m in ('numpy', 'scipy', 'pandas', 'torch', 'rlaudit.engine.workbench') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_DIR.parent)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------------------------
# The tests follow the rooms' modules: tests/rooms/<room>/test_<module>.py tests lib/rlaudit/<room>/<module>.py
# ---------------------------------------------------------------------------------------------------------------

ROOM_TESTS = Path(__file__).resolve().parent / "rooms"
# Check modules without tests of their own, whose checks only their room's matrix (``test_audit.py``) decides.
# Every module that defines a check has its ``test_<module>.py`` today, so the set is empty; it may only stay so
# (a module added without tests fails the test below, and is given its tests rather than listed here).
WITHOUT_OWN_TESTS: frozenset[str] = frozenset()


def rooms() -> list[str]:
    """The rooms: the packages of ``rlaudit`` with an ``audit.py`` index."""
    return sorted(path.parent.name for path in PACKAGE_DIR.glob("*/audit.py"))


def _defines_a_check(path: Path) -> bool:
    """True when the module decorates a function with ``@check(...)`` (the idiom of ``rlaudit.checks``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        for deco in getattr(node, "decorator_list", ()):
            func = deco.func if isinstance(deco, ast.Call) else deco
            if (isinstance(func, ast.Name) and func.id == "check") or (
                isinstance(func, ast.Attribute) and func.attr == "check"
            ):
                return True
    return False


def check_modules() -> list[str]:
    """``room/module`` for every module of a room that defines a check."""
    return [
        f"{room}/{path.stem}"
        for room in rooms()
        for path in sorted((PACKAGE_DIR / room).glob("*.py"))
        if _defines_a_check(path)
    ]


def test_checks_are_found_by_their_decorator() -> None:
    found = check_modules()
    assert {"loss/gae", "loss/audit"}.isdisjoint(found)  # helpers and the index define no check
    assert {"loss/terms", "env/throughput", "seeding/subenvs"} <= set(found)


def test_every_room_has_its_test_folder_and_each_test_file_names_a_module_of_its_room() -> None:
    assert ROOM_TESTS.is_dir(), "the rooms' tests live in tests/rooms/<room>/ (see CONTRIBUTING.md)"
    folders = {path.name for path in ROOM_TESTS.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders == set(rooms()), "one folder tests/rooms/<room>/ per room, named as lib/rlaudit/<room>/"
    strays = [
        f"{path.relative_to(ROOM_TESTS.parent)} (no lib/rlaudit/{path.parent.name}/{path.stem[5:]}.py)"
        for path in sorted(ROOM_TESTS.glob("*/test_*.py"))
        if not (PACKAGE_DIR / path.parent.name / f"{path.stem[5:]}.py").is_file()
    ]
    assert not strays, (
        "a room's test file is named test_<module>.py after the module it tests:\n" + "\n".join(strays)
    )


def test_every_check_module_has_its_test_file() -> None:
    untested = {m for m in check_modules() if not (ROOM_TESTS / f"{m.replace('/', '/test_')}.py").is_file()}
    missing = sorted(untested - WITHOUT_OWN_TESTS)
    assert not missing, (
        "each module of a room that defines a @check has tests/rooms/<room>/test_<module>.py: "
        + ", ".join(missing)
    )
    now_tested = sorted(WITHOUT_OWN_TESTS - untested)
    assert not now_tested, f"strike these off WITHOUT_OWN_TESTS in {Path(__file__).name}: {now_tested}"
