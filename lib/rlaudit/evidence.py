"""Evidence in words, once for every room: numbers, intervals, ratios, and the verdict on a difference.

Two rules hold for every audit that compares a measured difference:

- a difference counts when its interval excludes "no difference" *and* it is larger than the practical
  margin, so identical setups stay quiet on a noisy machine;
- **CLEARED needs evidence of equivalence**: the whole interval lies inside the margin (two one-sided
  tests, TOST, at the interval's level). A comparison that is neither is *inconclusive*: NOTED, with the
  number of seeds (or repeats) that would settle it when that can be computed.

:func:`judge` applies both rules to an interval; :func:`judge_ratio` to a ratio (margins on a log scale).

A third rule holds for every check, whatever it compares: **CLEARED covers only what was measured on both
sides**. A quantity measured on one side only (a form that cannot be reduced to the compared number: a Huber
value loss has no squared-error scale) is a difference, never an agreement; one measured on neither side was
not compared. :func:`coverage` finds both, and :meth:`rlaudit.checks.Check.finding` applies it to every CLEARED
finding given ``measured=``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from rlaudit.findings import Severity, Status

DIFFERENT = "different"
EQUIVALENT = "equivalent"
INCONCLUSIVE = "inconclusive"


# ---------------------------------------------------------------------------------------------------------
# Numbers in sentences
# ---------------------------------------------------------------------------------------------------------


def fmt(value: Any, digits: int = 3) -> str:
    """A compact number: ``0.00025`` -> ``0.00025``, ``1024.0`` -> ``1024``, ``12345.6`` -> ``12,346``.

    None and NaN read ``n/a``; booleans and text are returned as text.
    """
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | np.integer):
        return f"{int(value):,}" if abs(int(value)) >= 10_000 else str(int(value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return "n/a"
    if not math.isfinite(number):
        return "∞" if number > 0 else "-∞"
    if number.is_integer() and abs(number) < 1e12:
        return f"{int(number):,}" if abs(number) >= 10_000 else str(int(number))
    if abs(number) >= 1000 and abs(number) < 1e12:
        return f"{number:,.0f}"
    return f"{number:.{digits}g}"


def pct(value: float | None, *, signed: bool = False) -> str:
    """``0.123`` -> ``12%`` (``+12%`` with ``signed``); None and NaN read ``n/a``."""
    if value is None or not math.isfinite(float(value)):
        return "n/a"
    return f"{float(value):+.0%}" if signed else f"{float(value):.0%}"


def interval(low: float | None, high: float | None, digits: int = 3) -> str:
    """``[0.12, 0.34]``; ``[n/a]`` when a bound is missing."""
    if low is None or high is None:
        return "[n/a]"
    return f"[{fmt(low, digits)}, {fmt(high, digits)}]"


def estimate(
    point: float | None, low: float | None = None, high: float | None = None, digits: int = 3
) -> str:
    """``0.23 [0.12, 0.34]``, or the point alone when there is no interval."""
    if low is None or high is None:
        return fmt(point, digits)
    return f"{fmt(point, digits)} {interval(low, high, digits)}"


def ratio(point: float | None, low: float | None = None, high: float | None = None) -> str:
    """``×1.23 [1.1, 1.4]``: a candidate/baseline ratio with its interval."""
    text = f"×{fmt(point)}"
    return text if low is None or high is None else f"{text} {interval(low, high)}"


def versus(candidate: Any, baseline: Any, unit: str = "") -> str:
    """``"3.2 ms vs 1.1 ms"``: the candidate's value first, as every summary reads."""
    tail = f" {unit}" if unit else ""
    return f"{fmt(candidate)}{tail} vs {fmt(baseline)}{tail}"


def sides(values: dict[str, Any], unit: str = "") -> str:
    """``"1.1 | 3.2"``: baseline | candidate, for sentences that list both sides in table order."""
    tail = f" {unit}" if unit else ""
    return f"{fmt(values.get('baseline'))}{tail} | {fmt(values.get('candidate'))}{tail}"


def seeds(n: int) -> str:
    return f"{n} seed{'s' if n != 1 else ''}"


# ---------------------------------------------------------------------------------------------------------
# The verdict on a difference
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """What an interval says about a difference.

    Attributes:
        kind: ``"different"``, ``"equivalent"`` or ``"inconclusive"``.
        point, low, high: The estimate and its interval.
        margin: The equivalence margin ``(low, high)`` around "no difference".
        needed: Seeds (or repeats) per side that would settle an inconclusive comparison, when known.
    """

    kind: str
    point: float
    low: float
    high: float
    margin: tuple[float, float]
    needed: int | None = None

    @property
    def different(self) -> bool:
        return self.kind == DIFFERENT

    @property
    def equivalent(self) -> bool:
        return self.kind == EQUIVALENT

    @property
    def inconclusive(self) -> bool:
        return self.kind == INCONCLUSIVE

    def status(self, flagged: Status = Status.SUSPECT) -> Status:
        """``flagged`` when different, CLEARED when equivalent, NOTED when inconclusive."""
        if self.different:
            return flagged
        return Status.CLEARED if self.equivalent else Status.NOTED

    def settle(self, what: str = "seeds") -> str:
        """``"about 12 seeds per side would settle it"`` (empty when not known)."""
        if not self.inconclusive:
            return ""
        if self.needed is None:
            return f"more {what} would settle it"
        return settle_phrase(self.needed, what)

    def margin_text(self, ratio_scale: bool = False) -> str:
        lo, hi = self.margin
        if ratio_scale:
            return f"×{fmt(lo)} to ×{fmt(hi)}"
        return f"±{fmt(hi)}" if math.isclose(-lo, hi) else f"{fmt(lo)} to {fmt(hi)}"


