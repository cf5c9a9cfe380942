"""GPU subjects checked end to end: the built-in PPO and DQN pairs and the SB3 PPO pair, trained and probed on a
CUDA device.

On a machine with a GPU::

    python -m rlaudit.bench.gpu_check                 # the three pairs on cuda at the smoke profile
    python -m rlaudit.bench.gpu_check --only sb3 --json gpu.json
    python -m rlaudit.bench.gpu_check --only sb3dqn --timesteps 12000

Each pair runs every audit at the smoke profile in a fresh cache (workers train, probe and load checkpoints on
the device), then the summary says, per pair, how many findings there were, which checks ERRORed (none may),
and whether the findings that pair is known for came out flagged. Exit code 0 when every pair passed, 1 when
one did not, 2 when the device is not there. The tests marked ``gpu`` (``tests/test_gpu.py``) run the same
checks; ``--device cpu`` runs them on the CPU (the same code paths, for trying the script anywhere).

The subjects:

- the built-in pair with ``trainer.device`` set: the module specs ``rlaudit.bench.gpu_check:cuda.reference``
  and ``rlaudit.bench.gpu_check:cuda.regressed`` (``cpu.`` for the CPU), :class:`OnDevice`;
- the built-in off-policy pair the same way (``cuda.dqn`` and ``cuda.dqn_regressed``): ``builtin:dqn``
  against it with :data:`DQN_FAULTS`, its Q-network, target network and gradient steps on the device;
- the SB3 PPO CartPole pair of ``data/examples/sb3/`` with ``device:`` set, copied by :func:`sb3_setups`;
- on request (``--only sb3dqn``), the SB3 DQN CartPole pair of the same folder: SB3's off-policy learner, its
  gradient steps, replay buffer and target network on the device. Its 50k steps make it the costliest;
  ``--timesteps`` shortens the copies (the target-network finding needs more than the regressed side's
  10,000-step copy interval: 12,000 does).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

FLAGGED = ("SUSPECT", "CONFIRMED")

EXPECTED: dict[str, tuple[str, ...]] = {
    # the built-in regressed subject's mechanisms whose verdicts rest on no timing (tests/golden has them all)
    "builtin": (
        "config/changed-checkpointing",
        "config/changed-rewards",
        "loss/advantages-candidate",
        "optimizer/lr-schedule",
        "rewards/component-vanished",
    ),
    # the built-in DQN's faults of DQN_FAULTS, each caught by its own room's runtime check
    "dqn": ("loss/td-targets", "optimizer/target-network"),
    # data/examples/sb3/README.md: the two slips in the config and the lost schedule at runtime
    "sb3": ("config/changed-loss", "config/changed-optimizer", "optimizer/lr-schedule"),
    # data/examples/sb3/README.md, DQN: the target network copied every 10,000 env steps instead of every 10
    "sb3dqn": ("optimizer/target-network",),
}
"""Per pair, the findings that must come out flagged (SUSPECT or CONFIRMED) on any device."""

SB3_PAIRS: dict[str, tuple[str, str]] = {
    "sb3": ("ppo_cartpole.yaml", "ppo_cartpole_regressed.yaml"),
    "sb3dqn": ("dqn_cartpole.yaml", "dqn_cartpole_regressed.yaml"),
}
"""The SB3 pairs of ``data/examples/sb3``: PPO, and DQN (off-policy, several times PPO's cost; not a default)."""
SB3_EXAMPLES = SB3_PAIRS["sb3"]
DEFAULT_PAIRS = ("builtin", "dqn", "sb3")
"""What the script and the ``gpu`` tests run unless told otherwise."""
DQN_FAULTS = ("loss.done_mask_dropped", "optimizer.target_never_updated")
"""The built-in DQN's faults on the candidate side of the ``dqn`` pair: the TD target computed on the device,
and a target network whose copies (made on the device) stopped."""


class OnDevice:
    """A built-in subject whose config puts its network and its training on ``device``
    (``trainer.device``); every other capability is the built-in's own.

    Args:
        builtin: What follows ``builtin:`` in a spec (``"reference"``, ``"regressed"``, ``"reference+<fault>"``).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``.
    """

    def __init__(self, builtin: str, device: str) -> None:
        from rlaudit.demo.subject import load

        self._inner = load(builtin)
        self.builtin = builtin
        self.device = device

    def __repr__(self) -> str:
        return f"OnDevice({self.builtin!r}, {self.device!r})"

    def config(self, overrides: Sequence[str] | None = None) -> dict[str, Any]:
        """The built-in's config with ``trainer.device`` set (a later override of it still wins)."""
        return self._inner.config([f"trainer.device={self.device}", *(overrides or [])])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)


