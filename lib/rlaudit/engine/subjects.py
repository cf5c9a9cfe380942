"""Subject specs: which training setup to audit, with which interpreter, directory and environment.

A spec string names one subject (see ``docs/ARCHITECTURE.md`` section 1)::

    builtin:reference                      built-in subjects (rlaudit.demo.subject.load)
    builtin:reference+<fault>,<fault>      ... with faults turned on
    path/to/subject.py  or  path/to/dir    a user's subject module (a directory means its subject.py)
    package.module  or  package.module:attr
    git:<repo>@<ref>[:<subject.py>]        a subject at a git revision (needs its adapter)
    sb3:<file.yaml>                        a Stable-Baselines3 setup (needs its adapter)

:func:`parse_spec` turns a string into a :class:`SubjectSpec`; :func:`load_pair_file` reads a YAML file that
declares both subjects with their interpreters. :func:`load_subject` runs inside the worker process and turns
a spec into the subject object through the :data:`ADAPTERS` registry.

This module is imported inside subjects' own interpreters, so it uses only the standard library at import
time (PyYAML is imported when a pair file is read).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CAPABILITIES: tuple[str, ...] = (
    "config",
    "make_env",
    "make_policy",
    "make_optimizer",
    "compute_advantages",
    "compute_lambda_returns",
    "compute_loss",
    "make_curriculum",
    "train",
    "checkpoints",
    "load_checkpoint",
    "log_dir",
    "config_keys",
    "metrics",
    "total_steps",
    "target_networks",
    "compute_td_targets",
    "compute_td_loss",
)
"""Everything a subject may expose; a probe's ``requires`` names a subset (ARCHITECTURE.md section 1)."""

# Schemes written as ``<scheme>:<rest>``. ``file`` and ``module`` specs have no prefix; they are recognised
# by their shape. The prefixed schemes are parsed here even when no adapter can load them yet.
PREFIX_SCHEMES: tuple[str, ...] = ("builtin", "git", "sb3")

_MODULE_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*)?$")
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", re.DOTALL)
_BUILTIN_RE = re.compile(r"^[A-Za-z0-9_.+,-]+$")
_PAIR_SIDES = ("baseline", "candidate")
_PAIR_KEYS = ("spec", "python", "requirements", "system_site_packages", "cwd", "env", "label")

_FORMS_HELP = (
    "expected one of: builtin:<name> (e.g. builtin:reference, builtin:reference+<fault>), "
    "a path to a subject.py, package.module[:attr], git:<repo>@<ref>[:<subject.py>], sb3:<file.yaml>"
)


@dataclass(frozen=True)
class SubjectSpec:
    """One subject: what to load, and the process it runs in.

    Attributes:
        text: The canonical spec string (paths made absolute), e.g. ``"builtin:reference"`` or
            ``"/home/me/proj/subject.py"``. Part of the subject's fingerprint.
        scheme: ``"builtin"``, ``"file"``, ``"module"``, ``"git"`` or ``"sb3"`` (or a registered adapter).
        target: What the scheme loads: the builtin name (``"reference+lr_schedule"``), the absolute path
            of the subject file or of the sb3 YAML, the module name, or the git repository.
        attr: For ``package.module:attr``, the attribute (dotted) that is the subject; else ``""``.
        ref: For ``git:``, the revision; else ``""``.
        path: For ``git:``, the subject file inside the repository (``"subject.py"`` by default).
        python: Interpreter that runs the subject's worker; ``""`` means the notebook's own interpreter.
            With ``requirements``, the interpreter the subject's virtual environment is built from.
        requirements: Absolute path of a pip requirements file, or ``""``. When set, the worker runs in a
            virtual environment built from it (once, cached: :func:`rlaudit.adapters.venv.interpreter_for`).
            The file need not exist when the spec is parsed: a missing file is reported as that subject's
            error when its worker starts, so the other side still runs.
        system_site_packages: With ``requirements``, let the environment see the base interpreter's
            packages (saves installing torch again); ignored without ``requirements``.
        cwd: Working directory of the worker; ``""`` means the notebook's current directory.
        env: Extra environment variables for the worker, name -> value.
        label: How reports name the subject (default: the spec string as the user wrote it).
    """

    text: str
    scheme: str
    target: str
    attr: str = ""
    ref: str = ""
    path: str = ""
    python: str = ""
    requirements: str = ""
    system_site_packages: bool = False
    cwd: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    label: str = ""

    def __hash__(self) -> int:
        # env is a dict (unhashable); hash its sorted items so specs can key dicts and sets.
        return hash(
            (
                self.text,
                self.scheme,
                self.target,
                self.attr,
                self.ref,
                self.path,
                self.python,
                self.requirements,
                self.system_site_packages,
                self.cwd,
                tuple(sorted(self.env.items())),
                self.label,
            )
        )

    def __str__(self) -> str:
        return self.text

    @property
    def display(self) -> str:
        """The label, or the spec string when there is none."""
        return self.label or self.text

    @property
    def interpreter(self) -> str:
        """The subject's base interpreter: ``python``, or the notebook's own when that is empty.

        Without ``requirements`` the worker runs under it; with ``requirements`` the worker runs under the
        virtual environment built from it (:func:`rlaudit.adapters.venv.interpreter_for`, which builds it).
        """
        return self.python or sys.executable

    def replace(self, **changes: Any) -> SubjectSpec:
        """A copy with some fields changed (e.g. ``spec.replace(env={...}, label="fix")``)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (sent to the worker, written beside the cache)."""
        data = dataclasses.asdict(self)
        data["env"] = dict(self.env)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SubjectSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["env"] = dict(values.get("env") or {})
        return cls(**values)