IMPRACTICAL = 1_000
"""Above this many seeds (or repeats) per side, an estimate is not offered as a plan: it comes from an effect at
the very edge of the practical margin, or from a spread far wider than the margin."""


def settle_phrase(needed: int, what: str = "seeds", per: str = "side", verb: str = "settle it") -> str:
    """``"about 12 seeds per side would settle it"``; above :data:`IMPRACTICAL`, says that no practical number
    would (an estimate at the margin's edge grows without bound, and "about 16024 runs" reads as a plan).
    ``per`` names what each count is for (an attribution arm), ``verb`` what it would do (``"decide it"``;
    empty for a clause the caller ends)."""
    tail = f" {verb}" if verb else ""
    if needed > IMPRACTICAL:
        return (
            f"no practical number of {what} would{tail} (about {needed:,} per {per}: the estimate lies at the "
            "edge of the margin, or the spread is far wider than it)"
        )
    return f"about {needed} {what} per {per} would{tail}"


class Verdict(NamedTuple):
    """A check's decision in words: what :meth:`rlaudit.checks.Check.conclude` turns into a finding.

    Attributes:
        status: The verdict.
        severity: The expected cost if real.
        summary: The finding's one sentence.
        remediation: The one step to take.
    """

    status: Status
    severity: Severity
    summary: str
    remediation: str


def inconclusive(what: str, rerun: str) -> Verdict:
    """The verdict of a comparison that shows neither a difference nor equivalence: NOTED, saying ``what`` was
    measured (``"inconclusive: <what>"``) and what a larger profile would add (``rerun``, e.g. ``"longer
    rollouts"``)."""
    return Verdict(
        Status.NOTED,
        Severity.INFO,
        f"inconclusive: {what}",
        f"Rerun at a larger profile ({rerun}) to settle it.",
    )


# ---------------------------------------------------------------------------------------------------------
# Coverage: CLEARED needs every compared quantity measured on both sides
# ---------------------------------------------------------------------------------------------------------

SIDES = ("baseline", "candidate")


def measured(value: Any) -> bool:
    """A value counts as measured unless it is None or a NaN (a float the measurement could not produce)."""
    if value is None:
        return False
    try:
        return not math.isnan(float(value))
    except (TypeError, ValueError):
        return True


@dataclass(frozen=True)
class Coverage:
    """Which compared quantities were measured on which side: what a check needs before it may clear.

    An equivalence claim holds only for what was measured on both sides. A quantity measured on one side
    only is itself a difference (a Huber value loss has no squared-error scale to compare with the
    baseline's ½), and one measured on neither side was not compared at all.

    Attributes:
        one_sided: Quantity -> the one side on which it was measured.
        neither: Quantities measured on no side.
        words: ``{side: {quantity: words}}``: how each side's value (or what stood in its place) reads.
    """

    one_sided: dict[str, str]
    neither: tuple[str, ...]
    words: dict[str, dict[str, str]]

    @property
    def complete(self) -> bool:
        """Every quantity was measured on both sides."""
        return not self.one_sided and not self.neither

    def describe(self) -> str:
        """``"value-loss scale: ½·MSE on the baseline, not measured on the candidate (Huber...)"; ...``."""
        parts = []
        for name, side in self.one_sided.items():
            other = SIDES[1 - SIDES.index(side)]
            have = self.words.get(side, {}).get(name, "")
            lack = self.words.get(other, {}).get(name, "")
            parts.append(
                f"{name}: {have + ' ' if have else ''}on the {side}, not measured on the {other}"
                + (f" ({lack})" if lack else "")
            )
        if self.neither:
            parts.append(f"not measured on either side: {', '.join(self.neither)}")
        return "; ".join(parts)

    def verdict(self, severity: Severity = Severity.MEDIUM) -> Verdict | None:
        """None when complete; else SUSPECT naming the one-sided quantities (a difference of form), or NOTED
        "not measured" naming what was measured on neither side. Never CLEARED."""
        if self.complete:
            return None
        if self.one_sided:
            return Verdict(
                Status.SUSPECT,
                severity,
                f"measured on one side only, so not the same: {self.describe()}",
                "Find why the quantity cannot be measured on that side (a different form of the computation, "
                "such as a Huber loss where the other side squares, or a value the subject stopped producing) "
                "and restore the baseline's.",
            )
        return Verdict(
            Status.NOTED,
            Severity.INFO,
            f"not measured: {', '.join(self.neither)}; the agreement holds only for what was compared",
            "Expose what the check needs on both sides to compare it.",
        )


