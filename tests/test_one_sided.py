"""No check clears with a compared quantity measured on one side only (issue: CLEARED only on everything
measured, and measured equal).

The rule lives in one place, :meth:`rlaudit.checks.Check.finding` (with :func:`rlaudit.evidence.coverage`), so
the test holds every check to it in three steps, without workers or training:

1. every module of every room builds its findings through a :class:`~rlaudit.checks.Check` when they may be
   CLEARED: no ``Finding(status=...)`` that could clear, no status rewritten afterwards, so no clearance
   bypasses the rule (read from the source, for every room);
2. every registered check, given a clearance whose compared quantity one side did not measure (None, NaN, not
   named, or one side's value only), ends SUSPECT or NOTED, never CLEARED (the real ``finding`` and
   ``conclude`` of each check's own declaration);
3. the checks that compare several named quantities per side, driven through their real decision on evidence
   built by hand where one quantity is missing on one side, do not clear either; three of them did before
   (``logging/truth-*``: a baseline whose logged values match no definition; ``trainer/minibatches``: a
   one-epoch candidate whose reshuffling cannot be measured; ``trainer/geometry``: a candidate that no
   longer reports its minibatch size, compared only on what both report).
"""

from __future__ import annotations

import ast
import importlib
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rlaudit import checks
from rlaudit.checks import Check
from rlaudit.evidence import Verdict
from rlaudit.findings import SUBSYSTEMS, Severity, Status
from support.invariants import uncovered_clearances
from support.runs import bench, checker, evidence, fake_run

LIB = Path(checks.__file__).resolve().parent
ROOMS = [LIB / s for s in SUBSYSTEMS if (LIB / s).is_dir()]


def _room_modules() -> list[Path]:
    return sorted(p for room in ROOMS for p in room.rglob("*.py"))


def _import_every_check() -> dict[str, checks.CheckSpec]:
    """Import every room module that declares a check; the registry then holds them all."""
    for path in _room_modules():
        if "@check(" in path.read_text():
            importlib.import_module(".".join(path.relative_to(LIB.parent).with_suffix("").parts))
    return {k: v for k, v in checks.REGISTRY.items() if v.qualname.startswith("rlaudit.")}


EVERY_CHECK = _import_every_check()
QUANTITY = "value-loss scale"


def test_every_declared_check_is_registered() -> None:
    declared = sum(p.read_text().count("\n@check(") for p in _room_modules())
    assert declared >= 50 and len(EVERY_CHECK) == declared, (declared, sorted(EVERY_CHECK))
    assert {s.subsystem for s in EVERY_CHECK.values()} == {p.name for p in ROOMS}


# ---------------------------------------------------------------------------------------------------------
# 1. No clearance bypasses Check.finding
# ---------------------------------------------------------------------------------------------------------


def _never_cleared(node: ast.expr) -> bool:
    """True when a status expression can only be a named non-CLEARED status (``Status.SUSPECT if x else
    Status.NOTED``); a variable or a call might hold CLEARED."""
    if isinstance(node, ast.IfExp):
        return _never_cleared(node.body) and _never_cleared(node.orelse)
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Status"
        and node.attr != "CLEARED"
    )


def _bypasses(path: Path, root: Path = LIB) -> list[str]:
    """Places in a module that make or rewrite a finding's status without Check.finding."""
    where = f"{path.relative_to(root)}"
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            status = next((k.value for k in node.keywords if k.arg == "status"), None)
            if name == "Finding" and (status is None or not _never_cleared(status)):
                out.append(f"{where}:{node.lineno}: Finding(...) with a status that may be CLEARED")
            if name == "replace" and status is not None:
                out.append(f"{where}:{node.lineno}: replace(..., status=...) rewrites a verdict")
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "status":
                out.append(f"{where}:{node.lineno}: assigns .status after the finding was made")
    return out


def test_no_room_makes_a_clearance_outside_check_finding() -> None:
    """Every CLEARED a room can make passes through Check.finding, where the coverage rule applies."""
    assert [b for path in _room_modules() for b in _bypasses(path)] == []


