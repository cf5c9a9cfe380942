"""The tests of :mod:`rlaudit.config.overrides`."""

from __future__ import annotations

from rlaudit.config import audit as config_audit
from rlaudit.findings import Severity, Status
from support.invariants import asymmetric_severities


def test_pick_overrides_prefers_floats_and_skips_list_items():
    cfg = {"optimizer": {"lr": 0.001, "betas": [0.9, 0.99], "steps": 4}, "trainer": {"num_envs": 8}}
    assert config_audit.pick_overrides(cfg, cfg) == {"optimizer.lr": 0.002, "trainer.num_envs": 9}


DEAF = """
def config(overrides=None):
    return {"optimizer": {"lr": 0.001}, "trainer": {"gamma": 0.99}}
"""


def test_the_same_ignored_overrides_get_the_same_severity_on_both_sides(make_wb, tmp_path):
    paths = []
    for name in ("old", "new"):
        path = tmp_path / name / "subject.py"
        path.parent.mkdir()
        path.write_text(DEAF + f"\nNAME = {name!r}\n")
        paths.append(str(path))
    section = config_audit.overrides(make_wb(paths[1], baseline=paths[0]))
    by_id = {f.id: f for f in section.findings}
    base, cand = by_id["config/override-ignored-baseline"], by_id["config/override-ignored-candidate"]
    assert base.status is cand.status is Status.NOTED  # the same behaviour cannot explain a regression
    assert base.severity is cand.severity is Severity.MEDIUM
    assert not asymmetric_severities(section.findings)
