"""Subsystems and priors: each hunk linked to the audited subsystems by the names of its file, class and
function, by the config keys whose defaults it changes and by the probes that executed it; its prior (the
audits' evidence against those subsystems) orders the search and never decides it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from rlaudit.changes.hunks import Hunk

if TYPE_CHECKING:
    from rlaudit.changes.changeset import ChangeSet

# ------------------------------------------------------------------------------------------------------------
# Subsystems and priors
# ------------------------------------------------------------------------------------------------------------

NAME_WEIGHT = 0.5  # a subsystem named by the file, class or function
KEY_WEIGHT = 1.0  # a config key's default changed by the hunk, filed under a subsystem by config_keys()
TRACE_WEIGHT = 0.7  # the function was executed by probes of a subsystem


def _link(h: Hunk, subsystem: str, weight: float, reason: str) -> None:
    if not subsystem:
        return
    if weight > h.affinity.get(subsystem, 0.0):
        h.affinity[subsystem] = weight
    if reason not in h.reasons:
        h.reasons.append(reason)
    h.subsystem = max(h.affinity, key=lambda s: (h.affinity[s], -_order(s)))


def _order(subsystem: str) -> int:
    from rlaudit.findings import SUBSYSTEMS

    return SUBSYSTEMS.index(subsystem) if subsystem in SUBSYSTEMS else len(SUBSYSTEMS)


def _name_forms(h: Hunk) -> list[tuple[str, str]]:
    """(name as a dotted key, what it is) for the file and every function/class the hunk touches."""
    module = PurePosixPath(h.path).with_suffix("").as_posix().replace("/", ".")
    stem = PurePosixPath(h.path).stem
    if stem.startswith("__") and stem.endswith("__"):  # a package's __init__.py: the package's name speaks
        module = module.rpartition(".")[0]
        stem = PurePosixPath(h.path).parent.name
    forms = [(stem, f"file {h.path}"), (module, f"file {h.path}")]
    for full in h.functions or ((h.function,) if h.function else ()):
        # special methods say nothing about a subsystem (``__init__`` is a constructor, not initialization)
        name = ".".join(p for p in full.split(".") if not (p.startswith("__") and p.endswith("__")))
        if not name:
            continue
        last = name.split(".")[-1]
        forms += [
            (name, f"function {full}"),
            (last, f"function {full}"),
            (f"{stem}.{name}", f"function {full}"),
        ]
    return forms


def map_names(cs: ChangeSet, rules: Mapping[str, Sequence[str]] | None = None) -> None:
    """Link each hunk to subsystems named by its file, class and function (the subject's ``config_keys()``
    patterns first, then :data:`rlaudit.flatdiff.DEFAULT_RULES`)."""
    from rlaudit.flatdiff import classify_key

    for h in cs.hunks().values():
        for name, what in _name_forms(h):
            subsystem = classify_key(name, rules, fallback="")
            if subsystem:
                weight = NAME_WEIGHT if what.startswith("function") else NAME_WEIGHT * 0.6
                _link(h, subsystem, weight, f"{what} ({subsystem})")


def _flat_keys(config: Mapping[str, Any] | None) -> dict[str, Any]:
    from rlaudit.flatdiff import flatten

    return dict(flatten(config)) if config else {}


def map_config_keys(
    cs: ChangeSet,
    config_keys: Mapping[str, Sequence[str]] | None,
    baseline_config: Mapping[str, Any] | None = None,
    candidate_config: Mapping[str, Any] | None = None,
) -> None:
    """Link hunks that change a config key's default (``name = value``, ``name: type = value``, ``name=value``
    or ``"name": value`` on a changed line) to the subsystem ``config_keys()`` files the key under.

    Keys come from the resolved configs (flattened) or, without them, from the literal patterns of
    ``config_keys``. A key whose value differs between the two resolved configs is named with both values.
    """
    from rlaudit.flatdiff import classify_key

    base, cand = _flat_keys(baseline_config), _flat_keys(candidate_config)
    keys = set(base) | set(cand)
    if not keys and config_keys:
        keys = {p for patterns in config_keys.values() for p in patterns if not any(c in p for c in "*?[")}
    leaves: dict[str, list[str]] = {}
    for key in keys:
        leaf = key.split(".")[-1]
        if len(leaf) >= 2:
            leaves.setdefault(leaf, []).append(key)
    for h in cs.hunks().values():
        changed = "".join(line[1:] for line in h.lines if line[:1] in ("-", "+"))
        if not changed:
            continue
        for leaf, full in leaves.items():
            pattern = (
                rf"(?<![\w.]){re.escape(leaf)}\s*(?::[^=\n]*)?=(?!=)|['\"]{re.escape(leaf)}['\"]\s*:|"
                rf"^\s*{re.escape(leaf)}\s*:"
            )
            if not re.search(pattern, changed, flags=re.MULTILINE):
                continue
            for key in full:
                subsystem = classify_key(key, config_keys, fallback="config")
                values = ""
                if key in base and key in cand and base[key] != cand[key]:
                    values = f": {base[key]!r} -> {cand[key]!r}"
                weight = KEY_WEIGHT if values or not base else KEY_WEIGHT * 0.6
                _link(h, subsystem, weight, f"changes the default of {key}{values} ({subsystem})")


def map_trace(
    cs: ChangeSet, executed: Mapping[str, Mapping[str, Sequence[str]]], side: str = "candidate"
) -> None:
    """Link hunks to the subsystems whose probes executed their function.

    Args:
        cs: The change set.
        executed: Per side (``"baseline"``, ``"candidate"``): ``"<path>::<qualname>"`` -> subsystems whose
            probes executed it (:func:`rlaudit.changes.trace.functions_by_subsystem`). Paths are relative to
            each side's tree.
        side: Used for hunks of the whole diff (the side whose functions the hunk names).
    """
    for h in cs.hunks().values():
        names = list(h.functions) or ([h.function] if h.function else [])
        if not names or not h.path.endswith(".py"):
            continue
        hits: dict[str, str] = {}
        traced = False
        for which in ("candidate", "baseline") if side == "candidate" else ("baseline", "candidate"):
            table = executed.get(which) or {}
            traced |= any(k.startswith(f"{h.path}::") for k in table)
            for name in names:
                for sub in table.get(f"{h.path}::{name}", ()):
                    hits.setdefault(sub, name)
        if traced:
            h.executed = bool(hits)
        for sub, name in hits.items():
            if sub != "training":  # a training run executes nearly everything: it tells *whether* code runs
                _link(h, sub, TRACE_WEIGHT, f"{name} runs in the {sub} probes ({sub})")


COSMETIC_FACTOR = 0.1  # only comments/docstrings/formatting: can hardly matter
UNEXECUTED_FACTOR = 0.3  # no traced probe ran its function
PRIOR_FLOOR = 0.05  # every hunk keeps a chance: priors order the search, they never rule anything out


def prioritize(cs: ChangeSet, audit_priors: Mapping[str, float] | None = None) -> None:
    """Set every hunk's and commit's prior from the audits' evidence against the subsystems it is linked to.

    A hunk's prior is ``PRIOR_FLOOR + sum(affinity[s] * audit_prior[s])`` (plus a hundredth of its linked
    subsystems' affinities, so that among equals a hunk that touches a known subsystem comes first), scaled
    down for cosmetic hunks and for hunks whose function no traced probe ran, and nudged by size (more changed
    lines, a little more likely). A commit's prior is the sum of its hunks'.
    """
    audit_priors = audit_priors or {}
    for h in cs.hunks().values():
        score = PRIOR_FLOOR + sum(w * float(audit_priors.get(s, 0.0)) for s, w in h.affinity.items())
        score += 0.01 * sum(h.affinity.values())
        if h.cosmetic:
            score *= COSMETIC_FACTOR
        if h.executed is False:
            score *= UNEXECUTED_FACTOR
        score *= 1.0 + 0.02 * min(h.changed, 25)
        h.prior = round(score, 6)
    for c in cs.commits:
        c.prior = round(sum(h.prior for h in c.hunks), 6)


def map_all(
    cs: ChangeSet,
    *,
    config_keys: Mapping[str, Sequence[str]] | None = None,
    baseline_config: Mapping[str, Any] | None = None,
    candidate_config: Mapping[str, Any] | None = None,
    executed: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    audit_priors: Mapping[str, float] | None = None,
) -> ChangeSet:
    """Every mapping in order (names, config keys, trace), then the priors; returns ``cs``."""
    map_names(cs, config_keys)
    map_config_keys(cs, config_keys, baseline_config, candidate_config)
    if executed:
        map_trace(cs, executed)
    prioritize(cs, audit_priors)
    return cs


def hunk_table(hunks: Iterable[Hunk]) -> list[dict[str, Any]]:
    """One row per hunk (no diff text), for tables."""
    return [
        {
            "hunk": h.id,
            "commit": h.short_commit,
            "path": h.path,
            "header": h.header,
            "function": h.where,
            "subsystem": h.subsystem,
            "why": "; ".join(h.reasons),
            "ran in the traced probes": h.executed,
            "prior": round(h.prior, 4),
            "cosmetic": h.cosmetic,
            "changed lines": h.changed,
        }
        for h in hunks
    ]
