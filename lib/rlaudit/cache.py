"""The artifact cache: probe outputs keyed by subject fingerprint, probe, version and parameters.

Layout (ARCHITECTURE.md section 3)::

    <cache>/<fingerprint>/subject.json                       spec, what the fingerprint covers, capabilities
    <cache>/<fingerprint>/logs/worker-*.log                  workers' stderr
    <cache>/<fingerprint>/<probe>/v<version>-<params-hash>/  the probe's files + result.json (written last)

A subject's fingerprint hashes its spec, its code (git commit + ``git diff HEAD`` + untracked files when the
subject lives in a git checkout, else the hashes of its ``.py/.yaml/.yml/.json/.toml`` files), the interpreter
path, the requirements file's content and ``system_site_packages`` (when the subject runs in a virtual
environment built from requirements) and the extra environment, so a stale artifact is never reused. The
rlaudit code that shapes a subject's artifacts counts too: the ``demo/`` package and ``recorder.py`` for the
built-ins; the SB3 adapter, ``safeload.py``, ``recorder.py`` and the installed stable-baselines3 version for
``sb3:`` subjects. An artifact directory is committed by
one atomic rename and counts only when its ``result.json`` exists, so a writer killed halfway leaves nothing
that is ever read. Two processes asking for the same key take a file lock: one computes, the other waits and
reads the result. Failed probes are never cached.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlaudit import paths
from rlaudit.findings import jsonable
from rlaudit.gitcli import run_git
from rlaudit.io import atomic_dir, atomic_write_json, read_table
from rlaudit.subjects import SubjectSpec
from rlaudit.worker import ProbeError

FINGERPRINT_SCHEMA = 1
CODE_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".toml")
# Directories whose contents are environments, caches or run outputs, not the subject's code: hashing them
# would make every training run change the fingerprint (or walk a whole virtualenv).
SKIP_DIRS = frozenset(
    {
        "__pycache__",
        "node_modules",
        "site-packages",
        "wandb",
        "mlruns",
        "lightning_logs",
        "outputs",
        "multirun",
    }
)
MAX_FILES = 5000  # bound on files hashed per subject (the walk stops, and says so in subject.json)
MAX_DEPTH = 8  # bound on directory depth of the walk
MAX_HASH_BYTES = 16 * 2**20  # files bigger than this are fingerprinted by size and mtime
GIT_TIMEOUT = 30.0  # seconds per git command


# =========================================================================================================
# Fingerprints


def subject_fingerprint(spec: SubjectSpec) -> str:
    """A directory-safe identifier that changes whenever the subject's code, spec, interpreter or env does.

    Returns:
        ``"<slug>-<16 hex digits>"``, e.g. ``"builtin-reference-3f9a0c1d2e4b5a67"``; the slug is only for
        people browsing the cache.
    """
    details = fingerprint_details(spec)
    digest = hashlib.sha256(json.dumps(details, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return f"{_slug(spec)}-{digest}"


def fingerprint_details(spec: SubjectSpec) -> dict[str, Any]:
    """Everything :func:`subject_fingerprint` hashes, as a JSON-able dict (saved in ``subject.json``)."""
    hasher = CODE_HASHERS.get(spec.scheme, _hash_unknown_scheme)
    details = {
        "schema": FINGERPRINT_SCHEMA,
        "spec": spec.text,
        "scheme": spec.scheme,
        "python": spec.interpreter,
        "cwd": spec.cwd,
        "env": dict(sorted(spec.env.items())),
        "code": hasher(spec),
    }
    requirements = spec.requirements
    if requirements:
        # Only for subjects with a requirements file, so the fingerprints of all others stay as they were.
        # The venv's path is not known before it is built; what it is built from is: the base interpreter
        # (``python`` above), the file's content and whether it sees the base's packages.
        details["venv"] = {
            "requirements_sha256": _file_digest(Path(requirements)),
            "system_site_packages": spec.system_site_packages,
        }
    return details


def _slug(spec: SubjectSpec) -> str:
    if spec.scheme == "file":
        path = Path(spec.target)
        text = f"{path.parent.name}-{path.stem}"
    elif spec.scheme == "builtin":
        text = f"builtin-{spec.target}"
    else:
        text = spec.text
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-.")
    return (slug[:48].rstrip("-.") or "subject").lower()


def _hash_builtin(spec: SubjectSpec) -> dict[str, Any]:
    # The spec (which names the faults) is hashed beside this; the code is the demo package, and the recorder,
    # which writes every built-in run's tables.
    return {
        "demo": _walk_hash(paths.PACKAGE_DIR / "demo"),
        "recorder": _file_digest(paths.PACKAGE_DIR / "recorder.py"),
    }


def _hash_file(spec: SubjectSpec) -> dict[str, Any]:
    return _hash_location(Path(spec.target).parent)


def _hash_module(spec: SubjectSpec) -> dict[str, Any]:
    location = _module_location(
        spec.interpreter, spec.cwd or os.getcwd(), spec.target.split(".")[0], spec.env.get("PYTHONPATH", "")
    )
    if location is None:
        # The worker will fail to import it and say so; the spec alone keys the (empty) cache.
        return {"module": spec.target, "location": None}
    path = Path(location)
    if path.is_dir():
        return {"module": spec.target, **_hash_location(path)}
    git = _git_hash(path.parent)
    return {"module": spec.target, **(git if git is not None else {"file": _file_digest(path)})}


def _hash_sb3(spec: SubjectSpec) -> dict[str, Any]:
    # The setup's directory (the YAML and the artifacts it names), plus what turns it into a subject: the
    # adapter and the config reader it uses, the safe loader its checkpoints go through, the recorder its runs
    # write through, and the stable-baselines3 release whose code paths (defaults, losses, buffers) the
    # subject is.
    adapter = sorted(
        p.relative_to(paths.PACKAGE_DIR).as_posix() for p in (paths.PACKAGE_DIR / "adapters/sb3").glob("*.py")
    )
    return {
        **_hash_location(Path(spec.target).parent),
        "rlaudit": {
            name: _file_digest(paths.PACKAGE_DIR / name)
            for name in (*adapter, "adapters/configs.py", "safeload.py", "recorder.py")
        },
        "stable_baselines3": _installed_version(spec.interpreter, "stable-baselines3"),
    }


def _installed_version(interpreter: str, distribution: str) -> str | None:
    """The version of ``distribution`` installed for ``interpreter`` (None when it is not installed).

    The notebook's own interpreter answers from its metadata; another one (a subject's venv) is asked.
    Paths are compared unresolved: two venvs share a resolved binary but not their packages.
    """
    if os.path.abspath(interpreter) == os.path.abspath(sys.executable):
        from importlib import metadata

        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return None
    return _other_interpreter_version(interpreter, distribution)


@functools.lru_cache(maxsize=64)
def _other_interpreter_version(interpreter: str, distribution: str) -> str | None:
    script = (
        "import sys\nfrom importlib import metadata\n"
        "try:\n    print(metadata.version(sys.argv[1]))\nexcept metadata.PackageNotFoundError:\n    print('')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    try:
        done = subprocess.run(
            [interpreter, "-c", script, distribution], env=env, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = done.stdout.strip()
    return found if done.returncode == 0 and found else None


def _hash_git(spec: SubjectSpec) -> dict[str, Any]:
    # The ref is resolved to a commit now, so a moved branch changes the fingerprint. The git adapter does
    # that (and raises a clear error for a bad ref); without it, a local repository is asked directly and a
    # remote URL contributes only its ref string.
    try:
        from rlaudit.adapters.git import git_fingerprint
    except ImportError:
        git_fingerprint = None
    if git_fingerprint is not None:
        return {"repo": spec.target, "ref": spec.ref, "commit": git_fingerprint(spec), "path": spec.path}
    commit = None
    if Path(spec.target).is_dir():
        commit = _git(Path(spec.target), "rev-parse", "--verify", "--quiet", f"{spec.ref}^{{commit}}")
    return {
        "repo": spec.target,
        "ref": spec.ref,
        "commit": commit.strip() if commit else None,
        "path": spec.path,
    }


def _hash_unknown_scheme(spec: SubjectSpec) -> dict[str, Any]:
    return {"target": spec.target}


CODE_HASHERS: dict[str, Callable[[SubjectSpec], dict[str, Any]]] = {
    "builtin": _hash_builtin,
    "file": _hash_file,
    "module": _hash_module,
    "sb3": _hash_sb3,
    "git": _hash_git,
}
"""Scheme -> function describing the subject's code as a JSON-able dict (hashed into the fingerprint).
An adapter that knows better (e.g. resolving a remote git ref) replaces its entry."""


def _hash_location(directory: Path) -> dict[str, Any]:
    git = _git_hash(directory)
    return git if git is not None else {"files": _walk_hash(directory)}


@functools.lru_cache(maxsize=64)
def _module_location(interpreter: str, cwd: str, top: str, extra_pythonpath: str) -> str | None:
    """Where the top-level package ``top`` lives for the subject, without importing it.

    Looks in the subject's cwd first (that is where ``python -m`` finds it), then asks the subject's own
    interpreter (``importlib.util.find_spec`` of a top-level name imports nothing).
    """
    base = Path(cwd)
    if (base / top).is_dir():
        return str((base / top).resolve())
    if (base / f"{top}.py").is_file():
        return str((base / f"{top}.py").resolve())
    script = (
        "import importlib.util, sys\n"
        "s = importlib.util.find_spec(sys.argv[1])\n"
        "loc = list(s.submodule_search_locations or []) if s else []\n"
        "print(loc[0] if loc else (s.origin if s and s.origin else ''))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(paths.LIB_DIR), extra_pythonpath) if p)
    try:
        done = subprocess.run(
            [interpreter, "-c", script, top], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = done.stdout.strip()
    return found if done.returncode == 0 and found and found not in ("built-in", "frozen") else None


def _git(directory: Path, *args: str, binary: bool = False) -> Any:
    """Run git in ``directory``; its stdout (str, or bytes with ``binary``), or None when git fails."""
    try:
        done = run_git(directory, *args, timeout=GIT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout if binary else done.stdout.decode("utf-8", "replace")


def _git_hash(directory: Path) -> dict[str, Any] | None:
    """Code identity of the git checkout containing ``directory``, or None when it is not in one."""
    if not directory.is_dir():
        return None
    top = _git(directory, "rev-parse", "--show-toplevel")
    if not top:
        return None
    root = Path(top.strip())
    head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    diff_args = ("--binary", "--no-ext-diff", "--no-textconv", "--no-color", "--full-index")
    if head:
        commit: str | None = head.strip()
        diff = _git(root, "diff", "HEAD", *diff_args, binary=True)
        staged = b""
    else:
        # A repository without commits: the index plus the worktree's changes against it.
        commit = None
        staged = _git(root, "ls-files", "-s", "-z", binary=True) or b""
        diff = _git(root, "diff", *diff_args, binary=True)
    if diff is None:
        return None
    listing = _git(root, "ls-files", "--others", "--exclude-standard", "-z", binary=True) or b""
    untracked = [
        root / name
        for name in sorted(listing.decode("utf-8", "surrogateescape").split("\0"))
        if name and _is_code_path(Path(name))
    ]
    cache_root = _cache_root()
    untracked = [p for p in untracked if not _is_within(p, cache_root)]
    digest = hashlib.sha256()
    for path in untracked[:MAX_FILES]:
        digest.update(str(path.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
        digest.update(_file_digest(path).encode() + b"\0")
    return {
        "git": str(root),
        "commit": commit,
        "diff": hashlib.sha256(staged + b"\0" + diff).hexdigest(),
        "untracked": digest.hexdigest(),
        "n_untracked": len(untracked),
        "truncated": len(untracked) > MAX_FILES,
    }


def _is_code_path(relative: Path) -> bool:
    if relative.suffix not in CODE_SUFFIXES:
        return False
    for part in relative.parts[:-1]:
        if part.startswith(".") or part in SKIP_DIRS:
            return False
    return "data/cache" not in relative.as_posix()


def _cache_root() -> Path | None:
    try:
        return paths.cache_dir().resolve()
    except OSError:
        return None


def _is_within(path: Path, root: Path | None) -> bool:
    if root is None:
        return False
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def _walk_hash(directory: Path) -> dict[str, Any]:
    """Hash the code files under ``directory`` (bounded in depth and count; deterministic order)."""
    digest = hashlib.sha256()
    count = 0
    truncated = False
    cache_root = _cache_root()
    directory = directory.resolve() if directory.exists() else directory
    for current, dirnames, filenames in os.walk(directory):
        here = Path(current)
        depth = len(here.relative_to(directory).parts)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in SKIP_DIRS
            and not (here / d / "pyvenv.cfg").exists()  # a virtualenv by another name
            and not (d == "cache" and here.name == "data")
            and not _is_within(here / d, cache_root)
            and depth < MAX_DEPTH
        )
        for name in sorted(filenames):
            if not name.endswith(CODE_SUFFIXES):
                continue
            if count >= MAX_FILES:
                truncated = True
                break
            path = here / name
            digest.update(str(path.relative_to(directory)).encode("utf-8", "surrogateescape") + b"\0")
            digest.update(_file_digest(path).encode() + b"\0")
            count += 1
        if truncated:
            break
    return {"root": str(directory), "hash": digest.hexdigest(), "n_files": count, "truncated": truncated}


def _file_digest(path: Path) -> str:
    try:
        stat = path.stat()
        if stat.st_size > MAX_HASH_BYTES:
            return f"size={stat.st_size},mtime={stat.st_mtime_ns}"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"


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
            present = sorted(p.name for p in directory.iterdir())
            raise FileNotFoundError(
                f"probe {self.probe} on {self.side} wrote no {name!r}; it wrote: {', '.join(present)}"
            )
        return target

    def json(self, name: str) -> Any:
        """The JSON artifact ``name`` (``.json`` optional), parsed."""
        return json.loads(self.path(name if name.endswith(".json") else f"{name}.json").read_text())

    def table(self, name: str) -> Any:
        """The table artifact ``name`` (parquet or npz) as a pandas DataFrame."""
        return read_table(self._need_dir() / name)

    def npz(self, name: str) -> dict[str, Any]:
        """The arrays of the npz artifact ``name`` (``.npz`` optional), loaded into memory."""
        import numpy as np

        with np.load(self.path(name if name.endswith(".npz") else f"{name}.npz"), allow_pickle=False) as data:
            return {key: data[key] for key in data.files}


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
        root: The cache directory (default :func:`rlaudit.paths.cache_dir`, i.e. ``RLAUDIT_CACHE`` or
            ``data/cache``). Nothing is created until something is written.
    """

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser().absolute() if root is not None else paths.cache_dir()

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
        """The result stored at ``key`` (see :meth:`get`)."""
        marker = key / "result.json"
        try:
            envelope = json.loads(marker.read_text())
            created = float(envelope.get("created") or marker.stat().st_mtime)
        except (OSError, ValueError, AttributeError):
            return None  # absent, or not a result file: never a hit
        if not isinstance(envelope, dict) or "result" not in envelope:
            return None
        if newer_than is not None and created < newer_than:
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
        result = self.read(key, side=side, spec=spec, fingerprint=fingerprint)
        if result is None:
            raise RuntimeError(f"artifact {key} vanished right after it was committed")
        result.cached = False
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
        current = self.subject_info(fingerprint) or {}
        data = {
            "fingerprint": fingerprint,
            "spec": spec.to_dict(),
            "details": dict(details) if details is not None else current.get("details"),
            "capabilities": sorted(capabilities) if capabilities is not None else current.get("capabilities"),
            "load": dict(load_info) if load_info is not None else current.get("load"),
        }
        return atomic_write_json(self.root / fingerprint / "subject.json", data)
