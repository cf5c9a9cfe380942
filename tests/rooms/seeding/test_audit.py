"""The seeding room: replica comparison, fresh processes catching hash randomization, global-generator
perturbation, the variance table, and the detection matrix."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlaudit.demo.faults import CATALOG
from rlaudit.engine.subjects import parse_spec
from rlaudit.seeding import audit, power, probes, replica
from support.probing import probe_context

SEEDING_FAULTS = sorted(f.id for f in CATALOG.values() if f.subsystem == "seeding")

# A numpy-only subject whose random walk is seeded by reset(seed=...); with HASH_SALT its drift also depends
# on hash() of a string, which Python randomizes per process unless PYTHONHASHSEED is set.
TOY_SUBJECT = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces

    HASH_SALT = {hash_salt}

    class Walk(gym.Env):
        def __init__(self, drift):
            self.observation_space = spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64)
            self.action_space = spaces.Discrete(2)
            self.drift = drift

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.x = 0.0
            return np.array([self.x]), {{}}

        def step(self, action):
            self.x += self.np_random.normal() + self.drift + action
            return np.array([self.x]), 0.0, False, False, {{}}

    def config():
        return {{"env": {{"size": 1}}}}

    def make_env(config, seed):
        drift = (hash("rlaudit") % 1000) / 1000 if HASH_SALT else 0.0
        return Walk(drift)
    """
)


def toy_ctx(tmp_path: Path, name: str, hash_salt: bool) -> Any:
    directory = tmp_path / name
    directory.mkdir()
    path = directory / "subject.py"
    path.write_text(TOY_SUBJECT.format(hash_salt=hash_salt))
    spec = parse_spec(str(path))
    from rlaudit.engine.subjects import load_subject

    subject = load_subject(spec)
    return probe_context(subject, tmp_path / f"{name}-out", {"config", "make_env"}, spec=spec.text)


