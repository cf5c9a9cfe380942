"""Which tests start worker processes: the ``workbench`` mark, applied at collection, and its runtime guard.

``make test-fast`` runs ``-m "not workbench and not expensive"``: every test that never starts a subject's
worker, a notebook kernel, a report or a Ray cluster. Nobody marks a test by hand. At collection,
:func:`starts_workers` reads the source of the test function, of every fixture it uses (wherever defined) and
of the test helpers they call (functions and classes under ``tests/``), and marks the test when any of them
names one of :data:`STARTERS` (``Workbench``, ``WorkerClient``, ``run_report``, ...). So a fixture that
builds a workbench (``make_wb``, ``bench``) marks every test that uses it, and a helper in ``tests/support``
that runs a report marks every test that calls it.

Static reading can miss a start (a name built at runtime, a new entry point), so :class:`Guard` watches the
process launches of every unmarked test (Python's ``subprocess.Popen`` audit event) and fails one that starts
a worker, a kernel, a report or Ray, naming the command: add the entry point it called to :data:`STARTERS`,
or mark the test ``@pytest.mark.workbench``.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent

# Names (a class's or function's ``__qualname__``, or a test helper's) whose call starts worker processes.
# Matched by name, not by module, so that moving a module does not silently unmark its tests.
STARTERS = frozenset(
    {
        # the workbench and what builds one (a notebook Session builds its workbench only when asked)
        "Workbench",
        "WorkerClient",
        "ProbeJob",
        "attribute",
        "run_audits",
        # reports, notebooks and kernels
        "run_report",
        "run_notebook",
        "execute_notebook",
        "Lanes",
        "NotebookClient",
        "KernelManager",
        "start_new_kernel",
        "run_command",
        "make_report",
        "report",
        # Ray clusters: the backend, ray.init, and Ray itself used in a test or fixture (``import ray``)
        "RayBackend",
        "init",  # ray.init (only as an attribute of the ``ray`` module, see _starts)
        "ray",
    }
)
# Command-line fragments of the processes a worker-free test must not start (see Guard).
LAUNCHES = (
    "rlaudit.engine.worker",
    "rlaudit.report.lanes",
    "papermill",
    "ipykernel",
    "make report",
    "rlaudit report",
    "rlaudit audit",
    "rlaudit train",
    "raylet",
    "gcs_server",
    "ray start",
)
# Where a starter comes from: rlaudit, the test helpers, and the notebook machinery that starts kernels.
OURS = ("rlaudit", "support", "nbclient", "jupyter_client", "ray")


def _source_tree(obj: Any) -> ast.AST | None:
    """The AST of a function's or class's own source (None when it has none, e.g. a builtin)."""
    try:
        lines, _ = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return None
    try:
        return ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None


def _ours(obj: Any) -> bool:
    """A function or class defined in a file under ``tests/`` (a test module, conftest or support helper)."""
    try:
        path = inspect.getsourcefile(obj)
    except TypeError:
        return False
    return path is not None and Path(path).resolve().is_relative_to(TESTS)


def _resolve(node: ast.expr, namespace: dict[str, Any]) -> Any:
    """The object a ``Name`` or dotted ``Attribute`` refers to in ``namespace`` (None when unknown)."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, namespace)
        return None if base is None else getattr(base, node.attr, None)
    return None


def _starts(node: ast.expr, obj: Any, imported: dict[str, str]) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    if name == "init":  # only Ray's: every class has an __init__, many modules an init
        return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ray"
    if name not in STARTERS:
        return False
    if name == "ray":  # the module, imported at the top or in the function; not an attribute named ray
        return isinstance(node, ast.Name) and (
            getattr(obj, "__name__", None) == "ray" or (obj is None and imported.get(name) == "ray")
        )
    if obj is None:
        # Not a module-level name: one imported inside the function counts when it comes from rlaudit or a
        # test helper; a local variable that merely shares a starter's name (``report = ...``) does not.
        return isinstance(node, ast.Name) and imported.get(name, "").startswith(OURS)
    module = getattr(obj, "__module__", None) or ""
    return (inspect.isfunction(obj) or inspect.isclass(obj)) and (module.startswith(OURS) or _ours(obj))


