"""The tests of :mod:`rlaudit.loss.tdloss`: the loss on the TD error read from hand-built curves ``L(s)`` (MSE,
Huber at two thresholds, smooth L1, L1, sums and factors), the probe on the built-in DQN and its fault, and the
check on the built-in DQN pair."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch.nn import functional as F

from rlaudit.demo.subject import load
from rlaudit.engine.io import read_table
from rlaudit.engine.subjects import capabilities
from rlaudit.findings import Status
from rlaudit.loss import probes as loss_probes
from rlaudit.loss.tdloss import compare, label, loss_form, td_loss_form
from rlaudit.probe import ProbeContext

B = 64


def _curve(per_row, rows: int = B, reduce: str = "mean", centres: tuple[float, ...] = (0.0,)) -> pd.DataFrame:
    """The probe's table for a loss ``per_row(q, target)`` (torch) over ``rows`` identical rows, one critic per
    centre (each critic's Q off the target by its centre), summed over critics."""
    shifts = sorted({s * sign for s in loss_probes.TD_LOSS_SHIFTS for sign in (1.0, -1.0)})
    target = torch.zeros(rows, dtype=torch.float64)
    losses = []
    for s in shifts:
        total = 0.0
        for c in centres:
            q = torch.full((rows,), c, dtype=torch.float64)
            total += float(per_row(q, target + s, reduction=reduce))
        losses.append(total)
    return pd.DataFrame({"shift": shifts, "loss": losses})


def huber(delta: float):
    return lambda q, t, reduction: F.huber_loss(q, t, reduction=reduction, delta=delta)


def smooth_l1(beta: float):
    return lambda q, t, reduction: F.smooth_l1_loss(q, t, reduction=reduction, beta=beta)


@pytest.mark.parametrize(
    ("per_row", "kwargs", "form", "threshold", "scale", "named"),
    [
        (F.mse_loss, {}, "MSE", None, 1.0, "MSE"),
        (smooth_l1(1.0), {}, "Huber", 1.0, 1.0, "Huber (δ=1)"),
        (huber(1.0), {}, "Huber", 1.0, 1.0, "Huber (δ=1)"),
        (huber(2.0), {}, "Huber", 2.0, 2.0, "Huber (δ=2) ×2"),
        (smooth_l1(2.0), {}, "Huber", 2.0, 1.0, "Huber (δ=2)"),
        (F.l1_loss, {}, "L1", 0.0, 1.0, "L1"),
        (F.mse_loss, {"reduce": "sum"}, "MSE", None, float(B), f"MSE ×{B}"),
        (smooth_l1(1.0), {"reduce": "sum"}, "Huber", 1.0, float(B), f"Huber (δ=1) ×{B}"),
        (F.mse_loss, {"centres": (0.3, -0.1)}, "MSE", None, 2.0, "MSE ×2"),  # TD3: two critics summed
    ],
)
def test_each_loss_is_read_as_its_form_threshold_and_scale(
    per_row, kwargs, form: str, threshold: float | None, scale: float, named: str
) -> None:
    q = loss_form(_curve(per_row, **kwargs))
    assert q["form"] == form
    if threshold is None:
        assert np.isnan(q["threshold"])
    else:
        assert q["threshold"] == pytest.approx(threshold, abs=1e-6)
    assert q["scale"] == pytest.approx(scale, rel=1e-6)
    assert label(q) == named


def test_half_mse_and_a_smooth_turn_that_is_not_huber() -> None:
    half = loss_form(_curve(lambda q, t, reduction: 0.5 * F.mse_loss(q, t, reduction=reduction)))
    assert half["form"] == "MSE" and half["scale"] == pytest.approx(0.5)
    # log-cosh: linear tails, but its quadratic part is not the one a Huber turn at that point would have
    logcosh = loss_form(_curve(lambda q, t, reduction: torch.log(torch.cosh(q - t)).mean()))
    assert logcosh["form"] == "other"
    # an expectile-like loss weighting positive and negative errors differently
    skew = loss_form(_curve(lambda q, t, reduction: ((q - t) ** 2 * torch.where(q > t, 0.9, 0.1)).mean()))
    assert skew["form"] == "asymmetric"
    # a squared error capped at 50: its tail is flat, neither quadratic nor linear
    capped = loss_form(_curve(lambda q, t, reduction: torch.clamp((q - t) ** 2, max=50.0).mean()))
    assert capped["form"] == "other"
    # without a named form the curves themselves are compared
    assert compare(capped, capped, B) == []
    assert compare(logcosh, capped, B) == [("form", "the loss curve differs (other on both sides)")]


@pytest.mark.parametrize(
    ("candidate", "kwargs", "quantities", "words"),
    [
        (F.mse_loss, {}, ["form"], "Huber (δ=1) → MSE"),
        (smooth_l1(2.0), {}, ["threshold"], "Huber threshold δ 1 → 2"),
        (smooth_l1(1.0), {"reduce": "sum"}, ["scale"], f"mean → sum over {B} rows"),
        (huber(2.0), {}, ["threshold", "scale"], "scale ×2"),
        (F.l1_loss, {}, ["form"], "Huber (δ=1) → L1"),
    ],
)
def test_a_change_of_loss_is_named(candidate, kwargs, quantities: list[str], words: str) -> None:
    base = loss_form(_curve(smooth_l1(1.0)))
    changed = compare(base, loss_form(_curve(candidate, **kwargs)), B)
    assert [k for k, _ in changed] == quantities
    assert words in "; ".join(w for _, w in changed)
    assert compare(base, loss_form(_curve(huber(1.0))), B) == []  # smooth L1 (β=1) is Huber (δ=1)


def _probe(tmp_path: Path, spec: str) -> tuple[dict, pd.DataFrame]:
    subject = load(spec)
    config = subject.config([])
    out = tmp_path / spec.replace(":", "_").replace("+", "_")
    out.mkdir(parents=True)
    ctx = ProbeContext(subject, config, out, f"builtin:{spec}", frozenset(capabilities(subject)))
    result = loss_probes.td_loss(ctx, seed=0)
    return result, read_table(out / "td_loss")


def test_the_builtin_dqn_loss_against_a_hand_computation(tmp_path: Path) -> None:
    from rlaudit.demo.dqn import DQNImpl, compute_td_loss

    subject = load("dqn")
    config = subject.config([])
    env = subject.make_env(config, 0)
    torch.manual_seed(0)
    policy = subject.make_policy(config, env.single_observation_space, env.single_action_space)
    env.close()
    rng = np.random.default_rng(3)
    obs = rng.normal(size=(8, env.single_observation_space.shape[0])).astype(np.float32)
    actions = rng.integers(0, env.single_action_space.n, 8)
    targets = rng.normal(scale=3.0, size=8)
    with torch.no_grad():
        q = policy.q_net(torch.as_tensor(obs)).numpy()[np.arange(8), actions]
    err = q - targets
    huber_by_hand = np.mean(np.where(np.abs(err) < 1, 0.5 * err**2, np.abs(err) - 0.5))
    batch = {"obs": obs, "actions": actions}
    assert subject.compute_td_loss(config, policy, batch, targets) == pytest.approx(huber_by_hand, rel=1e-5)
    mse = compute_td_loss(config, policy, batch, targets, impl=DQNImpl(td_loss_mse=True))
    assert mse == pytest.approx(np.mean(err**2), rel=1e-5)


def test_the_probe_reads_the_builtin_dqn_and_its_mse_fault(tmp_path: Path) -> None:
    result, table = _probe(tmp_path, "dqn")
    assert result["batch_size"] == 64 and np.isfinite(result["centre"])
    q = loss_form(table)
    assert (q["form"], label(q)) == ("Huber", "Huber (δ=1)")
    assert q["threshold"] == pytest.approx(1.0, abs=0.01) and q["scale"] == pytest.approx(1.0, rel=1e-3)
    _, faulty = _probe(tmp_path, "dqn+loss.td_mse")
    assert compare(q, loss_form(faulty), 64) == [("form", "Huber (δ=1) → MSE")]


def test_the_dqn_pair_clears_and_the_mse_fault_is_confirmed(make_wb, describe) -> None:
    (same,) = td_loss_form(make_wb("builtin:dqn", baseline="builtin:dqn")).findings
    assert same.status is Status.CLEARED, describe([same])
    assert "Huber (δ=1)" in same.evidence.summary
    (fault,) = td_loss_form(make_wb("builtin:dqn+loss.td_mse", baseline="builtin:dqn")).findings
    assert fault.status is Status.CONFIRMED, describe([fault])
    assert "Huber (δ=1) → MSE" in fault.evidence.summary and "smooth_l1_loss" in fault.remediation


def test_a_ppo_pair_skips_naming_compute_td_loss(make_wb) -> None:
    (finding,) = td_loss_form(make_wb("builtin:reference")).findings
    assert finding.status is Status.SKIPPED
    assert "`compute_td_loss`" in finding.evidence.summary
