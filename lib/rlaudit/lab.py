"""``rlaudit lab`` / ``make lab``: JupyterLab on the user's pair, with no parameters cell to edit.

The command puts the pair (baseline, candidate or pair file, profile, metric, variants, change search) into
the ``RLAUDIT_LAB_PAIR`` environment variable of the Jupyter server, whose kernels inherit it. A notebook's
:class:`rlaudit.notebook.Session` reads it (:func:`resolve`) when the kernel serves a live frontend
(:func:`rlaudit.display.interactive`): every parameter the notebook still holds at its built-in default takes
the lab's value, and one the user edited in the cell keeps theirs. Papermill and nbval runs never read it (their
kernels are batch kernels), so their parameters always win. The session header says where each value came from.

The lab uses the same artifact cache and reports folder as ``rlaudit report``, so after ``make report`` on a
pair, ``make lab`` on the same pair loads every training run and probe from the cache.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from dataclasses import asdict, dataclass, fields
from typing import Any

ENV = "RLAUDIT_LAB_PAIR"

# The parameters cells' built-in values: a notebook parameter still at its default takes the lab's value.
DEFAULTS: dict[str, Any] = {
    "baseline": "builtin:reference",
    "candidate": "builtin:regressed",
    "pair_file": "",
    "profile": "standard",
    "metric": "",
    "variants": "",
    "changes": "auto",
    "fresh": False,
}


@dataclass(frozen=True)
class LabPair:
    """What ``rlaudit lab`` hands the notebooks.

    Attributes:
        baseline, candidate: Subject specs (relative paths resolve against ``RLAUDIT_WORKDIR``).
        pair_file: A pair YAML declaring both subjects, or "".
        profile: ``smoke``, ``standard`` or ``thorough``.
        metric: Primary metric override, or "".
        variants: Extra attribution arms (``name=spec, ...``), or "".
        changes: ``auto`` or ``off``.
        fresh: Ignore cached artifacts (recompute everything).
        source: Who set it (``make lab`` or ``rlaudit lab``), for the session header.
    """

    baseline: str = DEFAULTS["baseline"]
    candidate: str = DEFAULTS["candidate"]
    pair_file: str = ""
    profile: str = DEFAULTS["profile"]
    metric: str = ""
    variants: str = ""
    changes: str = "auto"
    fresh: bool = False
    source: str = "rlaudit lab"

    def to_env(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_env(cls, environ: Any = None) -> LabPair | None:
        """The pair in ``RLAUDIT_LAB_PAIR``, or None when it is unset; a ValueError names a malformed one."""
        raw = (os.environ if environ is None else environ).get(ENV, "")
        if not raw.strip():
            return None
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{ENV} must be the JSON object `rlaudit lab` writes ({exc}); unset it or start the lab with "
                "`make lab` / `rlaudit lab`"
            ) from None
        known = {f.name for f in fields(cls)}
        if not isinstance(data, dict) or not set(data) <= known:
            raise ValueError(
                f"{ENV} must be a JSON object with keys among {sorted(known)}, got {raw[:200]!r}"
            )
        return cls(**{k: bool(v) if k == "fresh" else str(v) for k, v in data.items()})


def resolve(
    given: dict[str, Any], environ: Any = None, live: bool | None = None
) -> tuple[dict[str, Any], str]:
    """The notebook's parameters with the lab's pair applied, and a line saying where they came from.

    Args:
        given: The parameters as the notebook passed them (keys of :data:`DEFAULTS`).
        environ: Environment to read (default ``os.environ``).
        live: Whether the kernel serves a live frontend (default :func:`rlaudit.display.interactive`);
            only then is the lab's pair applied.

    Returns:
        ``(parameters, origin)``: ``origin`` is "" when the lab's pair was not applied.
    """
    pair = LabPair.from_env(environ)
    if pair is None:
        return dict(given), ""
    if live is None:
        from rlaudit.display import interactive

        live = interactive()
    if not live:
        return dict(given), ""
    out = dict(given)
    taken, kept = [], []
    for key, default in DEFAULTS.items():
        if key not in given:
            continue
        lab_value = getattr(pair, key)
        if given[key] == default:
            out[key] = lab_value
            if lab_value != default:
                taken.append(key)
        elif given[key] != lab_value:
            kept.append(key)
    origin = f"from `{pair.source}`"
    if kept:
        origin += f"; the notebook's own {', '.join(kept)} kept (edited in its parameters cell)"
    return out, origin


# ----------------------------------------------------------------------------------------------------------
# The command
# ----------------------------------------------------------------------------------------------------------


def lab_environment(args: Any, environ: Any = None) -> dict[str, str]:
    """The variables the Jupyter server (and so every kernel) gets: the pair, the cache, the workdir."""
    from rlaudit.engine.paths import cache_dir, reports_dir, user_dir
    from rlaudit.profiles import get_profile

    environ = dict(os.environ if environ is None else environ)
    profile = args.profile or environ.get("RLAUDIT_PROFILE") or DEFAULTS["profile"]
    get_profile(profile)  # a ValueError names the profiles there are
    changes = getattr(args, "changes", "auto") or "auto"
    if changes not in ("auto", "off"):
        raise ValueError(f"--changes must be auto or off, got {changes!r}")
    pair_file = args.pair or ""
    if pair_file and not (user_dir() / pair_file).exists():
        raise FileNotFoundError(f"pair file {pair_file} not found (relative paths are from {user_dir()})")
    pair = LabPair(
        baseline=args.baseline,
        candidate=args.candidate,
        pair_file=pair_file,
        profile=profile,
        metric=args.metric or "",
        variants=getattr(args, "variants", "") or "",
        changes=changes,
        fresh=bool(args.fresh),
        source=getattr(args, "launched_by", None) or "rlaudit lab",
    )
    from rlaudit.options import RunOptions

    options = RunOptions.from_env(environ)  # the flags below win over the environment, as in rlaudit report
    if args.stall_timeout is not None:
        options = options.replace(stall_timeout=float(args.stall_timeout))
    if args.cpu_limit is not None:
        options = options.replace(cpu_limit=float(args.cpu_limit))
    if args.retry_failed:
        options = options.replace(retry_failed_since=time.time())
    env = {
        **options.environment(),
        ENV: pair.to_env(),
        "RLAUDIT_WORKDIR": str(user_dir()),
        "RLAUDIT_CACHE": str(cache_dir()),
        "RLAUDIT_REPORTS": str(reports_dir()),
        "JUPYTER_PREFER_ENV_PATH": "1",
    }
    return env


def lab_command(args: Any) -> list[str]:
    from rlaudit.engine.paths import notebooks_dir

    jupyter = shutil.which("jupyter", path=os.path.dirname(sys.executable)) or shutil.which("jupyter")
    if jupyter is None:
        raise FileNotFoundError(
            "jupyter is not installed; run `make setup` (or pip install -e '.[workbench]')"
        )
    extra = list(args.jupyter_args)
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        extra.append("--allow-root")  # a container's root user: Jupyter refuses to start without it
    return [jupyter, "lab", str(notebooks_dir()), *extra]


def run_lab(args: Any) -> int:
    """``rlaudit lab``: start JupyterLab with the pair in its environment (``--dry-run``: print it only)."""
    env = lab_environment(args)
    command = lab_command(args)
    pair = LabPair.from_env(env)
    assert pair is not None
    sides = f"pair file {pair.pair_file}" if pair.pair_file else f"{pair.baseline} vs {pair.candidate}"
    print(f"rlaudit lab: every notebook opens on {sides}, profile {pair.profile}", file=sys.stderr)
    print(f"  artifact cache {env['RLAUDIT_CACHE']} (the one `rlaudit report` uses)", file=sys.stderr)
    if args.dry_run:
        for key, value in env.items():
            print(f"{key}={shlex.quote(value)}")
        print(shlex.join(command))
        return 0
    os.execvpe(command[0], command, {**os.environ, **env})
    return 0  # not reached
