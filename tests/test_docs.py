"""The Python in CONTRIBUTING.md and docs/*.md runs, or says it is an excerpt and still holds.

Each document's Python blocks run in order in one namespace, as a notebook's cells do (at the smoke profile,
writing to a temporary directory). A block introduced by ``<!-- excerpt -->`` is not run: it must parse and
its imports from rlaudit must import; one introduced by ``<!-- excerpt: <file> -->`` must also appear in that
file as written (``...`` lines mark the cuts; see :mod:`support.markdown`). Every ``tests/<file>.py::<test>``
a document names must exist. A document whose runnable blocks start workers is marked ``workbench``.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
from pathlib import Path
from typing import Any

import pytest

from support.markdown import ROOT, Block, fenced_blocks, unquoted
from support.workers import STARTERS

DOCS = [ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON = {doc: [b for b in fenced_blocks(doc) if b.lang == "python"] for doc in DOCS}
TEST_REFERENCE = re.compile(r"\b(tests/[\w/]+\.py)::(\w+)")


def _names(source: str) -> set[str]:
    tree = ast.parse(source)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }


# What starts workers in a document's code: a starter, or a session's workbench (``session.wb``).
DOC_STARTERS = (STARTERS | {"wb"}) - {"init", "report"}


def _starts_workers(blocks: list[Block]) -> bool:
    return any(_names(b.source) & DOC_STARTERS for b in blocks if not b.excerpt)


def _cases() -> list[Any]:
    return [
        pytest.param(doc, id=doc.name, marks=[pytest.mark.workbench] if _starts_workers(blocks) else [])
        for doc, blocks in PYTHON.items()
        if blocks
    ]


def _has(module: Any, name: str) -> bool:
    """``from module import name`` works: an attribute, or a submodule."""
    if hasattr(module, name):
        return True
    try:
        importlib.import_module(f"{module.__name__}.{name}")
    except ImportError:
        return False
    return True


def excerpt_problems(block: Block) -> list[str]:
    """Why an excerpt no longer holds: it does not parse, an rlaudit import fails, or it is not in its file."""
    try:
        tree = ast.parse(block.source)
    except SyntaxError as exc:
        return [f"{block.where}: not Python ({exc.msg} at line {exc.lineno} of the block)"]
    found = []
    for node in ast.walk(tree):
        modules = (
            [(a.name, []) for a in node.names]
            if isinstance(node, ast.Import)
            else [(node.module or "", [a.name for a in node.names])]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        for module, names in modules:
            if not module.startswith("rlaudit"):
                continue
            try:
                imported = importlib.import_module(module)
            except ImportError as exc:
                found.append(f"{block.where}: import {module} fails: {exc}")
                continue
            found += [f"{block.where}: {module} has no {name}" for name in names if not _has(imported, name)]
    if block.quoted_from:
        quoted = ROOT / block.quoted_from
        if not quoted.is_file():
            return [*found, f"{block.where}: quotes {block.quoted_from}, which does not exist"]
        found += [
            f"{block.where}: not in {block.quoted_from} as written:\n{run}"
            for run in unquoted(block, quoted.read_text())
        ]
    return found


@pytest.mark.parametrize("doc", _cases())
def test_a_documents_python_runs_or_is_a_faithful_excerpt(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUDIT_PROFILE", "smoke")
    monkeypatch.setenv("RLAUDIT_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setenv("RLAUDIT_CACHE", os.environ.get("RLAUDIT_TEST_CACHE") or str(tmp_path / "cache"))
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    try:
        for block in PYTHON[doc]:
            if block.excerpt:
                assert not (problems := excerpt_problems(block)), "\n".join(problems)
            else:
                exec(compile(block.source, block.where, "exec"), namespace)
    finally:
        for value in namespace.values():  # a notebook-like document's session may hold a workbench
            wb = getattr(value, "_wb", None)
            if wb is not None and hasattr(wb, "close"):
                wb.close()


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_the_tests_a_document_names_exist(doc: Path) -> None:
    for path, name in TEST_REFERENCE.findall(doc.read_text()):
        test_file = ROOT / path
        assert test_file.is_file(), f"{doc.name} names {path}, which does not exist"
        assert re.search(rf"^def {name}\(", test_file.read_text(), re.M), f"{doc.name}: no {name} in {path}"


def test_the_architecture_table_documents_every_capability() -> None:
    from rlaudit.engine.subjects import CAPABILITIES

    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    table = text[text.index("| capability | signature |") :]
    table = table[: table.index("\n\n")]
    rows = {m.group(1) for m in re.finditer(r"^\| `(\w+)\(", table, re.M)}
    assert set(CAPABILITIES) <= rows, f"not in the capabilities table: {sorted(set(CAPABILITIES) - rows)}"


def test_every_python_block_is_run_or_marked() -> None:
    # a sanity check of the reader: the documents do hold both kinds
    blocks = [b for blocks in PYTHON.values() for b in blocks]
    assert any(b.excerpt for b in blocks) and any(not b.excerpt for b in blocks)
    assert any(b.quoted_from for b in blocks), "CONTRIBUTING quotes a real check"


def _doc(tmp_path: Path, text: str) -> list[Block]:
    path = tmp_path / "doc.md"
    path.write_text(text)
    return [b for b in fenced_blocks(path) if b.lang == "python"]


def test_markers_are_read_and_a_changed_quote_is_caught(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("def f(x):\n    y = x + 1\n    z = y * 2\n    return z\n")
    run, excerpt, quoted = _doc(
        tmp_path,
        "```python\nx = 1\n```\n\n<!-- excerpt -->\n\n```python\nf(...)\n```\n"
        f"<!-- excerpt: {source} -->\n```python\ndef f(x):\n    ...\n    return z\n```\n",
    )
    assert (run.excerpt, excerpt.excerpt, excerpt.quoted_from, quoted.quoted_from) == (
        False,
        True,
        None,
        str(source),
    )
    assert unquoted(quoted, source.read_text()) == []
    assert unquoted(quoted, source.read_text().replace("return z", "return y")) == ["    return z"]
    # the cut may skip lines, but what is quoted together must be together in the file
    together = Block(quoted.path, 1, "python", "def f(x):\n    z = y * 2\n", excerpt=True, quoted_from="x")
    assert unquoted(together, source.read_text()) == ["def f(x):\n    z = y * 2"]


def test_a_stale_import_in_an_excerpt_is_caught(tmp_path: Path) -> None:
    (block,) = _doc(
        tmp_path, "<!-- excerpt -->\n```python\nfrom rlaudit.checks import nothing_here\n...\n```\n"
    )
    assert excerpt_problems(block) == [f"{block.where}: rlaudit.checks has no nothing_here"]
