"""Every training run accounted for: how each seed's run ended, and the check that reports it.

A run is a result whatever became of it. It ends one of these ways (:data:`OUTCOMES`):

- ``finished``: ``train`` returned and every value the recorder saw was finite;
- ``raised``: ``train`` raised (the exception's type, message and the frame it came from are kept);
- ``crashed``: the worker died under it (a segfault, an abort, an exit);
- ``killed``: the worker was killed by a signal rlaudit did not send (out of memory, SIGTERM);
- ``timed out``: killed after the probe's time limit;
- ``non-finite``: ``train`` returned, but a return, loss, gradient norm or logged scalar was NaN or infinite
  from some step to the end of the run (the first step and the first quantity are kept). A quantity that read
  finite again afterwards (an explained variance undefined for one batch, a step a loss scaler skipped) is no
  divergence: the run finished, and the check says which values passed;
- ``failed``: the subject could not be loaded or answered something unreadable (rlaudit's side of the run).

A trainer that sometimes crashes or diverges is itself a regression, and a common one: the ``trainer/outcomes``
check flags a candidate that fails where the baseline does not, names the seeds and the error, and shows every
seed's outcome in one table. The statistics of the other checks say which seeds they rest on.

Notebook side only (pandas).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rlaudit.checks import Check, check
from rlaudit.engine.workbench import Pair, ProbeError, ProbeResult, Workbench
from rlaudit.findings import Evidence, Finding, Severity, Status
from rlaudit.notebook import Section
from rlaudit.trainer.runs import RunData, TrainingRuns, runs

FINISHED = "finished"
RAISED = "raised"
CRASHED = "crashed"
KILLED = "killed"
TIMED_OUT = "timed out"
NON_FINITE = "non-finite"
FAILED = "failed"
OUTCOMES = (FINISHED, RAISED, CRASHED, KILLED, TIMED_OUT, NON_FINITE, FAILED)
"""Every way a training run can end, best first."""

BROKE = (RAISED, CRASHED, NON_FINITE)
"""Outcomes that are the trainer's own doing: a candidate that ends a run this way where the baseline finished
is a CONFIRMED regression. Being killed or timing out may be the machine's doing (memory, load): SUSPECT."""

STOPPED = (RAISED, CRASHED, KILLED, TIMED_OUT, FAILED)
"""Outcomes that leave no recorded run to compare."""

SIDES = ("baseline", "candidate")
SIGNALS_THAT_KILL = ("SIGKILL", "SIGTERM", "SIGINT", "SIGHUP")
"""A worker that died of one of these was stopped from outside (it did not crash by itself)."""

_RAISED = re.compile(r"raised ([A-Za-z_][\w.]*): (.*)", re.DOTALL)
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


