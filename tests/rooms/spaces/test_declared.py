"""The tests of :mod:`rlaudit.spaces.declared`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlaudit.spaces.declared import bounds_violations
from support.toys import SPACES_TOY as TOY


def test_observations_of_another_dtype_than_declared_are_flagged(make_wb, describe) -> None:
    from rlaudit.spaces import audit

    section = audit.definitions(make_wb("builtin:reference+spaces.obs_dtype"))
    (finding,) = section.findings
    assert finding.status.value == "SUSPECT", describe(section.findings)
    assert "candidate's environment emits" in finding.evidence.summary
    assert (
        "float64 against its declared Box" in finding.evidence.summary
        and "float32" in finding.evidence.summary
    )


def test_bounds_violations_name_the_feature_and_the_range_seen() -> None:
    moments = {
        "min": np.array([0.0, 0.0, -2.0]),
        "max": np.array([1.0, 100.0, 1.0]),
        "low": np.array([0.0, 0.0, -1.0]),
        "high": np.array([1.0, 1.0, 1.0]),
        "outside": np.array([0, 30, 5]),
        "n": np.asarray(100),
    }
    table = bounds_violations(moments)
    assert table["feature"].tolist() == [1, 2]  # feature 1 is 99 widths out, feature 2 half a width
    assert table["seen max"][0] == 100.0 and table["excess"][0] == pytest.approx(99.0)
    assert table["outside"].tolist() == pytest.approx([0.3, 0.05])
    assert bounds_violations({**moments, "outside": np.zeros(3)}).empty


def test_an_observation_far_outside_its_box_is_flagged_with_feature_and_range(
    make_wb, describe, tmp_path: Path
) -> None:
    from rlaudit.spaces import audit

    paths = []
    for name, scale in (("inside", 1.0), ("outside", 300.0)):
        path = tmp_path / name / "subject.py"
        path.parent.mkdir()
        path.write_text(TOY.replace("SCALE = 1.0", f"SCALE = {scale}"))
        paths.append(str(path))
    section = audit.observation_bounds(make_wb(paths[1], baseline=paths[0]))
    (finding,) = section.findings
    assert finding.status.value == "SUSPECT" and finding.severity.value == "HIGH", describe(section.findings)
    assert "obs[3]" in finding.evidence.summary and "declared 0..1" in finding.evidence.summary
    assert finding.evidence.baseline == "inside its bounds"


def _emitting(tmp_path: Path, name: str, emit: str) -> str:
    """The toy subject, its observations passed through ``emit`` (Python source of a function of ``obs``)."""
    source = (
        TOY.replace("SCALE = 1.0", f"SCALE = 1.0\nEMIT = {emit}")
        .replace(
            "return self.rng.random(5).astype(np.float32), {}",
            "return EMIT(self.rng.random(5).astype(np.float32)), {}",
        )
        .replace("return obs, 0.0, False", "return EMIT(obs), 0.0, False")
    )
    path = tmp_path / name / "subject.py"
    path.parent.mkdir()
    path.write_text(source)
    return str(path)


def test_observations_unlike_their_declared_space_are_flagged_never_cleared(
    make_wb, describe, tmp_path: Path
) -> None:
    from rlaudit.spaces import audit

    # the candidate declares Box(5,) float32 like the baseline but emits 6 int64 features (a count appended,
    # the cast forgotten): nothing else differs, so only the declaration gives it away
    baseline = _emitting(tmp_path, "declared", "lambda obs: obs")
    candidate = _emitting(tmp_path, "emits-int64", "lambda obs: (np.append(obs, 1.0) * 10).astype(np.int64)")
    wb = make_wb(candidate, baseline=baseline)
    (definitions,) = audit.definitions(wb).findings
    assert definitions.status.value == "SUSPECT" and definitions.severity.value == "HIGH", describe(
        [definitions]
    )
    summary = definitions.evidence.summary
    assert "candidate" in summary and "[6] int64" in summary and "Box [5] float32" in summary, summary
    (bounds,) = audit.observation_bounds(wb).findings
    # the bounds could be held against the baseline's observations only: that is no agreement
    assert bounds.status.value == "SUSPECT", describe([bounds])
    assert "not measured on the candidate" in bounds.evidence.summary, bounds.evidence.summary
