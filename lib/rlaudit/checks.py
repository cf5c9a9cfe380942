"""One idiom for a check: declared once, its body only compares and decides.

A check tests one hypothesis about one subsystem. It is declared once, at its body: the decorator names the
finding id and what the check needs, the docstring's first paragraph states the hypothesis::

    @check("env/reset-cost", probe=probes.rollout, params=rollout_params_of, reads=("curriculum",))
    def reset_cost(c: Check, pair: Pair) -> Section:
        '''A step that resets episodes costs the same, relative to a plain step, in both environments.

        Within each process: median time of steps that reset some environment over steps that reset none.
        '''
        ...                                   # compare the two sides' artifacts
        return c.section([c.finding(Status.CLEARED, summary="...")], tables={...})

and called like any audit: ``reset_cost(wb, seed=0) -> Section``. The decorator does everything around the
comparison, the same way for every check:

1. gathers the evidence: ``probe`` run on both sides with ``params(wb, **kwargs)`` (with a progress bar), or
   ``needs(wb, **kwargs)`` for anything else (training runs, several probes);
2. guards it: a side that lacks a capability gives SKIPPED naming it, a probe that failed gives ERROR with
   its traceback (``guard(id, subsystem, hypothesis)`` on the evidence, as :class:`rlaudit.engine.workbench.Pair`
   has it);
3. calls the body with a :class:`Check` (the declaration, the workbench, finding and section builders) and
   the evidence;
4. turns what the body raised into a finding: :class:`Missing` (a table, a logged scalar, episodes the
   subject did not produce) into SKIPPED naming the missing piece and how to add it, anything else into
   ERROR, so that one broken check never takes a notebook down.

Every finding a check makes carries its ``role`` (``symptom`` for a learning or speed gap that every cause
produces, ``mechanism`` for a difference that can be a cause) and ``reads`` (the other subsystems whose
changes this check also sees), which the ranking uses to discount echoes of an upstream change.
"""

from __future__ import annotations

import functools
import inspect
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from rlaudit.display import open_figure_numbers
from rlaudit.evidence import Verdict, coverage
from rlaudit.evidence import measured as measured_value
from rlaudit.findings import SUBSYSTEMS, Evidence, Finding, Severity, Status
from rlaudit.notebook import Section, as_section

SIDES = ("baseline", "candidate")
SYMPTOM = "symptom"
MECHANISM = "mechanism"


class Missing(Exception):
    """Raised by a check (or its ``needs``) when a subject did not produce something the check needs.

    It becomes a SKIPPED finding that names the missing piece and how to add it, never an ERROR: the subject is
    not broken, it just does not expose this.

    Args:
        what: What is missing, e.g. ``"episodes reporting `return`"``.
        how: How to add it, e.g. ``"call recorder.episode(step=..., **{'return': R})" in train()``.
        sides: The sides that lack it (default: unknown, not named).
    """

    def __init__(self, what: str, how: str, sides: Sequence[str] = ()) -> None:
        super().__init__(what)
        self.what = what
        self.how = how
        self.sides = tuple(sides)


@dataclass(frozen=True)
class CheckSpec:
    """A check's declaration.

    Attributes:
        id: The main finding id, ``"<subsystem>/<slug>"``.
        subsystem: The subsystem (the id's prefix).
        hypothesis: The hypothesis in one sentence (the first paragraph of the check's docstring); ``{name}``
            fields are filled from the call's keyword arguments and ``{metric}`` from the primary metric.
        title: The section heading (default: the hypothesis).
        role: ``"mechanism"`` (a difference that can be a cause) or ``"symptom"`` (a gap every cause
            produces: learning, speed).
        reads: Subsystems whose changes this check's inputs also carry (a curriculum change alters which
            tasks the env is asked for), so a flag here may be their echo.
        qualname: The body's module and name (for error reports).
    """

    id: str
    subsystem: str
    hypothesis: str
    title: str = ""
    role: str = MECHANISM
    reads: tuple[str, ...] = ()
    qualname: str = ""


