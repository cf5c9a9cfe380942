"""04_checkpointing's checkpoint and tensor picker: the contents probe keeps tensor values within its budgets,
checkpoints pair by step (else by rank), the panels show the picked tensor of the picked checkpoint on both
sides and its difference exactly where the sides differ, a pair where one side has checkpoints shows that side
alone, and a pair without checkpoints gets a line saying why."""

from __future__ import annotations

import json
import types
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch

from rlaudit.checkpointing import explore as ckpt_explore
from rlaudit.checkpointing import probes
from rlaudit.probe import ProbeContext

matplotlib.use("Agg")  # tests only: no display here


def side_files(edit=None) -> tuple[list[dict], dict]:
    """Two checkpoints (steps 100 and 200) of weights ``w`` (2x3, value = step + index), a bias ``b``
    and an Adam step counter, kept as the contents probe keeps them; ``edit(step, tensors)`` changes them."""
    arrays: dict = {}
    files = []
    budget = [probes.MAX_KEPT_VALUES]
    for i, step in enumerate((100, 200)):
        tensors = {
            "policy/w": torch.arange(6.0).reshape(2, 3) + step,
            "policy/b": torch.zeros(2),
            "optimizer/state/0/step": torch.tensor(float(step)),
        }
        if edit is not None:
            edit(step, tensors)
        kept = probes.keep_values(tensors, i, arrays, budget)
        files.append({"index": i, "name": f"model_{i}.pt", "step": step, **kept})
    return files, arrays


def panel(ex, name: str) -> np.ma.MaskedArray:
    return ex._artists["images"][name].get_array()


def test_the_panels_show_the_picked_tensor_and_the_difference_where_it_differs() -> None:
    def edit(step, tensors):
        if step == 200:
            tensors["policy/w"][1, 2] += 0.5

    fb, ab = side_files()
    fc, ac = side_files(edit)
    ex = ckpt_explore.tensor_explorer({"baseline": fb, "candidate": fc}, {"baseline": ab, "candidate": ac})
    # starts on the newest pair and its first tensor both sides hold
    assert ex.values == {"checkpoint": 1, "tensor": "policy/w"}
    assert [label for label, _ in ex.control("checkpoint").options] == [
        "#1: model_0.pt (step 100)",
        "#2: model_1.pt (step 200)",
    ]
    # the tensors that differ in some checkpoint are marked
    assert [label for label, _ in ex.control("tensor").options] == [
        "policy/w  ◆ differs",
        "policy/b",
        "optimizer/state/0/step",
    ]
    ex.figure()
    np.testing.assert_array_equal(panel(ex, "baseline"), np.arange(6.0).reshape(2, 3) + 200)
    np.testing.assert_array_equal(panel(ex, "candidate")[1, 2], 205.5)
    diff = np.asarray(panel(ex, "difference"))
    assert np.argwhere(diff != 0).tolist() == [[1, 2]] and diff[1, 2] == pytest.approx(0.5)
    title = ex._artists["fig"]._suptitle.get_text()
    assert "1 of 6 elements differ" in title and "step 200" in title
    labels = [t.get_text() for t in ex._artists["labels"]["candidate"] if t.get_visible()]
    assert labels == ["200", "201", "202", "203", "204", "206"]  # 205.5 shows as 3 significant digits
    assert ex._artists["images"]["difference"].get_clim() == (-0.5, 0.5)

    ex.set(checkpoint=0)  # the older checkpoints are equal
    assert not np.asarray(panel(ex, "difference")).any()
    assert ex._artists["notes"]["difference"].get_text() == "equal"
    np.testing.assert_array_equal(panel(ex, "candidate"), np.arange(6.0).reshape(2, 3) + 100)

    ex.set(tensor="optimizer/state/0/step")  # a scalar: one cell
    assert panel(ex, "baseline").shape == (1, 1) and float(panel(ex, "baseline")[0, 0]) == 100.0
    assert "the one element is equal" in ex._artists["fig"]._suptitle.get_text()
    assert ex.drawn == {"checkpoint": 0, "tensor": "optimizer/state/0/step"}


def test_shapes_and_tensors_only_one_side_holds_are_said_not_drawn() -> None:
    def resize(step, tensors):
        tensors["policy/w"] = torch.zeros(4, 3)
        tensors["policy/extra"] = torch.ones(3)
        del tensors["policy/b"]

    fb, ab = side_files()
    fc, ac = side_files(resize)
    ex = ckpt_explore.tensor_explorer({"baseline": fb, "candidate": fc}, {"baseline": ab, "candidate": ac})
    options = dict((v, k) for k, v in ex.control("tensor").options)
    assert options["policy/b"] == "policy/b (baseline only)"
    assert options["policy/extra"] == "policy/extra (candidate only)"
    assert options["policy/w"] == "policy/w  ◆ differs"  # its shape changed
    ex.figure()
    ex.set(tensor="policy/w")
    assert "shapes differ: 2x3 | 4x3" in ex._artists["fig"]._suptitle.get_text()
    assert ex._artists["notes"]["difference"].get_text() == "not comparable"
    ex.set(tensor="policy/b")
    assert ex._artists["notes"]["candidate"].get_text() == "absent from this checkpoint"
    assert np.ma.getmaskarray(panel(ex, "candidate")).all()


