"""The optimizer room: declared schedules, runtime curves, hyperparameter defaults, clipping statistics, and the
detection matrix for the optimizer faults (with the identical pair staying quiet)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rlaudit.demo import faults as catalog
from rlaudit.findings import Severity, Status
from rlaudit.optimizer import schedules as osch
from rlaudit.optimizer import setup as oset
from rlaudit.optimizer import updates as oup
from rlaudit.optimizer.probes import library_defaults
from support.runs import bench, checker, evidence, fake_run

SCHEDULES = "optimizer/schedules"


def test_declared_schedule_reads_switches_and_kinds() -> None:
    cfg = {
        "trainer": {
            "anneal_lr": True,
            "lr_schedule": "linear",
            "ent_schedule": "constant",
            "ent_coef_final": 0.0,
        }
    }
    assert osch.declared_schedule(cfg, "learning rate")[0] is True
    assert osch.declared_schedule(cfg, "entropy coefficient")[0] is False
    assert osch.declared_schedule(cfg, "clip coefficient")[0] is None  # the config says nothing
    off = {"trainer": {"anneal_lr": False, "lr_schedule": "cosine"}}
    assert osch.declared_schedule(off, "learning rate")[0] is True  # a kind is a request, whatever the switch
    assert osch.declared_schedule({"scheduler": None}, "learning rate")[0] is False


def _curve(side: str, values: list[float], seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {"side": side, "seed": seed, "progress": np.linspace(0, 1, len(values)), "value": values}
    )


def test_flat_runtime_schedule_declared_in_config_is_confirmed() -> None:
    curves = pd.concat(
        [_curve("baseline", [1.0, 0.75, 0.5, 0.25]), _curve("candidate", [1.0, 1.0, 1.0, 1.0])]
    )
    summary = osch.curve_summary(curves)
    assert summary["candidate"]["flat"] and not summary["baseline"]["flat"]
    declared = {"baseline": (True, {"anneal_lr": True}), "candidate": (True, {"anneal_lr": True})}
    finding = osch.judge_schedule(checker(SCHEDULES), "learning rate", summary, declared)
    assert finding.status is Status.CONFIRMED
    assert "flat" in finding.evidence.summary and "0.25" in finding.evidence.summary


def test_identical_schedules_are_cleared_and_both_flat_is_noted() -> None:
    same = pd.concat([_curve("baseline", [1.0, 0.5]), _curve("candidate", [1.0, 0.5])])
    declared = {s: (True, {}) for s in ("baseline", "candidate")}
    assert (
        osch.judge_schedule(checker(SCHEDULES), "learning rate", osch.curve_summary(same), declared).status
        is Status.CLEARED
    )
    flat = pd.concat([_curve("baseline", [1.0, 1.0]), _curve("candidate", [1.0, 1.0])])
    assert (
        osch.judge_schedule(checker(SCHEDULES), "learning rate", osch.curve_summary(flat), declared).status
        is Status.NOTED
    )


def test_undeclared_difference_is_suspect() -> None:
    curves = pd.concat([_curve("baseline", [0.2, 0.2]), _curve("candidate", [0.2, 0.1])])
    declared = {s: (None, {}) for s in ("baseline", "candidate")}
    assert (
        osch.judge_schedule(
            checker(SCHEDULES), "clip coefficient", osch.curve_summary(curves), declared
        ).status
        is Status.SUSPECT
    )


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


def test_clipping_stats_count_clipped_steps_and_threshold_breaches() -> None:
    updates = pd.DataFrame(
        {"group": 0, "grad_norm": [0.2, 0.8, 1.5, 0.4], "grad_norm_clipped": [0.2, 0.5, 0.5, 0.4]}
    )
    st = oup.clipping_stats(updates, threshold=0.5)
    assert st["fraction_clipped"] == pytest.approx(0.5) and st["over_threshold"] == 0
    unclipped = pd.DataFrame({"group": 0, "grad_norm": [0.2, 0.8], "grad_norm_clipped": [0.2, 0.8]})
    assert oup.clipping_stats(unclipped, threshold=0.5)["over_threshold"] == 1


def test_update_ratio_table_pairs_layers() -> None:
    rng = np.random.default_rng(0)
    rows = [
        {"side": s, "layer": layer, "update_ratio": scale * rng.uniform(0.9, 1.1)}
        for s, scale in (("baseline", 1e-3), ("candidate", 5e-3))
        for layer in ("a", "b")
        for _ in range(20)
    ]
    table = oup.update_ratio_table(pd.DataFrame(rows)).set_index("layer")
    assert table.loc["a", "ratio"] == pytest.approx(5.0, rel=0.15)
    assert table.loc["a", "low"] > 3.0


# ---------------------------------------------------------------------------------------------------------------
# Detection matrix
# ---------------------------------------------------------------------------------------------------------------

OPTIMIZER_FAULTS = [f.id for f in catalog.CATALOG.values() if f.subsystem == "optimizer"]


@pytest.mark.parametrize("fault", OPTIMIZER_FAULTS)
def test_optimizer_fault_is_flagged(make_wb, flagged, describe, fault: str) -> None:
    from rlaudit.optimizer import audit_all

    sections = audit_all(make_wb(f"builtin:reference+{fault}"))
    found = [f for f in flagged(sections) if f.subsystem == "optimizer"]
    assert found, f"{fault}: nothing flagged\n{describe(f for s in sections for f in s.findings)}"


def test_identical_pair_is_quiet(make_wb, flagged, describe) -> None:
    from rlaudit.optimizer import audit_all

    sections = audit_all(make_wb("builtin:reference"))
    assert not flagged(sections), describe(flagged(sections))
    assert not [f for s in sections for f in s.findings if f.status.value == "ERROR"]


def test_schedules_quiet_across_seeds(make_wb) -> None:
    """Baseline and candidate runs of the same subject with different seeds: runtime schedules still agree."""
    from rlaudit.trainer.runs import run_data, runs

    wb = make_wb("builtin:reference")
    a = run_data(runs(wb, seeds=[0, 1], steps=wb.profile.short_train_steps))["baseline"]
    b = run_data(runs(wb, seeds=[2, 3], steps=wb.profile.short_train_steps))["baseline"]
    curves = osch.lr_curves({"baseline": a, "candidate": b})
    declared = {s: osch.declared_schedule(a[0].config, "learning rate") for s in ("baseline", "candidate")}
    summary = osch.curve_summary(curves)
    assert (
        osch.judge_schedule(checker(SCHEDULES), "learning rate", summary, declared).status is Status.CLEARED
    )


def test_same_schedule_at_different_rollout_sizes_agrees() -> None:
    """A linear decay sampled by 2 big updates and by 16 small ones is the same schedule (no false alarm
    when only the batch geometry differs)."""
    coarse_steps = np.repeat([4096, 8192], 16)
    coarse_lr = np.repeat([2.5e-3 * (1 - k / 2) for k in range(2)], 16)
    fine_steps = np.repeat(512 * np.arange(1, 17), 16)
    fine_lr = np.repeat([2.5e-3 * (1 - k / 16) for k in range(16)], 16)
    curves = pd.concat(
        [
            pd.DataFrame(
                {
                    "side": "baseline",
                    "seed": 0,
                    "progress": osch.schedule_progress(coarse_steps),
                    "value": coarse_lr,
                }
            ),
            pd.DataFrame(
                {
                    "side": "candidate",
                    "seed": 0,
                    "progress": osch.schedule_progress(fine_steps),
                    "value": fine_lr,
                }
            ),
        ]
    )
    summary = osch.curve_summary(curves)
    assert osch.curve_gap(summary["baseline"], summary["candidate"]) < 1e-9
    declared = {s: (True, {}) for s in ("baseline", "candidate")}
    assert (
        osch.judge_schedule(checker(SCHEDULES), "learning rate", summary, declared).status is Status.CLEARED
    )


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


def _clipped_run(tmp: Path, seed: int, pre: list[float], post: list[float]) -> Any:
    n = len(pre)
    updates = {
        "update": np.arange(1, n + 1),
        "step": np.arange(1, n + 1) * 64,
        "group": np.zeros(n, int),
        "lr": np.ones(n),
        "grad_norm": pre,
        "grad_norm_clipped": post,
    }
    run = fake_run(tmp, seed=seed, config={"trainer": {"max_grad_norm": 0.5}})
    from rlaudit.engine.io import write_table

    write_table(run.run_dir / "updates", updates)
    return run


def test_clip_shares_clear_only_inside_the_margin_and_a_missing_watch_is_skipped(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pre = rng.uniform(0.1, 1.0, 400)
    post = np.minimum(pre, 0.5)
    same = [_clipped_run(tmp_path, 0, pre.tolist(), post.tolist())]
    other = [_clipped_run(tmp_path, 1, (pre * 1.02).tolist(), np.minimum(pre * 1.02, 0.5).tolist())]
    (finding,) = oup.gradient_clipping(bench(), given=evidence(same, other)).findings
    assert finding.status is Status.CLEARED
    low, high = finding.evidence.ci
    assert -0.25 < low <= finding.evidence.effect <= high < 0.25
    few = [_clipped_run(tmp_path, 2, [0.2, 0.9], [0.2, 0.5])]
    fewer = [_clipped_run(tmp_path, 3, [0.9, 0.2], [0.5, 0.2])]
    (open_,) = oup.gradient_clipping(bench(), given=evidence(few, fewer)).findings
    assert open_.status is Status.NOTED and "inconclusive" in open_.evidence.summary
    silent = [fake_run(tmp_path, seed=4)]
    silent[0].run_dir.joinpath("updates.parquet").unlink(missing_ok=True)
    silent[0].run_dir.joinpath("updates.npz").unlink(missing_ok=True)
    (skipped,) = oup.gradient_clipping(bench(), given=evidence(same, silent)).findings
    assert skipped.status is Status.SKIPPED and "recorder.watch" in skipped.remediation


def test_another_optimizer_class_and_param_groups_are_suspect() -> None:
    setups = _setups(1e-5, 1e-5)
    setups["candidate"]["class"] = "torch.optim.sgd.SGD"
    setups["candidate"]["groups"].append({"lr": 1e-4, "_tensors": 1, "_values": 4})
    configs = {s: {} for s in setups}
    found = {f.id: f for f in oset.hyperparameters(bench(), given=_built(setups, configs)).findings}
    assert found["optimizer/class"].severity is Severity.HIGH
    assert found["optimizer/class"].evidence.summary.endswith("→ torch.optim.sgd.SGD")
    assert found["optimizer/param-groups"].evidence.summary == "1 param group(s) → 2"


def test_a_frozen_layer_is_counted_once_among_those_that_move_differently() -> None:
    """A layer the candidate no longer moves is both three-fold off and frozen: the summary said "18 of 9
    tensors move at a different rate" when every tensor of a zero-learning-rate candidate was both."""
    from rlaudit.optimizer.updates import different_layers, update_ratio_table

    rng = np.random.default_rng(0)
    rows = []
    for layer, candidate_scale in (("actor.weight", 0.0), ("critic.weight", 1.0)):
        for side, scale in (("baseline", 1.0), ("candidate", candidate_scale)):
            for value in 0.01 * scale * (1.0 + 0.1 * rng.random(8)):
                rows.append({"layer": layer, "side": side, "update_ratio": value})
    table = update_ratio_table(pd.DataFrame(rows))
    assert different_layers(table) == ["actor.weight"]
