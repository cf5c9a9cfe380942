"""Code changes as suspects: the change set mapped with the subjects' own evidence, the bisection run on the
engine through the workbench's executor, and its culprits handed to the screening.

:func:`find_culprits` computes the pair's change set (:func:`rlaudit.changes.changeset.change_set`), maps its
hunks with the subjects' ``config_keys()`` and resolved configs (the config room's cached probe), with a trace
of which functions the rooms' probes execute in each side's process (:data:`TRACED`), and with the audits'
evidence (priors per subsystem), then runs :class:`rlaudit.attribution.bisection.Bisection` on an
:class:`~rlaudit.attribution.engine.Engine` with the profile's sizes: every run goes through :meth:`rlaudit.engine.workbench.Workbench.run_each`, so through the executor (local
processes or a Ray cluster) and the cache. The result is kept per pair (:func:`last_result`).

:func:`suspects` is what attribution calls (:func:`rlaudit.attribution.suspects.change_suspects`): it runs the
search and returns its culprits as suspects of source ``"change"`` (their ``refs`` are hunk ids), and registers
how to undo and put in such suspects (:data:`rlaudit.attribution.suspects.COMPOSERS`): hybrids of the candidate
with the hunks reverted, and of the baseline with them applied. The screening
(:mod:`rlaudit.attribution.screening`) then measures them beside the config restores, on the same cached runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from rlaudit.attribution.arms import DEFAULT_DELTA
from rlaudit.attribution.bisection import Bisection
from rlaudit.attribution.culprits import ChangeResult, Culprit
from rlaudit.attribution.engine import Engine
from rlaudit.attribution.suspects import COMPOSERS, Composer, Suspect
from rlaudit.changes import changeset as csm
from rlaudit.changes.hunks import Hunk
from rlaudit.changes.priors import map_all
from rlaudit.changes.targets import Targets
from rlaudit.changes.trees import ChangeSetError, Tree

TRAIN_TRACE_STEPS = 2048  # environment steps of the traced training run: enough to reach every update path

TRACED: tuple[dict[str, Any], ...] = (
    {
        "label": "config",
        "subsystem": "config",
        "probe": "rlaudit.config.probes:resolved_config",
        "params": {},
    },
    {"label": "env", "subsystem": "env", "probe": "rlaudit.env.probes:rollout", "params": {"steps": 64}},
    {
        "label": "rewards",
        "subsystem": "rewards",
        "probe": "rlaudit.rewards.probes:reward_wrappers",
        "params": {"steps": 32},
    },
    {
        "label": "spaces",
        "subsystem": "spaces",
        "probe": "rlaudit.spaces.probes:observations",
        "params": {"rollout_steps": 64, "keep_rows": 64},
    },
    {
        "label": "agents",
        "subsystem": "agents",
        "probe": "rlaudit.agents.probes:network",
        "params": {"seeds": [0], "rollout_steps": 64, "batch": 32},
    },
    {
        "label": "init",
        "subsystem": "init",
        "probe": "rlaudit.init.probes:init_stats",
        "params": {"seeds": [0], "rollout_steps": 64, "batch": 32},
    },
    {
        "label": "optimizer",
        "subsystem": "optimizer",
        "probe": "rlaudit.optimizer.probes:optimizer_setup",
        "params": {},
    },
    {
        "label": "loss",
        "subsystem": "loss",
        "probe": "rlaudit.loss.probes:rollout_loss",
        "params": {"steps": 64},
    },
    {
        "label": "td-targets",
        "subsystem": "loss",
        "probe": "rlaudit.loss.probes:td_targets",
        "params": {"batch_size": 16},
    },
    {
        "label": "td-loss",
        "subsystem": "loss",
        "probe": "rlaudit.loss.probes:td_loss",
        "params": {"batch_size": 16},
    },
    {
        "label": "curriculum",
        "subsystem": "curriculum",
        "probe": "rlaudit.curriculum.probes:sampling",
        "params": {"phases": 1, "samples_per_phase": 50, "episodes": 20},
    },
    {"label": "memory", "subsystem": "memory", "probe": "rlaudit.memory.probes:buffer_sizes", "params": {}},
    {
        "label": "training",
        "subsystem": "training",
        "probe": "rlaudit.trainer.probes:train_run",
        "params": {"steps": TRAIN_TRACE_STEPS, "seed": 0},
    },
)
"""The probes traced in each side's process (small sizes: the trace needs which functions run, not numbers):
one per subsystem whose room reads the subject's code (for loss, the on-policy loss and the off-policy TD
targets and TD loss; a probe whose capability the subject lacks is skipped), and a short training run
(``"training"``: whether code runs at all, not a subsystem)."""


@dataclass
class Entry:
    """What the composers need for a pair: the change set and how to build its hybrids."""

    change_set: csm.ChangeSet
    targets: Targets


RESULTS: dict[tuple[str, str], ChangeResult] = {}
"""(baseline spec, candidate spec) -> the last change search's result in this process."""
ENTRIES: dict[str, Entry] = {}
"""Spec string of either side -> the change set and hybrid builder of its pair (for the composers)."""


