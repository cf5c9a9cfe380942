"""Echoes of a measured cause: subsystems flagged only by checks that read a cause's changes, and the check
run again on the runs that restore that cause.

TD3's ``policy_delay`` moves the trainer's actor updates and, with them, the target-network updates the
optimizer room measures. Restoring the trainer's config restores the gap; "fix the optimizer next" would send
the user after a change that is not there. A flagged finding whose ``reads`` name a subsystem attribution
measured as a cause (:func:`rlaudit.attribution.ranking.knock_on`'s echoes) may be such an echo. Where its
check reads training runs, the attribution's own runs decide: the check runs again with the restore arm in
the candidate's place, and either clears (an echo: nothing of its own to fix) or still flags (a change of its
own).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlaudit.findings import Finding, Status

if TYPE_CHECKING:
    from rlaudit.attribution.arms import Arm, Attribution
    from rlaudit.attribution.ranking import Cause
    from rlaudit.engine.workbench import Workbench

MEASURED_CAUSES = ("primary", "secondary")


@dataclass
class Echo:
    """One unmeasured subsystem flagged only by checks that read measured causes' changes.

    Attributes:
        subsystem: The flagged subsystem.
        upstream: The measured causes its checks read.
        findings: The flagged findings' ids.
        rechecked: Per finding id, its check run again on the runs that restore the upstream cause: the new
            finding, or None where the check does not read training runs (or nothing restores the cause).
        arm: The restore arm those runs come from (its name; "" when none).
    """

    subsystem: str
    upstream: list[str]
    findings: list[str]
    rechecked: dict[str, Finding | None]
    arm: str = ""

    @property
    def cleared(self) -> bool:
        """Every flagged finding cleared on the restore arm's runs: an echo, measured."""
        return bool(self.rechecked) and all(
            f is not None and f.status is Status.CLEARED for f in self.rechecked.values()
        )

    @property
    def still_flagged(self) -> list[Finding]:
        """Findings that still flag on the restore arm's runs: a change of the subsystem's own."""
        return [f for f in self.rechecked.values() if f is not None and f.status.is_flag]

    def sentence(self) -> str:
        """What the summary says of it."""
        cause = " and ".join(self.upstream)
        ids = ", ".join(self.findings)
        if self.cleared:
            said = "; ".join(
                f"{f.id}: {f.evidence.summary}" for f in self.rechecked.values() if f is not None
            )
            return (
                f"{self.subsystem.capitalize()} was flagged only by checks that read {cause}'s changes ({ids}); "
                f"on the runs that restore {cause} ({self.arm}) they clear ({said}), so {self.subsystem} has "
                "nothing of its own to fix."
            )
        if self.still_flagged:
            said = "; ".join(f"{f.id}: {f.evidence.summary}" for f in self.still_flagged)
            return (
                f"{self.subsystem.capitalize()} still differs on the runs that restore {cause} ({self.arm}: {said}): "
                f"a change of its own, fix it after {cause}."
            )
        return (
            f"{self.subsystem.capitalize()} is flagged only by checks that read {cause}'s changes ({ids}), which "
            f"attribution measured as a cause: fix {cause}, then re-audit {self.subsystem} before changing it."
        )


def echo_only(causes: Sequence[Cause]) -> dict[str, tuple[list[str], list[str]]]:
    """Unmeasured subsystems whose every flagged finding reads a subsystem attribution measured as a cause:
    ``{subsystem: (those causes, the finding ids)}``. A finding of their own that reads no cause (a changed
    config value of theirs included) keeps them out."""
    measured = {c.subsystem for c in causes if c.verdict in MEASURED_CAUSES}
    out = {}
    for c in causes:
        if c.verdict != "flagged (unmeasured)" or c.strength.independent or not c.findings:
            continue
        upstream = sorted({s for f in c.findings for s in f.reads if s in measured and s != c.subsystem})
        if upstream and all(set(f.reads) & measured for f in c.findings):
            out[c.subsystem] = (upstream, [f.id for f in c.findings])
    return out


def restore_arm(result: Attribution, subsystem: str) -> Arm | None:
    """The arm that restores ``subsystem`` alone with the largest share of a gap, when it ran."""
    best: tuple[float, str] | None = None
    for rows in result.ranking.values():
        for r in rows:
            if r["single"] and r["subsystems"] == [subsystem] and (best is None or r["point"] > best[0]):
                best = (r["point"], r["arm"])
    return next((a for a in result.arms if best is not None and a.name == best[1]), None)


def reads_training_runs(finding: Finding) -> Any:
    """The check that made ``finding`` when its evidence is training runs (its second parameter is typed
    ``TrainingRuns``, so ``given=`` hands it other runs), else None. The room's checks are imported first: the
    summary reads findings from files, not from the checks that made them."""
    from rlaudit.checks import spec_of
    from rlaudit.findings import SUBSYSTEMS

    if finding.subsystem in SUBSYSTEMS:  # a room's checks register as its audit module is imported
        with contextlib.suppress(ImportError):
            importlib.import_module(f"rlaudit.{finding.subsystem}.audit")
    spec = spec_of(finding.id)
    if spec is None or "." not in spec.qualname:
        return None
    module, _, name = spec.qualname.rpartition(".")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    params = list(inspect.signature(inspect.unwrap(fn)).parameters.values())
    return fn if len(params) > 1 and "TrainingRuns" in str(params[1].annotation) else None


def recheck(wb: Workbench, result: Attribution, causes: Sequence[Cause]) -> list[Echo]:
    """Each echo-only subsystem (:func:`echo_only`) with its flagged checks run again, the candidate's runs
    replaced by those of the arm that restores the first upstream cause (the baseline arm's runs beside them)."""
    from rlaudit.trainer.runs import RunData, TrainingRuns

    base = next((a for a in result.arms if a.name == "baseline"), None)
    out = []
    flagged = {f.id: f for c in causes for f in c.findings}
    for sub, (upstream, ids) in echo_only(causes).items():
        arm = restore_arm(result, upstream[0])
        rechecked: dict[str, Finding | None] = dict.fromkeys(ids)
        if arm is not None and base is not None:
            runs = TrainingRuns(
                data={
                    "baseline": [RunData.from_result(r) for r in base.results if r is not None and r.ok],
                    "candidate": [RunData.from_result(r) for r in arm.results if r is not None and r.ok],
                }
            )
            if runs.data["baseline"] and runs.data["candidate"]:
                for fid in ids:
                    fn = reads_training_runs(flagged[fid])
                    if fn is None:
                        continue
                    again = {f.id: f for f in fn(wb, given=runs).findings}
                    rechecked[fid] = again.get(fid)
        out.append(Echo(sub, upstream, ids, rechecked, arm.name if arm is not None else ""))
    return out