@dataclass(frozen=True)
class RunOutcome:
    """How one training run ended.

    Attributes:
        side: ``baseline``/``candidate`` (or an attribution arm's label).
        seed: The run's seed.
        outcome: One of :data:`OUTCOMES`.
        exception: The exception's type name (``raised``).
        message: The exception's message, or what the worker's death or timeout said.
        where: The frame it was raised in: ``train (subject.py:20)`` (``raised``).
        step: The first environment step with a non-finite value (``non-finite``).
        quantity: The first quantity that was non-finite there: a logged scalar's name, an episode statistic,
            ``grad_norm``, ``weight_norm of <layer>`` (``non-finite``).
        value: ``nan``, ``inf`` or ``-inf`` (``non-finite``).
        error: The probe's error, with its traceback and stderr tail (when the run did not finish).
        passed: The quantities that were NaN or infinite for a while and finite again after, as
            ``(quantity, first step, times)`` (a run that finished can have them).
    """

    side: str
    seed: int
    outcome: str
    exception: str = ""
    message: str = ""
    where: str = ""
    step: int | None = None
    quantity: str = ""
    value: str = ""
    error: Any = field(default=None, compare=False, repr=False)
    passed: tuple[tuple[str, int, int], ...] = ()

    @property
    def finished(self) -> bool:
        return self.outcome == FINISHED

    @property
    def stopped(self) -> bool:
        """The run left nothing to compare (it raised, crashed, was killed, timed out or failed)."""
        return self.outcome in STOPPED

    def describe(self) -> str:
        """One line: ``raised FloatingPointError in train (subject.py:20): overflow``,
        ``non-finite from step 64 (`losses/value_loss` = nan)``, ``timed out: ...``."""
        if self.outcome == FINISHED:
            return FINISHED
        if self.outcome == NON_FINITE:
            return f"non-finite from step {self.step} (`{self.quantity}` = {self.value})"
        if self.outcome == RAISED:
            where = f" in {self.where}" if self.where else ""
            said = f": {_short(self.message)}" if self.message else ""
            return f"raised {self.exception or 'an exception'}{where}{said}"
        return f"{self.outcome}: {_short(self.message)}" if self.message else self.outcome

    def describe_passed(self) -> str:
        """The NaN or infinity this run went through: ```losses/explained_variance` NaN or infinite once from
        step 34,080, finite again after``; empty when none."""
        return "; ".join(
            f"`{quantity}` NaN or infinite {_times(times)} from step {step:,}, finite again after"
            for quantity, step, times in self.passed
        )

    def row(self) -> dict[str, Any]:
        """This run as a row of the outcomes table."""
        return {
            "side": self.side,
            "seed": self.seed,
            "outcome": self.outcome,
            "detail": self.describe_passed() if self.finished else self.describe(),
            "first non-finite step": self.step,
            "first non-finite quantity": self.quantity or None,
        }


