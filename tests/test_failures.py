"""Failed probe calls are remembered until the subject changes, a limit is raised, or a retry is asked for."""

from __future__ import annotations

import time
from pathlib import Path

from rlaudit.engine import failures
from rlaudit.engine.worker import ProbeError

LIMITS = {"stall": 300.0, "cpu": 900.0, "memory_mb": None}


def record(tmp_path: Path, fingerprint: str = "fp1") -> Path:
    return failures.record_path(
        tmp_path, fingerprint, "rlaudit.trainer.probes:train_run", 3, {"steps": 8, "seed": 0}
    )


def test_a_failure_is_recalled_with_its_message_and_how_to_retry(tmp_path: Path) -> None:
    path = record(tmp_path)
    assert failures.recall(path, LIMITS) is None  # nothing remembered yet
    failures.remember(path, ProbeError("crash", "died with SIGSEGV", "tb", "tail"), LIMITS)
    again = failures.recall(path, LIMITS)
    assert again is not None and again.kind == "crash"
    assert again.message.startswith("remembered failure, not run again")
    assert (
        "died with SIGSEGV" in again.message
        and "--retry-failed" in again.message
        and "--fresh" in again.message
    )
    assert again.traceback == "tb" and again.stderr_tail == "tail"


def test_the_record_is_per_subject_fingerprint_and_parameters(tmp_path: Path) -> None:
    failures.remember(record(tmp_path), ProbeError("exception", "boom"), LIMITS)
    assert failures.recall(record(tmp_path, "fp2"), LIMITS) is None  # an edited subject: a new fingerprint
    other = failures.record_path(
        tmp_path, "fp1", "rlaudit.trainer.probes:train_run", 3, {"steps": 8, "seed": 1}
    )
    assert failures.recall(other, LIMITS) is None


def test_a_retry_or_fresh_start_ignores_older_records(tmp_path: Path) -> None:
    path = record(tmp_path)
    failures.remember(path, ProbeError("exception", "boom"), LIMITS)
    assert failures.recall(path, LIMITS, since=time.time() + 1) is None
    assert failures.recall(path, LIMITS, since=time.time() - 60) is not None
    failures.forget(path)  # a later success
    assert failures.recall(path, LIMITS) is None


def test_a_timeout_stands_only_until_a_limit_is_raised(tmp_path: Path) -> None:
    path = record(tmp_path)
    failures.remember(path, ProbeError("timeout", "made no progress for 300 s"), LIMITS)
    assert failures.recall(path, LIMITS) is not None
    assert failures.recall(path, {**LIMITS, "stall": 200.0, "cpu": 100.0}) is not None  # lower: still fails
    assert failures.recall(path, {**LIMITS, "stall": 600.0}) is None
    assert failures.recall(path, {**LIMITS, "cpu": None}) is None  # no CPU limit at all


def test_an_oom_stands_only_under_the_same_memory_cap(tmp_path: Path) -> None:
    path = record(tmp_path)
    capped = {**LIMITS, "memory_mb": 2048}
    failures.remember(path, ProbeError("oom", "MemoryError"), capped)
    assert failures.recall(path, capped) is not None
    assert failures.recall(path, {**LIMITS, "memory_mb": 4096}) is None


def test_import_and_protocol_errors_are_not_remembered(tmp_path: Path) -> None:
    path = record(tmp_path)
    for kind in ("import", "protocol"):
        failures.remember(path, ProbeError(kind, "x"), LIMITS)
        assert not path.exists()
