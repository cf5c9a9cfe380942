"""The artifact cache: probe outputs keyed by subject fingerprint, probe, version and parameters.

Layout (ARCHITECTURE.md section 3)::

    <cache>/<fingerprint>/subject.json                       spec, what the fingerprint covers, capabilities,
                                                             the files the subject was seen to read
    <cache>/<fingerprint>/logs/worker-*.log                  workers' stderr
    <cache>/<fingerprint>/<probe>/v<version>-<params-hash>/  the probe's files + result.json (written last)
                                                             + checksums.json (what the store committed)
    <cache>/.fingerprints/                                   file digests by size and mtime (fingerprint.py)

A subject's fingerprint (:mod:`rlaudit.engine.fingerprint`, re-exported here) changes whenever anything the subject
reads changes, so a stale artifact is never reused. An artifact directory is committed by one atomic rename
and counts only when its ``result.json`` exists, so a writer killed halfway leaves nothing that is ever read.
Every file of the directory is covered by a SHA-256 in its ``checksums.json``, written with it: a file that
no longer matches (truncated, edited, unreadable) makes the entry invalid, so it is recomputed once and the
result says so, naming the file (:attr:`ProbeResult.notes`). Two processes asking for the same key take a
file lock: one computes, the other waits and reads the result. Failed probes are never cached.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlaudit.engine import paths
from rlaudit.engine.fingerprint import (  # re-exported: callers import them from here
    CODE_HASHERS,
    FINGERPRINT_SCHEMA,
    base_fingerprint,
    fingerprint_details,
    subject_fingerprint,
)
from rlaudit.engine.io import (
    ArtifactReadError,
    atomic_dir,
    atomic_write_json,
    read_json,
    read_npz,
    read_table,
)
from rlaudit.engine.subjects import SubjectSpec
from rlaudit.engine.worker import ProbeError
from rlaudit.findings import jsonable

__all__ = [
    "CHECKSUMS",
    "CODE_HASHERS",
    "FINGERPRINT_SCHEMA",
    "ArtifactReadError",
    "ArtifactStore",
    "ProbeResult",
    "base_fingerprint",
    "canonical_params",
    "fingerprint_details",
    "params_hash",
    "probe_dirname",
    "subject_fingerprint",
]

CHECKSUMS = "checksums.json"
"""The file of an artifact directory that holds the SHA-256 of every other file in it."""

# =========================================================================================================
# Results


@dataclass
class ProbeResult:
    """One probe on one subject: its artifacts, or why there are none.

    Attributes:
        side: ``"baseline"``, ``"candidate"``, or the label of an extra arm.
        spec: The subject's spec string.
        probe: The probe's name, ``"module:function"``.
        params: The probe's parameters (defaults filled in).
        ok: True when the probe produced artifacts.
        error: Why it failed, when it did (never cached: the probe re-runs next time).
        missing: Capabilities the subject lacks; the probe was not run.
        result: The probe's returned summary (a dict), when ok.
        dir: The artifact directory, when ok.
        seconds: Run time of the probe in its worker (from the cache: the original run time), s.
        cached: True when the artifacts came from the cache.
        version: The probe's version.
        fingerprint: The subject's fingerprint.
        notes: What the report should say about how this result was obtained, e.g. that its cache entry
            was invalid (naming the file) and was recomputed.
    """

    side: str
    spec: str
    probe: str
    params: dict[str, Any]
    ok: bool
    error: ProbeError | None = None
    missing: list[str] = field(default_factory=list)
    result: Any = None
    dir: Path | None = None
    seconds: float = 0.0
    cached: bool = False
    version: int = 0
    fingerprint: str = ""
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        if self.ok:
            state = f"ok, {'cached' if self.cached else f'{self.seconds:.1f}s'}, dir={self.dir}"
        elif self.missing:
            state = f"missing {self.missing}"
        else:
            state = f"error {self.error!r}"
        return f"ProbeResult({self.side}: {self.probe}({_short_params(self.params)}) {state})"

    def _need_dir(self) -> Path:
        if self.ok and self.dir is not None:
            return self.dir
        if self.missing:
            raise FileNotFoundError(
                f"probe {self.probe} was not run on {self.side} ({self.spec}): the subject lacks "
                f"{', '.join(self.missing)}; check pair.guard(...) before reading artifacts"
            )
        if self.error is not None:
            raise self.error
        raise FileNotFoundError(f"probe {self.probe} on {self.side} has no artifacts")

    def path(self, name: str) -> Path:
        """Path of the artifact ``name`` (e.g. ``"policy.pt"``).

        Raises:
            FileNotFoundError: No such artifact, listing the ones there are; or the probe did not run.
            ProbeError: The probe failed (the error itself).
        """
        directory = self._need_dir()
        target = directory / name
        if not target.exists():
            present = sorted(p.name for p in directory.iterdir() if p.name != CHECKSUMS)
            raise FileNotFoundError(
                f"probe {self.probe} on {self.side} wrote no {name!r}; it wrote: {', '.join(present)}"
            )
        return target

    def json(self, name: str) -> Any:
        """The JSON artifact ``name`` (``.json`` optional), parsed.

        Raises:
            ArtifactReadError: The file is there but not valid JSON, naming it.
        """
        return read_json(self.path(name if name.endswith(".json") else f"{name}.json"))

    def table(self, name: str) -> Any:
        """The table artifact ``name`` (parquet or npz) as a pandas DataFrame."""
        return read_table(self._need_dir() / name)

    def npz(self, name: str) -> dict[str, Any]:
        """The arrays of the npz artifact ``name`` (``.npz`` optional), loaded into memory.

        Raises:
            ArtifactReadError: The file is there but unreadable (e.g. truncated), naming it.
        """
        return read_npz(self.path(name if name.endswith(".npz") else f"{name}.npz"))


def _short_params(params: Mapping[str, Any]) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in params.items())
    return text if len(text) <= 80 else text[:77] + "..."


# =========================================================================================================
# The store


def canonical_params(params: Mapping[str, Any]) -> str:
    """Parameters as canonical JSON (sorted keys, numpy scalars and tuples made plain)."""
    return json.dumps(jsonable(dict(params)), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def params_hash(params: Mapping[str, Any]) -> str:
    """16 hex digits of the SHA-256 of :func:`canonical_params`."""
    return hashlib.sha256(canonical_params(params).encode("utf-8")).hexdigest()[:16]


def probe_dirname(probe: str) -> str:
    """``"rlaudit.agents.probes:module_tree"`` -> ``"rlaudit.agents.probes.module_tree"``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", ".", probe)


