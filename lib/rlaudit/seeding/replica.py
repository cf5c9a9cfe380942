"""One seeded replica of a subject's environment rollout and training start, in this process or a fresh one.

A replica records digests, not data: per-step digests of a seeded environment rollout, a digest of the
initial weights (taken when ``train`` hands its policy to ``recorder.watch``), the gradient norm of every
optimizer step, the losses the trainer logs, a digest of the episodes it reports (``recorder.episode``), and
a digest of the final weights. Two replicas agree exactly
when the subject is seeded properly.

``python -m rlaudit.seeding.replica ARGS.json OUT.json`` runs one replica in a fresh interpreter: new hash
randomization, untouched global generators, no state left by earlier probes (the worker that runs the probe
starts these children with its own interpreter, environment and working directory).

Imports only the standard library and numpy at module level; torch and the subject are imported when used.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rlaudit.env.rollout import VecView, digest, flat_obs, sample_actions

GLOBAL_GENERATORS = ("python", "numpy", "torch")


def seed_globals(salts: Mapping[str, int]) -> None:
    """Put each named global generator (``python``, ``numpy``, ``torch``) in a state derived from its salt.

    Replicas run in one process start from the same salts (a canonical state) so that a subject that draws
    from a global generator behaves the same on every call; moving one generator's salt then shows whether
    the subject's results depend on it.
    """
    if "python" in salts:
        random.seed(1_000_003 + int(salts["python"]))
    if "numpy" in salts:
        # The legacy global generator is exactly what is being tested for hidden dependence.
        np.random.seed((1_000_033 + int(salts["numpy"])) % 2**32)  # noqa: NPY002
    if "torch" in salts:
        try:
            import torch
        except ImportError:
            return
        torch.manual_seed(1_000_037 + int(salts["torch"]))


def env_replica(subject: Any, config: dict[str, Any], seed: int, steps: int) -> dict[str, Any]:
    """``make_env(config, seed)``, ``reset(seed=seed)``, then ``steps`` steps of actions drawn from
    ``np.random.default_rng(seed)``; per-step digests of observations, rewards and episode ends."""
    env = subject.make_env(config, seed)
    try:
        view = VecView(env)
        n = view.num_envs
        obs = flat_obs(view.reset(seed=seed), n)
        actions = sample_actions(view.single_action_space, n, np.random.default_rng(seed), size=steps)
        digests = [digest(obs)]
        for a in actions:
            res = view.step(a)
            digests.append(digest(flat_obs(res.obs, n), res.reward, res.terminated, res.truncated))
    finally:
        getattr(env, "close", lambda: None)()
    return {"digests": digests, "final": digest(np.array(digests))}


class _CaptureRecorder:
    """Wraps the rlaudit Recorder: digests the weights when ``watch`` is called (the initial weights) and
    remembers the parameters for the final digest; everything else is delegated. Its tables are read from
    memory (``columns``), never written: the run directory is deleted afterwards, and a first write would import
    pandas and pyarrow, about a CPU-second in a fresh process."""

    def __init__(self, run_dir: Path) -> None:
        from rlaudit.recorder import Recorder

        self._rec = Recorder(run_dir, sample_every=1_000_000, flush_seconds=3600.0, write_tables=False)
        self.run_dir = self._rec.run_dir
        self.init: str | None = None
        self.init_tensors: dict[str, str] = {}
        self._policy: Any = None

    def watch(self, policy: Any, optimizer: Any) -> None:
        self._policy = policy
        self.init, self.init_tensors = weights_digest(policy)
        self._rec.watch(policy, optimizer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rec, name)

    def final(self) -> str | None:
        return weights_digest(self._policy)[0] if self._policy is not None else None


def weights_digest(policy: Any) -> tuple[str, dict[str, str]]:
    """A digest of a module's state dict (and one per tensor), in name order."""
    state = policy.state_dict()
    per = {}
    for name in sorted(state):
        value = state[name]
        arr = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
        per[name] = digest(arr)
    return digest(np.array(sorted(per.items()))), per


def train_replica(
    subject: Any, config: dict[str, Any], seed: int, steps: int, workdir: str
) -> dict[str, Any]:
    """``train(config, steps, seed, recorder)`` with a capturing recorder; returns digests and the traces."""
    run_dir = Path(tempfile.mkdtemp(prefix="replica-", dir=workdir))
    rec = _CaptureRecorder(run_dir)
    try:
        subject.train(config, steps, seed, rec)
    finally:
        rec.close()
    # Read the tables from the recorder as numpy columns: this runs in the subject's process, whose pandas may
    # be missing or built for another NumPy.
    updates = rec.columns("updates")
    scalars = rec.columns("scalars")
    episodes = rec.columns("episodes")
    losses: dict[str, list[float]] = {}
    names = [str(n) for n in scalars.get("name", [])]
    for name in sorted(set(names)):
        if "loss" in name.lower() or name.startswith("losses/"):
            values = [float(v) for n, v in zip(names, scalars["value"], strict=True) if n == name]
            losses[name] = values[:64]
    grad = list(updates["grad_norm"][:256]) if "grad_norm" in updates else []
    return {
        "init": rec.init,
        "init_tensors": rec.init_tensors,
        "grad_norms": [float(g) for g in grad],
        "losses": losses,
        "episodes": episodes_digest(episodes),
        "final": rec.final(),
    }