REGISTRY: dict[str, CheckSpec] = {}
"""Check id -> declaration, for every check imported so far (the ranking looks up ``role`` and ``reads``)."""


@dataclass
class Check:
    """What a check's body receives besides its evidence: the declaration and builders of its results.

    Attributes:
        spec: The declaration.
        wb: The workbench of the pair under investigation (profile, labels, primary metric).
        params: The keyword arguments the check was called with.
    """

    spec: CheckSpec
    wb: Any
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def subsystem(self) -> str:
        return self.spec.subsystem

    @property
    def hypothesis(self) -> str:
        return _fill(self.spec.hypothesis, self.wb, self.params)

    @property
    def title(self) -> str:
        return _fill(self.spec.title, self.wb, self.params) if self.spec.title else self.hypothesis

    @property
    def profile(self) -> Any:
        return self.wb.profile

    def finding(
        self,
        status: Status,
        severity: Severity = Severity.INFO,
        *,
        summary: str = "",
        baseline: Any = None,
        candidate: Any = None,
        values: Mapping[str, Any] | None = None,
        value_label: str = "",
        effect: float | None = None,
        effect_label: str = "",
        ci: tuple[float, float] | Sequence[float] | None = None,
        interval: Sequence[float] | None = None,
        ci_level: float | None = None,
        test: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
        remediation: str = "",
        figures: Iterable[str] = (),
        id: str | None = None,
        hypothesis: str | None = None,
        role: str | None = None,
        reads: Iterable[str] | None = None,
        measured: Mapping[str, Mapping[str, Any]] | None = None,
        measured_words: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Finding:
        """A finding of this check (its id, subsystem and hypothesis unless given).

        A CLEARED finding states which quantities it compared as ``measured={side: {quantity: value}}`` (None
        or NaN: not measured; ``measured_words`` says how each side's value reads or why it is missing). It
        clears only when each was measured on both sides: one measured on one side only turns it SUSPECT
        naming the difference, one measured on neither NOTED "not measured" (:func:`rlaudit.evidence.coverage`).
        Without ``measured``, a CLEARED finding whose ``baseline``/``candidate`` value is given for one side only
        is held to the same rule, and so is one whose sides are both ``{quantity: value}`` mappings with a
        quantity measured on one side only.

        Both sides' values come as ``baseline=`` and ``candidate=``, or as one mapping ``values=`` with those
        keys (a ``{side: ...}`` dict as the rooms build them; a missing key is None). The effect comes as
        ``effect=`` with ``ci=(low, high)``, or as one ``interval=(point, low, high)`` (a
        :class:`rlaudit.stats.Interval`). ``ci_level`` defaults to 0.95 when an interval is given.

        Raises:
            ValueError: ``values`` given with ``baseline``/``candidate``, or ``interval`` with ``effect``/``ci``.
        """
        if values is not None:
            if baseline is not None or candidate is not None:
                raise ValueError(f"{self.id}: give values= or baseline=/candidate=, not both")
            baseline, candidate = values.get("baseline"), values.get("candidate")
        if interval is not None:
            if effect is not None or ci is not None:
                raise ValueError(f"{self.id}: give interval=(point, low, high) or effect=/ci=, not both")
            if len(interval) != 3:
                raise ValueError(f"{self.id}: interval= takes (point, low, high), got {interval!r}")
            effect, ci = interval[0], (interval[1], interval[2])
        if measured is None and status is Status.CLEARED and (baseline is None) != (candidate is None):
            # a clearance that shows one side's value only compared nothing on the other
            label = effect_label or "the compared value"
            measured = {"baseline": {label: baseline}, "candidate": {label: candidate}}
        elif measured is None and status is Status.CLEARED and _keyed(baseline) and _keyed(candidate):
            # both sides as {quantity: value}: one measured on one side only is no agreement (a field empty on
            # both, such as an error slot, is not a compared quantity)
            keys = [
                k
                for k in {**baseline, **candidate}
                if measured_value(baseline.get(k)) or measured_value(candidate.get(k))
            ]
            measured = {
                s: {k: v.get(k) for k in keys} for s, v in (("baseline", baseline), ("candidate", candidate))
            }
        if measured is not None:
            gaps = coverage(measured, measured_words)
            verdict = gaps.verdict()
            if status is Status.CLEARED and verdict is not None:
                agreed = f"; what was compared agrees ({summary})" if summary else ""
                status, severity, summary, remediation = verdict
                summary += agreed
                details = {**(details or {}), "unmeasured": {**gaps.one_sided, **dict.fromkeys(gaps.neither)}}
        finding = Finding(
            id=id or self.id,
            subsystem=self.subsystem,
            hypothesis=hypothesis or self.hypothesis,
            status=status,
            severity=severity,
            evidence=Evidence(
                baseline=baseline,
                candidate=candidate,
                effect=effect,
                effect_label=effect_label,
                value_label=value_label,
                ci=tuple(ci) if ci is not None else None,  # type: ignore[arg-type]
                ci_level=ci_level if ci_level is not None else (0.95 if ci is not None else None),
                test=test,
                summary=summary,
                details=dict(details or {}),
            ),
            remediation=remediation,
            figures=list(figures),
        )
        return self._stamp(finding, role=role, reads=reads)

    def conclude(self, verdict: Verdict, **evidence: Any) -> Finding:
        """The finding of a decided verdict (status, severity, summary and remediation) with its evidence
        (any other :meth:`finding` argument: ``values``, ``interval``, ``details``, ``figures``...)."""
        status, severity, summary, remediation = verdict
        return self.finding(status, severity, summary=summary, remediation=remediation, **evidence)

    def skipped(self, what: str, how: str, sides: Sequence[str] = ()) -> Finding:
        """SKIPPED: a subject did not produce ``what``; ``how`` says how to add it."""
        who = f"{' and '.join(sides)}: " if sides else ""
        finding = Finding(
            id=self.id,
            subsystem=self.subsystem,
            hypothesis=self.hypothesis,
            status=Status.SKIPPED,
            severity=Severity.INFO,
            evidence=Evidence(
                summary=f"{who}no {what}" if not what.startswith(("no ", "nothing")) else f"{who}{what}",
                details={"missing": what, "sides": list(sides)},
            ),
            remediation=how,
        )
        return self._stamp(finding)

    def missing(self, what: str, how: str, sides: Sequence[str] = ()) -> NoReturn:
        """Stop the check with SKIPPED (see :class:`Missing`)."""
        raise Missing(what, how, sides)

    def section(
        self,
        findings: Finding | Iterable[Finding],
        *,
        tables: Mapping[str, Any] | None = None,
        figures: Mapping[str, Any] | None = None,
        notes: str | Sequence[str] = (),
        title: str | None = None,
    ) -> Section:
        """This check's section: its findings with the tables and figures that show the evidence."""
        items = [findings] if isinstance(findings, Finding) else list(findings)
        return Section(
            title=title or self.title,
            findings=[self._stamp(f) for f in items],
            tables=dict(tables or {}),
            figures=dict(figures or {}),
            notes=[notes] if isinstance(notes, str) and notes else list(notes or []),
        )

    def _stamp(
        self, finding: Finding, *, role: str | None = None, reads: Iterable[str] | None = None
    ) -> Finding:
        if not finding.role:
            finding.role = role or self.spec.role
        if reads is not None:
            finding.reads = sorted(set(reads))
        elif not finding.reads and self.spec.reads:
            finding.reads = list(self.spec.reads)
        return finding


def _keyed(value: Any) -> bool:
    """True for one side's evidence given as ``{quantity: value}`` (a mapping with string keys)."""
    return isinstance(value, Mapping) and bool(value) and all(isinstance(k, str) for k in value)


def _fill(text: str, wb: Any, params: Mapping[str, Any]) -> str:
    if "{" not in text:
        return text
    values = dict(params)
    try:
        metric = getattr(wb, "metric", None)
    except Exception:  # the metric is unknown (its declarations failed): the check itself reports why
        metric = None
    values.setdefault("metric", getattr(metric, "name", metric) or "the primary metric")
    try:
        return text.format_map(values)
    except (KeyError, IndexError, ValueError):
        return text


def _accepted(fn: Callable[..., Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments ``fn`` accepts (all of them when it takes ``**kwargs``)."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return dict(kwargs)
    names = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return {k: v for k, v in kwargs.items() if k in names}


ON_POLICY_ONLY = frozenset({"compute_advantages", "compute_loss"})
"""Capabilities of an on-policy (actor-critic) learner that a value learner has no counterpart of."""
ON_POLICY_CHECKS = frozenset({"loss/advantages", "loss/terms"})
"""Checks of on-policy math only (GAE, the PPO loss's terms). Others that need ``compute_loss`` also measure
something a value learner has (gradient flow into its network), so their SKIPPED stays a missing capability."""


def _guard(evidence: Any, spec: CheckSpec, hypothesis: str, wb: Any = None) -> Finding | None:
    """SKIPPED/ERROR from the evidence's own guard (a Pair, or a list of them), else None."""
    items = evidence if isinstance(evidence, list | tuple) else [evidence]
    for item in items:
        guard = getattr(item, "guard", None)
        if callable(guard):
            finding = guard(spec.id, spec.subsystem, hypothesis)
            if finding is not None:
                return _not_applicable(finding, wb) if spec.id in ON_POLICY_CHECKS else finding
    return None


def value_learners(wb: Any, sides: Iterable[str] = ("baseline", "candidate")) -> bool:
    """True when every one of ``sides`` exposes ``compute_td_targets`` (capabilities as already known; no worker
    started): off-policy value learners, where PPO's details (its initialization, its loss) are no part of the
    design."""
    known = getattr(wb, "capabilities", None)
    if not callable(known):
        return False
    try:
        return all("compute_td_targets" in (known(side, load=False) or ()) for side in sides)
    except Exception:  # a side the workbench does not know
        return False


def _not_applicable(finding: Finding, wb: Any) -> Finding:
    """Say so when a SKIPPED for want of an on-policy capability is on a value learner, where it does not apply.

    A side that lacks only :data:`ON_POLICY_ONLY` capabilities and exposes ``compute_td_targets`` (its
    capabilities as already known, no worker is started) is an off-policy learner: GAE and a PPO loss are no
    part of it, and ``loss/td-targets`` checks its targets instead.
    """
    missing = finding.evidence.details.get("missing") if finding.status is Status.SKIPPED else None
    if not isinstance(missing, dict) or not missing:
        return finding
    if not all(caps and set(caps) <= ON_POLICY_ONLY for caps in missing.values()):
        return finding
    if not value_learners(wb, missing):  # a side unknown, or one without TD targets: the plain SKIPPED
        return finding
    finding.evidence.summary += (
        " — not applicable to a value learner (it exposes `compute_td_targets`; loss/td-targets checks its "
        "targets)"
    )
    finding.evidence.details["not_applicable"] = "value learner"
    finding.remediation = "Nothing to do: an off-policy learner has no advantage estimator or PPO loss."
    return finding


def run_probe(wb: Any, probe: Callable[..., Any], desc: str, **params: Any) -> Any:
    """``wb.run(probe, **params)`` on both sides, with a progress bar named ``desc`` (same cache entries)."""
    from rlaudit.engine.workbench import Pair

    run_each = getattr(wb, "run_each", None)
    if run_each is None:
        return wb.run(probe, **params)
    baseline, candidate = run_each(probe, [("baseline", params), ("candidate", params)], desc=desc)
    return Pair(baseline=baseline, candidate=candidate)


def probe_evidence(
    probe: Callable[..., Any], params: Callable[..., Mapping[str, Any]] | None = None, desc: str = ""
) -> Callable[..., Any]:
    """Evidence from one probe on both sides: ``evidence(wb, **kwargs) -> Pair`` (``given=``: that Pair instead,
    as a test hands in results built by hand), the ``needs=`` of a check.

    What ``check(probe=, params=, desc=)`` gathers, as a function of its own, so that several checks (or a
    check's larger ``needs``) share one probe run: asked with the same parameters, they hit one cache entry.

    Args:
        probe: The probe to run on both sides.
        params: ``params(wb, **kwargs) -> dict`` of the probe's parameters at the workbench's profile
            (default: the keyword arguments the probe accepts).
        desc: Progress-bar label (default: the probe's name).
    """

    def evidence(wb: Any, /, given: Any = None, **kwargs: Any) -> Any:
        if given is not None:  # the Pair handed in directly (a test's hand-built probe results)
            return given
        chosen = params(wb, **_accepted(params, kwargs)) if params is not None else _accepted(probe, kwargs)
        return run_probe(wb, probe, desc or getattr(probe, "__name__", "probe"), **chosen)

    return evidence


def on_side(side: str, value: Any) -> dict[str, Any]:
    """``{side: value}``: the ``values=`` of a finding about one side only (the other side's value is None).

    Raises:
        ValueError: ``side`` is not ``"baseline"`` or ``"candidate"``.
    """
    if side not in SIDES:
        raise ValueError(f"side must be one of {', '.join(SIDES)}, got {side!r}")
    return {side: value}


def run_checks(wb: Any, checks: Iterable[Callable[..., Section]], **kwargs: Any) -> list[Section]:
    """The sections of several checks on one workbench, in the order given (a room's ``audit_all``).

    Each check is called with ``kwargs`` and, as a declared check does, passes on only the keyword arguments
    its body, probe parameters or ``needs`` accept (``seed`` reaches the checks that take one).
    """
    return [run(wb, **kwargs) for run in checks]


def hypothesis_of(body: Callable[..., Any]) -> str:
    """The hypothesis a check's docstring states: its first paragraph, on one line, without the final period.

    Raises:
        ValueError: The body has no docstring.
    """
    doc = inspect.getdoc(body) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split())
    if not first:
        raise ValueError(
            f"check {body.__qualname__} has no docstring; its first paragraph must state the hypothesis "
            "(e.g. 'Both setups build the same network.')"
        )
    return first[:-1] if first.endswith(".") else first


def check(
    id: str,
    *,
    title: str = "",
    probe: Callable[..., Any] | None = None,
    params: Callable[..., Mapping[str, Any]] | None = None,
    needs: Callable[..., Any] | None = None,
    desc: str = "",
    role: str = MECHANISM,
    reads: Iterable[str] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Section]]:
    """Declare a check (see the module docstring).

    The body's docstring states the hypothesis in its first paragraph (:func:`hypothesis_of`); it may hold
    ``{metric}`` and ``{<keyword argument>}`` fields.

    Args:
        id: The main finding id, ``"<subsystem>/<slug>"``.
        title: Section heading (default: the hypothesis).
        probe: The probe to run on both sides; its parameters come from ``params``.
        params: ``params(wb, **kwargs) -> dict`` of the probe's parameters (default: the call's keyword
            arguments the probe accepts).
        needs: Instead of ``probe``: ``needs(wb, **kwargs)`` returns the evidence (a Pair, a list of Pairs,
            or anything the body takes). It may raise :class:`Missing`.
        desc: Progress-bar label of the probe (default: the check id).
        role: ``"mechanism"`` or ``"symptom"`` (see :class:`CheckSpec`).
        reads: Subsystems whose changes this check's inputs carry.

    Returns:
        A decorator turning ``body(c: Check, evidence, **kwargs)`` (or ``body(c, **kwargs)`` with neither
        ``probe`` nor ``needs``) into ``check_fn(wb, **kwargs) -> Section``.
    """
    subsystem = id.split("/", 1)[0]
    if subsystem not in SUBSYSTEMS:
        raise ValueError(f"check id {id!r} must start with a subsystem ({', '.join(SUBSYSTEMS)})")
    if probe is not None and needs is not None:
        raise ValueError(f"check {id!r}: give probe= or needs=, not both")
    unknown = sorted(set(reads) - set(SUBSYSTEMS))
    if unknown:
        raise ValueError(f"check {id!r} reads unknown subsystem(s) {', '.join(unknown)}")

    source = needs if probe is None else probe_evidence(probe, params, desc or id)

    def gather(wb: Any, kwargs: Mapping[str, Any]) -> Any:
        return None if source is None else source(wb, **_accepted(source, kwargs))

    def decorate(body: Callable[..., Any]) -> Callable[..., Section]:
        spec = CheckSpec(
            id=id,
            subsystem=subsystem,
            hypothesis=hypothesis_of(body),
            title=title,
            role=role,
            reads=tuple(sorted(set(reads))),
            qualname=f"{body.__module__}.{body.__qualname__}",
        )
        REGISTRY[id] = spec
        takes_evidence = probe is not None or needs is not None

        @functools.wraps(body)
        def run(wb: Any, /, **kwargs: Any) -> Section:
            c = Check(spec, wb, {k: v for k, v in kwargs.items() if k != "given"})
            before = open_figure_numbers()
            noted = len(getattr(wb, "cache_notes", ()))
            try:
                if takes_evidence:
                    evidence = gather(wb, kwargs)
                    stop = _guard(evidence, spec, c.hypothesis, wb)
                    if stop is not None:
                        return c.section(stop)
                    result = body(c, evidence, **_accepted(body, kwargs))
                else:
                    result = body(c, **_accepted(body, kwargs))
                if result is None:
                    raise TypeError(f"check {spec.qualname} returned None; expected a Section or findings")
                section = as_section(result, c.title)
                for finding in section.findings:
                    c._stamp(finding)
                _attach_cache_notes(section, getattr(wb, "cache_notes", ())[noted:])
                return section
            except Missing as gap:
                _close_new_figures(before)
                return c.section(c.skipped(gap.what, gap.how, gap.sides))
            except Exception as exc:  # one broken check must not take the notebook down
                _close_new_figures(before)
                finding = Finding.error(spec.id, spec.subsystem, c.hypothesis, "audit", exc)
                finding.evidence.details["traceback"] = traceback.format_exc()
                finding.evidence.details["audit"] = spec.qualname
                return c.section(
                    finding,
                    notes=[f"The check `{body.__qualname__}` raised {type(exc).__name__}; the rest runs on."],
                )

        run.spec = spec  # type: ignore[attr-defined]
        return run

    return decorate


def _attach_cache_notes(section: Section, notes: Sequence[str]) -> None:
    """Say on the page, and in each finding's evidence, that the cache repaired what this check read."""
    if not notes:
        return
    section.notes.extend(notes)
    for finding in section.findings:
        finding.evidence.details.setdefault("cache_notes", []).extend(notes)


def _close_new_figures(before: set[int]) -> None:
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        for number in open_figure_numbers() - before:
            pyplot.close(number)


def spec_of(finding_id: str) -> CheckSpec | None:
    """The declaration of the check that made a finding id (exact id, else the longest id prefix)."""
    if finding_id in REGISTRY:
        return REGISTRY[finding_id]
    matches = [s for k, s in REGISTRY.items() if finding_id.startswith(k)]
    return max(matches, key=lambda s: len(s.id)) if matches else None