def parse_spec(
    text: str | SubjectSpec,
    *,
    python: str | None = None,
    cwd: str | None = None,
    env: Mapping[str, Any] | None = None,
    label: str | None = None,
    base_dir: str | Path | None = None,
    requirements: str | None = None,
    system_site_packages: bool | None = None,
) -> SubjectSpec:
    """Parse a spec string into a :class:`SubjectSpec`, checking every path it names.

    Args:
        text: The spec string (see the module docstring). A :class:`SubjectSpec` is returned unchanged
            (with any given overrides applied).
        python: Interpreter for the subject's worker: a path (relative to ``base_dir``) or a command name
            found on ``PATH``. Default: the notebook's own interpreter.
        cwd: Working directory of the worker (relative to ``base_dir``). Default: the subject file's
            directory for path specs, ``base_dir`` for module specs, the notebook's cwd otherwise.
        env: Extra environment variables for the worker; values are converted to strings.
        label: Name used in reports; default the spec string as written.
        requirements: A pip requirements file (relative to ``base_dir``) to build the subject's virtual
            environment from, based on ``python`` (see :attr:`SubjectSpec.requirements`). Its existence is
            checked when the worker starts, not here.
        system_site_packages: Whether that environment sees the base interpreter's packages (default False).
        base_dir: Directory that relative paths are resolved against (default:
            :func:`rlaudit.engine.paths.user_dir`, where the user ran the command; :func:`load_pair_file` passes
            the YAML file's directory).

    Returns:
        The parsed spec.

    Raises:
        ValueError: The string has none of the known forms, or names a scheme nobody registered.
        FileNotFoundError: A path it names (subject file, YAML, interpreter, cwd) does not exist.
    """
    from rlaudit.engine.paths import user_dir

    base = Path(base_dir).expanduser() if base_dir else user_dir()
    base = base.absolute()
    if isinstance(text, SubjectSpec):
        spec = text
        overrides: dict[str, Any] = {}
        if python is not None:
            overrides["python"] = _resolve_python(python, base, spec.display)
        if cwd is not None:
            overrides["cwd"] = _resolve_dir(cwd, base, spec.display)
        if env is not None:
            overrides["env"] = _clean_env(env, spec.display)
        if label is not None:
            overrides["label"] = label
        if requirements is not None:
            overrides["requirements"] = _resolve_requirements(requirements, base, spec.display)
        if system_site_packages is not None:
            overrides["system_site_packages"] = _check_flag(
                system_site_packages, "system_site_packages", spec.display
            )
        return _check_venv_fields(spec.replace(**overrides) if overrides else spec)

    if not isinstance(text, str):
        raise TypeError(f"a subject spec must be a string or SubjectSpec, got {type(text).__name__}")
    raw = text.strip()
    if not raw:
        raise ValueError(f"empty subject spec; {_FORMS_HELP}")

    fields = _parse_form(raw, base)
    default_cwd = fields.pop("default_cwd", "")
    fields["python"] = _resolve_python(python, base, raw) if python else ""
    fields["cwd"] = _resolve_dir(cwd, base, raw) if cwd else default_cwd
    fields["env"] = _clean_env(env or {}, raw)
    fields["label"] = label if label is not None else raw
    fields["requirements"] = (
        _resolve_requirements(requirements, base, raw) if requirements is not None else ""
    )
    fields["system_site_packages"] = (
        _check_flag(system_site_packages, "system_site_packages", raw)
        if system_site_packages is not None
        else False
    )
    return _check_venv_fields(SubjectSpec(**fields))


