"""The tests of :mod:`rlaudit.optimizer.setup`."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from rlaudit.findings import Severity, Status
from rlaudit.optimizer import setup as oset
from rlaudit.optimizer.probes import library_defaults
from support.runs import bench


def test_hyperparameter_table_marks_library_defaults() -> None:
    import torch

    defaults = library_defaults(torch.optim.Adam)
    assert defaults["eps"] == 1e-8 and defaults["betas"] == [0.9, 0.999]
    setups = {
        "baseline": {
            "class": "Adam",
            "defaults": defaults,
            "groups": [{"lr": 1e-3, "eps": 1e-5, "_tensors": 2}],
        },
        "candidate": {
            "class": "Adam",
            "defaults": defaults,
            "groups": [{"lr": 1e-3, "eps": 1e-8, "_tensors": 2}],
        },
    }
    configs = {"baseline": {"optimizer": {"eps": 1e-5}}, "candidate": {"optimizer": {"eps": None}}}
    table = oset.hyperparameter_table(setups, configs).set_index("hyperparameter")
    assert table.loc["lr", "same"] and not table.loc["eps", "same"]
    assert table.loc["eps", "candidate_default"] and not table.loc["eps", "baseline_default"]
    assert table.loc["eps", "candidate_declared"] == "optimizer.eps = None"


def _setups(eps_b: float, eps_c: float) -> dict[str, dict[str, Any]]:
    import torch

    defaults = library_defaults(torch.optim.Adam)
    group = {"lr": 2.5e-3, "betas": [0.9, 0.999], "weight_decay": 0.0, "_tensors": 12, "_values": 100}
    return {
        "baseline": {
            "class": "torch.optim.adam.Adam",
            "defaults": defaults,
            "groups": [{**group, "eps": eps_b}],
        },
        "candidate": {
            "class": "torch.optim.adam.Adam",
            "defaults": defaults,
            "groups": [{**group, "eps": eps_c}],
        },
    }


def _built(setups: dict[str, Any], configs: dict[str, Any]) -> oset.Built:
    return oset.Built(setups=setups, configs=configs)


def test_eps_left_to_the_library_default_is_suspect() -> None:
    configs = {
        "baseline": {"optimizer": {"lr": 2.5e-3, "eps": 1e-5}},
        "candidate": {"optimizer": {"lr": 2.5e-3, "eps": None}},
    }
    section = oset.hyperparameters(bench(), given=_built(_setups(1e-5, 1e-8), configs))
    (finding,) = [f for f in section.findings if f.status.is_flag]
    assert finding.id == "optimizer/hparam-eps" and finding.severity.value == "HIGH"
    assert "library default" in finding.evidence.summary and finding.evidence.effect == pytest.approx(1e-3)
    same = oset.hyperparameters(
        bench(), given=_built(_setups(1e-5, 1e-5), {s: configs["baseline"] for s in configs})
    )
    assert [f.status for f in same.findings] == [Status.CLEARED]


def test_declared_value_the_optimizer_ignores_is_confirmed() -> None:
    configs = {s: {"optimizer": {"lr": 2.5e-3, "eps": 1e-5}} for s in ("baseline", "candidate")}
    setups = _setups(1e-5, 1e-5)
    setups["candidate"]["groups"][0]["lr"] = 1e-3  # the config says 2.5e-3; make_optimizer used another value
    section = oset.hyperparameters(bench(), given=_built(setups, configs))
    ids = {f.id: f.status for f in section.findings}
    assert ids["optimizer/declared-vs-effective-lr-candidate"] is Status.CONFIRMED


def test_the_same_ignored_declaration_on_both_sides_gets_the_same_severity() -> None:
    configs = {s: {"optimizer": {"lr": 2.5e-3, "eps": 1e-5}} for s in ("baseline", "candidate")}
    setups = _setups(1e-5, 1e-5)
    for side in setups:
        setups[side]["groups"][0]["lr"] = 1e-3
    section = oset.hyperparameters(bench(), given=_built(setups, configs))
    found = {f.id: (f.status, f.severity) for f in section.findings if f.id.startswith("optimizer/declared")}
    assert set(found.values()) == {(Status.NOTED, Severity.LOW)} and len(found) == 2


def _coverage(missing: list[str]) -> pd.DataFrame:
    names = ["actor.weight", "critic.weight", "log_std"]
    return pd.DataFrame(
        {
            "parameter": names,
            "numel": [8, 8, 2],
            "requires_grad": [True, True, True],
            "group": [-1 if n in missing else 0 for n in names],
        }
    )


def test_a_tensor_left_out_of_every_param_group_is_confirmed_on_the_candidate_only() -> None:
    frozen = oset.Built(coverage={"baseline": _coverage([]), "candidate": _coverage(["log_std"])})
    (finding,) = oset.coverage(bench(), given=frozen).findings
    assert finding.id == "optimizer/frozen-candidate" and finding.status is Status.CONFIRMED
    assert finding.evidence.effect == pytest.approx(2 / 18)
    both = oset.Built(coverage={s: _coverage(["log_std"]) for s in ("baseline", "candidate")})
    assert {(f.status, f.severity) for f in oset.coverage(bench(), given=both).findings} == {
        (Status.NOTED, Severity.LOW)
    }


def test_another_optimizer_class_and_param_groups_are_suspect() -> None:
    setups = _setups(1e-5, 1e-5)
    setups["candidate"]["class"] = "torch.optim.sgd.SGD"
    setups["candidate"]["groups"].append({"lr": 1e-4, "_tensors": 1, "_values": 4})
    configs = {s: {} for s in setups}
    found = {f.id: f for f in oset.hyperparameters(bench(), given=_built(setups, configs)).findings}
    assert found["optimizer/class"].severity is Severity.HIGH
    assert found["optimizer/class"].evidence.summary.endswith("→ torch.optim.sgd.SGD")
    assert found["optimizer/param-groups"].evidence.summary == "1 param group(s) → 2"
