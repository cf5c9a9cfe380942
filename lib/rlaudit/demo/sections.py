"""A section of the built-in subjects' config: a dataclass read strictly from a plain dict and written back.

A key a section does not define is an error naming it and the known keys (a typo in an override must not
silently fall back to a default); a missing key keeps its default.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

T = TypeVar("T")
S = TypeVar("S", bound="ConfigSection")


def dataclass_from_dict(cls: type[T], d: dict[str, Any], section: str) -> T:
    """Build dataclass ``cls`` from ``d``, rejecting keys it does not know.

    Args:
        cls: A dataclass type.
        d: Field values; missing fields keep their defaults.
        section: The config section's name, used in error messages.

    Raises:
        TypeError: ``d`` is not a dict.
        ValueError: ``d`` has keys ``cls`` does not define (named, with the known keys).
    """
    if not isinstance(d, dict):
        raise TypeError(f"config section {section!r} must be a dict, got {type(d).__name__}")
    known = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(d) - set(known))
    if unknown:
        raise ValueError(
            f"unknown key(s) {unknown} in config section {section!r}; known keys: {sorted(known)}. "
            "Check the spelling: a typo would otherwise fall back to the default silently."
        )
    return cls(**d)


class ConfigSection:
    """Base of a config dataclass: ``to_dict`` and a strict ``from_dict`` under the section's name.

    Attributes:
        section: The section's name in the config (``"trainer"``), as errors name it.
    """

    section: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable copy of the fields."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[S], d: dict[str, Any]) -> S:
        """Build from a (possibly partial) dict; unknown keys raise ``ValueError`` naming them."""
        obj = dataclass_from_dict(cls, d, cls.section)
        obj.validate()
        return obj

    def validate(self) -> None:
        """Check values read from a dict (and normalize their types); raise ``ValueError`` naming the field."""