def test_the_source_reading_catches_a_bypass(tmp_path: Path) -> None:
    bad = tmp_path / "room.py"
    bad.write_text(
        "f = Finding(id='x', status=Status.CLEARED)\ng = Finding(id='x', status=status)\n"
        "h = Finding(id='x', status=Status.SUSPECT if lost else Status.NOTED)\nf.status = Status.CLEARED\n"
    )
    found = _bypasses(bad, tmp_path)
    assert sorted(int(line.split(":")[1]) for line in found) == [1, 2, 4]


# ---------------------------------------------------------------------------------------------------------
# 2. Every check's own finding() withholds a one-sided clearance
# ---------------------------------------------------------------------------------------------------------

ONE_SIDED = {
    "None on the candidate": dict(
        measured={"baseline": {QUANTITY: 0.5}, "candidate": {QUANTITY: None}},
        measured_words={"candidate": {QUANTITY: "not a squared error (Huber)"}},
    ),
    "NaN on the baseline": dict(measured={"baseline": {QUANTITY: math.nan}, "candidate": {QUANTITY: 0.5}}),
    "not named by the candidate": dict(
        measured={"baseline": {QUANTITY: 0.5, "eps": 1e-5}, "candidate": {"eps": 1e-5}}
    ),
    "the baseline's value only": dict(values={"baseline": 0.5}, effect_label=QUANTITY),
    "the candidate's value only": dict(candidate=0.5, effect_label=QUANTITY),
    "NaN in the candidate's {quantity: value}": dict(
        baseline={QUANTITY: 0.5, "eps": 1e-5}, candidate={QUANTITY: math.nan, "eps": 1e-5}
    ),
    "absent from the baseline's {quantity: value}": dict(
        values={"baseline": {"eps": 1e-5}, "candidate": {QUANTITY: 0.5, "eps": 1e-5}}
    ),
}


@pytest.mark.parametrize("check_id", sorted(EVERY_CHECK))
def test_no_check_clears_with_a_quantity_measured_on_one_side(check_id: str) -> None:
    c = Check(EVERY_CHECK[check_id], bench())
    made = []
    for how, given in ONE_SIDED.items():
        finding = c.finding(Status.CLEARED, summary="alike", **given)
        assert finding.status is Status.SUSPECT, (check_id, how, finding.evidence.summary)
        assert QUANTITY in finding.evidence.summary and QUANTITY in finding.evidence.details["unmeasured"]
        made.append(finding)
    concluded = c.conclude(Verdict(Status.CLEARED, Severity.INFO, "alike", ""), values={"candidate": 1.0})
    assert concluded.status is Status.SUSPECT, (check_id, concluded.evidence.summary)
    neither = c.finding(Status.CLEARED, measured={"baseline": {QUANTITY: None}, "candidate": {}})
    assert neither.status is Status.NOTED and neither.evidence.summary.startswith(f"not measured: {QUANTITY}")
    both = c.finding(Status.CLEARED, measured={"baseline": {QUANTITY: 0.5}, "candidate": {QUANTITY: 0.5}})
    assert both.status is Status.CLEARED  # measured on both sides and equal: the rule withholds nothing
    # a field empty on both sides (an error slot) is no compared quantity
    quiet = c.finding(Status.CLEARED, baseline={"x": 1, "error": None}, candidate={"x": 1, "error": None})
    assert quiet.status is Status.CLEARED
    assert uncovered_clearances([*made, concluded, neither, both, quiet]) == []


# ---------------------------------------------------------------------------------------------------------
# 3. The checks that compare several named quantities, through their real decision
# ---------------------------------------------------------------------------------------------------------


def _definitions(match: list[bool]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "definition": ["last 100 episodes", "all episodes so far"],
            "max_error": [0.0 if m else 0.3 for m in match],
            "mean_gap": [0.0 if m else -0.2 for m in match],
            "relative_gap": [0.0 if m else -0.2 for m in match],
            "points": [7, 7],
            "match": match,
        }
    )


