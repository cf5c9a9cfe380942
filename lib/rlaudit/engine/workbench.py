"""The notebook's handle on a (baseline, candidate) pair: run probes on both, cached, in worker processes.

::

    from rlaudit.engine.workbench import Workbench
    wb = Workbench(baseline="builtin:reference", candidate="builtin:regressed", profile="smoke")
    pair = wb.run(agents_probes.module_tree, seed=0)     # both sides in parallel, cached
    if (f := pair.guard("agents/architecture", "agents", "The two networks have the same layers")):
        ...                                               # SKIPPED (missing capability) or ERROR finding
    tree = pair.candidate.json("tree")
    pairs = wb.run_many(trainer_probes.train_run, [dict(seed=s, steps=n) for s in seeds])

A cache hit never starts a worker, and neither does a probe whose required capability the subject is known to
lack (capabilities are remembered per subject fingerprint in the cache). Extra arms (attribution variants,
a fix commit) share the same cache and worker machinery through :meth:`Workbench.run_spec` and
:meth:`Workbench.run_each`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlaudit.engine import limits
from rlaudit.engine.executor import Executor, JobError
from rlaudit.engine.jobs import (
    ProbeJob,
    _answer_locally,
    _execute,
    _failed,
    _shutdown,
    _Subject,
    run_probe_job,
)
from rlaudit.engine.store import ArtifactStore, ProbeResult
from rlaudit.engine.subjects import SubjectSpec, load_pair_file, loader_for, parse_spec
from rlaudit.engine.validate import env_number
from rlaudit.engine.worker import ERROR_KINDS, ProbeError
from rlaudit.findings import Finding
from rlaudit.probe import ProbeInfo, bind_params, probe_import_root, probe_info
from rlaudit.profiles import Profile, get_profile

__all__ = [
    "SIDES",
    "Pair",
    "ProbeError",
    "ProbeResult",
    "Workbench",
]

SIDES: tuple[str, str] = ("baseline", "candidate")


@dataclass
class Pair:
    """One probe on both subjects.

    Attributes:
        baseline: The baseline's result (None when only the candidate was asked for).
        candidate: The candidate's result (None when only the baseline was asked for).
    """

    baseline: ProbeResult | None
    candidate: ProbeResult | None

    @property
    def ok(self) -> bool:
        """True when every side that was run produced artifacts."""
        return all(result.ok for result in self)

    def sides(self) -> dict[str, ProbeResult]:
        """``{"baseline": ..., "candidate": ...}`` for the sides that were run."""
        return {side: result for side in SIDES if (result := getattr(self, side)) is not None}

    def __iter__(self) -> Iterator[ProbeResult]:
        return iter(self.sides().values())

    def __getitem__(self, side: str) -> ProbeResult:
        result = self.sides().get(side)
        if result is None:
            raise KeyError(f"this pair has no {side!r} result; it has {', '.join(self.sides())}")
        return result

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        """A SKIPPED or ERROR finding when a side has no artifacts, else None.

        A missing capability (on either side) gives SKIPPED naming the capabilities per side; failed probes
        give ERROR with the error's kind, message and traceback (one finding naming both sides when both
        failed).
        """
        sides = self.sides()
        missing = {side: list(result.missing) for side, result in sides.items() if result.missing}
        if missing:
            return Finding.skipped(id, subsystem, hypothesis, missing)
        errors = {
            side: result.error or ProbeError("protocol", f"{result.probe} produced no artifacts and no error")
            for side, result in sides.items()
            if not result.ok
        }
        if not errors:
            return None
        if len(errors) == 1:
            ((side, error),) = errors.items()
            return Finding.error(id, subsystem, hypothesis, side, error)
        kinds = sorted({error.kind for error in errors.values()})
        combined = ProbeError(
            kinds[0] if len(kinds) == 1 else "exception",
            "; ".join(f"{side}: {error.kind}: {error.message}" for side, error in errors.items()),
            "\n".join(
                f"--- {side} ---\n{error.traceback}" for side, error in errors.items() if error.traceback
            ),
            "\n".join(
                f"--- {side} ---\n{error.stderr_tail}" for side, error in errors.items() if error.stderr_tail
            ),
        )
        if len(kinds) > 1:
            combined.kind = "/".join(error.kind for error in errors.values())
        finding = Finding.error(id, subsystem, hypothesis, " and ".join(errors), combined)
        finding.evidence.details["sides"] = {side: error.to_dict() for side, error in errors.items()}
        return finding


class Workbench:
    """The notebook's handle on a (baseline, candidate) pair of subjects.

    Args:
        baseline: Spec (string or :class:`SubjectSpec`) of the setup that trained well.
        candidate: Spec of the setup that got worse.
        profile: ``"smoke"``, ``"standard"``, ``"thorough"`` or a :class:`Profile` (``RLAUDIT_PROFILE`` wins
            over a name).
        pair_file: YAML declaring both subjects (overrides ``baseline`` and ``candidate``).
        fresh: Recompute artifacts made before this workbench was created (each once per session).
            ``RLAUDIT_FRESH_SINCE`` (a Unix time) moves that point earlier, so that the notebooks of one report
            share one fresh start.
        jobs: Probe calls that run at once (worker processes busy at a time); default ``RLAUDIT_JOBS`` or the
            profile's ``jobs``. With more than one, workers run torch on one thread each.
        cache: The artifact store (default: ``data/cache`` or ``RLAUDIT_CACHE``).
        timeout: CPU-seconds a probe call may use (:mod:`rlaudit.engine.limits`); default ``RLAUDIT_CPU_LIMIT``
            (or the older ``RLAUDIT_PROBE_TIMEOUT``) or the profile's ``probe_timeout``. A call is also stopped
            after ``RLAUDIT_STALL_TIMEOUT`` seconds without progress.
        memory_mb: Per-worker address-space limit in MiB (default ``RLAUDIT_WORKER_MEMORY_MB`` or none).
        load_timeout: Seconds a worker may take to start and import its subject.
        metric: The primary metric, overriding what the subjects declare (``"NAME"`` or
            ``"NAME:lower"``); empty: the subjects' ``metrics()``, else the episodic return
            (:mod:`rlaudit.metrics`).

    Raises:
        ValueError / FileNotFoundError: A spec, pair file or profile is wrong (the message says how).
    """

    def __init__(
        self,
        baseline: str | SubjectSpec = "",
        candidate: str | SubjectSpec = "",
        profile: str | Profile = "standard",
        pair_file: str = "",
        fresh: bool = False,
        jobs: int | None = None,
        cache: ArtifactStore | None = None,
        *,
        timeout: float | None = None,
        memory_mb: float | None = None,
        load_timeout: float | None = None,
        metric: str = "",
    ) -> None:
        self.metric_override = str(metric or "").strip()
        self._metric: Any = None
        self._train_steps: int | None = None
        self._declarations: dict[str, dict[str, Any]] | None = None
        self._declarations_error: ProbeError | None = None
        self.metric_notes: list[str] = []
        # What the cache had to repair (an invalid entry recomputed), naming the file: printed as it happens,
        # and attached by each check to its findings and section (rlaudit.checks).
        self.cache_notes: list[str] = []
        self.profile: Profile = profile if isinstance(profile, Profile) else get_profile(profile)
        if pair_file:
            base_spec, cand_spec = load_pair_file(pair_file)
        else:
            if not baseline or not candidate:
                raise ValueError(
                    "Workbench needs both subjects: baseline= and candidate= specs (e.g. builtin:reference and "
                    "builtin:regressed), or pair_file= naming a YAML that declares them"
                )
            base_spec, cand_spec = parse_spec(baseline), parse_spec(candidate)
        for spec in (base_spec, cand_spec):
            loader_for(spec)  # an unloadable scheme fails here, not in every probe
        self.cache = cache if cache is not None else ArtifactStore()
        env_jobs = env_number("RLAUDIT_JOBS")  # a bad value names its variable
        self.jobs = max(1, int(jobs if jobs is not None else env_jobs or self.profile.jobs))
        # CPU-seconds per probe call, and seconds without progress (rlaudit.engine.limits; never wall time alone):
        # `rlaudit report --cpu-limit/--stall-timeout` arrive as RLAUDIT_CPU_LIMIT/RLAUDIT_STALL_TIMEOUT.
        self.timeout = float(
            timeout if timeout is not None else limits.cpu_limit() or self.profile.probe_timeout
        )
        self.stall_timeout = limits.stall_timeout()
        self._retry_failed_since = limits.retry_failed_since()
        self.memory_mb = memory_mb
        self.load_timeout = load_timeout
        self.fresh = bool(fresh)
        self._since: float | None = None
        if self.fresh:
            self._since = float(env_number("RLAUDIT_FRESH_SINCE") or time.time())
        # Parallel workers each get one torch thread so they do not fight over the cores (unless the user
        # chose a number with RLAUDIT_TORCH_THREADS).
        self._torch_threads = None if "RLAUDIT_TORCH_THREADS" in os.environ or self.jobs == 1 else 1
        self._max_live = max(4, 2 * self.jobs)  # idle workers beyond this are shut down (they hold memory)
        self._client_options: dict[str, Any] = {
            "memory_mb": memory_mb,
            "torch_threads": self._torch_threads,
            "stall_timeout": self.stall_timeout,
        }
        if load_timeout:
            self._client_options["load_timeout"] = load_timeout
        # `rlaudit report --executor NAME` arrives as RLAUDIT_EXECUTOR; an unavailable backend fails here.
        self.executor_backend = os.environ.get("RLAUDIT_EXECUTOR") or "local"
        options = (
            {"address": os.environ["RLAUDIT_RAY_ADDRESS"]} if os.environ.get("RLAUDIT_RAY_ADDRESS") else {}
        )
        self._executor = Executor(jobs=self.jobs, backend=self.executor_backend, desc="probes", **options)
        self._subjects: dict[str, _Subject] = {
            "baseline": self._new_subject(base_spec, "baseline"),
            "candidate": self._new_subject(cand_spec, "candidate"),
        }
        self._extra: dict[SubjectSpec, _Subject] = {}
        # Every subject (sides and extra arms), shared with the finalizer, which must not hold the workbench.
        self._subject_list: list[_Subject] = list(self._subjects.values())
        self._lock = threading.Lock()
        self._closed = False
        self._finalizer = weakref.finalize(self, _shutdown, self._subject_list)

    # --- what it holds --------------------------------------------------------------------------------

    @property
    def specs(self) -> dict[str, SubjectSpec]:
        """``{"baseline": SubjectSpec, "candidate": SubjectSpec}``."""
        return {side: subject.spec for side, subject in self._subjects.items()}

    @property
    def labels(self) -> dict[str, str]:
        """``{"baseline": "builtin:reference", "candidate": "builtin:regressed"}`` (labels or spec strings)."""
        return {side: subject.spec.display for side, subject in self._subjects.items()}

    @property
    def fingerprints(self) -> dict[str, str]:
        """Each side's subject fingerprint (its directory in the cache)."""
        return {side: subject.fingerprint for side, subject in self._subjects.items()}

    def fingerprint(self, target: str | SubjectSpec) -> str:
        """The fingerprint of a side (``"baseline"``/``"candidate"``) or of any spec."""
        return self._subject(target).fingerprint

    def capabilities(self, target: str | SubjectSpec, *, load: bool = True) -> frozenset[str] | None:
        """The capabilities of a side or spec; with ``load`` a worker is started if they are not known yet.

        Returns:
            The capability names, or None when unknown (``load=False``) or the subject failed to load.
        """
        subject = self._subject(target)
        if subject.capabilities is None and load and subject.load_error is None:
            client = subject.acquire()
            try:
                with contextlib.suppress(ProbeError):
                    client.start()
                subject.learn(client)
            finally:
                subject.release(client)
        return subject.capabilities

    @property
    def metric(self) -> Any:
        """The primary :class:`rlaudit.metrics.Metric` every audit measures the learning gap on.

        Resolved once from the override, else both subjects' ``metrics()`` (read by a cached probe), else the
        episodic return; :attr:`metric_notes` says how it was chosen.
        """
        if self._metric is None:
            from rlaudit import metrics

            declared = {
                side: [metrics.Metric(**m) for m in found["metrics"]]
                for side, found in self._declared().items()
                if found.get("metrics")
            }
            self._metric, notes = metrics.resolve(declared, self.metric_override)
            self.metric_notes.extend(notes)
        return self._metric

    @property
    def train_steps(self) -> int:
        """Environment steps of a full training run (learning curves, attribution, checkpoints).

        The profile's ``train_steps``, shortened to the subjects' own run length when they declare
        ``total_steps(config)`` (a run past the end of their schedules can hide the gap); :attr:`metric_notes`
        says when it was shortened.
        """
        if self._train_steps is None:
            from rlaudit import metrics

            lengths = {side: found.get("total_steps") for side, found in self._declared().items()}
            self._train_steps, note = metrics.run_length(lengths, self.profile.train_steps)
            if note:
                self.metric_notes.append(note)
        return self._train_steps

    @property
    def short_train_steps(self) -> int:
        """Steps of a short run (runtime traces: schedules, geometry, logging), never longer than a full one."""
        return min(self.profile.short_train_steps, self.train_steps)

    def _declared(self) -> dict[str, dict[str, Any]]:
        """Each side's declarations (``metrics`` and ``total_steps``), read once by a cached probe.

        Raises:
            ProbeError: A side's declarations could not be read because its worker died, hung or ran out of
                memory (while loading the subject, or reading them). Every check that needs the metric or the
                run length gets it as an ERROR: a fallback metric would answer another question than the
                subject asks. (A subject that fails to import, or whose ``metrics()`` raises, gets a note
                here: every probe on it reports that as an ERROR already.)
        """
        if self._declarations is None and self._declarations_error is None:
            from rlaudit import metrics

            declarations = {}
            pair = self.run(metrics.declared)
            for side in ("baseline", "candidate"):
                result = pair[side]
                if result.ok:
                    declarations[side] = dict(result.result)
                elif result.error is not None and result.error.kind in ("import", "exception"):
                    # The subject itself is broken: every probe on it reports that as an ERROR already.
                    self.metric_notes.append(
                        f"the {side}'s declarations (metrics(), total_steps()) failed: {result.error.message}"
                    )
                elif result.error is not None and not result.missing and self._declarations_error is None:
                    found = result.error
                    self._declarations_error = ProbeError(
                        found.kind,
                        f"the {side}'s declarations (metrics(), total_steps()) could not be read, so the metric "
                        f"and run length are unknown: {found.message}",
                        found.traceback,
                        found.stderr_tail,
                    )
            if self._declarations_error is None:
                self._declarations = declarations
        if self._declarations_error is not None:
            found = self._declarations_error  # a fresh copy for every check
            raise ProbeError(found.kind, found.message, found.traceback, found.stderr_tail)
        return self._declarations or {}

    def __repr__(self) -> str:
        return (
            f"Workbench(baseline={self.labels['baseline']!r}, candidate={self.labels['candidate']!r}, "
            f"profile={self.profile.name!r}, jobs={self.jobs}, cache={str(self.cache.root)!r})"
        )

    # --- running probes -------------------------------------------------------------------------------

    def run(self, probe_fn: Callable[..., Any], **params: Any) -> Pair:
        """Run a probe on both subjects (in parallel when ``jobs`` > 1), using the cache.

        Returns:
            The :class:`Pair`; failures are in ``pair.<side>.error``, never raised.
        """
        baseline, candidate = self.run_each(probe_fn, [(side, params) for side in SIDES], progress=False)
        return Pair(baseline=baseline, candidate=candidate)

    def run_side(self, side: str, probe_fn: Callable[..., Any], **params: Any) -> ProbeResult:
        """Run a probe on one side (``"baseline"`` or ``"candidate"``)."""
        if side not in SIDES:
            raise ValueError(
                f"side must be 'baseline' or 'candidate', got {side!r}; use run_spec for other subjects"
            )
        return self.run_each(probe_fn, [(side, params)], progress=False)[0]

    def run_spec(self, spec: str | SubjectSpec, probe_fn: Callable[..., Any], **params: Any) -> ProbeResult:
        """Run a probe on any subject (an attribution variant, a fix commit) with the same cache and workers.

        Args:
            spec: A spec string or :class:`SubjectSpec` (strings are parsed with the notebook's cwd as base).
        """
        return self.run_each(probe_fn, [(spec, params)], progress=False)[0]

    def run_many(
        self,
        probe_fn: Callable[..., Any],
        params_list: Sequence[Mapping[str, Any]],
        sides: Sequence[str] = SIDES,
        *,
        desc: str | None = None,
    ) -> list[Pair]:
        """Run a probe for each parameter set on the given sides, over several workers, with one progress bar.

        Returns:
            One :class:`Pair` per parameter set, in order (sides not asked for are None).
        """
        unknown = [side for side in sides if side not in SIDES]
        if unknown:
            raise ValueError(f"sides must be among {SIDES}, got {unknown}; use run_each for other subjects")
        calls = [(side, params) for params in params_list for side in sides]  # interleaved: both progress
        results = iter(self.run_each(probe_fn, calls, desc=desc))
        pairs = []
        for _ in params_list:
            by_side = {side: next(results) for side in sides}
            pairs.append(Pair(baseline=by_side.get("baseline"), candidate=by_side.get("candidate")))
        return pairs

    def run_each(
        self,
        probe_fn: Callable[..., Any],
        calls: Sequence[tuple[str | SubjectSpec, Mapping[str, Any]]],
        *,
        desc: str | None = None,
        progress: bool | None = None,
    ) -> list[ProbeResult]:
        """The general form: one probe over ``(subject, params)`` calls, in parallel, results in order.

        Args:
            probe_fn: A function decorated with :func:`rlaudit.probe.probe`.
            calls: ``(target, params)`` pairs; a target is ``"baseline"``, ``"candidate"``, a spec string or
                a :class:`SubjectSpec`.
            desc: Progress-bar label (default: the probe's function name).
            progress: Force the progress bar on/off (default: on in Jupyter or a terminal).

        Raises:
            TypeError: ``probe_fn`` is not a probe, or a parameter is not one it takes.
        """
        if self._closed:
            raise RuntimeError("this Workbench was closed; create a new one")
        info = probe_info(probe_fn)
        root = probe_import_root(probe_fn)
        items = []
        for target, params in calls:
            subject = self._subject(target)
            items.append((self._job(subject, info, root, bind_params(probe_fn, params)), subject))
        if not items:
            return []
        jobs = [job for job, _ in items]
        label = desc if desc is not None else info.name.rpartition(":")[2]
        try:
            if self._executor.shares_memory:
                # Threads of this process: lend them the pooled workers of each subject.
                outcomes = self._run_pooled(items, label, progress)
            else:
                # Shipped jobs (processes, a Ray cluster): what the shared cache already answers is not shipped.
                outcomes = [_answer_locally(job, subject) for job, subject in items]
                todo = [i for i, outcome in enumerate(outcomes) if outcome is None]
                if todo:
                    shipped = self._executor.map(
                        run_probe_job, [jobs[i] for i in todo], desc=label, progress=progress
                    )
                    for i, outcome in zip(todo, shipped, strict=True):
                        outcomes[i] = outcome
        except KeyboardInterrupt:
            self._kill_busy()
            raise
        results = []
        for (job, subject), outcome in zip(items, outcomes, strict=True):
            if isinstance(outcome, JobError):
                kind = getattr(outcome.error, "kind", None)
                if kind in ERROR_KINDS:
                    # The job's process or node was lost (a Ray worker killed, a node gone): that kind of failure.
                    error = ProbeError(
                        kind, f"{job.probe} did not finish: {outcome.error}", outcome.traceback
                    )
                else:
                    # rlaudit itself failed around the probe (e.g. the cache disk is full): report, do not raise.
                    error = ProbeError(
                        "exception",
                        f"rlaudit failed while running {job.probe}: {type(outcome.error).__name__}: "
                        f"{outcome.error}",
                        outcome.traceback,
                    )
                outcome = _failed(job, subject, error=error)
            for note in outcome.notes:
                print(f"rlaudit: {outcome.side}: {note}", flush=True)
                self.cache_notes.append(f"{outcome.side}: {note}")
            results.append(outcome)
        return results

    # --- machinery ------------------------------------------------------------------------------------

    def _run_pooled(
        self, items: Sequence[tuple[ProbeJob, _Subject]], label: str, progress: bool | None
    ) -> list[ProbeResult | JobError]:
        """Run jobs on this process's threads, taking the next one that nobody else is computing.

        Notebooks of one report run side by side and ask for the same shared artifacts (the training runs
        every learning audit reads). Taken in order, two notebooks would wait on each other's lock job after
        job, one core computing while the other waits; instead each thread takes the first pending job whose
        artifact no other process (or thread) is computing at that moment, and waits on a busy one only
        when nothing else is left. Results come back in the order of ``items``.
        """
        pending = list(range(len(items)))
        keys = [
            subject.store.key(job.fingerprint, job.probe, job.version, job.params) for job, subject in items
        ]
        claim_lock = threading.Lock()

        def claim() -> int:
            with claim_lock:
                for pos, i in enumerate(pending):
                    if not items[i][1].store.busy(keys[i]):  # some process or thread computes it now
                        return pending.pop(pos)
                return pending.pop(0)

        def run(_slot: int) -> tuple[int, ProbeResult | JobError]:
            i = claim()
            job, subject = items[i]
            try:
                return i, _execute(job, subject)
            except Exception as exc:  # rlaudit itself failed around the probe: reported in the job's slot
                return i, JobError(i, job, exc, traceback.format_exc())

        outcomes: list[ProbeResult | JobError | None] = [None] * len(items)
        for entry in self._executor.map(run, range(len(items)), desc=label, progress=progress):
            if isinstance(entry, tuple):
                outcomes[entry[0]] = entry[1]
        return [
            outcome
            if outcome is not None
            else JobError(i, items[i][0], RuntimeError("the job was never run (its thread failed)"))
            for i, outcome in enumerate(outcomes)
        ]

    def _job(self, subject: _Subject, info: ProbeInfo, root: str, params: dict[str, Any]) -> ProbeJob:
        return ProbeJob(
            # The interpreter the fingerprint names, even where "this interpreter" is another one (a Ray node).
            spec={**subject.spec.to_dict(), "python": subject.spec.interpreter},
            side=subject.side,
            fingerprint=subject.fingerprint,
            probe=info.name,
            version=info.version,
            requires=info.requires,
            root=root,
            params=params,
            cache_root=str(self.cache.root),
            timeout=self.timeout,
            newer_than=self._since,
            client_options={k: v for k, v in self._client_options.items() if v is not None},
            failures_since=self._retry_failed_since,
        )

    def _new_subject(self, spec: SubjectSpec, side: str) -> _Subject:
        # A weak reference: subjects are held by the finalizer, which must not keep the workbench alive.
        evict = weakref.WeakMethod(self._evict)

        def on_release() -> None:
            method = evict()
            if method is not None:
                method()

        return _Subject(
            spec,
            side,
            self.cache,
            client_options={"timeout": self.timeout, **self._client_options},
            on_release=on_release,
        )

    def _subject(self, target: str | SubjectSpec) -> _Subject:
        if isinstance(target, str) and target in self._subjects:
            return self._subjects[target]
        spec = target if isinstance(target, SubjectSpec) else parse_spec(target)
        for subject in self._subjects.values():
            if subject.spec == spec:
                return subject
        with self._lock:
            subject = self._extra.get(spec)
            if subject is None:
                loader_for(spec)
                subject = self._new_subject(spec, spec.display)
                self._extra[spec] = subject
                self._subject_list.append(subject)
            return subject

    def _evict(self) -> None:
        """Shut down the least recently used idle workers beyond the limit on live workers."""
        with self._lock:
            subjects = list(self._subject_list)
        live = [(s, c) for s in subjects for c in list(s.clients) if c.alive]
        excess = len(live) - self._max_live
        if excess <= 0:
            return
        idle = [(s.last_used.get(id(c), 0.0), s, c) for s in subjects for c in list(s.idle) if c.alive]
        for _, subject, client in sorted(idle, key=lambda t: t[0])[:excess]:
            with subject.lock:
                if client not in subject.idle:
                    continue  # taken meanwhile
                subject.idle.remove(client)
                subject.clients.remove(client)
            client.close(wait=1.0)

    def _kill_busy(self) -> None:
        for subject in list(self._subject_list):
            for client in list(subject.clients):
                if client.busy:
                    client.kill()

    def worker_pids(self) -> dict[str, list[int]]:
        """Running worker processes per subject label (for diagnostics and tests)."""
        return {
            subject.side: [c.pid for c in subject.clients if c.pid is not None]
            for subject in list(self._subject_list)
        }

    def close(self) -> None:
        """Stop every worker and the dispatch threads (also done at exit and when garbage-collected).

        With :func:`rlaudit.engine.jobs.keep_workers` on, idle running workers are kept for the next workbench instead.
        """
        self._closed = True
        self._executor.shutdown(wait=False)
        _shutdown(self._subject_list)

    def __enter__(self) -> Workbench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def format_error(result: ProbeResult) -> str:
    """A printable account of a failed result (kind, message, traceback, stderr tail)."""
    if result.ok:
        return f"{result.side}: ok"
    if result.missing:
        return f"{result.side}: not run, the subject lacks {', '.join(result.missing)}"
    if result.error is None:
        return f"{result.side}: failed without an error"
    return f"{result.side}: {result.error.describe()}"