def _key(wb: Any) -> tuple[str, str]:
    return (wb.specs["baseline"].text, wb.specs["candidate"].text)


def last_result(wb: Any) -> ChangeResult | None:
    """The result of the last change search on this workbench's pair (None when none ran)."""
    return RESULTS.get(_key(wb))


def _config_evidence(
    wb: Any,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None, str]:
    """Both resolved configs and the subjects' ``config_keys()`` (the config room's cached probe)."""
    from rlaudit.config import probes as config_probes

    pair = wb.run(config_probes.resolved_config)
    configs = []
    keys = None
    for side in (pair.baseline, pair.candidate):
        if side.ok:
            configs.append(side.json("config"))
            if keys is None and side.result.get("has_config_keys"):
                keys = side.json("config_keys")
        else:
            configs.append(None)
    note = "" if pair.ok else "config keys not used to map hunks: a side's config() could not be resolved"
    return configs[0], configs[1], keys, note


def _up(tree: Tree) -> int:
    return len(PurePosixPath(tree.subject).parts) - 1


def trace_sides(
    wb: Any, cs: csm.ChangeSet, probes: Sequence[Mapping[str, Any]] = TRACED
) -> tuple[dict, list[str]]:
    """Per side, ``"<path>::<qualname>"`` -> the subsystems whose probes executed it (training included as
    ``"training"``), from :func:`rlaudit.changes.probes.trace` in each side's own process."""
    from rlaudit.changes import probes as change_probes
    from rlaudit.changes.trace import functions_by_subsystem

    out: dict[str, dict[str, list[str]]] = {}
    notes = []
    for side, tree in (("baseline", cs.baseline), ("candidate", cs.candidate)):
        res = wb.run_side(side, change_probes.trace, probes=[dict(p) for p in probes], up=_up(tree))
        if not res.ok:
            notes.append(f"{side}: the probes could not be traced ({res.error}); hunks mapped without it")
            continue
        out[side] = functions_by_subsystem(res.json("functions"))
    return out, notes


def prepare(
    wb: Any, priors: Mapping[str, float] | None = None, *, trace: bool = True
) -> tuple[csm.ChangeSet | None, list[str]]:
    """The pair's change set, every hunk mapped (names, config keys, trace) and prioritized, or None and why."""
    try:
        cs = csm.change_set(wb.specs["baseline"], wb.specs["candidate"])
    except (ChangeSetError, ValueError) as exc:  # git missing, a ref gone: say so, attribution goes on
        return None, [f"code changes not searched: {exc}"]
    if isinstance(cs, str):
        schemes = {wb.specs[side].scheme for side in ("baseline", "candidate")}
        # built-in, sb3 or module subjects are not versions of a source tree: nothing to say about it
        return None, [f"code changes not searched: {cs}"] if schemes <= {"git", "file"} else []
    notes = list(cs.notes)
    if not cs.searched:
        return None, [*notes, "code changes not searched: only documentation differs"]
    base_cfg, cand_cfg, keys, note = _config_evidence(wb)
    if note:
        notes.append(note)
    executed: dict = {}
    if trace:
        executed, trace_notes = trace_sides(wb, cs)
        notes += trace_notes
    map_all(
        cs,
        config_keys=keys,
        baseline_config=base_cfg,
        candidate_config=cand_cfg,
        executed=executed,
        audit_priors=priors or {},
    )
    return cs, notes


