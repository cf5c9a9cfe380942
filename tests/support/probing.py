"""Running a probe function directly in the test's process, as the worker would run it in the subject's."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rlaudit.probe import ProbeContext


def probe_context(
    subject: Any,
    out: Path,
    capabilities: Iterable[str],
    *,
    spec: str = "toy",
    config: dict[str, Any] | None = None,
) -> ProbeContext:
    """A :class:`ProbeContext` for ``subject`` writing under ``out`` (created).

    Args:
        subject: The subject object (a module or any object with the capabilities).
        out: The artifact directory.
        capabilities: The capabilities the probe may use (``ctx.has``).
        spec: The spec string the probe sees.
        config: The resolved config (default: ``subject.config()`` when it has one, else ``{}``).
    """
    out.mkdir(parents=True, exist_ok=True)
    if config is None:
        config = subject.config() if callable(getattr(subject, "config", None)) else {}
    return ProbeContext(
        subject=subject, config=config, out=out, spec=spec, capabilities=frozenset(capabilities)
    )