def _local_imports(tree: ast.AST) -> dict[str, str]:
    """Names bound by imports inside a function: name -> module (``import a.b`` binds ``a``)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            bound.update({alias.asname or alias.name: node.module or "" for alias in node.names})
        elif isinstance(node, ast.Import):
            bound.update({alias.asname or alias.name.split(".")[0]: alias.name for alias in node.names})
    return bound


def _names(tree: ast.AST) -> Iterable[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)):
            yield node


def starts_workers(obj: Any, _seen: set[int] | None = None) -> bool:
    """True when ``obj`` (a test, fixture or helper function, or a class) names a starter, directly or
    through the test helpers it calls."""
    seen = set() if _seen is None else _seen
    obj = inspect.unwrap(obj)
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    tree = _source_tree(obj)
    if tree is None:
        return False
    namespace = dict(getattr(obj, "__globals__", None) or vars(sys.modules.get(obj.__module__, object())))
    imported = _local_imports(tree)
    for node in _names(tree):
        target = _resolve(node, namespace)
        if _starts(node, target, imported):
            return True
        if (inspect.isfunction(target) or inspect.isclass(target)) and _ours(target):
            if starts_workers(target, seen):
                return True
    return False


def item_starts_workers(item: Any) -> bool:
    """True when a collected test, or any fixture it uses, starts workers (see the module docstring)."""
    function = getattr(item, "function", None)
    if function is None:  # a notebook cell under nbval, a doctest: not a python test function
        return False
    if _read(function):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for defs in (getattr(info, "name2fixturedefs", None) or {}).values():
        for fixture in defs:
            func = getattr(fixture, "func", None)
            if func is not None and _ours(func) and _read(func):
                return True
    return False


_READ: dict[Any, bool] = {}


def _read(obj: Any) -> bool:
    """:func:`starts_workers`, once per function (parametrized tests and shared fixtures repeat)."""
    try:
        return _READ[obj]
    except KeyError:
        _READ[obj] = result = starts_workers(obj)
        return result
    except TypeError:  # not hashable
        return starts_workers(obj)


class Guard:
    """Fails an unmarked test that starts a worker, a kernel, a report or Ray (see the module docstring).

    One audit hook per process (hooks cannot be removed); it records launches only between :meth:`watch`
    and :meth:`stop`.
    """

    def __init__(self) -> None:
        self.launched: list[str] | None = None
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event != "subprocess.Popen" or self.launched is None:
            return
        argv = args[1]
        command = " ".join(map(str, argv)) if isinstance(argv, (list, tuple)) else str(argv)
        if any(fragment in command for fragment in LAUNCHES):
            self.launched.append(command[:300])

    def watch(self) -> None:
        self.launched = []

    def stop(self) -> list[str]:
        launched, self.launched = self.launched or [], None
        return launched


GUARD = Guard()


def explain(nodeid: str, launched: list[str]) -> str:
    """The failure of an unmarked test that launched ``launched``: what it started and what to do."""
    return (
        f"{nodeid} is not marked workbench but started {len(launched)} worker/kernel/report process(es), "
        f"first: {launched[0]!r}. Add the entry point it called to STARTERS in tests/support/workers.py "
        "(every test that calls it is then marked), or mark the test @pytest.mark.workbench."
    )


def mark_items(items: Iterable[Any], mark: Callable[[Any], None]) -> int:
    """Call ``mark(item)`` for every item that starts workers; how many were marked."""
    count = 0
    for item in items:
        if item.get_closest_marker("workbench") is None and item_starts_workers(item):
            mark(item)
            count += 1
    return count