def coverage(
    quantities: Mapping[str, Mapping[str, Any]],
    words: Mapping[str, Mapping[str, str]] | None = None,
    *,
    expected: Sequence[str] = (),
) -> Coverage:
    """Which of the compared quantities are missing on a side.

    Args:
        quantities: ``{side: {quantity: value}}``, the values a check compares (None or NaN: not measured).
            A quantity named on one side only counts as not measured on the other.
        words: ``{side: {quantity: words}}``: how each side's value reads, or why it could not be measured
            (e.g. ``"not a plain squared error"``); used in the verdict's sentence.
        expected: Quantities the check always compares: named here, they count even when neither side
            lists them.

    Returns:
        The :class:`Coverage`: its :meth:`Coverage.verdict` is None only when everything was measured on both.
    """
    names = list(
        dict.fromkeys([*expected, *quantities.get("baseline", {}), *quantities.get("candidate", {})])
    )
    one_sided: dict[str, str] = {}
    neither: list[str] = []
    for name in names:
        have = [s for s in SIDES if measured(quantities.get(s, {}).get(name))]
        if len(have) == 1:
            one_sided[name] = have[0]
        elif not have:
            neither.append(name)
    return Coverage(one_sided, tuple(neither), {s: dict((words or {}).get(s, {})) for s in SIDES})


def judge(
    point: float,
    low: float,
    high: float,
    margin: float | tuple[float, float],
    *,
    needed: int | None = None,
) -> Judgement:
    """Judge a difference (candidate - baseline, or any effect whose "no difference" is 0) by its interval.

    Args:
        point: The estimate.
        low, high: Its interval (e.g. a 95% bootstrap interval).
        margin: The practical margin: ``m`` for ``[-m, m]``, or ``(low, high)``.
        needed: Seeds or repeats per side that would settle an inconclusive comparison.

    Returns:
        ``different`` when the interval excludes 0 and the estimate lies outside the margin; ``equivalent``
        when the whole interval lies inside the margin (TOST at the interval's level); else
        ``inconclusive``.
    """
    lo_m, hi_m = (-abs(margin), abs(margin)) if isinstance(margin, int | float) else margin
    values = [float(v) for v in (point, low, high)]
    if not all(math.isfinite(v) for v in values):
        return Judgement(INCONCLUSIVE, values[0], values[1], values[2], (lo_m, hi_m), needed)
    point, low, high = values
    if (low > 0 or high < 0) and not lo_m <= point <= hi_m:
        kind = DIFFERENT
    elif lo_m <= low and high <= hi_m:
        kind = EQUIVALENT
    else:
        kind = INCONCLUSIVE
    return Judgement(kind, point, low, high, (lo_m, hi_m), needed if kind == INCONCLUSIVE else None)


def judge_ratio(
    point: float, low: float, high: float, factor: float, *, needed: int | None = None
) -> Judgement:
    """Judge a ratio (candidate / baseline; "no difference" is 1) with the margin ``[1/factor, factor]``.

    The decision is made on the log scale, so a ratio of 2 and one of 0.5 are equally far from 1; the
    returned values stay ratios.
    """
    values = [float(v) for v in (point, low, high)]
    if not all(math.isfinite(v) and v > 0 for v in values):
        return Judgement(INCONCLUSIVE, values[0], values[1], values[2], (1 / factor, factor), needed)
    logs = judge(*(math.log(v) for v in values), math.log(factor), needed=needed)
    return Judgement(logs.kind, values[0], values[1], values[2], (1 / factor, factor), logs.needed)


def equivalence_seeds(
    sd: float, margin: float, diff: float = 0.0, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Seeds per side that two one-sided tests need to show equivalence within ``margin``.

    Normal approximation for two independent arms (Chow, Shao & Wang, *Sample Size Calculations in Clinical
    Research*, 3.2): ``n = 2 sd² (z_{1-α} + z_{1-β/2})² / margin²`` when the true difference is 0, and with
    ``z_{1-β}`` and ``margin - |diff|`` otherwise.

    Returns:
        Seeds per side (at least 2), or None when the true difference is not inside the margin (no number of
        seeds shows equivalence then) or ``sd`` is not usable.
    """
    from scipy.stats import norm

    if not (math.isfinite(sd) and sd >= 0 and margin > 0) or abs(diff) >= margin:
        return None
    if sd == 0:
        return 2
    z_beta = norm.ppf(1 - (1 - power) / 2) if diff == 0 else norm.ppf(power)
    n = 2 * (sd * (norm.ppf(1 - alpha) + z_beta) / (margin - abs(diff))) ** 2
    return max(2, math.ceil(n))


def spread(values: Sequence[float]) -> float:
    """Sample standard deviation (NaN below two values)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.std(x, ddof=1)) if len(x) >= 2 else float("nan")
