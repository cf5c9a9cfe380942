"""Notebook hygiene: every notebooks/*.ipynb is thin, parameterized for papermill, and committed clean.

Checked for each notebook (see docs/NOTEBOOK_TEMPLATE.md):

- kernelspec ``python3``; no stored outputs or execution counts (outputs belong in reports/, not in git);
- exactly one cell tagged ``parameters``, the first code cell, holding only typed literal assignments
  (``name: type = literal  # comment``) and at least the seven report parameters;
- no ``def`` or ``class`` anywhere: a function worth writing belongs in lib/rlaudit with a test;
- the last cell calls ``.finish()`` (it shows the findings table and saves the JSON the report reads).

The checks themselves are tested on small broken notebooks, so a check that cannot fail is caught too.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from papermill.translators import PythonTranslator

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
REPORT_PARAMETERS = ("baseline", "candidate", "profile", "pair_file", "fresh", "findings_dir", "metric")
LITERAL_TYPES = {"str": str, "int": int, "float": float, "bool": bool}


def _code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def _parse(source: str, where: str) -> ast.Module:
    # IPython magics and shell escapes are not Python; notebooks here have none, and should not.
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise AssertionError(f"{where}: not plain Python ({exc.msg} at line {exc.lineno})") from exc


def _comment_lines(source: str) -> set[int]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.start[0] for tok in tokens if tok.type == tokenize.COMMENT}


def problems(nb: nbformat.NotebookNode) -> list[str]:
    """Every hygiene rule the notebook breaks, as sentences (empty when clean)."""
    found: list[str] = []
    kernel = nb.metadata.get("kernelspec", {}).get("name")
    if kernel != "python3":
        found.append(f"kernelspec name is {kernel!r}, expected 'python3'")
    for i, cell in enumerate(_code_cells(nb), start=1):
        if cell.get("outputs"):
            found.append(f"code cell {i} has stored outputs (clear them before committing)")
        if cell.get("execution_count") is not None:
            found.append(f"code cell {i} has an execution count (clear outputs before committing)")
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(tagged) != 1:
        found.append(f"{len(tagged)} cells are tagged 'parameters', expected exactly one")
    else:
        cell = tagged[0]
        code = _code_cells(nb)
        if cell.cell_type != "code" or not code or code[0] is not cell:
            found.append("the 'parameters' cell must be the first code cell")
        found.extend(_parameter_problems(cell.source))
    for i, cell in enumerate(_code_cells(nb), start=1):
        for node in ast.walk(_parse(cell.source, f"code cell {i}")):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                kind = "class" if isinstance(node, ast.ClassDef) else "def"
                found.append(f"code cell {i} defines a {kind} (line {node.lineno}); move it into lib/rlaudit")
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
                if node.value.attr == "tables":
                    # a SKIPPED check has no tables: section.table(name) says why instead of raising
                    found.append(f"code cell {i} indexes .tables[...] (line {node.lineno}); use .table(name)")
    last = nb.cells[-1] if nb.cells else None
    calls_finish = (
        last is not None
        and last.cell_type == "code"
        and any(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "finish"
            for node in ast.walk(_parse(last.source, "last cell"))
        )
    )
    if not calls_finish:
        found.append("the last cell must call session.finish() (it saves the findings the report reads)")
    return found


def _parameter_problems(source: str) -> list[str]:
    found = []
    tree = _parse(source, "parameters cell")
    comments = _comment_lines(source)
    names = []
    for node in tree.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            found.append(f"parameters line {node.lineno} is not `name: type = literal  # comment`")
            continue
        name = node.target.id
        names.append(name)
        annotation = (
            node.annotation.id if isinstance(node.annotation, ast.Name) else ast.unparse(node.annotation)
        )
        if not isinstance(node.value, ast.Constant):
            found.append(
                f"parameter {name} is computed; use a literal (papermill overrides do not recompute it)"
            )
        elif annotation not in LITERAL_TYPES:
            found.append(f"parameter {name} is typed {annotation}; use one of {', '.join(LITERAL_TYPES)}")
        elif type(node.value.value) is not LITERAL_TYPES[annotation] and not (
            annotation == "float" and type(node.value.value) is int
        ):
            found.append(f"parameter {name}: {annotation} holds {node.value.value!r}")
        if node.lineno not in comments:
            found.append(f"parameter {name} has no comment saying what it is")
    # papermill's own reader (`papermill --help-notebook`, inspect_notebook) drops a line with a second "="
    unread = [
        n
        for n in names
        if n not in {p.name for p in PythonTranslator.inspect(nbformat.from_dict({"source": source}))}
    ]
    if unread:
        found.append(
            f"papermill cannot read parameter {', '.join(unread)} (a second '=' on its line, e.g. in the comment)"
        )
    missing = [p for p in REPORT_PARAMETERS if p not in names]
    if missing:
        found.append(
            f"parameters cell lacks {', '.join(missing)} (the report passes all of {REPORT_PARAMETERS})"
        )
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_hygiene(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert problems(nb) == [], f"{path.name}: " + "; ".join(problems(nb))


def test_the_summary_notebook_exists() -> None:
    assert "15_summary" in [p.stem for p in NOTEBOOKS]


# --------------------------------------------------------------------------------------------------------
# The checks catch what they are named after
# --------------------------------------------------------------------------------------------------------

GOOD_PARAMETERS = """baseline: str = "builtin:reference"  # spec of the good setup
candidate: str = "builtin:regressed"  # spec of the worse setup
profile: str = "standard"  # smoke | standard | thorough
pair_file: str = ""  # optional pair YAML
fresh: bool = False  # ignore cached artifacts
findings_dir: str = ""  # where findings go
metric: str = ""  # primary metric
seeds: int = 3  # runs per arm"""


