"""The tests of :mod:`rlaudit.loss.targets`: the TD-target probe on the built-in DQN and its faults, and the
cases read as quantities (discount, reward coefficient, done masks, bootstrap state and network, the twin-critic
reduction and SAC's entropy term), and the check's verdicts on hand-built artifacts."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rlaudit.demo.subject import load
from rlaudit.engine.io import read_table, write_table
from rlaudit.engine.store import ProbeResult
from rlaudit.engine.subjects import capabilities
from rlaudit.engine.workbench import Pair
from rlaudit.findings import Status
from rlaudit.loss import probes as loss_probes
from rlaudit.loss.targets import td_quantities, td_targets
from rlaudit.probe import ProbeContext
from support.runs import bench


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


# -- the twin-critic reduction and the entropy term, on hand-built probe tables ---------------------------------

N = 16
REDUCE = {
    "min": lambda q: q.min(axis=1),
    "mean": lambda q: q.mean(axis=1),
    "max": lambda q: q.max(axis=1),
    "critic 0": lambda q: q[:, 0],
}
MOVED = ("next_obs", "target", "online")


def _artifacts(reduce: str = "min", entropy: float = -1.0, alpha: float | None = 0.1, log_prob: bool = True):
    """The probe's tables for a subject whose bootstrap is ``REDUCE[reduce](next_q) + entropy * alpha * log π``
    (γ 0.9, two target critics): the cases that change the next observation or a network see other critic
    values and log-probabilities, the others the base batch's."""
    import pandas as pd

    from rlaudit.loss.probes import TD_CASES

    rng = np.random.default_rng(3)
    reward = rng.integers(0, 2, N).astype(float)
    cases, terms = [], []
    base = rng.normal(size=(N, 2)) * 3, rng.normal(-1.0, 0.8, N)
    for case in TD_CASES:
        q, lp = (rng.normal(size=(N, 2)) * 3, rng.normal(-1.0, 0.8, N)) if case in MOVED else base
        boot = 0.9 * (REDUCE[reduce](q) + entropy * (alpha or 0.1) * lp)
        r = {"rewards_0": np.zeros(N), "rewards_1": np.ones(N)}.get(case, reward)
        target = r if case == "terminated" else r + boot
        cases.append(pd.DataFrame({"case": case, "row": np.arange(N), "target": target, "reward": reward}))
        terms.append(
            pd.DataFrame(
                {
                    "case": case,
                    "row": np.arange(N),
                    "next_q_0": q[:, 0],
                    "next_q_1": q[:, 1],
                    "next_log_prob": lp if log_prob else np.nan,
                }
            )
        )
    return pd.concat(cases), pd.concat(terms), alpha


@pytest.mark.parametrize(
    ("reduce", "name"),
    [
        ("min", "min over 2 critics"),
        ("mean", "mean over 2 critics"),
        ("max", "max over 2 critics"),
        ("critic 0", "critic 0 only"),
    ],
)
@pytest.mark.parametrize(
    ("entropy", "form"),
    [(-1.0, "−α·log π"), (0.0, "missing"), (1.0, "+α·log π (sign flipped)"), (-2.0, "2·(−α·log π)")],
)
def test_the_twin_critic_reduction_and_the_entropy_term_by_hand(
    reduce: str, name: str, entropy: float, form: str
) -> None:
    cases, terms, alpha = _artifacts(reduce, entropy)
    q = td_quantities(cases, None, terms, alpha)
    assert q["twin-critic reduction"] == name
    assert q["entropy term"] == form
    assert q["entropy coefficient"] == pytest.approx(entropy * 0.1, abs=1e-9)
    # the other quantities still read from the cases alone
    assert q["reward coefficient"] == pytest.approx(1.0) and q["terminal bootstrap kept"] == pytest.approx(
        0.0
    )


