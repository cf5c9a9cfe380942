"""The ``rlaudit`` command: one verb per job, each implemented in its own room and imported lazily.

rlaudit faults [--json]                       the built-in fault catalog
rlaudit train SPEC --steps N --seed S --out DIR
rlaudit bench env|trainer|recorder|sb3|report
rlaudit audit --baseline A --candidate B [--subsystems a,b] [--profile P] --json FILE [--fail-on LEVEL]
rlaudit report [--baseline A] [--candidate B] [--metric M] [--variants V] [--changes auto|off] [--profile P]
               [--out DIR] [-j N] [--fresh] [--retry-failed] [--stall-timeout S] [--cpu-limit S]
               [--fail-on none|error|confirmed|suspect]
rlaudit new-subject DIR

``report`` and ``audit`` exit with a distinct code per outcome (:mod:`rlaudit.exits`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

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
    "new-subject": "rlaudit.adapters.template:run_new_subject",
}


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
    p.add_argument("what", choices=["env", "trainer", "recorder", "sb3", "report", "attribution"])
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
        from rlaudit.engine.limits import export_cli_limits

        export_cli_limits(args)  # probe limits reach notebooks and workers as RLAUDIT_* variables
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError) as exc:
        # Bad input: the message says what was expected and what to do; no traceback.
        print(f"rlaudit {args.verb}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
