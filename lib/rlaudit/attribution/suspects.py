"""Suspects: the changes an experiment can undo in the candidate, gathered from the audits and the config diff.

A suspect is one subsystem's config keys set back to the baseline's values (a *restore*, source
``"config"``), a fault removed from a built-in candidate (the built-in analog of a fix commit, ``"fix"``), a
named variant subject (a fix commit, ``"variant"``), or a code change between two versions of one source
(``"change"``, from :mod:`rlaudit.changes` when it is available: :func:`change_suspects`).

:func:`compose` turns a set of suspects into what the workbench runs; :func:`compose_injection` is the reverse
experiment (one change put into the baseline alone). A source whose suspects change the subject itself
(anything beyond config overrides) registers a :class:`Composer` in :data:`COMPOSERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rlaudit.attribution.ranking import audit_priors, evidence_order
from rlaudit.engine.subjects import SubjectSpec
from rlaudit.engine.workbench import Workbench
from rlaudit.findings import Finding


@dataclass(frozen=True)
class Suspect:
    """One change that an experiment can undo in the candidate.

    Attributes:
        name: Human label (``"restore rewards config"``, ``"fix loss.gae_bootstrap"``, a variant's name).
        subsystem: The subsystem it belongs to (for the status grid and the ranking).
        source: ``"config"`` (restore keys), ``"fix"`` (built-in fault removed), ``"variant"`` (named
            subject), or any source registered in :data:`COMPOSERS` (``"change"``: code changes).
        overrides: Config overrides that restore the baseline's values (``dotted.key=value``).
        remove: Faults removed from a built-in candidate.
        spec: A named variant subject (not composable with others).
        prior: Strength of the audit evidence against it (orders the search; never decides).
        inject: The reverse experiment, config overrides that put the candidate's values into the baseline.
        add: The reverse experiment for a built-in fix: faults added to a built-in baseline.
        refs: What the composer of its source undoes or puts in (commit or hunk ids of a code change).
    """

    name: str
    subsystem: str
    source: str
    overrides: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    spec: str | None = None
    prior: float = 0.0
    inject: tuple[str, ...] = ()
    add: tuple[str, ...] = ()
    refs: tuple[str, ...] = ()

    @property
    def composable(self) -> bool:
        return self.spec is None

    @property
    def injectable(self) -> bool:
        """Whether the reverse experiment exists: its change can be put alone into the baseline."""
        if self.inject or self.add:
            return True
        composer = COMPOSERS.get(self.source)
        return bool(self.refs) and composer is not None and composer.put is not None


@dataclass(frozen=True)
class Composer:
    """How the suspects of one source change a subject.

    Attributes:
        undo: ``(spec, suspects) -> spec``: the subject ``spec`` (the candidate, or the candidate with other
            sources' suspects already undone) with these suspects undone together.
        put: ``(baseline spec, suspect) -> spec or None``: the baseline with this one change put in (the
            reverse check); None where a suspect has no reverse experiment.
    """

    undo: Callable[[SubjectSpec, Sequence[Suspect]], SubjectSpec]
    put: Callable[[SubjectSpec, Suspect], SubjectSpec | None] | None = None


def _remove_faults(spec: SubjectSpec, suspects: Sequence[Suspect]) -> SubjectSpec:
    removes = [f for s in suspects for f in s.remove]
    return _respec(spec, f"{spec.text}-{','.join(removes)}") if removes else spec


def _add_faults(spec: SubjectSpec, suspect: Suspect) -> SubjectSpec | None:
    return _respec(spec, f"{spec.text}+{','.join(suspect.add)}") if suspect.add else None


COMPOSERS: dict[str, Composer] = {"fix": Composer(undo=_remove_faults, put=_add_faults)}
"""Source -> how its suspects change a subject. Config restores need none (they are overrides on the
candidate itself) and variants are whole subjects; :mod:`rlaudit.changes` registers ``"change"``."""


def _yaml_value(value: Any) -> str:
    import json

    return "null" if value is None else json.dumps(value)


def config_suspects(wb: Workbench, priors: dict[str, float]) -> tuple[list[Suspect], list[str]]:
    """One restore per subsystem whose config keys differ (from the config audit's diff).

    Returns:
        ``(suspects, notes)``; keys the candidate's config does not have cannot be restored through
        overrides and are named in the notes.
    """
    from rlaudit.config.audit import load_diff

    _, diff = load_diff(wb)
    if diff is None:
        return [], ["config restores unavailable: a subject's config could not be resolved"]
    notes = []
    suspects = []
    for subsystem, keys in sorted(diff.keys_by_subsystem().items()):
        overrides, inject, skipped = [], [], []
        for key in keys:
            if key in diff.candidate and key in diff.baseline:
                overrides.append(f"{key}={_yaml_value(diff.baseline[key])}")
                inject.append(f"{key}={_yaml_value(diff.candidate[key])}")
            else:
                skipped.append(key)
        if skipped:
            notes.append(
                f"{subsystem}: keys {', '.join(skipped)} exist on one side only; not restorable by override"
            )
        if overrides:
            suspects.append(
                Suspect(
                    name=f"restore {subsystem} config",
                    subsystem=subsystem,
                    source="config",
                    overrides=tuple(overrides),
                    prior=priors.get(subsystem, 0.0),
                    inject=tuple(inject),
                )
            )
    return suspects, notes


def builtin_fix_suspects(
    candidate_spec: str, priors: dict[str, float], baseline_spec: str = ""
) -> list[Suspect]:
    """For a built-in candidate: one suspect per fault it carries (the built-in analog of a fix commit).
    When the baseline is built-in too, each fault can also be injected into it alone (the reverse check)."""
    if not candidate_spec.startswith("builtin:"):
        return []
    from rlaudit.demo import faults as catalog
    from rlaudit.demo.subject import parse

    _, active = parse(candidate_spec.split(":", 1)[1])
    return [
        Suspect(
            name=f"fix {fid}",
            subsystem=catalog.CATALOG[fid].subsystem,
            source="fix",
            remove=(fid,),
            prior=priors.get(catalog.CATALOG[fid].subsystem, 0.0),
            add=(fid,) if baseline_spec.startswith("builtin:") else (),
        )
        for fid in active
    ]


def variant_suspects(variants: str, priors: dict[str, float]) -> list[Suspect]:
    """Named variant subjects from a parameter string: ``"name=spec, spec2"`` (a name may carry its
    subsystem as ``name@subsystem=spec``)."""
    from rlaudit.engine.validate import parse_variants

    # The same strict parser `rlaudit report` checks --variants with before any notebook runs.
    return [
        Suspect(
            name=v.name,
            subsystem=v.subsystem or "trainer",
            source="variant",
            spec=v.spec,
            prior=priors.get(v.subsystem, 0.0),
        )
        for v in parse_variants(variants)
    ]


CHANGES = ("auto", "off")
"""Values of the ``changes`` parameter: search the code changes between two versions of one source, or not."""


def change_suspects(
    wb: Workbench, priors: Mapping[str, float], changes: str = "auto", **search: Any
) -> tuple[list[Suspect], list[str]]:
    """Suspects from the code changes between the two sides, when they are versions of one source.

    The change-set search lives in :mod:`rlaudit.changes`: its ``suspects(wb, priors, **search) ->
    (suspects, notes)`` gives suspects of source ``"change"`` (with ``refs``), and it registers their
    :class:`Composer` in :data:`COMPOSERS`. Without that module, or with ``changes="off"``, there are none.

    Args:
        search: ``delta``, ``budget`` and ``seed`` of the attribution, which the change search uses too.

    Raises:
        ValueError: ``changes`` is neither ``"auto"`` nor ``"off"``.
    """
    if changes not in CHANGES:
        raise ValueError(f"changes={changes!r}; expected one of {', '.join(CHANGES)}")
    if changes == "off":
        return [], []
    try:
        from rlaudit import changes as change_search
    except ModuleNotFoundError as exc:
        if exc.name != "rlaudit.changes":
            raise
        return [], []
    find = getattr(change_search, "suspects", None)
    return find(wb, priors, **search) if callable(find) else ([], [])


def gather_suspects(
    wb: Workbench, findings: Sequence[Finding], variants: str = "", *, changes: str = "auto", **search: Any
) -> tuple[list[Suspect], list[str]]:
    """Every suspect for this pair: built-in fixes, config restores not already covered by a fix of the same
    subsystem, named variants and code changes; strongest audit evidence first (ties in the order of the
    evidence ranking, :func:`~rlaudit.attribution.ranking.evidence_order`, then by name)."""
    priors = audit_priors(findings)
    fixes = builtin_fix_suspects(wb.specs["candidate"].text, priors, wb.specs["baseline"].text)
    restores, notes = config_suspects(wb, priors)
    code, code_notes = change_suspects(wb, priors, changes, **search)
    covered = {s.subsystem for s in fixes}
    suspects = (
        fixes
        + [s for s in restores if s.subsystem not in covered]
        + variant_suspects(variants, priors)
        + code
    )
    order = {sub: i for i, sub in enumerate(evidence_order(findings))}
    suspects.sort(key=lambda s: (-s.prior, order.get(s.subsystem, len(order)), s.name))
    return suspects, notes + code_notes


def compose(candidate: SubjectSpec, suspects: Sequence[Suspect]) -> tuple[str | SubjectSpec, tuple[str, ...]]:
    """What to run for the candidate with ``suspects`` undone together: ``(target, overrides)``.

    The target is ``"candidate"`` itself when only config restores are involved (same worker, same cache),
    the candidate's spec changed by the :class:`Composer` of each other source in turn (built-in fixes
    remove faults, keeping its interpreter, cwd and env), or a named variant's own spec.

    Raises:
        ValueError: A named variant combined with anything else (variants are whole subjects), or a
            suspect whose source changes the subject but has no composer registered.
    """
    from rlaudit.engine.subjects import parse_spec

    variants = [s for s in suspects if not s.composable]
    if variants:
        if len(suspects) > 1:
            raise ValueError("a named variant subject cannot be combined with other suspects")
        return parse_spec(variants[0].spec or ""), ()
    overrides = tuple(o for s in suspects for o in s.overrides)
    target = candidate
    for source in dict.fromkeys(s.source for s in suspects):
        group = [s for s in suspects if s.source == source]
        composer = COMPOSERS.get(source)
        if composer is not None:
            target = composer.undo(target, group)
        elif any(s.remove or s.refs for s in group):
            raise ValueError(
                f"suspects of source {source!r} ({', '.join(s.name for s in group)}) change the subject, "
                f"but no composer is registered for it; expected one of {', '.join(COMPOSERS)} "
                "(register a Composer in rlaudit.attribution.suspects.COMPOSERS)"
            )
    return ("candidate" if target is candidate else target), overrides


def compose_injection(baseline: SubjectSpec, suspect: Suspect) -> tuple[str | SubjectSpec, tuple[str, ...]]:
    """What to run for the baseline with ``suspect``'s change put in alone: ``(target, overrides)``. A
    config change runs on the baseline itself with the candidate's values as overrides; a built-in fault is
    added to the built-in baseline's spec (``builtin:reference+<fault>``); other sources go through the
    ``put`` of their :class:`Composer`."""
    composer = COMPOSERS.get(suspect.source)
    target = composer.put(baseline, suspect) if composer is not None and composer.put is not None else None
    return (target if target is not None else "baseline"), suspect.inject


def _respec(spec: SubjectSpec, text: str) -> SubjectSpec:
    """``spec`` with its spec string changed (built-in faults added or removed), run the same way: same
    interpreter, environment, working directory and requirements."""
    from rlaudit.engine.subjects import parse_spec

    return parse_spec(text).replace(
        python=spec.python,
        requirements=spec.requirements,
        system_site_packages=spec.system_site_packages,
        cwd=spec.cwd,
        env=dict(spec.env),
    )