def _parse_form(raw: str, base: Path) -> dict[str, Any]:
    """Recognise which form ``raw`` has; return SubjectSpec fields plus ``default_cwd``."""
    match = _SCHEME_RE.match(raw)
    scheme = match.group(1).lower() if match else ""
    rest = match.group(2).strip() if match else ""
    prefixed = set(PREFIX_SCHEMES) | (set(ADAPTERS) - {"file", "module"})

    if scheme in prefixed:
        if scheme == "builtin":
            if not rest or not _BUILTIN_RE.match(rest):
                raise ValueError(
                    f"malformed built-in spec {raw!r}; expected builtin:<name>[+<fault>,...] or "
                    "builtin:<name>-<fault>[,...], e.g. builtin:reference or builtin:reference+lr_schedule "
                    "(`rlaudit faults` lists the fault names)"
                )
            return {"text": f"builtin:{rest}", "scheme": "builtin", "target": rest}
        if scheme == "git":
            return _parse_git(raw, rest, base)
        if scheme == "sb3":
            if not rest:
                raise ValueError(f"malformed spec {raw!r}; expected sb3:<file.yaml> naming an SB3 setup file")
            yaml_path = _existing_file(rest, base, what="SB3 setup file", spec=raw)
            return {
                "text": f"sb3:{yaml_path}",
                "scheme": "sb3",
                "target": str(yaml_path),
                "default_cwd": str(yaml_path.parent),
            }
        # A scheme registered at runtime through register_adapter: its rest is passed through as is.
        if not rest:
            raise ValueError(f"malformed spec {raw!r}; expected {scheme}:<target>")
        return {"text": f"{scheme}:{rest}", "scheme": scheme, "target": rest}

    if scheme and not Path(raw).expanduser().exists():
        # `name:rest` that is neither a known scheme nor an existing file: module:attr or a typo'd scheme.
        if _MODULE_RE.match(raw):
            module, _, attr = raw.partition(":")
            return {"text": raw, "scheme": "module", "target": module, "attr": attr, "default_cwd": str(base)}
        known = ", ".join(sorted(prefixed))
        raise ValueError(
            f"unknown subject scheme {scheme!r} in {raw!r}; known schemes: {known} (plus paths to "
            "subject.py and package.module[:attr])"
        )

    if _looks_like_path(raw):
        path = Path(raw).expanduser()
        path = path if path.is_absolute() else base / path
        if path.is_dir():
            if not (path / "subject.py").is_file():
                raise FileNotFoundError(
                    f"subject directory {path} has no subject.py; pass the path of your subject module "
                    "(create one with `rlaudit new-subject DIR`)"
                )
            path = path / "subject.py"
        elif not path.is_file():
            raise FileNotFoundError(
                f"subject file {raw!r} not found (looked for {path}); expected the path of a Python module "
                "defining the subject's capabilities (create one with `rlaudit new-subject DIR`)"
            )
        path = Path(os.path.abspath(path))
        if path.suffix != ".py":
            raise ValueError(f"subject file {path} is not a .py file; {_FORMS_HELP}")
        return {"text": str(path), "scheme": "file", "target": str(path), "default_cwd": str(path.parent)}

    if _MODULE_RE.match(raw):
        if raw.lower() in PREFIX_SCHEMES:
            raise ValueError(f"incomplete spec {raw!r}; expected {raw}:<...>. {_FORMS_HELP}")
        module, _, attr = raw.partition(":")
        return {"text": raw, "scheme": "module", "target": module, "attr": attr, "default_cwd": str(base)}

    raise ValueError(f"malformed subject spec {raw!r}; {_FORMS_HELP}")


