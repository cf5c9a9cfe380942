"""The ``rlaudit`` command: one verb per job, each implemented in its own room and imported lazily.

rlaudit faults [--json]                       the built-in fault catalog
rlaudit train SPEC --steps N --seed S --out DIR
rlaudit bench env|trainer|recorder|sb3|report|attribution|explore
rlaudit audit --baseline A --candidate B [--subsystems a,b] [--profile P] --json FILE [--fail-on LEVEL]
rlaudit report [--baseline A] [--candidate B] [--metric M] [--variants V] [--changes auto|off] [--profile P]
               [--out DIR] [-j N] [--fresh] [--retry-failed] [--stall-timeout S] [--cpu-limit S]
               [--fail-on none|error|confirmed|suspect]
rlaudit lab [--baseline A] [--candidate B] [--pair F] [--profile P] [--metric M] [--variants V] [--dry-run]
rlaudit new-subject DIR

``report`` and ``audit`` exit with a distinct code per outcome (:mod:`rlaudit.exits`). Their arguments are
parsed into a typed :class:`AuditArgs` or :class:`ReportArgs`, and the execution settings into one
:class:`rlaudit.options.RunOptions` (:meth:`RunOptions.from_cli`), built here once and passed to the command.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlaudit import exits

DEFAULT_BASELINE = "builtin:reference"
DEFAULT_CANDIDATE = "builtin:regressed"

# verb -> "module:function"; the function takes the parsed args and returns an exit code.
_HANDLERS = {
    "faults": "rlaudit.demo.faults:run_faults",
    "train": "rlaudit.engine.train:run_train",
    "bench": "rlaudit.bench:run_bench",
    "audit": "rlaudit.report:run_audit",
    "report": "rlaudit.report:run_report",
    "lab": "rlaudit.lab:run_lab",
    "new-subject": "rlaudit.adapters.template:run_new_subject",
}


@dataclass(frozen=True)
class PairArgs:
    """What ``rlaudit audit`` and ``rlaudit report`` both take: the pair, its profile, and how to run.

    Attributes:
        baseline: Spec of the setup that trained well.
        candidate: Spec of the setup that got worse.
        pair: A YAML file declaring both subjects (overrides the specs); ``""``: none.
        profile: ``smoke``, ``standard`` or ``thorough``; None: ``standard`` (``RLAUDIT_PROFILE`` wins).
        metric: The primary metric (``NAME`` or ``NAME:lower``); ``""``: what the subjects declare.
        fresh: Ignore cached artifacts.
        retry_failed: Run again probe calls remembered as failed.
        stall_timeout: Seconds a probe may go without progress; None: the default.
        cpu_limit: CPU-seconds a probe call may use; None: the profile's.
        jobs: Parallel jobs (``rlaudit report``: notebooks at once).
        executor: ``local`` or ``ray``.
        ray_address: The Ray cluster with ``executor="ray"``.
        fail_on: What makes the exit code non-zero (:data:`rlaudit.exits.FAIL_ON`).
    """

    baseline: str = DEFAULT_BASELINE
    candidate: str = DEFAULT_CANDIDATE
    pair: str = ""
    profile: str | None = None
    metric: str = ""
    fresh: bool = False
    retry_failed: bool = False
    stall_timeout: float | None = None
    cpu_limit: float | None = None
    jobs: int = 2
    executor: str = "local"
    ray_address: str = "auto"
    fail_on: str = exits.DEFAULT_FAIL_ON


@dataclass(frozen=True)
class AuditArgs(PairArgs):
    """``rlaudit audit``: :class:`PairArgs`, the findings file, and which rooms.

    Attributes:
        json_out: The file the findings are written to.
        subsystems: Comma-separated rooms; ``""``: all.
    """

    json_out: str = ""
    subsystems: str = ""


@dataclass(frozen=True)
class ReportArgs(PairArgs):
    """``rlaudit report``: :class:`PairArgs`, where the report goes, and what the summary searches.

    Attributes:
        out: The report directory; None: ``reports/`` (``RLAUDIT_REPORTS``).
        notebooks: Comma-separated subset of notebooks; ``""``: all.
        variants: Extra arms for attribution (``name=spec, name@subsystem=spec``).
        changes: ``auto`` or ``off``: search the code changes between the two sides.
    """

    out: str | None = None
    notebooks: str = ""
    variants: str = ""
    changes: str = "auto"


_TYPED = {"audit": AuditArgs, "report": ReportArgs}


def typed_args(args: argparse.Namespace) -> Any:
    """The parsed arguments of ``audit`` or ``report`` as their typed :class:`AuditArgs`/:class:`ReportArgs`.

    Other verbs keep their ``argparse.Namespace``.
    """
    cls = _TYPED.get(args.verb)
    if cls is None:
        return args
    given = vars(args)
    return cls(**{f.name: given[f.name] for f in dataclasses.fields(cls)})


def _pair_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baseline", default=DEFAULT_BASELINE, help="spec of the setup that trained well")
    p.add_argument("--candidate", default=DEFAULT_CANDIDATE, help="spec of the setup that got worse")
    p.add_argument("--pair", default="", help="YAML file declaring both subjects (overrides the specs)")
    p.add_argument("--profile", default=None, help="smoke | standard | thorough (default: standard)")
    p.add_argument(
        "--metric",
        default="",
        help="primary metric NAME (or NAME:lower for a cost) overriding what the subjects declare in "
        "metrics(); default: their declaration, else the episodic return",
    )
    p.add_argument("--fresh", action="store_true", help="ignore cached artifacts and recompute")
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="run again the probe calls remembered as failed (hang, crash, out of memory, exception)",
    )
    p.add_argument(
        "--stall-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop a probe after this long without progress (no step, update or episode); default 300",
    )
    p.add_argument(
        "--cpu-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop a probe after this much CPU time, scaled to this machine's core speed; default: the "
        "profile's (300 smoke, 900 standard, 3600 thorough)",
    )
    p.add_argument("-j", "--jobs", type=int, default=2, help="parallel jobs (default 2)")
    p.add_argument("--executor", default="local", choices=["local", "ray"], help="where jobs run")
    p.add_argument(
        "--ray-address",
        default="auto",
        help="with --executor ray: auto | host:port | ray://host:port | local (see docs/RAY.md)",
    )


def _fail_on_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fail-on",
        default=exits.DEFAULT_FAIL_ON,
        choices=exits.FAIL_ON,
        help="what makes the exit code non-zero beyond a failed run: none, error (default: a check that "
        "could not run), confirmed (also a confirmed regression: fail a CI job when the candidate "
        "regresses), suspect (also a suspected one); see the exit codes below",
    )


def _attribution_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--variants",
        default="",
        help="extra arms for attribution: 'name=spec, name@subsystem=spec' (a fix commit as git:repo@sha, "
        "any subject)",
    )
    p.add_argument(
        "--changes",
        default="auto",
        choices=["auto", "off"],
        help="search the code changes between two versions of one source for the culprit commit and hunk "
        "(auto: when both sides are git refs of one repository or two directories of one package)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rlaudit", description="Investigate why RL training got worse or slower after a change."
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB")

    p = sub.add_parser("faults", help="print the built-in fault catalog")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")

    p = sub.add_parser("train", help="train a subject with the recorder")
    p.add_argument("spec", help="subject spec, e.g. builtin:reference or path/to/subject.py")
    p.add_argument("--steps", type=int, required=True, help="environment steps (all envs together)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="run directory for recorder tables, logs, checkpoints")
    p.add_argument("--resume", default=None, help="checkpoint to resume from")
    p.add_argument("--torch-threads", type=int, default=None, help="torch threads (default: torch's)")

    p = sub.add_parser("bench", help="print benchmark figures as JSON lines")
    p.add_argument("what", choices=["env", "trainer", "recorder", "sb3", "report", "attribution", "explore"])
    p.add_argument("--quick", action="store_true", help="fewer repeats, for a fast look")

    p = sub.add_parser(
        "audit",
        help="run audits without notebooks; print and save findings",
        epilog=exits.HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _pair_arguments(p)
    _fail_on_argument(p)
    p.add_argument("--subsystems", default="", help="comma-separated subset (default: all)")
    p.add_argument("--json", dest="json_out", required=True, help="file to write the findings to")

    p = sub.add_parser(
        "report",
        help="execute every notebook and render the HTML report",
        epilog=exits.HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _pair_arguments(p)
    _fail_on_argument(p)
    p.add_argument("--out", default=None, help="report directory (default: reports/)")
    p.add_argument("--notebooks", default="", help="comma-separated subset, e.g. 07_optimizer,15_summary")
    _attribution_arguments(p)

    p = sub.add_parser("lab", help="open the notebooks in JupyterLab, each set to this pair")
    _pair_arguments(p)
    _attribution_arguments(p)
    p.add_argument("--dry-run", action="store_true", help="print the environment and command; start nothing")
    # `make lab` says so, for the session header; sniffing MAKELEVEL would also catch any make that runs us.
    p.add_argument("--launched-by", default="rlaudit lab", help=argparse.SUPPRESS)
    p.add_argument(
        "jupyter_args", nargs="*", help="passed on to `jupyter lab` (after --), e.g. -- --no-browser"
    )

    p = sub.add_parser("new-subject", help="write a subject.py template to investigate your own trainer")
    p.add_argument("dir", help="directory to write subject.py into")
    p.add_argument("--force", action="store_true", help="overwrite an existing subject.py")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verb:
        parser.print_help()
        return 2
    # Relative paths the user typed (subjects, sb3: files, pair files, git: repositories) mean "from here",
    # also inside the notebooks that `rlaudit report` runs in notebooks/.
    os.environ.setdefault("RLAUDIT_WORKDIR", os.getcwd())
    module_name, func_name = _HANDLERS[args.verb].split(":")
    handler = getattr(importlib.import_module(module_name), func_name)
    try:
        typed = typed_args(args)
        if isinstance(typed, PairArgs):
            from rlaudit.options import RunOptions

            # Built once, from the flags over the environment; passed to the command and from there down.
            return int(handler(typed, RunOptions.from_cli(typed)) or 0)
        return int(handler(typed) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError) as exc:
        # Bad input: the message says what was expected and what to do; no traceback.
        print(f"rlaudit {args.verb}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