def test_a_logged_statistic_matching_no_definition_on_the_baseline_is_not_cleared() -> None:
    from rlaudit.logging import audit as la

    tags = {s: ("charts/episodic_return", "log files") for s in checks.SIDES}
    c = checker("logging/truth")
    tables = {"baseline": _definitions([False, False]), "candidate": _definitions([True, False])}
    finding = la.truth_finding(c, "return", "episodic return", tables, tags)
    assert finding.status is Status.SUSPECT, finding.evidence.summary
    assert (
        "definition of the logged episodic return: last 100 episodes on the candidate, not measured on the "
        "baseline (matches no average of the recorded episodes)"
    ) in finding.evidence.summary
    same = {s: _definitions([True, False]) for s in checks.SIDES}
    assert la.truth_finding(c, "return", "episodic return", same, tags).status is Status.CLEARED
    assert uncovered_clearances([finding]) == []


def _minibatch_rows(epochs: int, batch: int = 64, size: int = 16, seed: int = 0) -> dict[str, list[int]]:
    """Shuffled minibatches of one update: a fresh permutation each epoch (seeded)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows: dict[str, list[int]] = {k: [] for k in ("step", "epoch", "minibatch", "position", "index")}
    for epoch in range(epochs):
        order = rng.permutation(batch)
        for k in range(batch // size):
            rows["step"] += [batch] * size
            rows["epoch"] += [epoch] * size
            rows["minibatch"] += [k] * size
            rows["position"] += list(range(size))
            rows["index"] += order[k * size : (k + 1) * size].tolist()
    return rows


def test_minibatches_whose_reshuffling_one_side_cannot_show_are_not_cleared(tmp_path: Path) -> None:
    from rlaudit.trainer import minibatches as tm

    def side(epochs: int, seed: int) -> list[Any]:
        return [fake_run(tmp_path, seed=seed, tables={"minibatches": _minibatch_rows(epochs, seed=seed)})]

    (one_epoch,) = tm.minibatches(bench(), given=evidence(side(2, 0), side(1, 1))).findings
    assert one_epoch.status is Status.SUSPECT, one_epoch.evidence.summary
    assert (
        "repeated: " in one_epoch.evidence.summary and "(one epoch per update)" in one_epoch.evidence.summary
    )
    (neither,) = tm.minibatches(bench(), given=evidence(side(1, 0), side(1, 1))).findings
    assert neither.status is Status.NOTED and neither.evidence.summary.startswith("not measured: repeated")
    (both,) = tm.minibatches(bench(), given=evidence(side(2, 0), side(2, 1))).findings
    assert both.status is Status.CLEARED
    assert uncovered_clearances([one_epoch, neither, both]) == []


def test_a_geometry_one_trainer_does_not_report_is_not_cleared(tmp_path: Path) -> None:
    from rlaudit.trainer import geometry as tg

    # 8 environments x 8 steps = 64 per update, 4 optimizer steps of 16: one epoch of 4 minibatches
    declared = {"trainer": {"num_envs": 8, "num_steps": 8, "num_minibatches": 4, "update_epochs": 1}}

    def side(seed: int, minibatch: bool = True) -> list[Any]:
        run = fake_run(tmp_path, num_envs=8, num_steps=8, rollouts=2, opt_steps=4, seed=seed, config=declared)
        if not minibatch:  # a train() whose summary leaves the minibatch size out
            del run.result["summary"]["minibatch_size"]
        return [run]

    (one,) = tg.geometry(bench(), given=evidence(side(0), side(1, minibatch=False))).findings
    assert one.status is Status.SUSPECT, one.evidence.summary
    assert (
        "minibatch size" in one.evidence.summary and "not measured on the candidate" in one.evidence.summary
    )
    # reported by neither trainer: not compared, and not claimed
    (neither,) = tg.geometry(bench(), given=evidence(side(2, False), side(3, False))).findings
    assert neither.status is Status.CLEARED, neither.evidence.summary
    (both,) = tg.geometry(bench(), given=evidence(side(4), side(5))).findings
    assert both.status is Status.CLEARED, both.evidence.summary
    assert uncovered_clearances([one, neither, both]) == []