def _parse_git(raw: str, rest: str, base: Path) -> dict[str, Any]:
    # The repository may itself contain '@' and ':' (git@host:org/repo.git), so the ref is after the last
    # '@'; git refs cannot contain ':', so a ':' after the ref starts the subject path.
    repo, at, tail = rest.rpartition("@")
    ref, _, sub = tail.partition(":")
    if not at or not repo or not ref:
        raise ValueError(
            f"malformed git spec {raw!r}; expected git:<repo>@<ref>[:<subject.py>], e.g. "
            "git:../myproject@v1.2:tools/subject.py or git:https://github.com/me/proj.git@abc123"
        )
    local = Path(repo).expanduser()
    local = local if local.is_absolute() else base / local
    if local.exists():
        repo = str(Path(os.path.abspath(local)))
    sub = sub or "subject.py"
    return {"text": f"git:{repo}@{ref}:{sub}", "scheme": "git", "target": repo, "ref": ref, "path": sub}


def _looks_like_path(raw: str) -> bool:
    return (
        raw.endswith(".py")
        or raw.startswith((".", "/", "~"))
        or os.sep in raw
        or (os.altsep is not None and os.altsep in raw)
    )


def _existing_file(rel: str, base: Path, *, what: str, spec: str) -> Path:
    path = Path(rel).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise FileNotFoundError(f"{what} {rel!r} of spec {spec!r} not found (looked for {path})")
    return Path(os.path.abspath(path))


def _resolve_python(python: str, base: Path, spec: str) -> str:
    """An interpreter path or command name -> absolute path (symlinks kept: a venv's python is one)."""
    given = os.path.expanduser(str(python))
    if os.sep not in given and not given.startswith("."):
        found = shutil.which(given)
        if found is None:
            raise FileNotFoundError(
                f"interpreter {python!r} for subject {spec!r} is not on PATH; give the path of a python "
                "executable instead, e.g. ../old/.venv/bin/python"
            )
        return os.path.abspath(found)
    path = Path(given)
    path = path if path.is_absolute() else base / path
    if not path.is_file() or not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"interpreter {python!r} for subject {spec!r} not found or not executable (looked for {path}); "
            "expected the path of a python executable such as ../old/.venv/bin/python"
        )
    return os.path.abspath(path)


def _resolve_requirements(requirements: str, base: Path, spec: str) -> str:
    """A requirements file path -> absolute (not checked: a missing file is the subject's own error)."""
    if not isinstance(requirements, str | os.PathLike) or not str(requirements).strip():
        raise ValueError(
            f"requirements of subject {spec!r} must be the path of a pip requirements file, got {requirements!r}"
        )
    path = Path(str(requirements).strip()).expanduser()
    path = path if path.is_absolute() else base / path
    return os.path.abspath(path)


def _check_venv_fields(spec: SubjectSpec) -> SubjectSpec:
    if spec.system_site_packages and not spec.requirements:
        raise ValueError(
            f"subject {spec.display!r} sets system_site_packages but no requirements file; "
            "system_site_packages only applies to the virtual environment built from requirements: "
            "add requirements: <file> or drop system_site_packages"
        )
    return spec


