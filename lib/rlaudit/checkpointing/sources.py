"""Where each side's checkpoints come from, and what a check needs before it can read them.

Subjects with ``train`` get short training runs: the shared run of :mod:`rlaudit.trainer.runs` (seed 0 at the
profile's length) and a dedicated short run that saves every update when the subject's ``config_keys()`` names a
checkpoint-interval key (so that a resume point and several files exist even at the smoke profile). A subject
without ``train`` is audited on the checkpoints its ``checkpoints(config)`` lists. The evidence objects here
carry a ``guard`` (see :mod:`rlaudit.checks`): a missing capability is SKIPPED by name, a failed run is an
ERROR, and a run that wrote no checkpoint is a finding of its own.
"""

from __future__ import annotations

import fnmatch
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlaudit.checkpointing import probes
from rlaudit.engine.workbench import SIDES, Pair, ProbeResult, Workbench
from rlaudit.engine.worker import ProbeError
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.flatdiff import flatten

SUBSYSTEM = "checkpointing"
INTERVAL_KEY = re.compile(r"(interval|every|freq|frequency|period)", re.IGNORECASE)

_MEMO: weakref.WeakKeyDictionary[Workbench, dict[str, Any]] = weakref.WeakKeyDictionary()


def memo(wb: Workbench, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per workbench: a failed training run is not cached on disk (errors never are), and
    the seven checks of this room must not retrain it seven times."""
    store = _MEMO.setdefault(wb, {})
    if key not in store:
        store[key] = compute()
    return store[key]


def capabilities(wb: Workbench) -> dict[str, frozenset[str]]:
    """Each side's capabilities, from a cached probe (works before any other probe has run on the subject).

    Raises:
        ProbeError: A side's worker failed to load the subject (it died, hung, ran out of memory, or the
            import failed): the checks report that as an ERROR, not as capabilities the subject lacks.
    """
    pair = memo(wb, "capabilities", lambda: wb.run(probes.capabilities))
    for side in SIDES:
        error = pair[side].error
        if not pair[side].ok and error is not None and not pair[side].missing:
            raise ProbeError(error.kind, f"{side}: {error.message}", error.traceback, error.stderr_tail)
    return {
        side: frozenset(pair[side].result.get("capabilities", [])) if pair[side].ok else frozenset()
        for side in SIDES
    }


def trains(caps: frozenset[str]) -> bool:
    """The side can produce its own runs (``train`` and ``config``)."""
    return "train" in caps and "config" in caps


def shared_run(wb: Workbench) -> Pair:
    """The shared training run of seed 0 at the profile's length (the one every notebook reads)."""
    from rlaudit.trainer.runs import runs

    return memo(wb, "shared_run", lambda: runs(wb, seeds=[0])[0])


def dedicated_overrides(wb: Workbench) -> dict[str, list[str]]:
    """Per side, overrides that make a short run save a checkpoint every update: each integer key the
    subject's ``config_keys()`` files under checkpointing whose name says interval/every/freq, set to 1.
    Empty when the subject names none (its own checkpoints are used as they come)."""
    from rlaudit.config import probes as config_probes

    pair = wb.run(config_probes.resolved_config)
    out: dict[str, list[str]] = {}
    for side in SIDES:
        res = pair[side]
        found: list[str] = []
        if res.ok and res.result.get("has_config_keys") and res.result.get("accepts_overrides"):
            patterns = (res.json("config_keys") or {}).get(SUBSYSTEM, [])
            for key, value in flatten(res.json("config")).items():
                if isinstance(value, bool) or not isinstance(value, int):
                    continue
                if any(fnmatch.fnmatch(key, pat) for pat in patterns) and INTERVAL_KEY.search(
                    key.rsplit(".", 1)[-1]
                ):
                    found.append(f"{key}=1")
        out[side] = found
    return out


def dedicated_params(wb: Workbench) -> dict[str, dict[str, Any]]:
    """Per side, the ``train_run`` parameters of the dedicated short run."""
    overrides = dedicated_overrides(wb)
    out = {}
    for side in SIDES:
        params: dict[str, Any] = {"steps": int(wb.short_train_steps), "seed": 0}
        if overrides[side]:
            params["overrides"] = overrides[side]
        out[side] = params
    return out


def dedicated_run(wb: Workbench) -> dict[str, ProbeResult]:
    """The dedicated short runs of both sides (cached), run in parallel; a side without ``train`` gets the
    result that says so."""
    from rlaudit.trainer.probes import train_run

    params = dedicated_params(wb)
    results = memo(
        wb,
        "dedicated_run",
        lambda: wb.run_each(train_run, [(side, params[side]) for side in SIDES], progress=False),
    )
    return dict(zip(SIDES, results, strict=True))


