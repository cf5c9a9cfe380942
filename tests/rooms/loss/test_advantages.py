"""The tests of :mod:`rlaudit.loss.advantages`."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from rlaudit.findings import Status
from rlaudit.loss import gae
from support.invariants import uncovered_clearances
from support.runs import bench


def test_a_discount_other_than_declared_is_solved_for() -> None:
    from rlaudit.loss.advantages import solve_discount

    x = gae.make_gae_inputs(5)
    adv, ret = gae.reference_gae(x["rewards"], x["values"], x["dones"], x["next_value"], 0.95, 0.8)
    arrays = {**x, "advantages": adv, "returns": ret}
    gamma, lam, err = solve_discount("correct", arrays, False, [(0.99, 0.95)])
    assert gamma == pytest.approx(0.95, abs=1e-6) and lam == pytest.approx(0.8, abs=1e-6) and err < 1e-6
    rows = gae.match_variants(adv, ret, x, 0.99, 0.95, with_truncation=False)
    assert not any(r["match"] for r in rows)  # with the declared 0.99/0.95 nothing matches


def test_advantages_quiet_across_input_seeds(make_wb, flagged, describe) -> None:
    from rlaudit.loss.audit import advantages

    wb = make_wb("builtin:reference")
    for seed in (1, 2, 3):
        section = advantages(wb, seed=seed)
        assert not flagged([section]), describe(section.findings)


# ---------------------------------------------------------------------------------------------------------------
# A sequence learner's compute_lambda_returns (case 003)
# ---------------------------------------------------------------------------------------------------------------


def _in_process_bench(tmp_path: Path, subjects: dict[str, Any]) -> Any:
    """A stand-in workbench whose ``run_each`` runs each probe in this process on the side's subject object
    (a probe whose required capability the subject lacks is not run: its result names what is missing)."""
    from rlaudit.engine.store import ProbeResult
    from rlaudit.engine.subjects import capabilities
    from rlaudit.probe import ProbeContext, probe_info

    wb = bench()
    wb.cache = SimpleNamespace(root=tmp_path / "cache")
    wb.calls = []

    def run_each(probe_fn: Any, calls: list[tuple[str, dict]], desc: str | None = None) -> list[ProbeResult]:
        info = probe_info(probe_fn)
        results = []
        for side, params in calls:
            wb.calls.append((side, info.name))
            subject = subjects[side]
            caps = frozenset(capabilities(subject))
            missing = [cap for cap in info.requires if cap not in caps]
            if missing:
                results.append(ProbeResult(side, side, info.name, dict(params), False, missing=missing))
                continue
            out = tmp_path / "runs" / f"{side}-{len(wb.calls)}"
            out.mkdir(parents=True)
            ctx = ProbeContext(subject, subject.config(), out, side, caps, dict(params))
            result = probe_fn(ctx, **params)
            results.append(ProbeResult(side, side, info.name, dict(params), True, result=result, dir=out))
        return results

    wb.run_each = run_each
    return wb


def test_lambda_returns_are_the_reference_gae_returns_and_case_003_is_named() -> None:
    import sequence_subject as seq

    x = gae.make_gae_inputs(2)
    dreamed = np.concatenate([x["values"], x["next_value"][None]]).astype(np.float64)
    cont = 1.0 - x["dones"]
    rows = {}
    for name, learner in (("correct", False), ("bootstrap_current_return", True)):
        ret = seq.calculate_lambda_returns(x["rewards"], dreamed, cont, 0.985, 0.95, learner)
        rows[name] = gae.match_variants(ret - x["values"], ret, x, 0.985, 0.95, with_truncation=False)
        assert [r["variant"] for r in rows[name] if r["match"]] == [name]
    # GAE's V(s_t) slip and the lambda-return one agree only at lambda 0
    a = gae.reference_gae(
        x["rewards"], x["values"], x["dones"], x["next_value"], 0.9, 0.0, bootstrap="current"
    )
    b = gae.reference_gae(
        x["rewards"], x["values"], x["dones"], x["next_value"], 0.9, 0.0, bootstrap="current_return"
    )
    np.testing.assert_allclose(a[0], b[0], atol=1e-9)


def test_a_sequence_learners_off_by_one_bootstrap_is_confirmed_by_name(tmp_path: Path) -> None:
    import sequence_subject as seq

    from rlaudit.loss.advantages import advantages

    wb = _in_process_bench(tmp_path, {"baseline": seq.correct, "candidate": seq.off_by_one})
    section = advantages(wb, seed=0)
    (finding,) = section.findings
    assert finding.status is Status.CONFIRMED, finding.headline
    assert finding.evidence.details["variant"] == "bootstrap_current_return"
    assert finding.evidence.details["capability"] == "compute_lambda_returns"
    assert (
        finding.evidence.details["solved"] is False
    )  # read with the config's discount 0.985 and lambda 0.95
    assert "candidate's compute_lambda_returns matches `bootstrap_current_return`" in finding.evidence.summary
    assert "values[t + 1]" in finding.remediation
    # the GAE probe ran first on both sides; the lambda-returns probe only on the sides lacking compute_advantages
    assert ("baseline", "rlaudit.loss.probes:lambda_returns") in wb.calls
    assert sum(name.endswith(":advantages") for _, name in wb.calls) == 4


def test_a_correct_sequence_learner_against_itself_is_cleared(tmp_path: Path) -> None:
    import sequence_subject as seq

    from rlaudit.loss.advantages import advantages

    wb = _in_process_bench(tmp_path, {"baseline": seq, "candidate": seq.correct})
    (finding,) = advantages(wb, seed=1).findings
    assert finding.status is Status.CLEARED, finding.headline
    summary = finding.evidence.summary
    assert "read from compute_lambda_returns" in summary and "gamma 0.985/0.985" in summary
    assert "sequence convention of compute_lambda_returns has no truncation flags" in summary
    assert not uncovered_clearances([finding])  # both sides' error against the reference was measured


def test_a_subject_with_neither_estimator_stays_skipped_for_compute_advantages(tmp_path: Path) -> None:
    import sequence_subject as seq

    from rlaudit.loss.advantages import advantages

    bare = SimpleNamespace(config=seq.config)
    wb = _in_process_bench(tmp_path, {"baseline": seq, "candidate": bare})
    (finding,) = advantages(wb).findings
    assert finding.status is Status.SKIPPED
    assert finding.evidence.details["missing"] == {"candidate": ["compute_advantages"]}


def test_lambda_returns_of_the_wrong_length_are_a_clear_error(tmp_path: Path) -> None:
    from rlaudit.loss import probes
    from rlaudit.loss.inputs import stage
    from rlaudit.probe import ProbeContext

    short = SimpleNamespace(
        config=lambda: {"gamma": 0.99, "lambda": 0.95},
        compute_lambda_returns=lambda config, rewards, values, continues, bootstrap: rewards[:-1],
    )
    rel = stage(gae.make_gae_inputs(0), root=tmp_path)
    ctx = ProbeContext(
        short, short.config(), tmp_path / "out", "short", frozenset({"compute_lambda_returns"})
    )
    with pytest.raises(ValueError, match=r"expected \(T, B\), one return per step"):
        probes.lambda_returns(ctx, inputs=str(tmp_path / rel))


def test_a_sequence_learner_in_its_own_worker_is_read_through_compute_lambda_returns(
    tmp_path: Path, make_wb
) -> None:
    import shutil

    fixture = Path(__file__).parents[2] / "fixtures" / "sequence_subject.py"
    shutil.copyfile(fixture, tmp_path / "seq_right.py")
    buggy = (
        fixture.read_text()
        + "\nconfig = off_by_one.config\ncompute_lambda_returns = off_by_one.compute_lambda_returns\n"
    )
    (tmp_path / "seq_wrong.py").write_text(buggy)
    from rlaudit.loss.advantages import advantages

    wb = make_wb(str(tmp_path / "seq_wrong.py"), baseline=str(tmp_path / "seq_right.py"))
    (finding,) = advantages(wb).findings
    assert finding.status is Status.CONFIRMED, finding.headline
    assert finding.evidence.details["variant"] == "bootstrap_current_return"
    assert finding.evidence.details["capability"] == "compute_lambda_returns"
