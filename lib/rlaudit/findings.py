"""Findings: one hypothesis, its verdict, and the evidence behind it.

A finding is what every audit returns and what the summary ranks. It reads like a line of an investigation
write-up: "CLEARED: hidden sizes match (128, 128)". Findings are plain data (JSON round-trips exactly), so
notebooks save them beside their rendered page and the summary reads them back without importing audits.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1


class Status(str, Enum):  # noqa: UP042 - str mixin keeps json.dumps and comparisons with plain strings
    """The verdict on one hypothesis, from guilty to cleared."""

    CONFIRMED = "CONFIRMED"  # a measured difference that explains (part of) the regression
    SUSPECT = "SUSPECT"  # a difference that plausibly matters; an attribution experiment should decide
    ERROR = "ERROR"  # the check itself failed (a probe crashed, hung, ran out of memory)
    NOTED = "NOTED"  # a real difference that is not expected to matter (a rename, a red herring)
    SKIPPED = "SKIPPED"  # a subject lacks the capability the check needs
    CLEARED = "CLEARED"  # checked, and the two subjects agree

    @property
    def mark(self) -> str:
        """A one-character ASCII mark (``!`` confirmed, ``?`` suspect, ``x`` error, ``~`` noted, ``-`` skipped,
        ``=`` cleared): every font and terminal draws it, unlike emoji, which show as empty boxes where no
        emoji font is installed. HTML shows it inside a coloured badge (``rl-badge`` in findings.css)."""
        return _MARKS[self]

    @property
    def rank(self) -> int:
        """Sort key: most actionable first."""
        return list(Status).index(self)

    @property
    def is_flag(self) -> bool:
        """True for the verdicts that point at a cause (SUSPECT or CONFIRMED)."""
        return self in (Status.CONFIRMED, Status.SUSPECT)


_MARKS = {
    Status.CONFIRMED: "!",
    Status.SUSPECT: "?",
    Status.ERROR: "x",
    Status.NOTED: "~",
    Status.SKIPPED: "-",
    Status.CLEARED: "=",  # shown equivalent: what a CLEARED verdict claims
}


class Severity(str, Enum):  # noqa: UP042 - as Status
    """How much the difference is expected to cost if it is real."""

    CRITICAL = "CRITICAL"
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"
    INFO = "INFO"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


@dataclass
class Evidence:
    """What the verdict rests on: both values, the size of the difference, and how sure we are.

    Attributes:
        baseline: The baseline's value (a number, a string, a small list or dict; JSON-serializable).
        candidate: The candidate's value, same kind as ``baseline``.
        value_label: What ``baseline`` and ``candidate`` are when a bare number would not say, e.g.
            ``"final heart.get IQM"`` or ``"SD of final heart.get across seeds"`` (shown beside each value).
        effect: Size of the difference as one number (see ``effect_label`` for its meaning).
        effect_label: What ``effect`` measures, e.g. ``"ratio"``, ``"difference"``, ``"cohen_d"``,
            ``"fraction"``.
        ci: A confidence interval for ``effect`` as ``(low, high)``, when there is one.
        ci_level: The interval's coverage, e.g. 0.95.
        test: A test statistic, e.g. ``{"name": "mann-whitney U", "statistic": 12.0, "p": 0.003}``.
        summary: One sentence that a reader can take in without the numbers above.
        details: Anything else worth keeping (a diff table as records, counts); JSON-serializable.
    """

    baseline: Any = None
    candidate: Any = None
    value_label: str = ""
    effect: float | None = None
    effect_label: str = ""
    ci: tuple[float, float] | None = None
    ci_level: float | None = None
    test: dict[str, Any] | None = None
    summary: str = ""
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Finding:
    """One hypothesis about one subsystem, with its verdict.

    Attributes:
        id: Stable identifier, ``"<subsystem>/<slug>"``, e.g. ``"optimizer/lr-schedule-missing"``.
        subsystem: One of :data:`SUBSYSTEMS`.
        hypothesis: The hypothesis in one sentence ("The learning-rate schedule is the same at runtime").
        status: The verdict.
        severity: The expected cost if real.
        evidence: Values, effect size, interval or test, and a sentence.
        remediation: One actionable step ("Restore `anneal_lr` in the trainer loop").
        figures: Names of figures in the notebook that show the evidence.
        notebook: The notebook the finding came from (``"07_optimizer"``); filled in when saved.
        role: ``"mechanism"`` (a difference that can be a cause: a layer, a term, a schedule, a reward) or
            ``"symptom"`` (a gap every cause produces: learning, speed); set by the check that made it
            (:mod:`rlaudit.checks`). Symptoms set the gap attribution explains; mechanisms are ranked.
        reads: Subsystems whose changes this finding's inputs also carry (a curriculum change alters which
            tasks the environment is asked for); a flag here may be their echo.
    """

    id: str
    subsystem: str
    hypothesis: str
    status: Status
    severity: Severity = Severity.INFO
    evidence: Evidence = field(default_factory=Evidence)
    remediation: str = ""
    figures: list[str] = field(default_factory=list)
    notebook: str = ""
    role: str = ""
    reads: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.status = Status(self.status)
        self.severity = Severity(self.severity)
        if isinstance(self.evidence, dict):
            self.evidence = Evidence(**self.evidence)
        if self.evidence.ci is not None:
            self.evidence.ci = (float(self.evidence.ci[0]), float(self.evidence.ci[1]))

    @property
    def headline(self) -> str:
        """The finding as the case files write it: ``"CLEARED: hidden sizes match (128, 128)"``."""
        text = self.evidence.summary or self.hypothesis
        return f"{self.status.mark} {self.status.value}: {text}"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["status"] = self.status.value
        data["severity"] = self.severity.value
        return jsonable(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        data = dict(data)
        evidence = dict(data.pop("evidence", {}) or {})
        if evidence.get("ci") is not None:
            evidence["ci"] = tuple(evidence["ci"])
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known}, evidence=Evidence(**evidence))

    @classmethod
    def about_the_audit(
        cls,
        id: str,
        subsystem: str,
        hypothesis: str,
        status: Status,
        summary: str,
        details: dict[str, Any],
        remediation: str,
        **fields: Any,
    ) -> Finding:
        """A verdict on the audit itself rather than on the subjects (a check that could not run, a notebook
        that failed): severity INFO, since it says nothing about the cost of a regression.

        Args:
            status: ``SKIPPED`` or ``ERROR``.
            summary: What happened, in one sentence.
            details: What the reader needs to act on it (the missing pieces, the traceback, the log).
            remediation: What to do so that the check runs.
            fields: Any other :class:`Finding` field (``notebook``).
        """
        return cls(
            id=id,
            subsystem=subsystem,
            hypothesis=hypothesis,
            status=status,
            severity=Severity.INFO,
            evidence=Evidence(summary=summary, details=details),
            remediation=remediation,
            **fields,
        )

    @classmethod
    def skipped(cls, id: str, subsystem: str, hypothesis: str, missing: dict[str, Sequence[str]]) -> Finding:
        """A check that could not run because a subject lacks a capability.

        Args:
            missing: Per side (``"baseline"``/``"candidate"``), the capability names it lacks.
        """
        parts = [
            f"{side} lacks {', '.join(f'`{c}`' for c in caps)}" for side, caps in missing.items() if caps
        ]
        return cls.about_the_audit(
            id,
            subsystem,
            hypothesis,
            Status.SKIPPED,
            "; ".join(parts),
            {"missing": {k: list(v) for k, v in missing.items()}},
            "Implement the named capability in the subject module to run this check "
            "(see `rlaudit new-subject` for the contract).",
        )

    @classmethod
    def error(cls, id: str, subsystem: str, hypothesis: str, side: str, error: Any) -> Finding:
        """A check that failed because a probe raised, crashed, hung, or ran out of memory.

        Args:
            side: ``"baseline"``, ``"candidate"`` or ``"audit"`` (the audit itself raised).
            error: A :class:`rlaudit.engine.worker.ProbeError`-like object with ``kind``, ``message``,
                ``traceback`` and ``stderr_tail`` attributes, or any exception.
        """
        kind = getattr(error, "kind", type(error).__name__)
        message = getattr(error, "message", str(error))
        details = {
            "side": side,
            "kind": kind,
            "message": message,
            "traceback": getattr(error, "traceback", ""),
            "stderr_tail": getattr(error, "stderr_tail", ""),
        }
        return cls.about_the_audit(
            id,
            subsystem,
            hypothesis,
            Status.ERROR,
            f"{side}: {kind}: {message}"[:500],
            details,
            # An error that knows its remedy (a damaged artifact file) says it; else the generic advice.
            getattr(error, "remediation", None)
            or "Read the traceback in the evidence; fix the subject or raise the probe's timeout "
            "or memory limit, then rerun this notebook.",
        )


SUBSYSTEMS: tuple[str, ...] = (
    "agents",
    "trainer",
    "logging",
    "checkpointing",
    "env",
    "curriculum",
    "optimizer",
    "init",
    "loss",
    "spaces",
    "rewards",
    "memory",
    "seeding",
    "config",
)
"""The fourteen audited subsystems, in notebook order (``01_agents`` ... ``14_config``)."""


def notebook_name(subsystem: str) -> str:
    """``"optimizer"`` -> ``"07_optimizer"``; ``"summary"`` -> ``"15_summary"``."""
    if subsystem == "summary":
        return "15_summary"
    return f"{SUBSYSTEMS.index(subsystem) + 1:02d}_{subsystem}"


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Most actionable first: by status, then severity, then subsystem order, then id."""
    order = {s: i for i, s in enumerate(SUBSYSTEMS)}
    return sorted(
        findings,
        key=lambda f: (f.status.rank, f.severity.rank, order.get(f.subsystem, 99), f.id),
    )