def _short(text: str, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------------------
# From what the probe left to an outcome
# ---------------------------------------------------------------------------------------------------------


def raised_where(traceback: str) -> str:
    """The frame an exception came from, ``function (file:line)``: the last frame outside rlaudit and the
    installed packages (the subject's own code), else the last frame; empty without a traceback."""
    frames = _FRAME.findall(traceback or "")
    if not frames:
        return ""
    own = [f for f in frames if f[0].endswith(".py") and "/rlaudit/" not in f[0] and "-packages" not in f[0]]
    path, line, function = (own or frames)[-1]
    return f"{function} ({path.rsplit('/', 1)[-1]}:{line})"


def outcome_of_error(side: str, seed: int, error: Any) -> RunOutcome:
    """The outcome of a run whose probe failed, from its :class:`rlaudit.engine.worker.ProbeError` (``kind``,
    ``message``, ``traceback``): ``exception`` -> raised, ``timeout`` -> timed out, ``oom`` or a worker killed
    by :data:`SIGNALS_THAT_KILL` -> killed, any other death -> crashed, ``import``/``protocol`` -> failed."""
    kind = str(getattr(error, "kind", "exception"))
    message = str(getattr(error, "message", error))
    if kind == "exception":
        match = _RAISED.search(message)
        exception, said = (match.group(1), match.group(2)) if match else ("", message)
        where = raised_where(getattr(error, "traceback", ""))
        return RunOutcome(side, seed, RAISED, exception.rsplit(".", 1)[-1], said, where, error=error)
    if kind == "timeout":
        outcome = TIMED_OUT
    elif kind == "oom" or (kind == "crash" and any(s in message for s in SIGNALS_THAT_KILL)):
        outcome = KILLED
    elif kind == "crash":
        outcome = CRASHED
    else:
        outcome = FAILED
    return RunOutcome(side, seed, outcome, message=message, error=error)


def first_nonfinite(run: RunData) -> tuple[int, str, str] | None:
    """Where the run first recorded a NaN or an infinity: ``(step, quantity, value)``, or None.

    The recorder notes it as values arrive (``summary.json``'s ``nonfinite``), which is exact. A run recorded
    without that note is read from its tables, where NaN also stands for "not measured" (an episode without
    that statistic, a gradient norm no hook saw): there only what cannot mean "not measured" counts, a
    logged scalar that is NaN or infinite, an infinity anywhere, and an episode statistic that is NaN in every
    episode.
    """
    summary = run.summary
    if "nonfinite" in summary:
        note = summary["nonfinite"]
        return (int(note["step"]), str(note["quantity"]), str(note["value"])) if note else None
    found: list[tuple[int, int, str, str]] = []  # (step, table order, quantity, value)
    scalars = run.table("scalars")
    if not scalars.empty and {"step", "name", "value"} <= set(scalars):
        scalars = scalars.assign(value=pd.to_numeric(scalars["value"], errors="coerce"))
        for name, part in scalars.groupby("name", sort=False):
            values = part["value"].to_numpy(dtype=float)
            i = _stayed_bad(~np.isfinite(values))
            if i is not None:
                found.append((int(part["step"].iloc[i]), 0, str(name), str(values[i])))
    for order, name in enumerate(("episodes", "updates", "layers"), start=1):
        table = run.table(name)
        if table.empty or "step" not in table:
            continue
        series = (
            table.groupby("layer", sort=False) if name == "layers" and "layer" in table else [("", table)]
        )
        for layer, part in series:
            for column in part.columns:
                if column in ("step", "env", "update", "group") or not pd.api.types.is_numeric_dtype(
                    part[column]
                ):
                    continue
                values = part[column].to_numpy(dtype=float)
                bad = np.isinf(values)
                if name == "episodes" and len(values) and np.isnan(values).all():
                    bad = np.ones(len(values), bool)
                i = _stayed_bad(bad)
                if i is not None:
                    quantity = f"{column} of {layer}" if layer else str(column)
                    found.append((int(part["step"].iloc[i]), order, quantity, str(values[i])))
    if not found:
        return None
    step, _, quantity, value = min(found)
    return step, quantity, value


def _stayed_bad(bad: np.ndarray) -> int | None:
    """Where the stretch of ``bad`` values that lasts to the end of a series begins, or None when its last
    value is good (a NaN or infinity followed by finite values is no divergence)."""
    if not len(bad) or not bad[-1]:
        return None
    good = np.flatnonzero(~bad)
    return int(good[-1]) + 1 if len(good) else 0


def passed_nonfinite(run: RunData) -> tuple[tuple[str, int, int], ...]:
    """The quantities that were NaN or infinite for a while and finite again after (the recorder's
    ``nonfinite_passed``), as ``(quantity, first step, times)`` in the order of their first step."""
    passed = run.summary.get("nonfinite_passed") or {}
    rows = [(str(q), int(note["first_step"]), int(note["times"])) for q, note in passed.items()]
    return tuple(sorted(rows, key=lambda row: row[1]))


def outcome_of_run(run: RunData, side: str | None = None) -> RunOutcome:
    """The outcome of a run that returned: finished, or non-finite from its first NaN or infinity.

    Args:
        side: The side to file it under (default: the run's own label).
    """
    side = side or run.side
    nonfinite, passed = first_nonfinite(run), passed_nonfinite(run)
    if nonfinite is None:
        return RunOutcome(side, run.seed, FINISHED, passed=passed)
    step, quantity, value = nonfinite
    return RunOutcome(side, run.seed, NON_FINITE, step=step, quantity=quantity, value=value, passed=passed)


def outcome_of(result: ProbeResult, label: str | None = None) -> RunOutcome | None:
    """The outcome of one training-run probe; None when it was not run (the subject lacks ``train``)."""
    side = label or result.side
    seed = int((result.params or {}).get("seed", -1))
    if result.ok:
        return outcome_of_run(RunData.from_result(result, side))
    if result.missing:
        return None
    if result.error is None:
        return RunOutcome(side, seed, FAILED, message=f"{result.probe} produced no artifacts and no error")
    return outcome_of_error(side, seed, result.error)


def outcomes_of(pairs: Iterable[Pair]) -> dict[str, list[RunOutcome]]:
    """``{"baseline": [RunOutcome per seed], "candidate": [...]}`` from :func:`rlaudit.trainer.runs.runs`'
    pairs, every run that was asked for (failed ones included), in seed order."""
    out: dict[str, list[RunOutcome]] = {side: [] for side in SIDES}
    for pair in pairs:
        for side, result in pair.sides().items():
            outcome = outcome_of(result)
            if outcome is not None:
                out.setdefault(side, []).append(outcome)
    return out


def outcomes_table(outcomes: Mapping[str, Sequence[RunOutcome]]) -> pd.DataFrame:
    """Every run of both sides, one row per seed: ``side, seed, outcome, detail``, and where a run turned
    non-finite ``first non-finite step`` and ``first non-finite quantity``."""
    rows = [o.row() for side in SIDES for o in sorted(outcomes.get(side, []), key=lambda o: o.seed)]
    columns = ["side", "seed", "outcome", "detail", "first non-finite step", "first non-finite quantity"]
    return pd.DataFrame(rows, columns=columns)


def basis(outcomes: Mapping[str, Sequence[RunOutcome]], used: Mapping[str, Iterable[int]]) -> str:
    """Which runs a statistic rests on, and why the others are not in it: ``seeds 0, 1``, or
    ``baseline seeds 0, 1, candidate seed 1; left out: candidate seed 0 raised FloatingPointError in train
    (subject.py:20): ...``. Runs kept although they turned non-finite later are named too."""
    chosen = {side: sorted(set(used.get(side, ()))) for side in SIDES}
    if chosen["baseline"] == chosen["candidate"]:
        text = _seed_list(chosen["baseline"])
    else:
        text = ", ".join(f"{side} {_seed_list(chosen[side])}" for side in SIDES)
    ended = {side: {o.seed: o for o in outcomes.get(side, [])} for side in SIDES}
    left, kept = [], []
    for side, other in zip(SIDES, SIDES[::-1], strict=True):
        for o in sorted(outcomes.get(side, []), key=lambda o: o.seed):
            if o.seed not in chosen[side]:
                partner = ended[other].get(o.seed)
                if not o.finished:
                    why = o.describe()
                elif partner is not None and not partner.finished:
                    why = f"unpaired (the {other}'s run of that seed {partner.outcome})"
                elif partner is None or partner.seed not in chosen[other]:
                    why = "unpaired (no compared run of that seed on the other side)"
                else:
                    why = "without a final value"
                left.append(f"{side} seed {o.seed} {why}")
            elif o.outcome == NON_FINITE:
                kept.append(f"{side} seed {o.seed} {o.describe()}")
    if left:
        text += "; left out: " + "; ".join(left)
    if kept:
        text += "; kept although they turned non-finite: " + "; ".join(kept)
    return text


def _seed_list(seeds: Sequence[int]) -> str:
    if not seeds:
        return "no seed"
    return f"seed{'s' if len(seeds) != 1 else ''} {', '.join(str(s) for s in seeds)}"


def runs_detail(
    outcomes: Mapping[str, Sequence[RunOutcome]], used: Mapping[str, Iterable[int]]
) -> dict[str, dict[str, Any]]:
    """Per side, the seeds a statistic used and the runs it left out with their outcome (for ``details``)."""
    out = {}
    for side in SIDES:
        seeds = sorted(set(used.get(side, ())))
        out[side] = {
            "seeds": seeds,
            "runs": len(outcomes.get(side, [])),
            "left out": {int(o.seed): o.describe() for o in outcomes.get(side, []) if o.seed not in seeds},
        }
    return out


def failed_run_finding(
    id: str, subsystem: str, hypothesis: str, side: str, result: ProbeResult
) -> Finding | None:
    """NOTED, for a check that needed one training run which the subject's own ``train`` broke (it raised or
    crashed): the check has nothing to compare, and ``trainer/outcomes`` flags the failure once, with its
    traceback, instead of every check that needed that run calling it an ERROR of its own. None for any other
    failure (a timeout, a lost worker: the check's own ERROR says it)."""
    outcome = outcome_of(result, side)
    if outcome is None or outcome.outcome not in (RAISED, CRASHED):
        return None
    return Finding(
        id=id,
        subsystem=subsystem,
        hypothesis=hypothesis,
        status=Status.NOTED,
        severity=Severity.LOW,
        evidence=Evidence(
            summary=f"not checked: the {side}'s training run of seed {outcome.seed} {outcome.describe()} "
            "(trainer/outcomes reports it)",
            details={"outcome": outcome.row(), "error": result.error.to_dict() if result.error else {}},
        ),
        remediation="Fix the crash that trainer/outcomes reports, then rerun this notebook.",
    )


# ---------------------------------------------------------------------------------------------------------
# The verdict
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutcomeVerdict:
    """The verdict on both sides' run outcomes.

    Attributes:
        status, severity: The finding's (ERROR when some run stopped and it is not the candidate's alone).
        summary: One sentence naming the seeds, the outcome and the error.
        remediation: What to do.
        candidate_only: The candidate's runs that did not finish where the baseline's run of that seed did.
        error: The first stopped run's error (for an ERROR finding's traceback).
    """

    status: Status
    severity: Severity
    summary: str
    remediation: str
    candidate_only: tuple[RunOutcome, ...] = ()
    error: Any = None


def _listing(outcomes: Sequence[RunOutcome]) -> str:
    return "; ".join(f"seed {o.seed} {o.describe()}" for o in sorted(outcomes, key=lambda o: o.seed))


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _verb(outcomes: Sequence[RunOutcome]) -> str:
    kinds = {o.outcome for o in outcomes}
    if kinds <= {NON_FINITE}:
        return "diverges (non-finite values)"
    if kinds <= {RAISED, CRASHED}:
        return "crashes"
    return "does not finish"


def judge_outcomes(outcomes: Mapping[str, Sequence[RunOutcome]]) -> OutcomeVerdict:
    """Decide what the runs' outcomes say.

    - The candidate's runs that did not finish where the baseline's run of the same seed did are a regression
      of the candidate: CONFIRMED (high) when it raised, crashed or turned non-finite, SUSPECT (medium) when
      it was only killed or timed out (the machine may have done that).
    - Otherwise a run that stopped (on either side) is an ERROR: the audits lack that run.
    - Otherwise non-finite values on the baseline, or alike on both sides, are NOTED (low): no difference
      between the two.
    - Every run finished with finite values: CLEARED.
    """
    base = {o.seed: o for o in outcomes.get("baseline", [])}
    cand = list(outcomes.get("candidate", []))
    counts = {side: len(outcomes.get(side, [])) for side in SIDES}
    only = tuple(
        o
        for o in cand
        if not o.finished and o.outcome != FAILED and (o.seed not in base or base[o.seed].finished)
    )
    if only:
        confirmed = any(o.outcome in BROKE for o in only)
        summary = (
            f"the candidate {_verb(only)} on {len(only)} of {counts['candidate']} seed"
            f"{'s' if counts['candidate'] != 1 else ''} where the baseline finished: {_listing(only)}"
        )
        others = [o for side in SIDES for o in outcomes.get(side, []) if not o.finished and o not in only]
        if others:
            summary += f" (also: {'; '.join(f'{o.side} seed {o.seed} {o.describe()}' for o in others)})"
        first = next((o for o in only if o.outcome != NON_FINITE), only[0])
        if first.outcome == NON_FINITE:
            remediation = (
                f"Look at the candidate's `{first.quantity}` around step {first.step} and what feeds it "
                "(learning rate, loss scale, advantage normalization, log of a probability that reached 0)."
            )
        else:
            remediation = (
                "Read the failed run's traceback in the evidence (details.outcomes), reproduce it with "
                f"`rlaudit train <candidate> --seed {first.seed} --steps N --out DIR`, and fix the candidate: a "
                "trainer that crashes on some seeds is a regression even when its other seeds learn."
            )
        return OutcomeVerdict(
            Status.CONFIRMED if confirmed else Status.SUSPECT,
            Severity.HIGH if confirmed else Severity.MEDIUM,
            summary,
            remediation,
            only,
            first.error,
        )
    stopped = [o for side in SIDES for o in outcomes.get(side, []) if o.stopped]
    if stopped:
        listing = "; ".join(f"{o.side} seed {o.seed} {o.describe()}" for o in stopped)
        return OutcomeVerdict(
            Status.ERROR,
            Severity.INFO,
            f"{len(stopped)} training run{'s' if len(stopped) != 1 else ''} did not finish: {listing}",
            "Read the traceback in the evidence; fix the subject or raise the probe's timeout or memory limit, "
            "then rerun this notebook.",
            error=stopped[0].error,
        )
    diverged = {side: [o for o in outcomes.get(side, []) if o.outcome == NON_FINITE] for side in SIDES}
    if diverged["baseline"] or diverged["candidate"]:
        listing = "; ".join(
            f"{o.side} seed {o.seed} {o.describe()}" for side in SIDES for o in diverged[side]
        )
        alike = bool(diverged["baseline"]) and bool(diverged["candidate"])
        return OutcomeVerdict(
            Status.NOTED,
            Severity.LOW,
            f"non-finite values {'on both sides alike' if alike else 'on the baseline only'}: {listing}",
            "Non-finite values the baseline shows too are no difference between the two; look at them if the "
            "baseline should not diverge either.",
        )
    listing = "; ".join(
        f"{side} seeds {', '.join(str(o.seed) for o in outcomes.get(side, []))}" for side in SIDES
    )
    passed = [
        f"{o.side} seed {o.seed} {o.describe_passed()}"
        for side in SIDES
        for o in outcomes.get(side, [])
        if o.passed
    ]
    if passed:
        listing += "; training went on past a NaN or infinity (no divergence): " + "; ".join(passed)
    return OutcomeVerdict(
        Status.CLEARED,
        Severity.INFO,
        f"every run finished with finite values{' at its end' if passed else ''} ({listing})",
        "",
    )


# ---------------------------------------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------------------------------------


@dataclass
class AttemptedRuns:
    """Every training run asked for, as evidence: guarded only for a missing capability (SKIPPED), never for
    a failed run, since the failed runs are what the check reports."""

    runs: TrainingRuns

    def guard(self, id: str, subsystem: str, hypothesis: str) -> Finding | None:
        for pair in self.runs.pairs:
            missing = {side: list(r.missing) for side, r in pair.sides().items() if r.missing}
            if missing:
                return Finding.skipped(id, subsystem, hypothesis, missing)
        return None


def attempted_runs(wb: Workbench, given: TrainingRuns | None = None) -> AttemptedRuns:
    """``needs=`` of :func:`outcomes`: the profile's training runs (``given`` runs instead, when passed)."""
    return AttemptedRuns(given if given is not None else TrainingRuns.of(runs(wb)))


@check("trainer/outcomes", title="Every run accounted for", needs=attempted_runs)
def outcomes(c: Check, evidence: AttemptedRuns) -> Section:
    """Every training run of both sides finishes with finite values

    One row per seed and side: finished, raised (with the exception), crashed, killed, timed out, or
    non-finite from a step (with the first quantity that was).
    """
    found = evidence.runs.outcomes()
    verdict = judge_outcomes(found)
    table = outcomes_table(found)
    details = {
        "outcomes": [
            {**o.row(), **({"error": o.error.to_dict()} if hasattr(o.error, "to_dict") else {})}
            for side in SIDES
            for o in found.get(side, [])
        ]
    }
    finished = {side: sum(o.finished for o in found.get(side, [])) for side in SIDES}
    if verdict.status is Status.ERROR:
        error = verdict.error or ProbeError("protocol", verdict.summary)
        finding = Finding.error(c.id, c.subsystem, c.hypothesis, "baseline and candidate", error)
        finding.evidence.summary = verdict.summary[:500]
        finding.evidence.details.update(details)
    else:
        finding = c.finding(
            verdict.status,
            verdict.severity,
            summary=verdict.summary,
            values={side: f"{finished[side]} of {len(found.get(side, []))} finished" for side in SIDES},
            details=details,
            remediation=verdict.remediation,
        )
    return c.section(
        finding,
        tables={"runs": table},
        notes="A run that raised, crashed, was killed or timed out leaves nothing to compare; the other checks "
        "compare the runs that finished and say which seeds they rest on. Non-finite: the first NaN or infinity "
        "the recorder saw in a return, loss, gradient norm or logged scalar.",
    )