class ArtifactStore:
    """Probe artifacts on disk, keyed by subject fingerprint, probe, version and parameters.

    Args:
        root: The cache directory (default :func:`rlaudit.engine.paths.cache_dir`, i.e. ``RLAUDIT_CACHE`` or
            ``data/cache``). Nothing is created until something is written.
    """

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser().absolute() if root is not None else paths.cache_dir()
        # Entries found invalid by :meth:`read` -> why (naming the file), until :meth:`compute` replaces them.
        self.invalid: dict[Path, str] = {}

    def __repr__(self) -> str:
        return f"ArtifactStore({str(self.root)!r})"

    def key(self, fingerprint: str, probe: str, version: int, params: Mapping[str, Any]) -> Path:
        """The artifact directory for one probe call: ``<root>/<fp>/<probe>/v<version>-<params hash>``."""
        return self.root / fingerprint / probe_dirname(probe) / f"v{int(version)}-{params_hash(params)}"

    def get(
        self,
        fingerprint: str,
        probe: str,
        version: int,
        params: Mapping[str, Any],
        *,
        newer_than: float | None = None,
        side: str = "",
        spec: str = "",
    ) -> ProbeResult | None:
        """The cached result, or None. Only a directory whose ``result.json`` exists is a hit.

        Args:
            newer_than: When given (a ``time.time()`` value), artifacts created before it are ignored
                (how ``fresh`` works).
        """
        return self.read(
            self.key(fingerprint, probe, version, params),
            newer_than=newer_than,
            side=side,
            spec=spec,
            fingerprint=fingerprint,
        )

    def read(
        self,
        key: Path,
        *,
        newer_than: float | None = None,
        side: str = "",
        spec: str = "",
        fingerprint: str = "",
    ) -> ProbeResult | None:
        """The result stored at ``key`` (see :meth:`get`); None also when the entry is invalid (its files do not
        match their checksums, or ``result.json`` is unreadable): :attr:`invalid` then says why."""
        marker = key / "result.json"
        try:
            envelope = json.loads(marker.read_text())
            created = float(envelope.get("created") or marker.stat().st_mtime)
        except FileNotFoundError:
            return None  # absent: not computed (yet)
        except (OSError, ValueError, AttributeError) as exc:
            self.invalid[key] = f"{marker} is unreadable ({type(exc).__name__}: {exc})"
            return None
        if not isinstance(envelope, dict) or "result" not in envelope:
            self.invalid[key] = f"{marker} is not a result file (no 'result' key)"
            return None
        if newer_than is not None and created < newer_than:
            return None
        problem = verify_checksums(key)
        if problem is not None:
            self.invalid[key] = problem
            return None
        return ProbeResult(
            side=side,
            spec=spec or str(envelope.get("spec", "")),
            probe=str(envelope.get("probe", "")),
            params=dict(envelope.get("params") or {}),
            ok=True,
            result=envelope["result"],
            dir=key,
            seconds=float(envelope.get("seconds") or 0.0),
            cached=True,
            version=int(envelope.get("version") or 0),
            fingerprint=fingerprint,
        )

    @staticmethod
    def _lock_path(key: Path) -> Path:
        return key.parent / f".{key.name}.lock"

    def busy(self, key: Path) -> bool:
        """True when some process or thread holds ``key``'s lock (it is computing that artifact now).

        Tests the lock without waiting; a missing lock file means nobody has started on it. Only for ordering
        work: a lock taken right after this looked costs a wait, never a wrong result.
        """
        try:
            fd = os.open(self._lock_path(key), os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def lock(self, key: Path) -> Iterator[None]:
        """Hold an exclusive lock on ``key`` (``fcntl.flock`` on ``.<name>.lock`` beside it).

        Works across processes and across threads (each holder opens its own descriptor). The kernel drops
        the lock when its holder dies, so a killed writer never blocks the next one.
        """
        key.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path(key), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def compute(
        self,
        fingerprint: str,
        probe: str,
        version: int,
        params: Mapping[str, Any],
        produce: Callable[[Path], Any],
        *,
        fresh: bool = False,
        newer_than: float | None = None,
        side: str = "",
        spec: str = "",
    ) -> ProbeResult:
        """The cached result, or compute it once: ``produce(tmp_dir)`` must fill ``tmp_dir`` with the
        artifacts and ``result.json``; the directory is then committed atomically.

        Concurrent callers for the same key (threads or processes) wait for the one computing and read its
        result. If ``produce`` raises, nothing is cached and the exception propagates.

        Args:
            fresh: Ignore artifacts that existed before this call (recompute them).
            newer_than: Ignore artifacts created before this time (``fresh`` for a whole session).
        """
        since = time.time() if fresh else newer_than
        hit = self.get(fingerprint, probe, version, params, newer_than=since, side=side, spec=spec)
        if hit is not None:
            return hit
        key = self.key(fingerprint, probe, version, params)
        with self.lock(key):
            hit = self.read(key, newer_than=since, side=side, spec=spec, fingerprint=fingerprint)
            if hit is not None:
                return hit  # computed by someone else while we waited
            self._sweep(key)
            with atomic_dir(key) as tmp:
                produce(tmp)
                if not (tmp / "result.json").is_file():
                    raise RuntimeError(
                        f"probe {probe} produced no result.json in {tmp}; the artifact was not committed"
                    )
                write_checksums(tmp)
        problem = self.invalid.pop(key, None)
        result = self.read(key, side=side, spec=spec, fingerprint=fingerprint)
        if result is None:
            why = self.invalid.get(key)
            raise RuntimeError(
                f"artifact {key} was unreadable right after it was committed ({why})"
                if why
                else f"artifact {key} vanished right after it was committed"
            )
        result.cached = False
        if problem is not None:
            result.notes.append(f"The cached result of {probe} was invalid ({problem}); it was recomputed.")
        return result

    def _sweep(self, key: Path) -> None:
        """Under the key's lock: drop leftovers of dead writers and a stale or incomplete ``key``."""
        for leftover in key.parent.glob(f".{key.name}.*.tmp"):
            shutil.rmtree(leftover, ignore_errors=True)
        if key.exists():
            # Move aside first so the directory disappears in one step, then delete at leisure.
            trash = key.parent / f".{key.name}.{uuid.uuid4().hex[:8]}.stale.tmp"
            os.rename(key, trash)
            shutil.rmtree(trash, ignore_errors=True)

    def invalidate(self, fingerprint: str, probe: str, version: int, params: Mapping[str, Any]) -> bool:
        """Delete one artifact (under its lock); True when there was one."""
        key = self.key(fingerprint, probe, version, params)
        with self.lock(key):
            existed = key.exists()
            self._sweep(key)
        return existed

    # --- per-subject metadata ---------------------------------------------------------------------------

    def record_reads(self, fingerprint: str, files: Sequence[str]) -> bool:
        """Add the files a worker of ``fingerprint`` read to ``subject.json`` (see
        :mod:`rlaudit.engine.fingerprint`); True when something new was written."""
        from rlaudit.engine.fingerprint import merge_reads, recorded_reads

        with self.lock(self.root / fingerprint / "subject"):
            merged = merge_reads(recorded_reads(self.root, fingerprint), files)
            if merged is None:
                return False
            current = self.subject_info(fingerprint) or {"fingerprint": fingerprint}
            current["reads"] = merged
            atomic_write_json(self.root / fingerprint / "subject.json", current)
        return True

    def subject_dir(self, fingerprint: str) -> Path:
        return self.root / fingerprint

    def log_dir(self, fingerprint: str) -> Path:
        """Where the workers of this subject write their stderr logs."""
        return self.root / fingerprint / "logs"

    def subject_info(self, fingerprint: str) -> dict[str, Any] | None:
        """The contents of ``<fp>/subject.json``, or None."""
        try:
            data = json.loads((self.root / fingerprint / "subject.json").read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def capabilities(self, fingerprint: str) -> frozenset[str] | None:
        """The subject's capabilities as learned from a worker's ``load``, or None when never loaded."""
        info = self.subject_info(fingerprint)
        caps = info.get("capabilities") if info else None
        return frozenset(caps) if isinstance(caps, list) else None

    def save_subject(
        self,
        fingerprint: str,
        spec: SubjectSpec,
        capabilities: frozenset[str] | set[str] | None = None,
        load_info: Mapping[str, Any] | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> Path:
        """Write ``<fp>/subject.json``: the spec, what was hashed, and (once known) the capabilities."""
        with self.lock(self.root / fingerprint / "subject"):
            return self._save_subject(fingerprint, spec, capabilities, load_info, details)

    def _save_subject(
        self,
        fingerprint: str,
        spec: SubjectSpec,
        capabilities: frozenset[str] | set[str] | None,
        load_info: Mapping[str, Any] | None,
        details: Mapping[str, Any] | None,
    ) -> Path:
        current = self.subject_info(fingerprint) or {}
        data = {
            "fingerprint": fingerprint,
            "spec": spec.to_dict(),
            "details": dict(details) if details is not None else current.get("details"),
            "capabilities": sorted(capabilities) if capabilities is not None else current.get("capabilities"),
            "load": dict(load_info) if load_info is not None else current.get("load"),
        }
        if "reads" in current:
            data["reads"] = current["reads"]
        return atomic_write_json(self.root / fingerprint / "subject.json", data)


# =========================================================================================================
# Checksums

_VERIFIED_LOCK = threading.Lock()
_VERIFIED: dict[str, tuple[Any, ...]] = {}  # entry -> (size, mtime) of its files when last found intact


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_checksums(directory: Path) -> Path:
    """Write ``checksums.json`` into an artifact directory: size and SHA-256 of every file in it.

    Called by :meth:`ArtifactStore.compute` on the uncommitted directory, so the entry and its checksums are
    committed by the same rename.
    """
    files = {
        path.relative_to(directory).as_posix(): {"size": path.stat().st_size, "sha256": _sha256(path)}
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != CHECKSUMS
    }
    return atomic_write_json(directory / CHECKSUMS, {"algorithm": "sha256", "files": files})


def verify_checksums(directory: Path) -> str | None:
    """None when every file of the artifact directory matches ``checksums.json``; else what is wrong,
    naming the file (``"<dir>/table.parquet: 120 bytes, 3,481 expected"``).

    A directory without ``checksums.json`` (written before checksums existed) is taken as it is. Files found
    intact are not hashed again while their sizes and modification times stay the same (in this process).
    """
    manifest = directory / CHECKSUMS
    try:
        data = json.loads(manifest.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{manifest} is unreadable ({type(exc).__name__}: {exc})"
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return f"{manifest} lists no files"
    stats = []
    for name, expected in sorted(files.items()):
        path = directory / name
        try:
            stat = path.stat()
        except OSError as exc:
            return f"{path} is missing or unreadable ({type(exc).__name__})"
        size = expected.get("size") if isinstance(expected, dict) else None
        if stat.st_size != size:
            return (
                f"{path}: {stat.st_size:,} bytes, {size:,} expected (truncated or rewritten)"
                if isinstance(size, int)
                else f"{path}: no size in {CHECKSUMS}"
            )
        stats.append((name, stat.st_size, stat.st_mtime_ns))
    signature = (manifest.stat().st_mtime_ns, *stats)
    with _VERIFIED_LOCK:
        if _VERIFIED.get(str(directory)) == signature:
            return None
    for name, expected in sorted(files.items()):
        path = directory / name
        try:
            found = _sha256(path)
        except OSError as exc:
            return f"{path} is unreadable ({type(exc).__name__}: {exc})"
        if found != expected.get("sha256"):
            return f"{path} does not match its checksum (edited or corrupted)"
    with _VERIFIED_LOCK:
        _VERIFIED[str(directory)] = signature
    return None
