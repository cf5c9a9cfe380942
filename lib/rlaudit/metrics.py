"""Metrics are declared, never assumed: what "trains worse" is measured by, for any subject.

A subject may declare its metrics through the optional ``metrics()`` capability::

    def metrics():
        return [
            {"name": "heart.get", "direction": "higher", "source": "episode", "primary": True},
            {"name": "losses/value_loss", "direction": "lower", "source": "scalar"},
        ]

Each metric has a ``name``, a ``direction`` (``"higher"`` or ``"lower"`` is better) and a ``source``: an
``"episode"`` statistic passed to ``recorder.episode(...)``, or a ``"scalar"`` logged with
``recorder.log(step, ...)``. One metric is primary: the one whose final value defines the learning gap that
every audit, the seeding power table and attribution measure. With nothing declared the primary metric is
the episodic return, ``recorder.episode(step=..., **{"return": R})``. ``rlaudit report --metric NAME`` (or
``make report METRIC=NAME``, ``NAME:lower`` for a cost) overrides the primary metric.

The :func:`declared` probe reads the declaration inside the subject's process; :func:`resolve` turns both
sides' declarations and the user's override into the :class:`Metric` the workbench hands to every audit.
This module is light (standard library only) so that the probe runs in any subject's interpreter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rlaudit.probe import ProbeContext, probe

HIGHER = "higher"
LOWER = "lower"
EPISODE = "episode"
SCALAR = "scalar"
RETURN = "return"

_EXAMPLE = '[{"name": "return", "direction": "higher", "source": "episode", "primary": True}]'


@dataclass(frozen=True)
class Metric:
    """One quantity a training run is judged by.

    Attributes:
        name: The episode statistic (``"return"``, ``"heart.get"``) or the logged scalar
            (``"charts/episodic_return"``).
        direction: ``"higher"`` or ``"lower"`` is better.
        source: ``"episode"`` (passed to ``recorder.episode``) or ``"scalar"`` (``recorder.log``).
        primary: Whether this is the metric the learning gap is measured on.
        origin: Where the choice came from: ``"declared"`` (the subject's ``metrics()``), ``"override"``
            (``--metric``) or ``"default"`` (the episodic return).
    """

    name: str
    direction: str = HIGHER
    source: str = EPISODE
    primary: bool = False
    origin: str = "declared"

    @property
    def sign(self) -> int:
        """+1 when higher is better, -1 when lower is: ``sign * (candidate - baseline) < 0`` is worse."""
        return 1 if self.direction == HIGHER else -1

    @property
    def better(self) -> str:
        return "higher" if self.direction == HIGHER else "lower"

    @property
    def how_to_report(self) -> str:
        """One sentence a SKIPPED finding uses to say how a subject makes this metric available."""
        if self.origin == "override":
            # The user typed the name: a misspelling is likelier than a subject that should log something new.
            return (
                f"`{self.name}` came from --metric: pass a name the training runs record (the learning check "
                "lists them), or report it in `train()` with `recorder.episode(...)` or `recorder.log(...)`."
            )
        if self.source == SCALAR:
            return f"Log it in `train()`: `recorder.log(step, **{{{self.name!r}: value}})`."
        return (
            f"Report it per finished episode in `train()`: "
            f"`recorder.episode(step=step, env=i, **{{{self.name!r}: value}})`"
            + (
                " (or declare another primary metric in `metrics()`, or pass --metric)."
                if self.name != RETURN
                else "."
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return self.name


DEFAULT = Metric(RETURN, HIGHER, EPISODE, primary=True, origin="default")
"""The primary metric of a subject that declares none: the episodic return from ``recorder.episode``."""


def parse(declared: Any, where: str = "metrics()") -> list[Metric]:
    """Validate a subject's ``metrics()`` result.

    Args:
        declared: A list of mappings (``name``, optional ``direction``, ``source``, ``primary``), or of
            plain names.
        where: Who declared it, for error messages.

    Returns:
        The metrics; exactly one is primary (the first, when none says so).

    Raises:
        ValueError: Not a list of metric declarations, an unknown direction or source, no name, or more
            than one primary, saying what was expected.
    """
    if isinstance(declared, str | bytes) or not isinstance(declared, Iterable):
        raise ValueError(f"{where} returned {type(declared).__name__}; expected a list like {_EXAMPLE}")
    out: list[Metric] = []
    for i, item in enumerate(declared):
        entry: Mapping[str, Any] = {"name": item} if isinstance(item, str) else item
        if not isinstance(entry, Mapping) or not str(entry.get("name") or "").strip():
            raise ValueError(
                f"{where}[{i}] is {item!r}; expected a name or a mapping with name:, e.g. {_EXAMPLE}"
            )
        unknown = sorted(set(entry) - {"name", "direction", "source", "primary", "description"})
        if unknown:
            raise ValueError(
                f"{where}[{i}] has unknown key(s) {', '.join(unknown)}; expected name, direction, source, primary"
            )
        direction = str(entry.get("direction", HIGHER)).lower()
        source = str(entry.get("source", EPISODE)).lower()
        if direction not in (HIGHER, LOWER):
            raise ValueError(
                f"{where}[{i}] direction {direction!r}; expected 'higher' or 'lower' (is better)"
            )
        if source not in (EPISODE, SCALAR):
            raise ValueError(
                f"{where}[{i}] source {source!r}; expected 'episode' (recorder.episode) or 'scalar' (recorder.log)"
            )
        out.append(Metric(str(entry["name"]).strip(), direction, source, bool(entry.get("primary", False))))
    primaries = [m for m in out if m.primary]
    if len(primaries) > 1:
        raise ValueError(
            f"{where} marks {len(primaries)} metrics primary ({', '.join(m.name for m in primaries)}); "
            "expected exactly one"
        )
    if out and not primaries:
        out[0] = Metric(out[0].name, out[0].direction, out[0].source, True)
    return out


def parse_override(text: str) -> tuple[str, str | None]:
    """``"NAME"`` or ``"NAME:lower"`` / ``"NAME:higher"`` -> ``(name, direction or None)``."""
    name, sep, direction = str(text).strip().rpartition(":")
    if sep and direction.lower() in (HIGHER, LOWER):
        return name.strip(), direction.lower()
    return str(text).strip(), None


def resolve(declared: Mapping[str, Sequence[Metric] | None], override: str = "") -> tuple[Metric, list[str]]:
    """The primary metric of a pair, and sentences about how it was chosen.

    Args:
        declared: Per side (``baseline``, ``candidate``), its parsed metrics or None (declares none).
        override: ``--metric NAME[:lower|higher]``; empty to use the declarations.

    Returns:
        ``(metric, notes)``. The baseline's declaration wins when the sides disagree (it is the setup that
        trained well); the notes say so.
    """
    notes: list[str] = []
    base = list(declared.get("baseline") or [])
    cand = list(declared.get("candidate") or [])
    known = {m.name: m for m in [*cand, *base]}
    if override:
        name, direction = parse_override(override)
        found = known.get(name)
        metric = Metric(
            name,
            direction or (found.direction if found else HIGHER),
            found.source if found else EPISODE,
            primary=True,
            origin="override",
        )
        if found is None and known:
            notes.append(f"`{name}` (from --metric) is not among the declared metrics ({', '.join(known)})")
        return metric, notes
    primary = {
        side: next((m for m in ms if m.primary), None)
        for side, ms in (("baseline", base), ("candidate", cand))
    }
    chosen = primary["baseline"] or primary["candidate"]
    if chosen is None:
        return DEFAULT, ["no subject declares metrics(): the primary metric is the episodic return"]
    if primary["baseline"] and primary["candidate"] and primary["baseline"].name != primary["candidate"].name:
        notes.append(
            f"the sides declare different primary metrics ({primary['baseline'].name} vs "
            f"{primary['candidate'].name}); the baseline's is used"
        )
    return Metric(chosen.name, chosen.direction, chosen.source, True, "declared"), notes


@probe(version=2)
def declared(ctx: ProbeContext) -> dict[str, Any]:
    """What the subject declares about how it is measured.

    ``{"metrics": [...] or None, "total_steps": int or None}``: its ``metrics()`` declaration, and its own run
    length from the optional ``total_steps(config)`` (the steps its schedules span; ``None`` without it).
    """
    fn = getattr(ctx.subject, "metrics", None)
    metrics = [m.to_dict() for m in parse(fn(), f"{ctx.spec}: metrics()")] if callable(fn) else None
    return {"metrics": metrics, "total_steps": total_steps_of(ctx.subject, ctx.config, ctx.spec)}


def total_steps_of(subject: Any, config: dict[str, Any], where: str) -> int | None:
    """The subject's ``total_steps(config)``: a positive whole number of environment steps, or ``None`` (no
    capability, or ``None`` returned: no run length of its own)."""
    fn = getattr(subject, "total_steps", None)
    if not callable(fn):
        return None
    value = fn(config)
    if value is None:  # the subject has no run length of its own for this config
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value <= 0:
        raise ValueError(
            f"{where}: total_steps(config) returned {value!r}; expected a positive whole number of environment "
            "steps (all environments together), the length of one of the subject's own training runs"
        )
    return int(value)


def run_length(declared: Mapping[str, int | None], budget: int) -> tuple[int, str]:
    """Steps of a full training run: the profile's ``budget``, shortened to the subjects' own run length.

    ``declared`` maps each side to its ``total_steps`` (or ``None``). A run longer than the subject's own trains
    past the end of its schedules (a learning rate annealed to zero, a finished curriculum), where both sides
    may have converged and the gap the user sees is gone. The longer of the two declared lengths is used, so
    neither side's run is cut short of its own; the note says what was chosen (empty when nothing changed).
    """
    lengths = {side: n for side, n in declared.items() if n}
    if not lengths:
        return int(budget), ""
    own = max(lengths.values())
    if own >= budget:
        return int(budget), ""
    sides = ", ".join(f"{side} {n:,}" for side, n in lengths.items())
    return own, f"training runs are {own:,} steps, the subjects' own run length (total_steps: {sides})"
