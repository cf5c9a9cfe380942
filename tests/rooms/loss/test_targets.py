"""The tests of :mod:`rlaudit.loss.targets`: the TD-target probe on the built-in DQN and its faults, and the
cases read as quantities (discount, reward coefficient, done masks, bootstrap state and network)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rlaudit.demo.subject import load
from rlaudit.engine.io import read_table
from rlaudit.engine.subjects import capabilities
from rlaudit.loss import probes as loss_probes
from rlaudit.loss.targets import td_quantities
from rlaudit.probe import ProbeContext


def _td(tmp_path: Path, spec: str, overrides: tuple[str, ...] = ()) -> dict:
    subject = load(spec)
    config = subject.config(list(overrides))
    out = tmp_path / spec.replace(":", "_").replace("+", "_") / "_".join(overrides)
    out.mkdir(parents=True)
    ctx = ProbeContext(subject, config, out, f"builtin:{spec}", frozenset(capabilities(subject)))
    result = loss_probes.td_targets(ctx, seed=0)
    boot = read_table(out / "td_bootstrap")["bootstrap"].to_numpy() if result["bootstrap_reported"] else None
    return td_quantities(read_table(out / "td_cases"), boot)


def test_the_reference_dqn_reads_as_a_one_step_target_network_td_target(tmp_path: Path) -> None:
    q = _td(tmp_path, "dqn")
    assert q["gamma"] == pytest.approx(0.95, rel=1e-5)
    assert q["reward coefficient"] == pytest.approx(1.0)
    assert q["terminal bootstrap kept"] == pytest.approx(0.0, abs=1e-6)
    assert q["truncation bootstrap kept"] == pytest.approx(1.0, abs=1e-6)
    assert q["bootstrap state"] == "s_{t+1}"
    assert q["bootstrap network"] == "target"


@pytest.mark.parametrize(
    ("spec", "overrides", "quantity", "value"),
    [
        ("dqn+loss.bootstrap_off_by_one", (), "bootstrap state", "s_t"),
        ("dqn+loss.done_mask_dropped", (), "terminal bootstrap kept", 1.0),
        ("dqn", ("trainer.gamma=0.9",), "gamma", 0.9),
        ("dqn", ("trainer.double_q=true",), "bootstrap network", "target and online (double-Q argmax)"),
    ],
)
def test_each_td_target_change_is_read_as_its_quantity(
    tmp_path: Path, spec: str, overrides: tuple[str, ...], quantity: str, value: object
) -> None:
    q = _td(tmp_path, spec, overrides)
    reference = _td(tmp_path / "ref", "dqn")
    if isinstance(value, float):
        assert q[quantity] == pytest.approx(value, abs=1e-4)
    else:
        assert q[quantity] == value
    unchanged = [k for k in reference if k not in (quantity, "moves") and q[k] != pytest.approx(reference[k])]
    assert not unchanged, f"{spec} {overrides} also changed {unchanged}"


def test_td_quantities_by_hand_without_a_reported_bootstrap() -> None:
    import pandas as pd

    from rlaudit.loss.probes import TD_CASES

    n = 4
    reward = np.array([0.0, 1.0, 0.0, 1.0])
    boot = np.array([1.0, 2.0, 3.0, 4.0])  # γ V(s') of the base batch
    targets = {
        "base": reward + boot,
        "rewards_0": boot,
        "rewards_1": 1 + boot,
        "terminated": reward,  # the done mask stops the bootstrap
        "truncated": reward,  # ... and so does a truncation: a time limit treated as terminal
        "next_obs": reward + boot * 0.5,
        "obs": reward + boot,
        "target": reward + boot * 1.1,
        "online": reward + boot,
    }
    cases = pd.DataFrame(
        {
            "case": np.repeat(TD_CASES, n),
            "row": np.tile(np.arange(n), len(TD_CASES)),
            "target": np.concatenate([targets[c] for c in TD_CASES]),
            "reward": np.tile(reward, len(TD_CASES)),
        }
    )
    q = td_quantities(cases)
    assert math.isnan(q["gamma"])  # not readable without the subject's bootstrap values
    assert q["reward coefficient"] == pytest.approx(1.0)
    assert q["terminal bootstrap kept"] == 0.0 and q["truncation bootstrap kept"] == 0.0
    assert q["bootstrap state"] == "s_{t+1}" and q["bootstrap network"] == "target"