def _check_flag(value: Any, name: str, spec: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(
            f"{name} of subject {spec!r} must be true or false, got {value!r} ({type(value).__name__})"
        )
    return value


def _resolve_dir(directory: str, base: Path, spec: str) -> str:
    path = Path(directory).expanduser()
    path = path if path.is_absolute() else base / path
    if not path.is_dir():
        raise FileNotFoundError(
            f"working directory {directory!r} for subject {spec!r} does not exist (looked for {path})"
        )
    return os.path.abspath(path)


def _clean_env(env: Mapping[str, Any], spec: str) -> dict[str, str]:
    if not isinstance(env, Mapping):
        raise ValueError(f"env of subject {spec!r} must be a mapping NAME: value, got {type(env).__name__}")
    clean: dict[str, str] = {}
    for name, value in env.items():
        if isinstance(value, bool):
            # YAML reads unquoted on/off/yes/no/true/false as booleans; the variable's text is lost.
            raise ValueError(
                f"env variable {name!r} of subject {spec!r} is a boolean ({value}); environment values are "
                f'text, so quote it (e.g. {name}: "1" or {name}: "on")'
            )
        if isinstance(value, Mapping | list | tuple) or value is None:
            raise ValueError(
                f"env variable {name!r} of subject {spec!r} must be a string or number, got {value!r}"
            )
        clean[str(name)] = str(value)
    return clean


def load_pair_file(path: str | Path) -> tuple[SubjectSpec, SubjectSpec]:
    """Read a YAML file declaring the baseline and candidate subjects.

    Format (relative paths resolve against the YAML file's directory)::

        baseline:  {spec: ../old/subject.py, python: ../old/.venv/bin/python, env: {OMP_NUM_THREADS: "1"}}
        candidate: {spec: ./subject.py, requirements: requirements.txt, system_site_packages: true}

    Each side is a mapping with ``spec`` (required) and optional ``python``, ``requirements``,
    ``system_site_packages``, ``cwd``, ``env``, ``label``, or just the spec string. ``requirements`` names a
    pip requirements file: the worker then runs in a virtual environment built from it (based on ``python``
    when given), built once and cached under ``<cache>/venvs``; ``system_site_packages: true`` lets that
    environment see the base interpreter's packages.

    Returns:
        ``(baseline, candidate)``.

    Raises:
        FileNotFoundError: The file, or a path it names, does not exist.
        ValueError: Not valid YAML, a side is missing, or a key is unknown.
    """
    from rlaudit.adapters.configs import read_yaml_mapping
    from rlaudit.engine.paths import user_dir

    path = Path(path).expanduser()
    path = path if path.is_absolute() else user_dir() / path
    example = "baseline: {spec: ../old/subject.py}\ncandidate: {spec: ./subject.py}"
    data = read_yaml_mapping(path, "pair file", f"with baseline: and candidate:, e.g.\n{example}")
    unknown = sorted(set(map(str, data)) - set(_PAIR_SIDES))
    if unknown:
        raise ValueError(
            f"pair file {path} has unknown top-level key(s) {', '.join(unknown)}; expected only "
            f"{' and '.join(_PAIR_SIDES)}"
        )
    base = path.resolve().parent
    specs = []
    for side in _PAIR_SIDES:
        if side not in data:
            raise ValueError(
                f"pair file {path} does not declare {side}:; expected both sides, e.g.\n{example}"
            )
        entry = data[side]
        if isinstance(entry, str):
            entry = {"spec": entry}
        if not isinstance(entry, dict) or "spec" not in entry:
            raise ValueError(
                f"{side} in pair file {path} must be a spec string or a mapping with spec: (and optionally "
                f"{', '.join(_PAIR_KEYS[1:])}), got {entry!r}"
            )
        bad = sorted(set(map(str, entry)) - set(_PAIR_KEYS))
        if bad:
            raise ValueError(
                f"{side} in pair file {path} has unknown key(s) {', '.join(bad)}; expected "
                f"{', '.join(_PAIR_KEYS)}"
            )
        specs.append(
            parse_spec(
                str(entry["spec"]),
                python=None if entry.get("python") is None else str(entry["python"]),
                cwd=None if entry.get("cwd") is None else str(entry["cwd"]),
                env=entry.get("env") or {},
                label=None if entry.get("label") is None else str(entry["label"]),
                base_dir=base,
                requirements=None if entry.get("requirements") is None else str(entry["requirements"]),
                system_site_packages=entry.get("system_site_packages"),
            )
        )
    return specs[0], specs[1]


def capabilities(subject: object) -> set[str]:
    """The capabilities ``subject`` exposes: names from :data:`CAPABILITIES` bound to callables."""
    return {name for name in CAPABILITIES if callable(getattr(subject, name, None))}


# ---------------------------------------------------------------------------------------------------------
# Loading (inside the worker process)

Loader = Callable[[SubjectSpec], object]


def lazy_loader(target: str) -> Loader:
    """A loader that imports ``"package.module:function"`` on first use (keeps registration import-free).

    The loader counts as available (:func:`loader_for`) only once its module exists, so an adapter can be
    registered here before its module is written.
    """

    def load(spec: SubjectSpec) -> object:
        module_name, _, func_name = target.partition(":")
        func = getattr(importlib.import_module(module_name), func_name)
        return func(spec)

    load.__qualname__ = f"lazy_loader({target!r})"
    load.target = target  # type: ignore[attr-defined]
    return load


def _available(loader: Loader) -> bool:
    target = getattr(loader, "target", None)
    if target is None:
        return True
    try:
        return importlib.util.find_spec(target.partition(":")[0]) is not None
    except (ImportError, ValueError):
        return False


def _load_builtin(spec: SubjectSpec) -> object:
    from rlaudit.demo.subject import load

    return load(spec.target)


def _load_file(spec: SubjectSpec) -> object:
    path = Path(spec.target)
    if not path.is_file():
        raise FileNotFoundError(
            f"subject file {path} does not exist (any more); check the spec {spec.display!r}"
        )
    # Run the file the way `python subject.py` would see its neighbours: its directory first on sys.path.
    # The module is registered under its own stem so that pickling its classes (multiprocessing, torch.save)
    # works in child processes too.
    directory = str(path.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = path.stem
    existing = sys.modules.get(name)
    if existing is not None and os.path.abspath(getattr(existing, "__file__", "") or "") != str(path):
        name = f"rlaudit_subject_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot import subject file {path} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _load_module(spec: SubjectSpec) -> object:
    # `python -m` already puts the worker's cwd first on sys.path; make sure of it for other launchers.
    cwd = spec.cwd or os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    obj: object = importlib.import_module(spec.target)
    for part in filter(None, spec.attr.split(".")):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise AttributeError(
                f"module {spec.target!r} has no attribute {spec.attr!r} (spec {spec.display!r}); expected "
                "package.module:attr to name the subject object"
            ) from None
    return obj


ADAPTERS: dict[str, Loader] = {
    "builtin": _load_builtin,
    "file": _load_file,
    "module": _load_module,
    "git": lazy_loader("rlaudit.adapters.git:load"),
    "sb3": lazy_loader("rlaudit.adapters.sb3:load"),
}
"""Scheme -> loader returning the subject object. Adapters plug in here, by name (:func:`lazy_loader`), in
this module so that the notebook and every worker see the same registry. A lazy loader whose module does
not exist yet counts as unregistered."""


def register_adapter(scheme: str, loader: Loader) -> None:
    """Register (or replace) the loader for ``scheme``; specs ``<scheme>:<rest>`` then parse and load.

    Registration must happen in both processes (notebook and worker) to take effect in the worker, which is
    why built-in adapters are listed in :data:`ADAPTERS` itself.
    """
    ADAPTERS[scheme.lower()] = loader


def loader_for(spec: SubjectSpec) -> Loader:
    """The registered loader for ``spec.scheme``.

    Raises:
        ValueError: No adapter is registered for the scheme, listing the schemes that can be loaded.
    """
    loader = ADAPTERS.get(spec.scheme)
    if loader is not None and _available(loader):
        return loader
    known = ", ".join(sorted(name for name, entry in ADAPTERS.items() if _available(entry)))
    raise ValueError(
        f"no adapter is registered for scheme {spec.scheme!r} (spec {spec.display!r}); schemes that can "
        f"be loaded: {known}. Point the spec at a subject.py instead (`rlaudit new-subject DIR` writes "
        "one), or register a loader in rlaudit.engine.subjects.ADAPTERS"
    )


def load_subject(spec: SubjectSpec) -> object:
    """Import/build the subject object for ``spec`` (runs inside the subject's worker process)."""
    return loader_for(spec)(spec)


# ---------------------------------------------------------------------------------------------------------
# `rlaudit new-subject DIR` (cli.py dispatches here; the template itself lives with the adapters)