def test_critic_terms_not_reported_and_without_a_reported_alpha() -> None:
    cases, terms, _ = _artifacts()
    q = td_quantities(cases)
    assert q["twin-critic reduction"] == q["entropy term"] == "not reported"
    # TD3: critic values, no log-probability
    cases, terms, _ = _artifacts("min", 0.0, log_prob=False)
    q = td_quantities(cases, None, terms)
    assert q["twin-critic reduction"] == "min over 2 critics" and q["entropy term"] == "not reported"
    # a log-probability term without a reported α is named by its coefficient
    cases, terms, _ = _artifacts("min", -1.0, alpha=None)
    assert td_quantities(cases, None, terms)["entropy term"] == "-0.1·log π"
    # a bootstrap no reduction of the critics gives
    cases, terms, alpha = _artifacts("min", -1.0)
    cases.loc[cases["case"] == "next_obs", "target"] += np.linspace(0, 3, N)
    named = td_quantities(cases, None, terms, alpha)["twin-critic reduction"]
    assert named.startswith("none of min, mean, max or one critic")


def _pair(tmp: Path, sides: dict[str, tuple]) -> Pair:
    results = {}
    for side, (cases, terms, alpha) in sides.items():
        d = tmp / side
        d.mkdir(parents=True)
        write_table(d / "td_cases", {c: cases[c].to_numpy() for c in cases.columns})
        if terms is not None:
            write_table(d / "td_terms", {c: terms[c].to_numpy() for c in terms.columns})
        result = {"bootstrap_reported": False, "ent_coef": alpha, "batch_size": N}
        results[side] = ProbeResult(side, f"{side}.py", "td_targets", {}, True, result=result, dir=d)
    return Pair(**results)


def test_the_check_names_a_dropped_entropy_term_and_a_single_critic(tmp_path: Path) -> None:
    pair = _pair(tmp_path, {"baseline": _artifacts("min", -1.0), "candidate": _artifacts("critic 0", 0.0)})
    (finding,) = td_targets(bench(), given=pair).findings
    assert finding.status is Status.CONFIRMED, finding.headline
    summary = finding.evidence.summary
    assert "twin-critic reduction: min over 2 critics → critic 0 only" in summary
    assert "entropy term: −α·log π (α=0.1 as built) → missing" in summary
    assert "gamma" not in summary and "bootstrap state" not in summary
    flipped = _pair(
        tmp_path / "f", {"baseline": _artifacts("min", -1.0), "candidate": _artifacts("min", 1.0)}
    )
    (finding,) = td_targets(bench(), given=flipped).findings
    assert finding.status is Status.CONFIRMED
    assert (
        "entropy term: −α·log π (α=0.1 as built) → +α·log π (sign flipped) (α=0.1 as built)"
        in finding.evidence.summary
    )
    assert "penalty on entropy" in finding.evidence.summary


def test_the_check_clears_the_same_terms_and_leaves_out_an_unreported_one(tmp_path: Path) -> None:
    pair = _pair(
        tmp_path / "a", {"baseline": _artifacts("min", -1.0), "candidate": _artifacts("min", -1.0, 0.2)}
    )
    (finding,) = td_targets(bench(), given=pair).findings
    # a temperature twice as high is the same entropy term: α's schedule is the optimizer room's
    assert finding.status is Status.CLEARED, finding.headline
    assert (
        "twin-critic reduction: min over 2 critics; entropy term: −α·log π (α=0.1 as built)"
        in finding.evidence.summary
    )
    assert {"twin-critic reduction", "entropy term"} <= set(finding.evidence.details["compared"])
    cases, _, _ = _artifacts("min", -1.0)
    pair = _pair(tmp_path / "b", {"baseline": _artifacts("mean", -1.0), "candidate": (cases, None, None)})
    (finding,) = td_targets(bench(), given=pair).findings
    # the candidate reports no critic terms: they do not block the verdict on the rest
    assert finding.status is Status.CLEARED, finding.headline
    assert "twin-critic reduction" not in finding.evidence.details["compared"]
    assert "reward coefficient" in finding.evidence.details["compared"]
    assert "twin-critic reduction" not in finding.evidence.summary
