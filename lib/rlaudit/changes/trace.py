"""Which functions of the subject's own files run while a probe runs.

:class:`FunctionTrace` records the code objects executed from files under given directories: with
``sys.monitoring`` (Python 3.12+; every code object is reported once, then disabled, so tracing costs nothing
after a function's first call) or ``sys.settrace`` on 3.11 (a call event per Python call; frames outside the
subject's files get no line tracing, so the cost is one small function call per call). A tracer already
installed (coverage, a debugger) keeps receiving its events.

Runs inside the subject's process (a probe uses it): standard library only.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

TOOL_NAME = "rlaudit-trace"


class FunctionTrace:
    """Context manager recording the functions of files under ``roots`` that run inside it.

    Args:
        roots: Directories whose Python files count (the subject's source tree).

    Attributes:
        functions: ``"<path relative to its root>::<qualified name>"`` -> times its code started (with
            ``sys.monitoring``, 1: each function is reported once per trace).
    """

    def __init__(self, roots: Sequence[str | Path]) -> None:
        self.roots = [os.path.realpath(str(r)) + os.sep for r in roots]
        self.functions: dict[str, int] = {}
        self._inside: dict[str, str | None] = {}
        self._previous: Any = None
        self._tool: int | None = None

    def _relative(self, filename: str) -> str | None:
        cached = self._inside.get(filename, "")
        if cached != "":
            return cached
        real = os.path.realpath(filename)
        rel = next((real[len(r) :] for r in self.roots if real.startswith(r)), None)
        rel = rel.replace(os.sep, "/") if rel is not None else None
        self._inside[filename] = rel
        return rel

    def _record(self, code: CodeType) -> bool:
        rel = self._relative(code.co_filename)
        if rel is None:
            return False
        key = f"{rel}::{getattr(code, 'co_qualname', code.co_name)}"
        self.functions[key] = self.functions.get(key, 0) + 1
        return True

    # -- sys.settrace (3.11) ------------------------------------------------------------------------------

    def _tracer(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call":
            self._record(frame.f_code)
        previous = self._previous
        return previous(frame, event, arg) if previous is not None else None

    # -- sys.monitoring (3.12+) ---------------------------------------------------------------------------

    def _on_start(self, code: CodeType, offset: int) -> Any:
        self._record(code)
        return sys.monitoring.DISABLE  # type: ignore[attr-defined]  # once is enough: we want the set

    def __enter__(self) -> FunctionTrace:
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            for tool in (monitoring.PROFILER_ID, 3, 4):
                if monitoring.get_tool(tool) is None:
                    monitoring.use_tool_id(tool, TOOL_NAME)
                    self._tool = tool
                    break
        if self._tool is not None:
            monitoring.register_callback(self._tool, monitoring.events.PY_START, self._on_start)
            monitoring.set_events(self._tool, monitoring.events.PY_START)
            monitoring.restart_events()  # code disabled by an earlier trace reports again
        else:
            self._previous = sys.gettrace()
            sys.settrace(self._tracer)
            threading.settrace(self._tracer)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tool is not None:
            monitoring = sys.monitoring  # type: ignore[attr-defined]
            monitoring.set_events(self._tool, 0)
            monitoring.register_callback(self._tool, monitoring.events.PY_START, None)
            monitoring.free_tool_id(self._tool)
            self._tool = None
        else:
            sys.settrace(self._previous)
            threading.settrace(self._previous)  # type: ignore[arg-type]


def functions_by_subsystem(traces: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """``"<path>::<qualname>"`` -> the subsystems whose probes ran it, from :func:`rlaudit.changes.probes.trace`'s
    ``functions.json`` (``{probe label: {"subsystem": s, "functions": {...}}}``). Training runs are listed
    under ``"training"`` (everything a training run executes; not a subsystem of its own)."""
    out: dict[str, list[str]] = {}
    for entry in traces.values():
        subsystem = entry.get("subsystem", "")
        for key in entry.get("functions", {}):
            subs = out.setdefault(key, [])
            if subsystem and subsystem not in subs:
                subs.append(subsystem)
    return out