def _nb(
    parameters: str = GOOD_PARAMETERS, body: str = "x = 1", last: str = "session.finish()"
) -> nbformat.NotebookNode:
    return new_notebook(
        cells=[
            new_markdown_cell("# title"),
            new_code_cell(parameters, metadata={"tags": ["parameters"]}),
            new_code_cell(body),
            new_code_cell(last),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )


def test_a_clean_notebook_passes() -> None:
    assert problems(_nb()) == []


def test_indexing_a_sections_tables_is_caught() -> None:
    body = 'learning = session.add(audit.learning(session.wb))\nlearning.tables["final performance"]'
    assert any("use .table(name)" in p for p in problems(_nb(body=body)))
    assert problems(_nb(body='learning.table("final performance")')) == []


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        (GOOD_PARAMETERS + "\ntwice: int = 2 * 3  # derived", "computed"),
        (GOOD_PARAMETERS + "\nsteps = 100  # untyped", "is not `name: type = literal"),
        (GOOD_PARAMETERS + "\nsteps: int = 100", "no comment"),
        (GOOD_PARAMETERS + '\nsteps: int = "100"  # wrong type', "int holds '100'"),
        (GOOD_PARAMETERS + "\nflag: bool = 1  # an int", "bool holds 1"),
        (GOOD_PARAMETERS + "\nnames: list = []  # a list", "computed"),
        (GOOD_PARAMETERS.replace('findings_dir: str = ""  # where findings go\n', ""), "lacks findings_dir"),
        (GOOD_PARAMETERS + "\nimport os", "is not `name: type = literal"),
        (GOOD_PARAMETERS.replace('metric: str = ""  # primary metric\n', ""), "lacks metric"),
        (
            GOOD_PARAMETERS + '\nlabel: str = ""  # a label ("" = none)',
            "papermill cannot read parameter label",
        ),
    ],
)
def test_bad_parameters_are_caught(parameters: str, expected: str) -> None:
    assert any(expected in p for p in problems(_nb(parameters=parameters))), problems(
        _nb(parameters=parameters)
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("def helper():\n    return 1", "defines a def"),
        ("class Thing:\n    pass", "defines a class"),
        ("for i in range(2):\n    def f(): pass", "defines a def"),
        ("async def fetch():\n    pass", "defines a def"),
    ],
)
def test_definitions_are_caught(body: str, expected: str) -> None:
    assert any(expected in p for p in problems(_nb(body=body)))


def test_outputs_kernel_tags_and_finish_are_caught() -> None:
    nb = _nb()
    nb.cells[2].outputs = [new_output("stream", name="stdout", text="hi")]
    nb.cells[2].execution_count = 3
    nb.metadata.kernelspec.name = "conda-env-x"
    found = " | ".join(problems(nb))
    assert "stored outputs" in found and "execution count" in found and "kernelspec" in found

    no_finish = _nb(last="session.add(x)")
    assert any("finish()" in p for p in problems(no_finish))

    finish_not_last = _nb()
    finish_not_last.cells.append(new_markdown_cell("the end"))
    assert any("finish()" in p for p in problems(finish_not_last))

    two_tags = _nb()
    two_tags.cells[2].metadata["tags"] = ["parameters"]
    assert any("2 cells are tagged" in p for p in problems(two_tags))

    late_parameters = _nb()
    late_parameters.cells.insert(1, new_code_cell("import os"))
    assert any("first code cell" in p for p in problems(late_parameters))
