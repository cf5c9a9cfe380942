"""Subject fingerprints: one identifier that changes whenever anything the subject reads changes.

The fingerprint keys the artifact cache (:mod:`rlaudit.engine.store`), so a stale artifact is reused exactly when a
fingerprint misses a change. It hashes:

- the spec, the interpreter path, the cwd and the extra environment;
- the subject's code: the git commit, ``git diff HEAD`` and every untracked, not ignored code file when the
  subject lives in a git checkout; else every ``.py/.yaml/.yml/.json/.toml`` file under its directory, with
  no cap on their number or depth;
- for a subject built from a requirements file: that file's content and ``system_site_packages``;
- the rlaudit code that shapes its artifacts: ``demo/`` and ``recorder.py`` for the built-ins; the SB3
  adapter, ``safeload.py``, ``recorder.py`` and the installed stable-baselines3 version for ``sb3:``;
- every file the subject's worker opened while loading the subject, resolving its ``config()`` and building
  its environment (``make_env``), even when git ignores it (a ``local.yaml`` beside a config loader): see
  *Files the subject read* below.

The cache and the report being written (``--out``, passed on as :data:`EXCLUDE_VARIABLE`) are never part of a
fingerprint: a report must not change the fingerprint of the subject it is writing about.

**Incremental hashing.** A file's SHA-256 is kept in a small index in the cache (``<cache>/.fingerprints/``),
keyed by path, size and modification time (ns), so a large tree is re-read only where it changed. A file
modified within :data:`RACY_SECONDS` of being hashed is not indexed (a second write in the same clock tick
would keep size and mtime), the way git treats "racily clean" entries.

**Files the subject read.** Which files a subject reads is known only once a worker has loaded it, but the
fingerprint is needed before (a fully cached notebook starts no worker). So the worker reports the files it
opened (:mod:`rlaudit.engine.worker`: an audit hook on ``open``; ``make_env``'s with the first probe that calls it),
and :meth:`rlaudit.engine.store.ArtifactStore.record_reads` keeps their digests with the fingerprint they were read under
(``<cache>/<fingerprint>/subject.json``). Computing a fingerprint starts from the *base* fingerprint (all the
above but the read files) and checks the files recorded for it: when they all still hash the same, the base
fingerprint stands; when one changed, the fingerprint is the base plus the current digests of the recorded
files (a *variant*, remembered in ``<cache>/<base>/variants.json`` so that going back to the earlier content
finds the earlier results again).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from rlaudit.engine import paths
from rlaudit.engine.git import run_git
from rlaudit.engine.subjects import SubjectSpec

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
MAX_HASH_BYTES = 16 * 2**20  # files bigger than this are fingerprinted by size and mtime
GIT_TIMEOUT = 30.0  # seconds per git command
RACY_SECONDS = 2.0  # a file modified this recently is hashed again next time instead of indexed
EXCLUDE_VARIABLE = "RLAUDIT_FINGERPRINT_EXCLUDE"
"""Environment variable: paths (``os.pathsep``-separated) never part of a fingerprint; ``rlaudit report`` sets
it to its ``--out`` for the notebooks it runs."""
MAX_READS = 5000  # bound on the files a worker reports as read (a subject reading more is not sane to track)


# =========================================================================================================
# The fingerprint


def subject_fingerprint(
    spec: SubjectSpec, *, details: Mapping[str, Any] | None = None, cache_root: str | Path | None = None
) -> str:
    """A directory-safe identifier that changes whenever the subject's code, spec, interpreter, env or the
    files it reads change.

    Args:
        spec: The subject.
        details: What :func:`fingerprint_details` returned for ``spec``, when the caller has it already.
        cache_root: The artifact cache whose records of read files count (default: :func:`paths.cache_dir`).

    Returns:
        ``"<slug>-<16 hex digits>"``, e.g. ``"builtin-reference-3f9a0c1d2e4b5a67"``; the slug is only for
        people browsing the cache.
    """
    base = base_fingerprint(spec, details=details)
    root = Path(cache_root) if cache_root is not None else _cache_root()
    return base if root is None else _resolve_reads(Path(root), base)


def base_fingerprint(spec: SubjectSpec, *, details: Mapping[str, Any] | None = None) -> str:
    """The fingerprint of everything but the files the subject was seen to read (see the module docstring)."""
    details = fingerprint_details(spec) if details is None else details
    digest = hashlib.sha256(json.dumps(details, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return f"{_slug(spec)}-{digest}"


def fingerprint_details(spec: SubjectSpec) -> dict[str, Any]:
    """Everything :func:`base_fingerprint` hashes, as a JSON-able dict (saved in ``subject.json``)."""
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


# =========================================================================================================
# Files the subject read


def read_digests(files: Iterable[str]) -> dict[str, str]:
    """``{path: digest}`` of files a worker reported as read, less the cache and the report being written.

    A file that does not exist gets a digest too (``unreadable:FileNotFoundError``): a config loader that
    looked for an optional file and found none must see it when it appears.
    """
    excluded = _excluded_roots()
    kept = sorted({os.path.abspath(f) for f in files if isinstance(f, str) and f})
    return {f: _file_digest(Path(f)) for f in kept[:MAX_READS] if not _under(f, excluded)}


def recorded_reads(cache_root: str | Path, fingerprint: str) -> dict[str, str] | None:
    """The read files recorded under ``fingerprint`` (``{path: digest}``), or None when none were."""
    info = _json_file(Path(cache_root) / fingerprint / "subject.json")
    reads = info.get("reads") if isinstance(info, dict) else None
    return {str(k): str(v) for k, v in reads.items()} if isinstance(reads, dict) else None


def merge_reads(recorded: Mapping[str, str] | None, files: Iterable[str]) -> dict[str, str] | None:
    """The reads to record for a fingerprint: ``recorded`` plus digests of the newly reported ``files``.

    Returns:
        The merged ``{path: digest}``, or None when nothing new was reported (nothing to write). Files
        already recorded keep their recorded digest: it is the content the fingerprint was chosen for.
    """
    current = dict(recorded or {})
    fresh = [f for f in files if isinstance(f, str) and os.path.abspath(f) not in current]
    if recorded is not None and not fresh:
        return None
    current.update({k: v for k, v in read_digests(fresh).items() if k not in current})
    return dict(sorted(current.items()))


def _resolve_reads(cache_root: Path, base: str) -> str:
    """``base`` when the files recorded for it are unchanged; else the variant for their current content."""
    recorded = recorded_reads(cache_root, base)
    if not recorded:
        return base
    variants = _json_file(cache_root / base / "variants.json")
    candidates = [base] + [v for v in (variants if isinstance(variants, list) else []) if isinstance(v, str)]
    union: dict[str, str] = {}
    states: list[tuple[str, dict[str, str] | None]] = []
    for fingerprint in candidates:
        reads = recorded if fingerprint == base else recorded_reads(cache_root, fingerprint)
        states.append((fingerprint, reads))
        union.update(dict.fromkeys(reads or {}, ""))
    now = read_digests(union)
    for fingerprint, reads in states:
        if reads is not None and all(now.get(path, digest) == digest for path, digest in reads.items()):
            return fingerprint
    payload = json.dumps({"base": base, "reads": now}, sort_keys=True).encode("utf-8")
    variant = f"{base.rsplit('-', 1)[0]}-{hashlib.sha256(payload).hexdigest()[:16]}"
    if variant not in candidates:
        # Lost to a concurrent writer at worst: the variant is then derived again, identically, next time.
        try:
            from rlaudit.engine.io import atomic_write_text

            atomic_write_text(cache_root / base / "variants.json", json.dumps([*candidates[1:], variant]))
        except OSError:
            pass
    return variant


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# =========================================================================================================
# Code, per scheme


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
    location = module_location(
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
def module_location(interpreter: str, cwd: str, top: str, extra_pythonpath: str) -> str | None:
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
    excluded = _excluded_roots(root)
    # The report being written and the cache, when they sit inside the checkout, are not its code.
    pathspec = ["--", "."] + [
        f":(exclude,top){Path(p).relative_to(root).as_posix()}"
        for p in excluded
        if _under(p, (str(root),)) and p != str(root)
    ]
    if head:
        commit: str | None = head.strip()
        diff = _git(root, "diff", "HEAD", *diff_args, *pathspec, binary=True)
        staged = b""
    else:
        # A repository without commits: the index plus the worktree's changes against it.
        commit = None
        staged = _git(root, "ls-files", "-s", "-z", binary=True) or b""
        diff = _git(root, "diff", *diff_args, *pathspec, binary=True)
    if diff is None:
        return None
    listing = _git(root, "ls-files", "--others", "--exclude-standard", "-z", binary=True) or b""
    untracked = [
        root / name
        for name in sorted(listing.decode("utf-8", "surrogateescape").split("\0"))
        if name and _is_code_path(Path(name))
    ]
    untracked = [p for p in untracked if not _under(str(p), excluded)]
    index = _DigestIndex.open(root)
    digest = hashlib.sha256()
    for path in untracked:
        digest.update(str(path.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
        digest.update(_file_digest(path, index).encode() + b"\0")
    index.save()
    return {
        "git": str(root),
        "commit": commit,
        "diff": hashlib.sha256(staged + b"\0" + diff).hexdigest(),
        "untracked": digest.hexdigest(),
        "n_untracked": len(untracked),
        # Kept (always False now: nothing is cut off) so that fingerprints made before stay valid.
        "truncated": False,
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


def _excluded_roots(inside: Path | None = None) -> tuple[str, ...]:
    """Resolved paths never part of a fingerprint: the cache, and the report being written.

    Args:
        inside: The tree being hashed; a root that contains it is left out (a subject materialized in the
            cache, such as a hybrid of two revisions, is hashed like any other).
    """
    if inside is not None:
        return tuple(r for r in _excluded_roots() if not _under(str(inside), (r,)))
    found = []
    cache = _cache_root()
    if cache is not None:
        found.append(str(cache))
    for raw in os.environ.get(EXCLUDE_VARIABLE, "").split(os.pathsep):
        if raw.strip():
            try:
                found.append(str(Path(raw.strip()).expanduser().resolve()))
            except OSError:
                continue
    return tuple(found)


def _under(path: str, roots: Iterable[str]) -> bool:
    """True when ``path`` is one of ``roots`` or inside one (plain string test: both sides resolved)."""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _walk_hash(directory: Path) -> dict[str, Any]:
    """Hash every code file under ``directory`` (deterministic order, no cap on count or depth).

    Symbolic links to directories are not followed (a link loop cannot trap the walk); virtualenvs, hidden
    directories, :data:`SKIP_DIRS`, the cache and the report being written are skipped.
    """
    digest = hashlib.sha256()
    count = 0
    directory = directory.resolve() if directory.exists() else directory
    excluded = _excluded_roots(directory)
    excluded_files = set(excluded)  # excluded directories are pruned below; a file (audit --json) is not
    index = _DigestIndex.open(directory)
    top = str(directory)
    # Plain strings, not Path objects: this loop runs once per file of trees of 100k files.
    for current, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in SKIP_DIRS
            and not os.path.exists(os.path.join(current, d, "pyvenv.cfg"))  # a virtualenv by another name
            and not (d == "cache" and os.path.basename(current) == "data")
            and not _under(os.path.join(current, d), excluded)
        )
        relative = current[len(top) + 1 :] if current != top else ""
        for name in sorted(filenames):
            if not name.endswith(CODE_SUFFIXES):
                continue
            path = os.path.join(current, name)
            if path in excluded_files:
                continue
            digest.update(
                (os.path.join(relative, name) if relative else name).encode("utf-8", "surrogateescape")
            )
            digest.update(b"\0" + _file_digest(path, index).encode() + b"\0")
            count += 1
    index.save()
    # "truncated" stays (always False: nothing is cut off) so that fingerprints made before stay valid.
    return {"root": str(directory), "hash": digest.hexdigest(), "n_files": count, "truncated": False}


# =========================================================================================================
# File digests, incremental


def _file_digest(path: str | Path, index: _DigestIndex | None = None) -> str:
    """SHA-256 of a file (size and mtime above :data:`MAX_HASH_BYTES`); ``unreadable:<error>`` when it
    cannot be read. With ``index``, an unchanged file (same size and mtime) is not read again."""
    try:
        stat = os.stat(path)
        if stat.st_size > MAX_HASH_BYTES:
            return f"size={stat.st_size},mtime={stat.st_mtime_ns}"
        if index is not None:
            known = index.get(path, stat)
            if known is not None:
                return known
        found = _content_digest(path)
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"
    if index is not None:
        index.put(path, stat, found)
    return found


def _content_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (the one place a fingerprint reads a file's content)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class _DigestIndex:
    """Digests of the files under one root, keyed by (path, size, mtime_ns), kept in the cache.

    ``<cache>/.fingerprints/<hash of the root>.json``. Best effort: an unreadable or unwritable index only
    means the files are read again. Two processes saving at once: the last one wins, which loses entries,
    never correctness (an entry is valid for as long as its size and mtime match).
    """

    def __init__(self, root: Path, file: Path | None, entries: dict[str, list[Any]]) -> None:
        self.root = str(root)
        self.file = file
        self.entries = entries
        self.dirty = False
        self.seen: set[str] = set()
        self.now_ns = time.time_ns()

    @classmethod
    def open(cls, root: Path) -> _DigestIndex:
        cache = _cache_root()
        if cache is None:
            return cls(root, None, {})
        name = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        file = cache / ".fingerprints" / f"{name}.json"
        data = _json_file(file)
        entries = data.get("entries") if isinstance(data, dict) and data.get("root") == str(root) else None
        return cls(root, file, entries if isinstance(entries, dict) else {})

    def _name(self, path: str | Path) -> str:
        text = os.fspath(path)
        return text[len(self.root) + 1 :] if text.startswith(self.root + os.sep) else text

    def get(self, path: str | Path, stat: os.stat_result) -> str | None:
        name = self._name(path)
        self.seen.add(name)
        entry = self.entries.get(name)
        if isinstance(entry, list) and len(entry) == 3 and entry[:2] == [stat.st_size, stat.st_mtime_ns]:
            return str(entry[2])
        return None

    def put(self, path: str | Path, stat: os.stat_result, digest: str) -> None:
        if self.now_ns - stat.st_mtime_ns < RACY_SECONDS * 1e9:
            return  # racily clean: a write in the same clock tick would go unseen
        self.entries[self._name(path)] = [stat.st_size, stat.st_mtime_ns, digest]
        self.dirty = True

    def save(self) -> None:
        # Entries of files no longer there (or no longer code) are dropped: the index tracks the tree.
        stale = len(self.entries) > len(self.seen)
        if not (self.dirty or stale) or self.file is None:
            return
        try:
            from rlaudit.engine.io import atomic_write_text

            kept = {name: self.entries[name] for name in sorted(self.seen) if name in self.entries}
            payload = {"root": self.root, "entries": kept}
            atomic_write_text(self.file, json.dumps(payload, separators=(",", ":")))
            self.dirty = False
        except OSError:
            pass
