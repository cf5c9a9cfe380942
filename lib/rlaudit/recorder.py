"""Runtime instrumentation handed to a subject's ``train``: what actually happened, as tidy tables.

A config says what a trainer was *told* to do; the recorder writes down what it *did*. ``watch`` hooks the
optimizer, so a learning-rate schedule that sits in the config but is disabled in the code shows up as a flat
``lr`` column, and a loss that stopped sending gradient to a layer shows up as a zero ``grad_norm``.

Tables (one file each under ``run_dir``, written with :func:`rlaudit.engine.io.write_table`, so parquet or npz):

=========  =====================================================================================
scalars    step, name, value: whatever the trainer passed to :meth:`Recorder.log`
episodes   step, env, plus the stats passed to :meth:`Recorder.episode` (return, length, heart.get, ...)
updates    update, step, group, lr (and every other numeric param-group hyperparameter), grad_norm,
           grad_norm_clipped: one row per optimizer step and param group
layers     update, step, layer, grad_norm, weight_norm, update_ratio: every ``sample_every`` optimizer
           steps, one row per parameter tensor
phases     name, count, seconds: total wall time in each (nested) phase, by full path ("rollout/env");
           the names are the trainer's own (any strings); with a watched policy on CUDA, each phase
           starts and ends with ``torch.cuda.synchronize``, so it holds its GPU work
memory     step, seconds, rss_bytes: sampled by the recorder itself every ``memory_seconds`` of wall
           time (on any recorder call, and once more at close), and on every
           :meth:`Recorder.sample_memory` call
=========  =====================================================================================

The optional ``minibatches`` table (step, epoch, minibatch, position, index) says which samples formed each
minibatch of the first :data:`MINIBATCH_UPDATES` updates, when the trainer calls :meth:`Recorder.minibatch`.

Off-policy learners (replay buffers, target networks) add four optional tables, each written once it has a row:

=============  ==============================================================================================
gradient_steps step, gradient_steps, batch_size[, actor_updates]: :meth:`Recorder.update`, the gradient steps
               taken at an env step (replay ratio, ``learning_starts``, ``train_freq``, batch size) and, for an
               actor-critic, the actor's updates among them (TD3's delayed actor updates; absent or NaN where
               not given)
targets        step, gradient_step, tau, source: a target-network update, ``reported`` by the trainer through
               :meth:`Recorder.target_update`, or ``measured`` by the recorder itself (see below)
exploration    step, epsilon, alpha, target_entropy, action_noise: :meth:`Recorder.exploration` (NaN where not given)
replay         step, size, capacity, nbytes, age_p10, age_p50, age_p90, age_mean, age_n, prioritized:
               :meth:`Recorder.replay`, the buffer's fill and the ages of a sampled batch's transitions
=============  ==============================================================================================

When the recorder knows the subject's target networks (``target_networks=``, a function of the policy giving
``{target prefix: online prefix}``, as the subject capability does) and the trainer calls :meth:`watch`, it
measures every target update itself: before each optimizer step it compares the target parameters with their
last copy, and when they moved it records the update with ``tau = |θ'_target - θ_target| / |θ_online -
θ_target|`` (1 for a hard copy, the Polyak coefficient otherwise). A trainer that never reports its target
updates is measured all the same.

``summary.json`` (steps, seconds, sps, sps_cpu, sps_wall, device, updates, episodes, torch_threads) is written by
:meth:`Recorder.close`;
``nonfinite`` there names where the run diverged (``step``, ``quantity``, ``value``), or is None: the earliest
NaN or infinity of a quantity that stayed non-finite to the end of the run. A quantity that read finite again
after a NaN or infinity is listed in ``nonfinite_passed`` (``{quantity: {"first_step", "times"}}``) instead:
SB3 logs an explained variance of NaN for a batch whose returns are all equal, and a loss scaler skips steps
whose gradients overflowed, while training goes on. Both are noted as values arrive because the tables also
use NaN for "not measured" (a key an episode lacks, a gradient norm no hook saw), so a NaN in a table alone
cannot tell a diverged run from a missing value.
Tables are rewritten atomically at most every ``flush_seconds`` (checked on each recorder call) and at close,
so a crash loses at most the last interval and a reader never sees a half-written file.

How gradient norms are measured (this works for trainers that never call the recorder between backward and
``optimizer.step()``):

* ``grad_norm`` (before clipping), first choice: while a recorder watches, ``torch.nn.utils.clip_grad_norm_``
  is wrapped (and restored by :meth:`Recorder.close`). The wrapper calls the original and keeps the total
  norm it returns, which *is* the norm before clipping, when the clipped parameters are the watched ones:
  no extra computation. A trainer that calls ``nn.utils.clip_grad_norm_(...)`` or
  ``torch.nn.utils.clip_grad_norm_(...)`` at run time goes through the wrapper.
* Fallback, for trainers that clip another way (``clip_grad_value_``, by hand, or a ``clip_grad_norm_``
  imported by name before ``watch``, which the wrapper cannot reach) or not at all: ``watch`` also
  registers a post-accumulate-grad hook on every parameter the optimizer updates. While no wrapped call
  reports the norm, each hook keeps the norm of its parameter's gradient as it stands after the last
  ``backward()`` (accumulated gradients included), and the step pre-hook combines them into the global L2
  norm; clipping happens after backward, so this too is the norm before clipping. Once the wrapper reports,
  the hooks stop measuring, except on the steps sampled for the layers table (so a trainer that switches
  from the wrapped call to another way of clipping loses the norm of the first step after the switch).
* ``grad_norm_clipped`` (after clipping): computed from ``param.grad`` in the step pre-hook, i.e. exactly
  the gradient the optimizer is about to apply.
* A trainer that rescales gradients between backward and clipping (mixed-precision loss scaling) should
  report the unscaled norm itself with :meth:`Recorder.grad_norm`; that value wins for the next step.

The module imports only numpy, torch and the standard library (it runs in subjects' processes); torch is
imported lazily, inside ``watch``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from rlaudit.engine import heartbeat
from rlaudit.engine.io import atomic_write_text, write_table

_TABLES = ("scalars", "episodes", "updates", "layers", "phases", "memory", "minibatches")
OFF_POLICY_TABLES = ("gradient_steps", "targets", "exploration", "replay")
"""Tables of off-policy training, written only once they have a row (an on-policy run's files are unchanged)."""
AGE_QUANTILES = (0.1, 0.5, 0.9)

MINIBATCH_UPDATES = 2
"""Updates whose minibatch composition :meth:`Recorder.minibatch` keeps (the first ones reported). How a
trainer forms minibatches is structural, the same at every update, so two updates show it at little cost."""
MINIBATCH_MAX_INDICES = 1_000_000
"""At most this many sample indices are kept in all (8 MB), whatever the trainer reports."""


def rss_bytes() -> int:
    """Resident set size of this process in bytes (Linux ``/proc/self/statm``, else peak RSS)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        # ru_maxrss is the peak, in KiB on Linux and bytes on macOS: the best portable fallback.
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if os.uname().sysname == "Darwin" else peak * 1024)


def load_per_core() -> float | None:
    """The machine's one-minute load average per CPU core (``os.getloadavg``), or None where the platform has
    no load average. Above 1, runnable threads share cores, and a run's steps per CPU-second fall with it."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):
        return None


class _Phase:
    """Context manager timing one named phase; one object per name, reused, to keep the hot loop cheap."""

    __slots__ = ("_name", "_recorder")

    def __init__(self, recorder: Recorder, name: str) -> None:
        self._recorder = recorder
        self._name = name

    def __enter__(self) -> _Phase:
        rec = self._recorder
        if rec._sync is not None:  # a policy on CUDA: what was queued before belongs to the phase before
            rec._sync()
        stack = rec._phase_stack
        path = f"{stack[-1][0]}/{self._name}" if stack else self._name
        stack.append((path, time.perf_counter()))
        return self

    def __exit__(self, *exc: object) -> None:
        rec = self._recorder
        if rec._sync is not None:  # the phase's kernels finish inside it, not in whatever comes next
            rec._sync()
        end = time.perf_counter()
        path, start = rec._phase_stack.pop()
        elapsed = end - start
        totals = rec._phase_totals.get(path)
        if totals is None:
            rec._phase_totals[path] = [1, elapsed]
        else:
            totals[0] += 1
            totals[1] += elapsed


class Recorder:
    """Records a training run's runtime behaviour into tables under ``run_dir``.

    Args:
        run_dir: Directory for the tables and ``summary.json``; the trainer may also write its own logs
            (``run_dir/"tb"``) and checkpoints (``run_dir/"checkpoints"``) under it. Created on first write.
        sample_every: Per-layer statistics are taken on optimizer steps 1, 1 + k, 1 + 2k, ...
        flush_seconds: Tables are rewritten at most this often (and at :meth:`close`).
        memory_seconds: Resident memory is sampled at most this often, in wall seconds, on any recorder
            call (``log``, ``episode``, an optimizer step), so the memory table exists for every trainer
            that reports anything; None samples only on :meth:`sample_memory` (and at close).
        target_networks: ``fn(policy) -> {target prefix: online prefix}`` (the subject's ``target_networks``
            with its config bound): :meth:`watch` then measures target-network updates (module docstring).
        write_tables: False keeps the tables in memory only (read them with :meth:`columns`): for a caller
            that never reads the files, where the first write would import pandas and pyarrow for nothing.
            ``summary.json`` is written either way.
    """

    def __init__(
        self,
        run_dir: str | Path,
        sample_every: int = 10,
        flush_seconds: float = 10.0,
        memory_seconds: float | None = 0.5,
        target_networks: Any = None,
        write_tables: bool = True,
    ) -> None:
        if sample_every < 1:
            raise ValueError(f"sample_every must be >= 1 (every k-th optimizer step), got {sample_every}")
        if memory_seconds is not None and not memory_seconds > 0:
            raise ValueError(
                f"memory_seconds must be > 0 (or None for explicit samples only), got {memory_seconds}"
            )
        self.run_dir = Path(run_dir)
        self.sample_every = int(sample_every)
        self.flush_seconds = float(flush_seconds)
        self.write_tables = bool(write_tables)
        self._t0 = time.perf_counter()
        self._cpu0 = time.process_time()  # CPU time of this process: robust to other load on the machine
        self._warm: tuple[float, int] | None = None  # (CPU time net of flushes, step) at the first update
        self._warm_wall = 0.0  # wall time net of flushes at the first update
        self._load0 = load_per_core()  # the machine's load when the steady-state timing starts
        self._flush_cpu = 0.0
        self._flush_wall = 0.0
        # set by watch() for a policy on CUDA: waits for the GPU, so that phases and totals time its work
        self._sync: Any = None
        self._device: str | None = None
        self._last_flush = time.monotonic()
        self.memory_seconds = float(memory_seconds) if memory_seconds is not None else math.inf
        self._last_memory = -math.inf  # the first recorder call samples
        self._step = 0
        self._max_step = 0
        self._closed = False
        # scalars / memory: parallel column lists
        self._scalars: dict[str, list[Any]] = {"step": [], "name": [], "value": []}
        self._memory: dict[str, list[Any]] = {"step": [], "seconds": [], "rss_bytes": []}
        self._episodes: list[dict[str, Any]] = []
        self._updates: list[dict[str, Any]] = []
        self._layers: dict[str, list[Any]] = {
            k: [] for k in ("update", "step", "layer", "grad_norm", "weight_norm", "update_ratio")
        }
        self._phase_stack: list[tuple[str, float]] = []
        self._phase_totals: dict[str, list[float]] = {}
        self._phases: dict[str, _Phase] = {}
        # optimizer instrumentation (set by watch); _norms[i]: norm of parameter i's gradient after the last
        # backward (None until one ran since the last step)
        self._handles: list[Any] = []
        self._params: list[Any] = []
        self._names: list[str] = []
        self._norms: list[Any] = []
        self._explicit_pre_clip: float | None = None
        self._clip_pre: float | None = None  # reported by the clip_grad_norm_ wrapper for the coming step
        self._clip_post: float | None = None  # the post-clip norm that clipping implies for that step
        self._hooks_measure = (
            True  # False while the wrapper reports: the hooks then only measure sampled steps
        )
        self._param_ids: set[int] = set()
        self._n_updates = 0
        self._pending: dict[str, Any] | None = None
        # minibatch composition: (step, epoch, minibatch, indices) and the (step, epoch, count) of the last call
        self._minibatches: list[tuple[int, int, int, np.ndarray]] = []
        self._mb_updates = 0
        self._mb_indices = 0
        self._mb_last: tuple[int, int, int] | None = None
        # NaN/inf per quantity (see the module docstring): the runs still open, and those that passed
        self._nonfinite_open: dict[str, dict[str, Any]] = {}
        self._nonfinite_passed: dict[str, dict[str, Any]] = {}
        # off-policy tables (rows of dicts) and the target-network pairs watch() measures
        self.target_networks = target_networks
        self._off: dict[str, list[dict[str, Any]]] = {name: [] for name in OFF_POLICY_TABLES}
        self._gradient_steps = 0  # reported through update()
        self._target_pairs: list[tuple[Any, Any]] = []  # (target param, online param)
        self._target_copy: list[Any] = []

    # -- public API ------------------------------------------------------------------------------------------

    def watch(self, policy: Any, optimizer: Any) -> None:
        """Hook ``optimizer`` (and the gradients of the parameters it updates) to record every step.

        Args:
            policy: The ``torch.nn.Module`` being trained; its ``named_parameters`` name the layers table rows.
            optimizer: A ``torch.optim.Optimizer``; every ``step()`` adds rows to the updates table.
        """
        import torch

        if self._handles:
            raise RuntimeError("Recorder.watch was already called; call it once per run (one optimizer)")
        self._torch = torch
        from rlaudit.devices import describe, is_cuda, module_device

        first = next((p for g in optimizer.param_groups for p in g["params"]), None)
        device = module_device(policy) if policy is not None else getattr(first, "device", None)
        if device is not None:
            self._device = describe(device)
            if is_cuda(device):
                self._sync = functools.partial(torch.cuda.synchronize, device)
        names = {id(p): n for n, p in policy.named_parameters()} if policy is not None else {}
        seen: set[int] = set()
        for group in optimizer.param_groups:
            for p in group["params"]:
                if id(p) in seen or not p.requires_grad:
                    continue
                seen.add(id(p))
                idx = len(self._params)
                self._params.append(p)
                self._names.append(names.get(id(p), f"param{idx}"))
                self._norms.append(None)
                self._handles.append(p.register_post_accumulate_grad_hook(self._make_grad_hook(idx)))
        self._param_ids = {id(p) for p in self._params}
        self._handles.append(optimizer.register_step_pre_hook(self._pre_step))
        self._handles.append(optimizer.register_step_post_hook(self._post_step))
        _watch_clipping(self)
        if self.target_networks is not None and policy is not None:
            self._watch_targets(policy)

    def _watch_targets(self, policy: Any) -> None:
        """Pair every target parameter with its online counterpart (by the prefixes the subject names)."""
        torch = self._torch
        mapping = dict(self.target_networks(policy) or {})
        params = dict(policy.named_parameters())
        for target, online in mapping.items():
            for name, p in params.items():
                if name == target or name.startswith(target + "."):
                    twin = params.get(online + name[len(target) :])
                    if twin is None or twin.shape != p.shape:
                        raise ValueError(
                            f"target_networks maps {target!r} to {online!r}, but {name!r} has no online "
                            f"counterpart {online + name[len(target) :]!r} of the same shape in "
                            "policy.named_parameters()"
                        )
                    self._target_pairs.append((p, twin))
        with torch.no_grad():
            self._target_copy = [t.detach().clone() for t, _ in self._target_pairs]

    def _measure_targets(self) -> None:
        """Record a target update when the target parameters moved since the last look (see the docstring)."""
        if not self._target_pairs:
            return
        torch = self._torch
        with torch.no_grad():
            if all(
                torch.equal(t, c) for (t, _), c in zip(self._target_pairs, self._target_copy, strict=True)
            ):
                return
            moved = _total_norm(
                torch,
                [t.detach() - c for (t, _), c in zip(self._target_pairs, self._target_copy, strict=True)],
            )
            gap = _total_norm(
                torch,
                [o.detach() - c for (_, o), c in zip(self._target_pairs, self._target_copy, strict=True)],
            )
            tau = float(moved) / float(gap) if float(gap) > 0 else math.nan
            self._target_copy = [t.detach().clone() for t, _ in self._target_pairs]
        self._off["targets"].append(
            {"step": self._step, "gradient_step": self._n_updates, "tau": tau, "source": "measured"}
        )

    def update(
        self,
        step: int,
        gradient_steps: int = 1,
        batch_size: int | None = None,
        actor_updates: int | None = None,
    ) -> None:
        """Record ``gradient_steps`` gradient steps taken at environment step ``step`` (off-policy learners).

        Call it once per training phase (``train_freq``), with the batch size drawn from the replay buffer;
        the trainer audit reads the replay ratio, ``learning_starts`` and ``train_freq`` from it. An
        actor-critic (SAC, TD3, DDPG) also gives ``actor_updates``: how many of those gradient steps updated the
        actor (the actor optimizer's steps; TD3 updates it every ``policy_delay``-th step).
        """
        self._see_step(step)
        self._gradient_steps += int(gradient_steps)
        row: dict[str, Any] = {
            "step": int(step),
            "gradient_steps": int(gradient_steps),
            "batch_size": math.nan if batch_size is None else int(batch_size),
        }
        if actor_updates is not None:
            row["actor_updates"] = int(actor_updates)
        self._off["gradient_steps"].append(row)
        self._maybe_flush()

    def target_update(self, step: int, gradient_step: int, tau: float = 1.0) -> None:
        """Record a target-network update at env step ``step``, after ``gradient_step`` gradient steps in all:
        ``tau=1.0`` for a hard copy, the Polyak coefficient otherwise."""
        self._see_step(step)
        self._off["targets"].append(
            {"step": int(step), "gradient_step": int(gradient_step), "tau": float(tau), "source": "reported"}
        )
        self._maybe_flush()

    def exploration(
        self,
        step: int,
        epsilon: float | None = None,
        alpha: float | None = None,
        target_entropy: float | None = None,
        action_noise: float | None = None,
    ) -> None:
        """Record the exploration parameters in force at env step ``step``: ε (ε-greedy), α (the entropy
        temperature of SAC-style learners), the target entropy α is tuned towards, and the standard deviation
        of the noise added to continuous actions (TD3, DDPG; its mean over action dimensions). None: not used."""
        self._see_step(step)
        row = {"step": int(step)}
        for key, value in (
            ("epsilon", epsilon),
            ("alpha", alpha),
            ("target_entropy", target_entropy),
            ("action_noise", action_noise),
        ):
            row[key] = math.nan if value is None else float(value.item() if hasattr(value, "item") else value)
        self._off["exploration"].append(row)
        self._maybe_flush()

    def replay(
        self,
        step: int,
        size: int,
        capacity: int,
        nbytes: int | None = None,
        ages: Any = None,
        prioritized: bool | None = None,
    ) -> None:
        """Record the replay buffer at env step ``step``: transitions held (``size``) of ``capacity``, its
        bytes, and for a sampled batch the ``ages`` of its transitions (env steps since each was inserted),
        kept as quantiles; ``prioritized`` says whether sampling is prioritized (None: not said)."""
        self._see_step(step)
        row: dict[str, Any] = {
            "step": int(step),
            "size": int(size),
            "capacity": int(capacity),
            "nbytes": math.nan if nbytes is None else int(nbytes),
        }
        if ages is not None:
            if hasattr(ages, "detach"):
                ages = ages.detach().cpu().numpy()
            values = np.asarray(ages, dtype=np.float64).reshape(-1)
        else:
            values = np.zeros(0)
        quantiles = np.quantile(values, AGE_QUANTILES) if len(values) else [math.nan] * len(AGE_QUANTILES)
        for q, value in zip(AGE_QUANTILES, quantiles, strict=True):
            row[f"age_p{round(q * 100)}"] = float(value)
        row["age_mean"] = float(values.mean()) if len(values) else math.nan
        row["age_n"] = len(values)
        row["prioritized"] = math.nan if prioritized is None else float(bool(prioritized))
        self._off["replay"].append(row)
        self._maybe_flush()

    def grad_norm(self, pre_clip: float) -> None:
        """Report the global gradient norm before clipping for the next optimizer step.

        Only needed when the trainer rescales gradients between ``backward()`` and clipping (loss scaling);
        otherwise the hooks installed by :meth:`watch` measure it.
        """
        self._explicit_pre_clip = float(pre_clip)

    def log(self, step: int, **scalars: float) -> None:
        """Record named scalars (``**{"losses/value_loss": v}``) at environment step ``step``.

        With no scalars it only sets the step: optimizer steps are stamped with the last step any recorder call
        gave, so a trainer calls ``log(step)`` after each rollout, before its update.
        """
        self._see_step(step)
        col_step, col_name, col_value = self._scalars["step"], self._scalars["name"], self._scalars["value"]
        for name, value in scalars.items():
            col_step.append(int(step))
            col_name.append(name)
            col_value.append(float(value))
            self._note_nonfinite(step, name, col_value[-1])
        self._maybe_flush()

    def episode(self, step: int, env: int = -1, **stats: Any) -> None:
        """Record one finished episode (``return=``, ``length=``, ``heart.get=``, ...) at env step ``step``.

        Pass names that are not Python identifiers with ``**{"heart.get": 3}``.
        """
        self._see_step(step)
        row = {"step": int(step), "env": int(env)}
        for key, value in stats.items():
            row[key] = value.item() if hasattr(value, "item") else value
            if isinstance(row[key], int | float) and not isinstance(row[key], bool):
                self._note_nonfinite(step, key, float(row[key]))
        self._episodes.append(row)
        heartbeat.episode()
        self._maybe_flush()

    def phase(self, name: str) -> _Phase:
        """Context manager adding the wall time of its block to phase ``name`` (nested: ``outer/name``).

        When the watched policy is on CUDA, entering and leaving a phase waits for the GPU
        (``torch.cuda.synchronize``): kernels run asynchronously, and without the wait a phase would time
        only their launch while the next phase paid for their work.

        Any names: the trainer's own ("rollout", "collect/act", "learn", ...) are recorded as given.
        """
        ph = self._phases.get(name)
        if ph is None:
            ph = self._phases[name] = _Phase(self, name)
        return ph

    def sample_memory(self, step: int) -> None:
        """Record this process's resident memory at environment step ``step`` now.

        Optional: the recorder samples on its own every ``memory_seconds``. A trainer that wants samples at
        fixed points (once per update) calls this; it costs one read of ``/proc/self/statm`` (a few µs).
        """
        self._see_step(step)
        self._sample_memory()
        self._maybe_flush()

    def minibatch(self, epoch: int, indices: Any) -> None:
        """Record which samples of the current update's batch form one minibatch (optional).

        Call it once per minibatch, in the order the minibatches are used, with the minibatch's sample
        indices into the update's flattened batch (``b_inds[start:end]``, as in CleanRL). An update is the run
        of calls made at one environment step (a new one also starts when ``epoch`` goes back down). Only the
        first :data:`MINIBATCH_UPDATES` updates are kept; later calls return at once, so the call can stay in
        the hot loop. The trainer audit reads coverage per epoch, reshuffling between epochs and how
        contiguous each minibatch is from the ``minibatches`` table.

        Args:
            epoch: The epoch within the update (0-based).
            indices: ``(minibatch_size,)`` integer sample indices (numpy array, list or CPU/GPU tensor).
        """
        if self._mb_updates > MINIBATCH_UPDATES:  # past the updates kept: nothing more to do
            return
        step, epoch = self._step, int(epoch)
        last = self._mb_last
        if last is None or step != last[0] or epoch < last[1]:
            self._mb_updates += 1
            if self._mb_updates > MINIBATCH_UPDATES:
                return
            last = (step, epoch, 0)
        count = last[2] + 1 if epoch == last[1] else 1
        self._mb_last = (step, epoch, count)
        if self._mb_indices >= MINIBATCH_MAX_INDICES:
            return
        if hasattr(indices, "detach"):
            indices = indices.detach().cpu().numpy()
        values = np.asarray(indices, dtype=np.int64).reshape(-1).copy()
        self._mb_indices += len(values)
        self._minibatches.append((step, epoch, count - 1, values))

    def columns(self, table: str) -> dict[str, np.ndarray]:
        """One table as recorded so far, as equal-length numpy columns (what the file would hold).

        For code running in the subject's process, which may have no pandas (or one built for another NumPy):
        read the tables here instead of with :func:`rlaudit.engine.io.read_table`.

        Args:
            table: One of ``scalars``, ``episodes``, ``updates``, ``layers``, ``phases``, ``memory``,
                ``minibatches``.
        """
        if table in OFF_POLICY_TABLES:
            return self._table_off(table)
        if table not in _TABLES:
            raise ValueError(
                f"unknown recorder table {table!r}; expected one of {', '.join(_TABLES + OFF_POLICY_TABLES)}"
            )
        return getattr(self, f"_table_{table}")()

    def phase_totals(self) -> dict[str, tuple[int, float]]:
        """``{phase path: (count, seconds)}`` recorded so far (the phases table as a mapping)."""
        return {k: (int(v[0]), float(v[1])) for k, v in self._phase_totals.items()}

    def flush(self) -> None:
        """Rewrite every table now (atomically); nothing to write when the tables stay in memory."""
        self._last_flush = time.monotonic()
        if not self.write_tables:
            return
        cpu, wall = time.process_time(), time.perf_counter()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        for name in _TABLES:
            write_table(self.run_dir / name, getattr(self, f"_table_{name}")())
        for name in OFF_POLICY_TABLES:
            if self._off[name]:
                write_table(self.run_dir / name, self._table_off(name))
        # the recorder's own writes (the first one imports the table libraries) are not the trainer's work
        self._flush_cpu += time.process_time() - cpu
        self._flush_wall += time.perf_counter() - wall

    def close(self) -> None:
        """Remove the hooks, write the tables and ``summary.json``. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        _unwatch_clipping(self)
        self._measure_targets()  # an update after the last optimizer step
        if self._max_step > 0 and (not self._memory["step"] or self._memory["step"][-1] < self._max_step):
            self._step = self._max_step  # the run's end, so the memory table spans the whole run
            self._sample_memory()
        if self._sync is not None:
            self._sync()
        self.flush()
        seconds = time.perf_counter() - self._t0
        cpu_now = time.process_time() - self._flush_cpu  # net of the recorder's table writes
        cpu_seconds = cpu_now - self._cpu0
        # steady state: steps per CPU-second after the first update (warm-up excluded) when there was one
        steady_steps, steady_cpu = self._max_step, cpu_seconds
        wall_now = time.perf_counter() - self._flush_wall
        steady_wall = wall_now - self._t0
        if self._warm is not None and self._n_updates >= 2 and self._max_step > self._warm[1]:
            steady_steps, steady_cpu = self._max_step - self._warm[1], cpu_now - self._warm[0]
            steady_wall = wall_now - self._warm_wall
        # Only a trainer that uses torch has a torch thread count; importing torch here just to ask would cost
        # a second or more in every worker of a subject that never does.
        torch = sys.modules.get("torch")
        torch_threads = torch.get_num_threads() if torch is not None else None
        load_end = load_per_core()
        summary = {
            "steps": self._max_step,
            "seconds": seconds,
            "sps": self._max_step / seconds if seconds > 0 else 0.0,
            "cpu_seconds": cpu_seconds,
            "sps_cpu": steady_steps / steady_cpu if steady_cpu > 0 else 0.0,
            # the same steady state in wall seconds, net of the recorder's writes, with the GPU synchronized
            "sps_wall": steady_steps / steady_wall if steady_wall > 0 else 0.0,
            "device": self._device,
            "updates": self._n_updates,
            "episodes": len(self._episodes),
            "torch_threads": torch_threads,
            "nonfinite": self._nonfinite(),
            "nonfinite_passed": dict(self._nonfinite_passed),
            # the machine's load while the steady state was timed (its start and the close, averaged): steps
            # per CPU-second compare fairly only between runs timed at a similar load
            "load_per_core": None
            if self._load0 is None or load_end is None
            else 0.5 * (self._load0 + load_end),
        }
        if self._gradient_steps:
            summary["gradient_steps"] = self._gradient_steps
        if self.target_networks is not None:  # how many target tensors watch() measured (0: none found)
            summary["target_tensors"] = len(self._target_pairs)
        atomic_write_text(self.run_dir / "summary.json", json.dumps(summary, indent=2))

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- hooks -----------------------------------------------------------------------------------------------

    def _make_grad_hook(self, idx: int):
        norms = self._norms
        torch = self._torch

        def hook(param: Any) -> None:
            # Runs after backward accumulated into param.grad; the last call before step() wins, so with
            # gradient accumulation this is the norm of the accumulated gradient. The coming step is
            # _n_updates + 1: sampled for the layers table when _n_updates % sample_every == 0.
            if self._hooks_measure or self._n_updates % self.sample_every == 0:
                grad = param.grad
                norms[idx] = None if grad is None else torch.linalg.vector_norm(grad.detach())

        return hook

    def _clipped(
        self, parameters: list[Any], total_norm: Any, max_norm: float | None = None, norm_type: Any = 2.0
    ) -> None:
        """Called by the ``clip_grad_norm_`` wrapper: keep the pre-clip norm if these are our parameters, and
        the post-clip norm that clipping implies (every gradient scaled by ``min(1, max / (norm + 1e-6))``,
        as torch does), which saves a second pass over the gradients on every optimizer step.

        That shortcut holds only for one L2 clip over every watched parameter. Several clips before one
        step (actor and critic clipped apart), a partial one, or another norm leave the post-clip norm to be
        measured over all gradients at the step."""
        if not parameters or id(parameters[0]) not in self._param_ids:
            return
        first = self._clip_pre is None
        self._clip_pre = float(total_norm)
        whole = first and float(norm_type) == 2.0 and self._param_ids <= {id(p) for p in parameters}
        self._clip_post = (
            self._clip_pre * min(1.0, float(max_norm) / (self._clip_pre + 1e-6))
            if whole and max_norm is not None and math.isfinite(self._clip_pre)
            else None
        )

    def _pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        torch = self._torch
        self._measure_targets()
        update = self._n_updates + 1
        present = [(i, p) for i, p in enumerate(self._params) if p.grad is not None]
        measured = False  # a NaN `pre` means "no norm seen" unless some norm was measured
        with torch.no_grad():
            if self._explicit_pre_clip is not None:
                pre = self._explicit_pre_clip
            elif self._clip_pre is not None:
                pre = self._clip_pre
            else:
                norms = [self._norms[i] for i, _ in present if self._norms[i] is not None]
                pre = float(torch.linalg.vector_norm(torch.stack(norms))) if norms else float("nan")
                measured = bool(norms)
            if self._explicit_pre_clip is not None or self._clip_pre is not None or measured:
                self._note_nonfinite(self._step, "grad_norm", float(pre))
            # measure with the hooks from the next step on only if the wrapper did not report this one
            self._hooks_measure = self._clip_pre is None
            post = self._clip_post
            self._clip_pre = self._clip_post = None
            if post is None:  # not clipped through clip_grad_norm_ (or clipped elsewhere): measure it
                grads = [p.grad.detach() for _, p in present]
                post = float(_total_norm(torch, grads)) if grads else math.nan
            pending: dict[str, Any] = {"pre": pre, "post": post, "layers": None}
            if (update - 1) % self.sample_every == 0:
                layers = []
                for i, p in present:
                    norm_i = self._norms[i]
                    g = float(norm_i) if norm_i is not None else float("nan")
                    layers.append((self._names[i], p, g, p.detach().clone()))
                pending["layers"] = layers
        self._pending = pending
        self._explicit_pre_clip = None
        for i in range(len(self._norms)):
            self._norms[i] = None

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self._n_updates += 1
        update = self._n_updates
        heartbeat.update()
        if update == 1:  # what came before (imports, first allocations, lazy init) is warm-up
            if self._sync is not None:
                self._sync()
            self._warm = (time.process_time() - self._flush_cpu, self._step)
            self._warm_wall = time.perf_counter() - self._flush_wall
            self._load0 = load_per_core()
        pending = self._pending or {"pre": float("nan"), "post": float("nan"), "layers": None}
        self._pending = None
        for gi, group in enumerate(optimizer.param_groups):
            row: dict[str, Any] = {"update": update, "step": self._step, "group": gi}
            row.update(_numeric_hyperparameters(group))
            row["grad_norm"] = pending["pre"]
            row["grad_norm_clipped"] = pending["post"]
            self._updates.append(row)
        if pending["layers"] is not None:
            torch = self._torch
            cols = self._layers
            with torch.no_grad():
                for name, p, g, before in pending["layers"]:
                    w_norm = float(torch.linalg.vector_norm(before))
                    dw = float(torch.linalg.vector_norm(p.detach() - before))
                    self._note_nonfinite(self._step, f"weight_norm of {name}", w_norm)
                    cols["update"].append(update)
                    cols["step"].append(self._step)
                    cols["layer"].append(name)
                    cols["grad_norm"].append(g)
                    cols["weight_norm"].append(w_norm)
                    cols["update_ratio"].append(dw / w_norm if w_norm > 0 else float("nan"))
        self._maybe_flush()

    # -- tables ----------------------------------------------------------------------------------------------

    def _note_nonfinite(self, step: int, quantity: str, value: float) -> None:
        """Follow NaN and infinity quantity by quantity, as values arrive.

        A quantity that turns non-finite opens a stretch at that step; a finite value of it later closes the
        stretch, which is then counted as passed: a value undefined at one point (SB3's explained variance of a
        batch whose returns are all equal) or a step a loss scaler skipped, after which training went on.
        """
        if not math.isfinite(value):
            self._nonfinite_open.setdefault(
                quantity, {"step": int(step), "quantity": quantity, "value": str(value)}
            )
        elif quantity in self._nonfinite_open:
            first = self._nonfinite_open.pop(quantity)
            passed = self._nonfinite_passed.setdefault(quantity, {"first_step": first["step"], "times": 0})
            passed["times"] += 1

    def _nonfinite(self) -> dict[str, Any] | None:
        """Where the run diverged: the earliest NaN or infinity of a quantity that stayed non-finite to the end
        of the run (read by the trainer audit), or None."""
        return min(self._nonfinite_open.values(), key=lambda note: note["step"], default=None)

    def _see_step(self, step: int) -> None:
        self._step = int(step)
        heartbeat.step(self._step)  # progress the worker reports, so a slow run is not taken for a hung one
        if self._step > self._max_step:
            self._max_step = self._step

    def _sample_memory(self) -> None:
        self._last_memory = time.monotonic()
        self._memory["step"].append(self._step)
        self._memory["seconds"].append(time.perf_counter() - self._t0)
        self._memory["rss_bytes"].append(rss_bytes())

    def _maybe_flush(self) -> None:
        now = time.monotonic()
        if now - self._last_memory >= self.memory_seconds:
            self._sample_memory()
        if now - self._last_flush >= self.flush_seconds:
            self.flush()

    def _table_scalars(self) -> dict[str, np.ndarray]:
        return {
            "step": np.asarray(self._scalars["step"], dtype=np.int64),
            "name": np.asarray(self._scalars["name"], dtype=str),
            "value": np.asarray(self._scalars["value"], dtype=np.float64),
        }

    def _table_memory(self) -> dict[str, np.ndarray]:
        return {
            "step": np.asarray(self._memory["step"], dtype=np.int64),
            "seconds": np.asarray(self._memory["seconds"], dtype=np.float64),
            "rss_bytes": np.asarray(self._memory["rss_bytes"], dtype=np.int64),
        }

    def _table_minibatches(self) -> dict[str, np.ndarray]:
        parts = self._minibatches
        sizes = [len(values) for *_, values in parts]
        return {
            "step": np.repeat(np.asarray([p[0] for p in parts], dtype=np.int64), sizes),
            "epoch": np.repeat(np.asarray([p[1] for p in parts], dtype=np.int64), sizes),
            "minibatch": np.repeat(np.asarray([p[2] for p in parts], dtype=np.int64), sizes),
            "position": np.concatenate(
                [np.arange(n, dtype=np.int64) for n in sizes] or [np.zeros(0, np.int64)]
            ),
            "index": np.concatenate([p[3] for p in parts] or [np.zeros(0, np.int64)]),
        }

    def _table_episodes(self) -> dict[str, np.ndarray]:
        return _rows_to_columns(self._episodes, first=("step", "env"), ints=("step", "env"))

    def _table_updates(self) -> dict[str, np.ndarray]:
        return _rows_to_columns(
            self._updates, first=("update", "step", "group", "lr"), ints=("update", "step", "group")
        )

    def _table_off(self, name: str) -> dict[str, np.ndarray]:
        ints = {"gradient_steps": ("step", "gradient_steps"), "targets": ("step", "gradient_step")}.get(
            name, ()
        )
        ints = ints + (("step", "size", "capacity", "age_n") if name == "replay" else ("step",))
        return _rows_to_columns(self._off[name], first=("step",), ints=tuple(dict.fromkeys(ints)))

    def _table_layers(self) -> dict[str, np.ndarray]:
        cols = self._layers
        return {
            "update": np.asarray(cols["update"], dtype=np.int64),
            "step": np.asarray(cols["step"], dtype=np.int64),
            "layer": np.asarray(cols["layer"], dtype=str),
            "grad_norm": np.asarray(cols["grad_norm"], dtype=np.float64),
            "weight_norm": np.asarray(cols["weight_norm"], dtype=np.float64),
            "update_ratio": np.asarray(cols["update_ratio"], dtype=np.float64),
        }

    def _table_phases(self) -> dict[str, np.ndarray]:
        names = sorted(self._phase_totals)
        return {
            "name": np.asarray(names, dtype=str),
            "count": np.asarray([int(self._phase_totals[n][0]) for n in names], dtype=np.int64),
            "seconds": np.asarray([self._phase_totals[n][1] for n in names], dtype=np.float64),
        }


class NullRecorder:
    """The :class:`Recorder` API doing nothing: for training without instrumentation and for benchmarks.

    Args:
        run_dir: Optional directory the trainer may still write its own logs and checkpoints under.
    """

    sample_every = 0

    def __init__(self, run_dir: str | Path | None = None, *args: Any, **kwargs: Any) -> None:
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self._phase = _NullPhase()

    def watch(self, policy: Any, optimizer: Any) -> None:
        pass

    def grad_norm(self, pre_clip: float) -> None:
        pass

    def log(self, step: int, **scalars: float) -> None:
        pass

    def episode(self, step: int, env: int = -1, **stats: Any) -> None:
        pass

    def phase(self, name: str) -> _NullPhase:
        return self._phase

    def sample_memory(self, step: int) -> None:
        pass

    def minibatch(self, epoch: int, indices: Any) -> None:
        pass

    def update(
        self,
        step: int,
        gradient_steps: int = 1,
        batch_size: int | None = None,
        actor_updates: int | None = None,
    ) -> None:
        pass

    def target_update(self, step: int, gradient_step: int, tau: float = 1.0) -> None:
        pass

    def exploration(
        self,
        step: int,
        epsilon: float | None = None,
        alpha: float | None = None,
        target_entropy: float | None = None,
        action_noise: float | None = None,
    ) -> None:
        pass

    def replay(
        self,
        step: int,
        size: int,
        capacity: int,
        nbytes: int | None = None,
        ages: Any = None,
        prioritized: bool | None = None,
    ) -> None:
        pass

    def columns(self, table: str) -> dict[str, np.ndarray]:
        return {}

    def phase_totals(self) -> dict[str, tuple[int, float]]:
        return {}

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> NullRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class _NullPhase:
    __slots__ = ()

    def __enter__(self) -> _NullPhase:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


# -- the clip_grad_norm_ wrapper ------------------------------------------------------------------------------

_CLIP_WATCHERS: list[Recorder] = []
_ORIGINAL_CLIP: Any = None


def _watch_clipping(recorder: Recorder) -> None:
    """Wrap ``torch.nn.utils.clip_grad_norm_`` (once per process) and register ``recorder`` with it."""
    global _ORIGINAL_CLIP
    import functools

    import torch

    if _ORIGINAL_CLIP is None:
        original = torch.nn.utils.clip_grad_norm_

        @functools.wraps(original)
        def clip_grad_norm_(parameters: Any, max_norm: float, *args: Any, **kwargs: Any) -> Any:
            params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
            total = original(params, max_norm, *args, **kwargs)
            norm_type = args[0] if args else kwargs.get("norm_type", 2.0)
            for watcher in _CLIP_WATCHERS:
                watcher._clipped(params, total, max_norm, norm_type)
            return total

        _ORIGINAL_CLIP = original
        torch.nn.utils.clip_grad_norm_ = clip_grad_norm_
        torch.nn.utils.clip_grad.clip_grad_norm_ = clip_grad_norm_
    _CLIP_WATCHERS.append(recorder)


def _unwatch_clipping(recorder: Recorder) -> None:
    """Unregister ``recorder``; the last one out puts the original ``clip_grad_norm_`` back."""
    global _ORIGINAL_CLIP
    if recorder in _CLIP_WATCHERS:
        _CLIP_WATCHERS.remove(recorder)
    if not _CLIP_WATCHERS and _ORIGINAL_CLIP is not None:
        import torch

        torch.nn.utils.clip_grad_norm_ = _ORIGINAL_CLIP
        torch.nn.utils.clip_grad.clip_grad_norm_ = _ORIGINAL_CLIP
        _ORIGINAL_CLIP = None


def _total_norm(torch: Any, tensors: list[Any]) -> Any:
    """Global L2 norm of a list of tensors, in as few kernel calls as the torch version allows."""
    get_total_norm = getattr(torch.nn.utils, "get_total_norm", None)  # torch >= 2.6
    if get_total_norm is not None:
        return get_total_norm(tensors)
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t) for t in tensors]))


def _numeric_hyperparameters(group: dict[str, Any]) -> dict[str, float]:
    """The numeric entries of an optimizer param group: ``lr``, ``eps``, ``beta1``/``beta2``, ``momentum``..."""
    out: dict[str, float] = {}
    for key, value in group.items():
        if key == "params" or isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float):
            out[key] = float(value)
        elif hasattr(value, "item") and getattr(value, "numel", lambda: 0)() == 1:
            out[key] = float(value.item())  # a tensor learning rate (capturable/compiled optimizers)
        elif (
            isinstance(value, tuple | list)
            and value
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        ):
            # Adam's betas read better as beta1/beta2 than as betas_0/betas_1.
            for i, v in enumerate(value):
                out[f"beta{i + 1}" if key == "betas" else f"{key}_{i}"] = float(v)
    return out


def _rows_to_columns(
    rows: list[dict[str, Any]], first: tuple[str, ...], ints: tuple[str, ...]
) -> dict[str, np.ndarray]:
    """Turn rows with possibly different keys into equal-length columns.

    Numeric columns are float64 with NaN where a row lacks the key (``ints`` stay int64); a column holding any
    string becomes a string column with "" for missing entries.
    """
    keys: dict[str, None] = dict.fromkeys(k for k in first if any(k in r for r in rows) or k in ints)
    for r in rows:
        for k in r:
            keys.setdefault(k, None)
    columns: dict[str, np.ndarray] = {}
    for key in keys:
        values = [r.get(key) for r in rows]
        if key in ints:
            columns[key] = np.asarray([-1 if v is None else int(v) for v in values], dtype=np.int64)
        elif any(isinstance(v, str) for v in values):
            columns[key] = np.asarray(["" if v is None else str(v) for v in values], dtype=str)
        else:
            columns[key] = np.asarray([math.nan if v is None else float(v) for v in values], dtype=np.float64)
    return columns