def _builtins(device: str) -> SimpleNamespace:
    return SimpleNamespace(
        reference=OnDevice("reference", device),
        regressed=OnDevice("regressed", device),
        dqn=OnDevice("dqn", device),
        dqn_regressed=OnDevice("dqn+" + ",".join(DQN_FAULTS), device),
    )


cuda = _builtins("cuda")
"""The built-in pairs on the first CUDA device (module specs ``rlaudit.bench.gpu_check:cuda.reference``,
``cuda.regressed``, ``cuda.dqn``, ``cuda.dqn_regressed``)."""
cpu = _builtins("cpu")
"""The built-in pairs on the CPU, through the same wrapper."""


def builtin_specs(device: str, off_policy: bool = False) -> tuple[str, str]:
    """The module specs of the built-in PPO pair (the DQN pair with ``off_policy``) on ``device`` (``"cpu"`` or
    ``"cuda"``)."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"the built-in pairs are declared for device cpu or cuda, got {device!r}")
    names = ("dqn", "dqn_regressed") if off_policy else ("reference", "regressed")
    return (f"rlaudit.bench.gpu_check:{device}.{names[0]}", f"rlaudit.bench.gpu_check:{device}.{names[1]}")


def sb3_setups(
    device: str,
    directory: str | Path,
    examples: str | Path | None = None,
    names: Sequence[str] = SB3_EXAMPLES,
    timesteps: int | None = None,
) -> tuple[str, str]:
    """Copies of an SB3 CartPole pair (``data/examples/sb3``; PPO unless ``names`` says otherwise) with
    ``device: <device>`` (and ``n_timesteps: <timesteps>`` when given), as ``sb3:`` specs.

    Raises:
        ValueError: ``timesteps`` below 1.
        FileNotFoundError: The example files are not there (a checkout without ``data/examples``).
    """
    from rlaudit.engine.paths import home

    if timesteps is not None and int(timesteps) < 1:
        raise ValueError(f"timesteps must be a whole number of environment steps >= 1, got {timesteps!r}")
    source = Path(examples) if examples is not None else home() / "data" / "examples" / "sb3"
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    specs = []
    for name in names:
        path = source / name
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: the SB3 pair is read from the checkout's data/examples/sb3; pass examples= "
                "(or --examples) pointing at a directory holding " + " and ".join(names)
            )
        text = path.read_text()
        replaced = ("device:", "n_timesteps:") if timesteps is not None else ("device:",)
        lines = [line for line in text.splitlines() if not line.startswith(replaced)]
        lines.append(f"device: {device}")
        if timesteps is not None:
            lines.append(f"n_timesteps: {int(timesteps)}")
        out = target / f"{path.stem}_{device.replace(':', '')}.yaml"
        out.write_text("\n".join([*lines, ""]))
        specs.append(f"sb3:{out}")
    return specs[0], specs[1]


@dataclass
class PairResult:
    """What one pair's audits gave: the verdicts, and whether they pass."""

    pair: str
    baseline: str
    candidate: str
    seconds: float
    findings: int
    errors: list[str] = field(default_factory=list)  # "id: summary" of every ERROR finding
    missing: list[str] = field(default_factory=list)  # expected findings not flagged: "id (status)"
    flagged: list[str] = field(default_factory=list)  # "id STATUS" of every flagged finding
    seeding: list[str] = field(default_factory=list)  # "id STATUS" of the seeding room (determinism on CUDA)

    @property
    def passed(self) -> bool:
        return not self.errors and not self.missing


def evaluate(pair: str, baseline: str, candidate: str, findings: Iterable[Any], seconds: float) -> PairResult:
    """Judge one pair's findings: no ERROR, and every finding of :data:`EXPECTED` flagged."""
    found = list(findings)
    status = {f.id: str(getattr(f.status, "value", f.status)) for f in found}
    result = PairResult(pair, baseline, candidate, round(seconds, 1), len(found))
    for f in found:
        value = status[f.id]
        if value == "ERROR":
            result.errors.append(f"{f.id}: {f.evidence.summary or f.hypothesis}")
        if value in FLAGGED:
            result.flagged.append(f"{f.id} {value}")
        if f.id.startswith("seeding/"):
            result.seeding.append(f"{f.id} {value}")
    for wanted in EXPECTED[pair]:
        if status.get(wanted) not in FLAGGED:
            result.missing.append(f"{wanted} ({status.get(wanted, 'absent')})")
    return result