def test_fresh_processes_catch_hash_randomization(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    reports = {}
    for name, salt in (("clean", False), ("hashed", True)):
        ctx = toy_ctx(tmp_path, name, salt)
        out = probes.replicas(ctx, seed=3, other_seed=4, env_steps=8, train_steps=0, fresh=2, timeout=300)
        assert out["parts"] == ["env"]
        reports[name] = audit.same_seed_report(
            __import__("json").loads((ctx.out / "replicas.json").read_text())
        )
    clean, hashed = reports["clean"], reports["hashed"]
    assert clean["fresh"]["identical"] and clean["warm"]["identical"] and not clean["insensitive"]
    # hash("rlaudit") differs between two fresh interpreters (a 1-in-1000 chance of a collision)
    assert hashed["fresh"]["env_step"] == 1 and not hashed["fresh"]["identical"]


class TorchToy:
    """A subject whose train() builds a tiny network; ``seeded=False`` reseeds torch from entropy."""

    def __init__(self, seeded: bool, use_numpy_global: bool = False) -> None:
        self.seeded = seeded
        self.use_numpy_global = use_numpy_global

    def config(self) -> dict:
        return {}

    def train(self, config: dict, steps: int, seed: int, recorder: Any) -> dict:
        import torch

        if self.seeded:
            torch.manual_seed(seed)
        else:
            torch.seed()
        net = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        recorder.watch(net, opt)
        gen = np.random.default_rng(seed)
        for step in range(3):
            x = torch.as_tensor(gen.normal(size=(4, 3)), dtype=torch.float32)
            if self.use_numpy_global:
                x = x + float(np.random.random())  # noqa: NPY002 - the hidden dependence under test
            loss = net(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            recorder.log(step, **{"losses/loss": loss.item()})
        return {}


def test_replicas_of_an_unseeded_trainer_differ_in_initial_weights(tmp_path: Path) -> None:
    args = {"seed": 0, "env_steps": 0, "train_steps": 1, "workdir": str(tmp_path)}
    good = [replica.run(args, TorchToy(True)) for _ in range(2)]
    bad = [replica.run(args, TorchToy(False)) for _ in range(2)]
    assert audit.compare_replicas(*good)["identical"]
    cmp = audit.compare_replicas(*bad)
    assert cmp["init"] is False and cmp["grad_step"] == 1 and cmp["losses"] is False
    assert "initial weights (2 tensors)" in audit.describe_difference(cmp)


def test_perturbing_global_generators_exposes_a_hidden_numpy_dependence(tmp_path: Path) -> None:
    args = {"seed": 0, "env_steps": 0, "train_steps": 1, "workdir": str(tmp_path)}
    toy = TorchToy(True, use_numpy_global=True)
    canon = {"python": 0, "numpy": 0, "torch": 0}
    base = replica.run({**args, "globals": canon}, toy)
    assert audit.compare_replicas(base, replica.run({**args, "globals": canon}, toy))["identical"]
    numpy_moved = replica.run({**args, "globals": {**canon, "numpy": 1}}, toy)
    torch_moved = replica.run({**args, "globals": {**canon, "torch": 1}}, toy)
    assert not audit.compare_replicas(base, numpy_moved)["identical"]
    assert audit.compare_replicas(base, torch_moved)["identical"]  # torch is reseeded by train itself


def test_seed_globals_sets_each_named_generator() -> None:
    import torch

    replica.seed_globals({"python": 0, "numpy": 0, "torch": 0})
    first = (random.random(), np.random.random(), float(torch.rand(1)))  # noqa: NPY002
    replica.seed_globals({"python": 0, "numpy": 0, "torch": 0})
    assert (random.random(), np.random.random(), float(torch.rand(1))) == first  # noqa: NPY002
    replica.seed_globals({"numpy": 1})
    assert np.random.random() != first[1]  # noqa: NPY002


def test_replica_errors_are_listed_per_replica() -> None:
    rep = {
        "fresh": [{"error": "replica timed out"}, {"env": {"error": "ValueError: x"}}],
        "in_process": {"same": {"train": {"error": "TypeError: y"}}},
    }
    errs = audit.replica_errors(rep)
    assert errs == [
        "fresh process 1: replica timed out",
        "fresh process 2 env: ValueError: x",
        "worker (same) train: TypeError: y",
    ]


def test_variance_table_pools_the_sds() -> None:
    out = audit.variance_table({"baseline": [1.0, 3.0], "candidate": [2.0, 2.0, 5.0]}, seed=0)
    assert out["baseline"]["sd"] == pytest.approx(np.sqrt(2.0))
    assert out["candidate"]["sd"] == pytest.approx(np.std([2.0, 2.0, 5.0], ddof=1))
    assert out["pooled_sd"] == pytest.approx(np.sqrt((1 * 2.0 + 2 * 3.0) / 3))


@pytest.mark.parametrize("fault", SEEDING_FAULTS)
def test_seeding_fault_is_flagged(bench: Any, flagged: Any, describe: Any, fault: str) -> None:
    sections = audit.audit_all(bench(f"builtin:reference+{fault}"))
    found = flagged(sections, "seeding")
    assert found, f"{fault} not flagged:\n" + "\n".join(describe(s.findings) for s in sections)
    assert any(f.id == "seeding/fresh-processes" and f.status.value == "CONFIRMED" for f in found), describe(
        found
    )


def test_identical_pair_stays_quiet(bench: Any, flagged: Any, describe: Any) -> None:
    sections = audit.audit_all(bench(parse_spec("builtin:reference", env={"RLAUDIT_AA_REPLICA": "1"})))
    assert not flagged(sections), describe(flagged(sections))
    variance = [f for s in sections for f in s.findings if f.id == "seeding/variance"]
    assert variance and variance[0].evidence.details.get("power_table"), (
        "the power table belongs in the findings"
    )


def test_power_table_gives_seeds_to_detect_and_to_clear() -> None:
    table = power.seeds_table(1.0, [0.5, 1.0, 2.0], baseline_mean=10.0)
    assert list(table["seeds_to_detect"]) == [64, 17, 6]  # as stats.power_seeds (noncentral t)
    assert list(table["seeds_per_arm"]) == [64, 17, 6]
    # TOST, no true difference: n = 2 (z_0.95 + z_0.90)^2 / (margin / sd)^2 = 17.1 -> 18 at margin 1 SD
    assert table["seeds_to_clear"][1] == 18
    assert list(table["effect (% of baseline mean)"]) == pytest.approx([5.0, 10.0, 20.0])
    assert power.seeds_needed(table, 1.5) == 17  # the 1.0 row: a smaller effect needs more seeds
    assert power.seeds_needed(table.to_dict("records"), 2.0, kind="clear") == table["seeds_to_clear"][2]
    assert power.seeds_needed(table, 0.1) is None
    with pytest.raises(ValueError, match="positive"):
        power.seeds_table(1.0, [0.0])


def test_table_effects_follow_the_baseline_mean_or_the_sd() -> None:
    assert power.table_effects(2.0, -40.0) == pytest.approx([2.0, 4.0, 10.0, 20.0])
    assert power.table_effects(2.0, 0.0) == pytest.approx([1.0, 2.0, 4.0])


def test_variance_reads_the_primary_metric_from_recorder_episodes(make_wb: Any) -> None:
    # The minimal subject reports returns through recorder.episode only: no logged scalar at all.
    subject = str(Path(__file__).resolve().parents[2] / "fixtures" / "minimal_train_subject.py")
    section = audit.variance(make_wb(subject, baseline=subject))
    (finding,) = section.findings
    assert finding.status.value == "NOTED", finding.headline
    details = finding.evidence.details
    assert details["metric"] == "return" and details["power_table"]
    assert {"seeds_to_detect", "seeds_to_clear"} <= set(details["power_table"][0])
    assert len(section.table(audit.POWER_TABLE)) == len(details["power_table"])


def test_replicas_compare_the_episodes_a_trainer_reports(tmp_path: Path) -> None:
    import minimal_train_subject as subject  # reports episodes only: no weights, no losses

    args = {"seed": 0, "env_steps": 0, "train_steps": 64, "workdir": str(tmp_path)}
    first, again = replica.run(args, subject), replica.run(args, subject)
    other = replica.run({**args, "seed": 1}, subject)
    same = audit.compare_replicas(first, again)
    assert same["identical"] and same["recorded"] == ["episode statistics"]
    assert same["init"] is None  # nothing recorded is nothing to compare, not "identical weights"
    assert audit.compare_replicas(first, other)["episodes"] is False


def test_a_subject_with_only_a_config_is_skipped_by_name(make_wb: Any) -> None:
    subject = str(Path(__file__).resolve().parents[2] / "fixtures" / "config_only_subject.py")
    findings = [f for s in audit.audit_all(make_wb(subject, baseline=subject)) for f in s.findings]
    assert {f.status.value for f in findings} == {"SKIPPED"}, "\n".join(f.headline for f in findings)
    needs = {"seeding/sub-envs": "make_env"}  # the others need a training run
    assert all(needs.get(f.id, "train") in f.evidence.summary for f in findings), [
        f.evidence.summary for f in findings
    ]


class _Noisy:
    """A toy subject: a vector of random walks, each drawing its noise from its own seeded generator."""

    def __init__(self, *, fixed_seed: int | None) -> None:
        self.fixed_seed = fixed_seed

    def config(self) -> dict[str, Any]:
        return {"num_envs": 4}

    def make_env(self, config: dict[str, Any], seed: int) -> Any:
        import gymnasium as gym
        from gymnasium import spaces

        fixed = self.fixed_seed

        class Walk(gym.Env):
            observation_space = spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float64)
            action_space = spaces.Discrete(2)

            def reset(self, *, seed=None, options=None):
                super().reset(seed=fixed if fixed is not None else seed)  # the fault: one seed for every env
                self.x = float(self.np_random.normal())
                return np.array([self.x]), {}

            def step(self, action):
                self.x += (1.0 if action else -1.0) + float(self.np_random.normal())
                return np.array([self.x]), 0.0, False, False, {}

        return gym.vector.SyncVectorEnv([Walk for _ in range(config["num_envs"])])


def _subenv_result(tmp_path: Path, subject: _Noisy, name: str) -> Any:
    from types import SimpleNamespace

    out = tmp_path / name
    probes.subenv_trajectories(probe_context(subject, out, ("config", "make_env")), seed=3, steps=6)
    data = json.loads((out / "trajectories.json").read_text())
    return SimpleNamespace(
        json=lambda artifact: data, missing=(), ok=True, error=None, probe="subenv_trajectories"
    )


def test_sub_environments_reset_with_one_seed_are_confirmed(tmp_path: Path) -> None:
    from rlaudit.engine.workbench import Pair
    from support.runs import bench

    apart = _subenv_result(tmp_path, _Noisy(fixed_seed=None), "apart")
    alike = _subenv_result(tmp_path, _Noisy(fixed_seed=7), "alike")
    (regressed,) = audit.sub_envs(bench(), given=Pair(baseline=apart, candidate=alike), seed=3).findings
    assert regressed.status.value == "CONFIRMED" and "replay one trajectory" in regressed.evidence.summary
    (fixed,) = audit.sub_envs(bench(), given=Pair(baseline=alike, candidate=apart), seed=3).findings
    assert fixed.status.value == "NOTED" and "a fix, not a regression" in fixed.evidence.summary
    (same,) = audit.sub_envs(bench(), given=Pair(baseline=apart, candidate=apart), seed=3).findings
    assert same.status.value == "CLEARED"
    assert audit.subenv_report(apart.json(""), 3) == {
        "num_envs": 4,
        "distinct": 4,
        "distinct_starts": 4,
        "seed_sensitive": True,
    }
