"""Attribution counts a run that crashed or diverged as a failure of its arm, said as such, never as a value
that is just missing."""

from __future__ import annotations

import math

from rlaudit.engine.store import ProbeResult
from rlaudit.engine.worker import ProbeError
from support.attribution import REGRESSED_LIKE, SimSearch, fixes


class CrashingRestore(SimSearch):
    """The simulated search, where restoring ``gae`` makes seed 0's run raise."""

    def measure(self, calls):
        out = super().measure(calls)
        for i, (arm, seed) in enumerate(calls):
            if arm.name == "gae" and seed == 0:
                error = ProbeError(
                    "exception",
                    "rlaudit.trainer.probes:train_run raised FloatingPointError: overflow",
                    'Traceback (most recent call last):\n  File "/x/subject.py", line 9, in train\n',
                )
                failed = ProbeResult(arm.name, "x", "train_run", {"seed": seed}, ok=False, error=error)
                out[i] = (failed, {m: math.nan for m in out[i][1]})
        return out


def test_a_restore_whose_run_crashes_is_reported_as_failing_with_the_error() -> None:
    search = CrashingRestore(
        fixes(REGRESSED_LIKE[:3]), heart={"gae": 0.6, "rebuild": 0.4}, sps={"shaped": 1.0}, max_seeds=3
    )
    result = search.run()
    arm = next(a for a in result.arms if a.name == "gae")
    assert arm.outcomes[0].outcome == "raised"
    assert arm.failures() == ["seed 0 raised FloatingPointError in train (subject.py:9): overflow"]
    rows = [r for r in result.ranking["heart.get"] if r["arm"] == "gae"]
    assert rows and rows[0]["verdict"] == "fails", rows
    assert rows[0]["failed"] == arm.failures()
    assert any(n.startswith("gae fails on 1 of") and "FloatingPointError" in n for n in result.notes)
    saved = next(a for a in result.to_dict()["arms"] if a["name"] == "gae")
    assert saved["outcomes"][0] == "raised" and any("FloatingPointError" in e for e in saved["errors"])