def run_pair(pair: str, baseline: str, candidate: str, profile: str = "smoke") -> PairResult:
    """Every audit of one pair at ``profile`` in the cache ``RLAUDIT_CACHE`` names, judged by :func:`evaluate`."""
    from rlaudit.engine.workbench import Workbench
    from rlaudit.rooms import run_audits

    start = time.perf_counter()
    wb = Workbench(baseline, candidate, profile=profile)
    try:
        findings = list(run_audits(wb))
    finally:
        wb.close()
    return evaluate(pair, baseline, candidate, findings, time.perf_counter() - start)


def device_line(device: str) -> str:
    """What the device is (name, CUDA build), or why it is not there; raises nothing."""
    try:
        from rlaudit.devices import describe, resolve_device

        return describe(resolve_device(device))
    except (ImportError, ValueError) as exc:
        return f"unavailable: {exc}"


def check(
    device: str = "cuda",
    only: Sequence[str] = DEFAULT_PAIRS,
    profile: str = "smoke",
    workdir: str | Path | None = None,
    examples: str | Path | None = None,
    timesteps: int | None = None,
) -> list[PairResult]:
    """Run the pairs named in ``only`` on ``device`` in a fresh cache under ``workdir`` (a temporary directory
    by default). Workers inherit this process's environment: ``RLAUDIT_CACHE`` is set to that cache,
    ``CUBLAS_WORKSPACE_CONFIG`` to ``:4096:8`` unless set (deterministic cuBLAS), and ``RLAUDIT_WORKER_MEMORY_MB``
    is removed (it caps virtual memory, and CUDA maps far more address space than it uses)."""
    root = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="rlaudit-gpu-check-"))
    os.environ["RLAUDIT_CACHE"] = str(root / "cache")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    os.environ.pop("RLAUDIT_WORKER_MEMORY_MB", None)
    return [run_pair(pair, *pair_specs(pair, device, root, examples, timesteps), profile) for pair in only]


def pair_specs(
    pair: str,
    device: str,
    root: str | Path,
    examples: str | Path | None = None,
    timesteps: int | None = None,
) -> tuple[str, str]:
    """The specs of ``pair`` (``builtin``, ``dqn``, ``sb3`` or ``sb3dqn``) on ``device``; the SB3 copies go under
    ``root/<pair>``, with ``n_timesteps`` set to ``timesteps`` when given (the built-in pairs keep theirs)."""
    if pair in ("builtin", "dqn"):
        return builtin_specs(device.split(":")[0], off_policy=pair == "dqn")
    if pair in SB3_PAIRS:
        return sb3_setups(device, Path(root) / pair, examples, SB3_PAIRS[pair], timesteps)
    raise ValueError(f"unknown pair {pair!r}; expected builtin, dqn, {' or '.join(SB3_PAIRS)}")


def summary(results: Sequence[PairResult], device: str) -> str:
    """The printed summary: the device, then per pair its verdict, time, errors and missing findings."""
    lines = [f"device: {device_line(device)}"]
    for r in results:
        lines.append(
            f"{r.pair}: {'PASS' if r.passed else 'FAIL'}  {r.findings} findings, {len(r.errors)} ERROR, "
            f"{len(r.flagged)} flagged, {r.seconds:.0f} s  ({r.baseline} vs {r.candidate})"
        )
        lines.extend(f"  ERROR {e}" for e in r.errors)
        lines.extend(f"  expected flagged, got {m}" for m in r.missing)
        lines.append(f"  flagged: {', '.join(r.flagged) or 'none'}")
        lines.append(f"  seeding: {', '.join(r.seeding) or 'none'}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rlaudit.bench.gpu_check", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--device", default="cuda", help="torch device of both pairs (default cuda)")
    parser.add_argument(
        "--only",
        default=",".join(DEFAULT_PAIRS),
        help=f"comma-separated pairs: builtin, dqn, sb3, sb3dqn (default {','.join(DEFAULT_PAIRS)})",
    )
    parser.add_argument(
        "--timesteps", type=int, default=None, help="n_timesteps of the SB3 copies (default: each file's own)"
    )
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--workdir", default=None, help="cache and SB3 copies go here (default: a temp dir)")
    parser.add_argument("--examples", default=None, help="directory of the SB3 example YAMLs")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    line = device_line(args.device)
    if line.startswith("unavailable"):
        print(f"device {args.device}: {line}", file=sys.stderr)
        return 2
    only = [p.strip() for p in args.only.split(",") if p.strip()]
    results = check(args.device, only, args.profile, args.workdir, args.examples, args.timesteps)
    print(summary(results, args.device), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps([{**asdict(r), "passed": r.passed} for r in results], indent=2))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