def run_checkpoints(res: ProbeResult) -> list[str]:
    """Absolute checkpoint paths of a ``train_run`` result (the subject's own order: latest first)."""
    out = []
    for p in res.result.get("checkpoints", []):
        path = Path(p)
        out.append(str(path if path.is_absolute() else Path(res.dir) / path))
    return out


def one_side(side: str, result: ProbeResult | None) -> Pair:
    """A Pair holding only ``side``'s result (to guard a probe run on one side)."""
    return Pair(**{s: (result if s == side else None) for s in SIDES})  # type: ignore[arg-type]


@dataclass
class Checkpoints:
    """Per side, where its checkpoints come from (:func:`sources`).

    Attributes:
        entries: Per side ``{"run": ProbeResult or None, "paths": [...], "origin": text, "missing": [...],
            "error": ProbeResult or None}``.
        need: What the check needs, for the finding when a side has none (``"a checkpoint"``).
    """

    entries: dict[str, dict[str, Any]]
    need: str = "a checkpoint"

    def __getitem__(self, side: str) -> dict[str, Any]:
        return self.entries[side]

    def items(self) -> Any:
        return self.entries.items()

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        """SKIPPED (no way to get checkpoints), ERROR (a run failed), or a finding when a side has none."""
        return guard_sources(self.entries, id, hypothesis, self.need, subsystem=subsystem)


def sources(wb: Workbench, *, shared: bool = False) -> Checkpoints:
    """Per side: the dedicated short run's checkpoints (or, with ``shared``, the shared training run's) for
    subjects with ``train``; the checkpoints ``checkpoints(config)`` lists for others; neither: ``missing``."""
    caps = capabilities(wb)
    need_run = [side for side in SIDES if trains(caps[side])]
    results: dict[str, ProbeResult] = {}
    if need_run:
        if shared:
            pair = shared_run(wb)
            results = {side: pair[side] for side in SIDES}
        else:
            results = dedicated_run(wb)
    params = dedicated_params(wb) if need_run and not shared else {}
    out: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        entry: dict[str, Any] = {"run": None, "paths": [], "origin": "", "missing": [], "error": None}
        if side in need_run:
            res = results[side]
            entry["run"] = res
            if res.ok:
                entry["paths"] = run_checkpoints(res)
                entry["origin"] = _origin(wb, shared, params.get(side, {}))
            else:
                entry["error"] = res
        elif "checkpoints" in caps[side]:
            res = wb.run_side(side, probes.existing_checkpoints)
            entry["paths"] = list(res.result.get("paths", [])) if res.ok else []
            entry["origin"] = "checkpoints(config): checkpoints the subject already has"
        else:
            entry["missing"] = [c for c in ("train", "checkpoints") if c not in caps[side]]
        out[side] = entry
    return Checkpoints(out)


def _origin(wb: Workbench, shared: bool, params: dict[str, Any]) -> str:
    if shared:
        return f"the shared training run (seed 0, {int(wb.train_steps):,} steps)"
    extra = params.get("overrides")
    return (
        f"a dedicated run (seed 0, {int(params['steps']):,} steps"
        + (f", {', '.join(extra)}" if extra else "")
        + ")"
    )


def guard_sources(
    src: dict[str, dict[str, Any]] | Checkpoints,
    id: str,
    hypothesis: str,
    need: str = "a checkpoint",
    *,
    subsystem: str = SUBSYSTEM,
) -> Finding | None:
    """SKIPPED when a side has no way to get checkpoints or neither side has any, ERROR when a run failed, and a
    finding when one side has none (SUSPECT when only the candidate lost them, NOTED when only the baseline has
    none); None when both have checkpoints."""
    entries = src.entries if isinstance(src, Checkpoints) else src
    missing = {side: e["missing"] for side, e in entries.items() if e["missing"]}
    if missing:
        return Finding.skipped(id, subsystem, hypothesis, missing)
    for side, e in entries.items():
        if e["error"] is not None:
            from rlaudit.trainer.outcomes import failed_run_finding

            # a run the subject's own train() broke is reported once, by trainer/outcomes
            crashed = failed_run_finding(id, subsystem, hypothesis, side, e["run"])
            return crashed or one_side(side, e["run"]).guard(id, subsystem, hypothesis)
    empty = [side for side, e in entries.items() if not e["paths"]]
    if not empty:
        return None
    how = (
        "Make train() save checkpoints under recorder.run_dir and list them with checkpoints(config, "
        "run_dir=...) (latest first)."
    )
    origin = {side: e["origin"] or "no source" for side, e in entries.items()}
    if len(empty) == len(entries):
        skipped = Finding.skipped(
            id, subsystem, hypothesis, {side: ["checkpoints from its runs"] for side in empty}
        )
        skipped.evidence.summary = (
            f"no checkpoints on either side ({need} is needed; looked in {origin['baseline']} | "
            f"{origin['candidate']})"
        )
        skipped.remediation = how
        return skipped
    lost = empty == ["candidate"]
    return Finding(
        id=id,
        subsystem=subsystem,
        hypothesis=hypothesis,
        status=Status.SUSPECT if lost else Status.NOTED,
        severity=Severity.HIGH if lost else Severity.LOW,
        evidence=Evidence(
            baseline=len(entries["baseline"]["paths"]),
            candidate=len(entries["candidate"]["paths"]),
            summary=f"no checkpoints found for the {empty[0]} ({need} is needed; looked in {origin[empty[0]]}), "
            f"while the {'baseline' if lost else 'candidate'} has some"
            + (": the candidate no longer saves checkpoints" if lost else ""),
        ),
        remediation=how,
    )