def save_findings(path: str | Path, findings: Iterable[Finding], meta: dict[str, Any] | None = None) -> Path:
    """Write findings as JSON (atomically): ``{"schema": 1, "meta": {...}, "findings": [...]}``."""
    from rlaudit.engine.io import atomic_write_text

    payload = {
        "schema": SCHEMA_VERSION,
        "meta": jsonable(meta or {}),
        "findings": [f.to_dict() for f in findings],
    }
    path = Path(path)
    atomic_write_text(path, json.dumps(payload, indent=2, ensure_ascii=False))
    return path


def load_findings(path: str | Path) -> tuple[list[Finding], dict[str, Any]]:
    """Read a file written by :func:`save_findings`; returns ``(findings, meta)``.

    Raises:
        ValueError: The file is not a findings file, with what was found instead.
    """
    path = Path(path)
    try:
        payload = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{path} is not valid JSON ({exc}); expected a findings file written by rlaudit"
        ) from exc
    if not isinstance(payload, dict) or "findings" not in payload:
        raise ValueError(f"{path} has no 'findings' list; expected a findings file written by rlaudit")
    return [Finding.from_dict(d) for d in payload["findings"]], payload.get("meta", {})


def jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, tuples, paths, enums and NaN into plain JSON values.

    NaN and infinities become ``None`` (JSON has no NaN), so a saved file always parses.
    """
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays, torch tensors
    if callable(tolist):
        return jsonable(tolist())
    item = getattr(value, "item", None)
    if callable(item):
        return jsonable(item())
    return str(value)
