"""Progress counters of the running probe, in the subject's process: what "not stuck" means to the worker.

The recorder counts environment steps, optimizer updates and finished episodes here; a probe's
``ctx.progress`` counts too, and so does each module the worker imports (:func:`audit_hook`). The worker
reports a change of :data:`PROGRESS` to the client about once a second while a probe runs
(:mod:`rlaudit.engine.worker`), and the client stops a probe whose counters stood still for the stall limit
(:mod:`rlaudit.engine.limits`). A probe that sleeps or spins without doing any of these makes
no progress, however much CPU it burns; one that is merely slow on a busy machine keeps counting.

Only the standard library: this module runs in subjects' own interpreters, and its calls sit in hot loops
(one attribute increment each).
"""

from __future__ import annotations

from typing import Any


class Progress:
    """The counters (plain ints, written from the probe's thread, read from the worker's sender thread).

    Attributes:
        beats: Every sign of progress, of any kind (what the stall limit watches).
        step: The last environment step the recorder was told (``Recorder.log``/``episode``/...).
        updates: Optimizer steps the recorder saw.
        episodes: Episodes the recorder was told finished.
        reports: ``ctx.progress`` calls of the probe itself.
        imports: Modules imported (the first call of a probe may spend seconds importing torch).
    """

    __slots__ = ("beats", "episodes", "imports", "reports", "step", "updates")

    def __init__(self) -> None:
        self.beats = 0
        self.step = 0
        self.updates = 0
        self.episodes = 0
        self.reports = 0
        self.imports = 0

    def as_dict(self) -> dict[str, Any]:
        names = ("beats", "step", "updates", "episodes", "reports", "imports")
        return {name: getattr(self, name) for name in names}


PROGRESS = Progress()
"""This process's counters (one probe runs at a time in a worker)."""


def step(value: int) -> None:
    """An environment step was reached (a new step number counts as progress; a repeated one does not)."""
    if value != PROGRESS.step:
        PROGRESS.step = value
        PROGRESS.beats += 1


def update() -> None:
    """An optimizer update was done."""
    PROGRESS.updates += 1
    PROGRESS.beats += 1


def episode() -> None:
    """An episode finished."""
    PROGRESS.episodes += 1
    PROGRESS.beats += 1


def report() -> None:
    """The probe reported progress itself (``ctx.progress``)."""
    PROGRESS.reports += 1
    PROGRESS.beats += 1


def audit_hook(event: str, args: tuple[Any, ...]) -> None:
    """``sys.addaudithook`` hook of the worker: a module import counts as progress (not as a report)."""
    if event == "import":
        PROGRESS.imports += 1
        PROGRESS.beats += 1


def describe(progress: dict[str, Any] | None) -> str:
    """``"step 4096, 12 updates, 30 episodes, 3 progress reports"`` from :meth:`Progress.as_dict` (or "none");
    the counts are the worker's since it started."""
    if not progress or not progress.get("beats"):
        return "none"
    parts = [f"step {progress.get('step', 0)}"] if progress.get("step") else []
    labels = (
        ("updates", "updates"),
        ("episodes", "episodes"),
        ("reports", "progress reports"),
        ("imports", "imports"),
    )
    for key, label in labels:
        if progress.get(key):
            parts.append(f"{progress[key]} {label}")
    return ", ".join(parts) or f"{progress['beats']} beats"
