"""Suspects: the changes an experiment can undo in the candidate, gathered from the audits and the config diff.

A suspect is one subsystem's config keys set back to the baseline's values (a *restore*), a fault removed from
a built-in candidate (the built-in analog of a fix commit), or a named variant subject (a fix commit).
:func:`compose` turns a set of suspects into what the workbench runs; :func:`compose_injection` is the reverse
experiment (one change put into the baseline alone).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlaudit.attribution.ranking import audit_priors
from rlaudit.findings import SUBSYSTEMS, Finding
from rlaudit.subjects import SubjectSpec
from rlaudit.workbench import Workbench


@dataclass(frozen=True)
class Suspect:
    """One change that an experiment can undo in the candidate.

    Attributes:
        name: Human label (``"restore rewards config"``, ``"fix loss.gae_bootstrap"``, a variant's name).
        subsystem: The subsystem it belongs to (for the status grid and the ranking).
        source: ``"config"`` (restore keys), ``"fix"`` (built-in fault removed), ``"variant"`` (named subject).
        overrides: Config overrides that restore the baseline's values (``dotted.key=value``).
        remove: Faults removed from a built-in candidate.
        spec: A named variant subject (not composable with others).
        prior: Strength of the audit evidence against it (orders the search; never decides).
        inject: The reverse experiment, config overrides that put the candidate's values into the baseline.
        add: The reverse experiment for a built-in fix: faults added to a built-in baseline.
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

    @property
    def composable(self) -> bool:
        return self.spec is None

    @property
    def injectable(self) -> bool:
        return bool(self.inject or self.add)


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
    out = []
    for item in (v.strip() for v in variants.split(",") if v.strip()):
        label, sep, spec = item.partition("=")
        if not sep:
            label, spec = item, item
        label, _, subsystem = label.partition("@")
        if subsystem and subsystem not in SUBSYSTEMS:
            raise ValueError(
                f"variant {item!r}: unknown subsystem {subsystem!r}; expected one of {SUBSYSTEMS}"
            )
        out.append(
            Suspect(
                name=label.strip(),
                subsystem=subsystem or "trainer",
                source="variant",
                spec=spec.strip(),
                prior=priors.get(subsystem, 0.0),
            )
        )
    return out


def gather_suspects(
    wb: Workbench, findings: Sequence[Finding], variants: str = ""
) -> tuple[list[Suspect], list[str]]:
    """Every suspect for this pair: built-in fixes, config restores not already covered by a fix of the same
    subsystem, and named variants; ordered by audit evidence (strongest first)."""
    priors = audit_priors(findings)
    fixes = builtin_fix_suspects(wb.specs["candidate"].text, priors, wb.specs["baseline"].text)
    restores, notes = config_suspects(wb, priors)
    covered = {s.subsystem for s in fixes}
    suspects = (
        fixes + [s for s in restores if s.subsystem not in covered] + variant_suspects(variants, priors)
    )
    suspects.sort(
        key=lambda s: (-s.prior, SUBSYSTEMS.index(s.subsystem) if s.subsystem in SUBSYSTEMS else 99, s.name)
    )
    return suspects, notes


def compose(candidate: SubjectSpec, suspects: Sequence[Suspect]) -> tuple[str | SubjectSpec, tuple[str, ...]]:
    """What to run for the candidate with ``suspects`` undone together: ``(target, overrides)``.

    The target is ``"candidate"`` itself when only config restores are involved (same worker, same cache),
    the candidate's spec with faults removed for built-in fixes (keeping its interpreter, cwd and env), or a
    named variant's own spec.

    Raises:
        ValueError: A named variant combined with anything else (variants are whole subjects).
    """
    from rlaudit.subjects import parse_spec

    variants = [s for s in suspects if not s.composable]
    if variants:
        if len(suspects) > 1:
            raise ValueError("a named variant subject cannot be combined with other suspects")
        return parse_spec(variants[0].spec or ""), ()
    overrides = tuple(o for s in suspects for o in s.overrides)
    removes = [f for s in suspects for f in s.remove]
    if not removes:
        return "candidate", overrides
    return _respec(candidate, f"{candidate.text}-{','.join(removes)}"), overrides


def compose_injection(baseline: SubjectSpec, suspect: Suspect) -> tuple[str | SubjectSpec, tuple[str, ...]]:
    """What to run for the baseline with ``suspect``'s change put in alone: ``(target, overrides)``. A
    config change runs on the baseline itself with the candidate's values as overrides; a built-in fault is
    added to the built-in baseline's spec (``builtin:reference+<fault>``)."""
    if not suspect.add:
        return "baseline", suspect.inject
    return _respec(baseline, f"{baseline.text}+{','.join(suspect.add)}"), suspect.inject


def _respec(spec: SubjectSpec, text: str) -> SubjectSpec:
    """``spec`` with its spec string changed (built-in faults added or removed), run the same way: same
    interpreter, environment, working directory and requirements."""
    from rlaudit.subjects import parse_spec

    return parse_spec(text).replace(
        python=spec.python,
        requirements=spec.requirements,
        system_site_packages=spec.system_site_packages,
        cwd=spec.cwd,
        env=dict(spec.env),
    )