def find_culprits(
    wb: Any,
    priors: Mapping[str, float] | None = None,
    *,
    delta: float | None = None,
    budget: int | None = None,
    seed: int = 0,
    trace: bool = True,
    steps: int | None = None,
) -> tuple[ChangeResult | None, list[str]]:
    """Run the change search on the workbench's pair (see the module docstring).

    Args:
        wb: The workbench (its profile sizes the runs; its executor runs them).
        priors: Per subsystem, the audits' evidence against it (orders the search).
        delta: The share of a gap that counts as meaningful (default: attribution's).
        budget: Training runs the search may spend (default: the profile's attribution budget).
        seed: Seeds the bootstrap intervals.
        trace: Trace which functions the rooms' probes execute (priors); off, names and config keys only.
        steps: Environment steps per training run (default: the profile's, so the baseline's and candidate's
            runs are the trainer audit's, from the cache).

    Returns:
        ``(result, notes)``; the result is None when the pair has no change set (the notes say why).
    """
    cs, notes = prepare(wb, priors, trace=trace)
    if cs is None:
        return None, notes
    targets = Targets(cs, wb.specs["baseline"], wb.specs["candidate"])
    entry = Entry(cs, targets)
    for side in ("baseline", "candidate"):
        ENTRIES[wb.specs[side].text] = entry
    engine = Engine(
        wb, delta=DEFAULT_DELTA if delta is None else delta, budget=budget, seed=seed, steps=steps
    )
    result = Bisection(engine, cs, targets=targets).run()
    result.notes = notes + result.notes
    RESULTS[_key(wb)] = result
    return result, notes


# ------------------------------------------------------------------------------------------------------------
# The seam into attribution
# ------------------------------------------------------------------------------------------------------------

CULPRIT_PRIOR = 10.0
"""Prior of a culprit as an attribution suspect: measured evidence, so it is restored alone first."""


def suspect_name(c: Culprit) -> str:
    return f"revert {c.name}"


def suspects(
    wb: Any,
    priors: Mapping[str, float],
    *,
    delta: float | None = None,
    budget: int | None = None,
    seed: int = 0,
) -> tuple[list[Any], list[str]]:
    """The change search's culprits as attribution suspects (source ``"change"``, ``refs`` the hunk ids), for
    :func:`rlaudit.attribution.suspects.change_suspects`; registers their composer. ``delta``, ``budget``
    and ``seed`` are the attribution's (see :func:`find_culprits`).

    Only culprits reverted from the candidate itself are offered (one that was measured against its own
    commit, because a later commit rewrote its lines, cannot be undone in the candidate alone); the notes say
    what the search found and spent.
    """
    result, notes = find_culprits(wb, priors, delta=delta, budget=budget, seed=seed)
    if result is None:
        return [], notes
    register()  # only for pairs with a change set: attribution composes change suspects from here on
    out = []
    for c in result.culprits:
        if c.verdict not in ("cause", "minor"):
            continue
        if c.frame[0] != "candidate":
            notes.append(
                f"{c.name} is reported by the change search only: it cannot be undone in the candidate"
            )
            continue
        subsystem = c.subsystem or "trainer"
        out.append(
            Suspect(
                name=suspect_name(c),
                subsystem=subsystem,
                source="change",
                refs=tuple(h.id for h in c.hunks),
                prior=CULPRIT_PRIOR + max(0.0, c.best()),
            )
        )
    spent = result.spent
    notes.append(
        f"code changes: {len(result.culprits)} culprit(s) among {spent['hunks']} hunks"
        + (f" in {spent['commits']} commits" if spent["commits"] else "")
        + f", for {spent['runs']} training runs (a per-hunk sweep at {spent['seeds_per_arm_max']} seeds: "
        f"{spent['per_hunk_sweep_runs']})"
    )
    return out, notes