def episodes_digest(episodes: dict[str, Any] | None, rows: int = 256) -> str | None:
    """A digest of the first ``rows`` episodes' numeric statistics (step, env, return, ...), in column-name
    order; None when the trainer reported no episode.

    Args:
        episodes: The recorder's episodes table as columns (name -> array of equal length), or None.
    """
    if not episodes:
        return None
    numeric = [
        np.asarray(episodes[name])[:rows].astype(np.float64)
        for name in sorted(episodes)
        if np.issubdtype(np.asarray(episodes[name]).dtype, np.number)
        and not np.issubdtype(np.asarray(episodes[name]).dtype, np.bool_)
    ]
    if not numeric or not len(numeric[0]):
        return None
    return digest(np.stack(numeric, axis=1))


def run(args: dict[str, Any], subject: Any = None) -> dict[str, Any]:
    """Run the parts of a replica that ``args`` asks for, in this process.

    Args:
        args: ``spec`` (to load the subject when ``subject`` is None), ``seed``, ``env_steps`` (0: skip),
            ``train_steps`` (0: skip), ``globals`` (generator -> salt: the global generators' states to set
            before each part, see :func:`seed_globals`; absent: left as they are), ``workdir``.
        subject: An already loaded subject (in-process replicas).
    """
    started = time.perf_counter()
    if subject is None:
        from rlaudit.engine.subjects import load_subject, parse_spec

        subject = load_subject(parse_spec(args["spec"]))
        torch = sys.modules.get("torch")
        if torch is not None:  # one thread, as in the worker (and bitwise-stable across processes)
            from rlaudit.engine.worker import settings

            torch.set_num_threads(int(settings().torch_threads or 1))
    config_fn = getattr(subject, "config", None)
    config = dict(config_fn()) if callable(config_fn) else {}
    out: dict[str, Any] = {"pid": os.getpid(), "hashseed": os.environ.get("PYTHONHASHSEED")}
    for part, steps in (("env", int(args.get("env_steps", 0))), ("train", int(args.get("train_steps", 0)))):
        if not steps:
            continue
        if args.get("globals"):
            seed_globals(args["globals"])
        try:
            if part == "env":
                out[part] = env_replica(subject, config, int(args["seed"]), steps)
            else:
                out[part] = train_replica(subject, config, int(args["seed"]), steps, args["workdir"])
        except Exception as exc:  # a replica that fails is a result to report, not a crash
            out[part] = {"error": f"{type(exc).__name__}: {exc}"}
    out["seconds"] = time.perf_counter() - started
    return out


def spawn(args: dict[str, Any], workdir: str) -> tuple[subprocess.Popen[bytes], Path]:
    """Start a fresh interpreter running one replica; returns the process and its output file."""
    fd, args_path = tempfile.mkstemp(suffix=".json", dir=workdir)
    with os.fdopen(fd, "w") as f:
        json.dump(args, f)
    out_path = Path(args_path).with_suffix(".out.json")
    from rlaudit.engine.worker import settings

    # The same torch thread count as this worker, so floating-point reductions happen in the same order.
    torch = sys.modules.get("torch")
    threads = int(torch.get_num_threads()) if torch is not None else settings().torch_threads or 1
    env = replace(settings(), torch_threads=threads).environment(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlaudit.seeding.replica", args_path, str(out_path)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return proc, out_path


def collect(proc: subprocess.Popen[bytes], out_path: Path, timeout: float) -> dict[str, Any]:
    """Wait for a spawned replica and read its result (an ``error`` entry when it failed)."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return {"error": f"replica timed out after {timeout:.0f} s"}
    if proc.returncode != 0 or not out_path.exists():
        tail = (err or b"").decode("utf-8", "replace")[-1500:]
        return {"error": f"replica exited with code {proc.returncode}: {tail}"}
    return json.loads(out_path.read_text())


def _main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m rlaudit.seeding.replica ARGS.json OUT.json", file=sys.stderr)
        return 2
    args = json.loads(Path(argv[0]).read_text())
    result = run(args)
    tmp = Path(argv[1]).with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
