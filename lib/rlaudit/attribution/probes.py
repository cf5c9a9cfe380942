"""Attribution's probe: what a subject offers to undo in itself.

Runs inside the subject's process; imports only the probe API.
"""

from __future__ import annotations

from typing import Any

from rlaudit.probe import ProbeContext, probe


@probe(requires=(), version=1)
def fixes(ctx: ProbeContext) -> dict[str, Any]:
    """The fixes the subject exposes through an optional ``fixes()`` (the built-in subjects do: one per fault
    they carry, ``{"id": ..., "subsystem": ...}``, in the order of their spec).

    Returns ``{"fixes": [...], "exposed": bool}``; ``exposed`` is False (and the list empty) for a subject
    without ``fixes()``.
    """
    method = getattr(ctx.subject, "fixes", None)
    if not callable(method):
        return {"fixes": [], "exposed": False}
    return {
        "fixes": [{"id": str(f["id"]), "subsystem": str(f["subsystem"])} for f in method()],
        "exposed": True,
    }
