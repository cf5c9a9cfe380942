"""The tests of :mod:`rlaudit.loss.advantages`."""

from __future__ import annotations

import pytest

from rlaudit.loss import gae


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