def _entry(spec: Any) -> Entry:
    entry = ENTRIES.get(spec.text)
    if entry is None:
        raise ValueError(
            f"no change set is known for {spec.display!r}; code-change suspects come from "
            "rlaudit.attribution.code_changes.suspects(wb, priors) on the same pair"
        )
    return entry


def _hunks(entry: Entry, suspects: Sequence[Any]) -> list[Hunk]:
    by_id = entry.change_set.hunks()
    return [by_id[r] for s in suspects for r in s.refs]


def undo(spec: Any, suspects: Sequence[Any]) -> Any:
    """The candidate ``spec`` with the suspects' hunks reverted (a hybrid); a subject that fails to import,
    naming why, when the hunks do not revert together (the runs record it as an unresolved arm)."""
    entry = _entry(spec)
    hunks = _hunks(entry, suspects)
    label = " + ".join(s.name for s in suspects)
    target, why = entry.targets.hybrid("candidate", hunks, reverse=True, label=label)
    return target if target is not None else unresolved_subject(why, like=spec)


def put(spec: Any, suspect: Any) -> Any:
    """The baseline ``spec`` with the suspect's hunks applied alone (the reverse check); None when they do not
    apply to the baseline."""
    entry = _entry(spec)
    hunks = _hunks(entry, [suspect])
    if entry.targets.applies("baseline", hunks, reverse=False):
        return None
    target, _ = entry.targets.hybrid("baseline", hunks, reverse=False, label=f"apply {suspect.name}")
    return target


def unresolved_subject(why: str, like: Any = None) -> Any:
    """A subject that fails to import with ``why`` (an unresolved hybrid that must still be named a subject)."""
    from rlaudit.changes.hybrids import hybrids_dir
    from rlaudit.engine.subjects import parse_spec

    key = hashlib.sha256(why.encode()).hexdigest()[:16]
    directory = hybrids_dir() / f"unresolved-{key}"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "subject.py"
    if not path.is_file():
        path.write_text(f'"""An unresolved hybrid."""\n\nraise ImportError({why!r})\n')
    spec = parse_spec(str(path), label="unresolved hybrid")
    return spec if like is None else spec.replace(python=like.python, env=dict(like.env))


def register() -> None:
    """Register the ``"change"`` composer with attribution (idempotent)."""
    COMPOSERS["change"] = Composer(undo=undo, put=put)


def causes_changes(result: Any) -> dict[str, list[dict[str, str]]]:
    """Per subsystem, the code changes behind attribution's measured causes there: ``{commit, path, hunk,
    function}`` for every hunk of a ``"change"`` suspect ranked as a single (for ``attribution.json``)."""
    out: dict[str, list[dict[str, str]]] = {}
    by_name = {s.name: s for s in getattr(result, "suspects", [])}
    for rows in getattr(result, "ranking", {}).values():
        for row in rows:
            if not row.get("single"):
                continue
            s = by_name.get(row["suspects"][0])
            if s is None or s.source != "change":
                continue
            for entry in {id(e): e for e in ENTRIES.values()}.values():
                hunks = entry.change_set.hunks()
                if not all(r in hunks for r in s.refs):
                    continue
                items = out.setdefault(s.subsystem, [])
                for r in s.refs:
                    h = hunks[r]
                    item = {"commit": h.commit, "path": h.path, "hunk": h.header, "function": h.where}
                    if item not in items:
                        items.append(item)
                break
    return out


def save(result: ChangeResult, directory: str | Path) -> Path:
    """Write the change search's result as ``changes.json`` beside the findings."""
    from rlaudit.engine.io import atomic_write_json

    target = Path(directory) / "changes.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_json(target, result.to_dict())
