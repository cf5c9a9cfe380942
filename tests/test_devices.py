"""Subjects on another device than the CPU, tested on the CPU.

A network on torch's ``meta`` device refuses inputs on the CPU ("Tensor on device meta is not on the expected
device cpu!") just as one on a GPU does, so a probe that forgets to move what it feeds a module fails here too.
A fake policy that says it lives on ``meta`` (and computes on the CPU) records where each input reached it, for
the probes that need real outputs back. The same probes run on CUDA in ``tests/test_gpu.py``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from rlaudit import devices
from rlaudit.devices import module_device, to_device, to_numpy

LIB = Path(__file__).resolve().parents[1] / "lib" / "rlaudit"


# -- the helpers --------------------------------------------------------------------------------------------------


def test_to_device_and_back() -> None:
    x = to_device(np.arange(6, dtype=np.float64).reshape(2, 3), "meta", "float32")
    assert x.device.type == "meta" and x.dtype == torch.float32 and tuple(x.shape) == (2, 3)
    tree = to_device({"a": np.zeros(3), "b": (np.ones(2, dtype=np.int64), [1, 2])}, "meta")
    assert tree["a"].device.type == "meta" and tree["b"][0].dtype == torch.int64
    assert tree["b"][1].device.type == "meta" and tuple(tree["b"][1].shape) == (2,)  # a list is one tensor
    t = torch.ones(3)
    assert to_device(t, "cpu") is t  # already there: no copy, the same tensor (trace_forward relies on it)
    back = to_numpy({"x": torch.tensor([1.5, 2.5], dtype=torch.bfloat16, requires_grad=True), "n": 3})
    assert back["x"].dtype == np.float32 and back["x"].tolist() == [1.5, 2.5] and back["n"] == 3
    with pytest.raises(ValueError, match="unknown torch dtype 'float99'"):
        to_device(np.zeros(2), "cpu", "float99")


def test_module_device_reads_parameters_buffers_or_the_device_attribute() -> None:
    assert module_device(torch.nn.Linear(2, 2, device="meta")).type == "meta"
    buffered = torch.nn.BatchNorm1d(2, affine=False).to("meta")
    assert module_device(buffered).type == "meta"

    class Sb3Like:  # Stable-Baselines3's policies say where they are in a `device` property
        device = torch.device("meta")

    assert module_device(Sb3Like()).type == "meta"
    assert module_device(torch.nn.ReLU()).type == "cpu"


def test_resolve_device_names_what_to_set_instead() -> None:
    assert devices.resolve_device("cpu").type == "cpu"
    assert devices.resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match=r"is not a torch device.*expected cpu, cuda, cuda:N or auto"):
        devices.resolve_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"asks for device 'cuda'.*set the device to cpu"):
            devices.resolve_device("cuda")
    devices.synchronize(torch.device("cpu"))  # a no-op off CUDA
    assert devices.describe(torch.device("cpu")) == "cpu"


def test_machine_accelerators_reads_the_driver_lists(tmp_path: Path) -> None:
    nvidia, kfd = tmp_path / "nvidia", tmp_path / "kfd"
    (nvidia / "0000:01:00.0").mkdir(parents=True)
    (nvidia / "0000:01:00.0" / "information").write_text("Model: \t NVIDIA H100 80GB HBM3\nIRQ: 1\n")
    for node, name, gpu_id in (("0", "", "0"), ("1", "gfx90a", "1234")):
        (kfd / node).mkdir(parents=True)
        (kfd / node / "name").write_text(name + "\n")
        (kfd / node / "gpu_id").write_text(gpu_id + "\n")
    found = devices.machine_accelerators({"CUDA_VISIBLE_DEVICES": "1", "PATH": "/bin"}, nvidia, kfd, tmp_path)
    assert found == {
        "gpus": ["AMD gfx90a", "NVIDIA H100 80GB HBM3"],
        "visible": {"CUDA_VISIBLE_DEVICES": "1"},
    }
    none = tmp_path / "none"
    assert devices.machine_accelerators({}, none, none, none) == {"gpus": [], "visible": {}}
    (tmp_path / "dev").mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        (tmp_path / "dev" / name).touch()
    hidden = devices.machine_accelerators({}, none, none, tmp_path / "dev")  # /proc/driver/nvidia masked
    assert hidden["gpus"] == ["NVIDIA GPU", "NVIDIA GPU"]


# -- probes feed the module's device ---------------------------------------------------------------------------


def test_tracing_moves_observations_to_the_network(tmp_path: Path) -> None:
    from rlaudit.agents.nets import as_tensors, call_policy, trace_forward

    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)).to("meta")
    obs = as_tensors(np.zeros((5, 4), dtype=np.float32))  # on the CPU, as the probes build them
    trace = trace_forward(net, obs, keep_tensors=False)
    assert [c["path"] for c in trace.calls] == ["0", "1", "2"] and trace.calls[0]["sources"] == ["obs"]
    assert call_policy(net, obs) == "forward"

    class CleanRLStyle(torch.nn.Module):  # no forward: called as get_action_and_value(obs, action)
        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Linear(4, 3)

        def get_action_and_value(self, x: Any, action: Any) -> Any:
            assert action.device == x.device == self.body.weight.device
            return self.body(x)

    assert call_policy(CleanRLStyle().to("meta"), obs) == "get_action_and_value"


class ElsewherePolicy(torch.nn.Module):
    """A policy that says it lives on ``meta`` (its ``device``, as SB3's policies say it) and records the device
    of every tensor it is given; it computes on the CPU, so the probes get real numbers back."""

    device = torch.device("meta")

    def __init__(self, n_actions: int = 2) -> None:
        super().__init__()
        self.n_actions = n_actions
        self.seen: list[str] = []
        self.w = torch.zeros(1, requires_grad=True)  # a plain attribute: the fake has no parameters

    def _see(self, *tensors: Any) -> None:
        self.seen.extend(t.device.type for t in tensors if isinstance(t, torch.Tensor))

    def get_value(self, x: Any) -> Any:
        self._see(x)
        return torch.zeros(x.shape[0])

    def get_action_and_value(self, x: Any, action: Any = None) -> Any:
        self._see(x, action)
        n = x.shape[0]
        if action is None:
            action = torch.zeros(n, dtype=torch.long)
        logprob = torch.full((n,), -float(np.log(self.n_actions)))
        return action, logprob, torch.ones(n), torch.zeros(n) + self.w


class ElsewhereSubject:
    """CartPole with :class:`ElsewherePolicy`; its loss checks where the batch reached it."""

    def __init__(self) -> None:
        self.policies: list[ElsewherePolicy] = []

    def config(self) -> dict[str, Any]:
        return {"trainer": {"gamma": 0.99, "gae_lambda": 0.95}}

    def make_env(self, config: dict[str, Any], seed: int) -> Any:
        import gymnasium as gym

        return gym.make("CartPole-v1")

    def make_policy(self, config: dict[str, Any], observation_space: Any, action_space: Any) -> Any:
        self.policies.append(ElsewherePolicy(int(action_space.n)))
        return self.policies[-1]

    def compute_advantages(
        self, config: dict[str, Any], rewards: Any, values: Any, dones: Any, next_value: Any
    ):
        from rlaudit.demo import ppo

        return ppo.compute_advantages({}, rewards, values, dones, next_value)

    def compute_loss(self, config: dict[str, Any], policy: Any, batch: dict[str, Any]) -> dict[str, Any]:
        policy._see(*batch.values())
        _, _, entropy, value = policy.get_action_and_value(batch["obs"], batch["actions"])
        value_loss = (value**2).mean()
        return {"loss": value_loss - 0.01 * entropy.mean(), "value_loss": value_loss}


def test_loss_probes_feed_the_policy_on_its_device(tmp_path: Path, tmp_cache: Path) -> None:
    from rlaudit.loss import inputs as staged
    from rlaudit.loss.probes import action_probs, loss_terms, policy_outputs, rollout_loss, term_sweep
    from support.probing import probe_context

    subject = ElsewhereSubject()
    caps = ("config", "make_env", "make_policy", "compute_advantages", "compute_loss")
    ctx = probe_context(subject, tmp_path / "rollout", caps)
    assert rollout_loss(ctx, seed=0, steps=64)["samples"] == 64
    rng = np.random.default_rng(0)
    batch = {
        "obs": rng.normal(size=(8, 4)).astype(np.float32),
        "actions": rng.integers(0, 2, size=8),
        **{k: rng.normal(size=8).astype(np.float32) for k in ("logprobs", "advantages", "returns", "values")},
    }
    path = staged.stage(batch)
    policy_outputs(probe_context(subject, tmp_path / "outputs", caps), obs=path)
    loss_terms(probe_context(subject, tmp_path / "terms", caps), batch=path)
    sweep = staged.stage({f"b{i}_{k}": v for i in range(2) for k, v in batch.items()})
    assert term_sweep(probe_context(subject, tmp_path / "sweep", caps), batches=sweep)["batches"] == 2
    probs = action_probs(subject.policies[0], batch["obs"], 2)
    assert np.allclose(probs, 0.5)
    seen = [d for policy in subject.policies for d in policy.seen]
    assert len(seen) > 100 and set(seen) == {"meta"}, f"inputs reached the policy on {sorted(set(seen))}"


def test_a_builtin_policy_follows_the_config_device() -> None:
    from rlaudit.bench.gpu_check import cpu
    from rlaudit.demo import ppo
    from rlaudit.demo.config import DemoConfig

    config = cpu.reference.config()
    assert config["trainer"]["device"] == "cpu"
    assert cpu.reference.config(["trainer.device=auto"])["trainer"]["device"] == "auto"
    env = cpu.reference.make_env(config, 0)
    try:
        spaces = (env.single_observation_space, env.single_action_space)
    finally:
        env.close()
    assert module_device(cpu.reference.make_policy(config, *spaces)).type == "cpu"
    assert ppo._debug_mode(DemoConfig.from_dict(config))  # the debug-mode fault: true off CUDA
    if not torch.cuda.is_available():
        config["trainer"]["device"] = "cuda"
        with pytest.raises(ValueError, match="asks for device 'cuda'"):
            ppo.make_policy(config, *spaces)


def test_the_builtin_dqn_follows_the_config_device() -> None:
    from rlaudit.bench.gpu_check import cpu
    from rlaudit.demo import dqn

    config = cpu.dqn.config()
    assert config["trainer"]["device"] == "cpu" == dqn.default_config()["trainer"]["device"]
    assert cpu.dqn_regressed.config(["trainer.device=auto"])["trainer"]["device"] == "auto"
    env = cpu.dqn.make_env(config, 0)
    try:
        spaces = (env.single_observation_space, env.single_action_space)
        obs = np.asarray(env.reset(seed=0)[0], dtype=np.float32)
    finally:
        env.close()
    policy = cpu.dqn.make_policy(config, *spaces)
    assert module_device(policy).type == "cpu" and module_device(policy.q_net_target).type == "cpu"
    batch = {"obs": obs, "next_obs": obs, "rewards": np.ones(len(obs)), "terminated": np.ones(len(obs))}
    out = cpu.dqn.compute_td_targets(config, policy, batch)
    assert isinstance(out["targets"], np.ndarray) and np.allclose(out["targets"], 1.0)  # terminal: r alone
    assert out["bootstrap"].shape == (len(obs),)
    if not torch.cuda.is_available():
        config["trainer"]["device"] = "cuda"
        with pytest.raises(ValueError, match="asks for device 'cuda'"):
            dqn.make_policy(config, *spaces)


# -- no probe feeds a module a tensor it made on the CPU ---------------------------------------------------------

MAKERS = {"as_tensor", "tensor", "from_numpy", "zeros", "ones", "full", "arange", "empty", "randn", "rand"}
OWN_WORK = {("trainer/probes.py", "_calibrate")}
"""Functions whose tensors never reach a subject's module (the trainer probe's calibration network)."""


def _receiver_calls(node: ast.AST) -> list[str]:
    """Method names called along a receiver chain (``x.detach().cpu().double()`` -> double, cpu, detach)."""
    names = []
    while isinstance(node, ast.Call | ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            names.append(node.func.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    return names


def _is_dtype(node: ast.AST) -> bool:
    """``torch.float32``, ``x.dtype``, ``own[k].dtype``: an argument of ``.to`` that names a dtype."""
    return isinstance(node, ast.Attribute) and (
        node.attr == "dtype" or (isinstance(node.value, ast.Name) and node.value.id == "torch")
    )


def violations(source: str, relative: str) -> list[str]:
    """Tensors made without ``device=`` (and not moved with ``.to(...)`` at once), and ``.numpy()`` without a
    ``.cpu()`` before it, in the functions of ``source`` (but :data:`OWN_WORK`)."""
    tree = ast.parse(source)
    moved = {  # torch.from_numpy(x).to(device): made and moved at once (a .to(dtype) moves nothing)
        id(node.func.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and isinstance(node.func.value, ast.Call)
        and (any(k.arg == "device" for k in node.keywords) or (node.args and not _is_dtype(node.args[0])))
    }
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or (relative, fn.name) in OWN_WORK:
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            func, where = node.func, f"{relative}:{node.lineno}"
            if (
                isinstance(func.value, ast.Name)
                and func.value.id == "torch"
                and func.attr in MAKERS
                and not any(k.arg == "device" for k in node.keywords)
                and id(node) not in moved
            ):
                out.append(f"{where}: torch.{func.attr}(...) without device= (use rlaudit.devices.to_device)")
            if func.attr == "numpy" and "cpu" not in _receiver_calls(func.value):
                out.append(f"{where}: .numpy() without .cpu() first (use rlaudit.devices.to_numpy)")
    return sorted(set(out))


def test_probes_move_what_they_feed_and_bring_results_back() -> None:
    """Every probe module (and the network helpers they call) makes tensors on a device it names and reads
    them back through the CPU: a bare ``torch.as_tensor(x)`` lands on the CPU, where a GPU network refuses it."""
    files = [*sorted(LIB.glob("*/probes.py")), LIB / "agents" / "nets.py", LIB / "metrics.py"]
    assert len(files) >= 14
    found = [v for f in files for v in violations(f.read_text(), f.relative_to(LIB).as_posix())]
    assert not found, "\n".join(found)


def test_the_lint_sees_a_bare_tensor() -> None:
    source = (
        "import torch\n"
        "def f(x, policy, device):\n"
        "    y = policy(torch.as_tensor(x)).numpy()\n"
        "    z = policy(torch.from_numpy(x).to(device)).detach().cpu().numpy()\n"
        "    w = policy(torch.as_tensor(x).to(torch.float32))\n"
        "    return y, z, w, torch.zeros(3, device=device)\n"
    )
    assert violations(source, "room/probes.py") == [
        "room/probes.py:3: .numpy() without .cpu() first (use rlaudit.devices.to_numpy)",
        "room/probes.py:3: torch.as_tensor(...) without device= (use rlaudit.devices.to_device)",
        "room/probes.py:5: torch.as_tensor(...) without device= (use rlaudit.devices.to_device)",
    ]


# -- the recorder times the GPU's work ---------------------------------------------------------------------------


def test_phases_synchronize_a_cuda_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rlaudit.recorder import Recorder

    synced: list[Any] = []
    monkeypatch.setattr(devices, "is_cuda", lambda device: True)  # the meta network stands in for a GPU's
    monkeypatch.setattr(devices, "describe", lambda device: "cuda:0 Fake GPU (CUDA 12.4)")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(device))
    net = torch.nn.Linear(2, 2).to("meta")
    rec = Recorder(tmp_path / "run")
    rec.watch(net, torch.optim.SGD(net.parameters(), lr=0.1))
    with rec.phase("update"):
        pass
    assert len(synced) == 2 and synced[0].type == "meta"  # on entering and on leaving the phase
    rec.close()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["device"] == "cuda:0 Fake GPU (CUDA 12.4)" and "sps_wall" in summary
    assert len(synced) == 3  # and before the totals at close


def test_a_cpu_policy_is_not_synchronized(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rlaudit.recorder import Recorder

    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: pytest.fail("synchronized a CPU run"))
    net = torch.nn.Linear(2, 2)
    with Recorder(tmp_path / "run") as rec:
        rec.watch(net, torch.optim.SGD(net.parameters(), lr=0.1))
        with rec.phase("update"):
            pass
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["device"] == "cpu"


def test_speed_reads_wall_time_for_a_run_on_cuda(tmp_path: Path) -> None:
    from rlaudit.trainer.runs import RUN_SUBDIR, RunData

    def run(device: str) -> RunData:
        directory = tmp_path / device
        (directory / RUN_SUBDIR).mkdir(parents=True)
        summary = {"sps_cpu": 100.0, "sps_wall": 40.0, "device": device}
        (directory / RUN_SUBDIR / "summary.json").write_text(json.dumps(summary))
        return RunData("baseline", 0, directory)

    assert run("cpu").cpu_per_step == pytest.approx(1 / 100)
    assert run("cuda:0 NVIDIA H100 (CUDA 12.4)").cpu_per_step == pytest.approx(1 / 40)


# -- the cache tells a GPU's results from a CPU's ----------------------------------------------------------------


def test_the_fingerprint_records_the_gpus(monkeypatch: pytest.MonkeyPatch, tmp_cache: Path) -> None:
    from rlaudit.engine import fingerprint
    from rlaudit.engine.subjects import parse_spec

    spec = parse_spec("builtin:reference")
    monkeypatch.setattr(devices, "machine_accelerators", lambda env=None: {"gpus": [], "visible": {}})
    on_cpu = fingerprint.fingerprint_details(spec)
    assert "device" not in on_cpu  # a CPU machine's fingerprints stay what they were

    def gpus(names: list[str], visible: str = "0") -> Any:
        return lambda env=None: {"gpus": names, "visible": {"CUDA_VISIBLE_DEVICES": visible}}

    monkeypatch.setattr(devices, "machine_accelerators", gpus(["NVIDIA H100 80GB HBM3"]))
    h100 = fingerprint.fingerprint_details(spec)
    assert (
        h100["device"]["gpus"] == ["NVIDIA H100 80GB HBM3"] and h100["device"]["torch"] == torch.__version__
    )
    monkeypatch.setattr(devices, "machine_accelerators", gpus(["NVIDIA H200"]))
    h200 = fingerprint.fingerprint_details(spec)
    ids = {fingerprint.base_fingerprint(spec, details=d) for d in (on_cpu, h100, h200)}
    assert len(ids) == 3, "a GPU's results must not be reused for a CPU run or for another card"


# -- the GPU check script, on the CPU ----------------------------------------------------------------------------


def test_the_gpu_checks_subjects_load_as_specs(tmp_path: Path) -> None:
    from rlaudit.adapters.sb3.setup import read_setup, resolve_setup
    from rlaudit.bench import gpu_check
    from rlaudit.engine.subjects import capabilities, load_subject, parse_spec

    base, cand = gpu_check.builtin_specs("cuda")
    subject = load_subject(parse_spec(base))
    assert isinstance(subject, gpu_check.OnDevice) and subject.config()["trainer"]["device"] == "cuda"
    assert load_subject(parse_spec(cand)).config()["trainer"]["device"] == "cuda"
    assert capabilities(subject) == capabilities(load_subject(parse_spec("builtin:reference")))
    with pytest.raises(ValueError, match="device cpu or cuda"):
        gpu_check.builtin_specs("cuda:1")
    base, cand = (load_subject(parse_spec(s)) for s in gpu_check.pair_specs("dqn", "cuda", tmp_path))
    assert base.builtin == "dqn" and base.config()["trainer"]["device"] == "cuda"
    assert [f.id for f in cand.faults] == list(gpu_check.DQN_FAULTS)
    assert capabilities(base) == capabilities(load_subject(parse_spec("builtin:dqn")))
    specs = gpu_check.sb3_setups("cuda:1", tmp_path)
    for spec in specs:
        path = Path(spec.removeprefix("sb3:"))
        assert resolve_setup(read_setup(path), path.parent)["device"] == "cuda:1"
    with pytest.raises(FileNotFoundError, match="data/examples/sb3"):
        gpu_check.sb3_setups("cuda", tmp_path / "x", examples=tmp_path / "nowhere")
    dqn = gpu_check.pair_specs("sb3dqn", "cuda", tmp_path)
    for spec, name in zip(dqn, gpu_check.SB3_PAIRS["sb3dqn"], strict=True):
        path = Path(spec.removeprefix("sb3:"))
        assert path.parent == tmp_path / "sb3dqn" and path.name.startswith(Path(name).stem)
        setup = resolve_setup(read_setup(path), path.parent)
        assert setup["device"] == "cuda" and setup["algo"].lower() == "dqn"
    short = gpu_check.pair_specs("sb3dqn", "cuda", tmp_path / "short", timesteps=12_000)
    assert all(resolve_setup(read_setup(p), p.parent)["n_timesteps"] == 12_000 for p in _paths(short))
    assert all(resolve_setup(read_setup(p), p.parent)["n_timesteps"] == 50_000 for p in _paths(dqn))
    with pytest.raises(ValueError, match="timesteps must be a whole number"):
        gpu_check.sb3_setups("cuda", tmp_path / "zero", timesteps=0)
    with pytest.raises(ValueError, match="expected builtin, dqn, sb3 or sb3dqn"):
        gpu_check.pair_specs("sac", "cuda", tmp_path)


def _paths(specs: tuple[str, str]) -> list[Path]:
    return [Path(spec.removeprefix("sb3:")) for spec in specs]


def test_the_gpu_check_judges_findings() -> None:
    from rlaudit.bench import gpu_check
    from rlaudit.findings import Finding

    def finding(fid: str, status: str) -> Finding:
        return Finding(id=fid, subsystem=fid.split("/")[0], hypothesis=f"{fid}?", status=status)

    good = [finding(f, "SUSPECT") for f in gpu_check.EXPECTED["sb3"]] + [
        finding("seeding/determinism", "CLEARED")
    ]
    result = gpu_check.evaluate("sb3", "a", "b", good, 12.3)
    assert result.passed and result.seeding == ["seeding/determinism CLEARED"] and len(result.flagged) == 3
    bad = [*good[1:], finding("loss/terms", "ERROR")]
    result = gpu_check.evaluate("sb3", "a", "b", bad, 1.0)
    assert not result.passed
    assert result.missing == ["config/changed-loss (absent)"] and result.errors == ["loss/terms: loss/terms?"]
    text = gpu_check.summary([result], "cpu")
    assert text.splitlines()[0] == "device: cpu" and "sb3: FAIL" in text and "ERROR loss/terms" in text


def test_the_gpu_check_stops_without_the_device(capsys: pytest.CaptureFixture[str]) -> None:
    from rlaudit.bench import gpu_check

    if torch.cuda.is_available():
        pytest.skip("this machine has the device")
    assert gpu_check.main(["--device", "cuda"]) == 2
    assert "device cuda: unavailable" in capsys.readouterr().err
