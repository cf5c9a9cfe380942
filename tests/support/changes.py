"""Helpers for the change-search tests: the tinyrl example histories, and a simulated trainer for them.

``history(tmp)`` / ``pair(tmp)`` build the examples of ``data/examples/tinyrl/make_history.py`` in a temporary
directory. :class:`Oracle` stands in for training runs: it knows which hunks a subject holds (from the arm:
a commit's checkout holds the hunks of the commits up to it, a hybrid those of its base plus or minus its
own) and turns them into metric values with paired seed noise, so the search's logic is tested in
milliseconds, on the real change sets and real hybrids.
"""

from __future__ import annotations

import importlib.util
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlaudit.engine.paths import home

EXAMPLE = home() / "data" / "examples" / "tinyrl"


def make_history() -> Any:
    """The example builder module (``data/examples/tinyrl/make_history.py``)."""
    spec = importlib.util.spec_from_file_location("tinyrl_make_history", EXAMPLE / "make_history.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def history(tmp: Path, edits: list[tuple[str, list[tuple[str, str, str]]]] | None = None) -> dict[str, Any]:
    """The example repository (``make_history.build``) under ``tmp/repo``."""
    return make_history().build(tmp / "repo", edits)


def pair(tmp: Path) -> dict[str, str]:
    """The two-hunks-together example (``make_history.build_pair``) under ``tmp/pair``."""
    return make_history().build_pair(tmp / "pair")


def find(hunks: Iterable[Any], text: str) -> Any:
    """The one hunk whose changed lines contain ``text``."""
    found = [h for h in hunks if any(text in line for line in h.lines if line[:1] in "+-")]
    assert len(found) == 1, f"{len(found)} hunks change a line with {text!r}"
    return found[0]


@dataclass
class Failed:
    """A failed run, as the workbench reports one."""

    error: str
    ok: bool = False
    cached: bool = False
    missing: tuple[str, ...] = ()
    side: str = "arm"
    probe: str = "rlaudit.trainer.probes:train_run"
    params: dict = field(default_factory=lambda: {"seed": 0})


@dataclass
class Oracle:
    """A simulated trainer over a change set.

    Args:
        cs: The change set.
        harm: Hunk id -> metric -> the share of that metric's gap the hunk causes when present (they add up,
            capped at the whole gap). For ``"sps"`` the share is of the CPU time per step.
        together: Groups of hunk ids that cause ``share`` only when all are present (``{metric: share}``).
        breaks: Groups of hunk ids that must all be present or all absent, or the run fails (a rename and its
            callers).
        requires: Hunk id -> hunk ids it needs present (a call of a method another hunk defines).
        broken_commits: Commits whose checkout fails to run.
        noise: Metric -> standard deviation of a run's value (half shared by seed, as paired runs share it).
        ends: Metric -> (baseline, candidate) means.
    """

    cs: Any
    harm: dict[str, dict[str, float]]
    together: list[tuple[frozenset[str], dict[str, float]]] = field(default_factory=list)
    breaks: list[frozenset[str]] = field(default_factory=list)
    requires: dict[str, set[str]] = field(default_factory=dict)
    broken_commits: set[str] = field(default_factory=set)
    noise: dict[str, float] = field(default_factory=lambda: {"return": 0.02, "sps": 800.0})
    ends: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {"return": (0.83, 0.18), "sps": (60_000.0, 35_000.0)}
    )
    calls: int = 0
    seen: list[str] = field(default_factory=list)

    def present(self, arm: Any) -> set[str]:
        """The hunks the arm's subject holds."""
        commits = self.cs.commits
        everything = [h.id for c in commits for h in c.hunks] if commits else [h.id for h in self.cs.diff]
        if arm.name == "baseline":
            return set()
        if arm.name == "candidate":
            return set(everything)
        base = getattr(arm, "base", "candidate")
        if base == "candidate":
            held = set(everything)
        elif base == "baseline":
            held = set()
        else:
            k = [c.sha for c in commits].index(base)
            held = {h.id for c in commits[: k + 1] for h in c.hunks}
        kind = getattr(arm, "kind", "revert")
        if kind == "revert":
            held -= set(arm.hunks)
        elif kind == "apply":
            held |= set(arm.hunks)
        return held

    def share(self, held: set[str], metric: str) -> float:
        total = sum(per.get(metric, 0.0) for h, per in self.harm.items() if h in held)
        total += sum(per.get(metric, 0.0) for group, per in self.together if group <= held)
        return min(1.0, total)

    def __call__(self, calls: Sequence[tuple[Any, int]]) -> list[tuple[Any, dict[str, float]]]:
        out: list[tuple[Any, dict[str, float]]] = []
        for arm, seed in calls:
            self.calls += 1
            self.seen.append(arm.name)
            held = self.present(arm)
            broken = [g for g in self.breaks if 0 < len(g & held) < len(g)]
            broken += [h for h, needs in self.requires.items() if h in held and not needs <= held]
            if getattr(arm, "kind", "") == "commit" and arm.base in self.broken_commits:
                broken.append(arm.base)
            if broken:
                out.append(
                    (Failed("ImportError: cannot import name 'discounted' from 'tinyrl.returns'"), _nan())
                )
                continue
            rng = np.random.default_rng([seed, zlib.crc32(arm.name.encode())])
            shared = np.random.default_rng([seed, 7]).normal(size=2)
            row = {}
            for i, metric in enumerate(("return", "sps")):
                b, c = self.ends[metric]
                share = self.share(held, metric)
                if metric == "sps":  # costs add: the share is of the time per step
                    value = 1.0 / (1.0 / b + (1.0 / c - 1.0 / b) * share)
                else:
                    value = b + (c - b) * share
                row[metric] = value + self.noise[metric] * (0.5 * shared[i] + rng.normal())
            out.append((None, row))
        return out


def _nan() -> dict[str, float]:
    return {"return": float("nan"), "sps": float("nan")}


def oracle_for_history(cs: Any, **kwargs: Any) -> Oracle:
    """The oracle of the example history: the walker-major batch hunk costs the whole learning gap, the
    per-walker observation hunk the whole throughput gap; the rename's three hunks only run together, and
    ``reset`` calling ``observe`` needs the hunk that defines it."""
    commits = {c.subject: c for c in cs.commits}
    culprit = commits["Tidy the rollout and the returns helper"]
    slow = commits["Observations from a per-walker helper"]
    harmful = find(culprit.hunks, "np.stack(b_obs, axis=1)")
    rename = frozenset(
        h.id
        for h in culprit.hunks
        if re.search(r"\bdiscounted(_returns)?\(|import discounted", "".join(h.lines))
    )
    observe = find(slow.hunks, "def observe(self)")
    reset = find(slow.hunks, "return self.observe()\n")
    harm = {harmful.id: {"return": 1.0}, observe.id: {"sps": 1.0}}
    return Oracle(cs, harm, breaks=[rename], requires={reset.id: {observe.id}}, **kwargs)