def contents_of(wb: Workbench, side: str, paths: list[str], trust: bool = False) -> list[dict[str, Any]]:
    """The ``checkpoint_contents`` records of ``paths`` on ``side`` (cached); raises when the probe failed."""
    res = wb.run_side(side, probes.checkpoint_contents, paths=list(paths), trust=trust)
    if not res.ok:
        raise RuntimeError(f"reading the {side}'s checkpoints failed: {res.error or res.missing}")
    return res.json("contents")


def newest(records: list[dict[str, Any]], paths: list[str]) -> str:
    """The path whose saved step counter is highest (the subject's first path when no step is known)."""
    steps = [(r.get("step"), i) for i, r in enumerate(records) if r.get("step") is not None]
    return paths[max(steps)[1]] if steps else paths[0]


@dataclass
class Fidelity:
    """Each side's loader on its own newest checkpoint (:func:`own_fidelity`).

    Attributes:
        src: Where the checkpoints came from.
        results: Per side, the ``load_fidelity`` probe result.
        newest: Per side, the path of its newest checkpoint.
        stop: A SKIPPED/ERROR/no-checkpoint finding when the check cannot go on.
    """

    src: Checkpoints | None
    results: dict[str, ProbeResult] = field(default_factory=dict)
    newest: dict[str, str] = field(default_factory=dict)
    stop: Finding | None = None

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        if self.stop is None:
            return None
        # the same reason, under the id and hypothesis of the check that asked
        self.stop.id, self.stop.hypothesis = id, hypothesis
        return self.stop


def fidelity(wb: Workbench, side: str, path: str, trust: bool = False) -> ProbeResult:
    """The ``load_fidelity`` probe of ``side``'s loader on ``path`` (cached)."""
    return wb.run_side(
        side,
        probes.load_fidelity,
        path=str(path),
        seed=0,
        env_seed=0,
        rollout_steps=int(min(wb.profile.rollout_steps, 2000)),
        batch=256,
        trust=trust,
    )


def own_fidelity(wb: Workbench, trust: bool = False) -> Fidelity:
    """Each side's loader on its own newest checkpoint; ``stop`` says why not when it cannot run."""
    hypothesis = "load_checkpoint restores what was saved"
    caps = capabilities(wb)
    missing = {side: [] if "load_checkpoint" in caps[side] else ["load_checkpoint"] for side in SIDES}
    for side in SIDES:
        if not (trains(caps[side]) or "checkpoints" in caps[side]):
            missing[side] = [c for c in ("train", "checkpoints") if c not in caps[side]] + missing[side]
    if any(missing.values()):
        found = {k: v for k, v in missing.items() if v}
        return Fidelity(None, stop=Finding.skipped("checkpointing/loading", SUBSYSTEM, hypothesis, found))
    src = sources(wb)
    if (f := src.guard("checkpointing/loading", SUBSYSTEM, hypothesis)) is not None:
        return Fidelity(src, stop=f)
    out, paths = {}, {}
    for side in SIDES:
        recs = contents_of(wb, side, src[side]["paths"], trust)
        paths[side] = newest(recs, src[side]["paths"])
        out[side] = fidelity(wb, side, paths[side], trust)
    stop = Pair(baseline=out["baseline"], candidate=out["candidate"]).guard(
        "checkpointing/loading", SUBSYSTEM, hypothesis
    )
    return Fidelity(src, out, paths, stop)