def test_checkpoints_pair_by_step_else_by_rank() -> None:
    same = ckpt_explore.pair_checkpoints(
        {
            "baseline": [{"name": "m_2.pt", "step": 20}, {"name": "m_1.pt", "step": 10}],
            "candidate": [{"name": "m_1.pt", "step": 10}, {"name": "m_2.pt", "step": 20}],
        }
    )
    assert [label for label, _, _ in same] == ["#1: m_1.pt (step 10)", "#2: m_2.pt (step 20)"]
    uneven = ckpt_explore.pair_checkpoints(
        {
            "baseline": [{"name": "a.pt", "step": 10}],
            "candidate": [{"name": "b.pt", "step": 5}, {"name": "c.pt", "step": None}],
        }
    )
    assert [label for label, _, _ in uneven] == ["#1: a.pt (step 10) | b.pt (step 5)", "#2: none | c.pt"]
    assert uneven[1][1] is None


def test_the_contents_probe_keeps_values_within_its_budgets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probes, "MAX_TENSOR_VALUES", 10)
    monkeypatch.setattr(probes, "MAX_KEPT_VALUES", 14)
    paths = []
    for i in range(2):
        path = tmp_path / f"model_{i}.pt"
        torch.save(
            {"policy": {"w": torch.full((2, 4), float(i)), "big": torch.zeros(11)}, "global_step": i}, path
        )
        paths.append(str(path))
    out = tmp_path / "out"
    out.mkdir()
    probes.checkpoint_contents(ProbeContext(subject=object(), config={}, out=out, spec="test"), paths=paths)
    kept = json.loads((out / "values.json").read_text())
    arrays = np.load(out / "values.npz")
    first = {t["key"]: t for t in kept[0]["tensors"]}
    np.testing.assert_array_equal(arrays[first["policy/w"]["array"]], np.zeros((2, 4)))
    assert first["policy/w"]["dtype"] == "float32" and first["policy/w"]["shape"] == [2, 4]
    reasons = {t["key"]: t["reason"] for f in kept for t in f["left_out"]}
    assert "over the 10 kept per tensor" in reasons["policy/big"]
    assert kept[1]["tensors"] == [] and "kept per call" in reasons["policy/w"]  # 8 + 8 > 14


def test_a_pair_without_checkpoints_gets_a_line_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlaudit.checkpointing import sources

    entries = {
        side: {"run": None, "paths": [], "origin": "", "missing": ["train", "checkpoints"], "error": None}
        for side in ("baseline", "candidate")
    }
    monkeypatch.setattr(sources, "sources", lambda wb: sources.Checkpoints(entries))
    out = ckpt_explore.checkpoint_explorer(types.SimpleNamespace())
    assert out.text.startswith("No checkpoint picker:") and "train" in out.text
    with pytest.raises(ValueError, match="neither side"):
        ckpt_explore.tensor_explorer({"baseline": [], "candidate": []}, {"baseline": {}, "candidate": {}})


def test_a_pair_where_one_side_has_checkpoints_shows_that_side_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlaudit.checkpointing import sources

    fb, ab = side_files()
    contents = [{"index": f["index"], "step": f["step"]} for f in fb]
    origin = "a dedicated run (seed 0, 2,048 steps)"
    entries = {
        "baseline": {"run": None, "paths": ["model_1.pt", "model_0.pt"], "origin": origin, "missing": []},
        "candidate": {"run": None, "paths": [], "origin": origin, "missing": []},
    }
    for entry in entries.values():
        entry["error"] = None
    monkeypatch.setattr(sources, "sources", lambda wb: sources.Checkpoints(entries))
    read = []

    def run_side(side, probe, **kwargs):
        read.append((side, kwargs["paths"]))
        stored = {"contents": contents, "values": fb}
        return types.SimpleNamespace(ok=True, json=stored.__getitem__, npz=lambda name: ab)

    ex = ckpt_explore.checkpoint_explorer(types.SimpleNamespace(run_side=run_side))
    assert read == [("baseline", ["model_1.pt", "model_0.pt"])]  # the side without checkpoints is not read
    assert [label for label, _ in ex.control("checkpoint").options] == [
        "#1: model_0.pt (step 100) | none",
        "#2: model_1.pt (step 200) | none",
    ]
    # every tensor is the baseline's: no "(baseline only)" on each, no "differs"
    assert [label for label, _ in ex.control("tensor").options] == [
        "policy/w",
        "policy/b",
        "optimizer/state/0/step",
    ]
    ex.figure()
    np.testing.assert_array_equal(panel(ex, "baseline"), np.arange(6.0).reshape(2, 3) + 200)
    assert np.ma.getmaskarray(panel(ex, "candidate")).all()
    said = f"the candidate has no checkpoints (looked in {origin})"
    assert ex._artists["notes"]["candidate"].get_text() == said
    assert ex._artists["notes"]["baseline"].get_text() == ""
    assert ex._artists["notes"]["difference"].get_text() == "not comparable"
    assert f"candidate: {said}" in ex._artists["fig"]._suptitle.get_text()

    # the same the other way round, straight from the picker: the baseline has none
    ex = ckpt_explore.tensor_explorer({"baseline": [], "candidate": fb}, {"baseline": {}, "candidate": ab})
    ex.figure()
    assert ex._artists["notes"]["baseline"].get_text() == "no checkpoints"
    np.testing.assert_array_equal(panel(ex, "candidate"), np.arange(6.0).reshape(2, 3) + 200)
